//! Facts: the figures a replicate measured ([`Figures`], from its runner's typed result through
//! [`Measured`](yardstick_spec::metrics::Measured)) as warehouse rows, and their aggregate over
//! replicates (mean with a Student-t confidence interval: replicates are the independent unit,
//! docs/methodology.md#trial-policy).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use yardstick_spec::metrics::Measurement;
use yardstick_store::summary::{FailedReplicate, PointFailures, RunSummary};
use yardstick_store::warehouse::FactRow;

use crate::plan::Plan;
use yardstick_spec::metrics::id;

/// The unit of a metric: the metric catalogue's (`yardstick metrics`); "" for a metric the
/// catalogue does not know (its producer may declare one: [`Measurement::unit`]).
pub fn unit_of(metric: &str) -> &'static str {
    yardstick_spec::metrics::unit_of(metric)
}

/// What one replicate measured: its figures and how many samples stand behind them. A
/// replicate's sealed result record keeps them (`figures`), so a stored run is re-indexed from
/// these typed rows, not from the shape of its summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The samples behind the figures: a serving point's completed requests, an eval's items
    /// (or a perplexity's tokens), else 1 (one run, one pass, one trial).
    pub n: u64,
    /// Every figure (non-finite values are left out: they have no fact).
    pub measurements: Vec<Measurement>,
}

impl Figures {
    /// Figures whose sample count is their completed requests (`requests/completed`), else 1.
    pub fn new(measurements: Vec<Measurement>) -> Figures {
        let n = measurements
            .iter()
            .find(|m| m.metric == id::REQUESTS && m.statistic == "completed")
            .map_or(1, |m| m.value as u64);
        Figures::with_n(measurements, n)
    }

    /// Figures from `n` samples. A figure given twice keeps its last value.
    pub fn with_n(mut measurements: Vec<Measurement>, n: u64) -> Figures {
        measurements.retain(|m| m.value.is_finite());
        let mut seen = std::collections::HashSet::new();
        let mut kept: Vec<Measurement> = measurements
            .into_iter()
            .rev()
            .filter(|m| seen.insert((m.metric.clone(), m.statistic.clone())))
            .collect();
        kept.reverse();
        Figures {
            n,
            measurements: kept,
        }
    }

    /// The value of `(metric, statistic)`, if measured.
    pub fn get(&self, metric: &str, statistic: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.metric == metric && m.statistic == statistic)
            .map(|m| m.value)
    }

    /// The figures of a sealed result record (`results/<point>/rN.json`): its `figures`. A
    /// record written before records carried them (yardstick 0.1) has only its summary; its
    /// figures are then read from the summary's numbers ([`legacy_figures`]).
    pub fn of_record(record: &Value) -> Result<Figures, BadFigures> {
        match record.get("figures") {
            Some(f) => Figures::deserialize(f).map_err(BadFigures),
            None => Ok(legacy_figures(&record["summary"])),
        }
    }
}

/// A result record whose `figures` do not read.
#[derive(Debug, thiserror::Error)]
#[error("`figures`: {0}")]
pub struct BadFigures(pub serde_json::Error);

/// The figures of a summary stored by a version that did not record them: every number at the
/// top of the summary (`{"request_throughput": 238}` → `value`) or one level down
/// (`{"ttft_ms": {"p50": 51}}` → `p50`), in the unit of its `units` map or the catalogue's.
/// Only for reading old records; runners produce [`Figures`] from their typed results.
pub fn legacy_figures(summary: &Value) -> Figures {
    let mut out = Vec::new();
    let Some(obj) = summary.as_object() else {
        return Figures::with_n(out, 1);
    };
    let unit = |metric: &str| summary["units"][metric].as_str().map(str::to_owned);
    for (k, v) in obj {
        // These describe the point, not a measurement.
        if [
            "load",
            "units",
            "eval",
            "custom_metrics",
            "pass",
            "capacity",
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        match v {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.push(Measurement::value(k, x).in_unit(unit(k)));
                }
            }
            Value::Object(inner) => {
                for (st, x) in inner {
                    if let Some(x) = x.as_f64() {
                        out.push(Measurement::stat(k, st, x).in_unit(unit(k)));
                    }
                }
            }
            _ => {}
        }
    }
    let n = summary[id::REQUESTS]["completed"]
        .as_u64()
        .or_else(|| summary["eval"]["n"].as_u64())
        .unwrap_or(1);
    Figures::with_n(out, n)
}

/// Facts of one replicate.
pub fn replicate_facts(
    run_id: &str,
    point_id: &str,
    replicate: u32,
    figures: &Figures,
    artifact: Option<&str>,
) -> Vec<FactRow> {
    figures
        .measurements
        .iter()
        .map(|m| FactRow {
            run_id: run_id.into(),
            point_id: point_id.into(),
            replicate: Some(replicate),
            unit: m.unit().to_string(),
            metric: m.metric.clone(),
            statistic: m.statistic.clone(),
            value: m.value,
            ci_lo: None,
            ci_hi: None,
            n: figures.n,
            artifact: artifact.map(str::to_owned),
            row_group: artifact.map(|_| 0),
        })
        .collect()
}

