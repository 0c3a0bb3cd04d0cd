//! `summary.json`: a stored run's aggregate figures per point (the mean over replicates with its
//! confidence interval), the replicates that failed, and the analyses that go with them. `yardstick
//! run` and `yardstick import` write it; reports, the team server and `run --json` read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::warehouse::FactRow;

// The analyses' types a summary's sections hold, for its readers.
pub use yardstick_analysis::bottleneck::{ControlPlaneShare, PointBottleneck, RunBottlenecks};
pub use yardstick_analysis::diagnosis::Diagnosis;
pub use yardstick_analysis::nodes::NodesReport;
pub use yardstick_analysis::profiler::ProfilerAnalysis;
pub use yardstick_analysis::scaling::ScalingReport;
pub use yardstick_env::telemetry::TelemetrySummary;

/// A run's `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunSummary {
    /// The run's name (the spec's `metadata.name`, or the import's).
    pub name: String,
    /// Replicates per point.
    pub replicates: u32,
    /// The level of every confidence interval.
    pub confidence_level: f64,
    /// Every point, in plan order.
    pub points: Vec<PointAggregates>,
    /// Points with a failed replicate (a measured run; absent for imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<Vec<PointFailures>>,
    /// The analysis of each profiled point, by point id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub profiles: Option<BTreeMap<String, ProfileEntry>>,
    /// The accelerator and host telemetry over the run (absent when none was sampled, and for
    /// imports).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub telemetry: Option<TelemetrySummary>,
    /// Throughput across world sizes, per e2e layer swept over two or more.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub scaling: Option<Vec<LayerScaling>>,
    /// Whether the nodes of a multi-node run measured alike.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub nodes: Option<NodesReport>,
    /// Per eval point, the accuracy of every replicate and the interval of the first.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub eval: Option<Vec<EvalPointSummary>>,
    /// Training points classified on the run's own micro ceilings.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub bottlenecks: Option<RunBottlenecks>,
    /// The treatments of a sweep (or the one of a server under test without a sweep): which
    /// measured and which were infeasible, and why.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub sweep: Option<Vec<TreatmentSummary>>,
    /// The playbook's answer, for a spec with `playbook` (docs/playbooks.md).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub diagnosis: Option<Diagnosis>,
    /// What an import's figures mean next to ours (imports only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
}

/// The scaling of one e2e layer across its world sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerScaling {
    /// The layer's index among the spec's e2e entries.
    pub layer: usize,
    /// Efficiency and Amdahl's fit.
    #[serde(flatten)]
    pub report: ScalingReport,
}

/// One profiled point's entry in a summary's `profiles`: the analysis of its profiled replicate
/// (one more run, never measured), where its traces are, and the profiler's overhead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileEntry {
    /// Where the traces are: `profile/<point slug>/` in the run directory (`bench exec` and
    /// `bench train`: the `--profile-dir` given).
    pub dir: String,
    /// The profiled replicate's median step time, s; `null` when it reported no steps.
    pub step_time_s_profiled: Option<f64>,
    /// The measured replicates' median step time (mean of their medians), s; `null` when they
    /// reported no steps.
    pub step_time_s_unprofiled: Option<f64>,
    /// Profiled over unprofiled step time; `null` without both.
    pub overhead: Option<f64>,
    /// Where the time went, when the profile could be read (an analysis in a shape this
    /// version does not read is left out, the rest of the entry kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub analysis: Option<ProfilerAnalysis>,
    /// Why there is no analysis, when the profile could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One eval point's entry in a summary's `eval`, from its replicates' summaries. The fields of
/// the first replicate that did not fail are `null` when every replicate failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalPointSummary {
    /// The point id.
    pub point: String,
    /// The task (the first good replicate's); `null` for a perplexity point.
    pub task: Option<String>,
    /// Items of the task, or tokens of the perplexity (the first good replicate's).
    pub n: Option<u64>,
    /// Replicates run.
    pub replicates: usize,
    /// Replicates that failed.
    pub failed_replicates: usize,
    /// Accuracy of every good replicate, a fraction in [0, 1]; `null` when none measured it.
    pub accuracy: Option<Vec<f64>>,
    /// The Wilson interval of the first good replicate's accuracy.
    pub wilson_ci_first_replicate: Option<AccuracyInterval>,
    /// The level of that interval.
    pub confidence: Option<f64>,
    /// The determinism rate of every good replicate (`repeat` ≥ 2); `null` when none measured
    /// it.
    pub determinism: Option<Vec<f64>>,
    /// Whether every good replicate measured the same accuracy.
    pub replicates_agree: bool,
    /// The perplexity of every good replicate; `null` when none measured it.
    pub perplexity: Option<Vec<f64>>,
    /// Why the server could not give a perplexity (the first good replicate's), when it could
    /// not.
    pub perplexity_unsupported: Option<String>,
}

