//! The plan of a run: every point (one cell of a layer's sweep) and the order in which its
//! replicates execute. Pure: no I/O, so `--dry-run` and tests see exactly what a run would do.

use std::time::Duration;
use yardstick_load::point::{PointMode, ServePoint, TracePoint};
use yardstick_load::trace::TraceFormat;

use serde::Serialize;
use yardstick_spec::rules::task_name;
use yardstick_spec::{
    Api, BenchmarkRun, CacheMode, CacheModes, ComponentKind, ComponentLayer, E2eKind, LoadMode,
    MlperfScenario, Order, ScenarioSpec,
};

/// A capacity search's settings, with the defaults filled in (`load: {mode: capacity}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityPlan {
    /// `rate` or `concurrency`.
    pub axis: String,
    /// The first load probed.
    pub start: f64,
    /// The highest load probed.
    pub max: f64,
    /// Relative width of the final bracket (rates).
    pub precision: f64,
    /// Each objective at this percentile (0–100), unless `attainment`.
    pub percentile: f64,
    /// This share of requests meets every objective at once.
    pub attainment: Option<f64>,
    /// Confidence of each probe's test.
    pub confidence: f64,
    /// Measured requests per probe.
    pub probe_requests: u64,
    /// Most requests a probe pools.
    pub max_probe_requests: u64,
    /// Most probes.
    pub max_probes: u32,
}

impl CapacityPlan {
    fn of(s: &yardstick_spec::CapacitySearch) -> CapacityPlan {
        let axis = match s.axis {
            Some(yardstick_spec::CapacityAxis::Concurrency) => "concurrency",
            _ => "rate",
        };
        let probe_requests = s.probe_requests.unwrap_or(300);
        CapacityPlan {
            axis: axis.into(),
            start: s.start.unwrap_or(if axis == "rate" { 10.0 } else { 4.0 }),
            max: s.max.unwrap_or(4096.0),
            precision: s.precision.unwrap_or(0.05),
            percentile: s.percentile.unwrap_or(99.0),
            attainment: s.attainment,
            confidence: s.confidence.unwrap_or(0.95),
            probe_requests,
            max_probe_requests: s
                .max_probe_requests
                .unwrap_or(probe_requests.saturating_mul(4)),
            max_probes: s.max_probes.unwrap_or(30),
        }
    }
}

/// What one point runs.
// A plan holds tens of points; boxing the serve variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PointWork {
    /// A micro benchmark.
    Micro {
        /// Which one.
        micro: String,
        /// Problem sizes, when given.
        sizes: Option<Vec<u64>>,
        /// Element type (GEMM), when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        dtype: Option<yardstick_spec::model::Precision>,
    },
    /// One (scenario, load level) of a serve layer: the point as `yardstick-load` runs it, and
    /// what only a run adds (the embedded simulator, a capacity search, a price).
    Serve {
        /// Base URL, or `None` for the embedded simulator.
        url: Option<String>,
        /// The point (its fields are the point's flat `params`).
        #[serde(flatten)]
        point: yardstick_load::point::ServePoint,
        /// A capacity search (`load_mode` `capacity`) instead of one load level.
        capacity: Option<CapacityPlan>,
        /// Dollars per accelerator-hour and accelerators (`cost`).
        cost: Option<(f64, u32)>,
    },
    /// One task (or the perplexity shard) of an eval layer: every item runs `repeat` times per
    /// replicate.
    Eval {
        /// Index of the component entry in the spec.
        layer: usize,
        /// Base URL, or `None` for the embedded simulator.
        url: Option<String>,
        /// `chat` or `completions`.
        api: String,
        /// Model name.
        model: String,
        /// The task as the spec names it (a bundled probe or a file relative to the spec);
        /// `None` for the perplexity point.
        task: Option<String>,
        /// The perplexity text (`builtin` or a file relative to the spec), for the perplexity
        /// point.
        perplexity: Option<String>,
        /// Runs per item within a replicate.
        repeat: u32,
        /// Confidence level of the Wilson intervals.
        confidence: f64,
        /// Maximum output tokens.
        max_tokens: u64,
        /// Sampling seed.
        seed: u64,
        /// Stop sequences.
        stop: Vec<String>,
        /// Requests in flight.
        concurrency: u32,
        /// Per-request timeout.
        #[serde(with = "secs_opt")]
        timeout: Option<Duration>,
        /// Environment variable holding a bearer token.
        api_key_env: Option<String>,
        /// Extra CA certificates (PEM) for an https target.
        ca_cert: Option<String>,
    },
    /// The built-in reference trainer.
    Train {
        /// Index of the e2e entry in the spec.
        layer: usize,
        /// Preset.
        preset: String,
        /// Steps per replicate.
        steps: Option<u64>,
        /// Warm-up steps excluded.
        warmup_steps: u64,
    },
    /// A command (training script or any program).
    Command {
        /// Index of the e2e entry in the spec.
        layer: usize,
        /// Argument vector with placeholders substituted.
        argv: Vec<String>,
        /// World size, when swept.
        world_size: Option<u32>,
        /// Timeout.
        #[serde(with = "secs_opt")]
        timeout: Option<Duration>,
    },
    /// Start-up time of a component command, in one page-cache state.
    Startup {
        /// Index of the component entry in the spec.
        layer: usize,
        /// The command.
        argv: Vec<String>,
        /// `cold` or `warm`.
        cache: String,
    },
    /// One pass of a data loader (the built-in reader over `source`, or the user's `argv`), in
    /// one page-cache state.
    Dataloader {
        /// Index of the component entry in the spec.
        layer: usize,
        /// The built-in reader's files and settings (paths relative to the spec's directory).
        source: Option<yardstick_spec::LoaderSource>,
        /// The user's loader, when there is no `source`.
        argv: Vec<String>,
        /// `cold` or `warm`.
        cache: String,
        /// The pass is stopped (and counts as failed) after this long.
        #[serde(with = "secs_opt")]
        timeout: Option<Duration>,
    },
}

