//! The typed BenchmarkRun spec (`apiVersion: yardstick/v1`, `kind: BenchmarkRun`).
//!
//! Fields the methodology requires are `Option` here so that a spec missing several of them is
//! still decoded and *every* omission is reported by the rules, each with its own position and
//! hint, instead of serde stopping at the first. The JSON Schema marks them required.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scenario::Scenario;

/// The apiVersion this crate reads.
pub const API_VERSION: &str = "yardstick/v1";
/// The kind this crate reads.
pub const KIND: &str = "BenchmarkRun";

/// A declarative benchmark: frozen workload, trial policy, layers, gates and provenance.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields, title = "BenchmarkRun")]
pub struct BenchmarkRun {
    /// Always `yardstick/v1`.
    #[schemars(required, regex(pattern = r"^yardstick/v1$"))]
    pub api_version: Option<String>,
    /// Always `BenchmarkRun`.
    #[schemars(required, regex(pattern = r"^BenchmarkRun$"))]
    pub kind: Option<String>,
    /// Name and labels.
    #[schemars(required)]
    pub metadata: Option<Metadata>,
    /// What to run and how.
    #[schemars(required)]
    pub spec: Option<Spec>,
}

/// Name and labels of a benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Metadata {
    /// The benchmark's identity: lowercase letters, digits, `-`, `_` and `.` (baselines are keyed
    /// by it).
    #[schemars(required, regex(pattern = r"^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$"))]
    pub name: Option<String>,
    /// Free-form labels (team, service, ticket...).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// A sentence on what this benchmark is for.
    pub description: Option<String>,
}

/// The body of a BenchmarkRun.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Spec {
    /// Test mode: `publication` (isolated, gating, publishable), `realism` (multi-tenant,
    /// background load recorded) or `exploratory` (several variables may move; never gating).
    #[schemars(required)]
    pub mode: Option<Mode>,
    /// The one variable under test when this run is compared with another.
    pub comparison: Option<Comparison>,
    /// Isolation declaration; required in `publication` mode.
    pub isolation: Option<Isolation>,
    /// Background load policy; required (recorded) in `realism` mode.
    pub background_load: Option<BackgroundLoad>,
    /// The frozen workload definition.
    pub workload: Option<Workload>,
    /// Trial policy: replicates, warm-up, confidence, outliers, order.
    #[schemars(required)]
    pub trials: Option<Trials>,
    /// The three-layer stack: micro, component, end-to-end.
    #[schemars(required)]
    pub layers: Option<Layers>,
    /// What the machine must have, checked before any work: `gpu` (or `[gpu]`) refuses to
    /// start where no GPU can be used, instead of recording GPU probes as skipped.
    pub requires: Option<Requires>,
    /// Regression gate settings.
    pub gates: Option<Gates>,
    /// Artifact signing.
    pub provenance: Option<Provenance>,
    /// Where the run executes: this machine (default), a Slurm allocation, or Kubernetes
    /// (with Kueue); how many nodes and tasks, and their placement.
    pub execution: Option<Execution>,
    /// The server under test, started by yardstick: for each treatment of `sweep` (or once,
    /// without one) it is started on a free port (`{port}`), waited for, measured by the
    /// component and e2e layers, and stopped; its output is kept with the run. A server that
    /// never gets ready makes that treatment infeasible, not the run.
    pub server: Option<Server>,
    /// Factors to sweep: every treatment (a combination of their levels) runs the component and
    /// e2e layers with `{factor}` placeholders filled in the server's command and environment,
    /// the targets and commands; its points' ids end in `/factor=value`.
    pub sweep: Option<Sweep>,
    /// Search the sweep's factors for the best treatment instead of walking them all: short
    /// probes of the candidates a strategy proposes, then the best two measured in full and
    /// compared. The answer (`tune.json`, `best.yaml`) is stored with the final run.
    pub tune: Option<Tune>,
    /// Hot metrics pushed while the run runs (serve steps): where, and how often.
    pub observability: Option<Observability>,
    /// The question this spec answers (`yardstick playbook`): the run ends with a diagnosis in
    /// its summary, from the playbook's stated rule over the figures measured.
    pub playbook: Option<PlaybookName>,
    /// What every node of the allocation must have; `playbook: readiness` checks it.
    pub expect: Option<Expect>,
}

/// What every node must have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Expect {
    /// GPUs every node must show (a GPU fallen off the bus shows as one fewer).
    pub gpus_per_node: Option<u32>,
    /// nccl-tests outputs of this allocation's nodes (`all_reduce_perf` and friends, as they
    /// print them; paths relative to the spec), stored with the run: collectives that returned
    /// wrong data, or an average bus bandwidth below `ncclMinBusbw`, make it not ready.
    pub nccl_tests: Option<Vec<String>>,
    /// The average bus bandwidth (GB/s) each nccl-tests output must reach.
    pub nccl_min_busbw: Option<f64>,
}

/// The playbooks a spec can answer (docs/playbooks.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlaybookName {
    /// Where p99 TTFT departs from its unloaded level as the rate grows, and why.
    TailLatency,
    /// Whether one class of requests (short prompts, long prompts) starves when they are mixed.
    Starvation,
    /// Whether one rank of a multi-rank job is slower than the others, persistently.
    Stragglers,
    /// What a server does when offered more than it can serve: turn requests away (and say
    /// when to come back) or queue them without bound.
    Backpressure,
    /// Whether every node of an allocation is fit for a multi-node workload.
    Readiness,
    /// The intake bundle: the machine, its ceilings, the workload's bottleneck class.
    Triage,
}

impl PlaybookName {
    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            PlaybookName::TailLatency => "tail-latency",
            PlaybookName::Starvation => "starvation",
            PlaybookName::Stragglers => "stragglers",
            PlaybookName::Backpressure => "backpressure",
            PlaybookName::Readiness => "readiness",
            PlaybookName::Triage => "triage",
        }
    }
}

/// `spec.observability`: live series while a run runs (docs/observability.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Observability {
    /// A Prometheus remote-write receiver (`yardstick run --remote-write` overrides it).
    pub remote_write: Option<RemoteWriteSpec>,
    /// An OpenTelemetry collector (OTLP/HTTP): metrics, and request spans when `traces` is
    /// true (`yardstick run --otlp`/`--otlp-traces` override it).
    pub otlp: Option<OtlpSpec>,
    /// Time between pushes (default 5s, at least 100ms).
    pub interval: Option<DurationSpec>,
}

/// A remote-write receiver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct RemoteWriteSpec {
    /// Its write URL (`http://prometheus:9090/api/v1/write`).
    #[schemars(required)]
    pub url: Option<String>,
    /// Headers of every push, each value read from the named environment variable
    /// (`{Authorization: PROM_AUTH}`); values never appear in a spec, log or result.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
}

