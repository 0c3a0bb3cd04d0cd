//! The micro layer: subsystem limits measured under the trial policy.
//!
//! | kind | results | unit |
//! | --- | --- | --- |
//! | `memory` | `memory.copy`, `memory.scale`, `memory.add`, `memory.triad` (STREAM kernels, all threads) | GB/s |
//! | `gemm` | `gemm.<dtype>.<N>` per size and `gemm.<dtype>.peak` (best size) for f32 and bf16 (where the CPU has `avx512_bf16`; or f64); `gemm.bf16_vs_f32.<N>` | GFLOP/s, x |
//! | `storage` | `storage.seq_read`, `seq_write`, `rand_read`, `rand_write`; `storage.rand_*.p50_us`/`p99_us` | MB/s, µs |
//! | `network` | `network.bandwidth`, `network.rtt`, `network.rtt.p99` (TCP, loopback or `--peer`) | Gbit/s, µs |
//!
//! Every benchmark follows the [`TrialPolicy`]: warm-up iterations are run and discarded,
//! each replicate starts from fresh state (new buffers, a new file, a new connection), and a
//! result's value is the median of all measured iterations with a cluster-bootstrap CI that
//! resamples replicates first (so run-to-run variance is not mistaken for precision). Tail
//! latencies carry distribution-free order-statistic CIs, or none when n is too small.
//!
//! [`run`] is the one entry point: the CLI (`yardstick bench micro`) and the orchestrator (one
//! call per `layers.micro` entry of a BenchmarkRun) both call it. [`ingest`] parses nccl-tests,
//! fio JSON and STREAM output into the same [`MicroResult`]s.

pub mod bf16;
pub mod gemm;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod ingest;
pub mod memory;
pub mod network;
pub mod storage;
pub mod text;
mod trial;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
pub use trial::{MetricSamples, Stat, summarize};
use yardstick_spec::model::{MicroKind, MicroLayer, OutlierPolicy, Precision, Trials};

/// Errors of the micro benchmarks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MicroError {
    /// A setting is invalid (the message says which and why).
    #[error("{0}")]
    InvalidConfig(String),
    /// The benchmark cannot run on this machine or with this setting.
    #[error("{0}")]
    Unsupported(String),
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A kernel produced wrong numbers (a broken benchmark must not report a figure).
    #[error("validation failed: {0}")]
    Validation(String),
    /// Summarising the samples failed.
    #[error("statistics: {0}")]
    Stats(#[from] yardstick_stats::StatsError),
    /// A peer spoke an unexpected protocol.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl MicroError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// What is discarded before measuring.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    /// The first N iterations of every replicate.
    Iterations(usize),
    /// Iterations until this much time has passed (at least one).
    Duration(Duration),
    /// MSER-5 truncation of each replicate's series (needs >= 10 iterations).
    Mser5,
}

/// The trial policy of the micro layer (docs/methodology.md#trial-policy).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrialPolicy {
    /// Independent replicates (fresh buffers, files, connections). The methodology floor is 3.
    pub replicates: usize,
    /// What is discarded at the start of every replicate.
    pub warmup: Warmup,
    /// Measured iterations per replicate; `None` uses each kind's default.
    pub iterations: Option<usize>,
    /// Confidence level of the intervals, in (0, 1).
    pub confidence: f64,
    /// Bootstrap seed.
    pub seed: u64,
    /// Report or trim outliers.
    pub outliers: OutlierPolicy,
}

impl Default for TrialPolicy {
    fn default() -> Self {
        Self {
            replicates: 3,
            warmup: Warmup::Iterations(1),
            iterations: None,
            confidence: 0.95,
            seed: 0,
            outliers: OutlierPolicy::ReportTukey,
        }
    }
}

impl TrialPolicy {
    /// The policy a BenchmarkRun's `trials` declares (fields it leaves out keep the defaults;
    /// warm-up by `runs`, `steps` or `requests` counts iterations here).
    pub fn from_spec(trials: &Trials) -> Self {
        let mut p = Self::default();
        if let Some(r) = trials.replicates {
            p.replicates = r as usize;
        }
        if let Some(level) = trials.confidence_level {
            p.confidence = level;
        }
        if let Some(o) = trials.outlier_policy {
            p.outliers = o;
        }
        if let Some(w) = &trials.warmup {
            if let Some(n) = w.runs.or(w.steps).or(w.requests) {
                p.warmup = Warmup::Iterations(n as usize);
            } else if let Some(d) = &w.duration {
                p.warmup = Warmup::Duration(d.0);
            } else if w.auto.is_some() {
                p.warmup = Warmup::Mser5;
            }
        }
        p
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), MicroError> {
        if self.replicates == 0 {
            return Err(MicroError::InvalidConfig(
                "replicates must be >= 1 (the methodology asks for >= 3)".into(),
            ));
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(MicroError::InvalidConfig(format!(
                "confidence level {} is outside (0, 1)",
                self.confidence
            )));
        }
        if self.iterations == Some(0) {
            return Err(MicroError::InvalidConfig("iterations must be >= 1".into()));
        }
        if self.warmup == Warmup::Mser5 && self.iterations.is_some_and(|i| i < 10) {
            return Err(MicroError::InvalidConfig(
                "MSER-5 warm-up needs >= 10 iterations per replicate".into(),
            ));
        }
        Ok(())
    }

