//! Comparing two runs: what differs in their specs and environments, and per point × headline
//! metric the ratio candidate/baseline with a bootstrap CI over replicate-level values.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use yardstick_spec::metrics::{MetricClass, id};
use yardstick_stats::bootstrap::{BootstrapConfig, Method, ratio_of_medians_ci};
use yardstick_stats::descriptive::median;
use yardstick_stats::hypothesis::mann_whitney;

use crate::error::GateError;
use crate::load::RunData;

/// Seed of every bootstrap of the gate (reproducible intervals).
pub(crate) const SEED: u64 = 0x5EED_0008;
/// Resamples of every bootstrap of the gate.
pub(crate) const RESAMPLES: usize = 10_000;

/// One field that differs between the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct FieldDiff {
    /// Dotted path (`spec.workload.concurrency`, `spec.layers.component[0].target.url`,
    /// `env.cpu.cores`).
    pub path: String,
    /// The baseline's value (`null` when absent).
    pub baseline: Value,
    /// The candidate's value (`null` when absent).
    pub candidate: Value,
}

/// The headline metrics the gate and `compare` look at, by (metric, statistic): the statistic
/// the metric catalogue (`yardstick_spec::metrics`, `yardstick metrics`) gates by default. Medians, rates
/// and quality (docs/methodology.md#baselines-and-regression-gates): tails need many more
/// samples than a replicate has, so they are gated only on request ([`classify`] with the
/// spec's `gates.tails`).
pub fn headline(metric: &str, statistic: &str) -> Option<MetricClass> {
    Some(yardstick_spec::metrics::gated(metric, statistic)?.class)
        .filter(|c| *c != MetricClass::Descriptive)
}

/// [`headline`], plus the latency tail statistics listed in `tails` (`["p99"]`).
pub fn classify(metric: &str, statistic: &str, tails: &[&str]) -> Option<MetricClass> {
    headline(metric, statistic).or_else(|| {
        (yardstick_spec::metrics::tail_gated(metric) && tails.contains(&statistic))
            .then_some(MetricClass::Tail)
    })
}

/// One point × headline metric of a comparison.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct MetricComparison {
    /// Point id.
    pub point: String,
    /// Metric name (`ttft_ms`).
    pub metric: String,
    /// Statistic (`p50`, `value`).
    pub statistic: String,
    /// Unit.
    pub unit: String,
    /// What the metric is, for tolerances and direction.
    pub class: MetricClass,
    /// The baseline's aggregate value.
    pub baseline: f64,
    /// The candidate's aggregate value.
    pub candidate: f64,
    /// Replicate values of the baseline.
    pub baseline_replicates: Vec<f64>,
    /// Replicate values of the candidate.
    pub candidate_replicates: Vec<f64>,
    /// Ratio of the medians of the replicate values, candidate / baseline.
    pub ratio: Option<f64>,
    /// Lower bound of the ratio's bootstrap CI (replicates resampled).
    pub ci_lo: Option<f64>,
    /// Upper bound of the ratio's bootstrap CI.
    pub ci_hi: Option<f64>,
    /// Two-sided Mann–Whitney p-value over replicate values (each side ≥ 2 replicates).
    pub mann_whitney_p: Option<f64>,
    /// The fewest samples (requests, steps) behind one replicate's value, over both runs.
    pub min_samples: Option<u64>,
}

/// The comparison of two runs.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    /// Baseline run id.
    pub baseline_run: String,
    /// Candidate run id.
    pub candidate_run: String,
    /// Baseline machine profile.
    pub baseline_profile: Option<String>,
    /// Candidate machine profile.
    pub candidate_profile: Option<String>,
    /// Confidence level of the CIs.
    pub level: f64,
    /// Spec fields that differ.
    pub spec_diffs: Vec<FieldDiff>,
    /// Key environment fields that differ.
    pub env_diffs: Vec<FieldDiff>,
    /// Warnings (more than one variable moved, missing files...).
    pub warnings: Vec<String>,
    /// Per point × headline metric.
    pub metrics: Vec<MetricComparison>,
    /// Where the step time went in both runs, for points both profiled (`profile.*` facts of
    /// their profiled replicates): explanations, never gated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfilerComparison>,
}

