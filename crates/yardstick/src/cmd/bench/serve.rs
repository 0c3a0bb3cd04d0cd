//! `yardstick bench serve`: wiring of the load generator (crate `yardstick-load`) to the CLI.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use yardstick_load::merge::PointHistograms;
use yardstick_load::shard_files::{self, RunFlags};
use yardstick_load::{
    Api, Arrival, ClientConfig, LoadModel, PointResult, Progress, ServeBench, Slo, StopRule,
};
use yardstick_load::{Mlperf, MlperfKind, MlperfRequest, MlperfResult};
use yardstick_run::serve::ParquetRecords;

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{self, Status};
use crate::output;

/// Load-test an OpenAI-compatible server and report serving metrics.
///
/// Every latency is measured from the time the load model scheduled the request (no coordinated
/// omission); client queueing is reported separately. One point per scenario × load level.
/// Without --max-requests a point runs for --max-duration (default 60s).
///
/// Many clients: run `--shard i/N --output DIR_i` on N workers (same flags and seed, ideally
/// `--start-at` the same time), then `--merge DIR_0 .. DIR_N-1 [--output DIR]` recomputes the
/// summary from the union of their raw records, exactly as one machine would, and adds their
/// HDR histograms.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick bench serve --url http://127.0.0.1:8000 --model m --concurrency 1,8,32\n  \
yardstick bench serve --url http://localhost:8000 --model m --rate 2,4,8 --scenario 'D(512,128)'\n  \
yardstick bench serve --url http://localhost:8000 --model m --find-capacity --slo-ttft-ms 500\n  \
yardstick bench serve --url https://api.example.com --model m --bearer-env OPENAI_API_KEY\n  \
yardstick bench serve --url http://localhost:8000 --model m --output results/ --json\n  \
yardstick bench serve --url http://localhost:8000 --model m --trace t.csv --trace-format azure\n  \
yardstick bench serve --url http://localhost:8000 --model base=0.7 --model lora-a=0.3 --json\n  \
yardstick bench serve --url http://localhost:8000 --model m --kind tool-call=0.5 --kind json=0.5"
)]
pub struct ServeArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000 (`/v1` is added when missing).
    #[arg(long, required_unless_present_any = ["merge", "point_file"])]
    pub url: Option<String>,
    /// Model name to request. Repeat as NAME=WEIGHT for a mix (a base model and its LoRA
    /// adapters, say): each request's model is drawn from the seed in proportion to the
    /// weights (normalised; a missing weight is 1), and each point reports every model beside
    /// the whole (`per_model`).
    #[arg(long, value_name = "NAME[=WEIGHT]", required_unless_present_any = ["merge", "point_file", "models_from"])]
    pub model: Vec<String>,
    /// Models from FILE, one name per line (`#` comments and blank lines skipped): hundreds of
    /// LoRA adapters, say. Each has weight 1, or with --model-zipf S the k-th name's weight is
    /// 1/k^S (a few adapters take most requests, as in production).
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub models_from: Option<PathBuf>,
    /// Zipf exponent of --models-from's weights (S > 0; 1 is classic Zipf).
    #[arg(long, value_name = "S", requires = "models_from")]
    pub model_zipf: Option<f64>,
    /// API: chat, completions or embeddings.
    #[arg(long, default_value = "chat")]
    pub api: String,
    /// Traffic scenario (repeatable): D(in,out), N(mu,sd)/(mu,sd), U(min,max)/(min,max),
    /// U(min,max), E(tokens). Default: D(100,100), or E(100) with --api embeddings.
    #[arg(long = "scenario", value_name = "S")]
    pub scenarios: Vec<String>,
    /// Closed-loop concurrency levels, comma-separated.
    #[arg(long, value_delimiter = ',', conflicts_with = "rate")]
    pub concurrency: Vec<usize>,
    /// Open-loop request rates (req/s), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// Arrival process of --rate: poisson, constant or gamma.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Poisson)]
    pub arrival: ArrivalArg,
    /// Shape of gamma arrivals (1 = Poisson, < 1 burstier).
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// Cap on requests in flight under --rate (waiting counts as client queueing).
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Measured requests per point (after warm-up).
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Time budget per point, e.g. 60s, 500ms, 2m.
    #[arg(long)]
    pub max_duration: Option<String>,
    /// Requests at the start of each point excluded from metrics.
    #[arg(long, default_value_t = 0)]
    pub warmup_requests: u64,
    /// Also exclude requests scheduled within this time of each point's start, e.g. 10s.
    #[arg(long)]
    pub warmup_duration: Option<String>,
    /// Replay a request trace on its own clock: each request at its time, with its prompt and
    /// output lengths (and shared prompt blocks, from Mooncake hash ids). Formats:
    /// docs/traces.md. Replaces --scenario, --rate and --concurrency.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rate", "concurrency", "scenarios", "dataset", "sessions"])]
    pub trace: Option<PathBuf>,
    /// The trace's format.
    #[arg(long, value_name = "FORMAT", value_parser = ["mooncake", "azure", "burstgpt", "jsonl"], default_value = "jsonl", requires = "trace")]
    pub trace_format: String,
    /// Replay this many times faster than recorded (0.5: half speed).
    #[arg(long, value_name = "X", default_value_t = 1.0, requires = "trace")]
    pub speedup: f64,
    /// Replay only the requests that arrived in this window of the trace, FROM..TO after its
    /// first request (durations: 10m..20m, ..30s, 1h..).
    #[arg(long, value_name = "FROM..TO", requires = "trace")]
    pub trace_window: Option<String>,
    /// Send each request to the model its trace line names (BurstGPT's `Model`, our JSON lines'
    /// `model`) — the trace's model column as the model mix, reported per model — instead of
    /// --model (which lines without a model still get).
    #[arg(long, requires = "trace")]
    pub trace_models: bool,
    /// Rename a model of the trace to the one the server serves (repeatable), e.g.
    /// `--trace-model-map GPT-4=llama-70b`.
    #[arg(long, value_name = "FROM=TO", requires = "trace_models")]
    pub trace_model_map: Vec<String>,
    /// Prompts from a dataset: JSON lines ({"prompt": ..}) or ShareGPT JSON. Output lengths
    /// come from the scenario when it forces them (D, N, U(..)/(..)), else from the dataset.
    #[arg(long, value_name = "FILE")]
    pub dataset: Option<PathBuf>,
    /// Multi-turn sessions: each turn sends the conversation so far (with the answers the
    /// server gave) after a think time; --max-requests and --rate then count sessions. With
    /// --dataset, its conversations: ShareGPT JSON (every human turn), JSON lines of
    /// {"messages": [..]}, or JSON lines of turns {"session_id", "text", "output_tokens"?,
    /// "delay"? ms}. Implied by --turns, --think-time and --shared-prefix.
    #[arg(long, conflicts_with = "mlperf")]
    pub sessions: bool,
    /// Turns per synthetic session: `4`, or a range `2-6` drawn uniformly; each turn's lengths
    /// come from the scenario (a --dataset's conversations have their own turns).
    #[arg(long, value_name = "N|LO-HI", conflicts_with_all = ["mlperf", "dataset"])]
    pub turns: Option<String>,
    /// The user's think time before each later turn, ms: `1000`, `exp(1000)` (exponential
    /// with that mean) or `U(500,1500)`.
    #[arg(long, value_name = "MS", conflicts_with = "mlperf")]
    pub think_time: Option<String>,
    /// Tokens of a system prompt that every session starts with (a prefix servers can cache).
    #[arg(long, value_name = "TOKENS", conflicts_with = "mlperf")]
    pub shared_prefix: Option<u64>,
    /// A tokenizer.json (Hugging Face): prompts of exactly the scenario's counts of its tokens
    /// (running text of the bundled corpus, cut at a token boundary), and local output token
    /// counts checked against the server's usage.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// SLO on time to first token, ms (for goodput).
    #[arg(long)]
    pub slo_ttft_ms: Option<f64>,
    /// SLO on time per output token, ms (for goodput).
    #[arg(long)]
    pub slo_tpot_ms: Option<f64>,
    /// SLO on end-to-end latency, ms (for goodput).
    #[arg(long)]
    pub slo_e2e_ms: Option<f64>,
    /// Objectives of one model of a mix (repeatable): MODEL:ttft=MS[,tpot=MS][,e2e=MS], e.g.
    /// `--model-slo lora-a:ttft=800`. Each bound given replaces the point's (--slo-*) for that
    /// model's requests — in goodput, SLO attainment, the capacity search and each model's
    /// `slo_attainment` in `per_model`; bounds not given are the point's.
    #[arg(long = "model-slo", value_name = "MODEL:ttft=MS[,tpot=MS][,e2e=MS]")]
    pub model_slos: Vec<String>,
    /// Write raw per-request records (requests.parquet and requests.jsonl) and summary.json to DIR.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Ask for complete responses instead of SSE streams.
    #[arg(long)]
    pub no_stream: bool,
    /// Do not send ignore_eos/min_tokens (for servers that reject them).
    #[arg(long)]
    pub no_ignore_eos: bool,
    /// Request kind (repeatable, chat only): text, tool-call or json, as KIND or KIND=WEIGHT
    /// for a mix (`--kind tool-call=0.3 --kind json=0.2 --kind text=0.5`). A tool call sends
    /// `tools` with `tool_choice: required`, json sends `response_format: {type: json_schema}`;
    /// each answer is checked (the call names a tool and its arguments match its parameters;
    /// the JSON matches the schema) and every point reports each kind's valid rate with its
    /// 95 % interval (`per_kind`) and the quality goodput. Structured kinds do not force their
    /// output length: max_tokens is the scenario's output length as a ceiling.
    #[arg(long = "kind", value_name = "KIND[=WEIGHT]")]
    pub kinds: Vec<String>,
    /// The tools of --kind tool-call: OpenAI's `tools` array as JSON (or an object with a
    /// `tools` array). Default: one `get_weather(city, unit)` tool.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// The JSON Schema of --kind json (or OpenAI's `{name, schema}` wrapper). Default: a small
    /// order object (id, item, quantity, express, tags).
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    /// Send COUNT images of W×H pixels with every chat request, after its text, as PNG data
    /// URLs in `image_url` parts (e.g. 512x512, or 1024x768,2). Every image is distinct (seeded
    /// by the request), so a server's image cache cannot flatter it; each point reports the
    /// image bytes per request.
    #[arg(long, value_name = "WxH[,COUNT]")]
    pub image: Option<String>,
    /// Do not count the first prompts of each point at the server's tokenize endpoint
    /// (`/tokenize` on vLLM, SGLang and llama.cpp). By default, where the server has one, each
    /// point reports the server's count beside the planned one (`prompt_token_check`) and
    /// warns when they differ by more than 1 %.
    #[arg(long)]
    pub no_token_check: bool,
    /// Send no W3C `traceparent` header. By default every request carries one (a fresh trace
    /// id per request, the request id's 32 hex digits, sampled) beside `X-Request-Id`, and
    /// records keep it as `trace_id` with the server's own response id (`response_id`), so the
    /// server's traces and logs join on them.
    #[arg(long)]
    pub no_trace_context: bool,
    #[command(flatten)]
    pub hot: crate::cmd::hot::HotArgs,
    /// Accuracy under load: send SHARE of the requests as items of eval TASKS (bundled probe
    /// names — arith, format, extract, code — or .jsonl task files, comma-separated), e.g.
    /// `arith,format:0.2`. Each item is sent as `bench eval` sends it (temperature 0, a fixed
    /// seed) but streamed like the rest, graded by its task's scorer, and every point reports
    /// its accuracy with a Wilson 95 % interval overall and per task (`accuracy`); quality
    /// goodput then counts only requests that met every SLO with a correct answer. Across a
    /// sweep this answers "does quality fall as load rises?".
    #[arg(long, value_name = "TASKS:SHARE")]
    pub eval_mix: Option<String>,
    /// Maximum output tokens of each eval item of --eval-mix (a ceiling, not forced).
    #[arg(long, default_value_t = 128, value_name = "N")]
    pub eval_max_tokens: u64,
    /// Give up on a request this long after it was sent, e.g. 600s.
    #[arg(long, default_value = "600s")]
    pub request_timeout: String,
    /// Environment variable holding a bearer token (the token is never printed or stored).
    #[arg(long, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// PEM file of CA certificates to trust for an https URL, beside the public (webpki) roots:
    /// a private CA or a self-signed endpoint. Certificates are always verified.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,
    /// Try again requests the server turns away with these statuses, as a production client
    /// does (e.g. `429,503`): wait what its `Retry-After` says, else back off exponentially
    /// from --retry-backoff. Latencies still count from when each request was scheduled. Off
    /// by default: a refusal is the request's failure.
    #[arg(long, value_name = "STATUSES", value_delimiter = ',')]
    pub retry_on: Vec<u16>,
    /// Attempts per request at most, the first included (with --retry-on).
    #[arg(long, default_value_t = 4, value_name = "N", requires = "retry_on")]
    pub max_attempts: u32,
    /// The wait before the second attempt when there is no `Retry-After` to honour, doubled
    /// for each further attempt (with --retry-on).
    #[arg(
        long,
        default_value = "500ms",
        value_name = "DURATION",
        requires = "retry_on"
    )]
    pub retry_backoff: String,
    /// Back off without reading the server's `Retry-After` (with --retry-on): how a naive
    /// client behaves.
    #[arg(long, requires = "retry_on")]
    pub ignore_retry_after: bool,
    /// Seed of request plans and arrivals.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run shard i of N of every point's plan, e.g. 0/4: under --rate every N-th arrival of
    /// the same seeded schedule; under --concurrency C every N-th request with C/N streams
    /// (the first C%N shards one more), so N shards together are exactly the whole point.
    #[arg(long, value_name = "i/N")]
    pub shard: Option<String>,
    /// Start the first point's schedule at this wall-clock time, unix seconds (e.g.
    /// `$(($(date +%s)+5))`), so shards on several machines start together.
    #[arg(long, value_name = "UNIX_S")]
    pub start_at: Option<f64>,
    /// Merge the --output directories of the N shards of one run (summary.json,
    /// requests.parquet, histograms.json) instead of running; with --output DIR, writes the
    /// merged records, histograms and summary there.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["url", "shard", "mlperf"])]
    pub merge: Vec<PathBuf>,
    /// One serve point of a run, from the file the run wrote for its shards (the point, the
    /// target and the seed; `yardstick run` on Slurm or pods starts each shard with it and
    /// `--shard I/N --start-at T --output DIR`).
    #[arg(long, hide = true, value_name = "FILE", conflicts_with_all = ["url", "model", "merge"])]
    pub point_file: Option<PathBuf>,
    /// Runtime worker threads (default: one per core).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Run an MLPerf LoadGen scenario instead of a sweep: single-stream, multi-stream, server
    /// (needs one --rate) or offline (needs --max-requests). See docs/metrics.md.
    #[arg(long, value_enum, value_name = "SCENARIO")]
    pub mlperf: Option<MlperfArg>,
    /// Requests issued together per query of --mlperf multi-stream.
    #[arg(long, default_value_t = 8)]
    pub samples_per_query: usize,
    /// Bound on p99 TTFT of --mlperf server, ms (default 2000).
    #[arg(long)]
    pub ttft_bound_ms: Option<f64>,
    /// Bound on p99 TPOT of --mlperf server, ms (default 200).
    #[arg(long)]
    pub tpot_bound_ms: Option<f64>,
    /// Find the highest load at which the SLO (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms)
    /// holds, instead of a sweep: probes bracket it and bisect the bracket; each probe's SLO is
    /// a test at --confidence, measured longer when too few requests decide it.
    #[arg(long, conflicts_with_all = ["mlperf", "shard", "rate", "concurrency"])]
    pub find_capacity: bool,
    /// What --find-capacity varies: rate (open loop, with --arrival) or concurrency.
    #[arg(long, value_enum, default_value_t = CapacityAxisArg::Rate, value_name = "AXIS")]
    pub capacity_axis: CapacityAxisArg,
    /// --find-capacity: every objective at this percentile (default 99).
    #[arg(long, value_name = "P", conflicts_with = "slo_attainment")]
    pub slo_percentile: Option<f64>,
    /// --find-capacity: this share of requests meets every objective at once, e.g. 0.99.
    #[arg(long, value_name = "SHARE")]
    pub slo_attainment: Option<f64>,
    /// --find-capacity: confidence of each probe's test.
    #[arg(long, default_value_t = 0.95, value_name = "C")]
    pub confidence: f64,
    /// --find-capacity: the first load probed (default 10 req/s, or 4 streams).
    #[arg(long, value_name = "LOAD")]
    pub capacity_start: Option<f64>,
    /// --find-capacity: the highest load probed.
    #[arg(long, default_value_t = 4096.0, value_name = "LOAD")]
    pub capacity_max: f64,
    /// --find-capacity (rates): stop when the bracket is narrower than this share of its top.
    #[arg(long, default_value_t = 0.05, value_name = "SHARE")]
    pub capacity_precision: f64,
    /// --find-capacity: measured requests per probe (after --warmup-requests).
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub probe_requests: u64,
    /// --find-capacity: most requests a probe pools while its test is undecided (default 4×).
    #[arg(long, value_name = "N")]
    pub max_probe_requests: Option<u64>,
    /// --find-capacity: most probes in all.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub max_probes: usize,
    /// Scrape the server's Prometheus metrics during every point: `auto` (the URL's
    /// `/metrics` when it answers), `off`, or a URL. Running and waiting requests, KV-cache
    /// usage, preemptions, prefix-cache hit rate and the server's own TTFT go in each point's
    /// summary (`server_*`), with the client's TTFT minus the server's.
    #[arg(long, default_value = "auto", value_name = "URL|auto|off")]
    pub server_metrics: String,
    /// Dollars per accelerator-hour of the deployment: each point then reports dollars per
    /// million output tokens and per thousand requests (and --find-capacity at the capacity).
    #[arg(long, value_name = "DOLLARS")]
    pub cost_per_accelerator_hour: Option<f64>,
    /// Accelerators the deployment uses, for --cost-per-accelerator-hour.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        requires = "cost_per_accelerator_hour"
    )]
    pub accelerators: u32,
    /// Measure energy per output token from this machine's NVIDIA GPUs (NVML total energy) or,
    /// without them, the CPU's RAPL counters (/sys/class/powercap, readable by root); where
    /// there are none, each point says why.
    #[arg(long)]
    pub energy: bool,
    /// Time between two scrapes of --server-metrics, e.g. 500ms, 1s.
    #[arg(long, default_value = "500ms", value_name = "DURATION")]
    pub scrape_interval: String,
}

