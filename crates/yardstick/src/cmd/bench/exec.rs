//! `yardstick bench exec`: wiring of whole-process benchmarks (crate `yardstick-exec`; the
//! training analysis of their metric records is `yardstick-analysis`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;

use yardstick_analysis::flops;
use yardstick_analysis::roofline::Ceilings;
use yardstick_analysis::training::{ModelDims, TrainingConfig, WarmupPolicy};
use yardstick_exec::ExecConfig;
use yardstick_exec::command::{
    Parameter, Progress, WORLD_SIZE_PARAM, fmt_s, run_command_benchmark_with_progress,
};

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{self, Status};
use crate::output;

/// Benchmark any command as a whole process, hyperfine-style.
///
/// Each run is timed from spawn to exit (wall, user, sys, max RSS via wait4), in its own process
/// group, with stdout/stderr kept as logs. With --param (or --world-sizes) every value is a
/// separate benchmark and runs are interleaved across them. Workloads that report their own steps
/// (JSON lines to $YARDSTICK_METRICS, see docs/metric-protocol.md) also get a training analysis:
/// step time, tokens/s, MFU, loss, cost, stragglers, scaling.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick bench exec -- sleep 0.1\n  \
yardstick bench exec --runs 10 --warmup 2 -- python train.py --steps 100\n  \
yardstick bench exec --param batch=8,16,32 -- python train.py --batch {batch}\n  \
yardstick bench exec --world-sizes 1,2,4 -- torchrun --nproc-per-node {worldSize} train.py\n  \
yardstick bench exec --expect-metrics --json -- python train.py   # the script reports steps")]
pub struct ExecArgs {
    /// Measured runs per benchmark.
    #[arg(short = 'r', long, default_value_t = 10)]
    pub runs: usize,
    /// Warm-up runs per benchmark (run, logged, not measured).
    #[arg(short = 'w', long, default_value_t = 0)]
    pub warmup: usize,
    /// Shell command run before every run, untimed (e.g. to drop caches).
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Shell command run once per benchmark after its last run.
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Scan a parameter: NAME=v1,v2,... substitutes {NAME} in the command (repeatable; the
    /// benchmarks are the combinations).
    #[arg(long = "param", value_name = "NAME=V1,V2")]
    pub params: Vec<String>,
    /// World sizes to sweep: substitutes {worldSize}; adds scaling efficiency and Amdahl's fit.
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub world_sizes: Vec<u32>,
    /// Kill a run's process group after this long (SIGTERM, then SIGKILL), e.g. 10m, 30s.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Time between SIGTERM and SIGKILL when a run is stopped.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub kill_grace: String,
    /// Measure failing runs (non-zero exit) instead of stopping that benchmark.
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Extra environment variable for the command, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Directory for stdout/stderr/metrics of every run, kept. Without it they go to a temporary
    /// directory that is removed when every run succeeded and kept (and named) when one failed.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// Confidence level of the interval of the mean.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Training steps to drop as warm-up (default: MSER-5 finds the steady state).
    #[arg(long, value_name = "N")]
    pub warmup_steps: Option<u64>,
    /// Parameters of the model (N of 6·N·T), for MFU.
    #[arg(long, value_name = "N")]
    pub model_params: Option<f64>,
    /// Transformer layers (transformer-aware MFU).
    #[arg(long)]
    pub layers: Option<u32>,
    /// Hidden size (transformer-aware MFU).
    #[arg(long)]
    pub hidden: Option<u32>,
    /// Training sequence length (transformer-aware MFU; tokens from samples).
    #[arg(long)]
    pub seq_len: Option<u32>,
    /// Peak FLOP/s of one device (overrides the --gpu table).
    #[arg(long, value_name = "FLOPS")]
    pub peak_flops: Option<f64>,
    /// GPU model for the peak FLOP/s table, e.g. H100, A100, L4.
    #[arg(long, value_name = "NAME")]
    pub gpu: Option<String>,
    /// Data type for the peak table: bf16, fp16, fp8, tf32, fp32.
    #[arg(long, default_value = "bf16")]
    pub dtype: String,
    /// Devices the job uses (default: the reported world size).
    #[arg(long)]
    pub devices: Option<u32>,
    /// Memory bandwidth of one device in bytes/s (e.g. 3.35e12 for an H100 SXM), for the
    /// roofline and the bottleneck classification.
    #[arg(long, value_name = "BYTES_PER_S")]
    pub memory_bw: Option<f64>,
    /// Link peak of collectives in bytes/s (the nccl-tests busbw plateau of this machine, e.g.
    /// 3.6e11 for H100 NVLink all-reduce), compared with the workload's `comm_busbw_gbps`.
    #[arg(long, value_name = "BYTES_PER_S")]
    pub link_bw: Option<f64>,
    /// Ceilings from `yardstick bench micro --json` output of this machine (best gemm.<dtype>.N
    /// as the peak, memory.triad as the bandwidth) for MFU and the bottleneck classification.
    #[arg(long, value_name = "FILE")]
    pub micro: Option<PathBuf>,
    /// Price of one device-hour in dollars, for cost per 1K samples and per 1M tokens.
    #[arg(long, value_name = "USD")]
    pub cost_per_device_hour: Option<f64>,
    /// Warn when a run writes no metric-protocol records.
    #[arg(long)]
    pub expect_metrics: bool,
    /// Make $YARDSTICK_METRICS a FIFO that yardstick reads as lines arrive (nothing waits on
    /// the disk; a run that hangs or is killed keeps the steps it reported). The lines are
    /// still kept in the logs directory.
    #[arg(long)]
    pub metrics_fifo: bool,
    /// Test-only: fake wall times instead of running anything.
    #[arg(
        long,
        hide = true,
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    pub debug_mock_times: Vec<f64>,
    /// The command and its arguments (no shell: use `sh -c '...'` for pipes and globs).
    /// Take a profile in one more run after the measured ones (never measured): `torch` (the
    /// command's own torch.profiler through python/yardstick_profile), `py-spy`, `perf` or
    /// `nsys`. Traces go to --profile-dir; where the time went is printed with the results.
    #[arg(long, value_enum, value_name = "TOOL", conflicts_with_all = ["params", "world_sizes"])]
    pub profile: Option<ProfilerToolArg>,
    /// --profile torch: `trace` (Chrome/Perfetto JSON) or `tb` (TensorBoard).
    #[arg(long, value_enum, default_value_t = ProfilerModeArg::Trace, requires = "profile")]
    pub profile_mode: ProfilerModeArg,
    /// --profile torch: torch.profiler's schedule, steps to wait,warm up,record,cycles.
    #[arg(
        long,
        value_name = "W,WU,A,R",
        default_value = "1,1,3,1",
        requires = "profile"
    )]
    pub profile_schedule: String,
    /// Where --profile writes the traces.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "yardstick-profile",
        requires = "profile"
    )]
    pub profile_dir: PathBuf,
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn positive(flag: &str, v: Option<f64>) -> anyhow::Result<()> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(exit::invalid(
            format!("--{flag} must be a positive number, got {x}"),
            None,
        )),
        _ => Ok(()),
    }
}

