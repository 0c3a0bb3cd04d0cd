//! `yardstick bench`: measure one layer directly, without a spec.

pub mod eval;
pub mod exec;
pub mod micro;
pub mod serve;
pub mod train;

use crate::cli::GlobalOpts;
use crate::exit::Status;

/// Measure a system directly: `serve` drives an OpenAI-compatible server.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmark kinds.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput.
    Serve(Box<serve::ServeArgs>),
    /// Benchmark any command as a whole process (hyperfine-like), plus its metric-protocol steps.
    Exec(Box<exec::ExecArgs>),
    /// Train the built-in reference transformer on CPU: step time, tokens/s, MFU, loss.
    Train(Box<train::TrainArgs>),
    /// Micro layer: memory bandwidth, GEMM FLOP/s, storage and network, with CIs.
    Micro(Box<micro::MicroArgs>),
    /// Accuracy eval: scored probe tasks, Wilson CIs, determinism across repeats, McNemar compare.
    Eval(Box<eval::EvalArgs>),
}

/// Runs the selected benchmark.
pub fn run(args: BenchArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        BenchCommand::Serve(a) => serve::run(*a, g),
        BenchCommand::Exec(a) => exec::run(*a, g),
        BenchCommand::Train(a) => train::run(*a, g),
        BenchCommand::Micro(a) => micro::run(*a, g),
        BenchCommand::Eval(a) => eval::run(*a, g),
    }
}

/// One device's ceilings from a `yardstick bench micro --json` file (or a `yardstick import
/// --json` one): the best `gemm.<dtype>.N` and `memory.triad`, with a description of the source.
pub fn ceilings_from_micro_file(
    path: &std::path::Path,
    dtype: &str,
) -> anyhow::Result<(yardstick_env::roofline::Ceilings, String)> {
    let bad = |why: String| {
        crate::exit::invalid(
            format!("--micro {}: {why}", path.display()),
            Some("write it with `yardstick bench micro memory gemm --json > micro.json`"),
        )
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    let results = v["results"]
        .as_array()
        .ok_or_else(|| bad("no `results` list".into()))?;
    let triples: Vec<(&str, f64, &str)> = results
        .iter()
        .filter_map(|r| {
            Some((
                r["name"].as_str()?,
                r["value"].as_f64()?,
                r["unit"].as_str()?,
            ))
        })
        .collect();
    let gemm_dtype = match dtype.to_ascii_lowercase().as_str() {
        "fp32" | "f32" | "float32" | "tf32" => "f32",
        "fp64" | "f64" | "float64" => "f64",
        "bf16" | "bfloat16" | "mixed" => "bf16",
        "fp16" | "f16" | "half" => "f16",
        other => return Err(bad(format!("no GEMM element type for dtype `{other}`"))),
    };
    let (c, src) = yardstick_env::roofline::Ceilings::from_micro(
        v["machine_profile"].as_str().unwrap_or("this machine"),
        gemm_dtype,
        triples,
    )
    .ok_or_else(|| {
        bad(format!(
            "needs a gemm.{gemm_dtype}.N and a memory.triad result (`bench micro memory gemm`)"
        ))
    })?;
    Ok((
        c,
        format!(
            "measured ({}: {}, {})",
            path.display(),
            src.peak,
            src.memory
        ),
    ))
}

/// Prints a bottleneck classification (for `bench exec` and `bench train`).
pub fn print_bottleneck(
    out: &mut impl std::io::Write,
    b: &yardstick_exec::bottleneck::TrainingBottleneck,
    indent: &str,
) {
    use crate::output::style;
    let name = serde_json::to_value(b.classification.bottleneck)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{indent}bottleneck: {}{name}{}  {}(ceilings: {:.3e} FLOP/s, {:.3e} B/s, {}){}",
        style::BOLD,
        style::RESET,
        style::DIM,
        b.ceilings.peak_flops,
        b.ceilings.memory_bw,
        b.ceilings_source,
        style::RESET
    );
    for e in &b.classification.evidence {
        let _ = writeln!(out, "{indent}  - {e}");
    }
}
