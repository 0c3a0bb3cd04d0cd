//! The command-line surface (clap derive). Names are stable: scripts and CI depend on them.

use std::sync::atomic::{AtomicI8, Ordering};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cmd;

/// yardstick — benchmark harness for AI systems.
///
/// Describe a benchmark once (a BenchmarkRun spec), validate it against the methodology, run it,
/// store immutable signed results, gate regressions against a baseline, and report.
///
/// Exit codes: 0 success/PASS, 1 runtime failure, 2 invalid input, 3 gate FAIL, 4 INCONCLUSIVE.
#[derive(Debug, Parser)]
#[command(
    name = "yardstick",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

/// Options accepted by every command.
#[derive(Debug, Args)]
pub struct GlobalOpts {
    /// Print machine-readable JSON on stdout (progress and logs stay on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// Print less: only results and errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When to use colour. `auto` colours only a terminal and honours NO_COLOR.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,
    /// How progress, warnings and errors are written on stderr: `text` for people, `json` for
    /// log collectors (one object per line: `ts`, `level`, `message` and the join keys —
    /// `node`, the Slurm job or pod when there is one, and during a run `run_id`, `benchmark`,
    /// `point` and `replicate`).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = LogFormat::Text,
        value_name = "FORMAT",
        env = "YARDSTICK_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
}

/// How diagnostics are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

static VERBOSITY: AtomicI8 = AtomicI8::new(0);

/// -1 quiet, 0 normal, >0 verbose.
pub fn verbosity() -> i8 {
    VERBOSITY.load(Ordering::Relaxed)
}

impl GlobalOpts {
    /// Installs the global settings (colour, verbosity) for the process.
    pub fn apply(&self) {
        let choice = match self.color {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        };
        choice.write_global();
        let v = if self.quiet {
            -1
        } else {
            self.verbose.min(100) as i8
        };
        VERBOSITY.store(v, Ordering::Relaxed);
        crate::output::set_json_logs(self.log_format == LogFormat::Json);
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check BenchmarkRun specs against the schema and the methodology rules.
    Validate(cmd::validate::ValidateArgs),
    /// Write a commented, valid BenchmarkRun spec to start from.
    Init(cmd::init::InitArgs),
    /// Execute a BenchmarkRun into the store (plan, env capture, runners, artifacts, facts).
    Run(cmd::run::RunArgs),
    /// One command per question: a designed experiment, stored as a run, ending in a diagnosis
    /// (`playbook list`, `playbook tail-latency --url URL --model M`).
    Playbook(cmd::playbook::PlaybookArgs),
    /// Check a stored run's hashes and signature.
    Verify(cmd::verify::VerifyArgs),
    /// Create an ed25519 signing key pair for signed provenance.
    Keygen(cmd::keygen::KeygenArgs),
    /// The keys a store trusts, and whether it refuses runs they did not sign.
    Trust(cmd::trust::TrustArgs),
    /// Print the JSON Schema of the BenchmarkRun spec.
    Schema(cmd::schema::SchemaArgs),
    /// List the metric catalogue: unit, direction, gate class and definition of every metric.
    Metrics(cmd::metrics::MetricsArgs),
    /// Run an OpenAI-compatible LLM server simulator with a latency model and a ground-truth log.
    Sim(cmd::sim::SimArgs),
    /// Measure a system directly: `bench serve` load-tests an OpenAI-compatible server.
    Bench(cmd::bench::BenchArgs),
    /// Summarise and compare samples of numbers (a ministat for benchmarks).
    Stats(cmd::stats::StatsArgs),
    /// Print the environment capture and the machine-profile key (`--json` for all fields).
    Env(cmd::env::EnvArgs),
    /// Store nccl-tests, fio, STREAM or LLM-serving benchmark results as a run.
    ///
    /// nccl-tests, fio JSON, STREAM: each FILE is one run of the tool and a replicate of one
    /// point (`import.<tool>`), under the micro layer's names where the measurement is the same
    /// (`memory.triad`, `storage.seq_read`), else `nccl.<op>.busbw.<bytes>`, `fio.<job>.<dir>`.
    ///
    /// genai-bench, aiperf (their output directory or main JSON), vllm-bench, guidellm (their
    /// JSON): one import is one run; every (scenario, load level) the tool measured is a serve
    /// point `import.<tool>/<scenario>/<concurrency|rate>=<n>` with one replicate, which compare,
    /// gate, report and the dashboard read like a `yardstick run`. Figures go under our ids only
    /// where the definition is ours: ttft_ms, tpot_ms = (e2e - ttft) / (tokens - 1) (genai-bench
    /// tpot, AIPerf inter_token_latency, vLLM tpot, GuideLLM inter_token_latency_ms; never
    /// GuideLLM's time_per_output_token_ms, which includes the first token), itl_ms = every gap
    /// (AIPerf inter_chunk_latency, vLLM itl), e2e_ms, the throughputs, requests, duration_s; in
    /// ms. Caveat: the tools time TTFT from their own request start, yardstick from the
    /// scheduled send, so under an open loop the two differ by client queueing. The run's notes
    /// and docs/import.md say where each figure comes from.
    ///
    /// The files are kept verbatim under `imports/` in the run directory. Say where the tool ran
    /// so the run gets its machine profile: --here, --env (a `yardstick env --json` taken
    /// there) or --profile.
    Import(cmd::import::ImportArgs),
    /// List and inspect stored runs (`runs list`, `runs show ID`).
    Runs(cmd::runs::RunsArgs),
    /// Run a read-only SQL query against the warehouse.
    Query(cmd::query::QueryArgs),
    /// A metric of a benchmark over its stored runs, and where it changed (`--changes`).
    Trend(cmd::trend::TrendArgs),
    /// Export the warehouse's facts as Hive-partitioned Parquet (`--parquet DIR`).
    Export(cmd::export::ExportArgs),
    /// Drop raw samples and logs of old runs, keeping facts, manifests and hashes.
    Gc(cmd::gc::GcArgs),
    /// Save, list and show baselines (one reference run per machine profile and benchmark).
    Baseline(cmd::baseline::BaselineArgs),
    /// Compare two runs: differing spec/env fields, per-metric ratios with CIs.
    Compare(cmd::compare::CompareArgs),
    /// Gate a run against its baseline: exit 0 PASS/WARN, 3 FAIL, 4 INCONCLUSIVE.
    Gate(cmd::gate::GateArgs),
    /// Report a run (and a saved gate result): table, HTML with plots, Excel, Markdown, JUnit, CSV.
    Report(cmd::report::ReportArgs),
    /// Serve the store to a team: JSON API, OpenAPI document, tokens (`server token create`).
    Server(Box<cmd::server::ServerArgs>),
    /// Check that the nodes of a fleet measure alike (`nodes check FILE...`): slow nodes flagged.
    Nodes(cmd::nodes::NodesArgs),
    /// Run a spec on Kubernetes with Kueue: `k8s render` writes an Indexed Job (or CronJob) and
    /// its ConfigMap and Service; `k8s submit` applies them and follows the Job.
    K8s(cmd::k8s::K8sArgs),
    /// Push a finished run to a team server (`yardstick server`): verified, stored, indexed.
    Push(cmd::push::PushArgs),
    /// Serve the store's runs as Model Context Protocol tools over stdio, for an AI assistant.
    Mcp(cmd::mcp::McpArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(cmd::shell::CompletionsArgs),
    /// Write man pages: yardstick(1) and one per command, to a directory or standard output.
    Man(cmd::shell::ManArgs),
}