/// Builds the library configuration from the flags, with the runs' logs in `log_dir`.
fn config(args: &ExecArgs, log_dir: PathBuf) -> anyhow::Result<ExecConfig> {
    let mut cfg = ExecConfig::new(args.command.clone(), log_dir);
    cfg.runs = args.runs;
    cfg.warmup = args.warmup;
    cfg.prepare = args.prepare.clone();
    cfg.cleanup = args.cleanup.clone();
    cfg.ignore_failure = args.ignore_failure;
    cfg.confidence_level = args.confidence;
    cfg.timeout = args
        .timeout
        .as_deref()
        .map(|t| crate::cmd::parse_duration("timeout", t))
        .transpose()?;
    cfg.kill_grace = crate::cmd::parse_duration("kill-grace", &args.kill_grace)?;
    for p in &args.params {
        cfg.params
            .push(Parameter::parse(p).map_err(exit::lib_error)?);
    }
    if !args.world_sizes.is_empty() {
        if args.world_sizes.contains(&0) {
            return Err(exit::invalid(
                "--world-sizes contains 0",
                Some("world sizes are at least 1"),
            ));
        }
        cfg.params.push(Parameter {
            name: WORLD_SIZE_PARAM.into(),
            values: args.world_sizes.iter().map(u32::to_string).collect(),
        });
    }
    for kv in &args.env {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            exit::invalid(
                format!("--env `{kv}` is not KEY=VALUE"),
                Some("e.g. --env OMP_NUM_THREADS=4"),
            )
        })?;
        cfg.env.push((k.to_string(), v.to_string()));
    }
    positive("model-params", args.model_params)?;
    positive("peak-flops", args.peak_flops)?;
    positive("cost-per-device-hour", args.cost_per_device_hour)?;
    positive("memory-bw", args.memory_bw)?;
    positive("link-bw", args.link_bw)?;
    let micro = args
        .micro
        .as_deref()
        .map(|p| super::ceilings_from_micro_file(p, &args.dtype, "--micro"))
        .transpose()?;
    let peak = match (args.peak_flops, &args.gpu) {
        (Some(p), _) => Some(p),
        (None, Some(gpu)) => Some(
            flops::peak_flops(gpu, &args.dtype)
                .ok_or_else(|| {
                    exit::invalid(
                        format!("no peak FLOP/s for `{gpu}` in {}", args.dtype),
                        Some("give the figure with --peak-flops (e.g. 312e12 for an A100 in bf16)"),
                    )
                })?
                .flops,
        ),
        (None, None) => micro.as_ref().map(|(c, _)| c.peak_flops),
    };
    // One device's ceilings: the peak as for MFU, the bandwidth given or measured.
    cfg.ceilings = match (peak, args.memory_bw, &micro) {
        (Some(p), Some(bw), _) => Some((
            Ceilings {
                label: args.gpu.clone().unwrap_or_else(|| "given".into()),
                peak_flops: p,
                memory_bw: bw,
                link_bw: args.link_bw,
            },
            "given (--peak-flops/--gpu, --memory-bw)".to_string(),
        )),
        (Some(p), None, Some((c, src))) => Some((
            Ceilings {
                peak_flops: p,
                link_bw: args.link_bw.or(c.link_bw),
                ..c.clone()
            },
            src.clone(),
        )),
        _ => None,
    };
    let model = args.model_params.map(|parameters| ModelDims {
        parameters,
        layers: args.layers,
        hidden: args.hidden,
        sequence_length: args.seq_len,
    });
    cfg.training = Some(TrainingConfig {
        warmup: args
            .warmup_steps
            .map_or(WarmupPolicy::Mser5, WarmupPolicy::Steps),
        model,
        peak_flops_per_device: peak,
        devices: args.devices,
        cost_per_device_hour: args.cost_per_device_hour,
        ..TrainingConfig::default()
    });
    cfg.metrics_fifo = args.metrics_fifo;
    cfg.expect_metrics = args.expect_metrics || model.is_some() || !args.world_sizes.is_empty();
    if !args.debug_mock_times.is_empty() {
        cfg.mock_wall_times = Some(args.debug_mock_times.clone());
    }
    Ok(cfg)
}

