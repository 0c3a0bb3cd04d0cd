//! `gate --confirm`: before a FAIL stands, the failing points of the candidate's spec are re-run
//! as a new run and gated against the same baseline; FAIL stays only where the re-run fails too.
//! The points of INCONCLUSIVE rows are re-run in the same run, and those rows are decided on the
//! candidate's replicates and the re-run's pooled ([`pool`], [`apply_pooled`]): more replicates
//! narrow the interval that straddled the bound.
//!
//! The re-run itself belongs to the orchestration above this crate: [`plan`] says what to run,
//! the caller runs it and gates it, and [`apply`] folds the second verdicts into the first.

use std::path::{Path, PathBuf};

use yardstick_spec::BenchmarkRun;

use crate::error::GateError;
use crate::gate::{GateReport, Verdict};
use crate::load::RunData;

/// Whether the candidate's spec asks for confirmation (`gates.confirm: true`).
pub fn spec_asks(candidate: &RunData) -> bool {
    candidate
        .spec
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.gates.as_ref())
        .and_then(|g| g.confirm)
        .unwrap_or(false)
}

/// What re-running a report's failing points takes.
#[derive(Debug, Clone)]
pub struct Rerun {
    /// The point ids of FAIL and INCONCLUSIVE rows, sorted (the re-run's `only`).
    pub points: Vec<String>,
    /// The candidate's `spec.yaml`.
    pub spec_path: PathBuf,
    /// Its text.
    pub spec_text: String,
    /// The spec, validated.
    pub spec: BenchmarkRun,
    /// The store to run in: the candidate's (run directories are `<store>/runs/<id>`).
    pub store_dir: PathBuf,
}

/// Reads and validates the candidate's spec from its run directory and lists the points of
/// FAIL and INCONCLUSIVE rows; the store is the candidate's, or `default_store` when its
/// directory has no parent.
pub fn plan(
    report: &GateReport,
    candidate: &RunData,
    default_store: &Path,
) -> Result<Rerun, GateError> {
    let mut points = report.failing_points();
    points.extend(report.inconclusive_points());
    points.sort();
    points.dedup();
    let spec_path = candidate.dir.join("spec.yaml");
    let spec_text =
        std::fs::read_to_string(&spec_path).map_err(|error| GateError::ConfirmSpecUnreadable {
            path: spec_path.clone(),
            error,
        })?;
    let checked = yardstick_spec::check_str(&spec_text);
    let valid = checked.is_valid();
    let Some(spec) = checked.spec.filter(|_| valid) else {
        return Err(GateError::ConfirmSpecInvalid { path: spec_path });
    };
    let store_dir = candidate
        .dir
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| default_store.to_path_buf(), Path::to_path_buf);
    Ok(Rerun {
        points,
        spec_path,
        spec_text,
        spec,
        store_dir,
    })
}

/// Folds the gate of the re-run (`again`, run `rerun_id`) into `report`: a FAIL the re-run
/// fails again stays FAIL (its reason names the re-run); any other outcome, or no value in the
/// re-run, makes it INCONCLUSIVE. The overall verdict is recomputed.
pub fn apply(report: &mut GateReport, again: &GateReport, rerun_id: &str) {
    for m in report
        .metrics
        .iter_mut()
        .filter(|m| m.verdict == Verdict::Fail)
    {
        let re = again
            .metrics
            .iter()
            .find(|r| r.point == m.point && r.metric == m.metric && r.statistic == m.statistic);
        match re {
            Some(r) if r.verdict == Verdict::Fail => {
                m.reason = format!("{}; confirmed by re-run {rerun_id}", m.reason);
            }
            Some(r) => {
                m.verdict = Verdict::Inconclusive;
                m.reason = format!(
                    "FAILed ({}), but the re-run {rerun_id} did not confirm it: {} ({})",
                    m.reason, r.verdict, r.reason
                );
            }
            None => {
                m.verdict = Verdict::Inconclusive;
                m.reason = format!(
                    "FAILed ({}), but the re-run {rerun_id} has no value for it (did its requests \
                     fail? `yardstick runs show {rerun_id}`)",
                    m.reason
                );
            }
        }
    }
    report.recompute_verdict();
}