/// Mean and Student-t interval of replicate values; the interval is absent below 2 values
/// (yardstick-stats; why Student's t and not a bootstrap: docs/stats.md).
pub fn mean_ci(values: &[f64], level: f64) -> (f64, Option<(f64, f64)>) {
    yardstick_stats::descriptive::mean_t_interval(values, level)
}

/// Aggregates each point's replicate figures; a failed replicate (`None`) is left out, and `n`
/// counts the replicates that measured each figure.
pub fn aggregate(
    run_id: &str,
    per_point: &[(String, Vec<Option<Figures>>)],
    level: f64,
) -> Vec<FactRow> {
    let mut out = Vec::new();
    for (point, reps) in per_point {
        let mut by_key: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
        let mut units: BTreeMap<&str, &str> = BTreeMap::new();
        for m in reps.iter().flatten().flat_map(|f| &f.measurements) {
            units.entry(&m.metric).or_insert_with(|| m.unit());
            by_key
                .entry((&m.metric, &m.statistic))
                .or_default()
                .push(m.value);
        }
        for ((metric, statistic), values) in by_key {
            let (mean, ci) = mean_ci(&values, level);
            out.push(FactRow {
                run_id: run_id.into(),
                point_id: point.clone(),
                replicate: None,
                unit: units.get(metric).map(|u| u.to_string()).unwrap_or_default(),
                metric: metric.to_string(),
                statistic: statistic.to_string(),
                value: mean,
                ci_lo: ci.map(|c| c.0),
                ci_hi: ci.map(|c| c.1),
                n: values.len() as u64,
                artifact: None,
                row_group: None,
            });
        }
    }
    out
}

/// `summary.json`'s points: every point of the plan with its aggregate facts, grouped.
pub fn summary(plan: &Plan, facts: &[FactRow], level: f64) -> RunSummary {
    let works: Vec<Value> = plan
        .points
        .iter()
        .map(|p| serde_json::to_value(&p.work).expect("a point's work is JSON"))
        .collect();
    RunSummary::of(
        &plan.name,
        plan.replicates,
        level,
        plan.points
            .iter()
            .zip(&works)
            .map(|(p, w)| (p.id.as_str(), p.layer.as_str(), w)),
        facts,
    )
}

/// The replicates that measured nothing (their summary is an `error`), per point; only points
/// with a failure. A point whose every replicate failed has no aggregate at all.
pub fn failures(per_point: &[(String, Vec<Value>)]) -> Vec<PointFailures> {
    per_point
        .iter()
        .filter_map(|(id, reps)| {
            let failed: Vec<FailedReplicate> = reps
                .iter()
                .enumerate()
                .filter_map(|(r, s)| {
                    let e = s.get("error")?;
                    Some(FailedReplicate {
                        replicate: r as u32,
                        error: e.as_str().map_or_else(|| e.to_string(), str::to_owned),
                    })
                })
                .collect();
            (!failed.is_empty()).then(|| PointFailures {
                point: id.clone(),
                replicates: reps.len() as u32,
                failed,
            })
        })
        .collect()
}

