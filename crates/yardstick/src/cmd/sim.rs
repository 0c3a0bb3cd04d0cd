//! `yardstick sim`: run the OpenAI-compatible LLM server simulator (crate `yardstick-sim`).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use yardstick_sim::{Sim, SimConfig, SimError};

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};

/// Run an OpenAI-compatible LLM server simulator with a latency model and a ground-truth log.
///
/// Prints `listening on http://ADDR` as the first line on stdout once bound, then serves until
/// interrupted. Time to first token = --ttft-ms + --ttft-per-token-ms × prompt words (after
/// queueing beyond --max-running); then a token every --itl-ms. See docs/sim.md.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick sim --port 8000                          # an OpenAI-compatible server on :8000\n  \
yardstick sim --port 0 --ttft-ms 40 --itl-ms 5 --max-running 64\n  \
yardstick sim --port 8000 --error-rate 0.02 --disconnect-rate 0.01   # a flaky server\n  \
yardstick sim --port 8000 --itl-slowdown 1.1       # 10 % slower decode, to see a gate FAIL\n  \
yardstick sim --model base --adapters 3 --max-loaded-adapters 1 --adapter-load-ms 40"
)]
pub struct SimArgs {
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind; 0 picks a free one.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model name served.
    #[arg(long, default_value = "yardstick-sim")]
    pub model: String,
    /// Base time to first token, ms.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Added to the time to first token per prompt token, ms.
    #[arg(long, default_value_t = 0.0)]
    pub ttft_per_token_ms: f64,
    /// Prefix-cache size in prompt tokens (0: off). Leading 16-token blocks of a prompt seen
    /// before are not charged --ttft-per-token-ms; least recently used blocks are evicted.
    #[arg(long, default_value_t = 0, value_name = "TOKENS")]
    pub prefix_cache_tokens: u64,
    /// The first N output tokens of a chat answer are reasoning (`reasoning_content`).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub reasoning_tokens: u64,
    /// Time between output tokens, ms.
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,
    /// Uniform jitter of each inter-token gap, ± ms.
    #[arg(long, default_value_t = 0.0)]
    pub itl_jitter_ms: f64,
    /// Inter-token gaps are multiplied by 1 + F × (running sequences − 1).
    #[arg(long, default_value_t = 0.0, value_name = "F")]
    pub itl_slowdown: f64,
    /// Sequences generating at once; further requests queue (default: unlimited).
    #[arg(long)]
    pub max_running: Option<usize>,
    /// Requests waiting for a slot at most (needs --max-running): one that finds the queue full
    /// is turned away at once with --reject-status, as a server with admission control does
    /// (default: the queue is unbounded).
    #[arg(long, value_name = "N", requires = "max_running")]
    pub max_waiting: Option<usize>,
    /// HTTP status of a request turned away by --max-waiting.
    #[arg(long, default_value_t = 429, value_name = "STATUS")]
    pub reject_status: u16,
    /// Seconds a refusal's `Retry-After` header asks the client to wait (default: no header).
    #[arg(long, value_name = "SECONDS")]
    pub retry_after: Option<u64>,
    /// Output tokens when a request gives no max_tokens.
    #[arg(long, default_value_t = 100)]
    pub max_tokens: u64,
    /// Stop after this many tokens unless the request sets ignore_eos (raised to min_tokens).
    #[arg(long)]
    pub eos_after: Option<u64>,
    /// Fraction of requests answered with --error-status.
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// HTTP status of injected errors.
    #[arg(long, default_value_t = 500)]
    pub error_status: u16,
    /// Fraction of requests held unanswered for --hang-ms (an injected timeout).
    #[arg(long, default_value_t = 0.0)]
    pub timeout_rate: f64,
    /// How long an injected timeout holds its request, ms.
    #[arg(long, default_value_t = 60_000)]
    pub hang_ms: u64,
    /// Fraction of responses cut halfway (the connection is closed).
    #[arg(long, default_value_t = 0.0)]
    pub disconnect_rate: f64,
    /// Dimension of embedding vectors.
    #[arg(long, default_value_t = 64)]
    pub embedding_dim: usize,
    /// Seed of fault injection and jitter.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write one JSON line per request with server-side timestamps to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Runtime worker threads (default: one per core).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Answer requests (streamed or not) whose prompt is in FILE with its answer instead of
    /// filler (repeatable): JSON lines with `prompt` or `messages` and `answer`, `references` (the
    /// first) or `keys` (a JSON object with them) — eval task files work as they are, and a
    /// bundled probe name (arith, format, extract, code) reads that probe.
    #[arg(long, value_name = "FILE|PROBE")]
    pub answers: Vec<String>,
    /// Share of the answer table's prompts answered right, in [0, 1] (chosen by a hash of the
    /// prompt: lowering it only turns right answers wrong).
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub correct_fraction: f64,
    /// Answer a prompt of the --answers table wrong (filler) when it arrives while more than N
    /// other requests are in the server: accuracy that falls under load, to test `bench serve
    /// --eval-mix`. The log's `oracle` field says `right` or `wrong` per request.
    #[arg(long, value_name = "N", requires = "answers")]
    pub wrong_when_busy: Option<u64>,
    /// Multiplies the echoed prompt log-probabilities of /v1/completions (echo + logprobs);
    /// perplexity becomes perplexity^S.
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub logprob_scale: f64,
    /// Serve N LoRA adapters beside the base model (--model): a request naming any other model
    /// uses an adapter (the first N distinct names; a further one is answered 404). 0: every
    /// model name is served alike.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub adapters: usize,
    /// Adapters loaded at once (default: all N); a request whose adapter is not loaded evicts
    /// the least recently used one and waits --adapter-load-ms while its own loads.
    #[arg(long, value_name = "K", requires = "adapters")]
    pub max_loaded_adapters: Option<usize>,
    /// Time to load an adapter, charged to the time to first token of the request that needs it.
    #[arg(long, default_value_t = 0.0, value_name = "MS", requires = "adapters")]
    pub adapter_load_ms: f64,
    /// Fraction of structured answers broken on purpose, in [0, 1]: a JSON-schema answer loses
    /// a required property, a tool call's arguments are cut short (what `bench serve --kind`
    /// counts as invalid).
    #[arg(long, default_value_t = 0.0, value_name = "F")]
    pub invalid_rate: f64,
}