/// An OTLP/HTTP collector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct OtlpSpec {
    /// The collector (`http://collector:4318`: signals go to `/v1/metrics` and `/v1/traces`),
    /// or a full endpoint URL.
    #[schemars(required)]
    pub url: Option<String>,
    /// Headers of every export, each value read from the named environment variable.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// Send the hot metrics (default true).
    pub metrics: Option<bool>,
    /// Send a client span per sampled request (default false).
    pub traces: Option<bool>,
    /// The share of requests that get a span (0 to 1, default 0.1); failed requests and
    /// requests over the point's SLO always get one.
    pub trace_ratio: Option<f64>,
}

/// A tuner over `sweep.factors` (`spec.tune`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Tune {
    /// The catalogue metric to make as large as possible (`capacity_rps`, `goodput`,
    /// `output_token_throughput`...). Exactly one of `maximize` and `minimize`.
    pub maximize: Option<String>,
    /// The catalogue metric to make as small as possible (`ttft_ms`...).
    pub minimize: Option<String>,
    /// The objective's statistic (default `value`, or `p50` for a latency distribution).
    pub statistic: Option<String>,
    /// Constraints a treatment must meet to count (its mean over replicates): a treatment that
    /// misses one is infeasible.
    pub subject_to: Option<Vec<TuneConstraint>>,
    /// Treatments the search may probe (default 16); the final run adds none.
    pub budget: Option<u32>,
    /// `tpe` (a Tree-structured Parzen Estimator proposes each next pair from what the probes
    /// measured, and the last third of the budget probes the best so far's neighbours;
    /// `bayesian` is the same), or `halving` (successive halving: a Latin hypercube of three
    /// quarters of `budget`, the better third kept at each rung with more requests, then the
    /// last quarter on the last rung's best's neighbours). Default tpe.
    pub strategy: Option<TuneStrategy>,
    /// Share of each serve layer's requests (`stop.maxRequests`, `maxDuration`, a capacity
    /// search's probe requests) a probe sends, in (0, 1] (default 0.25).
    pub probe: Option<f64>,
    /// Seed of the proposals (default 0).
    pub seed: Option<u64>,
    /// A second objective to trade the first against (`{minimize: ttft_ms, statistic: p99}`):
    /// the search ranks treatments by Pareto dominance over the two, the final run measures the
    /// probes' Pareto front, and the answer adds the front as the final run measured it.
    pub trade_off: Option<TuneObjective>,
}

/// A second objective of `tune.tradeOff`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct TuneObjective {
    /// The catalogue metric to make as large as possible. Exactly one of `maximize` and
    /// `minimize`.
    pub maximize: Option<String>,
    /// The catalogue metric to make as small as possible.
    pub minimize: Option<String>,
    /// Its statistic (default `value`, or `p50` for a latency distribution).
    pub statistic: Option<String>,
}

/// One constraint of `tune.subjectTo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct TuneConstraint {
    /// A catalogue metric.
    #[schemars(required)]
    pub metric: Option<String>,
    /// Its statistic (default as for the objective).
    pub statistic: Option<String>,
    /// The mean must be at most this.
    pub max: Option<f64>,
    /// The mean must be at least this.
    pub min: Option<f64>,
}

/// How a tuner searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TuneStrategy {
    /// Tree-structured Parzen Estimator proposals.
    Tpe,
    /// The same as `tpe` (TPE is a Bayesian optimisation).
    Bayesian,
    /// Successive halving.
    Halving,
}

/// The server under test (`spec.server`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Server {
    /// Program and arguments, with `{port}` (a free port yardstick picks for each start) and
    /// `{factor}` placeholders.
    #[schemars(required)]
    pub command: Option<Vec<String>>,
    /// Extra environment variables (values may hold placeholders).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// When the started server counts as ready.
    #[schemars(required)]
    pub ready: Option<ServerReady>,
    /// How it is stopped after a treatment.
    pub stop: Option<ServerStop>,
}

/// When the server under test is ready: exactly one of `http` and `log`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ServerReady {
    /// An `http://` URL (placeholders allowed) polled until it answers with `expect`.
    pub http: Option<String>,
    /// The status `http` must answer (default 200).
    pub expect: Option<u16>,
    /// Text a line of the server's output contains once it is ready.
    pub log: Option<String>,
    /// The treatment is infeasible when the server is not ready after this long (default 10m).
    pub timeout: Option<DurationSpec>,
}

/// How the server under test is stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ServerStop {
    /// The signal sent to its process group first (default SIGTERM).
    pub signal: Option<StopSignal>,
    /// Time between that signal and SIGKILL (default 30s).
    pub grace: Option<DurationSpec>,
}

/// Signals a server may be stopped with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[allow(missing_docs, clippy::upper_case_acronyms)]
pub enum StopSignal {
    SIGTERM,
    SIGINT,
    SIGKILL,
}

/// The factors of a sweep and how their treatments are chosen (`spec.sweep`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Sweep {
    /// Each factor's levels: `{max_num_seqs: [64, 128], chunked: [true, false]}`. A factor is
    /// a `{name}` placeholder in the server's command or environment, a target or a command.
    /// A factor with one level is a constant: filled in, but not part of point ids.
    #[schemars(required)]
    pub factors: Option<BTreeMap<String, Vec<FactorLevel>>>,
    /// `grid` (every combination; the default), `random` (`samples` distinct combinations drawn
    /// from the grid) or `lhs` (a Latin hypercube of `samples` treatments: each factor's levels
    /// spread evenly over them).
    pub design: Option<SweepDesign>,
    /// Treatments of a `random` or `lhs` design.
    pub samples: Option<u32>,
    /// Seed of a `random` or `lhs` design (default 0): the plan is a function of the spec.
    pub seed: Option<u64>,
}

/// One level of a factor: a string, a number or a boolean, written into placeholders as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "a string, a number or a boolean")]
#[allow(missing_docs)]
pub enum FactorLevel {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for FactorLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactorLevel::Bool(b) => write!(f, "{b}"),
            FactorLevel::Int(i) => write!(f, "{i}"),
            FactorLevel::Float(x) => write!(f, "{x}"),
            FactorLevel::Text(t) => f.write_str(t),
        }
    }
}

/// How a sweep's treatments are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SweepDesign {
    /// Every combination of the levels.
    Grid,
    /// `samples` distinct combinations drawn at random from the grid.
    Random,
    /// A Latin hypercube: `samples` treatments, each factor's levels used equally often.
    Lhs,
}