/// How long a startup layer waits for ready when the spec sets no `timeout`.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a data-loader pass may take when the spec sets no `timeout`.
pub const DATALOADER_TIMEOUT: Duration = Duration::from_secs(600);

mod secs_opt {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

/// One point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Stable id within the run, e.g. `component.0.serve/D(100,100)/concurrency=8`.
    pub id: String,
    /// A file-system-safe form of the id for artifact paths.
    pub slug: String,
    /// `micro`, `component` or `e2e`.
    pub layer: String,
    /// What runs.
    pub work: PointWork,
    /// Index into [`Plan::treatments`]: the treatment whose server this point measures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub treatment: Option<usize>,
}

/// A point and replicate, in execution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Index into [`Plan::points`].
    pub point: usize,
    /// 0-based replicate.
    pub replicate: u32,
    /// The profiled replicate of an e2e point with a `profile` (after every measured one; never
    /// part of the statistics or the gate).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub profile: bool,
}

/// A point id that is not in the plan (`run --only`, `gate --confirm`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no point `{point}` in the plan of {plan}; its points are: {}", known.join(", "))]
pub struct UnknownPoint {
    /// The id asked for.
    pub point: String,
    /// The plan's name.
    pub plan: String,
    /// The plan's point ids.
    pub known: Vec<String>,
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Benchmark name.
    pub name: String,
    /// Every point, micro first, then component, then e2e (lower layers first:
    /// docs/methodology.md#the-three-layers).
    pub points: Vec<Point>,
    /// Replicates of every point.
    pub replicates: u32,
    /// Execution order.
    pub steps: Vec<Step>,
    /// An upper bound on the run's duration where the spec bounds every point, in seconds.
    pub estimate_upper_s: Option<f64>,
    /// The treatments of `spec.sweep` (one, without factors, for a server without a sweep;
    /// none without a server or sweep).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub treatments: Vec<crate::sweep::Treatment>,
}

impl PointWork {
    /// Whether a step of this point is split across an engine's processes (the pods of a group,
    /// the tasks of a Slurm allocation): serve points — a replayed trace too, each process
    /// sending its share on the trace's clock — but not MLPerf scenarios or capacity searches,
    /// which run in one process; and command points.
    pub fn spans_group(&self) -> bool {
        match self {
            PointWork::Serve {
                point, capacity, ..
            } => point.mlperf.is_none() && capacity.is_none(),
            PointWork::Command { .. } => true,
            _ => false,
        }
    }
}

impl Plan {
    /// The plan as `yardstick run` shows it: the counts, one line per point, and the duration
    /// estimate ([`Plan::estimate_line`] with no history; `yardstick run` gives it the store's).
    pub fn text(&self) -> String {
        self.text_with(&Default::default())
    }

