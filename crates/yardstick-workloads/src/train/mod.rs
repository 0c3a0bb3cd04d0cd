//! The built-in reference trainer: a small decoder-only transformer trained in pure Rust on CPU
//! (candle, f32, AdamW) on seeded synthetic tokens.
//!
//! It is real forward/backward/optimizer work whose FLOPs are known exactly
//! ([`model::Shape::flops_per_step`]), so MFU against the CPU's measured GEMM peak
//! ([`measure_gemm_peak`]) is meaningful. It speaks the metric protocol itself: one JSON line per
//! step (`docs/metric-protocol.md`), to a file when asked, and always as
//! [`yardstick_analysis::MetricRecord`]s for [`yardstick_analysis::analyze_training`].

pub mod bench;
pub mod data;
pub mod model;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use serde::Serialize;
use yardstick_analysis::MetricRecord;

pub use model::Shape;

/// Why training could not run.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A setting is unusable.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// The tensor library failed.
    #[error("tensor computation failed: {0}")]
    Tensor(#[from] candle_core::Error),
    /// The metrics file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The worker thread pool could not be built.
    #[error("thread pool: {0}")]
    Threads(String),
    /// A ceiling could not be measured (`bench`).
    #[error("{0}")]
    Measure(String),
    /// The trainer's steps could not be analysed (`bench`).
    #[error("analysing the trainer's steps: {0}")]
    Analysis(String),
}

fn invalid(message: impl Into<String>, hint: impl Into<String>) -> TrainError {
    TrainError::Invalid {
        message: message.into(),
        hint: hint.into(),
    }
}

/// Named model sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// V 256, H 64, L 2, 4 heads, S 64, batch 8: about 0.4 GFLOP per step.
    Tiny,
    /// V 512, H 256, L 4, 8 heads, S 128, batch 8: about 22 GFLOP per step.
    Small,
}

impl Preset {
    /// Parses `tiny` or `small`.
    pub fn parse(s: &str) -> Result<Self, TrainError> {
        match s {
            "tiny" => Ok(Preset::Tiny),
            "small" => Ok(Preset::Small),
            other => Err(invalid(
                format!("unknown preset `{other}`"),
                "use --preset tiny or --preset small",
            )),
        }
    }

    /// The preset's model shape and batch size.
    pub fn shape(self) -> (Shape, usize) {
        match self {
            Preset::Tiny => (
                Shape {
                    vocab: 256,
                    hidden: 64,
                    layers: 2,
                    heads: 4,
                    seq_len: 64,
                },
                8,
            ),
            Preset::Small => (
                Shape {
                    vocab: 512,
                    hidden: 256,
                    layers: 4,
                    heads: 8,
                    seq_len: 128,
                },
                8,
            ),
        }
    }
}

/// One training run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Model size.
    pub preset: Preset,
    /// Training steps.
    pub steps: usize,
    /// Sequences per step (default: the preset's).
    pub batch: Option<usize>,
    /// Sequence length (default: the preset's).
    pub seq_len: Option<usize>,
    /// Worker threads (default: one per core).
    pub threads: Option<usize>,
    /// Seed of the weights and the data.
    pub seed: u64,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// Append metric-protocol lines to this file as training goes.
    pub metrics_file: Option<PathBuf>,
    /// This process's rank and the number of ranks, when several processes train at once (one
    /// per task of a Slurm job or pod of a Job). Each rank trains its own replica of the
    /// model (the same initial weights) on its own slice of the data, and tags its
    /// metric-protocol lines with `rank` and `world_size` so the analysis finds the slowest
    /// rank. There is no gradient exchange between ranks: it measures each rank's compute and
    /// the spread across ranks and nodes, not communication.
    pub rank: Option<(u32, u32)>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            preset: Preset::Tiny,
            steps: 100,
            batch: None,
            seq_len: None,
            threads: None,
            seed: 0,
            learning_rate: 3e-3,
            metrics_file: None,
            rank: None,
        }
    }
}

impl TrainConfig {
    /// The model shape and batch after overrides.
    pub fn resolved(&self) -> (Shape, usize) {
        let (mut shape, batch) = self.preset.shape();
        if let Some(s) = self.seq_len {
            shape.seq_len = s;
        }
        (shape, self.batch.unwrap_or(batch))
    }