/// Where and how a run executes (docs/spec.md#execution).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Execution {
    /// `local` (this machine; the default), `slurm` (a batch job: `sbatch`, one `srun` step per
    /// command point) or `kubernetes` (an Indexed Job admitted by Kueue, whose pods run
    /// `yardstick run --shard I/N`: `yardstick k8s render` and `k8s submit`).
    pub engine: Option<Engine>,
    /// Nodes of the allocation (default 1).
    pub nodes: Option<u32>,
    /// Tasks (ranks, load shards) per node (default 1).
    pub tasks_per_node: Option<u32>,
    /// CPUs per task.
    pub cpus_per_task: Option<u32>,
    /// GPUs per task (Slurm `--gpus-per-task`, Kubernetes `nvidia.com/gpu`).
    pub gpus_per_task: Option<u32>,
    /// Memory per node (`64GiB`, `512MB`).
    pub memory: Option<String>,
    /// Wall-clock limit of the allocation (`2h`, `30m`).
    pub time_limit: Option<DurationSpec>,
    /// Slurm partition.
    pub partition: Option<String>,
    /// Slurm account.
    pub account: Option<String>,
    /// Slurm quality of service.
    pub qos: Option<String>,
    /// Kueue LocalQueue the Job is submitted to (Kubernetes).
    pub queue: Option<String>,
    /// PriorityClass of the pods (Kubernetes).
    pub priority_class: Option<String>,
    /// Container image whose entrypoint has `yardstick` (Kubernetes; required there).
    pub image: Option<String>,
    /// Placement of the tasks.
    pub placement: Option<Placement>,
}

/// Execution engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// This machine.
    Local,
    /// A Slurm cluster: the run is a batch job, each step an `srun`.
    Slurm,
    /// A Kubernetes cluster with Kueue: the run is an Indexed Job.
    Kubernetes,
}

impl Engine {
    /// `local`, `slurm` or `kubernetes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Local => "local",
            Engine::Slurm => "slurm",
            Engine::Kubernetes => "kubernetes",
        }
    }
}

/// Where the tasks land.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Placement {
    /// Whole nodes, shared with no other job (Slurm `--exclusive`; Kubernetes: one pod per
    /// node and the full node's resources).
    pub exclusive: Option<bool>,
    /// `fixed`: the same nodes and topology every run (Slurm `--switches=1`; Kueue's required
    /// topology), or `variable`.
    pub topology: Option<Topology>,
    /// The node label whose value must be shared by every pod when the topology is fixed
    /// (Kubernetes; e.g. a rack or block label of Kueue's topology-aware scheduling).
    pub topology_key: Option<String>,
}

/// Test mode (docs/methodology.md#publication-and-realism-modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Dedicated nodes, stable background, fixed topology: hard gates and public claims.
    Publication,
    /// Multi-tenant, background load tolerated and recorded: operator reality.
    Realism,
    /// Anything goes (e.g. more than one variable moves); results never gate or publish.
    Exploratory,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Publication => "publication",
            Mode::Realism => "realism",
            Mode::Exploratory => "exploratory",
        })
    }
}

/// The variable(s) under test (docs/methodology.md#one-variable-at-a-time).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Comparison {
    /// The one variable under test, e.g. `runtimeVersion`, `hardwareGeneration`, `driverStack`.
    pub variable: Option<String>,
    /// Several variables: only allowed with `mode: exploratory`.
    pub variables: Option<Vec<String>>,
    /// The reference the candidate is compared with (a run id, `baseline`, or free text).
    pub against: Option<String>,
}

impl Comparison {
    /// Every variable named, from either field.
    pub fn all_variables(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.variable.iter().map(String::as_str).collect();
        if let Some(list) = &self.variables {
            for x in list {
                if !v.contains(&x.as_str()) {
                    v.push(x);
                }
            }
        }
        v
    }
}

/// How the system under test is isolated (publication grade).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Isolation {
    /// `dedicated` nodes, or `shared`.
    pub nodes: Option<NodeTenancy>,
    /// `fixed` topology, or `variable`.
    pub topology: Option<Topology>,
    /// Topology-exclusive scheduling (no other job on the same switch/NVLink domain).
    pub topology_exclusive: Option<bool>,
    /// Free text: how isolation is achieved (node selector, Slurm exclusive, ...).
    pub notes: Option<String>,
}

/// Node tenancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeTenancy {
    /// No other workload on the nodes.
    Dedicated,
    /// Other workloads may share the nodes.
    Shared,
}

/// Topology stability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// The same placement every run.
    Fixed,
    /// Placement may change between runs.
    Variable,
}

/// Background load policy (realism grade).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct BackgroundLoad {
    /// Record the background load (telemetry of other tenants) with the run.
    pub record: Option<bool>,
    /// What background load is expected.
    pub description: Option<String>,
}

/// The workload freeze contract (docs/methodology.md#workload-freeze).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Workload {
    /// The model, pinned (a name and revision, or a path).
    pub model: Option<String>,
    /// Numeric precision.
    pub precision: Option<Precision>,
    /// Sequence-length mix: a traffic scenario (`D(in,out)`, `N(..)/(..)`, ...) or one length.
    pub sequence_lengths: Option<SequenceLengths>,
    /// Batching policy.
    pub batching: Option<Batching>,
    /// Global batch size (training), when fixed.
    pub batch_size: Option<u64>,
    /// Concurrency model: one level or the sweep points.
    pub concurrency: Option<OneOrMany>,
    /// Dataset or prompt corpus.
    pub dataset: Option<Dataset>,
    /// Correctness policy.
    pub correctness: Option<Correctness>,
}

/// Numeric precision of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Precision {
    Fp64,
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Fp6,
    Fp4,
    Int8,
    Int4,
    Nf4,
    /// Mixed precision (e.g. bf16 compute with fp32 master weights).
    Mixed,
}

/// Batching policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Batching {
    /// Continuous (in-flight) batching, as vLLM/SGLang/TGI do.
    Continuous,
    /// Dynamic batching with a window (Triton).
    Dynamic,
    /// Fixed batches (training, offline inference).
    Static,
    /// One request at a time.
    None,
}

/// A sequence-length mix: a traffic scenario string or a single fixed length.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SequenceLengths {
    /// One fixed sequence length (training).
    Fixed(u64),
    /// A traffic scenario string.
    Scenario(ScenarioSpec),
}

impl<'de> Deserialize<'de> for SequenceLengths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Not `#[serde(untagged)]`: its error would hide the scenario grammar's explanation.
        #[derive(Deserialize)]
        #[serde(
            untagged,
            expecting = "a traffic scenario such as D(100,100) or a token count"
        )]
        enum Raw {
            Fixed(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Fixed(n) => Ok(SequenceLengths::Fixed(n)),
            Raw::Text(t) => t
                .parse()
                .map(|s| SequenceLengths::Scenario(ScenarioSpec(s)))
                .map_err(serde::de::Error::custom),
        }
    }
}

/// One value or a list of values (e.g. `concurrency: 8` or `concurrency: [1, 16, 64]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a positive integer or a list of positive integers"
)]
pub enum OneOrMany {
    /// One value.
    One(u64),
    /// Several values.
    Many(Vec<u64>),
}

