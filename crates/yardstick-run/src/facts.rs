//! Facts: the numbers of a replicate's summary flattened into (metric, statistic) rows, and their
//! aggregate over replicates (mean with a Student-t confidence interval: replicates are the
//! independent unit, docs/methodology.md#trial-policy).

use std::collections::BTreeMap;

use serde_json::Value;
use yardstick_store::warehouse::FactRow;

use crate::plan::Plan;
use yardstick_spec::metrics::id;

/// The unit of a metric: the metric catalogue's (`yardstick metrics`); "" for a metric the
/// catalogue does not know (its producer may declare one: [`unit_in`]).
pub fn unit_of(metric: &str) -> &'static str {
    yardstick_spec::metrics::unit_of(metric)
}

/// Flattens a summary's numbers: `{"ttft_ms":{"p50":51}}` → (`ttft_ms`, `p50`, 51);
/// `{"request_throughput": 238}` → (`request_throughput`, `value`, 238). Strings, nulls and
/// deeper nesting are skipped; `load` (and a data-loader pass's `pass`) describe the point, not
/// a measurement.
pub fn flatten(summary: &Value) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    let Some(obj) = summary.as_object() else {
        return out;
    };
    for (k, v) in obj {
        if k == "load"
            || k == "units"
            || k == "eval"
            || k == "custom_metrics"
            || k == "pass"
            || k == "capacity"
        {
            continue;
        }
        match v {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.push((k.clone(), "value".to_string(), x));
                }
            }
            Value::Object(inner) => {
                for (s, x) in inner {
                    if let Some(x) = x.as_f64() {
                        out.push((k.clone(), s.clone(), x));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The unit a summary declares for a metric (`"units": {"memory.triad": "GB/s"}`), else the
/// catalogue's.
pub fn unit_in(summary: &Value, metric: &str) -> String {
    summary["units"][metric]
        .as_str()
        .map_or_else(|| unit_of(metric).to_string(), str::to_owned)
}

fn sample_count(summary: &Value) -> u64 {
    summary[id::REQUESTS]["completed"]
        .as_u64()
        .or_else(|| summary["eval"]["n"].as_u64())
        .unwrap_or(1)
}

/// Facts of one replicate.
pub fn replicate_facts(
    run_id: &str,
    point_id: &str,
    replicate: u32,
    summary: &Value,
    artifact: Option<&str>,
) -> Vec<FactRow> {
    let n = sample_count(summary);
    flatten(summary)
        .into_iter()
        .map(|(metric, statistic, value)| FactRow {
            run_id: run_id.into(),
            point_id: point_id.into(),
            replicate: Some(replicate),
            unit: unit_in(summary, &metric),
            metric,
            statistic,
            value,
            ci_lo: None,
            ci_hi: None,
            n,
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

/// Aggregates each point's replicate summaries (failed replicates, with an `error`, are left out
/// and counted by `n`).
pub fn aggregate(run_id: &str, per_point: &[(String, Vec<Value>)], level: f64) -> Vec<FactRow> {
    let mut out = Vec::new();
    for (point, reps) in per_point {
        let mut by_key: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
        let mut units: BTreeMap<String, String> = BTreeMap::new();
        for r in reps.iter().filter(|r| r.get("error").is_none()) {
            for (m, s, v) in flatten(r) {
                units.entry(m.clone()).or_insert_with(|| unit_in(r, &m));
                by_key.entry((m, s)).or_default().push(v);
            }
        }
        for ((metric, statistic), values) in by_key {
            let (mean, ci) = mean_ci(&values, level);
            out.push(FactRow {
                run_id: run_id.into(),
                point_id: point.clone(),
                replicate: None,
                unit: units.get(&metric).cloned().unwrap_or_default(),
                metric,
                statistic,
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

/// `summary.json`: every point's aggregate facts, grouped.
pub fn summary_json(plan: &Plan, facts: &[FactRow], level: f64) -> Value {
    let points: Vec<Value> = plan
        .points
        .iter()
        .map(|p| {
            let mut metrics = serde_json::Map::new();
            for f in facts.iter().filter(|f| f.point_id == p.id) {
                let entry = metrics
                    .entry(f.metric.clone())
                    .or_insert_with(|| Value::Object(Default::default()));
                entry[&f.statistic] = serde_json::json!({
                    "mean": f.value,
                    "ci": f.ci_lo.zip(f.ci_hi).map(|(a, b)| vec![a, b]),
                    "n": f.n,
                    "unit": f.unit,
                });
            }
            serde_json::json!({"id": p.id, "layer": p.layer, "work": p.work, "metrics": metrics})
        })
        .collect();
    serde_json::json!({
        "name": plan.name,
        "replicates": plan.replicates,
        "confidence_level": level,
        "points": points,
    })
}

/// The replicates that measured nothing (their summary is an `error`), per point:
/// `[{"point", "replicates", "failed": [{"replicate", "error"}]}]`, only points with a failure.
/// A point whose every replicate failed has no aggregate at all.
pub fn failures(per_point: &[(String, Vec<Value>)]) -> Value {
    per_point
        .iter()
        .filter_map(|(id, reps)| {
            let failed: Vec<Value> = reps
                .iter()
                .enumerate()
                .filter_map(|(r, s)| {
                    let e = s.get("error")?;
                    Some(serde_json::json!({"replicate": r, "error": e}))
                })
                .collect();
            (!failed.is_empty()).then(
                || serde_json::json!({"point": id, "replicates": reps.len(), "failed": failed}),
            )
        })
        .collect()
}

/// A one-line headline of a replicate summary for progress output.
pub fn headline(summary: &Value) -> String {
    if let Some(e) = summary.get("error").and_then(Value::as_str) {
        return format!("failed: {e}");
    }
    if let Some(h) = crate::eval::headline(summary) {
        return h;
    }
    if summary.get(id::TTFT_MS).is_some() || summary.get(id::REQUEST_THROUGHPUT).is_some() {
        let f = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.1}"));
        return format!(
            "{} req/s, TTFT p50 {} ms, p99 {} ms, {} failed",
            f(&summary[id::REQUEST_THROUGHPUT]),
            f(&summary[id::TTFT_MS]["p50"]),
            f(&summary[id::TTFT_MS]["p99"]),
            summary[id::REQUESTS]["failed"].as_u64().unwrap_or(0)
        );
    }
    if summary.get(id::STEP_TIME_S).is_some() {
        let f = |v: &Value, d: usize| v.as_f64().map_or("-".to_string(), |x| format!("{x:.d$}"));
        return format!(
            "step p50 {} s, {} tok/s p50, loss {} -> {}, wall {} s",
            f(&summary[id::STEP_TIME_S]["p50"], 4),
            f(&summary[id::TOKENS_PER_S]["p50"], 0),
            f(&summary[id::LOSS]["first"], 3),
            f(&summary[id::LOSS]["last"], 3),
            f(&summary[id::WALL_S]["value"], 2),
        );
    }
    if let Some(rate) = summary[id::LOADER_SAMPLES_PER_S]["value"].as_f64() {
        let f = |v: &Value, scale: f64, d: usize| {
            v.as_f64()
                .map_or("-".to_string(), |x| format!("{:.d$}", x * scale))
        };
        return format!(
            "{rate:.0} samples/s, {} MB/s, first batch {} ms, batch wait p50 {} ms, p99 {} ms ({} cache)",
            f(&summary[id::LOADER_MB_PER_S]["value"], 1.0, 1),
            f(&summary[id::LOADER_FIRST_BATCH_S]["value"], 1e3, 2),
            f(&summary[id::LOADER_BATCH_MS]["p50"], 1.0, 3),
            f(&summary[id::LOADER_BATCH_MS]["p99"], 1.0, 3),
            summary["cache"].as_str().unwrap_or("-"),
        );
    }
    let mut all = flatten(summary);
    // Headline values first (`value`), then whatever else there is.
    all.sort_by_key(|(_, s, _)| s != "value");
    let mut parts: Vec<String> = all
        .into_iter()
        .take(4)
        .map(|(m, s, v)| {
            if s == "value" {
                format!("{m} {v:.3}")
            } else {
                format!("{m}.{s} {v:.3}")
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
        let s = serde_json::json!({
            "loader_samples_per_s": {"value": 12345.6},
            "loader_mb_per_s": {"value": 3.26},
            "loader_first_batch_s": {"value": 0.0042},
            "loader_batch_ms": {"p50": 0.5, "p99": 1.25},
            "cache": "cold",
        });
        assert_eq!(
            headline(&s),
            "12346 samples/s, 3.3 MB/s, first batch 4.20 ms, batch wait p50 0.500 ms, p99 1.250 ms (cold cache)"
        );
    }

    #[test]
    fn flattens_and_aggregates_with_t_intervals() {
        let reps: Vec<Value> = [100.0, 110.0, 120.0]
            .iter()
            .map(|x| serde_json::json!({"request_throughput": x, "ttft_ms": {"p50": x / 2.0}, "scenario": "D(1,1)", "load": {"value": 8}, "requests": {"completed": 10, "failed": 0}}))
            .collect();
        let mut with_failure = reps.clone();
        with_failure.push(serde_json::json!({"error": "boom"}));
        let facts = aggregate("r", &[("p".into(), with_failure)], 0.95);
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
        assert!(!facts.iter().any(|f| f.metric == "load"));
        assert_eq!(unit_of("tokens_per_s"), "tok/s");
        assert_eq!(unit_of("step_time_s"), "s");
        assert_eq!(unit_of("max_rss_bytes"), "bytes");
        let one = replicate_facts("r", "p", 2, &reps[0], Some("samples/p/r2.parquet"));
        assert!(!one.is_empty());
        assert!(one.iter().all(|f| f.replicate == Some(2) && f.n == 10));
    }
}