    /// [`Plan::text`], the estimate timing points by `history` (point id → seconds per
    /// replicate, [`crate::estimate::history`]).
    pub fn text_with(&self, history: &std::collections::BTreeMap<String, f64>) -> String {
        let mut lines = vec![format!(
            "plan: {} point(s) x {} replicate(s) = {} step(s)",
            self.points.len(),
            self.replicates,
            self.steps.len()
        )];
        for p in &self.points {
            lines.push(format!("  {}", p.id));
        }
        if let Some(server) = self.treatments.iter().find_map(|t| t.server.as_ref()) {
            let n = self.treatments.len();
            lines.push(format!(
                "server under test: `{}` (the first treatment's), started for each of {n} treatment(s){}; ready within {}",
                server.argv.join(" "),
                if self.treatments.iter().any(|t| !t.id.is_empty()) {
                    format!(
                        " ({})",
                        self.treatments
                            .iter()
                            .map(|t| t.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                },
                fmt_secs(server.timeout.as_secs_f64())
            ));
        } else if !self.treatments.is_empty() {
            lines.push(format!("treatments: {}", self.treatments.len()));
        }
        lines.push(self.estimate_line(history));
        lines.join("\n")
    }

    /// Keeps only the points whose ids are in `ids` (and their steps, in the same order), for
    /// re-running some points of a spec (`yardstick run --only`, `gate --confirm`). The duration
    /// estimate is dropped (it was for the whole plan). An unknown id is an error naming the
    /// known ones.
    pub fn restrict(&mut self, ids: &[String]) -> Result<(), UnknownPoint> {
        if let Some(bad) = ids
            .iter()
            .find(|id| !self.points.iter().any(|p| &p.id == *id))
        {
            return Err(UnknownPoint {
                point: bad.clone(),
                plan: self.name.clone(),
                known: self.points.iter().map(|p| p.id.clone()).collect(),
            });
        }
        let mut new_index = vec![None; self.points.len()];
        let mut kept = Vec::new();
        for (i, p) in self.points.drain(..).enumerate() {
            if ids.contains(&p.id) {
                new_index[i] = Some(kept.len());
                kept.push(p);
            }
        }
        self.points = kept;
        self.steps = self
            .steps
            .iter()
            .filter_map(|s| {
                new_index[s.point].map(|point| Step {
                    point,
                    replicate: s.replicate,
                    profile: s.profile,
                })
            })
            .collect();
        self.estimate_upper_s = None;
        Ok(())
    }
}

pub use yardstick_store::run::slug;

/// The points of eval layer `i`: one per task, then one for perplexity. Warm-up does not apply:
/// every item is scored (discarding some would change the probe set), and accuracy does not
/// depend on a warm server.
fn eval_points(
    i: usize,
    c: &ComponentLayer,
    level: f64,
    points: &mut Vec<Point>,
    estimate: &mut Option<f64>,
) {
    let target = c.target.clone().unwrap_or_default();
    let url = target.url.filter(|u| u != "sim");
    let api = match target.api.unwrap_or(Api::Chat) {
        Api::Completions => "completions",
        _ => "chat",
    };
    let perplexity = c
        .perplexity
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != "none");
    let probes: Vec<(String, Option<String>, Option<String>)> = c
        .tasks
        .iter()
        .flatten()
        .map(|t| {
            let t = t.trim();
            (task_name(t), Some(t.to_string()), None)
        })
        .chain(perplexity.map(|p| ("perplexity".to_string(), None, Some(p.to_string()))))
        .collect();
    let repeat = c.repeat.unwrap_or(1).max(1);
    let concurrency = c.concurrency.unwrap_or(1).max(1);
    let timeout = c.timeout.map_or(Duration::from_secs(120), |t| t.0);
    for (name, task, perplexity) in probes {
        // Every request ends within its timeout, so a point whose request count is known here
        // (bundled probes, the builtin shard) is bounded by ⌈requests / concurrency⌉ × timeout;
        // a task or text file is counted only when the run reads it.
        let requests = match (&task, &perplexity) {
            (Some(t), _) => yardstick_eval::Task::builtin(t)
                .and_then(Result::ok)
                .map(|t| t.items.len() * repeat as usize),
            (None, Some(p)) if p == "builtin" => yardstick_eval::Shard::load("builtin")
                .ok()
                .map(|s| s.paragraphs.len()),
            _ => None,
        };
        *estimate = match (*estimate, requests) {
            (Some(e), Some(n)) => {
                Some(e + n.div_ceil(concurrency as usize) as f64 * timeout.as_secs_f64())
            }
            _ => None,
        };
        let id = format!("component.{i}.eval/{name}");
        points.push(Point {
            slug: slug(&id),
            id,
            layer: "component".into(),
            treatment: None,
            work: PointWork::Eval {
                layer: i,
                url: url.clone(),
                api: api.into(),
                model: target.model.clone().unwrap_or_default(),
                task,
                perplexity,
                repeat,
                confidence: c.confidence.unwrap_or(level),
                max_tokens: c.max_tokens.unwrap_or(128),
                seed: c.seed.unwrap_or(0),
                stop: c.stop_sequences.clone().unwrap_or_default(),
                concurrency,
                timeout: Some(timeout),
                api_key_env: target.api_key_env.clone(),
                ca_cert: target.ca_cert.clone(),
            },
        });
    }
}

/// A serve entry's `retry`, its unset fields at their defaults.
pub fn retry_policy(r: &yardstick_spec::model::ServeRetry) -> yardstick_load::RetryPolicy {
    let d = yardstick_load::RetryPolicy::default();
    yardstick_load::RetryPolicy {
        on: r.on.clone().unwrap_or(d.on),
        max_attempts: r.max_attempts.unwrap_or(d.max_attempts),
        honour_retry_after: r.retry_after.unwrap_or(d.honour_retry_after),
        backoff: r.backoff.map_or(d.backoff, |b| b.0),
        max_wait: r.max_wait.map_or(d.max_wait, |b| b.0),
    }
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Expands a valid spec into its plan. (Validation has already run: missing required pieces
/// here are programming errors and yield an empty plan section, not a panic.)
///
/// With a server under test or a sweep, the micro points come first, once; then the component
/// and e2e points of each treatment, their ids ending in the treatment's factors. Interleaved
/// replicates run every treatment once per round (the server restarts when the treatment
/// changes); sequential ones finish a point before the next.
pub fn plan(run: &BenchmarkRun) -> Plan {
    let treatments = run
        .spec
        .as_ref()
        .map(crate::sweep::treatments)
        .unwrap_or_default();
    if treatments.is_empty() {
        return plan_one(run);
    }
    let spec = run.spec.as_ref().expect("treatments come from a spec");
    let mut micro_only = run.clone();
    let mut rest = run.clone();
    if let Some(l) = micro_only.spec.as_mut().and_then(|s| s.layers.as_mut()) {
        l.component = None;
        l.e2e = None;
    }
    if let Some(l) = rest.spec.as_mut().and_then(|s| s.layers.as_mut()) {
        l.micro = None;
    }
    let base = plan_one(&micro_only);
    let mut points = base.points;
    let mut profiled: Vec<usize> = base
        .steps
        .iter()
        .filter(|s| s.profile)
        .map(|s| s.point)
        .collect();
    let mut estimate = base
        .estimate_upper_s
        .map(|e| e / base.replicates.max(1) as f64);
    for (t, treatment) in treatments.iter().enumerate() {
        let mut one = rest.clone();
        yardstick_spec::sweep::fill_spec(&mut one, &treatment.values);
        let sub = plan_one(&one);
        let offset = points.len();
        profiled.extend(
            sub.steps
                .iter()
                .filter(|s| s.profile)
                .map(|s| s.point + offset),
        );
        estimate = match (estimate, sub.estimate_upper_s) {
            (Some(e), Some(x)) => Some(
                e + x / sub.replicates.max(1) as f64
                    + treatment
                        .server
                        .as_ref()
                        .map_or(0.0, |s| (s.timeout + s.grace).as_secs_f64()),
            ),
            _ => None,
        };
        for mut p in sub.points {
            if !treatment.id.is_empty() {
                p.id = format!("{}/{}", p.id, treatment.id);
                p.slug = slug(&p.id);
            }
            p.treatment = Some(t);
            points.push(p);
        }
    }
    let trials = spec.trials.clone().unwrap_or_default();
    let replicates = trials.replicates.unwrap_or(3);
    let steps = order_steps(
        points.len(),
        replicates,
        trials.order.unwrap_or(Order::Interleaved),
        &profiled,
    );
    Plan {
        name: base.name,
        points,
        replicates,
        steps,
        estimate_upper_s: estimate.map(|e| e * replicates as f64),
        treatments,
    }
}

/// The execution order of `points` points × `replicates`, then one profiled replicate of each
/// point in `profiled`.
fn order_steps(points: usize, replicates: u32, order: Order, profiled: &[usize]) -> Vec<Step> {
    let mut steps = Vec::new();
    let step = |point, replicate| Step {
        point,
        replicate,
        profile: false,
    };
    match order {
        Order::Interleaved => {
            for r in 0..replicates {
                steps.extend((0..points).map(|p| step(p, r)));
            }
        }
        Order::Sequential => {
            for p in 0..points {
                steps.extend((0..replicates).map(|r| step(p, r)));
            }
        }
    }
    steps.extend(profiled.iter().map(|&point| Step {
        point,
        replicate: replicates,
        profile: true,
    }));
    steps
}

/// The plan of a spec without treatments.
fn plan_one(run: &BenchmarkRun) -> Plan {
    let name = run
        .metadata
        .as_ref()
        .and_then(|m| m.name.clone())
        .unwrap_or_default();
    let Some(spec) = &run.spec else {
        return Plan {
            name,
            points: vec![],
            replicates: 0,
            steps: vec![],
            estimate_upper_s: None,
            treatments: Vec::new(),
        };
    };
    let trials = spec.trials.clone().unwrap_or_default();
    let replicates = trials.replicates.unwrap_or(3);
    let warmup = trials.warmup.clone().unwrap_or_default();
    let mut points = Vec::new();
    let mut estimate: Option<f64> = Some(0.0);
    let layers = spec.layers.clone().unwrap_or_default();

    for (i, m) in layers.micro.iter().flatten().enumerate() {
        let Some(kind) = m.kind.map(yardstick_workloads::micro::kind_name) else {
            continue;
        };
        let id = format!("micro.{i}.{kind}");
        estimate = estimate.map(|e| e + 10.0);
        points.push(Point {
            slug: slug(&id),
            id,
            layer: "micro".into(),
            treatment: None,
            work: PointWork::Micro {
                micro: kind.into(),
                sizes: m.sizes.clone(),
                dtype: m.dtype,
            },
        });
    }

    let level = trials.confidence_level.unwrap_or(0.95);
    for (i, c) in layers.component.iter().flatten().enumerate() {
        if c.kind == Some(ComponentKind::Eval) {
            eval_points(i, c, level, &mut points, &mut estimate);
            continue;
        }
        if c.kind == Some(ComponentKind::Dataloader) {
            let modes = c
                .cache
                .as_ref()
                .map_or(vec![CacheMode::Warm], CacheModes::modes);
            let timeout = c.timeout.map_or(DATALOADER_TIMEOUT, |t| t.0);
            for mode in modes {
                // A warm pass comes after a discarded one; each may take the timeout.
                let passes = if mode == CacheMode::Warm { 2.0 } else { 1.0 };
                estimate = estimate.map(|e| e + passes * timeout.as_secs_f64());
                let id = format!("component.{i}.dataloader/{}", mode.as_str());
                points.push(Point {
                    slug: slug(&id),
                    id,
                    layer: "component".into(),
                    treatment: None,
                    work: PointWork::Dataloader {
                        layer: i,
                        source: c.source.clone(),
                        argv: if c.source.is_some() {
                            Vec::new()
                        } else {
                            c.command.clone().unwrap_or_default()
                        },
                        cache: mode.as_str().into(),
                        timeout: Some(timeout),
                    },
                });
            }
            continue;
        }
        if c.kind == Some(ComponentKind::Startup) {
            let modes = c
                .cache
                .as_ref()
                .map_or(vec![CacheMode::Warm], CacheModes::modes);
            let timeout = c.timeout.map_or(STARTUP_TIMEOUT, |t| t.0);
            let grace = c.grace.map_or(10.0, |g| g.0.as_secs_f64());
            for mode in modes {
                // A warm start is two starts; each may take the timeout and the grace period.
                let starts = if mode == CacheMode::Warm { 2.0 } else { 1.0 };
                estimate = estimate.map(|e| e + starts * (timeout.as_secs_f64() + grace));
                let id = format!("component.{i}.startup/{}", mode.as_str());
                points.push(Point {
                    slug: slug(&id),
                    id,
                    layer: "component".into(),
                    treatment: None,
                    work: PointWork::Startup {
                        layer: i,
                        argv: c.command.clone().unwrap_or_default(),
                        cache: mode.as_str().into(),
                    },
                });
            }
            continue;
        }
        if c.kind != Some(ComponentKind::Serve) {
            continue;
        }
        let target = c.target.clone().unwrap_or_default();
        let url = target.url.filter(|u| u != "sim");
        let api = match target.api.unwrap_or(Api::Chat) {
            Api::Chat => yardstick_load::Api::Chat,
            Api::Completions => yardstick_load::Api::Completions,
            Api::Embeddings => yardstick_load::Api::Embeddings,
        };
        let load = c.load.clone().unwrap_or_default();
        let mode = match load.mode {
            Some(LoadMode::Rate) => "rate",
            Some(LoadMode::Capacity) => "capacity",
            _ => "concurrency",
        };
        let capacity = (load.mode == Some(LoadMode::Capacity))
            .then(|| CapacityPlan::of(&load.capacity.clone().unwrap_or_default()));
        let stop = c.stop.clone().unwrap_or_default();
        let slo = c.slo.clone().unwrap_or_default();
        let mlperf = c.mlperf.map(|m| match m {
            MlperfScenario::SingleStream => "single-stream",
            MlperfScenario::MultiStream => "multi-stream",
            MlperfScenario::Server => "server",
            MlperfScenario::Offline => "offline",
        });
        // Single-stream and offline take no load value: one point per scenario.
        let values: Vec<f64> = match mlperf {
            Some("single-stream") | Some("offline") => vec![1.0],
            _ if capacity.is_some() => vec![0.0],
            _ => load.values.clone().unwrap_or_default(),
        };
        let mode = match mlperf {
            Some(m) => format!("mlperf-{m}"),
            None => mode.to_string(),
        };
        let models: Option<Vec<(String, f64)>> = target.models.as_ref().map(|ms| {
            ms.iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.weight.unwrap_or(1.0)))
                .collect()
        });
        let request_kinds: Option<Vec<(yardstick_load::kinds::Kind, f64)>> =
            c.request_kinds.as_ref().map(|ks| {
                ks.iter()
                    .filter_map(|k| {
                        let kind = match k.kind? {
                            yardstick_spec::RequestKindName::Text => {
                                yardstick_load::kinds::Kind::Text
                            }
                            yardstick_spec::RequestKindName::ToolCall => {
                                yardstick_load::kinds::Kind::ToolCall
                            }
                            yardstick_spec::RequestKindName::Json => {
                                yardstick_load::kinds::Kind::Json
                            }
                        };
                        Some((kind, k.weight.unwrap_or(1.0)))
                    })
                    .collect()
            });
        // A mix's points name it as given (`base=0.7,lora-a=0.3`); requests name their own.
        let model_name = match (&target.model, &models) {
            (Some(m), _) => m.clone(),
            (None, Some(ms)) => ms
                .iter()
                .map(|(n, w)| format!("{n}={w}"))
                .collect::<Vec<_>>()
                .join(","),
            (None, None) => match &target.models_from {
                Some(f) => format!(
                    "models from {f}{}",
                    target
                        .model_zipf
                        .map_or(String::new(), |s| format!(" (zipf {s})"))
                ),
                None => String::new(),
            },
        };
        let serve_point = |scenario: String, v: f64, trace: Option<TracePoint>| ServePoint {
            api,
            model: model_name.clone(),
            scenario,
            load_mode: PointMode::of(load.mode, c.mlperf),
            load_value: v,
            arrival: load.arrival,
            burstiness: load.burstiness,
            max_requests: stop.max_requests,
            max_duration: stop.max_duration.map(|d| d.0),
            warmup_requests: warmup.requests.unwrap_or(0),
            slo_ttft_ms: slo.ttft_ms,
            slo_tpot_ms: slo.tpot_ms,
            slo_e2e_ms: slo.e2e_ms,
            api_key_env: target.api_key_env.clone(),
            ca_cert: target.ca_cert.clone(),
            tokenizer: target.tokenizer.clone(),
            mlperf: c.mlperf,
            sessions: c.sessions.clone(),
            trace,
            models: models.clone(),
            models_from: target.models_from.clone(),
            model_zipf: target.model_zipf,
            model_slos: target
                .models
                .iter()
                .flatten()
                .filter_map(|m| {
                    let s = m.slo.as_ref()?;
                    Some((
                        m.name.clone()?,
                        yardstick_load::summary::SloBounds {
                            ttft_ms: s.ttft_ms,
                            tpot_ms: s.tpot_ms,
                            e2e_ms: s.e2e_ms,
                        },
                    ))
                })
                .collect(),
            request_kinds: request_kinds.clone(),
            tools: c.tools.clone(),
            json_schema: c.json_schema.clone(),
            images: c.images.clone(),
            eval_mix: c
                .eval_mix
                .as_ref()
                .map(|m| yardstick_load::point::EvalMixPoint {
                    tasks: m.tasks.clone().unwrap_or_default(),
                    share: m.share.unwrap_or(1.0),
                    max_tokens: m.max_tokens.unwrap_or(128),
                }),
            retry: c.retry.as_ref().map(retry_policy),
        };
        let cost = c
            .cost
            .as_ref()
            .and_then(|k| Some((k.per_accelerator_hour?, k.accelerators.unwrap_or(1))));
        if load.mode == Some(LoadMode::Trace) {
            // One point: the trace replayed on its own clock, named by its file.
            let t = load.trace.clone().unwrap_or_default();
            let file = t.file.clone().unwrap_or_default();
            let path = std::path::Path::new(&file);
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let id = format!("component.{i}.serve/trace={stem}");
            estimate = match (estimate, stop.max_duration) {
                (Some(e), Some(d)) => Some(e + d.0.as_secs_f64()),
                _ => None,
            };
            let format = match t.format.unwrap_or(yardstick_spec::TraceFormat::Jsonl) {
                yardstick_spec::TraceFormat::Mooncake => TraceFormat::Mooncake,
                yardstick_spec::TraceFormat::Azure => TraceFormat::Azure,
                yardstick_spec::TraceFormat::Burstgpt => TraceFormat::Burstgpt,
                yardstick_spec::TraceFormat::Jsonl => TraceFormat::Jsonl,
            };
            points.push(Point {
                slug: slug(&id),
                id,
                layer: "component".into(),
                treatment: None,
                work: PointWork::Serve {
                    url: url.clone(),
                    point: serve_point(
                        format!("trace:{name}"),
                        t.speedup.unwrap_or(1.0),
                        Some(TracePoint {
                            trace_file: file,
                            trace_format: format,
                            trace_window: t.window.clone(),
                            trace_models: t.models.unwrap_or(false),
                            trace_model_map: t.model_map.clone().unwrap_or_default(),
                        }),
                    ),
                    capacity: None,
                    cost,
                },
            });
            continue;
        }
        for sc in c.scenarios.iter().flatten() {
            let ScenarioSpec(scenario) = sc;
            for v in &values {
                let id = match mlperf {
                    Some("single-stream") | Some("offline") => {
                        format!("component.{i}.serve/{scenario}/{mode}")
                    }
                    _ if capacity.is_some() => format!("component.{i}.serve/{scenario}/capacity"),
                    _ => format!("component.{i}.serve/{scenario}/{mode}={}", fmt_value(*v)),
                };
                let max_duration = stop.max_duration.map(|d| d.0);
                estimate = match (estimate, max_duration) {
                    (Some(e), Some(d)) => Some(e + d.as_secs_f64()),
                    _ => None,
                };
                points.push(Point {
                    slug: slug(&id),
                    id,
                    layer: "component".into(),
                    treatment: None,
                    work: PointWork::Serve {
                        url: url.clone(),
                        point: serve_point(scenario.to_string(), *v, None),
                        capacity: capacity.clone(),
                        cost,
                    },
                });
            }
        }
    }

    for (i, e) in layers.e2e.iter().flatten().enumerate() {
        match e.kind {
            Some(E2eKind::Train) => {
                let preset = e.preset.clone().unwrap_or_else(|| "tiny".into());
                let id = format!("e2e.{i}.train/{preset}");
                estimate = match (estimate, e.timeout) {
                    (Some(x), Some(t)) => Some(x + t.0.as_secs_f64()),
                    _ => None,
                };
                points.push(Point {
                    slug: slug(&id),
                    id,
                    layer: "e2e".into(),
                    treatment: None,
                    work: PointWork::Train {
                        layer: i,
                        preset,
                        steps: e.steps,
                        warmup_steps: warmup.steps.unwrap_or(0),
                    },
                });
            }
            Some(E2eKind::Command) => {
                let sizes: Vec<Option<u32>> = match &e.world_sizes {
                    Some(w) if !w.is_empty() => w.iter().map(|n| Some(*n)).collect(),
                    _ => vec![None],
                };
                for ws in sizes {
                    let argv: Vec<String> = e
                        .command
                        .iter()
                        .flatten()
                        .map(|a| match ws {
                            Some(n) => a.replace("{worldSize}", &n.to_string()),
                            None => a.clone(),
                        })
                        .collect();
                    let id = match ws {
                        Some(n) => format!("e2e.{i}.command/ws={n}"),
                        None => format!("e2e.{i}.command"),
                    };
                    estimate = match (estimate, e.timeout) {
                        (Some(x), Some(t)) => Some(x + t.0.as_secs_f64()),
                        _ => None,
                    };
                    points.push(Point {
                        slug: slug(&id),
                        id,
                        layer: "e2e".into(),
                        treatment: None,
                        work: PointWork::Command {
                            layer: i,
                            argv,
                            world_size: ws,
                            timeout: e.timeout.map(|t| t.0),
                        },
                    });
                }
            }
            None => {}
        }
    }

    // A profile is taken after every measured replicate, in one more replicate of its own.
    let profiled: Vec<usize> = points
        .iter()
        .enumerate()
        .filter(|(_, point)| {
            matches!(
                &point.work,
                PointWork::Command { layer, .. } | PointWork::Train { layer, .. }
                    if layers
                        .e2e
                        .as_ref()
                        .and_then(|e| e.get(*layer))
                        .and_then(|e| e.profile.as_ref())
                        .is_some_and(|pr| {
                            pr.mode
                                .is_some_and(|m| m != yardstick_spec::ProfilerMode::Off)
                        })
            )
        })
        .map(|(p, _)| p)
        .collect();
    let steps = order_steps(
        points.len(),
        replicates,
        trials.order.unwrap_or(Order::Interleaved),
        &profiled,
    );
    let estimate_upper_s = estimate.map(|e| e * replicates as f64);
    Plan {
        name,
        points,
        replicates,
        steps,
        estimate_upper_s,
        treatments: Vec::new(),
    }
}

pub(crate) fn fmt_secs(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> BenchmarkRun {
        let c = yardstick_spec::check_str(text);
        assert!(c.is_valid(), "{:#?}", c.diagnostics);
        c.spec.unwrap()
    }

    #[test]
    fn expands_layers_points_and_interleaves_replicates() {
        let p = plan(&spec(yardstick_spec::template(
            yardstick_spec::Template::Full,
        )));
        let ids: Vec<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "micro.0.memory",
                "micro.1.gemm",
                "component.0.serve/D(64,32)/concurrency=1",
                "component.0.serve/D(64,32)/concurrency=8",
                "component.0.serve/D(64,32)/concurrency=32",
                "component.0.serve/N(128,64)/(32,16)/concurrency=1",
                "component.0.serve/N(128,64)/(32,16)/concurrency=8",
                "component.0.serve/N(128,64)/(32,16)/concurrency=32",
                "e2e.0.train/tiny",
            ]
        );
        assert_eq!(p.replicates, 3);
        assert_eq!(p.steps.len(), 27);
        // Interleaved: every point once before any point's second replicate (ABAB…).
        assert!(p.steps[..9].iter().all(|s| s.replicate == 0));
        assert_eq!(
            p.steps[9],
            Step {
                point: 0,
                replicate: 1,
                profile: false,
            }
        );
        assert_eq!(
            p.points[5].slug,
            "component.0.serve_N_128_64_32_16_concurrency_1"
        );
        assert!(p.estimate_upper_s.is_some());
        let text = p.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "plan: 9 point(s) x 3 replicate(s) = 27 step(s)");
        assert_eq!(lines[1], "  micro.0.memory");
        assert_eq!(lines.len(), 11);
        assert!(lines[10].starts_with("estimate: about "), "{text}");
        assert!(lines[10].contains("; at most "), "{text}");
    }

    #[test]
    fn restrict_keeps_the_named_points_and_their_steps_in_order() {
        let mut p = plan(&spec(yardstick_spec::template(
            yardstick_spec::Template::Full,
        )));
        let keep = vec![
            "e2e.0.train/tiny".to_string(),
            "component.0.serve/D(64,32)/concurrency=8".to_string(),
        ];
        p.restrict(&keep).unwrap();
        let ids: Vec<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "component.0.serve/D(64,32)/concurrency=8",
                "e2e.0.train/tiny"
            ]
        );
        assert_eq!(p.steps.len(), 6);
        let order: Vec<(usize, u32)> = p.steps.iter().map(|s| (s.point, s.replicate)).collect();
        assert_eq!(order, vec![(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
        assert_eq!(p.estimate_upper_s, None);
        let err = p.restrict(&["nope".to_string()]).unwrap_err().to_string();
        assert!(
            err.contains("no point `nope`") && err.contains("e2e.0.train/tiny"),
            "{err}"
        );
    }

    #[test]
    fn sequential_order_and_world_size_substitution() {
        let text = "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: ws}\nspec:\n  mode: exploratory\n  workload: {model: m, precision: fp32, sequenceLengths: 128, batching: static, concurrency: 1, dataset: {kind: synthetic}, correctness: {policy: loss}}\n  trials: {replicates: 3, warmup: {steps: 1}, confidenceLevel: 0.95, outlierPolicy: none, order: sequential}\n  layers:\n    e2e:\n      - kind: command\n        command: [torchrun, --nproc-per-node, \"{worldSize}\", train.py]\n        worldSizes: [1, 2]\n";
        let p = plan(&spec(text));
        assert_eq!(p.points.len(), 2);
        match &p.points[1].work {
            PointWork::Command {
                argv, world_size, ..
            } => {
                assert_eq!(argv[2], "2");
                assert_eq!(*world_size, Some(2));
            }
            w => panic!("{w:?}"),
        }
        assert_eq!(
            p.steps
                .iter()
                .map(|s| (s.point, s.replicate))
                .collect::<Vec<_>>(),
            vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        );
        assert_eq!(
            p.estimate_upper_s, None,
            "commands without a timeout are unbounded"
        );
    }

    #[test]
    fn eval_layers_plan_one_point_per_task_and_one_for_perplexity() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval.yaml"),
        )
        .unwrap();
        let p = plan(&spec(&text));
        let ids: Vec<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "component.0.eval/arith",
                "component.0.eval/format",
                "component.0.eval/perplexity"
            ]
        );
        assert_eq!(p.steps.len(), 9);
        match &p.points[0].work {
            PointWork::Eval {
                url,
                task,
                perplexity,
                repeat,
                confidence,
                max_tokens,
                concurrency,
                timeout,
                ..
            } => {
                assert_eq!(url, &None, "url sim is the embedded simulator");
                assert_eq!(task.as_deref(), Some("arith"));
                assert_eq!(perplexity, &None);
                assert_eq!((*repeat, *max_tokens, *concurrency), (2, 16, 4));
                assert_eq!(*confidence, 0.95, "the trials' level by default");
                assert_eq!(*timeout, Some(Duration::from_secs(30)));
            }
            w => panic!("{w:?}"),
        }
        assert!(matches!(
            &p.points[2].work,
            PointWork::Eval { task: None, perplexity: Some(s), .. } if s == "builtin"
        ));
        // Bounded by request timeouts: per replicate ⌈25·2/4⌉ + ⌈22·2/4⌉ + ⌈7/4⌉ = 13 + 11 + 2
        // requests in turn, 30 s each; three replicates.
        assert_eq!(p.estimate_upper_s, Some((13.0 + 11.0 + 2.0) * 30.0 * 3.0));
        // A task file is counted only when the run reads it.
        let p = plan(&spec(
            &text.replace("tasks: [arith, format]  ", "tasks: [arith, mine.jsonl]"),
        ));
        assert_eq!(p.points[1].id, "component.0.eval/mine");
        assert_eq!(p.estimate_upper_s, None);
    }

    #[test]
    fn mlperf_scenarios_expand_to_their_points() {
        let text = yardstick_spec::template(yardstick_spec::Template::Serve).replace(
            "        slo: {ttftMs: 500, tpotMs: 50}",
            "        slo: {ttftMs: 500, tpotMs: 50}\n        mlperf: server",
        );
        let p = plan(&spec(&text));
        let ids: Vec<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "component.0.serve/D(64,32)/mlperf-server=1",
                "component.0.serve/D(64,32)/mlperf-server=8",
                "component.0.serve/D(64,32)/mlperf-server=32",
            ]
        );
        let text = text.replace("mlperf: server", "mlperf: single-stream");
        let p = plan(&spec(&text));
        assert_eq!(p.points.len(), 1);
        assert_eq!(
            p.points[0].id,
            "component.0.serve/D(64,32)/mlperf-single-stream"
        );
        assert!(
            matches!(&p.points[0].work, PointWork::Serve { point, .. } if point.mlperf == Some(MlperfScenario::SingleStream))
        );
    }
}

