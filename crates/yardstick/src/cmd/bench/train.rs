//! `yardstick bench train`: wiring of the built-in reference trainer (crate
//! `yardstick-workloads`, feature `train`) to the training analysis of `yardstick-analysis`.

use std::path::PathBuf;

/// Train a small decoder-only transformer on CPU and report step time, tokens/s, MFU and loss.
///
/// Pure Rust (candle, f32, AdamW) on seeded synthetic tokens: real forward/backward/optimizer
/// work whose FLOPs per step are known exactly. MFU is against this machine's measured f32 GEMM
/// peak (or --peak-flops). Every step is also written as a metric-protocol line to --metrics, or
/// to $YARDSTICK_METRICS when yardstick runs it as a workload.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick bench train\n  \
yardstick bench train --preset small --steps 100 --batch 8 --threads 2\n  \
yardstick bench train --steps 50 --json > train.json")]
pub struct TrainArgs {
    /// Model size: tiny (H 64, L 2) or small (H 256, L 4).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Training steps.
    #[arg(long, default_value_t = 100)]
    pub steps: usize,
    /// Sequences per step (default: the preset's, 8).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Sequence length (default: the preset's).
    #[arg(long)]
    pub seq_len: Option<usize>,
    /// Worker threads (default: $SLURM_CPUS_PER_TASK inside a Slurm task, else one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// This process's rank, when several train at once (default: $RANK, else $SLURM_PROCID).
    /// Each rank trains its own replica on its own slice of the synthetic data and tags its
    /// metric lines with `rank` and `world_size`; there is no gradient exchange.
    #[arg(long, value_name = "R", requires = "world_size")]
    pub rank: Option<u32>,
    /// The number of ranks (default: $WORLD_SIZE, else $SLURM_NTASKS).
    #[arg(long, value_name = "N", requires = "rank")]
    pub world_size: Option<u32>,
    /// Seed of the weights and the synthetic data.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// AdamW learning rate.
    #[arg(long, default_value_t = 3e-3)]
    pub lr: f64,
    /// Steps dropped as warm-up (default: MSER-5 finds the steady state).
    #[arg(long, value_name = "N")]
    pub warmup_steps: Option<u64>,
    /// Peak FLOP/s for MFU (default: measured with an f32 GEMM before training).
    #[arg(long, value_name = "FLOPS")]
    pub peak_flops: Option<f64>,
    /// Memory bandwidth for the roofline, bytes/s (default: measured with a short STREAM triad
    /// before training, or taken from --micro).
    #[arg(long, value_name = "BYTES_PER_S")]
    pub memory_bw: Option<f64>,
    /// `yardstick bench micro memory gemm --json` output of this machine: its best f32 GEMM is
    /// the peak (unless --peak-flops) and its triad the bandwidth (unless --memory-bw).
    #[arg(long, value_name = "FILE")]
    pub micro: Option<PathBuf>,
    /// Append metric-protocol JSON lines here (default: $YARDSTICK_METRICS when set).
    #[arg(long, value_name = "FILE", env = "YARDSTICK_METRICS")]
    pub metrics: Option<PathBuf>,
    /// Take a profile in one more training run after this one (never measured): `perf` (the
    /// trainer is native code; Linux perf's top symbols). Traces go to --profile-dir.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub profile: Option<TrainProfileArg>,
    /// Where --profile writes the traces.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "yardstick-profile",
        requires = "profile"
    )]
    pub profile_dir: PathBuf,
}

/// Profilers of `bench train --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrainProfileArg {
    /// Linux perf.
    Perf,
}

/// This invocation's arguments without the global `--json` and the profile flags (and without
/// `--metrics`, so the profiled run writes no metric lines into the measured run's file): the
/// command line of the profiled run.
#[cfg_attr(not(feature = "train"), allow(dead_code))]
fn profiled_argv() -> Vec<String> {
    let mut args = std::env::args();
    let argv0 = args.next();
    let mut out: Vec<String> = std::env::current_exe()
        .ok()
        .map(|p| p.display().to_string())
        .or(argv0)
        .into_iter()
        .collect();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if a == "--json"
            || a.starts_with("--profile=")
            || a.starts_with("--profile-dir=")
            || a.starts_with("--metrics=")
        {
            continue;
        }
        if a == "--profile" || a == "--profile-dir" || a == "--metrics" {
            skip = true;
            continue;
        }
        out.push(a);
    }
    out
}

#[cfg(not(feature = "train"))]
/// Without the `train` feature there is no trainer to run.
pub fn run(_args: TrainArgs, _g: &crate::cli::GlobalOpts) -> anyhow::Result<crate::exit::Status> {
    Err(crate::exit::invalid(
        "this yardstick was built without the reference trainer",
        Some("rebuild with `cargo build --features train` (it is on by default)"),
    ))
}

#[cfg(feature = "train")]
pub use imp::{TrainOutput, run};

#[cfg(feature = "train")]
mod imp {
    use std::io::{IsTerminal, Write};

    use yardstick_analysis::training::TrainingReport;
    use yardstick_exec::command::fmt_s;
    use yardstick_workloads::train::bench::{BenchConfig, Phase, bench};
    use yardstick_workloads::train::{Preset, TrainConfig, TrainError, TrainRun};

    use super::TrainArgs;