    /// Checks the settings (also done by [`train`]).
    pub fn validate(&self) -> Result<(), TrainError> {
        let (shape, batch) = self.resolved();
        if self.steps == 0 {
            return Err(invalid("--steps must be at least 1", "e.g. --steps 50"));
        }
        if batch == 0 || shape.seq_len < 2 {
            return Err(invalid(
                "batch must be >= 1 and sequence length >= 2",
                "e.g. --batch 8 --seq-len 64",
            ));
        }
        if batch * shape.seq_len > 1 << 20 {
            return Err(invalid(
                format!(
                    "{batch} × {} tokens per step is too large for the CPU trainer",
                    shape.seq_len
                ),
                "keep batch × seq-len at or below 1,048,576",
            ));
        }
        if self.threads == Some(0) {
            return Err(invalid(
                "--threads must be at least 1",
                "omit it for one per core",
            ));
        }
        if let Some((rank, world)) = self.rank
            && (world == 0 || rank >= world)
        {
            return Err(invalid(
                format!("rank {rank} of a world of {world}: the rank must be below the world size"),
                "ranks count from 0: --rank 0 --world-size 2 and --rank 1 --world-size 2",
            ));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(invalid("the learning rate must be positive", "e.g. 3e-3"));
        }
        Ok(())
    }
}

/// What a training run did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrainRun {
    /// The model shape.
    pub shape: Shape,
    /// Sequences per step.
    pub batch: usize,
    /// Tokens per step (batch × sequence length).
    pub tokens_per_step: usize,
    /// Parameters in matrix multiplies (N of 6·N·T).
    pub matmul_params: u64,
    /// All parameters.
    pub total_params: u64,
    /// Analytic matmul FLOPs of one step.
    pub flops_per_step: f64,
    /// Estimated memory traffic of one step, bytes ([`yardstick_analysis::flops::training_bytes`]
    /// over every parameter, f32, with the head count): the roofline's denominator.
    pub bytes_per_step: f64,
    /// Worker threads used.
    pub threads: usize,
    /// The metric-protocol records, one per step.
    #[serde(skip)]
    pub records: Vec<MetricRecord>,
}

/// Peak resident set size of this process (Linux `VmHWM`), if known.
fn peak_rss_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool, TrainError> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        b = b.num_threads(t);
    }
    b.build().map_err(|e| TrainError::Threads(e.to_string()))
}

/// Trains, calling `on_step` after every step with its metric record.
pub fn train(
    cfg: &TrainConfig,
    on_step: &mut (dyn FnMut(&MetricRecord) + Send),
) -> Result<TrainRun, TrainError> {
    cfg.validate()?;
    let pool = pool(cfg.threads)?;
    let threads = pool.current_num_threads();
    pool.install(|| train_in_pool(cfg, threads, on_step))
}

fn open_metrics(path: &Path) -> Result<std::fs::File, TrainError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| TrainError::Io {
            path: path.to_path_buf(),
            source,
        })
}