/// An accuracy interval. An end that was not finite is written `null` and read back as NaN.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccuracyInterval {
    /// Lower end.
    #[serde(deserialize_with = "number")]
    pub lo: f64,
    /// Upper end.
    #[serde(deserialize_with = "number")]
    pub hi: f64,
}

/// Reads an analysis section of a summary; one in a shape this version does not read (written
/// by another version) is left out rather than making the whole summary unreadable.
fn section<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// One point's aggregate figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointAggregates {
    /// The point id.
    pub id: String,
    /// Its layer.
    pub layer: String,
    /// What the point runs (the plan's description of its work).
    pub work: Value,
    /// Metric → statistic → its aggregate over the replicates.
    pub metrics: BTreeMap<String, BTreeMap<String, Aggregate>>,
}

/// A figure's aggregate over replicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Aggregate {
    /// The mean over the replicates that measured it.
    #[serde(deserialize_with = "number")]
    pub mean: f64,
    /// Its Student-t confidence interval (absent below two replicates).
    #[serde(deserialize_with = "interval")]
    pub ci: Option<[f64; 2]>,
    /// The replicates that measured it.
    pub n: u64,
    /// Its unit.
    pub unit: String,
}

/// A number as JSON writes it, `null` standing for a value that was not finite (serde_json
/// writes NaN and infinities as `null`): read back as NaN rather than refusing the summary.
fn number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// An interval whose ends may be `null` (not finite when written), read as NaN.
fn interval<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
    Ok(Option::<[Option<f64>; 2]>::deserialize(d)?
        .map(|[a, b]| [a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN)]))
}

/// The failed replicates of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointFailures {
    /// The point id.
    pub point: String,
    /// Its replicates.
    pub replicates: u32,
    /// The ones that failed.
    pub failed: Vec<FailedReplicate>,
}

/// One treatment of a sweep, as the run measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TreatmentSummary {
    /// `factor=value` of its varying factors, joined by `/` (what its points' ids end in).
    pub id: String,
    /// Every factor's level.
    pub values: BTreeMap<String, String>,
    /// Its points.
    pub points: Vec<String>,
    /// `measured` (a replicate of a point measured), or `infeasible` (its server never became
    /// ready, or died: `reason`).
    pub status: String,
    /// Why it is infeasible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds from the server's spawn to ready, one per start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub time_to_ready_s: Vec<f64>,
}

/// A replicate that measured nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailedReplicate {
    /// Its index.
    pub replicate: u32,
    /// Why.
    pub error: String,
}

impl RunSummary {
    /// A summary of `points` (id, layer, work), each with its aggregate facts (`facts` rows
    /// with no replicate), in the order given.
    pub fn of<'a>(
        name: &str,
        replicates: u32,
        confidence_level: f64,
        points: impl IntoIterator<Item = (&'a str, &'a str, &'a Value)>,
        facts: &[FactRow],
    ) -> RunSummary {
        let points = points
            .into_iter()
            .map(|(id, layer, work)| {
                let mut metrics: BTreeMap<String, BTreeMap<String, Aggregate>> = BTreeMap::new();
                for f in facts.iter().filter(|f| f.point_id == id) {
                    metrics.entry(f.metric.clone()).or_default().insert(
                        f.statistic.clone(),
                        Aggregate {
                            mean: f.value,
                            ci: f.ci_lo.zip(f.ci_hi).map(|(a, b)| [a, b]),
                            n: f.n,
                            unit: f.unit.clone(),
                        },
                    );
                }
                PointAggregates {
                    id: id.to_string(),
                    layer: layer.to_string(),
                    work: work.clone(),
                    metrics,
                }
            })
            .collect();
        RunSummary {
            name: name.to_string(),
            replicates,
            confidence_level,
            points,
            ..RunSummary::default()
        }
    }

    /// The failures, none for an import.
    pub fn failures(&self) -> &[PointFailures] {
        self.failures.as_deref().unwrap_or_default()
    }