    /// Measured iterations per replicate, `default` unless set.
    pub fn iterations_or(&self, default: usize) -> usize {
        self.iterations.unwrap_or(default)
    }
}

/// One micro benchmark to run (one `layers.micro` entry of a spec).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MicroConfig {
    /// Which benchmark.
    pub kind: MicroKind,
    /// Prefix of result names (defaults to the kind: `memory`, `gemm`, ...).
    pub name: Option<String>,
    /// Problem sizes: bytes per array (memory), N of an N×N×N product (gemm), file bytes
    /// (storage), bytes per transfer (network). Empty: the kind's defaults.
    pub sizes: Vec<u64>,
    /// Element types of GEMM, measured side by side (fp32, bf16, fp64). Empty: fp32 and bf16
    /// (bf16 only where the CPU has `avx512_bf16`).
    pub dtypes: Vec<Precision>,
    /// Directory of the storage probe (default: the system temp directory).
    pub path: Option<PathBuf>,
    /// Time budget of one latency iteration (storage random I/O, network RTT).
    pub duration: Option<Duration>,
    /// Threads (memory, gemm); default: the CPUs this process may use.
    pub threads: Option<usize>,
    /// Network peer `HOST:PORT` running `yardstick bench micro network --listen`; default: a
    /// listener of our own on 127.0.0.1.
    pub peer: Option<String>,
}

impl MicroConfig {
    /// A configuration of `kind` with every default.
    pub fn new(kind: MicroKind) -> Self {
        Self {
            kind,
            name: None,
            sizes: Vec::new(),
            dtypes: Vec::new(),
            path: None,
            duration: None,
            threads: None,
            peer: None,
        }
    }

    /// The configuration a spec's micro entry declares.
    pub fn from_spec(layer: &MicroLayer) -> Result<Self, MicroError> {
        let kind = layer
            .kind
            .ok_or_else(|| MicroError::InvalidConfig("a micro layer entry needs a kind".into()))?;
        Ok(Self {
            kind,
            name: layer.name.clone(),
            sizes: layer.sizes.clone().unwrap_or_default(),
            dtypes: layer.dtype.into_iter().collect(),
            path: layer.path.as_ref().map(PathBuf::from),
            duration: layer.duration.as_ref().map(|d| d.0),
            threads: None,
            peer: None,
        })
    }

    pub(crate) fn prefix(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| kind_name(self.kind).to_owned())
    }

    pub(crate) fn threads_or_default(&self) -> usize {
        self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
    }
}

/// Whether the GPU probes can run here: `Err` says why not (no driver library, with where it
/// was looked for; no GPU; or a build without them).
pub fn gpu_available() -> Result<usize, String> {
    #[cfg(feature = "gpu")]
    {
        gpu::gpu_count()
    }
    #[cfg(not(feature = "gpu"))]
    {
        Err("this build has no GPU probes (built without the `gpu` feature)".into())
    }
}

/// The lower-case name of a kind.
pub fn kind_name(kind: MicroKind) -> &'static str {
    match kind {
        MicroKind::Memory => "memory",
        MicroKind::Gemm => "gemm",
        MicroKind::Storage => "storage",
        MicroKind::Network => "network",
        MicroKind::GpuMemory => "gpu-memory",
        MicroKind::GpuPcie => "gpu-pcie",
        MicroKind::GpuGemm => "gpu-gemm",
    }
}