#[cfg(test)]
mod session_tests {
    use super::*;

    /// A sharded session point's shards run the same sessions: the file every shard reads
    /// (`bench serve --point-file`) carries the whole point, the layer's sessions included, and
    /// reads back as the same point.
    #[test]
    fn shards_of_a_session_point_carry_its_sessions() {
        let text = "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: s}\nspec:\n  layers:\n    component:\n      - kind: serve\n        target: {url: sim, api: chat, model: m}\n        scenarios: [\"D(8,4)\"]\n        load: {mode: rate, values: [4]}\n        sessions: {turns: 2-4, thinkTime: \"exp(250)\", sharedPrefix: 32}\n";
        let run = yardstick_spec::check_str(text).spec.expect("a valid spec");
        let p = plan(&run);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("steps/x/point-0.json");
        crate::serve::write_shard_job(&p.points[0].work, "http://127.0.0.1:1", 7, &file).unwrap();
        let job = yardstick_load::point::ShardJob::read(&file).unwrap();
        let PointWork::Serve { point, .. } = &p.points[0].work else {
            panic!("a serve point");
        };
        assert_eq!(&job.point, point);
        assert_eq!((job.url.as_str(), job.seed), ("http://127.0.0.1:1", 7));
        let bench = job
            .point
            .bench(
                &job.url,
                job.seed,
                tokio_util::sync::CancellationToken::new(),
            )
            .unwrap();
        let sessions = bench.sessions.expect("sessions");
        assert_eq!((sessions.turns.min, sessions.turns.max), (2, 4));
        assert_eq!(sessions.shared_prefix, 32);
        assert_eq!(bench.loads.len(), 1);
        assert!(
            matches!(bench.loads[0], yardstick_load::LoadModel::Rate { rate, .. } if rate == 4.0)
        );
    }
}