/// The candidate with the re-run's replicates of `points` added to its own (numbered after
/// them): what an INCONCLUSIVE row is decided on. The points' aggregates are dropped (they were
/// of the candidate's replicates alone); other points are the candidate's.
pub fn pool(candidate: &RunData, again: &RunData, points: &[String]) -> RunData {
    let mut pooled = candidate.clone();
    let pooled_point = |p: &str| points.iter().any(|q| q == p);
    pooled
        .facts
        .retain(|f| !(pooled_point(&f.point_id) && f.replicate.is_none()));
    let next = candidate
        .facts
        .iter()
        .filter(|f| pooled_point(&f.point_id))
        .filter_map(|f| f.replicate)
        .max()
        .map_or(0, |k| k + 1);
    pooled.facts.extend(
        again
            .facts
            .iter()
            .filter(|f| pooled_point(&f.point_id))
            .filter_map(|f| {
                let mut f = f.clone();
                f.replicate = Some(f.replicate? + next);
                Some(f)
            }),
    );
    pooled
}

/// Decides the rows of `report` keyed in `inconclusive` (point, metric, statistic: those that
/// were INCONCLUSIVE before the re-run) by the gate of the pooled candidate ([`pool`]): its
/// verdict, with a reason that says the replicates were pooled. The overall verdict is
/// recomputed.
pub fn apply_pooled(
    report: &mut GateReport,
    pooled: &GateReport,
    inconclusive: &[(String, String, String)],
    rerun_id: &str,
) {
    for m in report.metrics.iter_mut().filter(|m| {
        inconclusive
            .iter()
            .any(|(p, k, s)| *p == m.point && *k == m.metric && *s == m.statistic)
    }) {
        let Some(r) = pooled
            .metrics
            .iter()
            .find(|r| r.point == m.point && r.metric == m.metric && r.statistic == m.statistic)
        else {
            continue;
        };
        let first = std::mem::take(&mut m.reason);
        *m = r.clone();
        m.reason = format!(
            "{} with re-run {rerun_id}'s replicates pooled ({} vs {}): {} (before: {first})",
            m.verdict, m.n.0, m.n.1, r.reason
        );
    }
    report.recompute_verdict();
}

