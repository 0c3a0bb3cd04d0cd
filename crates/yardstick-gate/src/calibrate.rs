//! Noise floors learned from A/A comparisons (`yardstick gate RUN --baseline B --calibrate`).
//!
//! An A/A comparison gates a repeat of the baseline's configuration against the baseline on the
//! same machine profile: any difference is noise. Each calibration records, per point × metric,
//! the ratio of replicate medians. A profile's **noise floor** for a metric is the
//! [`FLOOR_QUANTILE`] quantile of |ln ratio| over its recorded A/A comparisons, as a percentage
//! (`exp(q) − 1`); it needs at least [`MIN_CALIBRATIONS`] of them. The gate then requires a
//! regression to clear the farther of the tolerance and the noise floor, so a profile whose runs
//! wander by 8 % between identical runs cannot FAIL a build on a 5 % tolerance.

use std::collections::BTreeMap;

use yardstick_stats::percentile::percentile_sorted;
use yardstick_store::warehouse::{CalibrationRow, Warehouse};

use crate::error::GateError;
use crate::gate::GateReport;
use crate::gate::MetricClass;

/// A/A comparisons a metric needs before its noise floor is used.
pub const MIN_CALIBRATIONS: usize = 5;
/// The quantile of |ln ratio| taken as the floor.
pub const FLOOR_QUANTILE: f64 = 0.95;

/// The rows an A/A gate report contributes: one per compared metric with a ratio (the loss
/// slope, checked by sign, has none). Refuses a comparison that is not A/A: different machine
/// profiles, different benchmarks, or a spec that differs.
pub fn calibration_rows(
    report: &GateReport,
    benchmark: &str,
    recorded_at: &str,
) -> Result<Vec<CalibrationRow>, GateError> {
    let c = &report.comparison;
    let profile = match (&c.baseline_profile, &c.candidate_profile) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (a, b) => {
            return Err(GateError::Invalid(format!(
                "--calibrate records A/A comparisons on one machine profile; the runs are on {} \
                 and {}",
                a.as_deref().unwrap_or("unknown"),
                b.as_deref().unwrap_or("unknown")
            )));
        }
    };
    if !c.spec_diffs.is_empty() {
        let fields: Vec<&str> = c.spec_diffs.iter().map(|d| d.path.as_str()).collect();
        return Err(GateError::Invalid(format!(
            "--calibrate needs two runs of the same spec (an A/A comparison); these differ in {}",
            fields.join(", ")
        )));
    }
    if c.baseline_run == c.candidate_run {
        return Err(GateError::Invalid(
            "--calibrate compares two different runs of one configuration; both are the same run"
                .into(),
        ));
    }
    Ok(c.metrics
        .iter()
        .filter(|m| m.class != MetricClass::LossSlope)
        .filter_map(|m| {
            let r = m.ratio?;
            (r.is_finite() && r > 0.0).then(|| CalibrationRow {
                machine_profile: profile.clone(),
                benchmark: benchmark.to_string(),
                point_id: m.point.clone(),
                metric: m.metric.clone(),
                statistic: m.statistic.clone(),
                baseline_run: c.baseline_run.clone(),
                candidate_run: c.candidate_run.clone(),
                ratio: r,
                recorded_at: recorded_at.to_string(),
            })
        })
        .collect())
}

/// A metric's noise floor.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct NoiseFloor {
    /// Point.
    pub point: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// A/A comparisons recorded.
    pub comparisons: usize,
    /// The floor in percent, once there are [`MIN_CALIBRATIONS`] comparisons.
    pub floor_pct: Option<f64>,
    /// The largest |ratio − 1| seen, percent.
    pub max_pct: f64,
}

/// Noise floors from recorded calibrations, per (point, metric, statistic).
pub fn floors(rows: &[CalibrationRow]) -> Vec<NoiseFloor> {
    let mut by: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    for r in rows {
        if r.ratio.is_finite() && r.ratio > 0.0 {
            by.entry((r.point_id.clone(), r.metric.clone(), r.statistic.clone()))
                .or_default()
                .push(r.ratio.ln().abs());
        }
    }
    by.into_iter()
        .map(|((point, metric, statistic), mut logs)| {
            logs.sort_by(f64::total_cmp);
            let pct = |x: f64| (x.exp() - 1.0) * 100.0;
            NoiseFloor {
                point,
                metric,
                statistic,
                comparisons: logs.len(),
                floor_pct: (logs.len() >= MIN_CALIBRATIONS)
                    .then(|| pct(percentile_sorted(&logs, FLOOR_QUANTILE))),
                max_pct: pct(*logs.last().unwrap_or(&0.0)),
            }
        })
        .collect()
}

/// The noise floors of a (profile, benchmark) pair in the form [`crate::GateOptions`] takes:
/// only metrics with enough comparisons.
pub fn noise_floors(
    w: &mut dyn Warehouse,
    machine_profile: &str,
    benchmark: &str,
) -> Result<BTreeMap<(String, String, String), f64>, GateError> {
    let rows = w.calibrations(machine_profile, benchmark)?;
    Ok(floors(&rows)
        .into_iter()
        .filter_map(|f| Some(((f.point, f.metric, f.statistic), f.floor_pct?)))
        .collect())
}

/// What `gate --calibrate` recorded (`--json`), and the noise floors it leads to.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Metrics recorded from this A/A comparison.
    pub recorded: usize,
    /// The A run.
    pub baseline_run: String,
    /// The B run.
    pub candidate_run: String,
    /// What the gate would have said of the A/A pair.
    pub a_a_verdict: crate::gate::Verdict,
    /// A/A comparisons a metric needs before its floor is used.
    pub min_comparisons: usize,
    /// Each metric's floor so far.
    pub floors: Vec<NoiseFloor>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: usize, ratio: f64) -> CalibrationRow {
        CalibrationRow {
            machine_profile: "cpu-test".into(),
            benchmark: "b".into(),
            point_id: "p".into(),
            metric: "ttft_ms".into(),
            statistic: "p50".into(),
            baseline_run: "a".into(),
            candidate_run: format!("c{k}"),
            ratio,
            recorded_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn floor_needs_enough_comparisons_and_is_symmetric_in_log() {
        let few: Vec<_> = [1.02, 0.97]
            .iter()
            .enumerate()
            .map(|(k, r)| row(k, *r))
            .collect();
        let f = floors(&few);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].floor_pct, None);
        assert_eq!(f[0].comparisons, 2);
        // |ln| of 1/1.08 equals that of 1.08: a drop and a rise of the same factor count alike.
        let rows: Vec<_> = [1.01, 1.0 / 1.08, 1.02, 0.99, 1.03, 1.0]
            .iter()
            .enumerate()
            .map(|(k, r)| row(k, *r))
            .collect();
        let f = floors(&rows);
        let floor = f[0].floor_pct.unwrap();
        // Sorted |ln|: 0, ln1.01~, ln(1/0.99), ln1.02, ln1.03, ln1.08; the 0.95 quantile lies
        // at h = 5 × 0.95 = 4.75: 0.75 of the way from ln 1.03 to ln 1.08.
        let want = ((1.03f64.ln() + 0.75 * (1.08f64.ln() - 1.03f64.ln())).exp() - 1.0) * 100.0;
        assert!((floor - want).abs() < 1e-9, "{floor} vs {want}");
        assert!((f[0].max_pct - 8.0).abs() < 1e-9);
    }
}