/// One measured figure with its confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MicroResult {
    /// Result name, e.g. `memory.triad`, `gemm.f32.1024`.
    pub name: String,
    /// The estimate: the median of all measured iterations (or the quantile named).
    pub value: f64,
    /// Unit: `GB/s`, `GFLOP/s`, `MB/s`, `Gbit/s`, `us`.
    pub unit: String,
    /// Confidence interval of the value; `None` when the samples cannot support one.
    pub ci: Option<[f64; 2]>,
    /// Measured samples (after warm-up and trimming).
    pub n: usize,
    /// Replicates the samples came from.
    pub replicates: usize,
    /// Confidence level of `ci`.
    pub level: f64,
    /// How `ci` was computed: `cluster-bca`, `bca`, `order-statistic`, `none` or the tool's.
    pub ci_method: String,
    /// Whether larger is better (throughput) or smaller (latency).
    pub higher_is_better: bool,
    /// Mean of the measured samples.
    pub mean: f64,
    /// Coefficient of variation of the measured samples; `None` when undefined.
    pub cv: Option<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Warm-up samples discarded over all replicates.
    pub warmup_discarded: usize,
    /// Outliers (Tukey mild + severe, MAD) found; trimmed only when the policy says so.
    pub outliers: OutlierCounts,
    /// Settings that produced the figure (size, threads, block size, I/O mode, ...).
    pub params: BTreeMap<String, serde_json::Value>,
    /// The measured samples of each replicate, in time order.
    pub samples: Vec<Vec<f64>>,
}

/// Outliers found among the measured samples.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutlierCounts {
    /// Beyond 1.5 IQR.
    pub tukey_mild: usize,
    /// Beyond 3 IQR.
    pub tukey_severe: usize,
    /// Modified z-score > 3.5.
    pub mad: usize,
    /// Removed (only under a `trim-*` policy).
    pub trimmed: usize,
}

/// Something a benchmark did not measure, and why (e.g. no bf16 GEMM kernel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skipped {
    /// What would have been measured, e.g. `gemm.bf16`.
    pub name: String,
    /// Why not, starting with `skipped: `.
    pub reason: String,
}

impl yardstick_spec::metrics::Measured for MicroReport {
    /// Each result's value, mean, extremes and coefficient of variation, in its own unit.
    fn measurements(&self) -> Vec<yardstick_spec::metrics::Measurement> {
        let mut out = Vec::new();
        for r in &self.results {
            for (s, v) in [
                ("value", Some(r.value)),
                ("mean", Some(r.mean)),
                ("min", Some(r.min)),
                ("max", Some(r.max)),
                ("cv", r.cv),
            ] {
                if let Some(v) = v {
                    out.push(
                        yardstick_spec::metrics::Measurement::stat(&r.name, s, v)
                            .in_unit(Some(&r.unit)),
                    );
                }
            }
        }
        out
    }
}

/// The results of one micro benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MicroReport {
    /// Figures measured.
    pub results: Vec<MicroResult>,
    /// Figures not measured, with the reason.
    pub skipped: Vec<Skipped>,
    /// Warnings a reader must see (debug build, arrays smaller than the caches, buffered I/O).
    pub warnings: Vec<String>,
}

/// Runs one micro benchmark under `policy`.
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    policy.validate()?;
    let mut report = match config.kind {
        MicroKind::Memory => memory::run(config, policy)?,
        MicroKind::Gemm => gemm::run(config, policy)?,
        MicroKind::Storage => storage::run(config, policy)?,
        MicroKind::Network => network::run(config, policy)?,
        #[cfg(feature = "gpu")]
        MicroKind::GpuMemory | MicroKind::GpuPcie | MicroKind::GpuGemm => gpu::run(config, policy)?,
        #[cfg(not(feature = "gpu"))]
        MicroKind::GpuMemory | MicroKind::GpuPcie | MicroKind::GpuGemm => MicroReport {
            skipped: vec![Skipped {
                name: kind_name(config.kind).into(),
                reason: "skipped: this build has no GPU probes (built without the `gpu` feature)"
                    .into(),
            }],
            ..MicroReport::default()
        },
    };
    if cfg!(debug_assertions) {
        report.warnings.push(
            "this is a debug build: figures are far below the machine's (build with --release)"
                .into(),
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured report reads back as itself from its JSON (a replicate's summary, `bench micro
    /// --json`): results with their samples and parameters, outliers, skips and warnings.
    #[test]
    fn a_measured_report_reads_back_from_its_json() {
        let mut config = MicroConfig::new(MicroKind::Memory);
        config.threads = Some(1);
        config.sizes = vec![1 << 20];
        let policy = TrialPolicy {
            replicates: 2,
            iterations: Some(3),
            ..TrialPolicy::default()
        };
        let mut report = run(&config, &policy).unwrap();
        report.skipped.push(Skipped {
            name: "gemm.bf16".into(),
            reason: "skipped: no bf16 kernel".into(),
        });
        assert!(!report.results.is_empty());
        let json = serde_json::to_value(&report).unwrap();
        let back: MicroReport = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, report);
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
