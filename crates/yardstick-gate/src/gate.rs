//! The regression gate: a verdict per metric from the ratio's CI against the tolerance, Holm
//! correction across metrics, overall verdict = the worst.

use serde::Serialize;
use yardstick_spec::{Mode, Tolerances};
use yardstick_stats::bootstrap::ratio_of_medians_ci;
use yardstick_stats::hypothesis::holm;

use crate::compare::{Comparison, boot, compare};
use crate::{GateError, RunData};

/// What a headline metric measures (picks its tolerance and direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricClass {
    /// Higher is better; a drop beyond the tolerance FAILs.
    Throughput,
    /// Lower is better; an increase beyond the tolerance FAILs.
    Latency,
    /// Training step time; an increase beyond the tolerance FAILs.
    StepTime,
    /// Memory use; an increase beyond the tolerance WARNs.
    Memory,
}

/// Which way is a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// A lower ratio is worse.
    HigherIsBetter,
    /// A higher ratio is worse.
    LowerIsBetter,
}

impl MetricClass {
    /// Which way is a regression.
    pub fn direction(self) -> Direction {
        match self {
            MetricClass::Throughput => Direction::HigherIsBetter,
            _ => Direction::LowerIsBetter,
        }
    }

    /// True when going beyond the tolerance only warns.
    pub fn warn_only(self) -> bool {
        self == MetricClass::Memory
    }
}

/// The headline metrics the gate and `compare` look at, by (metric, statistic). Medians and
/// rates only (seed 002 gates on p50): tails need many more samples than a replicate has.
pub fn headline(metric: &str, statistic: &str) -> Option<MetricClass> {
    Some(match (metric, statistic) {
        ("request_throughput" | "output_token_throughput", "value") => MetricClass::Throughput,
        ("tokens_per_s", "p50") => MetricClass::Throughput,
        ("memory.triad", "value") => MetricClass::Throughput,
        (m, "value") if m.starts_with("gemm.") => MetricClass::Throughput,
        ("ttft_ms" | "e2e_ms" | "tpot_ms", "p50") => MetricClass::Latency,
        ("step_time_s", "p50") => MetricClass::StepTime,
        ("max_rss_bytes" | "peak_mem_bytes", "value") => MetricClass::Memory,
        _ => return None,
    })
}

/// The tolerance of a class in percent: the spec's `gates.tolerances`, else seed 002's defaults
/// (throughput drop 5 %, step-time increase 5 %, latency increase 5 %, memory increase 10 %).
pub fn tolerance_pct(class: MetricClass, t: Option<&Tolerances>) -> f64 {
    let t = t.cloned().unwrap_or_default();
    match class {
        MetricClass::Throughput => t.throughput_drop_pct.unwrap_or(5.0),
        MetricClass::Latency => t.latency_increase_pct.unwrap_or(5.0),
        MetricClass::StepTime => t.step_time_increase_pct.unwrap_or(5.0),
        MetricClass::Memory => t.memory_increase_pct.unwrap_or(10.0),
    }
}

/// A verdict; ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Within tolerance, shown by the CI.
    Pass,
    /// A warn-only metric beyond its tolerance.
    Warn,
    /// Not enough evidence either way.
    Inconclusive,
    /// Beyond tolerance, shown by the CI and significant after Holm correction.
    Fail,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Fail => "FAIL",
        })
    }
}

/// The verdict of one point × metric.
#[derive(Debug, Clone, Serialize)]
pub struct MetricVerdict {
    /// Point id.
    pub point: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// Class (tolerance and direction).
    pub class: MetricClass,
    /// Tolerance, percent.
    pub tolerance_pct: f64,
    /// Baseline aggregate value.
    pub baseline: f64,
    /// Candidate aggregate value.
    pub candidate: f64,
    /// Ratio candidate / baseline (medians of replicate values).
    pub ratio: Option<f64>,
    /// CI of the ratio.
    pub ci_lo: Option<f64>,
    /// CI of the ratio.
    pub ci_hi: Option<f64>,
    /// Replicates (baseline, candidate).
    pub n: (usize, usize),
    /// One-sided bootstrap p-value of "no regression beyond the tolerance".
    pub p_value: Option<f64>,
    /// Holm-adjusted p-value across the gated metrics.
    pub p_holm: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
}

/// How to gate.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Compare runs of different machine profiles (exploratory, never enforced).
    pub cross_profile: bool,
    /// Override the spec's tolerances.
    pub tolerances: Option<Tolerances>,
}