/// `--capacity-axis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CapacityAxisArg {
    Rate,
    Concurrency,
}

/// `--arrival`: the arrival process of an open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
}

/// `--mlperf`: an MLPerf LoadGen scenario (`singlestream` and `multistream` are accepted too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MlperfArg {
    #[value(alias = "singlestream")]
    SingleStream,
    #[value(alias = "multistream")]
    MultiStream,
    Server,
    Offline,
}

/// The MLPerf scenario asked for, checked against the other flags.
/// `--shard I/N` (the whole point without it).
fn retry_of(args: &ServeArgs) -> anyhow::Result<Option<yardstick_load::RetryPolicy>> {
    if args.retry_on.is_empty() {
        return Ok(None);
    }
    if let Some(st) = args.retry_on.iter().find(|s| !(400..=599).contains(*s)) {
        return Err(exit::invalid(
            format!("--retry-on {st}: not an HTTP error status (400-599)"),
            Some("servers turn requests away with 429 (too many requests) or 503 (unavailable)"),
        ));
    }
    if !(2..=20).contains(&args.max_attempts) {
        return Err(exit::invalid(
            format!(
                "--max-attempts {}: outside 2..=20 (the first attempt counts)",
                args.max_attempts
            ),
            Some("use --max-attempts 4: one attempt and three retries"),
        ));
    }
    Ok(Some(yardstick_load::RetryPolicy {
        on: args.retry_on.clone(),
        max_attempts: args.max_attempts,
        honour_retry_after: !args.ignore_retry_after,
        backoff: crate::cmd::parse_duration("retry-backoff", &args.retry_backoff)?,
        ..Default::default()
    }))
}