/// One point's profile in both runs.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ProfileComparison")] // the published schema name
pub struct ProfilerComparison {
    /// Point id.
    pub point: String,
    /// Each `profile.*` figure both runs have: (metric, baseline, candidate).
    pub figures: Vec<(String, f64, f64)>,
    /// The profiled step's change and the phase that moved most, for people: "profiled step
    /// +12.0 ms (+8.1 %), of which backward +10.2 ms".
    pub attribution: Option<String>,
}

/// The profiles both runs have, point by point.
fn profiles(baseline: &RunData, candidate: &RunData) -> Vec<ProfilerComparison> {
    let of = |r: &RunData| -> BTreeMap<(String, String), f64> {
        r.facts
            .iter()
            .filter(|f| f.replicate.is_none() && f.metric.starts_with("profile."))
            .map(|f| ((f.point_id.clone(), f.metric.clone()), f.value))
            .collect()
    };
    let (a, b) = (of(baseline), of(candidate));
    let mut by_point: BTreeMap<String, Vec<(String, f64, f64)>> = BTreeMap::new();
    for ((point, metric), va) in &a {
        if let Some(vb) = b.get(&(point.clone(), metric.clone())) {
            by_point
                .entry(point.clone())
                .or_default()
                .push((metric.clone(), *va, *vb));
        }
    }
    by_point
        .into_iter()
        .map(|(point, figures)| {
            let get = |m: &str| figures.iter().find(|f| f.0 == m).map(|f| (f.1, f.2));
            let attribution = get(id::PROFILE_STEP_S).and_then(|(sa, sb)| {
                let moved = figures
                    .iter()
                    .filter(|f| f.0.starts_with("profile.phase."))
                    .max_by(|x, y| (x.2 - x.1).abs().total_cmp(&(y.2 - y.1).abs()))?;
                let phase = moved
                    .0
                    .trim_start_matches("profile.phase.")
                    .trim_end_matches("_s");
                Some(format!(
                    "profiled step {:+.1} ms ({:+.1} %), of which {phase} {:+.1} ms",
                    (sb - sa) * 1e3,
                    if sa > 0.0 {
                        (sb / sa - 1.0) * 100.0
                    } else {
                        0.0
                    },
                    (moved.2 - moved.1) * 1e3
                ))
            });
            ProfilerComparison {
                point,
                figures,
                attribution,
            }
        })
        .collect()
}

/// Recursively lists the leaves that differ between `a` and `b`, with dotted paths under `prefix`
/// (`spec.layers.component[0].target.url`); arrays of equal length are compared element-wise.
pub fn diff_values(prefix: &str, a: &Value, b: &Value, out: &mut Vec<FieldDiff>) {
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    ma.get(k).unwrap_or(&Value::Null),
                    mb.get(k).unwrap_or(&Value::Null),
                );
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                diff_values(&path, va, vb, out);
            }
        }
        (Value::Array(xa), Value::Array(xb)) if xa.len() == xb.len() => {
            for (i, (va, vb)) in xa.iter().zip(xb).enumerate() {
                diff_values(&format!("{prefix}[{i}]"), va, vb, out);
            }
        }
        _ if a == b => {}
        _ => out.push(FieldDiff {
            path: prefix.to_string(),
            baseline: a.clone(),
            candidate: b.clone(),
        }),
    }
}

/// The environment fields a comparison checks (paths into `env.json`): the machine profile and
/// what defines it, plus a few fields that move performance without changing the profile.
pub fn env_key_fields() -> &'static [&'static str] {
    &[
        "machine_profile",
        "os.name",
        "os.kernel",
        "os.arch",
        "cpu.model_name",
        "cpu.sockets",
        "cpu.cores",
        "cpu.threads",
        "cpu.available",
        "cpu.smt",
        "cpu.governor",
        "memory.total_bytes",
        "memory.transparent_hugepages",
        "container.runtime",
        "container.cpu_limit",
        "container.memory_limit_bytes",
        "nvidia",
    ]
}

