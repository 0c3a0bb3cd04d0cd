//! Comparisons and gate reports as people read them (`yardstick compare` and `yardstick gate`
//! without `--json`): plain aligned tables, values in human units with the metric's unit (the
//! raw numbers stay in `--json`). Warnings are the caller's to print.

use yardstick_report::format::{human, metric_unit};
use yardstick_report::terminal::plain_table;

use crate::{Comparison, FieldDiff, GateReport};

/// A JSON value shortened to 60 characters for a table cell.
fn short(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(59).collect::<String>())
    } else {
        s
    }
}

fn diffs(out: &mut String, title: &str, diffs: &[FieldDiff]) {
    if diffs.is_empty() {
        out.push_str(&format!("{title}: identical\n"));
        return;
    }
    out.push_str(&format!("{title}: {} field(s) differ\n", diffs.len()));
    let rows: Vec<Vec<String>> = diffs
        .iter()
        .map(|d| vec![d.path.clone(), short(&d.baseline), short(&d.candidate)])
        .collect();
    out.push_str(&plain_table(&["FIELD", "A", "B"], &rows));
}

/// `yardstick compare`: the two runs, the spec and env fields that differ, and per point ×
/// metric the values, B/A with its interval, the Mann–Whitney p and the replicate counts.
pub fn comparison(c: &Comparison) -> String {
    let mut out = format!(
        "A (baseline)  {}  {}\nB (candidate) {}  {}\n",
        c.baseline_run,
        c.baseline_profile.as_deref().unwrap_or("-"),
        c.candidate_run,
        c.candidate_profile.as_deref().unwrap_or("-")
    );
    diffs(&mut out, "spec", &c.spec_diffs);
    diffs(&mut out, "env", &c.env_diffs);
    out.push('\n');
    let rows: Vec<Vec<String>> = c
        .metrics
        .iter()
        .map(|m| {
            let unit = metric_unit(&m.metric, &m.unit);
            vec![
                m.point.clone(),
                format!("{} {}", m.metric, m.statistic),
                human(m.baseline, unit),
                human(m.candidate, unit),
                m.ratio.map_or("-".into(), |r| format!("{r:.4}")),
                match (m.ci_lo, m.ci_hi) {
                    (Some(lo), Some(hi)) => format!("[{lo:.4}, {hi:.4}]"),
                    _ => "-".into(),
                },
                m.mann_whitney_p.map_or("-".into(), |p| format!("{p:.3}")),
                format!(
                    "{}/{}",
                    m.baseline_replicates.len(),
                    m.candidate_replicates.len()
                ),
            ]
        })
        .collect();
    let level = format!("{:.0} % CI", c.level * 100.0);
    out.push_str(&plain_table(
        &["POINT", "METRIC", "A", "B", "B/A", &level, "MWU p", "REPS"],
        &rows,
    ));
    if !c.profiles.is_empty() {
        out.push_str(
            "\nWhere the step time goes (profiled replicates: explanations, never gated)\n",
        );
        let rows: Vec<Vec<String>> = c
            .profiles
            .iter()
            .flat_map(|p| {
                p.figures.iter().map(|(m, a, b)| {
                    let unit = metric_unit(m, "");
                    vec![
                        p.point.clone(),
                        m.clone(),
                        human(*a, unit),
                        human(*b, unit),
                        if unit == "s" {
                            format!("{:+.1} ms", (b - a) * 1e3)
                        } else {
                            format!("{:+.3}", b - a)
                        },
                    ]
                })
            })
            .collect();
        out.push_str(&plain_table(&["POINT", "FIGURE", "A", "B", "B-A"], &rows));
        for p in &c.profiles {
            if let Some(a) = &p.attribution {
                out.push_str(&format!("{}: {a}\n", p.point));
            }
        }
    }
    out
}