fn shard_of(args: &ServeArgs) -> anyhow::Result<(u64, u64)> {
    match &args.shard {
        Some(s) => parse_shard(s),
        None => Ok((0, 1)),
    }
}

/// `--start-at T`: the first point's schedule starts at this unix time.
fn start_at_of(args: &ServeArgs) -> anyhow::Result<Option<std::time::SystemTime>> {
    match args.start_at {
        Some(t) if t.is_finite() && t >= 0.0 => {
            Ok(Some(std::time::UNIX_EPOCH + Duration::from_secs_f64(t)))
        }
        Some(t) => Err(exit::invalid(
            format!("--start-at: `{t}` is not a unix time in seconds"),
            None,
        )),
        None => Ok(None),
    }
}

fn mlperf_of(args: &ServeArgs) -> anyhow::Result<Option<Mlperf>> {
    MlperfRequest {
        kind: args.mlperf.map(|k| match k {
            MlperfArg::SingleStream => MlperfKind::SingleStream,
            MlperfArg::MultiStream => MlperfKind::MultiStream,
            MlperfArg::Server => MlperfKind::Server,
            MlperfArg::Offline => MlperfKind::Offline,
        }),
        rates: &args.rate,
        concurrency_given: !args.concurrency.is_empty(),
        sharded: args.shard.is_some(),
        samples_per_query: args.samples_per_query,
        ttft_bound_ms: args.ttft_bound_ms,
        tpot_bound_ms: args.tpot_bound_ms,
        max_requests: args.max_requests,
    }
    .resolve()
    .map_err(exit::lib_error)
}

