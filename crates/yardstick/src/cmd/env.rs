//! `yardstick env`: the environment capture and machine profile (crate `yardstick-env`), and the
//! comparative roofline of two profiles (crate `yardstick-analysis`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use yardstick_analysis::roofline::{self, ProfileComparison};
use yardstick_env::CaptureOptions;

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output;

/// Print the environment capture and the machine profile.
///
/// The profile key is coarse and stable (GPU model×count, driver major, CUDA, torch,
/// compute capability; or CPU model×usable CPUs and kernel): baselines are compared only within
/// one key. The hash covers every stable field. Field list and key rules: docs/env.md.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick env\n  \
yardstick env --key                      # the machine-profile key alone\n  \
yardstick env --json --no-python > env.json\n  \
yardstick env compare this.json other.json")]
pub struct EnvArgs {
    /// Do not run the Python interpreter (no Python, torch or NCCL-wheel versions).
    #[arg(long)]
    pub no_python: bool,
    /// Do not load NVML (records "no NVIDIA GPU: NVML probe disabled").
    #[arg(long)]
    pub no_gpu: bool,
    /// Deadline of each probe that runs a process (python, rustc, git), in ms.
    #[arg(long, default_value_t = 1500, value_name = "MS")]
    pub probe_timeout_ms: u64,
    /// Print only the machine-profile key (one line), for scripts.
    #[arg(long, conflicts_with = "json")]
    pub key: bool,
    #[command(subcommand)]
    pub command: Option<EnvCommand>,
}

/// Subcommands of `yardstick env`.
#[derive(Debug, clap::Subcommand)]
pub enum EnvCommand {
    /// Comparative roofline of two machine profiles from their micro results.
    Compare(CompareArgs),
}

/// Compare two machines' rooflines (high peak and low bandwidth against low peak and high
/// bandwidth; docs/methodology.md#comparing-machines): peaks, bandwidths, ridge points, where the rooflines cross, and for each
/// workload intensity which machine attains more.
///
/// A and B are `yardstick bench micro memory gemm --json` outputs of the two machines (or any
/// JSON with `machine_profile` and `results: [{name, value, unit}]`, e.g. datasheet figures
/// written as `gemm.bf16.8192` in TFLOP/s and `memory.triad` in TB/s). The peak is the best
/// `gemm.<dtype>.N` of --dtype; the bandwidth `memory.triad`. A file with GPU results
/// (`gpu.gemm.<dtype>.peak`, `gpu.hbm.copy`) is compared on its GPU's roofline instead.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick env compare this.json other.json --workload decode=2 --workload train=300\n  \
yardstick env compare a.json b.json --dtype fp32 --json"
)]
pub struct CompareArgs {
    /// Micro results of machine A.
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// Micro results of machine B.
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Element type of the workloads: the GEMM peak compared (bf16 falls back to f32, said so,
    /// where a file has no bf16 GEMM).
    #[arg(long, default_value = "bf16", value_name = "DTYPE")]
    pub dtype: String,
    /// A workload and its arithmetic intensity in FLOP/byte, e.g. decode=2 (repeatable).
    #[arg(long = "workload", value_name = "NAME=FLOP_PER_BYTE")]
    pub workloads: Vec<String>,
}

/// Runs `yardstick env`.
pub fn run(args: EnvArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if let Some(EnvCommand::Compare(c)) = args.command {
        return compare(c, g);
    }
    if args.probe_timeout_ms == 0 || args.probe_timeout_ms > 60_000 {
        return Err(exit::invalid(
            format!(
                "--probe-timeout-ms {} is out of range",
                args.probe_timeout_ms
            ),
            Some("give a deadline between 1 and 60000 ms, e.g. --probe-timeout-ms 1500"),
        ));
    }
    let opts = CaptureOptions {
        tool_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        probe_python: !args.no_python,
        probe_gpus: !args.no_gpu,
        probe_timeout: Duration::from_millis(args.probe_timeout_ms),
        ..CaptureOptions::default()
    };
    let c = yardstick_env::capture(&opts);
    if g.json {
        output::json(&c)?;
    } else if args.key {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", c.machine_profile)?;
    } else {
        output::text(&yardstick_env::text::capture(&c))?;
    }
    Ok(Status::Ok)
}

/// One side of `env compare --json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Side {
    /// The `bench micro --json` file.
    file: String,
    /// The machine profile it was measured on.
    machine_profile: String,
    /// Where its ceilings came from.
    source: String,
}

/// The JSON of `yardstick env compare --json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CompareOutput {
    /// The GEMM precision compared.
    dtype: String,
    /// Where A's and B's ceilings came from.
    inputs: [Side; 2],
    /// The two rooflines side by side.
    #[serde(flatten)]
    comparison: ProfileComparison,
}

fn parse_workload(s: &str) -> anyhow::Result<(String, f64)> {
    let bad = || {
        exit::invalid(
            format!("--workload `{s}` is not NAME=FLOP_PER_BYTE with a positive intensity"),
            Some("e.g. --workload decode=2 --workload train=300"),
        )
    };
    let (name, value) = s.split_once('=').ok_or_else(bad)?;
    let v: f64 = value.trim().parse().map_err(|_| bad())?;
    if name.trim().is_empty() || !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok((name.trim().to_owned(), v))
}

fn compare(args: CompareArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if roofline::gemm_dtype(&args.dtype).is_none()
        && roofline::gpu_gemm_dtypes(&args.dtype).is_empty()
    {
        return Err(exit::invalid(
            format!(
                "--dtype: no CPU GEMM figure for `{}`, nor a GPU one",
                args.dtype
            ),
            Some("choose bf16, fp32, fp64 or fp16 (tf32 and fp8 too with GPU results)"),
        ));
    }
    let workloads = args
        .workloads
        .iter()
        .map(|w| parse_workload(w))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (a, src_a) = crate::cmd::bench::ceilings_from_micro_file(&args.a, &args.dtype, "A")?;
    let (b, src_b) = crate::cmd::bench::ceilings_from_micro_file(&args.b, &args.dtype, "B")?;
    let named: Vec<(&str, f64)> = workloads.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let comparison = roofline::compare_profiles(&a, &b, &named)
        .ok_or_else(|| anyhow::anyhow!("the two rooflines cannot be compared"))?;
    let side = |file: &PathBuf, c: &roofline::Ceilings, source: String| Side {
        file: file.display().to_string(),
        machine_profile: c.label.clone(),
        source,
    };
    let out = CompareOutput {
        dtype: args.dtype.to_ascii_lowercase(),
        inputs: [side(&args.a, &a, src_a), side(&args.b, &b, src_b)],
        comparison,
    };
    if g.json {
        output::json(&out)?;
    } else {
        print_comparison(&out)?;
    }
    Ok(Status::Ok)
}

fn print_comparison(o: &CompareOutput) -> anyhow::Result<()> {
    output::text(&roofline::comparison_text(
        &o.dtype,
        [&o.inputs[0].machine_profile, &o.inputs[1].machine_profile],
        [&o.inputs[0].source, &o.inputs[1].source],
        &o.comparison,
    ))
}