impl OneOrMany {
    /// The values as a list.
    pub fn values(&self) -> Vec<u64> {
        match self {
            OneOrMany::One(v) => vec![*v],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// The dataset or prompt corpus.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Dataset {
    /// `synthetic` (generated from a seed), `jsonl`, `sharegpt`, or `file`.
    pub kind: Option<DatasetKind>,
    /// Seed for synthetic data and sampling.
    pub seed: Option<u64>,
    /// Path of a dataset file.
    pub path: Option<String>,
    /// Expected sha256 of the dataset file (frozen content, not just a name).
    pub sha256: Option<String>,
}

/// Dataset kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// Generated deterministically from a seed.
    Synthetic,
    /// JSON lines of prompts.
    Jsonl,
    /// ShareGPT-format JSON.
    Sharegpt,
    /// Any other file the workload reads.
    File,
}

/// Correctness policy: how the run proves the optimisation did not break the answers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Correctness {
    /// `none` (declared: performance only), `eval` (accuracy probes), `reference` (compare
    /// outputs with a reference run), `loss` (training loss must fall).
    pub policy: Option<CorrectnessPolicy>,
    /// Eval task names or files, for `policy: eval`.
    pub tasks: Option<Vec<String>>,
}

/// Correctness policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum CorrectnessPolicy {
    None,
    Eval,
    Reference,
    Loss,
}

/// The trial policy (docs/methodology.md#trial-policy).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Trials {
    /// Independent repetitions of every point (>= 3).
    #[schemars(required, range(min = 3))]
    pub replicates: Option<u32>,
    /// What is discarded before measuring.
    #[schemars(required)]
    pub warmup: Option<Warmup>,
    /// Confidence level of reported intervals, in (0, 1).
    #[schemars(required)]
    pub confidence_level: Option<f64>,
    /// What happens to outliers: reported (default methods) or trimmed.
    #[schemars(required)]
    pub outlier_policy: Option<OutlierPolicy>,
    /// `interleaved` (ABAB: cancels drift) or `sequential`.
    pub order: Option<Order>,
}

/// Warm-up declaration: exactly one of the fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Warmup {
    /// Discard the first N requests.
    pub requests: Option<u64>,
    /// Discard the first N training steps.
    pub steps: Option<u64>,
    /// Discard the first duration (`10s`, `1m`).
    pub duration: Option<DurationSpec>,
    /// Discard the first N whole-process runs.
    pub runs: Option<u64>,
    /// Find the truncation point from the data (`mser5`).
    pub auto: Option<AutoWarmup>,
}

impl Warmup {
    /// Names of the fields that are set.
    pub fn declared(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.requests.is_some() {
            v.push("requests");
        }
        if self.steps.is_some() {
            v.push("steps");
        }
        if self.duration.is_some() {
            v.push("duration");
        }
        if self.runs.is_some() {
            v.push("runs");
        }
        if self.auto.is_some() {
            v.push("auto");
        }
        v
    }
}

/// Automatic warm-up detection methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AutoWarmup {
    /// MSER-5 truncation (batch means of 5).
    Mser5,
}

/// Outlier policy: report (default) or trim, by Tukey fences or MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutlierPolicy {
    /// Report Tukey-fence outliers (1.5/3 IQR), keep them.
    ReportTukey,
    /// Remove Tukey-fence outliers before summarising.
    TrimTukey,
    /// Report MAD outliers (modified z > 3.5), keep them.
    ReportMad,
    /// Remove MAD outliers before summarising.
    TrimMad,
    /// Declared: no outlier analysis.
    None,
}

/// Order of replicates across points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// A, B, A, B, ...: drift affects every point alike.
    Interleaved,
    /// All replicates of A, then all of B.
    Sequential,
}

/// The three-layer stack (docs/methodology.md#the-three-layers).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Layers {
    /// Subsystem limits: memory bandwidth, GEMM, storage, network.
    pub micro: Option<Vec<MicroLayer>>,
    /// Serving, data loading, startup.
    pub component: Option<Vec<ComponentLayer>>,
    /// Whole workflows: training commands, the built-in trainer.
    pub e2e: Option<Vec<E2eLayer>>,
}

impl Layers {
    /// Whether no layer has an entry.
    pub fn is_empty(&self) -> bool {
        self.micro.as_ref().is_none_or(Vec::is_empty)
            && self.component.as_ref().is_none_or(Vec::is_empty)
            && self.e2e.as_ref().is_none_or(Vec::is_empty)
    }
}

/// A micro benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct MicroLayer {
    /// `memory`, `gemm`, `storage`, `network`, `gpu-memory`, `gpu-pcie` or `gpu-gemm`.
    #[schemars(required)]
    pub kind: Option<MicroKind>,
    /// A name for reports (defaults to the kind).
    pub name: Option<String>,
    /// Problem sizes (bytes for memory/storage/gpu-memory/gpu-pcie, N for an N×N GEMM).
    pub sizes: Option<Vec<u64>>,
    /// Element type for GEMM.
    pub dtype: Option<Precision>,
    /// Directory for the storage probe.
    pub path: Option<String>,
    /// How long each measurement lasts.
    pub duration: Option<DurationSpec>,
}

/// What a run needs of the machine (`requires:`), one name or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Requires {
    /// One requirement, e.g. `requires: gpu`.
    One(Requirement),
    /// Several, e.g. `requires: [gpu]`.
    Many(Vec<Requirement>),
}

/// One thing a run needs of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Requirement {
    /// A GPU the CUDA driver can use.
    Gpu,
}

impl Requires {
    /// Whether `what` is among the requirements.
    pub fn has(&self, what: Requirement) -> bool {
        match self {
            Requires::One(r) => *r == what,
            Requires::Many(v) => v.contains(&what),
        }
    }
}

/// Micro benchmark kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum MicroKind {
    Memory,
    Gemm,
    Storage,
    Network,
    /// GPU memory (HBM) bandwidth: copy, read and write kernels.
    #[serde(rename = "gpu-memory")]
    GpuMemory,
    /// Host↔device bandwidth with pinned memory, and peer-to-peer between GPUs.
    #[serde(rename = "gpu-pcie")]
    GpuPcie,
    /// The matmul peak (cuBLASLt) over a shape sweep, per element type.
    #[serde(rename = "gpu-gemm")]
    GpuGemm,
}

