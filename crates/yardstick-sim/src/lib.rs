//! `yardstick-sim`: an OpenAI-compatible LLM server whose latency is a model, not a GPU.
//!
//! It serves `/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models`,
//! `/health` and Prometheus `/metrics` over HTTP/1.1 (hyper 1.x). Timing follows
//! [`SimConfig`]: time to first token = `ttft + ttft_per_prompt_token × prompt tokens`, counted
//! from admission (requests beyond `max_running` queue for a slot first); then one token every
//! `itl` (± `itl_jitter`, × `1 + itl_slowdown × (running − 1)`). Every token is written at an
//! absolute deadline (`tokio::time::sleep_until`), so lateness never accumulates: token `k` is
//! due at `first + Σ gaps`, whenever the previous one actually went out. Tokio's timer has a
//! 1 ms tick, so a token is written up to ~1 ms after its deadline, never before; the
//! ground-truth log ([`SimConfig::log`]) records what actually happened.
//!
//! Faults are injected by rate from a seeded generator, per request in arrival order:
//! HTTP errors, timeouts (the request is held unanswered), and disconnects (the stream is cut
//! halfway).

#![deny(missing_docs)]

pub mod adapters;
pub mod log;
mod metrics;
pub mod openai;
pub mod prefix;
pub mod quality;
mod stream;
pub mod structured;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use log::{LogRecord, Outcome};
use log::{LogSink, LogWriter};
use metrics::Metrics;
use openai::{Api, ParsedRequest};
use stream::{SimBody, TokenStream};
pub use yardstick_timing::Clock;
use yardstick_timing::{Rng, RxStamp, StampedTcp};

/// Largest request body accepted.
const MAX_BODY: usize = 16 << 20;