/// The gate's result.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// The overall verdict: the worst per-metric verdict.
    pub verdict: Verdict,
    /// True when the verdict is not enforced (cross-profile, or an exploratory spec).
    pub exploratory: bool,
    /// Why it is exploratory, when it is.
    pub exploratory_reason: Option<String>,
    /// Per metric.
    pub metrics: Vec<MetricVerdict>,
    /// The underlying comparison (field diffs, warnings).
    pub comparison: Comparison,
}

/// Replicates each side needs before a metric can PASS or FAIL (the methodology floor).
pub const MIN_REPLICATES: usize = 3;

/// Refuses different machine profiles unless `cross_profile`; returns whether the comparison is
/// cross-profile (exploratory).
pub fn check_profiles(
    baseline: Option<&str>,
    candidate: Option<&str>,
    cross_profile: bool,
) -> Result<bool, GateError> {
    let (a, b) = (
        baseline.unwrap_or("unknown"),
        candidate.unwrap_or("unknown"),
    );
    if baseline.is_some() && a == b {
        return Ok(false);
    }
    if cross_profile {
        Ok(true)
    } else {
        Err(GateError::ProfileMismatch {
            baseline: a.to_string(),
            candidate: b.to_string(),
        })
    }
}

/// The ratio's bound beyond which the metric regressed.
fn bound(class: MetricClass, tol_pct: f64) -> f64 {
    match class.direction() {
        Direction::HigherIsBetter => 1.0 - tol_pct / 100.0,
        Direction::LowerIsBetter => 1.0 + tol_pct / 100.0,
    }
}