/// Runs `bench exec`.
pub fn run(args: ExecArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    // Without --logs the logs go to a temporary directory that is removed when every run
    // succeeded, and kept (and named) when a run failed or the benchmark was interrupted.
    let scratch = match &args.logs {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("yardstick-exec-")
                .tempdir()
                .context("creating a temporary directory for the logs")?,
        ),
    };
    let log_dir = match (&args.logs, &scratch) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => unreachable!("a scratch directory without --logs"),
    };
    let mut cfg = config(&args, log_dir)?;
    cfg.cancel = Some(crate::interrupt::token(
        "interrupted: stopping the current run (Ctrl-C again to abort)",
    ));
    let show_progress = !g.json && verbosity() >= 0 && std::io::stderr().is_terminal();
    let mut progress = |p: Progress<'_>| {
        let Progress::RunDone {
            benchmark,
            of,
            run,
            runs,
        } = p;
        if show_progress {
            let kind = if run.warmup { "warm-up" } else { "run" };
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K  benchmark {}/{of}: {kind} {}/{} {}",
                benchmark + 1,
                run.index + 1,
                if run.warmup { args.warmup } else { runs },
                fmt_s(run.wall_s)
            );
            let _ = err.flush();
        }
    };
    let mut report =
        run_command_benchmark_with_progress(&cfg, &mut progress).map_err(exit::lib_error)?;
    let keep_logs = scratch.is_none() || !report.ok() || report.interrupted;
    if !keep_logs {
        // Removed below: the report says so instead of naming a directory that is gone.
        report.logs_dir = PathBuf::new();
    }
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let profile = match args.profile {
        Some(tool) if !report.interrupted => {
            let spec = profile_spec(tool, args.profile_mode, &args.profile_schedule)?;
            let measured = report
                .benchmarks
                .first()
                .map(|b| {
                    b.runs
                        .iter()
                        .filter_map(|r| serde_json::to_value(&r.training).ok())
                        .collect()
                })
                .unwrap_or_default();
            Some(take_profile(
                &args.command,
                &spec,
                cfg.timeout,
                &cfg.env,
                &args.profile_dir,
                measured,
            )?)
        }
        _ => None,
    };
    if g.json {
        let mut out = yardstick_exec::command::ExecOutput::of(&report);
        if let yardstick_exec::command::ExecOutput::Single { profile: p, .. } = &mut out {
            *p = profile.as_ref().map(serde_json::to_value).transpose()?;
        }
        output::json(&out)?;
    } else {
        output::text(&yardstick_exec::text::report(&report))?;
        if let Some(p) = &profile {
            output::text(&yardstick_run::profile::text(p))?;
        }
    }
    if report.interrupted {
        output::error("interrupted: results cover the runs that finished");
    }
    if report.mocked {
        output::warn(
            "MOCKED: these timings were made up by a test build (--debug-mock-times), not measured",
        );
    }
    if let Some(dir) = scratch {
        if keep_logs {
            let kept = dir.keep();
            output::info(&format!("logs kept in {}", kept.display()));
        } else {
            dir.close()
                .with_context(|| format!("removing {}", cfg.log_dir.display()))?;
        }
    }
    Ok(if report.ok() {
        Status::Ok
    } else {
        Status::Failure
    })
}