/// A component benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ComponentLayer {
    /// `serve` (an OpenAI-compatible endpoint under load), `eval` (accuracy and perplexity of
    /// an endpoint), `dataloader` (an input pipeline: a command or the built-in reader) or
    /// `startup` (a command's time to ready).
    #[schemars(required)]
    pub kind: Option<ComponentKind>,
    /// A name for reports.
    pub name: Option<String>,
    /// The endpoint (serve, eval).
    pub target: Option<Target>,
    /// Load model and sweep (serve).
    pub load: Option<Load>,
    /// Traffic scenarios (serve).
    pub scenarios: Option<Vec<ScenarioSpec>>,
    /// When a point stops.
    pub stop: Option<Stop>,
    /// Service-level objectives for goodput (serve).
    pub slo: Option<Slo>,
    /// What the deployment costs, for dollars per million output tokens and per thousand
    /// requests (serve).
    pub cost: Option<ServingCost>,
    /// MLPerf LoadGen scenario to run instead of a plain sweep (serve).
    pub mlperf: Option<MlperfScenario>,
    /// Multi-turn sessions instead of single requests (serve): each turn sends the
    /// conversation so far after a think time; `stop.maxRequests` and rates count sessions.
    pub sessions: Option<ServingSessions>,
    /// Request kinds and their weights (serve, chat): `text`, `tool-call` (the request carries
    /// `tools`) and `json` (`response_format: json_schema`); every answer of a structured kind
    /// is checked, and each point reports each kind's valid rate.
    pub request_kinds: Option<Vec<WeightedKind>>,
    /// The tools of `tool-call` requests: OpenAI's `tools` array as a JSON file, relative to
    /// the spec's directory (serve; default one `get_weather` tool). Stored with the run.
    pub tools: Option<String>,
    /// The JSON Schema of `json` requests (or OpenAI's `{name, schema}`), a file relative to the
    /// spec's directory (serve; default a small order object). Stored with the run.
    pub json_schema: Option<String>,
    /// Images every request carries after its text (serve, chat): `WxH` or `WxH,COUNT`
    /// (`512x512`, `1024x768,2`), distinct synthetic PNGs sent as data URLs.
    pub images: Option<String>,
    /// Accuracy under load (serve): a share of the requests are eval items, graded, and each
    /// point reports its accuracy with a Wilson interval.
    pub eval_mix: Option<EvalMixSpec>,
    /// Try again the requests the server turns away (serve), as a production client does:
    /// `retry: {on: [429, 503], maxAttempts: 4, retryAfter: true, backoff: 500ms}`. Without
    /// it a refusal is the request's failure.
    pub retry: Option<ServeRetry>,
    /// The command (startup; dataloader, when it is the user's loader speaking the metric
    /// protocol instead of the built-in reader's `source`).
    pub command: Option<Vec<String>>,
    /// The files the built-in reader reads, as a training loop would (dataloader; instead of
    /// `command`).
    pub source: Option<LoaderSource>,
    /// Kill the command after this long (dataloader, startup); the per-request timeout (eval,
    /// default 120s).
    pub timeout: Option<DurationSpec>,
    /// Eval tasks: bundled probes (`arith`, `format`, `extract`, `code`) or JSONL task files,
    /// relative to the spec's directory (eval). One point per task.
    pub tasks: Option<Vec<String>>,
    /// Perplexity over a text shard through `/v1/completions` with echo + logprobs: `builtin`,
    /// a text file relative to the spec, or `none` (eval; default none).
    pub perplexity: Option<String>,
    /// Runs per item within a replicate; 2 or more also measures the determinism rate (eval;
    /// default 1).
    pub repeat: Option<u32>,
    /// Confidence level of the Wilson accuracy intervals, in (0, 1) (eval; default
    /// `trials.confidenceLevel`).
    pub confidence: Option<f64>,
    /// Maximum output tokens per item (eval; default 128).
    pub max_tokens: Option<u64>,
    /// Sampling seed sent with every request (eval; default 0).
    pub seed: Option<u64>,
    /// Stop sequences sent with every request (eval).
    pub stop_sequences: Option<Vec<String>>,
    /// Requests in flight at once (eval; default 1).
    pub concurrency: Option<u32>,
    /// When the started command counts as ready: an HTTP probe, a line on its output, or its
    /// exit (startup).
    pub ready: Option<Readiness>,
    /// Page-cache state of each start or pass: `cold` (the page cache dropped before it, where
    /// permitted), `warm` (after a discarded warm-up start or pass), or both, one point each
    /// (startup, dataloader; default warm).
    pub cache: Option<CacheModes>,
    /// The TCP port whose first accepted connection is the time to listen (startup; default:
    /// the port of `ready.http`).
    pub port: Option<u16>,
    /// Time between SIGTERM and SIGKILL when the ready process is stopped (startup; default
    /// 10s).
    pub grace: Option<DurationSpec>,
}

/// The files of a `kind: dataloader` layer's built-in reader.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct LoaderSource {
    /// The directory of the files, relative to the spec's directory (or absolute).
    #[schemars(required)]
    pub path: Option<String>,
    /// Which file names to read: a glob on the name (`*.parquet`, `shard-??.jsonl`; default
    /// every file with the format's extension: `.parquet`, `.jsonl`, or any for raw).
    pub pattern: Option<String>,
    /// How a file holds samples: `parquet` (a row is a sample), `jsonl` (a line is a sample) or
    /// `raw` (a file is a sample).
    #[schemars(required)]
    pub format: Option<LoaderFormat>,
    /// Samples per batch (default 32).
    pub batch: Option<u32>,
    /// Reader threads, each taking every `workers`-th file, as a data loader's workers do
    /// (default 2).
    pub workers: Option<u32>,
}

/// How the built-in reader finds samples in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoaderFormat {
    /// Parquet: every row of every row group is a sample (decoded into values).
    Parquet,
    /// JSON Lines: every non-empty line is a sample (parsed as JSON).
    Jsonl,
    /// Any file: the whole file is one sample (its bytes read).
    Raw,
}

impl LoaderFormat {
    /// `parquet`, `jsonl` or `raw`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoaderFormat::Parquet => "parquet",
            LoaderFormat::Jsonl => "jsonl",
            LoaderFormat::Raw => "raw",
        }
    }
}

/// When a started process is ready. Exactly one of `http`, `log` and `exit`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Readiness {
    /// An `http://` URL polled until it answers with `expect`.
    pub http: Option<String>,
    /// The status code `http` must answer (default 200).
    pub expect: Option<u16>,
    /// Text that a line of the process's output (stdout or stderr) contains once it is ready.
    pub log: Option<String>,
    /// `true`: the process is ready when it exits with status 0 (a job that prepares something).
    pub exit: Option<bool>,
}

/// Page-cache state of a start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// The page cache is dropped before the start (needs root; said so when not permitted).
    Cold,
    /// A discarded warm-up start comes first.
    Warm,
}

impl CacheMode {
    /// `cold` or `warm`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
        }
    }
}

/// One cache mode or several (`cache: cold` or `cache: [cold, warm]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "cold, warm, or a list of them")]
pub enum CacheModes {
    /// One mode.
    One(CacheMode),
    /// Several, one point each.
    Many(Vec<CacheMode>),
}