fn at<'a>(v: &'a Value, dotted: &str) -> &'a Value {
    dotted
        .split('.')
        .try_fold(v, |v, k| v.get(k))
        .unwrap_or(&Value::Null)
}

/// Key = (point, metric, statistic).
type Key = (String, String, String);

struct Series {
    aggregate: Option<f64>,
    replicates: BTreeMap<u32, f64>,
    unit: String,
    min_samples: Option<u64>,
}

/// The tail statistics (`p99`) the candidate's spec asks the gate to check (`gates.tails`).
pub(crate) fn tails_of(run: &RunData) -> Vec<&'static str> {
    run.spec
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.gates.as_ref())
        .and_then(|g| g.tails.as_ref())
        .map(|t| t.iter().map(|p| p.statistic()).collect())
        .unwrap_or_default()
}

fn series(run: &RunData, tails: &[&str]) -> BTreeMap<Key, Series> {
    let mut out: BTreeMap<Key, Series> = BTreeMap::new();
    for f in &run.facts {
        if classify(&f.metric, &f.statistic, tails).is_none() || !f.value.is_finite() {
            continue;
        }
        let s = out
            .entry((f.point_id.clone(), f.metric.clone(), f.statistic.clone()))
            .or_insert_with(|| Series {
                aggregate: None,
                replicates: BTreeMap::new(),
                unit: f.unit.clone(),
                min_samples: None,
            });
        match f.replicate {
            None => s.aggregate = Some(f.value),
            Some(k) => {
                s.replicates.insert(k, f.value);
                s.min_samples = Some(s.min_samples.map_or(f.n, |m| m.min(f.n)));
            }
        }
    }
    out
}

/// The confidence level of a run's spec (`trials.confidenceLevel`), default 0.95.
pub(crate) fn level_of(run: &RunData) -> f64 {
    run.spec
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.trials.as_ref())
        .and_then(|t| t.confidence_level)
        .filter(|l| *l > 0.0 && *l < 1.0)
        .unwrap_or(0.95)
}

/// The bootstrap settings of the gate: percentile intervals (BCa's jackknife acceleration is
/// unstable with 3–5 replicates), fixed seed.
pub(crate) fn boot(level: f64) -> BootstrapConfig {
    BootstrapConfig {
        resamples: RESAMPLES,
        level,
        seed: SEED,
        method: Method::Percentile,
    }
}

/// A warning when the runs executed differently — another engine, node count, tasks or
/// placement — and the candidate's spec does not name that as the variable under test: an
/// execution change moves the numbers by itself and must never pass silently as part of another
/// comparison.
fn execution_moved(spec_diffs: &[FieldDiff], candidate_spec: &Value) -> Option<String> {
    let moved: Vec<String> = spec_diffs
        .iter()
        .filter(|d| d.path.contains("execution."))
        .filter(|d| {
            ["engine", "nodes", "tasksPerNode", "placement"]
                .iter()
                .any(|f| d.path.contains(&format!("execution.{f}")))
        })
        .map(|d| format!("{} {} -> {}", d.path, d.baseline, d.candidate))
        .collect();
    if moved.is_empty() {
        return None;
    }
    let comparison = at(candidate_spec, "spec.comparison");
    let named = [&comparison["variable"], &comparison["variables"]]
        .iter()
        .flat_map(|v| match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        })
        .any(|v| matches!(v, "execution" | "engine" | "placement" | "nodes"));
    (!named).then(|| {
        format!(
            "the runs executed differently ({}): the engine, the node and task counts and the \
             placement change the numbers by themselves; name it as the comparison's variable \
             (`comparison: {{variable: execution}}`) or keep them equal (rule \
             execution-placement, docs/methodology.md#one-variable-at-a-time)",
            moved.join(", ")
        )
    })
}

