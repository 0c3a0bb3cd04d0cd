//! What a report is made of: a stored run (warehouse facts plus its run directory's spec, env,
//! raw samples, step logs and telemetry) and, optionally, a gate or comparison result.

use std::collections::BTreeMap;
use std::path::Path;
use yardstick_store::record::ReplicateRecord;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use yardstick_store::run::FindRunError;
use yardstick_store::summary::RunSummary;
use yardstick_store::warehouse::{FactRow, PointRow, RunRow, Warehouse};

use crate::ReportError;
use crate::gate::GateView;
use yardstick_spec::metrics::id;

/// Everything a report shows.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The run.
    pub run: RunReport,
    /// A gate or comparison result the report covers, when given.
    pub gate: Option<GateView>,
    /// Other runs overlaid on the serving frontier (`report RUN --compare OTHER...`).
    #[serde(skip)]
    pub others: Vec<RunReport>,
    /// Things the reader should know (a gate file for another run, unreadable artifacts).
    pub warnings: Vec<String>,
    /// The short form a pull-request comment wants (`report --compact`), where a format has one
    /// (Markdown).
    #[serde(skip)]
    pub compact: Option<Compact>,
}

/// `report --compact`: the verdict, what moved, and a link to the full report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compact {
    /// Where the full report is (`--link`: the CI job's page, an artifact).
    pub link: Option<String>,
}

impl Report {
    /// A report of `run`, covering `gate` when given; warns when the gate is about another run.
    pub fn new(run: RunReport, gate: Option<GateView>) -> Report {
        let mut warnings = run.warnings.clone();
        if let Some(g) = &gate
            && g.candidate_run != run.run.run_id
        {
            warnings.push(format!(
                "the gate result is for run {} (candidate), not for run {}",
                g.candidate_run, run.run.run_id
            ));
        }
        Report {
            run,
            gate,
            others: Vec::new(),
            warnings,
            compact: None,
        }
    }
}

/// One stored run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunReport {
    /// The warehouse row (id, name, status, profile, times, tool).
    pub run: RunRow,
    /// `spec.yaml` as given, when readable.
    pub spec_yaml: Option<String>,
    /// `env.json`; `Null` when missing.
    pub env: Value,
    /// Confidence level of the CIs (`summary.json`, default 0.95).
    pub level: f64,
    /// Replicates per point in the plan.
    pub replicates: u32,
    /// The points, in plan order.
    pub points: Vec<PointReport>,
    /// Telemetry samples (CPU, memory, GPU clocks and temperatures) over the run.
    #[serde(skip_serializing)]
    pub telemetry: Vec<TelemetryRow>,
    /// The telemetry summary of `summary.json`.
    pub telemetry_summary: Option<yardstick_store::summary::TelemetrySummary>,
    /// The node-to-node consistency check of a run on several nodes (`summary.json`'s `nodes`,
    /// the shape of `yardstick nodes check --json`); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<yardstick_store::summary::NodesReport>,
    /// The profiles of e2e points (`summary.json`'s `profiles`: the analysis of each point's
    /// profiled replicate, where its traces are, the profiler's overhead), by point id; left
    /// out without.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, yardstick_store::summary::ProfileEntry>,
    /// The bottleneck verdicts of the training points (`summary.json`'s `bottlenecks`, read on
    /// its own so that a summary whose other parts cannot be read still gives them); shown on
    /// the headline cards, left out of `--json` (the summary carries them).
    #[serde(skip)]
    pub bottlenecks: Vec<yardstick_store::summary::PointBottleneck>,
    /// A playbook's diagnosis (`summary.json`'s `diagnosis`), shown first.
    pub diagnosis: Option<yardstick_store::summary::Diagnosis>,
    /// Manifest notes (resumes, machine-profile changes).
    pub notes: Vec<String>,
    /// Artifacts that could not be read, and similar.
    pub warnings: Vec<String>,
}

/// One point of the run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PointReport {
    /// Point id (`component.0.serve/D(16,8)/concurrency=4`).
    pub id: String,
    /// `micro`, `component` or `e2e`.
    pub layer: String,
    /// `serve`, `train`, `command` or the micro benchmark's name.
    pub kind: String,
    /// The point's parameters (the plan's work item).
    pub work: Value,
    /// Aggregate facts (mean over replicates with CI) and their replicate values.
    pub metrics: Vec<MetricStat>,
    /// Replicates that ran, with their errors.
    pub replicates: Vec<ReplicateInfo>,
    /// Per-request latencies of a serving point, warm-up and failed requests excluded (raw
    /// samples: left out of `--json`, which carries the aggregates).
    #[serde(skip_serializing)]
    pub latency: Option<LatencySamples>,
    /// Per-step times of a training or command point that reported steps.
    #[serde(skip_serializing)]
    pub steps: Vec<StepSeries>,
    /// The probes of a capacity point's searches (`load: {mode: capacity}`), every replicate's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<CapacityProbe>,
    /// Per turn index of a session point (`sessions:`), every replicate's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnPoint>,
}

