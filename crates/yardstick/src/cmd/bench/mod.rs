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
/// --json` one): the best `gemm.<dtype>.N` of the workload's `dtype` (bf16 for bf16 and mixed,
/// falling back to f32, said so, when the file has no bf16 GEMM) and `memory.triad`, with a
/// description of the source.
/// `what` names the argument in errors (`--micro`).
pub fn ceilings_from_micro_file(
    path: &std::path::Path,
    dtype: &str,
    what: &str,
) -> anyhow::Result<(yardstick_analysis::roofline::Ceilings, String)> {
    let bad = |why: String| {
        crate::exit::invalid(
            format!("{what} {}: {why}", path.display()),
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
    let gemm_dtype = yardstick_analysis::roofline::gemm_dtype(dtype)
        .ok_or_else(|| bad(format!("no GEMM element type for dtype `{dtype}`")))?;
    let (c, src) = yardstick_analysis::roofline::Ceilings::from_micro_for(
        v["machine_profile"].as_str().unwrap_or("this machine"),
        dtype,
        triples,
    )
    .ok_or_else(|| {
        bad(format!(
            "needs a gemm.{gemm_dtype}.N and a memory.triad result (`bench micro memory gemm`)"
        ))
    })?;
    let note = src.note.map_or(String::new(), |n| format!("; {n}"));
    Ok((
        c,
        format!(
            "measured ({}: {}, {}{note})",
            path.display(),
            src.peak,
            src.memory
        ),
    ))
}