/// Compares `candidate` against `baseline`. The CIs are at the candidate spec's confidence level.
pub fn compare(baseline: &RunData, candidate: &RunData) -> Result<Comparison, GateError> {
    let level = level_of(candidate);
    let mut warnings = Vec::new();
    let mut spec_diffs = Vec::new();
    if baseline.spec_value.is_null() || candidate.spec_value.is_null() {
        warnings.push("a spec.yaml is missing or does not decode; spec fields not compared".into());
    } else {
        diff_values(
            "",
            &baseline.spec_value,
            &candidate.spec_value,
            &mut spec_diffs,
        );
    }
    let mut env_diffs = Vec::new();
    if baseline.env.is_null() || candidate.env.is_null() {
        warnings.push("an env.json is missing; environments not compared".into());
    } else {
        for f in env_key_fields() {
            diff_values(
                &format!("env.{f}"),
                at(&baseline.env, f),
                at(&candidate.env, f),
                &mut env_diffs,
            );
        }
    }
    if let Some(w) = execution_moved(&spec_diffs, &candidate.spec_value) {
        warnings.push(w);
    }
    let moved = spec_diffs.len() + env_diffs.len();
    if moved > 1 {
        warnings.push(format!(
            "{moved} fields differ between the runs: more than one variable moved, so a difference \
             cannot be attributed to one of them; treat this comparison as exploratory \
             (methodology: one variable at a time, docs/methodology.md#one-variable-at-a-time)"
        ));
    }

    let tails = tails_of(candidate);
    let (sa, sb) = (series(baseline, &tails), series(candidate, &tails));
    let cfg = boot(level);
    let mut metrics = Vec::new();
    for (key, a) in &sa {
        let Some(b) = sb.get(key) else { continue };
        let (point, metric, statistic) = key.clone();
        let class = classify(&metric, &statistic, &tails).expect("filtered to gated metrics");
        let ra: Vec<f64> = a.replicates.values().copied().collect();
        let rb: Vec<f64> = b.replicates.values().copied().collect();
        let agg = |s: &Series, r: &[f64]| {
            s.aggregate
                .or_else(|| (!r.is_empty()).then(|| median(r)))
                .unwrap_or(f64::NAN)
        };
        let (va, vb) = (agg(a, &ra), agg(b, &rb));
        let (ratio, ci_lo, ci_hi) = if class == MetricClass::LossSlope {
            // A slope's sign matters, not its ratio: the gate checks the candidate's alone.
            (None, None, None)
        } else if ra.len() >= 2 && rb.len() >= 2 && median(&ra) != 0.0 {
            let ci = ratio_of_medians_ci(&ra, &rb, &cfg)?;
            (Some(ci.estimate), Some(ci.lower), Some(ci.upper))
        } else if va.is_finite() && vb.is_finite() && va != 0.0 {
            (Some(vb / va), None, None)
        } else {
            (None, None, None)
        };
        let mann_whitney_p = if ra.len() >= 2 && rb.len() >= 2 {
            mann_whitney(&ra, &rb).ok().map(|m| m.p_value)
        } else {
            None
        };
        metrics.push(MetricComparison {
            point,
            metric,
            statistic,
            unit: b.unit.clone(),
            class,
            baseline: va,
            candidate: vb,
            baseline_replicates: ra,
            candidate_replicates: rb,
            ratio,
            ci_lo,
            ci_hi,
            mann_whitney_p,
            min_samples: match (a.min_samples, b.min_samples) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
        });
    }
    let only = |x: &BTreeMap<Key, Series>, y: &BTreeMap<Key, Series>| {
        x.keys().filter(|k| !y.contains_key(*k)).count()
    };
    let (only_a, only_b) = (only(&sa, &sb), only(&sb, &sa));
    if only_a + only_b > 0 {
        warnings.push(format!(
            "{only_a} headline metric(s) only in the baseline and {only_b} only in the candidate \
             (different points?); they are not compared"
        ));
    }
    if metrics.is_empty() {
        warnings.push("no headline metric in common: nothing to compare".into());
    }
    // Points in the candidate's plan order (a sweep's 1, 8, 32), not as text (1, 32, 8).
    let plan = yardstick_store::order::plan_order(&candidate.dir);
    yardstick_store::order::sort_by_plan(&mut metrics, &plan, |m| m.point.as_str());
    let mut profiles = profiles(baseline, candidate);
    yardstick_store::order::sort_by_plan(&mut profiles, &plan, |p| p.point.as_str());
    Ok(Comparison {
        baseline_run: baseline.run.run_id.clone(),
        candidate_run: candidate.run.run_id.clone(),
        baseline_profile: baseline.run.machine_profile.clone(),
        candidate_profile: candidate.run.machine_profile.clone(),
        level,
        spec_diffs,
        env_diffs,
        warnings,
        metrics,
        profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 39: points come in the candidate's plan order (its `summary.json`), not sorted as
    /// text (`concurrency=1, 32, 8`); without a summary, in natural order.
    #[test]
    fn points_come_in_plan_order() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ["serve/c=1", "serve/c=8", "serve/c=32", "micro/a"];
        let with_points = |run: &str| {
            let mut d = crate::testutil::run_data(run, dir.path(), &[]);
            for p in ids {
                d.facts.extend(
                    crate::testutil::run_data(run, dir.path(), &[10.0, 10.1, 9.9])
                        .facts
                        .into_iter()
                        .map(|mut f| {
                            f.point_id = p.into();
                            f
                        }),
                );
            }
            d
        };
        let points =
            |c: &Comparison| -> Vec<String> { c.metrics.iter().map(|m| m.point.clone()).collect() };
        let (a, b) = (with_points("a"), with_points("b"));
        // No summary.json: natural order.
        let c = compare(&a, &b).unwrap();
        assert_eq!(
            points(&c),
            ["micro/a", "serve/c=1", "serve/c=8", "serve/c=32"]
        );
        // The plan's order, as summary.json lists it.
        let summary = yardstick_store::summary::RunSummary {
            points: ids
                .iter()
                .map(|id| yardstick_store::summary::PointAggregates {
                    id: id.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        std::fs::write(
            dir.path().join("summary.json"),
            serde_json::to_vec(&summary).unwrap(),
        )
        .unwrap();
        let c = compare(&a, &b).unwrap();
        assert_eq!(points(&c), ids);
    }

    #[test]
    fn an_execution_change_is_named_unless_it_is_the_variable() {
        let a = json!({"spec": {"execution": {"engine": "local"}, "mode": "realism"}});
        let b = json!({"spec": {"execution": {"engine": "slurm", "nodes": 2}, "mode": "realism"}});
        let mut diffs = Vec::new();
        diff_values("", &a, &b, &mut diffs);
        let w = execution_moved(&diffs, &b).expect("named");
        assert!(
            w.contains("spec.execution.engine \"local\" -> \"slurm\""),
            "{w}"
        );
        assert!(w.contains("spec.execution.nodes null -> 2"), "{w}");
        // Named as the variable under test: no warning.
        let mut named = b.clone();
        named["spec"]["comparison"] = json!({"variable": "execution"});
        assert!(execution_moved(&diffs, &named).is_none());
        // Other fields moving are the general check's business.
        let c = json!({"spec": {"execution": {"engine": "local", "cpusPerTask": 4}}});
        let mut diffs = Vec::new();
        diff_values("", &a, &c, &mut diffs);
        assert!(execution_moved(&diffs, &c).is_none());
    }

    #[test]
    fn diff_names_every_leaf_that_moved() {
        let a = json!({"workload": {"concurrency": [1, 8], "model": "m"}, "mode": "realism",
                       "layers": [1, 2]});
        let b = json!({"workload": {"concurrency": [1, 16], "model": "m"}, "extra": 1,
                       "layers": [1, 2, 3]});
        let mut out = Vec::new();
        diff_values("spec", &a, &b, &mut out);
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.extra",
                "spec.layers",
                "spec.mode",
                "spec.workload.concurrency[1]"
            ]
        );
        assert_eq!(out[2].candidate, Value::Null);
    }

    #[test]
    fn env_paths_resolve() {
        let env = json!({"cpu": {"cores": 4}});
        assert_eq!(at(&env, "cpu.cores"), &json!(4));
        assert_eq!(at(&env, "cpu.nope"), &Value::Null);
    }
}