impl CacheModes {
    /// The modes as a list, in the order given.
    pub fn modes(&self) -> Vec<CacheMode> {
        match self {
            CacheModes::One(m) => vec![*m],
            CacheModes::Many(v) => v.clone(),
        }
    }
}

/// Component kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum ComponentKind {
    Serve,
    Eval,
    Dataloader,
    Startup,
}

/// An OpenAI-compatible endpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Target {
    /// Base URL (`http://127.0.0.1:8000`), or `sim` (or absent) to start the bundled simulator.
    pub url: Option<String>,
    /// `chat`, `completions` or `embeddings`.
    pub api: Option<Api>,
    /// The model name sent in requests.
    pub model: Option<String>,
    /// A mix of models instead of `model` (serve): each request's model is drawn in proportion
    /// to the weights (a base model and its LoRA adapters), and each point reports every model
    /// beside the whole.
    pub models: Option<Vec<WeightedModel>>,
    /// A file of model names, one per line, relative to the spec's directory (serve): a mix of
    /// them all, each of weight 1 — or Zipf-weighted with `modelZipf` — for hundreds of
    /// adapters. Read before any work and stored with the run.
    pub models_from: Option<String>,
    /// Weights of `modelsFrom`'s names: the k-th name's is 1/k^S (S above 0; 1 is classic Zipf).
    pub model_zipf: Option<f64>,
    /// A `tokenizer.json` for counting tokens when the server does not report usage.
    pub tokenizer: Option<String>,
    /// Name of the environment variable holding the bearer token (the token itself never
    /// appears in a spec).
    pub api_key_env: Option<String>,
    /// A PEM file of CA certificates to trust for an `https` URL (a private CA, a self-signed
    /// endpoint), beside the public roots; certificates are always verified.
    pub ca_cert: Option<String>,
    /// Stream responses (SSE). Default true.
    pub stream: Option<bool>,
}

/// One model of a mix (`target.models`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct WeightedModel {
    /// The model name requests send.
    #[schemars(required)]
    pub name: Option<String>,
    /// Its share of the requests (normalised over the mix; default 1).
    pub weight: Option<f64>,
    /// Objectives of this model's requests: each bound set replaces the layer's `slo` for
    /// them (an adapter may be allowed a slower first token).
    pub slo: Option<Slo>,
}

/// A kind of request (`requestKinds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RequestKindName {
    /// A plain completion.
    Text,
    /// A tool call (`tools`, `tool_choice: required`).
    ToolCall,
    /// Structured output (`response_format: json_schema`).
    Json,
}

impl RequestKindName {
    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            RequestKindName::Text => "text",
            RequestKindName::ToolCall => "tool-call",
            RequestKindName::Json => "json",
        }
    }
}

/// One kind of a request mix (`requestKinds`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct WeightedKind {
    /// `text`, `tool-call` or `json`.
    #[schemars(required)]
    pub kind: Option<RequestKindName>,
    /// Its share of the requests (normalised over the mix; default 1).
    pub weight: Option<f64>,
}

/// Eval items mixed into a serve layer's load (`evalMix`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct EvalMixSpec {
    /// Bundled probes (`arith`, `format`, `extract`, `code`) or JSONL task files, relative to
    /// the spec's directory.
    #[schemars(required)]
    pub tasks: Option<Vec<String>>,
    /// The share of requests that are eval items, in (0, 1].
    #[schemars(required)]
    pub share: Option<f64>,
    /// Maximum output tokens of each item, a ceiling (default 128).
    pub max_tokens: Option<u64>,
}

/// API flavours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Api {
    Chat,
    Completions,
    Embeddings,
}

/// The load model and its sweep points.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Load {
    /// `concurrency` (closed loop), `rate` (open loop, requests per second), `capacity` (the
    /// highest load at which the layer's `slo` holds, searched) or `trace` (a request trace
    /// replayed on its own clock).
    #[schemars(required)]
    pub mode: Option<LoadMode>,
    /// Sweep points: concurrency levels or rates (not for `capacity`).
    pub values: Option<Vec<f64>>,
    /// Arrival process for `rate` (and a `capacity` search over rates): `constant`, `poisson`
    /// or `gamma`.
    pub arrival: Option<Arrival>,
    /// Gamma shape for `arrival: gamma` (< 1 is burstier than Poisson).
    pub burstiness: Option<f64>,
    /// The search of `mode: capacity`.
    pub capacity: Option<CapacitySearch>,
    /// The trace `mode: trace` replays (docs/traces.md).
    pub trace: Option<TraceLoad>,
}

/// A request trace replayed on its own clock (`load: {mode: trace, trace: {..}}`): each request
/// at its time, with its prompt and output lengths and shared prompt blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct TraceLoad {
    /// The trace file, relative to the spec's directory; stored with the run.
    #[schemars(required)]
    pub file: Option<String>,
    /// Its format: `mooncake`, `azure`, `burstgpt` or `jsonl` (default jsonl).
    pub format: Option<TraceFormat>,
    /// Replay this many times faster than recorded (default 1; 0.5 is half speed).
    pub speedup: Option<f64>,
    /// Only the requests that arrived in this window of the trace, `FROM..TO` after its first
    /// request (`10m..20m`, `..30s`, `1h..`).
    pub window: Option<String>,
    /// Send each request to the model its trace line names (the trace's model column as the
    /// model mix; default false: every request to `target.model`).
    pub models: Option<bool>,
    /// Renames of the trace's model names to served ones, `{GPT-4: llama-70b}` (with
    /// `models: true`).
    pub model_map: Option<std::collections::BTreeMap<String, String>>,
}

/// Trace formats (docs/traces.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum TraceFormat {
    Mooncake,
    Azure,
    Burstgpt,
    Jsonl,
}

impl TraceFormat {
    /// Its name, as written.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Azure => "azure",
            TraceFormat::Burstgpt => "burstgpt",
            TraceFormat::Jsonl => "jsonl",
        }
    }
}

impl TraceLoad {
    /// The window `FROM..TO` as milliseconds after the trace's first request (either bound
    /// open); `Err` says what is wrong.
    pub fn window_ms(&self) -> Result<(Option<f64>, Option<f64>), String> {
        match &self.window {
            Some(w) => parse_trace_window(w),
            None => Ok((None, None)),
        }
    }
}

/// A trace window `FROM..TO` (durations after the trace's first request, either side open:
/// `10m..20m`, `..30s`, `1h..`) as milliseconds; `Err` says what is wrong.
pub fn parse_trace_window(w: &str) -> Result<(Option<f64>, Option<f64>), String> {
    let (from, to) = w
        .split_once("..")
        .ok_or_else(|| format!("window {w:?} is not FROM..TO"))?;
    let ms = |part: &str| -> Result<Option<f64>, String> {
        let part = part.trim();
        if part.is_empty() {
            return Ok(None);
        }
        crate::units::parse_duration(part)
            .map(|d| Some(d.as_secs_f64() * 1e3))
            .map_err(|e| format!("window {w:?}: {e}"))
    };
    let (a, b) = (ms(from)?, ms(to)?);
    if let (Some(a), Some(b)) = (a, b)
        && a >= b
    {
        return Err(format!("window {w:?} is empty: FROM must come before TO"));
    }
    Ok((a, b))
}