/// Reads and checks `--trace` (windowed by `--trace-window`) and says what it holds: requests,
/// span, mean rate at the speed-up, and the theoretical prefix-cache hit rate of its blocks.
fn read_trace(args: &ServeArgs, file: &Path) -> anyhow::Result<yardstick_load::trace::Trace> {
    use yardstick_load::trace::{Trace, TraceFormat};
    if !(args.speedup.is_finite() && args.speedup > 0.0) {
        return Err(exit::invalid(
            format!("--speedup must be > 0, not {}", args.speedup),
            Some("e.g. --speedup 2 replays twice as fast"),
        ));
    }
    let format = TraceFormat::parse(&args.trace_format).expect("clap checked the format");
    let mut t = Trace::load(file, format).map_err(exit::lib_error)?;
    if let Some(w) = &args.trace_window {
        let (from, to) = w.split_once("..").ok_or_else(|| {
            exit::invalid(
                format!("--trace-window {w:?} is not FROM..TO"),
                Some("e.g. --trace-window 10m..20m, ..30s or 1h.."),
            )
        })?;
        let ms = |part: &str| -> anyhow::Result<Option<f64>> {
            if part.is_empty() {
                return Ok(None);
            }
            Ok(Some(
                crate::cmd::parse_duration("trace-window", part)?.as_secs_f64() * 1e3,
            ))
        };
        t = t.window(ms(from)?, ms(to)?).map_err(exit::lib_error)?;
    }
    if args.trace_models {
        let mut map = std::collections::BTreeMap::new();
        for m in &args.trace_model_map {
            let (from, to) = m
                .split_once('=')
                .filter(|(f, t)| !f.is_empty() && !t.is_empty())
                .ok_or_else(|| {
                    exit::invalid(
                        format!("--trace-model-map `{m}` is not FROM=TO"),
                        Some("e.g. --trace-model-map GPT-4=llama-70b"),
                    )
                })?;
            if map.insert(from.to_string(), to.to_string()).is_some() {
                return Err(exit::invalid(
                    format!("--trace-model-map renames `{from}` twice"),
                    None,
                ));
            }
        }
        t = t.send_models(&map).map_err(exit::lib_error)?;
        let shares: Vec<String> = t
            .model_shares()
            .iter()
            .take(6)
            .map(|(m, s)| format!("{m} {:.0} %", s * 100.0))
            .collect();
        output::info(&format!("trace models: {}", shares.join(", ")));
    }
    let hit = t
        .prefix_hit_rate(None)
        .map(|h| {
            format!(
                ", prefix-cache hit rate at most {:.1} % (every block kept)",
                h * 100.0
            )
        })
        .unwrap_or_default();
    output::info(&format!(
        "trace {}: {} requests over {} ({} at x{}){hit}",
        file.display(),
        t.requests.len(),
        yardstick_spec::human::human(t.span_s() / args.speedup, "s"),
        yardstick_spec::human::human(
            t.requests.len() as f64 / (t.span_s() / args.speedup).max(1e-3),
            "req/s"
        ),
        args.speedup,
    ));
    Ok(t)
}