/// One-sided bootstrap p-value of H0 "not beyond the bound": the share of the bootstrap
/// distribution of the ratio on the acceptable side of the bound, found by inverting percentile
/// intervals (the lower end of a level 1−2α interval is the α quantile). Floor 1/resamples.
fn p_beyond(a: &[f64], b: &[f64], class: MetricClass, bnd: f64) -> Result<f64, GateError> {
    let floor = 1.0 / crate::compare::RESAMPLES as f64;
    // The α-quantile of the distribution on the "bad" side: for LowerIsBetter the lower end.
    let edge = |alpha: f64| -> Result<f64, GateError> {
        let ci = ratio_of_medians_ci(a, b, &boot(1.0 - 2.0 * alpha))?;
        Ok(match class.direction() {
            Direction::LowerIsBetter => ci.lower,
            Direction::HigherIsBetter => ci.upper,
        })
    };
    let beyond = |x: f64| match class.direction() {
        Direction::LowerIsBetter => x > bnd,
        Direction::HigherIsBetter => x < bnd,
    };
    if beyond(edge(floor)?) {
        return Ok(floor);
    }
    if !beyond(edge(0.4999)?) {
        return Ok(1.0);
    }
    let (mut lo, mut hi) = (floor, 0.4999);
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        if beyond(edge(mid)?) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Gates `candidate` against `baseline`.
///
/// Per metric, with the ratio r = candidate / baseline of replicate medians and its percentile
/// bootstrap CI at the spec's confidence level (replicates resampled): PASS when the CI lies on
/// the acceptable side of the tolerance bound; FAIL (WARN for memory) when the whole CI lies
/// beyond it AND the one-sided bootstrap p-value, Holm-adjusted across the gated metrics, is
/// below (1 − level) / 2; INCONCLUSIVE otherwise, or with fewer than [`MIN_REPLICATES`]
/// replicates on a side. A warn-only metric that is not shown beyond its tolerance PASSes.
pub fn gate(
    baseline: &RunData,
    candidate: &RunData,
    opts: &GateOptions,
) -> Result<GateReport, GateError> {
    let cross = check_profiles(
        baseline.run.machine_profile.as_deref(),
        candidate.run.machine_profile.as_deref(),
        opts.cross_profile,
    )?;
    let comparison = compare(baseline, candidate)?;
    let cand_spec = candidate.spec.as_ref().and_then(|s| s.spec.as_ref());
    let tolerances = opts.tolerances.clone().or_else(|| {
        cand_spec
            .and_then(|s| s.gates.as_ref())
            .and_then(|g| g.tolerances.clone())
    });
    let exploratory_mode = cand_spec.and_then(|s| s.mode) == Some(Mode::Exploratory);
    let alpha_one_sided = (1.0 - comparison.level) / 2.0;

    let mut metrics = Vec::new();
    let mut p_index = Vec::new();
    let mut p_values = Vec::new();
    for m in &comparison.metrics {
        let tol = tolerance_pct(m.class, tolerances.as_ref());
        let bnd = bound(m.class, tol);
        let n = (m.baseline_replicates.len(), m.candidate_replicates.len());
        let p_value = if n.0 >= MIN_REPLICATES && n.1 >= MIN_REPLICATES && m.ci_lo.is_some() {
            let p = p_beyond(
                &m.baseline_replicates,
                &m.candidate_replicates,
                m.class,
                bnd,
            )?;
            p_index.push(metrics.len());
            p_values.push(p);
            Some(p)
        } else {
            None
        };
        metrics.push(MetricVerdict {
            point: m.point.clone(),
            metric: m.metric.clone(),
            statistic: m.statistic.clone(),
            class: m.class,
            tolerance_pct: tol,
            baseline: m.baseline,
            candidate: m.candidate,
            ratio: m.ratio,
            ci_lo: m.ci_lo,
            ci_hi: m.ci_hi,
            n,
            p_value,
            p_holm: None,
            verdict: Verdict::Inconclusive,
            reason: String::new(),
        });
    }
    let adjusted = holm(&p_values)?;
    for (i, p) in p_index.iter().zip(adjusted) {
        metrics[*i].p_holm = Some(p);
    }
    for v in &mut metrics {
        let bnd = bound(v.class, v.tolerance_pct);
        let side = match v.class.direction() {
            Direction::HigherIsBetter => "drop",
            Direction::LowerIsBetter => "increase",
        };
        let (verdict, reason) = match (v.ci_lo, v.ci_hi, v.p_holm) {
            (Some(lo), Some(hi), Some(ph)) => {
                let (ok, bad) = match v.class.direction() {
                    Direction::LowerIsBetter => (hi <= bnd, lo > bnd),
                    Direction::HigherIsBetter => (lo >= bnd, hi < bnd),
                };
                if ok {
                    (
                        Verdict::Pass,
                        format!(
                            "CI [{lo:.3}, {hi:.3}] within the {:.1} % {side} tolerance",
                            v.tolerance_pct
                        ),
                    )
                } else if bad && ph < alpha_one_sided {
                    let verdict = if v.class.warn_only() {
                        Verdict::Warn
                    } else {
                        Verdict::Fail
                    };
                    (
                        verdict,
                        format!(
                            "CI [{lo:.3}, {hi:.3}] entirely beyond the {:.1} % {side} tolerance \
                             (Holm p = {ph:.2e})",
                            v.tolerance_pct
                        ),
                    )
                } else if v.class.warn_only() {
                    (
                        Verdict::Pass,
                        format!(
                            "CI [{lo:.3}, {hi:.3}] not shown beyond the {:.1} % {side} warning \
                             tolerance",
                            v.tolerance_pct
                        ),
                    )
                } else if bad {
                    (
                        Verdict::Inconclusive,
                        format!(
                            "CI [{lo:.3}, {hi:.3}] beyond the tolerance but not significant after \
                             Holm correction (p = {ph:.2e})"
                        ),
                    )
                } else {
                    (
                        Verdict::Inconclusive,
                        format!(
                            "CI [{lo:.3}, {hi:.3}] straddles the bound {bnd:.3} ({:.1} % {side})",
                            v.tolerance_pct
                        ),
                    )
                }
            }
            _ => (
                Verdict::Inconclusive,
                format!(
                    "{} and {} replicates; a verdict needs at least {MIN_REPLICATES} on each side",
                    v.n.0, v.n.1
                ),
            ),
        };
        v.verdict = verdict;
        v.reason = reason;
    }
    let verdict = if metrics.is_empty() {
        Verdict::Inconclusive
    } else {
        metrics
            .iter()
            .map(|m| m.verdict)
            .max()
            .unwrap_or(Verdict::Pass)
    };
    let exploratory_reason = if cross {
        Some("the runs have different machine profiles (--cross-profile)".to_string())
    } else if exploratory_mode {
        Some("the candidate's spec is `mode: exploratory`, which never gates".to_string())
    } else {
        None
    };
    Ok(GateReport {
        verdict,
        exploratory: exploratory_reason.is_some(),
        exploratory_reason,
        metrics,
        comparison,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_store::warehouse::{FactRow, RunRow};

    /// A run with one point and the given replicate values of `ttft_ms p50` and
    /// `max_rss_bytes value` (no spec: realism defaults apply; profile `cpu-test`).
    fn run_data(id: &str, ttft: &[f64], rss: &[f64]) -> RunData {
        let fact = |metric: &str, statistic: &str, k: usize, v: f64| FactRow {
            run_id: id.into(),
            point_id: "p".into(),
            replicate: Some(k as u32),
            metric: metric.into(),
            statistic: statistic.into(),
            value: v,
            ci_lo: None,
            ci_hi: None,
            unit: "ms".into(),
            n: 1,
            artifact: None,
            row_group: None,
        };
        let mut facts: Vec<FactRow> = ttft
            .iter()
            .enumerate()
            .map(|(k, v)| fact("ttft_ms", "p50", k, *v))
            .collect();
        facts.extend(
            rss.iter()
                .enumerate()
                .map(|(k, v)| fact("max_rss_bytes", "value", k, *v)),
        );
        RunData {
            run: RunRow {
                run_id: id.into(),
                name: "t".into(),
                status: "complete".into(),
                mode: Some("realism".into()),
                spec_sha256: String::new(),
                machine_profile: Some("cpu-test".into()),
                env_sha256: None,
                started_at: "2026-01-01T00:00:00.000Z".into(),
                ended_at: None,
                tool_version: "0".into(),
                git_commit: None,
                location: "/nonexistent".into(),
            },
            dir: "/nonexistent".into(),
            spec: None,
            spec_value: serde_json::Value::Null,
            env: serde_json::Value::Null,
            facts,
        }
    }

    fn verdict_of(report: &GateReport, metric: &str) -> Verdict {
        report
            .metrics
            .iter()
            .find(|m| m.metric == metric)
            .map(|m| m.verdict)
            .unwrap()
    }

    #[test]
    fn clear_regression_fails_and_stable_passes() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[100.0, 101.0, 99.0]);
        let same = run_data("b", &[40.1, 40.0, 40.2, 39.8, 40.3], &[100.0, 100.5, 99.5]);
        let r = gate(&base, &same, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{r:#?}");
        let slow = run_data("c", &[80.0, 80.3, 79.9, 80.1, 80.2], &[100.0, 101.0, 99.0]);
        let r = gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(verdict_of(&r, "ttft_ms"), Verdict::Fail);
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.metrics[1].p_holm.unwrap() >= r.metrics[1].p_value.unwrap());
    }

    #[test]
    fn straddling_the_bound_or_too_few_replicates_is_inconclusive() {
        let base = run_data("a", &[40.0, 40.0, 40.0], &[]);
        // +3 % .. +8 %: the CI straddles 1.05.
        let mid = run_data("b", &[41.2, 42.0, 43.2], &[]);
        let r = gate(&base, &mid, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:#?}");
        assert!(r.metrics[0].reason.contains("straddles"));
        let two = run_data("c", &[40.0, 40.1], &[]);
        let r = gate(&base, &two, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(r.metrics[0].reason.contains("at least 3"));
    }

    #[test]
    fn memory_beyond_tolerance_only_warns() {
        let base = run_data("a", &[40.0, 40.1, 39.9], &[100.0, 101.0, 99.0]);
        let fat = run_data("b", &[40.0, 40.1, 39.9], &[130.0, 131.0, 129.0]);
        let r = gate(&base, &fat, &GateOptions::default()).unwrap();
        assert_eq!(verdict_of(&r, "max_rss_bytes"), Verdict::Warn);
        assert_eq!(r.verdict, Verdict::Warn);
    }

    #[test]
    fn spec_tolerances_override_the_defaults() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[]);
        let slower = run_data("b", &[44.0, 44.3, 43.9, 44.1, 44.2], &[]);
        let r = gate(&base, &slower, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Fail);
        let loose = GateOptions {
            tolerances: Some(Tolerances {
                latency_increase_pct: Some(20.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(gate(&base, &slower, &loose).unwrap().verdict, Verdict::Pass);
    }

    #[test]
    fn compare_warns_when_more_than_one_field_moved() {
        let mut a = run_data("a", &[40.0, 40.1, 39.9], &[]);
        let mut b = run_data("b", &[40.0, 40.1, 39.9], &[]);
        a.spec_value = serde_json::json!({"spec": {"trials": {"replicates": 3}, "x": 1}});
        a.env =
            serde_json::json!({"machine_profile": "cpu-test", "cpu": {"governor": "performance"}});
        b.spec_value = serde_json::json!({"spec": {"trials": {"replicates": 5}, "x": 1}});
        b.env =
            serde_json::json!({"machine_profile": "cpu-test", "cpu": {"governor": "powersave"}});
        let c = crate::compare(&a, &b).unwrap();
        assert_eq!(c.spec_diffs[0].path, "spec.trials.replicates");
        assert_eq!(c.env_diffs[0].path, "env.cpu.governor");
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("more than one variable")),
            "{:?}",
            c.warnings
        );
        // One moved field: no such warning.
        b.env = a.env.clone();
        let c = crate::compare(&a, &b).unwrap();
        assert!(
            !c.warnings
                .iter()
                .any(|w| w.contains("more than one variable"))
        );
    }

    #[test]
    fn gate_refuses_another_machine_profile() {
        let base = run_data("a", &[40.0, 40.1, 39.9], &[]);
        let mut other = run_data("b", &[40.0, 40.1, 39.9], &[]);
        other.run.machine_profile = Some("gpu-H100x8".into());
        let e = gate(&base, &other, &GateOptions::default()).unwrap_err();
        assert!(matches!(e, GateError::ProfileMismatch { .. }));
        let opts = GateOptions {
            cross_profile: true,
            ..Default::default()
        };
        let r = gate(&base, &other, &opts).unwrap();
        assert!(r.exploratory);
    }

    #[test]
    fn same_profile_passes_the_check() {
        assert_eq!(
            check_profiles(Some("cpu-a"), Some("cpu-a"), false).ok(),
            Some(false)
        );
    }

    #[test]
    fn different_profiles_are_refused_unless_cross_profile() {
        let e = check_profiles(Some("cpu-a"), Some("gpu-H100x8"), false).unwrap_err();
        assert!(matches!(e, GateError::ProfileMismatch { .. }));
        assert!(e.is_invalid_input());
        assert!(e.to_string().contains("cpu-a") && e.to_string().contains("gpu-H100x8"));
        assert_eq!(
            check_profiles(Some("cpu-a"), Some("gpu-H100x8"), true).ok(),
            Some(true)
        );
        assert!(check_profiles(None, None, false).is_err());
    }

    #[test]
    fn defaults_are_seed_002() {
        assert_eq!(tolerance_pct(MetricClass::Throughput, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::Latency, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::StepTime, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::Memory, None), 10.0);
        let t = Tolerances {
            latency_increase_pct: Some(20.0),
            ..Default::default()
        };
        assert_eq!(tolerance_pct(MetricClass::Latency, Some(&t)), 20.0);
    }

    #[test]
    fn p_value_is_small_for_a_clear_regression_and_large_for_none() {
        let a = [40.0, 40.5, 39.8, 40.2, 40.1];
        let slow = [80.0, 80.4, 79.9, 80.2, 80.1];
        let p = p_beyond(&a, &slow, MetricClass::Latency, 1.05).unwrap();
        assert!(p <= 1e-3, "{p}");
        let p = p_beyond(&a, &a, MetricClass::Latency, 1.05).unwrap();
        assert!(p > 0.4, "{p}");
        // Throughput halves: beyond a 5 % drop.
        let p = p_beyond(&slow, &a, MetricClass::Throughput, 0.95).unwrap();
        assert!(p <= 1e-3, "{p}");
    }

    #[test]
    fn headline_metrics_are_medians_and_rates() {
        assert_eq!(headline("ttft_ms", "p50"), Some(MetricClass::Latency));
        assert_eq!(headline("ttft_ms", "p99"), None);
        assert_eq!(
            headline("gemm.f32.256", "value"),
            Some(MetricClass::Throughput)
        );
        assert_eq!(headline("step_time_s", "p50"), Some(MetricClass::StepTime));
        assert_eq!(
            headline("peak_mem_bytes", "value"),
            Some(MetricClass::Memory)
        );
        assert_eq!(
            MetricClass::Throughput.direction(),
            Direction::HigherIsBetter
        );
    }

    #[test]
    fn verdicts_order_worst_last() {
        assert!(Verdict::Fail > Verdict::Inconclusive);
        assert!(Verdict::Inconclusive > Verdict::Warn);
        assert!(Verdict::Warn > Verdict::Pass);
    }
}