/// How the simulator behaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
    /// The model name served (any requested name is accepted); with `adapters`, the base
    /// model's name (any other name asks for an adapter).
    pub model: String,
    /// Base time to first token.
    pub ttft: Duration,
    /// Added to the time to first token per prompt token.
    pub ttft_per_prompt_token: Duration,
    /// Time between output tokens.
    pub itl: Duration,
    /// Uniform jitter of each gap, ± this much (0 = none).
    pub itl_jitter: Duration,
    /// Each gap is multiplied by `1 + itl_slowdown × (running − 1)`.
    pub itl_slowdown: f64,
    /// Sequences generating at once; more requests queue (`None` = unlimited).
    pub max_running: Option<usize>,
    /// Output tokens when the request gives no `max_tokens`.
    pub default_max_tokens: u64,
    /// When set and the request does not ask `ignore_eos`, the model "stops" after this many
    /// tokens (raised to `min_tokens`, capped at `max_tokens`).
    pub eos_after: Option<u64>,
    /// Fraction of requests answered with `error_status`.
    pub error_rate: f64,
    /// The status of injected errors.
    pub error_status: u16,
    /// Fraction of requests held without an answer for `hang`.
    pub timeout_rate: f64,
    /// How long an injected timeout holds a request before giving up on it (then 504).
    pub hang: Duration,
    /// Fraction of streams cut halfway (the connection is closed).
    pub disconnect_rate: f64,
    /// Dimension of embedding vectors.
    pub embedding_dim: usize,
    /// Seed of fault injection and jitter.
    pub seed: u64,
    /// Where to write the ground-truth log (JSON lines), if anywhere.
    pub log: Option<PathBuf>,
    /// Answer oracle and echo log-probability model ([`quality`]).
    pub quality: quality::Quality,
    /// Prefix-cache capacity in prompt tokens (0 = no prefix caching): cached leading blocks
    /// of a prompt are not charged `ttft_per_prompt_token` ([`prefix`]).
    pub prefix_cache_tokens: u64,
    /// The first this-many output tokens of a chat answer are reasoning, sent as
    /// `reasoning_content` (and counted in `usage.completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: u64,
    /// LoRA adapters served beside the base model `model` ([`adapters`]): a request for any
    /// other model name uses an adapter (0 = off: every model name is served alike).
    pub adapters: usize,
    /// Adapters loaded at once, least recently used evicted first (0 = all of `adapters`).
    pub max_loaded_adapters: usize,
    /// Time to load an adapter that is not loaded, charged to the time to first token of the
    /// request that needs it.
    pub adapter_load: Duration,
    /// Fraction of structured answers (tool calls, JSON schema) broken on purpose
    /// ([`structured`]).
    pub invalid_rate: f64,
    /// Requests waiting for a running slot at most (needs `max_running`): a request that finds
    /// the queue full is turned away with `reject_status` at once, as a server with admission
    /// control does. `None`: the queue is unbounded.
    pub max_waiting: Option<usize>,
    /// The status of a request turned away (429 or 503).
    pub reject_status: u16,
    /// The `Retry-After` a refusal carries, whole seconds (rounded up); `None`: no header.
    pub retry_after: Option<Duration>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
            model: "yardstick-sim".into(),
            ttft: Duration::from_millis(50),
            ttft_per_prompt_token: Duration::ZERO,
            itl: Duration::from_millis(10),
            itl_jitter: Duration::ZERO,
            itl_slowdown: 0.0,
            max_running: None,
            default_max_tokens: 100,
            eos_after: None,
            error_rate: 0.0,
            error_status: 500,
            timeout_rate: 0.0,
            hang: Duration::from_secs(60),
            disconnect_rate: 0.0,
            embedding_dim: 64,
            seed: 0,
            log: None,
            quality: quality::Quality::default(),
            prefix_cache_tokens: 0,
            reasoning_tokens: 0,
            adapters: 0,
            max_loaded_adapters: 0,
            adapter_load: Duration::ZERO,
            invalid_rate: 0.0,
            max_waiting: None,
            reject_status: 429,
            retry_after: None,
        }
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A configuration value is out of range.
    #[error("invalid simulator configuration: {0}")]
    Config(String),
    /// The address could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The log file could not be created.
    #[error("cannot create log file {path}: {source}")]
    Log {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// State shared by every connection.
pub(crate) struct Shared {
    pub(crate) cfg: SimConfig,
    pub(crate) clock: Clock,
    pub(crate) log: LogSink,
    pub(crate) metrics: Metrics,
    seq: AtomicU64,
    slots: Option<Arc<Semaphore>>,
    prefix: prefix::PrefixCache,
    adapters: adapters::Adapters,
}

/// A bound simulator, ready to serve.
pub struct Sim {
    listener: TcpListener,
    shared: Arc<Shared>,
    writer: Option<LogWriter>,
}

impl Sim {
    /// Validates `cfg`, binds its address and opens the log. Must be called inside a tokio runtime.
    pub async fn bind(cfg: SimConfig) -> Result<Sim, SimError> {
        for (name, r) in [
            ("error rate", cfg.error_rate),
            ("timeout rate", cfg.timeout_rate),
            ("disconnect rate", cfg.disconnect_rate),
            ("invalid rate", cfg.invalid_rate),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(SimError::Config(format!(
                    "{name} must be in [0, 1], got {r}"
                )));
            }
        }
        if cfg.error_rate + cfg.timeout_rate + cfg.disconnect_rate > 1.0 {
            return Err(SimError::Config(
                "error, timeout and disconnect rates must add up to at most 1".into(),
            ));
        }
        if !(cfg.itl_slowdown >= 0.0 && cfg.itl_slowdown.is_finite()) {
            return Err(SimError::Config("ITL slowdown must be >= 0".into()));
        }
        if cfg.max_running == Some(0) {
            return Err(SimError::Config("max running must be at least 1".into()));
        }
        if cfg.max_waiting.is_some() && cfg.max_running.is_none() {
            return Err(SimError::Config(
                "max waiting needs max running: requests wait only for a running slot".into(),
            ));
        }
        if !(400..=599).contains(&cfg.reject_status) {
            return Err(SimError::Config(
                "reject status must be in 400..=599".into(),
            ));
        }
        if !(400..=599).contains(&cfg.error_status) {
            return Err(SimError::Config("error status must be in 400..=599".into()));
        }
        if cfg.adapters == 0 && (cfg.max_loaded_adapters > 0 || !cfg.adapter_load.is_zero()) {
            return Err(SimError::Config(
                "max loaded adapters and adapter load time need adapters (at least 1)".into(),
            ));
        }
        if cfg.max_loaded_adapters > cfg.adapters {
            return Err(SimError::Config(format!(
                "max loaded adapters ({}) must be at most the adapters served ({})",
                cfg.max_loaded_adapters, cfg.adapters
            )));
        }
        if cfg.default_max_tokens == 0 {
            return Err(SimError::Config(
                "default max tokens must be at least 1".into(),
            ));
        }
        let listener = TcpListener::bind(cfg.addr)
            .await
            .map_err(|source| SimError::Bind {
                addr: cfg.addr,
                source,
            })?;
        let (log, writer) = match &cfg.log {
            Some(path) => {
                let (s, w) = LogWriter::create(path).map_err(|source| SimError::Log {
                    path: path.clone(),
                    source,
                })?;
                (s, Some(w))
            }
            None => (LogSink::disabled(), None),
        };
        let slots = cfg.max_running.map(|n| Arc::new(Semaphore::new(n)));
        let metrics = Metrics::default();
        metrics
            .slots
            .store(cfg.max_running.unwrap_or(0) as u64, Ordering::Relaxed);
        Ok(Sim {
            listener,
            shared: Arc::new(Shared {
                clock: Clock::new(),
                log,
                metrics,
                seq: AtomicU64::new(0),
                slots,
                prefix: prefix::PrefixCache::new(cfg.prefix_cache_tokens),
                adapters: adapters::Adapters::new(
                    &cfg.model,
                    cfg.adapters,
                    cfg.max_loaded_adapters,
                    cfg.adapter_load,
                ),
                cfg,
            }),
            writer,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `shutdown` completes, then stops accepting. Streams in flight when it
    /// returns end with the runtime.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let Sim {
            listener,
            shared,
            writer,
        } = self;
        let accept = async {
            loop {
                let (tcp, _) = match listener.accept().await {
                    Ok(c) => c,
                    Err(_) => {
                        // Out of descriptors or similar: back off instead of spinning.
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let shared = shared.clone();
                tokio::spawn(async move {
                    // Requests are timed from when the kernel received their last bytes, not
                    // from when this busy process got round to reading them.
                    let io = StampedTcp::new(tcp, shared.clock);
                    let rx = io.stamp();
                    let svc = service_fn(move |req| handle(shared.clone(), rx.clone(), req));
                    let _ = http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(io, svc)
                        .await;
                });
            }
        };
        tokio::select! {
            _ = accept => {}
            _ = shutdown => {}
        }
        // Open connections still hold the log's sending half, so the writer is not joined;
        // it flushes after every batch, so the file is complete up to the last instant.
        drop(shared);
        if let Some(w) = writer {
            w.detach();
        }
    }
}

fn json_response(status: StatusCode, v: &serde_json::Value) -> Response<SimBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(SimBody::full(Bytes::from(v.to_string())))
        .expect("static response parts are valid")
}

fn text_response(status: StatusCode, ctype: &'static str, s: String) -> Response<SimBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, ctype)
        .body(SimBody::full(Bytes::from(s)))
        .expect("static response parts are valid")
}

fn unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn handle(
    shared: Arc<Shared>,
    rx: RxStamp,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, Infallible> {
    let api = match (req.method(), req.uri().path()) {
        (&Method::GET, "/health") => {
            return Ok(text_response(StatusCode::OK, "text/plain", "ok\n".into()));
        }
        (&Method::GET, "/v1/models") => {
            let m = &shared.cfg.model;
            return Ok(json_response(
                StatusCode::OK,
                &serde_json::json!({"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "yardstick"}]}),
            ));
        }
        (&Method::GET, "/metrics") => {
            return Ok(text_response(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                shared.metrics.render(&shared.cfg.model),
            ));
        }
        (&Method::POST, "/tokenize") => return Ok(tokenize(req).await),
        (&Method::POST, "/v1/chat/completions") => Api::Chat,
        (&Method::POST, "/v1/completions") => Api::Completions,
        (&Method::POST, "/v1/embeddings") => Api::Embeddings,
        (_, p) => {
            return Ok(json_response(
                StatusCode::NOT_FOUND,
                &openai::error_body(&format!("no route {p}"), "not_found_error", 404),
            ));
        }
    };
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let traceparent = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                &openai::error_body(
                    &format!("cannot read body: {e}"),
                    "invalid_request_error",
                    400,
                ),
            ));
        }
    };
    let handled = Instant::now();
    let received = shared.clock.instant(rx.get()).min(handled);
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed);
    let before = shared.metrics.received.fetch_add(1, Ordering::Relaxed);
    // Requests in the server when this one arrived (the answer oracle's `wrong_when_busy`).
    let busy = before.saturating_sub(
        shared
            .metrics
            .outcomes
            .iter()
            .map(|o| o.load(Ordering::Relaxed))
            .sum(),
    );
    let request_id = request_id.unwrap_or_else(|| format!("sim-{seq}"));
    let mut rec = LogRecord {
        request_id,
        traceparent,
        seq,
        api: api.name(),
        stream: false,
        outcome: Outcome::Ok,
        status: 200,
        prompt_tokens: 0,
        cached_tokens: 0,
        output_tokens: 0,
        received_ns: shared.clock.ns(received),
        handled_ns: shared.clock.ns(handled),
        admitted_ns: shared.clock.ns(received),
        first_token_ns: None,
        last_token_ns: None,
        ttft_ms: None,
        e2e_ms: None,
        structured: None,
        broken: false,
        oracle: None,
    };
    let parsed = match openai::parse_request(api, &body) {
        Ok(p) => p,
        Err(msg) => {
            rec.outcome = Outcome::BadRequest;
            rec.status = 400;
            shared.metrics.finish(Outcome::BadRequest);
            shared.log.write(&rec);
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                &openai::error_body(&msg.to_string(), "invalid_request_error", 400),
            ));
        }
    };
    rec.stream = parsed.stream && api != Api::Embeddings;
    rec.prompt_tokens = parsed.prompt_tokens;
    if !shared.adapters.admit(parsed.model.as_deref()) {
        rec.outcome = Outcome::BadRequest;
        rec.status = 404;
        shared.metrics.finish(Outcome::BadRequest);
        shared.log.write(&rec);
        return Ok(json_response(
            StatusCode::NOT_FOUND,
            &openai::error_body(
                &format!(
                    "the model `{}` does not exist: {} adapters are served already",
                    parsed.model.as_deref().unwrap_or_default(),
                    shared.cfg.adapters
                ),
                "not_found_error",
                404,
            ),
        ));
    }
    let cfg = &shared.cfg;
    let mut rng = Rng::new(cfg.seed, seq);
    let u = rng.unit();

    if u < cfg.error_rate {
        rec.outcome = Outcome::Error;
        rec.status = cfg.error_status;
        shared.metrics.finish(Outcome::Error);
        shared.log.write(&rec);
        let status =
            StatusCode::from_u16(cfg.error_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Ok(json_response(
            status,
            &openai::error_body("injected error", "server_error", cfg.error_status),
        ));
    }
    if u < cfg.error_rate + cfg.timeout_rate {
        rec.outcome = Outcome::Timeout;
        rec.status = 504;
        shared.metrics.finish(Outcome::Timeout);
        shared.log.write(&rec);
        tokio::time::sleep_until((received + cfg.hang).into()).await;
        return Ok(json_response(
            StatusCode::GATEWAY_TIMEOUT,
            &openai::error_body("injected timeout", "timeout", 504),
        ));
    }
    let disconnect = u < cfg.error_rate + cfg.timeout_rate + cfg.disconnect_rate;

    // Queue for a running slot (continuous batching's max_num_seqs), unless the queue is full.
    let permit = match &shared.slots {
        Some(sem) => match sem.clone().try_acquire_owned() {
            Ok(p) => (Some(p), received),
            Err(_) => {
                let waiting = shared.metrics.waiting.fetch_add(1, Ordering::Relaxed);
                if cfg.max_waiting.is_some_and(|m| waiting >= m as i64) {
                    shared.metrics.waiting.fetch_sub(1, Ordering::Relaxed);
                    rec.outcome = Outcome::Refused;
                    rec.status = cfg.reject_status;
                    shared.metrics.finish(Outcome::Refused);
                    shared.log.write(&rec);
                    let mut resp = json_response(
                        StatusCode::from_u16(cfg.reject_status)
                            .unwrap_or(StatusCode::TOO_MANY_REQUESTS),
                        &openai::error_body(
                            "the server is at capacity: try again later",
                            "rate_limit_exceeded",
                            cfg.reject_status,
                        ),
                    );
                    if let Some(after) = cfg.retry_after {
                        let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
                        resp.headers_mut()
                            .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
                    }
                    return Ok(resp);
                }
                let p = sem.clone().acquire_owned().await.ok();
                shared.metrics.waiting.fetch_sub(1, Ordering::Relaxed);
                (p, Instant::now())
            }
        },
        None => (None, received),
    };
    let (permit, admitted) = permit;
    rec.admitted_ns = shared.clock.ns(admitted);
    // An adapter not loaded is loaded first: its time is charged to the time to first token.
    let start = match shared.adapters.acquire(parsed.model.as_deref(), admitted) {
        adapters::Access::Adapter { ready, .. } => ready.max(admitted),
        _ => admitted,
    };
    shared
        .metrics
        .observe_queue(admitted.saturating_duration_since(received).as_nanos() as u64);
    shared
        .metrics
        .prompt_tokens
        .fetch_add(parsed.prompt_tokens, Ordering::Relaxed);
    if shared.prefix.capacity_blocks() > 0 && api != Api::Embeddings {
        let cached = shared
            .prefix
            .lookup_and_insert(&prefix::block_hashes(api, &body))
            .min(parsed.prompt_tokens);
        rec.cached_tokens = cached;
        shared.metrics.observe_prefix(parsed.prompt_tokens, cached);
    }
    let prefill = (parsed.prompt_tokens - rec.cached_tokens).min(u32::MAX as u64) as u32;
    let ttft = cfg.ttft + cfg.ttft_per_prompt_token * prefill;
    let details = openai::UsageDetails {
        cached_tokens: (shared.prefix.capacity_blocks() > 0).then_some(rec.cached_tokens),
        reasoning_tokens: None,
    };

    if api == Api::Embeddings {
        let _permit = permit;
        tokio::time::sleep_until((start + ttft).into()).await;
        let body = openai::embeddings_response(
            &cfg.model,
            parsed.inputs,
            cfg.embedding_dim,
            parsed.prompt_tokens,
            cfg.seed ^ seq,
        );
        let resp = json_response(StatusCode::OK, &body);
        let now = Instant::now();
        rec.first_token_ns = Some(shared.clock.ns(now));
        rec.last_token_ns = rec.first_token_ns;
        shared
            .metrics
            .observe_ttft((now - received).as_nanos() as u64);
        rec.ttft_ms = Some(ms(now - received));
        rec.e2e_ms = rec.ttft_ms;
        shared.metrics.finish(Outcome::Ok);
        shared.log.write(&rec);
        return Ok(resp);
    }

    // A structured answer is as long as its object (at most `max_tokens`), and may be broken
    // on purpose (`invalid_rate`), each on a stream of the request's own.
    // The answer oracle's prompts are answered with their answer (right) or filler (wrong),
    // streamed or not.
    let verdict = match &parsed.structured {
        None => cfg.quality.verdict_of(api, &body, busy),
        Some(_) => None,
    };
    rec.oracle = verdict
        .as_ref()
        .map(|v| if v.is_some() { "right" } else { "wrong" });
    let oracle = verdict.flatten().map(|a| {
        Arc::new(structured::Answer::plain(
            &a,
            parsed.max_tokens.unwrap_or(cfg.default_max_tokens),
        ))
    });
    let structured = parsed.structured.as_ref().map(|st| {
        let broken =
            cfg.invalid_rate > 0.0 && Rng::new(cfg.seed ^ 0x1bad, seq).unit() < cfg.invalid_rate;
        rec.structured = Some(match st {
            structured::Structured::Json { .. } => "json",
            structured::Structured::Tool { .. } => "tool-call",
        });
        rec.broken = broken;
        Arc::new(structured::answer(
            st,
            &mut Rng::new(cfg.seed ^ 0x57c7, seq),
            seq,
            parsed.max_tokens.unwrap_or(cfg.default_max_tokens),
            broken,
        ))
    });
    let structured = structured.or(oracle);
    let n = match &structured {
        Some(a) => a.pieces.len() as u64,
        None => output_tokens(cfg, &parsed),
    };
    let finish = match &structured {
        Some(a) => a.finish(),
        None if Some(n) == parsed.max_tokens
            || (parsed.max_tokens.is_none() && n == cfg.default_max_tokens) =>
        {
            "length"
        }
        None => "stop",
    };
    rec.output_tokens = n;
    let reasoning = if api == Api::Chat && structured.is_none() {
        cfg.reasoning_tokens.min(n)
    } else {
        0
    };
    let details = openai::UsageDetails {
        reasoning_tokens: (reasoning > 0).then_some(reasoning),
        ..details
    };
    let id = match api {
        Api::Chat => format!("chatcmpl-{seq}"),
        _ => format!("cmpl-{seq}"),
    };
    let created = unix_s();

    if parsed.stream {
        let cut_after = disconnect.then(|| (n / 2).max(1));
        let body = TokenStream::start(
            shared.clone(),
            api,
            &id,
            created,
            stream::Shape {
                n,
                reasoning,
                finish,
                include_usage: parsed.include_usage,
                details,
                structured: structured.clone(),
            },
            start + ttft,
            rng,
            cut_after,
            permit,
            rec,
        );
        let resp = Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(SimBody::stream(body))
            .expect("static response parts are valid");
        return Ok(resp);
    }

    // Non-streaming: nothing is visible until the last token, which is then the response.
    let _permit = permit;
    let _running = stream::Running::enter(&shared.metrics);
    let mut deadline = start + ttft;
    for k in 1..n {
        deadline += stream::gap(cfg, &shared.metrics, &mut rng, k);
    }
    if disconnect {
        tokio::time::sleep_until(deadline.into()).await;
        rec.outcome = Outcome::Disconnect;
        rec.status = 200;
        shared.metrics.finish(Outcome::Disconnect);
        shared.log.write(&rec);
        return Ok(Response::new(SimBody::broken()));
    }
    tokio::time::sleep_until(deadline.into()).await;
    let full = openai::full_response(
        api,
        &id,
        created,
        &cfg.model,
        &openai::Answer {
            prompt: parsed.prompt_tokens,
            completion: n,
            reasoning,
            finish,
            details,
            structured: structured.as_deref(),
        },
    );
    let body = cfg.quality.rewrite(api, &body, full);
    let resp = json_response(StatusCode::OK, &body);
    let now = Instant::now();
    rec.first_token_ns = Some(shared.clock.ns(now));
    rec.last_token_ns = rec.first_token_ns;
    shared
        .metrics
        .observe_ttft((now - received).as_nanos() as u64);
    rec.ttft_ms = Some(ms(now - received));
    rec.e2e_ms = rec.ttft_ms;
    shared
        .metrics
        .generation_tokens
        .fetch_add(n, Ordering::Relaxed);
    shared.metrics.finish(Outcome::Ok);
    shared.log.write(&rec);
    Ok(resp)
}