/// A one-line headline of a replicate for progress output: its error, else its leading figures.
pub fn headline(summary: &Value, figures: &Figures) -> String {
    if let Some(e) = summary.get("error").and_then(Value::as_str) {
        return format!("failed: {e}");
    }
    if let Some(h) = crate::eval::headline(summary) {
        return h;
    }
    let f = |metric: &str, stat: &str, scale: f64, d: usize| {
        figures
            .get(metric, stat)
            .map_or("-".to_string(), |x| format!("{:.d$}", x * scale))
    };
    if figures.get(id::TTFT_MS, "p50").is_some()
        || figures.get(id::REQUEST_THROUGHPUT, "value").is_some()
    {
        return format!(
            "{} req/s, TTFT p50 {} ms, p99 {} ms, {} failed",
            f(id::REQUEST_THROUGHPUT, "value", 1.0, 1),
            f(id::TTFT_MS, "p50", 1.0, 1),
            f(id::TTFT_MS, "p99", 1.0, 1),
            figures.get(id::REQUESTS, "failed").unwrap_or(0.0) as u64
        );
    }
    if figures.get(id::STEP_TIME_S, "p50").is_some() {
        return format!(
            "step p50 {} s, {} tok/s p50, loss {} -> {}, wall {} s",
            f(id::STEP_TIME_S, "p50", 1.0, 4),
            f(id::TOKENS_PER_S, "p50", 1.0, 0),
            f(id::LOSS, "first", 1.0, 3),
            f(id::LOSS, "last", 1.0, 3),
            f(id::WALL_S, "value", 1.0, 2),
        );
    }
    if let Some(rate) = figures.get(id::LOADER_SAMPLES_PER_S, "value") {
        return format!(
            "{rate:.0} samples/s, {} MB/s, first batch {} ms, batch wait p50 {} ms, p99 {} ms ({} cache)",
            f(id::LOADER_MB_PER_S, "value", 1.0, 1),
            f(id::LOADER_FIRST_BATCH_S, "value", 1e3, 2),
            f(id::LOADER_BATCH_MS, "p50", 1.0, 3),
            f(id::LOADER_BATCH_MS, "p99", 1.0, 3),
            summary["cache"].as_str().unwrap_or("-"),
        );
    }
    // Headline values first (`value`), then whatever else there is.
    let mut all: Vec<&Measurement> = figures.measurements.iter().collect();
    all.sort_by_key(|m| m.statistic != "value");
    let mut parts: Vec<String> = all
        .into_iter()
        .take(4)
        .map(|m| {
            if m.statistic == "value" {
                format!("{} {:.3}", m.metric, m.value)
            } else {
                format!("{}.{} {:.3}", m.metric, m.statistic, m.value)
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("done".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loader_pass_reads_as_rates_and_waits() {
        let figures = Figures::new(vec![
            Measurement::value(id::LOADER_SAMPLES_PER_S, 12345.6),
            Measurement::value(id::LOADER_MB_PER_S, 3.26),
            Measurement::value(id::LOADER_FIRST_BATCH_S, 0.0042),
            Measurement::stat(id::LOADER_BATCH_MS, "p50", 0.5),
            Measurement::stat(id::LOADER_BATCH_MS, "p99", 1.25),
        ]);
        assert_eq!(
            headline(&serde_json::json!({"cache": "cold"}), &figures),
            "12346 samples/s, 3.3 MB/s, first batch 4.20 ms, batch wait p50 0.500 ms, p99 1.250 ms (cold cache)"
        );
    }

    fn serving(x: f64) -> Figures {
        Figures::new(vec![
            Measurement::value(id::REQUEST_THROUGHPUT, x),
            Measurement::stat(id::TTFT_MS, "p50", x / 2.0),
            Measurement::stat(id::REQUESTS, "completed", 10.0),
            Measurement::stat(id::REQUESTS, "failed", 0.0),
        ])
    }

    #[test]
    fn aggregates_with_t_intervals_and_leaves_failures_out() {
        let reps: Vec<Option<Figures>> = [100.0, 110.0, 120.0]
            .iter()
            .map(|x| Some(serving(*x)))
            .chain([None])
            .collect();
        let facts = aggregate("r", &[("p".into(), reps)], 0.95);
        let thr = facts
            .iter()
            .find(|f| f.metric == "request_throughput")
            .unwrap();
        assert_eq!(thr.value, 110.0);
        assert_eq!(thr.n, 3);
        assert_eq!(thr.unit, "req/s");
        // t(0.975, 2) = 4.302653; sd = 10; half = 4.302653 * 10 / sqrt(3) = 24.8414
        let (lo, hi) = (thr.ci_lo.unwrap(), thr.ci_hi.unwrap());
        assert!(
            (hi - 110.0 - 24.8414).abs() < 1e-3 && (110.0 - lo - 24.8414).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert!(
            facts
                .iter()
                .any(|f| f.metric == "ttft_ms" && f.statistic == "p50" && f.value == 55.0)
        );
        assert_eq!(unit_of("tokens_per_s"), "tok/s");
        assert_eq!(unit_of("step_time_s"), "s");
        assert_eq!(unit_of("max_rss_bytes"), "bytes");
        let one = replicate_facts("r", "p", 2, &serving(100.0), Some("samples/p/r2.parquet"));
        assert_eq!(one.len(), 4);
        assert!(one.iter().all(|f| f.replicate == Some(2) && f.n == 10));
    }

    #[test]
    fn a_declared_unit_wins_and_non_finite_values_have_no_fact() {
        let f = Figures::with_n(
            vec![
                Measurement::value("memory.triad", 12.5).in_unit(Some("GB/s")),
                Measurement::value("custom.x", f64::NAN),
            ],
            1,
        );
        let rows = replicate_facts("r", "p", 0, &f, None);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].unit.as_str(), rows[0].value), ("GB/s", 12.5));
    }

    #[test]
    fn a_record_reads_its_figures_and_an_old_record_its_summary() {
        let f = serving(100.0);
        let record = serde_json::json!({"summary": {}, "figures": f});
        assert_eq!(Figures::of_record(&record).unwrap(), f);
        let old = serde_json::json!({"summary": {
            "request_throughput": 100.0, "ttft_ms": {"p50": 50.0},
            "requests": {"completed": 10, "failed": 0}, "load": {"value": 8},
            "units": {"request_throughput": "req/s"}, "scenario": "D(1,1)"}});
        let legacy = Figures::of_record(&old).unwrap();
        assert_eq!(legacy.n, 10);
        assert_eq!(legacy.get(id::TTFT_MS, "p50"), Some(50.0));
        assert_eq!(legacy.get(id::REQUESTS, "failed"), Some(0.0));
        assert!(!legacy.measurements.iter().any(|m| m.metric == "load"));
        let bad = serde_json::json!({"figures": {"n": "ten"}});
        assert!(
            Figures::of_record(&bad)
                .unwrap_err()
                .to_string()
                .contains("figures")
        );
    }
}