/// `yardstick gate`: the comparison, then per gated metric its values, ratio, tolerance, noise
/// floor, verdict and why. The overall verdict line is the caller's (it follows any
/// confirmation run).
pub fn report(r: &GateReport) -> String {
    let mut out = comparison(&r.comparison);
    out.push('\n');
    let rows: Vec<Vec<String>> = r
        .metrics
        .iter()
        .map(|m| {
            // The unit the comparison recorded for this metric, else the catalogue's.
            let recorded = r
                .comparison
                .metrics
                .iter()
                .find(|c| c.point == m.point && c.metric == m.metric)
                .map_or("", |c| c.unit.as_str());
            let unit = metric_unit(&m.metric, recorded);
            vec![
                m.point.clone(),
                format!("{} {}", m.metric, m.statistic),
                human(m.baseline, unit),
                human(m.candidate, unit),
                m.ratio.map_or("-".into(), |r| format!("{r:.4}")),
                format!("{}", m.tolerance_pct),
                m.noise_floor_pct.map_or("-".into(), |f| format!("{f:.1}")),
                m.verdict.to_string(),
                m.reason.clone(),
            ]
        })
        .collect();
    out.push_str(&plain_table(
        &[
            "POINT", "METRIC", "BASE", "CAND", "RATIO", "TOL", "FLOOR %", "VERDICT", "WHY",
        ],
        &rows,
    ));
    out
}

/// What `gate --calibrate` printed for people: the A/A comparison recorded, and the noise floor
/// of each metric of `benchmark` on `profile` so far.
pub fn calibration(c: &crate::calibrate::Calibration, profile: &str, benchmark: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "recorded A/A comparison {} vs {} ({} metric(s)); as a gate it would be {}",
        c.baseline_run, c.candidate_run, c.recorded, c.a_a_verdict
    );
    let _ = writeln!(out);
    let rows: Vec<Vec<String>> = c
        .floors
        .iter()
        .map(|f| {
            vec![
                f.point.clone(),
                format!("{} {}", f.metric, f.statistic),
                f.comparisons.to_string(),
                format!("{:.2}", f.max_pct),
                f.floor_pct.map_or_else(
                    || format!("- (needs {})", c.min_comparisons),
                    |x| format!("{x:.2}"),
                ),
            ]
        })
        .collect();
    out.push_str(&yardstick_report::terminal::plain_table(
        &["POINT", "METRIC", "A/A RUNS", "MAX |Δ| %", "NOISE FLOOR %"],
        &rows,
    ));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "noise floors of {benchmark} on {profile}: the 95th percentile of |ln ratio| over A/A \
         runs, used by `gate` once a metric has {} of them",
        c.min_comparisons
    );
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::testutil::run_data;
    use crate::{GateOptions, Verdict};

    #[test]
    fn the_tables_show_values_in_their_unit_and_the_verdict_with_its_reason() {
        let base = run_data("a", Path::new("/x/runs/a"), &[50.0, 51.0, 49.0, 50.5, 49.5]);
        let slow = run_data("b", Path::new("/x/runs/b"), &[80.0, 81.0, 79.0, 80.5, 79.5]);
        let report = crate::gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(report.verdict, Verdict::Fail);
        let text = super::report(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("A (baseline)  a") && lines[1].starts_with("B (candidate) b"));
        let row = |header: &str| {
            let i = lines.iter().position(|l| l.contains(header)).unwrap();
            lines[i + 1].to_string()
        };
        // The comparison row: values with their unit (ms), then B/A.
        let cmp = row("MWU p");
        assert!(
            cmp.contains("ttft_ms p50") && cmp.contains("50.0 ms") && cmp.contains("80.0 ms"),
            "{text}"
        );
        assert!(cmp.contains("1.6000"), "{text}");
        let gate = row("VERDICT");
        assert!(
            gate.contains("FAIL") && gate.contains("tolerance"),
            "{text}"
        );
        // The comparison alone is the first part of the report.
        assert!(text.starts_with(&super::comparison(&report.comparison)));
    }
}
