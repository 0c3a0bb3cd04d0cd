//! `yardstick bench`: measure one layer directly, without a spec.

pub mod capacity;
pub mod eval;
pub mod exec;
pub mod micro;
pub mod scheduler;
pub mod serve;
pub mod train;

use crate::cli::GlobalOpts;
use crate::exit::Status;

/// Measure a system directly: `serve` drives an OpenAI-compatible server.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick bench serve --url http://127.0.0.1:8000 --model m --concurrency 1,8,32\n  \
yardstick bench micro memory gemm\n  \
yardstick bench exec --runs 10 -- python train.py\n  \
yardstick bench train --steps 50\n  \
yardstick bench eval --url http://127.0.0.1:8000 --model m --tasks arith,format\n  \
yardstick bench scheduler --jobs 20 --rate 2"
)]
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
    /// Scheduler admission: a burst of short Slurm jobs at a rate; sbatch time, start latency,
    /// jobs started per second against submitted.
    Scheduler(Box<scheduler::SchedulerArgs>),
}

/// Runs the selected benchmark.
pub fn run(args: BenchArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        BenchCommand::Serve(a) => serve::run(*a, g),
        BenchCommand::Exec(a) => exec::run(*a, g),
        BenchCommand::Train(a) => train::run(*a, g),
        BenchCommand::Micro(a) => micro::run(*a, g),
        BenchCommand::Eval(a) => eval::run(*a, g),
        BenchCommand::Scheduler(a) => scheduler::run(*a, g),
    }
}

/// One device's ceilings from a `yardstick bench micro --json` file (or a `yardstick import
/// --json` one), as `yardstick_analysis::roofline::ceilings_from_micro_json` reads it; `what`
/// names the argument in errors (`--micro`).
pub fn ceilings_from_micro_file(
    path: &std::path::Path,
    dtype: &str,
    what: &str,
) -> anyhow::Result<(yardstick_analysis::roofline::Ceilings, String)> {
    let read = std::fs::read(path).map_err(|e| e.to_string());
    read.and_then(|bytes| {
        yardstick_analysis::roofline::ceilings_from_micro_json(
            &bytes,
            dtype,
            &path.display().to_string(),
        )
        .map_err(|e| e.to_string())
    })
    .map_err(|why| {
        crate::exit::invalid(
            format!("{what} {}: {why}", path.display()),
            Some("write it with `yardstick bench micro memory gemm --json > micro.json`"),
        )
    })
}