/// `--shard i/N` (yardstick-run's reader: the same grammar as `run --shard`).
fn parse_shard(s: &str) -> anyhow::Result<(u64, u64)> {
    yardstick_run::pods::parse_shard(s)
        .map(|(i, n)| (u64::from(i), u64::from(n)))
        .map_err(|e| exit::invalid(format!("--shard: {e}"), Some("e.g. --shard 0/4")))
}

/// The models of `--models-from FILE` (one name per line), weighted 1 or by `--model-zipf S`
/// (the k-th name 1/k^S); bad input exits 2 with a hint.
fn models_from(path: &Path, zipf: Option<f64>) -> anyhow::Result<yardstick_load::plan::ModelMix> {
    let pairs = yardstick_load::plan::read_model_names(path, zipf).map_err(|e| {
        exit::invalid(
            format!("--models-from: {e}"),
            Some("one model name per line; --model-zipf S with S above 0"),
        )
    })?;
    yardstick_load::plan::ModelMix::new(pairs).map_err(|e| {
        exit::invalid(
            format!("--models-from {}: {e}", path.display()),
            Some("name each model once"),
        )
    })
}

/// The models of `--model NAME[=WEIGHT]` (repeated); bad input exits 2 with a hint.
fn model_mix(items: &[String]) -> anyhow::Result<yardstick_load::plan::ModelMix> {
    // A single model without a weight is taken as written (its name may hold `=`).
    if let [one] = items
        && !one.contains('=')
    {
        return yardstick_load::plan::ModelMix::new(vec![(one.clone(), 1.0)])
            .map_err(|e| exit::invalid(format!("--model: {e}"), None));
    }
    yardstick_load::plan::ModelMix::parse(items).map_err(|e| {
        exit::invalid(
            format!("--model: {e}"),
            Some("each --model is NAME or NAME=WEIGHT with a weight above 0 and a name given once, e.g. --model base=0.6 --model lora-a=0.4"),
        )
    })
}

/// The request kinds of `--kind KIND[=WEIGHT]` (repeated) with `--tools` and `--json-schema`;
/// bad input exits 2 with a hint.
fn kind_mix(args: &ServeArgs) -> anyhow::Result<Option<Arc<yardstick_load::kinds::KindMix>>> {
    use yardstick_load::kinds::{KindError, KindFiles, KindMix};
    if args.kinds.is_empty() {
        if args.tools.is_some() || args.json_schema.is_some() {
            return Err(exit::invalid(
                "--tools and --json-schema describe the answers of --kind tool-call and --kind json",
                Some("add --kind tool-call or --kind json"),
            ));
        }
        return Ok(None);
    }
    let files = KindFiles {
        tools: args.tools.as_deref(),
        schema: args.json_schema.as_deref(),
    };
    let mix = KindMix::parse(&args.kinds, &files).map_err(|e| {
        let hint = match e {
            KindError::File { .. } => None,
            _ => Some(
                "each --kind is text, tool-call or json, alone or as KIND=WEIGHT, e.g. --kind tool-call=0.5 --kind text=0.5",
            ),
        };
        exit::invalid(format!("--kind: {e}"), hint)
    })?;
    Ok(Some(Arc::new(mix)))
}

/// The objectives of single models (`--model-slo`), each naming a model the run sends.
fn model_slos(
    args: &ServeArgs,
    mix: Option<&yardstick_load::plan::ModelMix>,
) -> anyhow::Result<std::collections::BTreeMap<String, yardstick_load::summary::SloBounds>> {
    let mut out = std::collections::BTreeMap::new();
    let names = mix.map(|m| m.names()).unwrap_or_default();
    for s in &args.model_slos {
        let (name, b) = yardstick_load::summary::SloBounds::parse_for_model(s).map_err(|e| {
            exit::invalid(
                format!("--model-slo: {e}"),
                Some("e.g. --model-slo lora-a:ttft=800,tpot=60"),
            )
        })?;
        if !names.contains(&name) {
            let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
            return Err(exit::invalid(
                format!("--model-slo: the model `{name}` is not one the run sends"),
                Some(&format!("models: {}", shown.join(", "))),
            ));
        }
        if out.insert(name.clone(), b).is_some() {
            return Err(exit::invalid(
                format!("--model-slo: the model `{name}` is given twice"),
                None,
            ));
        }
    }
    Ok(out)
}