/// Folds the confirmation run `again` (run `rerun_id`) into `report`, the gate of `candidate`
/// against `baseline`: FAIL rows must fail again in the re-run alone ([`apply`]); rows that were
/// INCONCLUSIVE are decided on the candidate's and the re-run's replicates pooled ([`pool`],
/// [`apply_pooled`]). The overall verdict is recomputed.
pub fn settle(
    report: &mut GateReport,
    baseline: &RunData,
    candidate: &RunData,
    again: &RunData,
    opts: &crate::gate::GateOptions,
    rerun_id: &str,
) -> Result<(), GateError> {
    let inconclusive: Vec<(String, String, String)> = report
        .metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Inconclusive)
        .map(|m| (m.point.clone(), m.metric.clone(), m.statistic.clone()))
        .collect();
    let points = report.inconclusive_points();
    let second = crate::gate::gate(baseline, again, opts)?;
    apply(report, &second, rerun_id);
    if !inconclusive.is_empty() {
        let pooled = pool(candidate, again, &points);
        let third = crate::gate::gate(baseline, &pooled, opts)?;
        apply_pooled(report, &third, &inconclusive, rerun_id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{GateOptions, gate};
    use crate::testutil::run_data;
    use yardstick_error::UserFacing;

    const BASE: [f64; 5] = [40.0, 40.3, 39.9, 40.1, 40.2];
    const SLOW: [f64; 5] = [80.0, 80.3, 79.9, 80.1, 80.2];

    fn failing() -> (RunData, GateReport) {
        let base = run_data("a", Path::new("/x/runs/a"), &BASE);
        let slow = run_data("b", Path::new("/x/runs/b"), &SLOW);
        let report = gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(report.verdict, Verdict::Fail);
        (base, report)
    }

    #[test]
    fn a_failure_stands_only_when_the_rerun_fails_too() {
        let (base, report) = failing();
        let slow = run_data("c", Path::new("/x/runs/c"), &SLOW);
        let again = gate(&base, &slow, &GateOptions::default()).unwrap();
        let mut r = report.clone();
        apply(&mut r, &again, "RERUN");
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.metrics[0].reason.ends_with("; confirmed by re-run RERUN"));

        let same = run_data("c", Path::new("/x/runs/c"), &BASE);
        let again = gate(&base, &same, &GateOptions::default()).unwrap();
        let mut r = report.clone();
        apply(&mut r, &again, "RERUN");
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            r.metrics[0]
                .reason
                .contains("but the re-run RERUN did not confirm it: PASS"),
            "{}",
            r.metrics[0].reason
        );

        let mut none = again.clone();
        none.metrics.clear();
        let mut r = report.clone();
        apply(&mut r, &none, "RERUN");
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            r.metrics[0].reason.ends_with(
                "has no value for it (did its requests fail? `yardstick runs show RERUN`)"
            )
        );
    }

    /// Issue 39: an INCONCLUSIVE row is decided on the candidate's replicates and the re-run's
    /// pooled. Three noisy A/A replicates straddle the bound; three more from the re-run narrow
    /// the interval inside it: PASS, the reason saying so.
    #[test]
    fn an_inconclusive_row_is_decided_on_pooled_replicates() {
        let base = run_data(
            "a",
            Path::new("/x/runs/a"),
            &[40.0, 41.5, 39.0, 40.5, 39.5, 40.2],
        );
        let noisy = run_data("b", Path::new("/x/runs/b"), &[39.5, 41.8, 40.6]);
        let report = gate(&base, &noisy, &GateOptions::default()).unwrap();
        assert_eq!(
            report.verdict,
            Verdict::Inconclusive,
            "{:#?}",
            report.metrics
        );
        assert_eq!(report.inconclusive_points(), ["p"]);
        let again = run_data("c", Path::new("/x/runs/c"), &[40.1, 39.8, 40.3]);
        let pooled = pool(&noisy, &again, &["p".to_string()]);
        let reps: Vec<u32> = pooled.facts.iter().filter_map(|f| f.replicate).collect();
        assert_eq!(reps, [0, 1, 2, 3, 4, 5]);
        let second = gate(&base, &pooled, &GateOptions::default()).unwrap();
        let keys: Vec<(String, String, String)> = report
            .metrics
            .iter()
            .map(|m| (m.point.clone(), m.metric.clone(), m.statistic.clone()))
            .collect();
        let mut r = report.clone();
        apply_pooled(&mut r, &second, &keys, "RERUN");
        assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.metrics);
        assert_eq!(r.metrics[0].n, (6, 6));
        assert!(
            r.metrics[0]
                .reason
                .starts_with("PASS with re-run RERUN's replicates pooled (6 vs 6): CI ["),
            "{}",
            r.metrics[0].reason
        );
    }

    #[test]
    fn the_rerun_is_the_candidates_spec_in_its_store() {
        let (_, report) = failing();
        let root =
            std::env::temp_dir().join(format!("yardstick-gate-confirm-{}", std::process::id()));
        let dir = root.join("runs").join("b");
        std::fs::create_dir_all(&dir).unwrap();
        let cand = run_data("b", &dir, &SLOW);
        let fallback = Path::new("fallback");

        let e = plan(&report, &cand, fallback).unwrap_err();
        assert!(e.is_invalid_input());
        assert!(
            e.to_string().starts_with(&format!(
                "--confirm re-runs the candidate's spec, but {}: ",
                dir.join("spec.yaml").display()
            )),
            "{e}"
        );
        assert_eq!(
            e.hint().as_deref(),
            Some("the run directory must be reachable from this machine")
        );

        std::fs::write(dir.join("spec.yaml"), "kind: Nonsense\n").unwrap();
        let e = plan(&report, &cand, fallback).unwrap_err();
        assert!(e.is_invalid_input() && e.hint().is_none());
        assert_eq!(
            e.to_string(),
            format!(
                "--confirm: {} no longer validates",
                dir.join("spec.yaml").display()
            )
        );

        let text = yardstick_spec::template(yardstick_spec::Template::Micro);
        std::fs::write(dir.join("spec.yaml"), text).unwrap();
        let rerun = plan(&report, &cand, fallback).unwrap();
        assert_eq!(rerun.points, ["p"]);
        assert_eq!(rerun.spec_text, text);
        assert_eq!(rerun.store_dir, root);
        assert!(!spec_asks(&cand));

        let bare = run_data("b", Path::new(""), &SLOW);
        assert!(plan(&report, &bare, fallback).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