fn train_in_pool(
    cfg: &TrainConfig,
    threads: usize,
    on_step: &mut (dyn FnMut(&MetricRecord) + Send),
) -> Result<TrainRun, TrainError> {
    let (shape, batch) = cfg.resolved();
    if shape.hidden % shape.heads != 0 {
        return Err(invalid(
            "hidden size must be a multiple of heads",
            "use a preset",
        ));
    }
    let dev = Device::Cpu;
    let model = model::Model::new(shape, cfg.seed, &dev)?;
    let mut opt = AdamW::new(
        model.vars(),
        ParamsAdamW {
            lr: cfg.learning_rate,
            weight_decay: 0.0,
            ..ParamsAdamW::default()
        },
    )?;
    // Each rank its own slice of the data (as data parallelism gives), the same weights.
    let (rank, world) = cfg.rank.unwrap_or((0, 1));
    let data_seed = cfg.seed ^ u64::from(rank).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut data = data::Synthetic::new(shape.vocab, data_seed);
    let mut file = cfg.metrics_file.as_deref().map(open_metrics).transpose()?;
    let flops = shape.flops_per_step(batch);
    let tokens = batch * shape.seq_len;
    let bytes = yardstick_analysis::flops::training_bytes(
        shape.total_params() as f64,
        shape.layers as u32,
        shape.hidden as u32,
        shape.seq_len as u32,
        Some(shape.heads as u32),
        tokens as f64,
        4.0,
    );
    let mut records = Vec::with_capacity(cfg.steps);
    for step in 0..cfg.steps {
        // Data generation is outside the timed region: the step is forward + backward + update.
        let seqs = data.batch(batch, shape.seq_len);
        let all = Tensor::from_vec(seqs, (batch, shape.seq_len + 1), &dev)?;
        let inputs = all.narrow(1, 0, shape.seq_len)?.contiguous()?;
        let targets = all.narrow(1, 1, shape.seq_len)?.flatten_all()?;
        let t0 = Instant::now();
        let logits = model.forward(&inputs)?;
        let loss = candle_nn::loss::cross_entropy(&logits, &targets)?;
        opt.backward_step(&loss)?;
        // CPU ops are synchronous; reading the loss also makes the step's end unambiguous.
        let loss_value = loss.to_dtype(DType::F32)?.to_scalar::<f32>()?;
        let step_time = t0.elapsed().as_secs_f64();
        let mut record = MetricRecord {
            line: step + 1,
            step: Some(step as u64),
            step_time_s: Some(step_time),
            tokens: Some(tokens as f64),
            samples: Some(batch as f64),
            rank: cfg.rank.map(|_| rank),
            world_size: Some(world),
            mem_bytes: peak_rss_bytes(),
            phase: Some("train".into()),
            flops: Some(flops),
            bytes: Some(bytes),
            ..MetricRecord::default()
        };
        if loss_value.is_finite() {
            record.loss = Some(f64::from(loss_value));
        } else {
            record.loss_non_finite = true;
        }
        if let (Some(f), Some(path)) = (file.as_mut(), cfg.metrics_file.as_ref()) {
            let mut line = serde_json::to_value(&record).unwrap_or_default();
            if let Some(m) = line.as_object_mut() {
                m.remove("line");
                if record.loss_non_finite {
                    m.remove("loss_non_finite");
                    m.insert("loss".into(), "NaN".into());
                }
            }
            // One write per line: ranks of one job may append to the same file, and a line
            // written in pieces (as `writeln!` formats a JSON value) can interleave with
            // another rank's, costing both their step. An O_APPEND write of one buffer lands
            // whole.
            let mut text = line.to_string();
            text.push('\n');
            f.write_all(text.as_bytes())
                .map_err(|source| TrainError::Io {
                    path: path.clone(),
                    source,
                })?;
        }
        on_step(&record);
        records.push(record);
    }
    Ok(TrainRun {
        shape,
        batch,
        tokens_per_step: tokens,
        matmul_params: shape.matmul_params(),
        total_params: shape.total_params(),
        flops_per_step: flops,
        bytes_per_step: bytes,
        threads,
        records,
    })
}

/// A measured GEMM peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GemmPeak {
    /// Best FLOP/s over the repetitions.
    pub flops: f64,
    /// Square matrix size.
    pub n: usize,
    /// Repetitions timed.
    pub repetitions: usize,
    /// Threads used.
    pub threads: usize,
}

