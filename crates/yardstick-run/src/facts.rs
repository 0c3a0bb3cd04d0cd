//! Facts: the figures a replicate measured ([`Figures`], from its runner's typed result through
//! [`Measured`](yardstick_spec::metrics::Measured)) as warehouse rows, and their aggregate over
//! replicates (mean with a Student-t confidence interval: replicates are the independent unit,
//! docs/methodology.md#trial-policy).

use std::collections::BTreeMap;

use serde_json::Value;
use yardstick_spec::metrics::{IntervalMethod, Measurement};
use yardstick_store::Manifest;
use yardstick_store::summary::{FailedReplicate, PointFailures, RunSummary};
use yardstick_store::warehouse::{FactRow, RunRow};

use crate::plan::Plan;
use yardstick_spec::metrics::id;

/// The unit of a metric: the metric catalogue's (`yardstick metrics`); "" for a metric the
/// catalogue does not know (its producer may declare one: [`Measurement::unit`]).
pub fn unit_of(metric: &str) -> &'static str {
    yardstick_spec::metrics::unit_of(metric)
}

pub use yardstick_store::record::{Figures, legacy_figures};

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

/// The aggregate of replicate values and its interval, by the metric's method (its unit's,
/// [`IntervalMethod`]): for a positive ratio-scale quantity the geometric mean with the t
/// interval of the logarithms, whose bounds stay positive (the arithmetic mean with its
/// interval cut at zero when a replicate measured zero); else the arithmetic mean with
/// Student's t interval. The interval is absent below 2 values (yardstick-stats; why Student's
/// t and not a bootstrap, and why logarithms: docs/stats.md).
pub fn mean_ci(values: &[f64], level: f64, method: IntervalMethod) -> (f64, Option<(f64, f64)>) {
    use yardstick_stats::descriptive::{geometric_t_interval, mean_t_interval};
    match method {
        IntervalMethod::LogT => geometric_t_interval(values, level).unwrap_or_else(|| {
            let (m, ci) = mean_t_interval(values, level);
            (m, ci.map(|(lo, hi)| (lo.max(0.0), hi)))
        }),
        IntervalMethod::T => mean_t_interval(values, level),
    }
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
            let unit = units.get(metric).copied().unwrap_or_default();
            let (mean, ci) = mean_ci(&values, level, IntervalMethod::for_unit(unit));
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
    if let Some(h) = eval_headline(summary) {
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
    // A figure in its metric's unit, for people (`201 ms`, `2.56k tok/s`, `15.6 GB/s`).
    let h = |metric: &str, stat: &str| {
        figures.get(metric, stat).map_or("-".to_string(), |x| {
            yardstick_spec::human::human(x, yardstick_spec::metrics::unit_of(metric))
        })
    };
    if figures.get(id::STEP_TIME_S, "p50").is_some() {
        return format!(
            "step p50 {}, {} p50, loss {} -> {}, wall {}",
            h(id::STEP_TIME_S, "p50"),
            h(id::TOKENS_PER_S, "p50"),
            f(id::LOSS, "first", 1.0, 3),
            f(id::LOSS, "last", 1.0, 3),
            h(id::WALL_S, "value"),
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
            let unit = m
                .unit
                .as_deref()
                .unwrap_or_else(|| yardstick_spec::metrics::unit_of(&m.metric));
            let shown = yardstick_spec::human::human(m.value, unit);
            if m.statistic == "value" {
                format!("{} {shown}", m.metric)
            } else {
                format!("{}.{} {shown}", m.metric, m.statistic)
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("done".into());
    }
    parts.join(", ")
}

/// The warehouse's row of a run as its manifest `m` stands (an imported run's too).
pub(crate) fn run_row(m: &Manifest, mode: Option<String>, location: &str) -> RunRow {
    RunRow {
        run_id: m.run_id.clone(),
        name: m.name.clone(),
        status: m.effective_status(),
        mode,
        spec_sha256: m.spec_sha256.clone(),
        machine_profile: m.machine_profile.clone(),
        env_sha256: m.env_sha256.clone(),
        started_at: m.started_at.clone(),
        ended_at: m.ended_at.clone(),
        tool_version: m.tool.version.clone(),
        git_commit: m.tool.git_commit.clone(),
        location: location.to_string(),
    }
}

/// A one-line headline of an eval replicate summary, if it is one.
pub(crate) fn eval_headline(summary: &Value) -> Option<String> {
    let e = summary.get("eval")?;
    if let Some(acc) = summary[id::ACCURACY].as_f64() {
        let mut h = format!(
            "{}: accuracy {:.3} [{:.3}, {:.3}] of {} items",
            e["task"].as_str().unwrap_or("?"),
            acc,
            summary[id::ACCURACY_CI]["lo"].as_f64().unwrap_or(f64::NAN),
            summary[id::ACCURACY_CI]["hi"].as_f64().unwrap_or(f64::NAN),
            e["n"]
        );
        if let Some(d) = summary[id::DETERMINISM].as_f64() {
            h.push_str(&format!(", determinism {d:.3}"));
        }
        let errors = summary[id::ERRORS].as_u64().unwrap_or(0);
        if errors > 0 {
            h.push_str(&format!(", {errors} failed requests"));
        }
        return Some(h);
    }
    if let Some(p) = summary[id::PERPLEXITY].as_f64() {
        return Some(format!(
            "perplexity {p:.3} over {} tokens",
            summary[id::PERPLEXITY_TOKENS]
        ));
    }
    summary["unsupported"]
        .as_str()
        .map(|why| format!("perplexity unsupported by this server: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three noisy replicates of a latency (10, 10 and 200 ms): the aggregate is their geometric
    /// mean and its interval stays above zero; a count keeps the arithmetic mean and t interval;
    /// a throughput with a zero replicate falls back to the arithmetic interval cut at zero.
    #[test]
    fn intervals_of_positive_quantities_never_go_below_zero() {
        let rep = |ttft: f64, errors: f64, tput: f64| {
            Some(Figures::with_n(
                vec![
                    Measurement::stat(id::TTFT_MS, "p50", ttft),
                    Measurement::stat("errors", "value", errors).in_unit(Some("count")),
                    Measurement::value(id::REQUEST_THROUGHPUT, tput),
                ],
                1,
            ))
        };
        let per_point = vec![(
            "p".to_string(),
            vec![
                rep(10.0, 1.0, 0.0),
                rep(10.0, 2.0, 5.0),
                rep(200.0, 30.0, 9.0),
            ],
        )];
        let facts = aggregate("r", &per_point, 0.95);
        let get = |m: &str| facts.iter().find(|f| f.metric == m).unwrap();
        let ttft = get(id::TTFT_MS);
        // scipy: gmean 27.144176165949055, exp(t interval of the logs) [0.3696, 1993.6].
        assert!((ttft.value - 27.144176165949055).abs() < 1e-9, "{ttft:?}");
        assert!(
            (ttft.ci_lo.unwrap() - 0.36958690724730003).abs() < 1e-9,
            "{ttft:?}"
        );
        assert!(
            (ttft.ci_hi.unwrap() - 1993.5941595329866).abs() < 1e-6,
            "{ttft:?}"
        );
        let errors = get("errors");
        assert!((errors.value - 11.0).abs() < 1e-12);
        assert!(
            errors.ci_lo.unwrap() < 0.0,
            "a count keeps Student's t: {errors:?}"
        );
        let tput = get(id::REQUEST_THROUGHPUT);
        assert!((tput.value - 14.0 / 3.0).abs() < 1e-12, "{tput:?}");
        assert_eq!(tput.ci_lo, Some(0.0), "{tput:?}");
        assert!(tput.ci_hi.unwrap() > 9.0);
    }
    use yardstick_store::record::ReplicateRecord;

    /// Issue 37: progress lines carry units in the catalogue's human formatting
    /// (`memory.copy 15.6 GB/s`, not `memory.copy 15.558`).
    #[test]
    fn micro_and_training_progress_lines_carry_units() {
        let micro = Figures::new(vec![
            Measurement::value("memory.copy", 15.558).in_unit(Some("GB/s")),
            Measurement::value("gemm.f32.256", 46.286).in_unit(Some("GFLOP/s")),
        ]);
        assert_eq!(
            headline(&serde_json::json!({}), &micro),
            "memory.copy 15.6 GB/s, gemm.f32.256 46.3 GFLOP/s"
        );
        let train = Figures::new(vec![
            Measurement::stat(id::STEP_TIME_S, "p50", 0.2004),
            Measurement::stat(id::TOKENS_PER_S, "p50", 2555.0),
            Measurement::stat(id::LOSS, "first", 5.551),
            Measurement::stat(id::LOSS, "last", 2.101),
            Measurement::value(id::WALL_S, 12.37),
        ]);
        let line = headline(&serde_json::json!({}), &train);
        assert!(
            line.starts_with("step p50 200 ms, 2.56k tok/s p50"),
            "{line}"
        );
        assert!(line.ends_with("loss 5.551 -> 2.101, wall 12.4 s"), "{line}");
    }

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
        // A rate: the geometric mean, with the t interval of the logarithms (scipy:
        // gmean 109.69613104865239, exp(t.interval(0.95, 2, mean(log), sem(log)))).
        assert!((thr.value - 109.69613104865239).abs() < 1e-9, "{thr:?}");
        assert_eq!(thr.n, 3);
        assert_eq!(thr.unit, "req/s");
        let (lo, hi) = (thr.ci_lo.unwrap(), thr.ci_hi.unwrap());
        assert!(
            (lo - 87.45986371595592).abs() < 1e-9 && (hi - 137.5858668854501).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert!(facts.iter().any(|f| f.metric == "ttft_ms"
            && f.statistic == "p50"
            && (f.value - 54.84806552432614).abs() < 1e-9));
        // A count: the arithmetic mean with Student's t.
        let completed = facts
            .iter()
            .find(|f| f.metric == id::REQUESTS && f.statistic == "completed")
            .unwrap();
        assert_eq!((completed.value, completed.ci_lo), (10.0, Some(10.0)));
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
        let record = serde_json::json!({"point": "p", "replicate": 0, "summary": {}, "figures": f});
        let read = |v: &Value| ReplicateRecord::read(&serde_json::to_vec(v).unwrap());
        assert_eq!(read(&record).unwrap().figures(), f);
        let old = serde_json::json!({"point": "p", "replicate": 0, "summary": {
            "request_throughput": 100.0, "ttft_ms": {"p50": 50.0},
            "requests": {"completed": 10, "failed": 0}, "load": {"value": 8},
            "units": {"request_throughput": "req/s"}, "scenario": "D(1,1)"}});
        let legacy = read(&old).unwrap().figures();
        assert_eq!(legacy.n, 10);
        assert_eq!(legacy.get(id::TTFT_MS, "p50"), Some(50.0));
        assert_eq!(legacy.get(id::REQUESTS, "failed"), Some(0.0));
        assert!(!legacy.measurements.iter().any(|m| m.metric == "load"));
        let bad = serde_json::json!({"point": "p", "replicate": 0, "figures": {"n": "ten"}});
        assert!(read(&bad).unwrap_err().to_string().contains("`figures`"));
    }
}