/// One turn index of a session point's replicate (`summary.turns`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TurnPoint {
    /// The replicate.
    pub replicate: u32,
    /// The turn, from 1.
    pub turn: u32,
    /// Median and 99th percentile TTFT, ms.
    pub ttft_ms: [Option<f64>; 2],
    /// Mean prompt tokens at this turn.
    pub prompt_tokens: f64,
    /// Share of prompt tokens the server served from its prefix cache, when it said.
    pub cache_hit_rate: Option<f64>,
}

/// The turns a replicate's result records (`summary.turns`).
fn turns_of(k: u32, v: &ReplicateRecord) -> Vec<TurnPoint> {
    v.summary["turns"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| {
                    Some(TurnPoint {
                        replicate: k,
                        turn: t["turn"].as_u64()? as u32,
                        ttft_ms: [t["ttft_ms_p50"].as_f64(), t["ttft_ms_p99"].as_f64()],
                        prompt_tokens: t["prompt_tokens_mean"].as_f64().unwrap_or(0.0),
                        cache_hit_rate: t["prompt_cache_hit_rate"].as_f64(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One probe of a capacity search, as its replicate's result records it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CapacityProbe {
    /// The replicate (search) it belongs to.
    pub replicate: u32,
    /// The load probed (req/s, or concurrent requests).
    pub load: f64,
    /// `holds`, `breaks` or `undecided`.
    pub outcome: String,
    /// Measured requests.
    pub requests: u64,
    /// p99 TTFT, TPOT and E2E of the probe's last part, ms.
    pub p99_ms: [Option<f64>; 3],
    /// The SLO's bounds on TTFT, TPOT and E2E, ms.
    pub slo_ms: [Option<f64>; 3],
    /// `req/s` or `concurrent requests`.
    pub unit: String,
}

/// The probes a replicate's result records (`summary.capacity.probes`).
fn probes_of(k: u32, v: &ReplicateRecord) -> Vec<CapacityProbe> {
    let c = &v.summary["capacity"];
    let slo = [
        c["slo"]["ttft_ms"].as_f64(),
        c["slo"]["tpot_ms"].as_f64(),
        c["slo"]["e2e_ms"].as_f64(),
    ];
    let unit = c["unit"].as_str().unwrap_or("").to_string();
    c["probes"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let s = &p["summary"];
                    Some(CapacityProbe {
                        replicate: k,
                        load: p["load"].as_f64()?,
                        outcome: p["outcome"].as_str()?.to_string(),
                        requests: p["requests"].as_u64().unwrap_or(0),
                        p99_ms: [
                            s[id::TTFT_MS]["p99"].as_f64(),
                            s[id::TPOT_MS]["p99"].as_f64(),
                            s[id::E2E_MS]["p99"].as_f64(),
                        ],
                        slo_ms: slo,
                        unit: unit.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One (metric, statistic) of a point.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MetricStat {
    /// Metric (`ttft_ms`).
    pub metric: String,
    /// Statistic (`p50`, `value`).
    pub statistic: String,
    /// Unit.
    pub unit: String,
    /// Mean over replicates.
    pub mean: f64,
    /// CI of the mean (Student t over replicates).
    pub ci: Option<(f64, f64)>,
    /// Replicates aggregated.
    pub n: u64,
    /// Per-replicate values.
    pub replicates: Vec<(u32, f64)>,
}

impl MetricStat {
    /// Half the CI width relative to the mean, in percent.
    pub fn half_width_pct(&self) -> Option<f64> {
        let (lo, hi) = self.ci?;
        (self.mean != 0.0).then(|| (hi - lo) / 2.0 / self.mean.abs() * 100.0)
    }
}

/// One replicate of a point.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReplicateInfo {
    /// 0-based replicate.
    pub replicate: u32,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Warm-up steps trimmed by the training analysis.
    pub warmup_trimmed: Option<usize>,
}

/// Request latencies of a serving point, pooled over replicates (measured requests only).
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct LatencySamples {
    /// Time to first token, ms.
    pub ttft_ms: Vec<f64>,
    /// End-to-end latency, ms.
    pub e2e_ms: Vec<f64>,
    /// Time per output token, ms (requests with two or more output tokens).
    pub tpot_ms: Vec<f64>,
    /// Every inter-token gap, ms.
    pub itl_ms: Vec<f64>,
    /// Warm-up requests left out.
    pub warmup: usize,
    /// Failed requests left out.
    pub failed: usize,
}

impl LatencySamples {
    /// The samples of a metric by name (`ttft_ms`, `e2e_ms`, `tpot_ms`, `itl_ms`).
    pub fn get(&self, metric: &str) -> &[f64] {
        match metric {
            id::TTFT_MS => &self.ttft_ms,
            id::E2E_MS => &self.e2e_ms,
            id::TPOT_MS => &self.tpot_ms,
            id::ITL_MS => &self.itl_ms,
            _ => &[],
        }
    }
}

/// Step times of one replicate and rank, in reporting order.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepSeries {
    /// Replicate.
    pub replicate: u32,
    /// Rank, when the workload reported one.
    pub rank: Option<u32>,
    /// (step, step time in seconds).
    pub steps: Vec<(f64, f64)>,
    /// Leading steps trimmed as warm-up by the analysis.
    pub warmup_steps: usize,
}

/// One telemetry sample.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TelemetryRow {
    /// Seconds since the sampler started.
    pub elapsed_s: f64,
    /// `cpu`, `memory`, `gpu0`, ...
    pub device: String,
    /// `util_pct`, `clock_mhz`, `temperature_c`, ...
    pub metric: String,
    /// The value.
    pub value: f64,
}

impl PointReport {
    /// The (metric, statistic) aggregate, if stored.
    pub fn metric(&self, metric: &str, statistic: &str) -> Option<&MetricStat> {
        self.metrics
            .iter()
            .find(|m| m.metric == metric && m.statistic == statistic)
    }

    /// The serving scenario (`D(16,8)`), when a serving point.
    pub fn scenario(&self) -> Option<&str> {
        self.work["scenario"].as_str()
    }

    /// `concurrency=4`, `rate=8`, `world_size=2`: the point's load for labels.
    pub fn load_label(&self) -> String {
        if let Some(v) = self.work["load_value"].as_f64() {
            let mode = self.work["load_mode"].as_str().unwrap_or("load");
            return format!("{mode}={}", crate::format::num(v));
        }
        if let Some(n) = self.world_size() {
            return format!("world_size={n}");
        }
        self.id.rsplit('/').next().unwrap_or(&self.id).to_string()
    }

    /// The world size of a command point.
    pub fn world_size(&self) -> Option<u32> {
        self.work["world_size"]
            .as_u64()
            .map(|n| n as u32)
            .or_else(|| {
                self.metric(id::WORLD_SIZE, "value")
                    .map(|m| m.mean.round() as u32)
            })
    }

    /// Replicates that failed.
    pub fn failed_replicates(&self) -> impl Iterator<Item = &ReplicateInfo> {
        self.replicates.iter().filter(|r| r.error.is_some())
    }
}

/// Finds a run by id or a unique prefix of one ([`yardstick_store::warehouse::find_run`]).
pub fn find_run(w: &mut dyn Warehouse, id: &str) -> Result<RunRow, ReportError> {
    yardstick_store::warehouse::find_run(w, id).map_err(|e| match e {
        FindRunError::Store(e) => ReportError::Store(e),
        e => ReportError::NotFound(e.with_hint()),
    })
}

/// Loads a run (by id or unique prefix): facts and points from the warehouse, everything else
/// from its run directory: `<store_dir>/runs/<id>` when the caller names a store directory that
/// holds it, else `<location>/runs/<id>` as the warehouse recorded it (a relative location is
/// relative to where the run was started, so the caller's store directory comes first).
pub fn load_run(
    w: &mut dyn Warehouse,
    id: &str,
    store_dir: Option<&Path>,
) -> Result<RunReport, ReportError> {
    let run = find_run(w, id)?;
    let facts = w.facts(&run.run_id)?;
    let points = w.points(&run.run_id)?;
    if let Some(why) = yardstick_store::run::unsafe_run_id(&run.run_id) {
        return Err(ReportError::Malformed {
            path: run.location.clone(),
            message: format!(
                "the warehouse names run {:?}, which is not a run id: {why}",
                run.run_id
            ),
        });
    }
    let recorded = Path::new(&run.location).join("runs").join(&run.run_id);
    let dir = store_dir
        .map(|s| s.join("runs").join(&run.run_id))
        .filter(|d| d.is_dir())
        .unwrap_or(recorded);
    let mut report = from_parts(run, &points, &facts, &dir);
    if !dir.is_dir() {
        report.warnings.insert(
            0,
            format!(
                "run directory {} not found: spec, env, samples and telemetry are missing from                  this report",
                dir.display()
            ),
        );
    }
    Ok(report)
}

/// Reads a file of the run directory: only a regular file inside it (a manifest or a crafted
/// run cannot make the report read, and embed, a file elsewhere through `..` or a link).
fn read_run_file(dir: &Path, rel: &str) -> std::io::Result<Vec<u8>> {
    yardstick_store::fsutil::read_in(dir, rel)
}

fn read_json(dir: &Path, rel: &str, warnings: &mut Vec<String>) -> Value {
    let path = dir.join(rel);
    match read_run_file(dir, rel) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            warnings.push(format!("{}: not JSON: {e}", path.display()));
            Value::Null
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(e) => {
            warnings.push(format!("{}: {e}", path.display()));
            Value::Null
        }
    }
}

/// Builds a run report from its warehouse rows and run directory. Missing or unreadable
/// artifacts (a garbage-collected run has no samples) leave their parts empty, with a warning
/// for the unreadable ones.
pub fn from_parts(run: RunRow, points: &[PointRow], facts: &[FactRow], dir: &Path) -> RunReport {
    let mut warnings = Vec::new();
    let spec_yaml = read_run_file(dir, "spec.yaml")
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    let env = read_json(dir, "env.json", &mut warnings);
    let summary_json = read_json(dir, "summary.json", &mut warnings);
    let bottlenecks = serde_json::from_value::<yardstick_store::summary::RunBottlenecks>(
        summary_json["bottlenecks"].clone(),
    )
    .map(|b| b.points)
    .unwrap_or_default();
    let summary = match summary_json {
        Value::Null => None,
        v => RunSummary::deserialize(v)
            .map_err(|e| warnings.push(format!("{}: {e}", dir.join("summary.json").display())))
            .ok(),
    };
    let manifest = yardstick_store::read_manifest(dir).ok();
    let level = summary.as_ref().map_or(0.95, |s| s.confidence_level);
    let replicates = summary.as_ref().map_or(0, |s| s.replicates);

    // Plan order: summary.json's, else the warehouse's.
    let mut order: Vec<(String, String, String, Value)> = Vec::new();
    if let Some(s) = &summary {
        for p in &s.points {
            let id = p.id.clone();
            let kind = p.work["kind"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    points
                        .iter()
                        .find(|r| r.point_id == id)
                        .map(|r| r.kind.clone())
                        .unwrap_or_default()
                });
            let kind = if kind == "micro" {
                p.work["micro"].as_str().unwrap_or("micro").to_string()
            } else {
                kind
            };
            order.push((id, p.layer.clone(), kind, p.work.clone()));
        }
    }
    for p in points {
        if !order.iter().any(|o| o.0 == p.point_id) {
            order.push((
                p.point_id.clone(),
                p.layer.clone(),
                p.kind.clone(),
                p.params.clone(),
            ));
        }
    }

    // Per-replicate records (results/<slug>/r<k>.json) name their point and samples file.
    let artifacts: Vec<(String, String)> = manifest
        .as_ref()
        .map(|m| {
            m.artifacts
                .iter()
                .map(|a| (a.path.clone(), a.kind.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut results: BTreeMap<String, Vec<(u32, String, ReplicateRecord)>> = BTreeMap::new();
    for (path, _) in artifacts.iter().filter(|(p, _)| p.starts_with("results/")) {
        let record = match read_run_file(dir, path) {
            Ok(bytes) => match ReplicateRecord::read(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    warnings.push(format!("{}: {e}", dir.join(path).display()));
                    continue;
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                warnings.push(format!("{}: {e}", dir.join(path).display()));
                continue;
            }
        };
        let slug = path
            .trim_start_matches("results/")
            .rsplit_once('/')
            .map(|(s, _)| s.to_string())
            .unwrap_or_default();
        results
            .entry(record.point.clone())
            .or_default()
            .push((record.replicate, slug, record));
    }

    let mut out_points = Vec::new();
    for (id, layer, kind, work) in order {
        let mut recs = results.remove(&id).unwrap_or_default();
        recs.sort_by_key(|r| r.0);
        let replicates: Vec<ReplicateInfo> = recs
            .iter()
            .map(|(k, _, v)| ReplicateInfo {
                replicate: *k,
                error: v.error().map(str::to_owned),
                warmup_trimmed: v.warmup_trimmed().map(|n| n as usize),
            })
            .collect();
        let latency = if kind == "serve" {
            let mut l = LatencySamples::default();
            let mut any = false;
            for (_, _, v) in &recs {
                if let Some(rel) = v.samples.as_deref() {
                    match read_serve_samples(dir, rel, &mut l) {
                        Ok(()) => any = true,
                        Err(e) => warnings.push(format!("{rel}: {e}")),
                    }
                }
            }
            any.then_some(l)
        } else {
            None
        };
        let mut steps = Vec::new();
        for (k, slug, v) in &recs {
            let prefix = format!("logs/{slug}/r{k}/");
            let trimmed = v.warmup_trimmed().unwrap_or(0) as usize;
            for (path, _) in artifacts
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix) && p.ends_with(".metrics.jsonl"))
            {
                match read_run_file(dir, path) {
                    Ok(bytes) => {
                        steps.extend(parse_steps(&String::from_utf8_lossy(&bytes), *k, trimmed))
                    }
                    Err(e) => warnings.push(format!("{path}: {e}")),
                }
            }
        }
        let probes = recs.iter().flat_map(|(k, _, v)| probes_of(*k, v)).collect();
        let turns = recs.iter().flat_map(|(k, _, v)| turns_of(*k, v)).collect();
        out_points.push(PointReport {
            probes,
            turns,
            metrics: point_metrics(facts, &id),
            id,
            layer,
            kind,
            work,
            replicates,
            latency,
            steps,
        });
    }

    let mut telemetry = Vec::new();
    for (path, _) in artifacts.iter().filter(|(_, k)| k == "telemetry") {
        match read_telemetry(dir, path) {
            Ok(rows) => telemetry.extend(rows),
            Err(e) => warnings.push(format!("{path}: {e}")),
        }
    }
    RunReport {
        run,
        spec_yaml,
        env,
        level,
        replicates,
        points: out_points,
        telemetry,
        telemetry_summary: summary.as_ref().and_then(|s| s.telemetry.clone()),
        nodes: summary.as_ref().and_then(|s| s.nodes.clone()),
        profiles: summary
            .as_ref()
            .and_then(|s| s.profiles.clone())
            .unwrap_or_default(),
        bottlenecks,
        diagnosis: summary.as_ref().and_then(|s| s.diagnosis.clone()),
        notes: manifest.map(|m| m.notes).unwrap_or_default(),
        warnings,
    }
}

/// Where a metric goes in a list: headline metrics first, in reading order.
pub fn metric_rank(metric: &str) -> usize {
    const ORDER: &[&str] = &[
        id::REQUEST_THROUGHPUT,
        id::OUTPUT_TOKEN_THROUGHPUT,
        id::INPUT_TOKEN_THROUGHPUT,
        id::GOODPUT,
        id::TTFT_MS,
        id::TPOT_MS,
        id::ITL_MS,
        id::E2E_MS,
        id::CLIENT_QUEUE_MS,
        id::STEP_TIME_S,
        id::TOKENS_PER_S,
        id::SAMPLES_PER_S,
        id::MFU,
        id::LOSS,
        id::WALL_S,
        id::USER_S,
        id::SYS_S,
        id::MAX_RSS_BYTES,
        id::PEAK_MEM_BYTES,
        id::ACCURACY,
        id::ACCURACY_CI,
        id::DETERMINISM,
        id::PERPLEXITY,
    ];
    ORDER
        .iter()
        .position(|m| *m == metric)
        .unwrap_or(ORDER.len())
}

fn stat_rank(statistic: &str) -> usize {
    const ORDER: &[&str] = &[
        "value",
        "aggregate",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "p10",
        "min",
        "max",
    ];
    ORDER
        .iter()
        .position(|s| *s == statistic)
        .unwrap_or(ORDER.len())
}

/// The metrics of every point of a run's warehouse facts ([`Warehouse::facts`]), by point id:
/// what [`load_run`] reads of them, without the run directory (for a list of runs, where
/// loading every run's artifacts would be too slow).
pub fn metrics_by_point(facts: &[FactRow]) -> Vec<(String, Vec<MetricStat>)> {
    let mut ids: Vec<&str> = facts.iter().map(|f| f.point_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|id| (id.to_string(), point_metrics(facts, id)))
        .collect()
}

/// The aggregate facts of a point with their replicate values; a (metric, statistic) stored only
/// per replicate (an incomplete run) gets the mean of its replicates and no CI.
fn point_metrics(facts: &[FactRow], point: &str) -> Vec<MetricStat> {
    let mut by: BTreeMap<(String, String), MetricStat> = BTreeMap::new();
    for f in facts.iter().filter(|f| f.point_id == point) {
        let e = by
            .entry((f.metric.clone(), f.statistic.clone()))
            .or_insert_with(|| MetricStat {
                metric: f.metric.clone(),
                statistic: f.statistic.clone(),
                unit: f.unit.clone(),
                mean: f64::NAN,
                ci: None,
                n: 0,
                replicates: Vec::new(),
            });
        match f.replicate {
            None => {
                e.mean = f.value;
                e.ci = f.ci_lo.zip(f.ci_hi);
                e.n = f.n;
            }
            Some(k) => e.replicates.push((k, f.value)),
        }
    }
    let mut out: Vec<MetricStat> = by
        .into_values()
        .map(|mut m| {
            m.replicates.sort_by_key(|r| r.0);
            if m.mean.is_nan() && !m.replicates.is_empty() {
                m.mean = m.replicates.iter().map(|r| r.1).sum::<f64>() / m.replicates.len() as f64;
                m.n = m.replicates.len() as u64;
            }
            m
        })
        .collect();
    out.sort_by(|a, b| {
        (
            metric_rank(&a.metric),
            &a.metric,
            stat_rank(&a.statistic),
            &a.statistic,
        )
            .cmp(&(
                metric_rank(&b.metric),
                &b.metric,
                stat_rank(&b.statistic),
                &b.statistic,
            ))
    });
    out
}

fn read_serve_samples(dir: &Path, rel: &str, into: &mut LatencySamples) -> Result<(), ReportError> {
    let path = dir.join(rel);
    let bytes = read_run_file(dir, rel).map_err(|e| ReportError::io(&path, e))?;
    for row in yardstick_store::samples::read_rows(bytes)? {
        if row["warmup"].as_bool() == Some(true) {
            into.warmup += 1;
            continue;
        }
        let (Some(ttft), Some(e2e)) = (row[id::TTFT_MS].as_f64(), row[id::E2E_MS].as_f64()) else {
            into.failed += 1;
            continue;
        };
        if !row["error"].is_null() {
            into.failed += 1;
            continue;
        }
        into.ttft_ms.push(ttft);
        into.e2e_ms.push(e2e);
        if let Some(n) = row["output_tokens"].as_f64()
            && n >= 2.0
        {
            into.tpot_ms.push((e2e - ttft) / (n - 1.0));
        }
        if let Some(gaps) = row[id::ITL_MS].as_array() {
            into.itl_ms.extend(gaps.iter().filter_map(Value::as_f64));
        }
    }
    Ok(())
}

/// Step times of a metric-protocol file (`train` phase), one series per rank.
pub fn parse_steps(text: &str, replicate: u32, warmup_steps: usize) -> Vec<StepSeries> {
    let mut by_rank: BTreeMap<Option<u32>, Vec<(f64, f64)>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["phase"].as_str().is_some_and(|p| p != "train") {
            continue;
        }
        let Some(t) = v[id::STEP_TIME_S].as_f64() else {
            continue;
        };
        let rank = v["rank"].as_u64().map(|r| r as u32);
        let series = by_rank.entry(rank).or_default();
        let step = v["step"].as_f64().unwrap_or(series.len() as f64);
        series.push((step, t));
    }
    by_rank
        .into_iter()
        .map(|(rank, steps)| StepSeries {
            replicate,
            rank,
            steps,
            warmup_steps,
        })
        .collect()
}

fn read_telemetry(dir: &Path, rel: &str) -> Result<Vec<TelemetryRow>, ReportError> {
    let path = dir.join(rel);
    let bytes = read_run_file(dir, rel).map_err(|e| ReportError::io(&path, e))?;
    Ok(yardstick_store::samples::read_rows(bytes)?
        .into_iter()
        .filter_map(|r| {
            Some(TelemetryRow {
                elapsed_s: r["elapsed_s"].as_f64()?,
                device: r["device"].as_str()?.to_string(),
                metric: r["metric"].as_str()?.to_string(),
                value: r["value"].as_f64()?,
            })
        })
        .collect())
}