/// Profilers of `--profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfilerToolArg {
    /// The command's own torch.profiler (python/yardstick_profile).
    Torch,
    /// py-spy's sampled Python stacks.
    PySpy,
    /// Linux perf.
    Perf,
    /// NVIDIA Nsight Systems.
    Nsys,
}

/// Trace formats of `--profile torch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfilerModeArg {
    /// Chrome/Perfetto JSON.
    Trace,
    /// TensorBoard's profiler plugin files.
    Tb,
}

/// The profile `--profile` asks for.
pub(crate) fn profile_spec(
    tool: ProfilerToolArg,
    mode: ProfilerModeArg,
    schedule: &str,
) -> anyhow::Result<yardstick_spec::ProfilerSpec> {
    let n: Vec<u32> = schedule
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|v: &Vec<u32>| v.len() == 4 && v[2] >= 1)
        .ok_or_else(|| {
            exit::invalid(
                format!("--profile-schedule `{schedule}` is not wait,warmup,active,repeat"),
                Some("four whole numbers with active >= 1, e.g. 1,1,3,1"),
            )
        })?;
    Ok(yardstick_spec::ProfilerSpec {
        mode: Some(match mode {
            ProfilerModeArg::Trace => yardstick_spec::ProfilerMode::Trace,
            ProfilerModeArg::Tb => yardstick_spec::ProfilerMode::Tb,
        }),
        tool: Some(match tool {
            ProfilerToolArg::Torch => yardstick_spec::ProfilerTool::Torch,
            ProfilerToolArg::PySpy => yardstick_spec::ProfilerTool::PySpy,
            ProfilerToolArg::Perf => yardstick_spec::ProfilerTool::Perf,
            ProfilerToolArg::Nsys => yardstick_spec::ProfilerTool::Nsys,
        }),
        schedule: Some(yardstick_spec::ProfilerSchedule {
            wait: Some(n[0]),
            warmup: Some(n[1]),
            active: Some(n[2]),
            repeat: Some(n[3]),
        }),
    })
}

/// Runs `argv` once more under `profile` ([`yardstick_run::profile::take`]); a profiled run
/// that cannot start is invalid input.
pub(crate) fn take_profile(
    argv: &[String],
    profile: &yardstick_spec::ProfilerSpec,
    timeout: Option<std::time::Duration>,
    env: &[(String, String)],
    dir: &std::path::Path,
    measured: Vec<serde_json::Value>,
) -> anyhow::Result<yardstick_store::summary::ProfileEntry> {
    let cancel = crate::interrupt::token("interrupted: stopping the profiled run");
    yardstick_run::profile::take(argv, profile, timeout, env, dir, measured, cancel).map_err(|e| {
        match e {
            yardstick_run::RunError::Workload(m) => exit::invalid(m, None),
            other => anyhow::Error::new(other),
        }
    })
}