/// The best f32 FLOP/s of an n×n×n matrix multiply with the trainer's library and threads: the
/// denominator of the trainer's MFU on a CPU.
pub fn measure_gemm_peak(
    n: usize,
    repetitions: usize,
    threads: Option<usize>,
) -> Result<GemmPeak, TrainError> {
    let pool = pool(threads)?;
    let used = pool.current_num_threads();
    pool.install(|| {
        let dev = Device::Cpu;
        let a = Tensor::ones((n, n), DType::F32, &dev)?.affine(0.5, 0.0)?;
        let b = Tensor::ones((n, n), DType::F32, &dev)?.affine(0.25, 0.0)?;
        let _ = a.matmul(&b)?; // warm-up: page in buffers, spin up workers
        let mut best = f64::INFINITY;
        for _ in 0..repetitions.max(1) {
            let t0 = Instant::now();
            let c = a.matmul(&b)?;
            let _ = c
                .narrow(0, 0, 1)?
                .narrow(1, 0, 1)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok(GemmPeak {
            flops: 2.0 * (n as f64).powi(3) / best,
            n,
            repetitions: repetitions.max(1),
            threads: used,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_per_step_is_the_hand_count() {
        // Tiny preset: V 256, H 64, L 2, S 64, batch 8 → 512 tokens per step.
        // Per token and layer: QKV 2·3·64² = 24,576; scores 2·64·64 = 8,192; values 8,192;
        // output 2·64² = 8,192; MLP 2·8·64² = 65,536 → 114,688. Two layers: 229,376; head
        // 2·64·256 = 32,768 → forward 262,144 per token; ×3 for training, ×512 tokens.
        let (shape, batch) = Preset::Tiny.shape();
        assert_eq!(shape.flops_per_step(batch), 3.0 * 262_144.0 * 512.0);
        // It is the transformer-aware estimator with N = matmul parameters.
        let n = shape.matmul_params() as f64;
        assert_eq!(n, (12 * 2 * 64 * 64 + 256 * 64) as f64);
        let est = yardstick_analysis::flops::transformer_flops(n, 2, 64, 64, 512.0);
        assert_eq!(shape.flops_per_step(batch), est);
    }

    /// Ranks of a job append to one metrics file (a Slurm job's tasks share
    /// `$YARDSTICK_METRICS`): every line must land whole. Written in pieces, lines of
    /// concurrent ranks interleaved now and then and a step went missing from the analysis.
    #[test]
    fn concurrent_ranks_appending_to_one_file_never_tear_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let metrics = dir.path().join("shared.jsonl");
        let (ranks, steps) = (4u32, 25usize);
        std::thread::scope(|s| {
            for rank in 0..ranks {
                let metrics = metrics.clone();
                s.spawn(move || {
                    let cfg = TrainConfig {
                        steps,
                        seed: 7,
                        threads: Some(1),
                        metrics_file: Some(metrics),
                        rank: Some((rank, ranks)),
                        ..TrainConfig::default()
                    };
                    train(&cfg, &mut |_| {}).unwrap();
                });
            }
        });
        let text = std::fs::read_to_string(&metrics).unwrap();
        let parsed = yardstick_analysis::parse_metrics(&text);
        assert_eq!(parsed.malformed_count, 0, "{text}");
        assert_eq!(parsed.records.len(), ranks as usize * steps);
        for rank in 0..ranks {
            let mine = parsed
                .records
                .iter()
                .filter(|r| r.rank == Some(rank))
                .count();
            assert_eq!(mine, steps, "rank {rank}");
        }
    }

    #[test]
    fn loss_decreases_over_50_tiny_steps_and_runs_are_reproducible() {
        let dir = tempfile::tempdir().unwrap();
        let metrics = dir.path().join("m.jsonl");
        let cfg = TrainConfig {
            steps: 50,
            seed: 7,
            threads: Some(1),
            metrics_file: Some(metrics.clone()),
            ..TrainConfig::default()
        };
        let mut seen = 0;
        let run = train(&cfg, &mut |_| seen += 1).unwrap();
        assert_eq!(seen, 50);
        let losses: Vec<f64> = run.records.iter().map(|r| r.loss.unwrap()).collect();
        let head: f64 = losses[..5].iter().sum::<f64>() / 5.0;
        let tail: f64 = losses[45..].iter().sum::<f64>() / 5.0;
        // Starts near ln 256 = 5.55 and must fall clearly.
        assert!((losses[0] - 256f64.ln()).abs() < 0.5, "{losses:?}");
        assert!(
            tail < head - 1.0,
            "first {head:.3}, last {tail:.3}: {losses:?}"
        );
        // The same seed gives the same losses.
        let again = train(
            &TrainConfig {
                steps: 5,
                metrics_file: None,
                ..cfg
            },
            &mut |_| {},
        )
        .unwrap();
        let l2: Vec<f64> = again.records.iter().map(|r| r.loss.unwrap()).collect();
        assert_eq!(losses[..5], l2[..5]);
        // The file speaks the protocol and the analysis reads it.
        let parsed = yardstick_analysis::parse_metrics(&std::fs::read_to_string(&metrics).unwrap());
        assert_eq!((parsed.records.len(), parsed.malformed_count), (50, 0));
        assert_eq!(parsed.records[3].flops, Some(run.flops_per_step));
        let report = yardstick_analysis::analyze_training(
            &parsed,
            &yardstick_analysis::TrainingConfig {
                peak_flops_per_device: Some(1e12),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(report.flops_per_step, Some(run.flops_per_step));
        assert_eq!(parsed.records[3].bytes, Some(run.bytes_per_step));
        assert_eq!(report.bytes_per_step, Some(run.bytes_per_step));
        assert_eq!(report.bytes_source, Some("reported"));
        assert!(report.loss.unwrap().slope < 0.0);
    }

    #[test]
    fn bad_settings_are_invalid() {
        for cfg in [
            TrainConfig {
                steps: 0,
                ..TrainConfig::default()
            },
            TrainConfig {
                batch: Some(0),
                ..TrainConfig::default()
            },
            TrainConfig {
                threads: Some(0),
                ..TrainConfig::default()
            },
        ] {
            assert!(matches!(
                train(&cfg, &mut |_| {}),
                Err(TrainError::Invalid { .. })
            ));
        }
        assert!(Preset::parse("huge").is_err());
    }
}