/// A serve layer's session workload (`sessions:`): synthetic conversations whose turns take
/// their lengths from the layer's scenarios.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ServingSessions {
    /// Turns per session: `4`, or a range `2-6` drawn uniformly (default 1).
    pub turns: Option<crate::session::Turns>,
    /// The user's think time before each later turn, ms: `1000`, `exp(1000)` or
    /// `U(500,1500)` (default 0).
    pub think_time: Option<crate::session::ThinkTime>,
    /// Tokens of a system prompt every session starts with, shared by all (default 0).
    pub shared_prefix: Option<u64>,
    /// Conversations instead of synthetic sessions: ShareGPT JSON, JSON lines of
    /// `{"messages": [..]}`, or JSON lines of turns `{"session_id", "text", "output_tokens"?,
    /// "delay"?}`; relative to the spec, stored with the run. Their turns replace `turns`.
    pub dataset: Option<String>,
}

/// Load modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LoadMode {
    Concurrency,
    Rate,
    Capacity,
    Trace,
}

/// A capacity search (`load: {mode: capacity}`): bracketing then bisection of the load, each
/// probe's SLO a test at `confidence` (docs/metrics.md, "Capacity under an SLO").
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct CapacitySearch {
    /// What is varied: `rate` (open loop, with `arrival`) or `concurrency`.
    pub axis: Option<CapacityAxis>,
    /// The first load probed (default 10 req/s, or 4 streams).
    pub start: Option<f64>,
    /// The highest load probed (default 4096).
    pub max: Option<f64>,
    /// Rates: stop when the bracket is narrower than this share of its top (default 0.05).
    pub precision: Option<f64>,
    /// Every objective at this percentile (default 99).
    pub percentile: Option<f64>,
    /// Instead: this share of requests meets every objective at once, e.g. 0.99.
    pub attainment: Option<f64>,
    /// Confidence of each probe's test (default 0.95).
    pub confidence: Option<f64>,
    /// Measured requests per probe (default 300).
    pub probe_requests: Option<u64>,
    /// Most requests a probe pools while its test is undecided (default 4 × probeRequests).
    pub max_probe_requests: Option<u64>,
    /// Most probes in all (default 30).
    pub max_probes: Option<u32>,
}

/// What a capacity search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum CapacityAxis {
    Rate,
    Concurrency,
}

/// Arrival processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Arrival {
    Constant,
    Poisson,
    Gamma,
}

/// When a point stops.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Stop {
    /// Stop after this many measured requests.
    pub max_requests: Option<u64>,
    /// Stop after this long (`120s`, `5m`).
    pub max_duration: Option<DurationSpec>,
}

/// How a serve point's client tries again a request the server turned away.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ServeRetry {
    /// The statuses tried again (default `[429, 503]`).
    pub on: Option<Vec<u16>>,
    /// Attempts at most, the first included (default 4, at most 20).
    pub max_attempts: Option<u32>,
    /// Wait what the server's `Retry-After` says, when it says (default true); else the
    /// backoff.
    pub retry_after: Option<bool>,
    /// The wait before the second attempt without a `Retry-After` to honour, doubled for each
    /// further one, with jitter (default 500ms).
    pub backoff: Option<DurationSpec>,
    /// The longest single wait (default 30s).
    pub max_wait: Option<DurationSpec>,
}

/// The price of a serving deployment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ServingCost {
    /// Dollars per accelerator-hour (e.g. 2.48).
    pub per_accelerator_hour: Option<f64>,
    /// Accelerators the deployment uses (default 1).
    pub accelerators: Option<u32>,
}

/// Service-level objectives; a request meeting all of them counts toward goodput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Slo {
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// End-to-end latency, ms.
    pub e2e_ms: Option<f64>,
}

/// MLPerf LoadGen scenarios (docs/methodology.md#mlperf-scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum MlperfScenario {
    SingleStream,
    MultiStream,
    Server,
    Offline,
}

/// An end-to-end workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct E2eLayer {
    /// `command` (any program; training scripts speak the metric protocol) or `train` (the
    /// built-in reference trainer).
    #[schemars(required)]
    pub kind: Option<E2eKind>,
    /// A name for reports.
    pub name: Option<String>,
    /// The command and its arguments; `{worldSize}` and `{NAME}` placeholders are substituted.
    pub command: Option<Vec<String>>,
    /// World sizes to sweep (scaling efficiency).
    pub world_sizes: Option<Vec<u32>>,
    /// Model shape for MFU.
    pub model: Option<ModelShape>,
    /// Built-in trainer preset (`tiny`).
    pub preset: Option<String>,
    /// Training steps per replicate.
    pub steps: Option<u64>,
    /// Kill the workload after this long.
    pub timeout: Option<DurationSpec>,
    /// Extra environment for the command.
    pub env: Option<BTreeMap<String, String>>,
    /// Cost of one device-hour in dollars, for cost per 1K samples.
    pub cost_per_device_hour: Option<f64>,
    /// Take a profile in one extra, labelled replicate (never part of the statistics or the
    /// gate) and read where the step time goes.
    pub profile: Option<ProfilerSpec>,
}

/// A profile of an e2e layer (`profile:`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
#[schemars(rename = "Profile")] // the published schema name
pub struct ProfilerSpec {
    /// `off`, `trace` (Chrome/Perfetto JSON) or `tb` (TensorBoard's profiler plugin files).
    #[schemars(required)]
    pub mode: Option<ProfilerMode>,
    /// The profiler: `torch` (the workload's torch.profiler, through the yardstick_profile
    /// module), `nsys` (Nsight Systems), `perf` (Linux perf) or `py-spy`.
    pub tool: Option<ProfilerTool>,
    /// torch.profiler's schedule: steps to wait, warm up, record, and how many cycles.
    pub schedule: Option<ProfilerSchedule>,
}

/// Profile modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
#[schemars(rename = "ProfileMode")] // the published schema name
pub enum ProfilerMode {
    Off,
    Trace,
    Tb,
}

/// Profilers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
#[schemars(rename = "ProfileTool")] // the published schema name
pub enum ProfilerTool {
    Torch,
    Nsys,
    Perf,
    PySpy,
}

impl ProfilerTool {
    /// The name as written in specs and flags.
    pub fn name(self) -> &'static str {
        match self {
            ProfilerTool::Torch => "torch",
            ProfilerTool::Nsys => "nsys",
            ProfilerTool::Perf => "perf",
            ProfilerTool::PySpy => "py-spy",
        }
    }
}