/// `POST /tokenize` as vLLM and llama.cpp answer it: the tokens of `prompt` (or llama.cpp's
/// `content`) by the simulator's count, as `count` and `tokens` (one id per word). Not part of
/// the served load: counted in no metric and no log line.
async fn tokenize(req: Request<Incoming>) -> Response<SimBody> {
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &openai::error_body(
                    &format!("cannot read body: {e}"),
                    "invalid_request_error",
                    400,
                ),
            );
        }
    };
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(text) = ["prompt", "content"]
        .iter()
        .find_map(|k| v.get(*k).and_then(serde_json::Value::as_str))
    else {
        return json_response(
            StatusCode::BAD_REQUEST,
            &openai::error_body(
                "`prompt` (a string) is required",
                "invalid_request_error",
                400,
            ),
        );
    };
    let n = openai::count_words(text);
    json_response(
        StatusCode::OK,
        &serde_json::json!({"count": n, "tokens": (0..n).collect::<Vec<u64>>(), "max_model_len": 0}),
    )
}

/// Output tokens for a request: `max_tokens` (or the default), cut at `eos_after` unless the
/// request says `ignore_eos`, and never below `min_tokens`.
fn output_tokens(cfg: &SimConfig, p: &ParsedRequest) -> u64 {
    let max = p.max_tokens.unwrap_or(cfg.default_max_tokens);
    match cfg.eos_after {
        Some(e) if !p.ignore_eos => e.max(p.min_tokens).min(max).max(1),
        _ => max,
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_length_honours_ignore_eos_and_min_tokens() {
        let cfg = SimConfig {
            eos_after: Some(10),
            ..SimConfig::default()
        };
        let mut p =
            openai::parse_request(Api::Completions, br#"{"prompt":"x","max_tokens":50}"#).unwrap();
        assert_eq!(output_tokens(&cfg, &p), 10);
        p.min_tokens = 20;
        assert_eq!(output_tokens(&cfg, &p), 20);
        p.ignore_eos = true;
        assert_eq!(output_tokens(&cfg, &p), 50);
        p.max_tokens = None;
        assert_eq!(output_tokens(&cfg, &p), 100);
    }
}