    /// Points whose every replicate failed: they measured nothing.
    pub fn points_that_measured_nothing(&self) -> Vec<String> {
        self.failures()
            .iter()
            .filter(|f| f.failed.len() as u64 == u64::from(f.replicates))
            .map(|f| f.point.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(point: &str, metric: &str, statistic: &str, value: f64) -> FactRow {
        FactRow {
            run_id: "r".into(),
            point_id: point.into(),
            replicate: None,
            metric: metric.into(),
            statistic: statistic.into(),
            value,
            unit: "ms".into(),
            ci_lo: Some(value - 1.0),
            ci_hi: Some(value + 1.0),
            n: 3,
            artifact: None,
            row_group: None,
        }
    }

    #[test]
    fn groups_facts_by_point_metric_and_statistic_and_reads_back() {
        let work = serde_json::json!({"kind": "serve"});
        let facts = [
            fact("a", "ttft_ms", "p50", 50.0),
            fact("a", "ttft_ms", "p99", 90.0),
            fact("b", "ttft_ms", "p50", 40.0),
        ];
        let mut s = RunSummary::of("n", 3, 0.95, [("a", "serve", &work)], &facts);
        assert_eq!(s.points.len(), 1);
        assert_eq!(s.points[0].metrics["ttft_ms"].len(), 2);
        assert_eq!(s.points[0].metrics["ttft_ms"]["p99"].ci, Some([89.0, 91.0]));
        s.failures = Some(vec![PointFailures {
            point: "a".into(),
            replicates: 3,
            failed: (0..3)
                .map(|r| FailedReplicate {
                    replicate: r,
                    error: "boom".into(),
                })
                .collect(),
        }]);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["points"][0]["metrics"]["ttft_ms"]["p50"]["ci"][0], 49.0);
        assert!(v.get("notes").is_none() && v.get("telemetry").is_none());
        let back: RunSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.points_that_measured_nothing(), ["a"]);

        // A figure that was not finite is written as null and read back as NaN, not refused.
        let mut odd = RunSummary::of("n", 3, 0.95, [("a", "serve", &work)], &facts[..1]);
        odd.points[0]
            .metrics
            .get_mut("ttft_ms")
            .unwrap()
            .get_mut("p50")
            .unwrap()
            .ci = Some([f64::NEG_INFINITY, 1.0]);
        let text = serde_json::to_string(&odd).unwrap();
        assert!(text.contains("[null,1.0]"), "{text}");
        let back: RunSummary = serde_json::from_str(&text).unwrap();
        let ci = back.points[0].metrics["ttft_ms"]["p50"].ci.unwrap();
        assert!(ci[0].is_nan() && ci[1] == 1.0);
    }

    /// The analyses' sections are typed; one written in a shape this version does not read is
    /// left out and the rest of the summary still reads.
    #[test]
    fn analysis_sections_read_typed_and_an_unreadable_one_is_left_out() {
        let text = r#"{"name": "n", "replicates": 3, "confidence_level": 0.95, "points": [],
            "telemetry": {"samples": 12, "interval_s": 1.0, "duration_s": 11.0, "window_s": 3.0,
                          "cpu_util_mean_pct": 40.5, "gpus": []},
            "scaling": [{"layer": 0, "metric": "samples_per_s", "base_world_size": 1,
                         "points": [{"world_size": 1, "throughput": 100.0, "speedup": 1.0,
                                     "efficiency": 1.0, "band": "excellent"}],
                         "amdahl": null, "warnings": []}],
            "nodes": {"nodes": "not a list"},
            "eval": {"kept": true}}"#;
        let s: RunSummary = serde_json::from_str(text).unwrap();
        let t = s.telemetry.as_ref().unwrap();
        assert_eq!((t.samples, t.cpu_util_mean_pct), (12, Some(40.5)));
        let sc = &s.scaling.as_ref().unwrap()[0];
        assert_eq!((sc.layer, sc.report.metric.as_str()), (0, "samples_per_s"));
        assert_eq!(sc.report.points[0].band, "excellent");
        assert_eq!(s.nodes, None);
        assert_eq!(s.eval, None);
        // Written back: the layer beside the report's fields, as before.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["scaling"][0]["layer"], 0);
        assert_eq!(v["scaling"][0]["base_world_size"], 1);
        assert!(v.get("nodes").is_none() && v.get("eval").is_none());
    }
}