/// The answer oracle and log-probability model from the flags.
fn quality(
    answers: &[String],
    fraction: f64,
    scale: f64,
) -> anyhow::Result<yardstick_sim::quality::Quality> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(exit::invalid(
            format!("--correct-fraction must be in [0, 1], got {fraction}"),
            None,
        ));
    }
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(exit::invalid(
            format!("--logprob-scale must be a positive number, got {scale}"),
            None,
        ));
    }
    let mut q = yardstick_sim::quality::Quality {
        correct_fraction: fraction,
        logprob_scale: scale,
        ..Default::default()
    };
    for a in answers {
        let path = std::path::Path::new(a);
        let (source, text) = match yardstick_eval::task::PROBES.iter().find(|(n, _)| n == a) {
            Some((n, text)) if !path.exists() => (format!("builtin:{n}"), (*text).to_string()),
            _ => (
                a.clone(),
                std::fs::read_to_string(path).map_err(|e| {
                    exit::invalid(
                        format!("--answers {a}: {e}"),
                        Some("a JSONL file of prompts and answers, or a bundled probe name"),
                    )
                })?,
            ),
        };
        q.add_answers(&source, &text)
            .map_err(|e| exit::invalid(format!("--answers: {e}"), None))?;
    }
    Ok(q)
}

fn ms(name: &str, v: f64) -> anyhow::Result<Duration> {
    if v.is_finite() && v >= 0.0 {
        Ok(Duration::from_secs_f64(v / 1e3))
    } else {
        Err(exit::invalid(
            format!("--{name} must be a non-negative number, got {v}"),
            None,
        ))
    }
}

/// Runs the simulator until Ctrl-C or SIGTERM.
pub fn run(args: SimArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    let cfg = SimConfig {
        addr: SocketAddr::new(args.host, args.port),
        model: args.model,
        ttft: ms("ttft-ms", args.ttft_ms)?,
        ttft_per_prompt_token: ms("ttft-per-token-ms", args.ttft_per_token_ms)?,
        itl: ms("itl-ms", args.itl_ms)?,
        itl_jitter: ms("itl-jitter-ms", args.itl_jitter_ms)?,
        itl_slowdown: args.itl_slowdown,
        max_running: args.max_running,
        max_waiting: args.max_waiting,
        reject_status: args.reject_status,
        retry_after: args.retry_after.map(Duration::from_secs),
        default_max_tokens: args.max_tokens,
        eos_after: args.eos_after,
        error_rate: args.error_rate,
        error_status: args.error_status,
        timeout_rate: args.timeout_rate,
        hang: Duration::from_millis(args.hang_ms),
        disconnect_rate: args.disconnect_rate,
        embedding_dim: args.embedding_dim,
        seed: args.seed,
        log: args.log,
        quality: yardstick_sim::quality::Quality {
            wrong_when_busy: args.wrong_when_busy,
            ..quality(&args.answers, args.correct_fraction, args.logprob_scale)?
        },
        prefix_cache_tokens: args.prefix_cache_tokens,
        reasoning_tokens: args.reasoning_tokens,
        adapters: args.adapters,
        max_loaded_adapters: args.max_loaded_adapters.unwrap_or(0),
        adapter_load: ms("adapter-load-ms", args.adapter_load_ms)?,
        invalid_rate: args.invalid_rate,
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.workers {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build().context("starting the async runtime")?;
    let shutdown = crate::interrupt::token("shutting down (Ctrl-C again to abort)");
    rt.block_on(async move {
        let sim = match Sim::bind(cfg).await {
            Ok(s) => s,
            Err(e @ SimError::Config(_)) => return Err(exit::invalid(e.to_string(), None)),
            Err(e @ SimError::Log { .. }) => return Err(exit::invalid(e.to_string(), None)),
            Err(e) => return Err(anyhow::Error::new(e)),
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{}", sim.local_addr())?;
        out.flush()?;
        drop(out);
        sim.serve(shutdown.cancelled_owned()).await;
        Ok(Status::Ok)
    })
}