/// torch.profiler's schedule (`torch.profiler.schedule`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
#[schemars(rename = "ProfileSchedule")] // the published schema name
pub struct ProfilerSchedule {
    /// Steps skipped first (default 1).
    pub wait: Option<u32>,
    /// Steps profiled but discarded (default 1).
    pub warmup: Option<u32>,
    /// Steps recorded (default 3).
    pub active: Option<u32>,
    /// Cycles of wait/warmup/active (default 1).
    pub repeat: Option<u32>,
}

impl ProfilerSchedule {
    /// `wait,warmup,active,repeat` with the defaults filled in.
    pub fn text(&self) -> String {
        format!(
            "{},{},{},{}",
            self.wait.unwrap_or(1),
            self.warmup.unwrap_or(1),
            self.active.unwrap_or(3),
            self.repeat.unwrap_or(1)
        )
    }
}

/// End-to-end kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum E2eKind {
    Command,
    Train,
}

/// The shape of a transformer, for FLOP estimates.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ModelShape {
    /// Parameter count (e.g. `7.2e9`).
    pub parameters: Option<f64>,
    /// Transformer layers.
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u32>,
    /// Training sequence length.
    pub sequence_length: Option<u32>,
    /// Vocabulary size.
    pub vocab: Option<u32>,
}

/// Regression gate settings (docs/methodology.md#baselines-and-regression-gates).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Gates {
    /// `auto` (the stored baseline of this machine profile), a run id, or a baseline file.
    pub baseline: Option<String>,
    /// Tolerances per metric, in percent (points for accuracy and quality scores).
    pub tolerances: Option<Tolerances>,
    /// Re-run failing points before declaring FAIL.
    pub confirm: Option<bool>,
    /// Tail percentiles of the latency metrics (TTFT, TPOT, E2E) the gate also checks, e.g.
    /// `[p99]`. Each replicate needs enough requests for a distribution-free CI of the
    /// percentile (p99 at 95 % needs 299), else the metric is INCONCLUSIVE.
    pub tails: Option<Vec<TailPercentile>>,
}

/// A tail percentile the gate can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum TailPercentile {
    P90,
    P95,
    P99,
}

impl TailPercentile {
    /// The statistic name in facts (`p99`).
    pub fn statistic(self) -> &'static str {
        match self {
            TailPercentile::P90 => "p90",
            TailPercentile::P95 => "p95",
            TailPercentile::P99 => "p99",
        }
    }

    /// The tail percentile a fact statistic names (`"p99"`), if any.
    pub fn from_statistic(statistic: &str) -> Option<TailPercentile> {
        [
            TailPercentile::P90,
            TailPercentile::P95,
            TailPercentile::P99,
        ]
        .into_iter()
        .find(|t| t.statistic() == statistic)
    }

    /// The quantile (0.99).
    pub fn quantile(self) -> f64 {
        match self {
            TailPercentile::P90 => 0.90,
            TailPercentile::P95 => 0.95,
            TailPercentile::P99 => 0.99,
        }
    }
}

/// Gate tolerances. Defaults: docs/methodology.md#baselines-and-regression-gates.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Tolerances {
    /// Throughput (tokens/s p50) drop that fails, % (default 5).
    pub throughput_drop_pct: Option<f64>,
    /// Step-time p50 increase that fails, % (default 5).
    pub step_time_increase_pct: Option<f64>,
    /// Latency (TTFT/E2E p50) increase that fails, % (default 5).
    pub latency_increase_pct: Option<f64>,
    /// Memory increase that warns, % (default 10).
    pub memory_increase_pct: Option<f64>,
    /// Perplexity increase that fails, relative % (default 1.5).
    pub perplexity_increase_pct: Option<f64>,
    /// Probe accuracy drop that fails, points (default 2).
    pub accuracy_drop_points: Option<f64>,
    /// Quality score (BLEU, ROUGE-L, token F1) drop that fails, points on the 0-100 scale
    /// (default 2: BLEU -2, ROUGE-L or F1 -0.02).
    pub quality_drop_points: Option<f64>,
    /// Tail latency (the `gates.tails` percentiles) increase that fails, % (default 10).
    pub tail_increase_pct: Option<f64>,
    /// Cost (dollars per million tokens, per thousand requests) increase that fails, %
    /// (default 5).
    pub cost_increase_pct: Option<f64>,
    /// Per-metric overrides, by `metric/statistic` (e.g. `ttft_ms/p50: 3`) or `metric` (every
    /// statistic of it); in the unit of the metric's class (points for accuracy and quality
    /// scores).
    pub metrics: Option<std::collections::BTreeMap<String, f64>>,
}

/// Provenance (docs/methodology.md#artifact-contract).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Provenance {
    /// `required`, `optional` (sign when a key is available) or `off`.
    pub signing: Option<Signing>,
    /// Path of the ed25519 signing key (`~` expands to the home directory).
    pub key: Option<String>,
}

/// Signing policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Signing {
    Required,
    Optional,
    Off,
}

/// A traffic scenario, parsed when the spec is read (so a typo is an error with a position).
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(
    with = "String",
    description = "D(in,out), N(mu_in,sd_in)/(mu_out,sd_out), U(min_in,max_in)/(min_out,max_out), U(min,max) or E(tokens)"
)]
pub struct ScenarioSpec(pub Scenario);

impl Serialize for ScenarioSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ScenarioSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map(ScenarioSpec)
            .map_err(|e: crate::scenario::ScenarioError| serde::de::Error::custom(e))
    }
}

/// A duration written as `120s`, `5m`, `1h30m`, `250ms`, or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, JsonSchema)]
#[schemars(
    with = "String",
    description = "a duration such as 120s, 5m, 1h30m, 250ms (a bare number is seconds)"
)]
pub struct DurationSpec(pub Duration);

/// The prefix of every duration parse error (the decoder maps it to rule `duration-syntax`).
pub const DURATION_ERROR_PREFIX: &str = "invalid duration";

impl Serialize for DurationSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(f64),
            Text(String),
        }
        let bad = |what: &str, why: &str| {
            D::Error::custom(format!(
                "{DURATION_ERROR_PREFIX} `{what}`: {why} (write e.g. 120s, 5m, 1h30m, 250ms)"
            ))
        };
        match Raw::deserialize(d).map_err(|_| bad("?", "expected a string or a number"))? {
            Raw::Secs(s) if s.is_finite() && s >= 0.0 => {
                Ok(DurationSpec(Duration::from_secs_f64(s)))
            }
            Raw::Secs(s) => Err(bad(
                &s.to_string(),
                "must be a non-negative number of seconds",
            )),
            Raw::Text(t) => humantime::parse_duration(t.trim())
                .map(DurationSpec)
                .map_err(|e| bad(&t, &e.to_string())),
        }
    }
}