/// The eval items of `--eval-mix TASKS:SHARE`; bad input exits 2 with a hint.
fn eval_mix(args: &ServeArgs) -> anyhow::Result<Option<Arc<yardstick_load::evalmix::EvalMix>>> {
    let Some(arg) = &args.eval_mix else {
        return Ok(None);
    };
    let (tasks, share) = yardstick_load::evalmix::parse_arg(arg)
        .map_err(|e| exit::invalid(e.to_string(), Some("e.g. --eval-mix arith,format:0.2")))?;
    let mix =
        yardstick_eval::load_mix(&tasks, share, args.eval_max_tokens, Vec::new()).map_err(|e| {
            exit::invalid(
                format!("--eval-mix: {e}"),
                Some(
                    "tasks are bundled probes (arith, format, extract, code) or .jsonl task files",
                ),
            )
        })?;
    Ok(Some(Arc::new(mix)))
}

/// Runs the sweep and prints or writes the results.
pub fn run(args: ServeArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if !args.merge.is_empty() {
        return merge(&args, g);
    }
    let job = match &args.point_file {
        Some(f) => Some(yardstick_load::point::ShardJob::read(f).map_err(exit::lib_error)?),
        None => None,
    };
    let url = match &job {
        Some(j) => j.url.clone(),
        None => args.url.clone().expect("clap requires --url"),
    };
    let mix = match &job {
        Some(_) => None,
        None => Some(match &args.models_from {
            Some(f) => models_from(f, args.model_zipf)?,
            None => model_mix(&args.model)?,
        }),
    };
    let model = match (&job, &mix) {
        (Some(j), _) => j.point.model.clone(),
        (None, Some(m)) if !m.is_mix() => m.names()[0].clone(),
        // A mix: the summary's `model` names it as given; requests name their own.
        (None, _) => match &args.models_from {
            Some(f) => format!(
                "{} models from {}{}",
                mix.as_ref().map_or(0, |m| m.names().len()),
                f.display(),
                args.model_zipf
                    .map_or(String::new(), |s| format!(" (zipf {s})"))
            ),
            None => args.model.join(","),
        },
    };
    let api: Api = match &job {
        Some(j) => j.point.api,
        None => args
            .api
            .parse()
            .map_err(|e: yardstick_load::openai::UnknownApi| exit::invalid(e.to_string(), None))?,
    };
    let mlperf = match &job {
        Some(_) => None,
        None => mlperf_of(&args)?,
    };
    let arrival = match args.arrival {
        ArrivalArg::Poisson => Arrival::Poisson,
        ArrivalArg::Constant => Arrival::Constant,
        ArrivalArg::Gamma => Arrival::Gamma {
            burstiness: args.burstiness,
        },
    };
    let trace = match &args.trace {
        Some(f) => Some(std::sync::Arc::new(read_trace(&args, f)?)),
        None => None,
    };
    let loads: Vec<LoadModel> = if let Some(t) = &trace {
        // Its mean rate sizes the connection pool; the times are the trace's.
        vec![yardstick_load::trace_load(
            t,
            args.speedup,
            args.max_in_flight,
        )]
    } else if let Some(m) = mlperf {
        vec![m.load_model(args.max_requests).map_err(exit::lib_error)?]
    } else if !args.rate.is_empty() {
        args.rate
            .iter()
            .map(|&rate| LoadModel::Rate {
                rate,
                arrival,
                max_in_flight: args.max_in_flight,
            })
            .collect()
    } else if !args.concurrency.is_empty() {
        args.concurrency
            .iter()
            .map(|&n| LoadModel::Concurrency(n))
            .collect()
    } else {
        vec![LoadModel::Concurrency(1)]
    };
    let max_duration = match &args.max_duration {
        Some(d) => Some(crate::cmd::parse_duration("max-duration", d)?),
        None if args.max_requests.is_none() => Some(Duration::from_secs(60)),
        None => None,
    };
    let scenarios = if trace.is_some() || (args.scenarios.is_empty() && args.dataset.is_some()) {
        Vec::new() // one point, lengths from the dataset
    } else if args.scenarios.is_empty() {
        vec![if api == Api::Embeddings {
            "E(100)".to_string()
        } else {
            "D(100,100)".to_string()
        }]
    } else {
        args.scenarios.clone()
    };
    let cancel =
        crate::interrupt::token("interrupted: draining requests in flight (Ctrl-C again to abort)");
    let bench = if let Some(j) = &job {
        // A planned point: the one conversion of a point to a bench, this shard's part of it.
        let mut b = j
            .point
            .bench(&url, j.seed, cancel)
            .map_err(exit::lib_error)?;
        b.eval = yardstick_run::serve::eval_mix_of(&j.point)
            .map_err(|e| exit::invalid(format!("evalMix: {e}"), None))?;
        b.shard = shard_of(&args)?;
        b.start_at = start_at_of(&args)?;
        b
    } else {
        ServeBench {
            client: ClientConfig {
                url: url.clone(),
                api,
                stream: !args.no_stream,
                request_timeout: crate::cmd::parse_duration(
                    "request-timeout",
                    &args.request_timeout,
                )?,
                bearer_env: args.bearer_env.clone(),
                max_idle: 1,
                ca_cert: args.ca_cert.clone(),
                retry: retry_of(&args)?,
            },
            model: model.clone(),
            scenarios,
            loads,
            stop: StopRule {
                max_requests: args.max_requests,
                max_duration,
                warmup_requests: args.warmup_requests,
                warmup_duration: match &args.warmup_duration {
                    Some(d) => Some(crate::cmd::parse_duration("warmup-duration", d)?),
                    None => None,
                },
            },
            slo: Slo {
                ttft_ms: args.slo_ttft_ms,
                tpot_ms: args.slo_tpot_ms,
                e2e_ms: args.slo_e2e_ms,
                per_model: model_slos(&args, mix.as_ref())?,
            },
            seed: args.seed,
            force_output: !args.no_ignore_eos,
            shard: shard_of(&args)?,
            start_at: start_at_of(&args)?,
            cancel,
            dataset: args.dataset.clone(),
            sessions: session_config(&args)?,
            tokenizer: args.tokenizer.clone(),
            server_metrics: None,
            cost: match args.cost_per_accelerator_hour {
                Some(p) if p > 0.0 && p.is_finite() && args.accelerators > 0 => {
                    Some(yardstick_load::summary::CostModel {
                        per_accelerator_hour: p,
                        accelerators: args.accelerators,
                    })
                }
                Some(_) => {
                    return Err(exit::invalid(
                        "--cost-per-accelerator-hour must be positive and --accelerators at least 1",
                        Some("e.g. --cost-per-accelerator-hour 2.48 --accelerators 8"),
                    ));
                }
                None => None,
            },
            energy: args.energy.then(yardstick_run::serve::energy),
            trace: trace.clone(),
            models: mix.clone().filter(|m| m.is_mix()).map(Arc::new),
            kinds: kind_mix(&args)?,
            token_check: !args.no_token_check,
            trace_context: !args.no_trace_context,
            eval: eval_mix(&args)?,
            images: match &args.image {
                Some(i) => Some(i.parse().map_err(|e| {
                    exit::invalid(
                        format!("--image: {e}"),
                        Some("sides of 16 to 4096 pixels, 1 to 16 images per request"),
                    )
                })?),
                None => None,
            },
        }
    };
    let scenarios = bench.validate().map_err(exit::lib_error)?;
    if let Some(dir) = &args.output {
        shard_files::create_output_dir(dir).map_err(exit::lib_error)?;
    }
    let _ = yardstick_load::raise_nofile_limit();

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.workers {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build().context("starting the async runtime")?;
    let interval = crate::cmd::parse_duration("scrape-interval", &args.scrape_interval)?;
    if interval.is_zero() {
        return Err(exit::invalid(
            "--scrape-interval must be more than 0",
            Some("e.g. --scrape-interval 500ms"),
        ));
    }
    let mut bench = bench;
    if args.server_metrics != "auto" && args.server_metrics != "off" {
        yardstick_load::scrape::metrics_url_of(&args.server_metrics).ok_or_else(|| {
            exit::invalid(
                format!("--server-metrics: `{}` is not a URL", args.server_metrics),
                Some("auto, off, or e.g. http://127.0.0.1:8000/metrics"),
            )
        })?;
    }
    bench.server_metrics = rt.block_on(yardstick_load::scrape::resolve(
        &args.server_metrics,
        &url,
        interval,
    ));
    if let Some(s) = &bench.server_metrics {
        output::info(&format!(
            "scraping the server's metrics at {} every {:?}",
            s.url, s.interval
        ));
    }
    if args.find_capacity {
        return super::capacity::find_capacity(&args, g, &bench, arrival, &rt);
    }
    let total_points = scenarios.len() * bench.loads.len();
    let progress = Arc::new(Progress::default());
    let point_label = Arc::new(std::sync::Mutex::new(String::new()));
    let sinks: Vec<_> = args
        .hot
        .sinks()?
        .into_iter()
        .map(|mut sink| {
            sink.labels = vec![
                ("benchmark".into(), "bench-serve".into()),
                ("node".into(), yardstick_load::hot::node()),
            ];
            sink.sampling.slo_ttft_ms = bench.slo.ttft_ms;
            sink.sampling.slo_e2e_ms = bench.slo.e2e_ms;
            sink
        })
        .collect();
    let hot = {
        let _enter = rt.enter();
        yardstick_load::hot::spawn_all(&sinks, &progress, &point_label)
    };
    let results = rt.block_on(async {
        let show = verbosity() >= 0;
        let ticker = show.then(|| tokio::spawn(progress_ticker(progress.clone())));
        let on_point = |k: usize, sc: &str, level: &yardstick_load::LoadLevel| {
            if let Ok(mut p) = point_label.lock() {
                *p = format!("{sc}/{}={}", level.mode, level.value);
            }
            if show {
                output::info(&format!(
                    "point {}/{total_points}: {sc} at {} {}",
                    k + 1,
                    level.mode,
                    level.value
                ));
            }
        };
        let res = match mlperf {
            Some(m) => yardstick_load::mlperf::run(&bench, m, progress.clone(), on_point)
                .await
                .map(|runs| {
                    let (r, p): (Vec<MlperfResult>, Vec<PointResult>) =
                        runs.into_iter().map(|r| (r.result, r.point)).unzip();
                    (p, Some(r))
                }),
            None => bench
                .run(progress.clone(), on_point)
                .await
                .map(|p| (p, None)),
        };
        if let Some(t) = ticker {
            t.abort();
            if std::io::stderr().is_terminal() {
                eprintln!();
            }
        }
        res
    });
    let hot_stats = rt.block_on(yardstick_load::hot::finish_all(hot));
    if verbosity() >= 0 {
        hot_stats.iter().for_each(crate::cmd::hot::report);
    }
    let (results, mlperf_results) = results.map_err(exit::lib_error)?;

    let api_name = api.to_string();
    let flags = RunFlags {
        url: &url,
        model: &model,
        api: &api_name,
        stream: !args.no_stream,
        seed: args.seed,
        slo: &bench.slo,
    };
    let mut doc = shard_files::summary_doc(&flags, bench.shard, &results);
    if let Some(m) = &mlperf_results {
        doc["mlperf"] = serde_json::to_value(m)?;
    }
    if !hot_stats.is_empty() {
        doc["hot_metrics"] = serde_json::to_value(&hot_stats)?;
    }
    if let Some(dir) = &args.output {
        let hist: Vec<PointHistograms> = results
            .iter()
            .map(|r| PointHistograms::of(&r.records))
            .collect();
        shard_files::write_dir(dir, &doc, &results, &hist, &ParquetRecords)
            .map_err(exit::lib_error)?;
        yardstick_run::serve::write_server_series(dir, &results)?;
    }
    if g.json {
        output::json(&doc)?;
    } else {
        let text = match &mlperf_results {
            Some(m) => yardstick_load::text::mlperf(m),
            None => yardstick_load::text::points(&results),
        };
        output::text(&text)?;
        if let Some(dir) = &args.output {
            output::info(&format!(
                "wrote {}/summary.json and requests.jsonl",
                dir.display()
            ));
        }
    }
    let mut status = Status::Ok;
    for s in results.iter().map(|r| &r.summary) {
        if s.stop_reason.is_unreachable() {
            output::error(&format!(
                "the run ended early: the server stopped answering ({}); results cover the requests made before",
                s.stop_reason
            ));
            status = Status::Failure;
        } else if s.stop_reason.is_early() {
            output::warn("interrupted: results cover the requests made before");
            status = Status::Failure;
        }
    }
    Ok(status)
}

/// `--merge DIR...`: the union of N shards' records, summarized as one machine would.
fn merge(args: &ServeArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let merged = shard_files::merge_dirs(&args.merge, &ParquetRecords).map_err(exit::lib_error)?;
    if let Some(dir) = &args.output {
        shard_files::create_output_dir(dir).map_err(exit::lib_error)?;
        shard_files::write_dir(
            dir,
            &merged.doc,
            &merged.results,
            &merged.histograms,
            &ParquetRecords,
        )
        .map_err(exit::lib_error)?;
        yardstick_run::serve::write_server_series(dir, &merged.results)?;
    }
    if g.json {
        output::json(&merged.doc)?;
    } else {
        output::text(&yardstick_load::text::points(&merged.results))?;
    }
    Ok(Status::Ok)
}

pub(super) async fn progress_ticker(p: Arc<Progress>) {
    let tty = std::io::stderr().is_terminal();
    let every = if tty {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(5)
    };
    // Rates are over the point so far (since the counters were last reset), not over the last
    // tick: a tick with no completion (the start of a point, a drain of slow requests) read
    // as "0.0 req/s" while the point ran at full speed.
    let since = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let line = progress_line(
            p.completed.load(Ordering::Relaxed),
            p.failed.load(Ordering::Relaxed),
            p.in_flight.load(Ordering::Relaxed),
            p.output_tokens.load(Ordering::Relaxed),
            p.elapsed_s()
                .unwrap_or_else(|| since.elapsed().as_secs_f64()),
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }
}

/// One progress line: what finished, what is in flight, and the rates over the point so far.
/// Before the first completion there is no rate to show yet.
pub(super) fn progress_line(
    done: u64,
    failed: u64,
    in_flight: u64,
    tokens: u64,
    elapsed_s: f64,
) -> String {
    if done + failed == 0 {
        return format!("  starting: {in_flight} in flight, none finished yet");
    }
    let secs = elapsed_s.max(1e-3);
    format!(
        "  {done} done, {failed} failed, {in_flight} in flight; {} and {} over {}",
        yardstick_spec::human::human(done as f64 / secs, "req/s"),
        yardstick_spec::human::human(tokens as f64 / secs, "tok/s"),
        yardstick_spec::human::human(elapsed_s, "s"),
    )
}

/// The session workload the flags ask for, if any (`--sessions`, `--turns`, `--think-time`,
/// `--shared-prefix`).
fn session_config(
    args: &ServeArgs,
) -> anyhow::Result<Option<yardstick_load::session::SessionConfig>> {
    use yardstick_load::session::{SessionConfig, THINK_TIME_GRAMMAR, ThinkTime, Turns};
    if !args.sessions
        && args.turns.is_none()
        && args.think_time.is_none()
        && args.shared_prefix.is_none()
    {
        return Ok(None);
    }
    let turns = match &args.turns {
        Some(t) => t
            .parse::<Turns>()
            .map_err(|e| exit::invalid(format!("--turns: {e}"), None))?,
        None => Turns { min: 1, max: 1 },
    };
    let think = match &args.think_time {
        Some(t) => t
            .parse::<ThinkTime>()
            .map_err(|e| exit::invalid(format!("--think-time: {e}"), Some(THINK_TIME_GRAMMAR)))?,
        None => ThinkTime::Constant(0.0),
    };
    Ok(Some(SessionConfig {
        turns,
        think,
        shared_prefix: args.shared_prefix.unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse() {
        assert_eq!(parse_shard("1/4").unwrap(), (1, 4));
        assert_eq!(parse_shard(" 0 / 1 ").unwrap(), (0, 1));
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    /// Issue 39: progress lines read "0 done, 0 failed, 6 in flight, 0.0 req/s" at a point's
    /// start and "97 done, 0 failed, 2 in flight, 0.0 req/s" during a drain; the rate is now
    /// over the point so far, in human units, and a point with nothing finished says so.
    #[test]
    fn progress_lines_rate_the_point_so_far() {
        assert_eq!(
            progress_line(0, 0, 6, 0, 0.4),
            "  starting: 6 in flight, none finished yet"
        );
        assert_eq!(
            progress_line(97, 0, 2, 1552, 3.2),
            "  97 done, 0 failed, 2 in flight; 30.3 req/s and 485 tok/s over 3.20 s"
        );
    }
}