    /// The rank and world size: the flags, else the launcher's variables (`RANK`/`WORLD_SIZE`
    /// as torchrun sets them, `SLURM_PROCID`/`SLURM_NTASKS` in a Slurm task); none outside.
    fn rank_of(args: &TrainArgs) -> anyhow::Result<Option<(u32, u32)>> {
        if let (Some(r), Some(w)) = (args.rank, args.world_size) {
            return Ok(Some((r, w)));
        }
        for (rank, world) in [("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")] {
            let (Ok(r), Ok(w)) = (std::env::var(rank), std::env::var(world)) else {
                continue;
            };
            let parse = |name: &str, v: &str| {
                v.trim().parse::<u32>().map_err(|_| {
                    exit::invalid(
                        format!("${name} is `{v}`, not a rank number"),
                        Some("unset it, or pass --rank R --world-size N"),
                    )
                })
            };
            return Ok(Some((parse(rank, &r)?, parse(world, &w)?)));
        }
        Ok(None)
    }

    /// What `yardstick bench train --json` prints: the training analysis of the trainer's steps
    /// with the run's model, peak and bottleneck.
    #[derive(Debug, serde::Serialize, schemars::JsonSchema)]
    pub struct TrainOutput<'a> {
        /// The analysis (step time, throughput, MFU, loss...).
        #[serde(flatten)]
        pub report: &'a TrainingReport,
        /// The preset trained.
        pub preset: Preset,
        /// What the trainer did (shape, parameters, steps).
        pub model: &'a TrainRun,
        /// The peak MFU is measured against.
        pub peak: Peak<'a>,
        /// The bottleneck verdict with its evidence.
        pub bottleneck: &'a yardstick_analysis::bottleneck::TrainingBottleneck,
        /// Where the metric-protocol lines went (`--metrics`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub metrics_file: Option<&'a std::path::Path>,
        /// The profile of one more run (`--profile`): the analysis, where the traces are, the
        /// profiler's overhead.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub profile: Option<yardstick_store::summary::ProfileEntry>,
    }

    /// The peak FLOP/s and where it came from.
    #[derive(Debug, serde::Serialize, schemars::JsonSchema)]
    pub struct Peak<'a> {
        /// FLOP/s.
        pub flops: f64,
        /// `{"source": "given" | "measured" | ...}`, with the GEMM measurement when measured.
        pub detail: &'a serde_json::Value,
    }
    use crate::cli::{GlobalOpts, verbosity};
    use crate::exit::{self, Status};
    use crate::output;

    fn to_exit(e: TrainError) -> anyhow::Error {
        match e {
            TrainError::Invalid { message, hint } => exit::invalid(message, Some(&hint)),
            other => anyhow::Error::new(other),
        }
    }

    /// Runs `bench train`.
    pub fn run(args: TrainArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
        let preset = Preset::parse(&args.preset).map_err(to_exit)?;
        let micro = args
            .micro
            .as_deref()
            .map(|p| super::super::ceilings_from_micro_file(p, "fp32", "--micro"))
            .transpose()?;
        let threads = args.threads.or_else(|| {
            std::env::var("SLURM_CPUS_PER_TASK")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n: &usize| n > 0)
        });
        let cfg = BenchConfig {
            train: TrainConfig {
                preset,
                steps: args.steps,
                batch: args.batch,
                seq_len: args.seq_len,
                threads,
                seed: args.seed,
                learning_rate: args.lr,
                metrics_file: args.metrics.clone(),
                rank: rank_of(&args)?,
            },
            peak_flops: args.peak_flops,
            memory_bw: args.memory_bw,
            micro,
            warmup_steps: args.warmup_steps,
        };
        let quiet = g.json || verbosity() < 0;
        let tty = std::io::stderr().is_terminal() && !quiet;
        let steps = args.steps;
        let mut progress = |r: &yardstick_analysis::MetricRecord| {
            if tty {
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K  step {}/{steps}  loss {:.4}  {}",
                    r.step.unwrap_or(0) + 1,
                    r.loss.unwrap_or(f64::NAN),
                    fmt_s(r.step_time_s.unwrap_or(0.0))
                );
                let _ = err.flush();
            }
        };
        let mut on_phase = |p: Phase| {
            if !quiet {
                output::info(p.text());
            }
        };
        let done = bench(&cfg, &mut on_phase, &mut progress).map_err(to_exit)?;
        if tty {
            eprint!("\r\x1b[2K");
        }
        let profile = match args.profile {
            Some(super::TrainProfileArg::Perf) => {
                let spec = yardstick_spec::ProfilerSpec {
                    mode: Some(yardstick_spec::ProfilerMode::Trace),
                    tool: Some(yardstick_spec::ProfilerTool::Perf),
                    schedule: None,
                };
                Some(crate::cmd::bench::exec::take_profile(
                    &super::profiled_argv(),
                    &spec,
                    None,
                    &[],
                    &args.profile_dir,
                    vec![serde_json::to_value(&done.report)?],
                )?)
            }
            None => None,
        };
        if g.json {
            output::json(&TrainOutput {
                report: &done.report,
                preset,
                model: &done.run,
                peak: Peak {
                    flops: done.peak,
                    detail: &done.peak_source,
                },
                bottleneck: &done.bottleneck,
                metrics_file: args.metrics.as_deref(),
                profile,
            })?;
        } else {
            output::text(&done.text())?;
            if let Some(p) = &profile {
                output::text(&yardstick_run::profile::text(p))?;
            }
        }
        Ok(if done.diverged() {
            Status::Failure
        } else {
            Status::Ok
        })
    }
}
