//! The HTTP/1.1 client: hyper 1.x connections driven inside the requesting task (no background
//! task, no channel hop between the socket and the timestamp), a keep-alive pool, TCP_NODELAY,
//! rustls (ring) with the webpki roots for HTTPS, and an optional bearer token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Uri};
use http_body::Body as _;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use yardstick_timing::{RxStamp, StampedTcp};

use crate::openai::{self, Api};
use crate::plan::PlannedRequest;
use crate::record::{Clock, ErrorClass, PromptTokenSource, RequestRecord, TokenSource};
use crate::sse::SseParser;
use crate::tokenizer::LocalTokenizer;

type Io = MaybeHttpsStream<StampedTcp>;
type Driver = Pin<Box<http1::Connection<Io, Full<Bytes>>>>;

/// Where and how to send requests.
#[derive(Clone)]
pub struct ClientConfig {
    /// Base URL of the server, e.g. `http://127.0.0.1:8000` (a `/v1` suffix is optional).
    pub url: String,
    /// The API to call.
    pub api: Api,
    /// Stream responses (SSE). Embeddings are never streamed.
    pub stream: bool,
    /// Give up on a request this long after it was sent.
    pub request_timeout: Duration,
    /// Name of the environment variable holding a bearer token, if any.
    pub bearer_env: Option<String>,
    /// Idle connections kept for reuse (size it to the concurrency).
    pub max_idle: usize,
    /// A PEM file of extra CA certificates to trust for HTTPS (a private CA, a self-signed
    /// endpoint), beside the webpki roots. Verification is never switched off.
    pub ca_cert: Option<std::path::PathBuf>,
    /// Try again a request the server turned away (`429`, `503`); `None` records the refusal
    /// as the request's failure.
    pub retry: Option<RetryPolicy>,
}

/// How a client tries again a request the server turned away: what a well-behaved production
/// client does under backpressure. Latencies still count from when the request was scheduled,
/// so the waits are part of what the user sees.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RetryPolicy {
    /// The statuses tried again (`429`, `503`).
    pub on: Vec<u16>,
    /// Attempts at most, the first included.
    pub max_attempts: u32,
    /// Wait what the server's `Retry-After` says, when it says (else the backoff).
    pub honour_retry_after: bool,
    /// The wait before the second attempt when there is no `Retry-After` to honour; doubled
    /// for each further attempt, with a deterministic jitter of up to half of it.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub backoff: Duration,
    /// The longest single wait: a `Retry-After` beyond it is cut to it.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    /// 429 and 503, 4 attempts, `Retry-After` honoured, 0.5 s backoff, waits of at most 30 s.
    fn default() -> Self {
        RetryPolicy {
            on: vec![429, 503],
            max_attempts: 4,
            honour_retry_after: true,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// How long to wait after attempt `attempt` (from 1) of request `index` was turned away
    /// with `retry_after_s`.
    pub fn wait(&self, index: u64, attempt: u32, retry_after_s: Option<f64>) -> Duration {
        let wait = match retry_after_s.filter(|_| self.honour_retry_after) {
            Some(s) => Duration::from_secs_f64(s.clamp(0.0, 86_400.0)),
            None => {
                let base = self
                    .backoff
                    .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
                // A jitter in [0.5, 1) of the base, from the request and the attempt, so
                // clients turned away together do not come back together.
                let mut h = index
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .wrapping_add(u64::from(attempt));
                h ^= h >> 29;
                h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                h ^= h >> 32;
                base.mul_f64(0.5 + (h % 1024) as f64 / 2048.0)
            }
        };
        wait.min(self.max_wait)
    }
}

mod secs {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let x = <f64 as serde::Deserialize>::deserialize(d)?;
        Duration::try_from_secs_f64(x).map_err(serde::de::Error::custom)
    }
}

/// Seconds of a `Retry-After` header: delay-seconds, or an HTTP date counted from `now`
/// (RFC 9110 §10.2.3); `None` when it is neither.
pub fn parse_retry_after(v: &str, now: std::time::SystemTime) -> Option<f64> {
    let v = v.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then_some(s);
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(now)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
    )
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("url", &self.url)
            .field("api", &self.api)
            .field("stream", &self.stream)
            .field("request_timeout", &self.request_timeout)
            .field("bearer_env", &self.bearer_env)
            .field("ca_cert", &self.ca_cert)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not an absolute http(s) URL.
    #[error("invalid URL `{url}`: {why}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The bearer token's variable is unset or not valid in a header.
    #[error(
        "environment variable {0} (named by --bearer-env) is unset, empty or not valid in a header"
    )]
    Bearer(String),
    /// TLS could not be set up.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
}

/// Why no connection could be had for a request (recorded as a connect error).
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    /// TCP (and TLS) did not connect.
    #[error("connect: {0}")]
    Connect(Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP/1 handshake failed.
    #[error("handshake: {0}")]
    Handshake(hyper::Error),
}

struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: Driver,
    closed: bool,
    /// When the kernel received the bytes last read from this connection.
    rx: RxStamp,
}

/// Opens TCP connections that read through [`StampedTcp`], so every response event is
/// timestamped with its arrival in the kernel rather than with when this process got to it.
#[derive(Clone)]
struct StampConnector {
    http: HttpConnector,
    clock: Clock,
}

impl tower_service::Service<Uri> for StampConnector {
    type Response = StampedTcp;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<StampedTcp, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.http.call(uri);
        let clock = self.clock;
        Box::pin(async move {
            let tcp = connecting.await?.into_inner();
            Ok(StampedTcp::new(tcp, clock))
        })
    }
}

impl Conn {
    /// Whether the connection is still usable (polls it once without registering interest
    /// that matters: a closed idle connection resolves immediately).
    fn usable(&mut self) -> bool {
        if self.closed || self.sender.is_closed() {
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        if self.driver.as_mut().poll(&mut cx).is_ready() {
            self.closed = true;
            return false;
        }
        true
    }
}

/// Polls the connection's I/O and `fut` together in the calling task: `fut`, then the
/// connection, then `fut` again. A request `fut` has just queued is written to the socket in
/// the same poll (not after another trip through the scheduler, which on a busy machine costs
/// milliseconds that would count as server time), and a response frame the connection has
/// just read reaches `fut` at once.
async fn drive<F: Future>(driver: &mut Driver, closed: &mut bool, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        if !*closed && driver.as_mut().poll(cx).is_ready() {
            *closed = true;
        }
        fut.as_mut().poll(cx)
    })
    .await
}

/// A benchmark client for one server.
pub struct Client {
    connector: HttpsConnector<StampConnector>,
    connect_uri: Uri,
    path: Uri,
    host: HeaderValue,
    auth: Option<HeaderValue>,
    api: Api,
    stream: bool,
    timeout: Duration,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    clock: Clock,
    run_tag: String,
    tokenizer: Option<std::sync::Arc<LocalTokenizer>>,
    keep_response: bool,
    keep_text: bool,
    trace_context: bool,
    retry: Option<RetryPolicy>,
}

/// Resolves the endpoint URL for `api` from a base URL.
pub fn endpoint(url: &str, api: Api) -> Result<Uri, ClientError> {
    let bad = |why: &str| ClientError::Url {
        url: url.to_string(),
        why: why.to_string(),
    };
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => return Err(bad("the scheme must be http or https")),
    }
    let authority = uri.authority().ok_or_else(|| bad("a host is required"))?;
    let mut path = uri.path().trim_end_matches('/').to_string();
    if !path.ends_with(api.path()) {
        if !path.ends_with("/v1") {
            path.push_str("/v1");
        }
        path.push_str(api.path());
    }
    Uri::builder()
        .scheme(uri.scheme_str().unwrap_or("http"))
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|e| bad(&e.to_string()))
}

/// Checks that `path` holds at least one PEM certificate that can be trusted, the way a client
/// built with it as `ca_cert` would read it: lets a caller refuse a bad file before any work.
pub fn check_ca_cert(path: &std::path::Path) -> Result<(), ClientError> {
    tls_config(Some(path)).map(drop)
}

/// rustls (ring) trusting the webpki roots and the certificates of `ca_cert`, if given.
pub fn tls_config(ca_cert: Option<&std::path::Path>) -> Result<rustls::ClientConfig, ClientError> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = ca_cert {
        let bad = |why: String| {
            ClientError::Tls(format!("CA certificate file {}: {why}", path.display()))
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate in the file".into()));
        }
        for c in certs {
            roots.add(c).map_err(|e| bad(e.to_string()))?;
        }
    }
    rustls::ClientConfig::builder_with_provider(rustls::crypto::ring::default_provider().into())
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .map_err(|e| ClientError::Tls(e.to_string()))
}

impl Client {
    /// Builds a client; reads the bearer token from its variable now (it is never logged).
    pub fn new(cfg: &ClientConfig, clock: Clock, run_tag: &str) -> Result<Client, ClientError> {
        let full = endpoint(&cfg.url, cfg.api)?;
        let authority = full.authority().expect("endpoint has an authority").clone();
        let connect_uri = Uri::builder()
            .scheme(full.scheme_str().unwrap_or("http"))
            .authority(authority.as_str())
            .path_and_query("/")
            .build()
            .map_err(|e| ClientError::Url {
                url: cfg.url.clone(),
                why: e.to_string(),
            })?;
        let path = Uri::builder()
            .path_and_query(full.path())
            .build()
            .map_err(|e| ClientError::Url {
                url: cfg.url.clone(),
                why: e.to_string(),
            })?;
        let host = HeaderValue::from_str(authority.as_str()).map_err(|e| ClientError::Url {
            url: cfg.url.clone(),
            why: e.to_string(),
        })?;
        let auth = match &cfg.bearer_env {
            None => None,
            Some(var) => {
                let token = std::env::var(var).ok().filter(|t| !t.is_empty());
                let token = token.ok_or_else(|| ClientError::Bearer(var.clone()))?;
                let mut v = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| ClientError::Bearer(var.clone()))?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        http.set_connect_timeout(Some(cfg.request_timeout.min(Duration::from_secs(30))));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(cfg.ca_cert.as_deref())?)
            .https_or_http()
            .enable_http1()
            .wrap_connector(StampConnector { http, clock });
        Ok(Client {
            connector,
            connect_uri,
            path,
            host,
            auth,
            api: cfg.api,
            stream: cfg.stream && cfg.api != Api::Embeddings,
            timeout: cfg.request_timeout,
            idle: Mutex::new(Vec::new()),
            max_idle: cfg.max_idle.max(1),
            clock,
            run_tag: run_tag.to_string(),
            tokenizer: None,
            keep_response: false,
            keep_text: false,
            trace_context: true,
            retry: cfg
                .retry
                .clone()
                .filter(|r| r.max_attempts > 1 && !r.on.is_empty()),
        })
    }

    /// Sends no W3C `traceparent` header (`--no-trace-context`); every request carries one by
    /// default, so a server's traces join on the record's `trace_id`.
    pub fn without_trace_context(mut self) -> Self {
        self.trace_context = false;
        self
    }

    /// Counts output tokens locally too (and uses that count when the server reports none).
    pub fn with_tokenizer(mut self, t: std::sync::Arc<LocalTokenizer>) -> Self {
        self.tokenizer = Some(t);
        self
    }

    /// Keeps what the server answered in every record: the content text in
    /// [`RequestRecord::content_text`] (streamed or not) and, for non-streamed requests, the
    /// whole body in [`RequestRecord::response_body`]. For accuracy evals and perplexity; load
    /// runs leave it off and pay nothing for it.
    pub fn keeping_responses(mut self) -> Self {
        self.keep_response = true;
        self
    }

    /// Keeps the content text of every answer in [`RequestRecord::content_text`] (a session's
    /// next turn sends it back as the conversation's history).
    pub fn keeping_text(mut self) -> Self {
        self.keep_text = true;
        self
    }

    /// The run's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Whether responses are streamed.
    pub fn streaming(&self) -> bool {
        self.stream
    }

    async fn connect(&self) -> Result<Conn, ConnectError> {
        let mut c = self.connector.clone();
        let io = tower_service::Service::call(&mut c, self.connect_uri.clone())
            .await
            .map_err(ConnectError::Connect)?;
        let rx = match &io {
            MaybeHttpsStream::Http(tcp) => tcp.stamp(),
            MaybeHttpsStream::Https(tls) => tls.inner().get_ref().0.inner().stamp(),
        };
        let (sender, conn) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(ConnectError::Handshake)?;
        Ok(Conn {
            sender,
            driver: Box::pin(conn),
            closed: false,
            rx,
        })
    }

    async fn checkout(&self) -> Result<Conn, ConnectError> {
        loop {
            let c = self.idle.lock().expect("pool lock").pop();
            match c {
                Some(mut c) => {
                    if c.usable() {
                        return Ok(c);
                    }
                }
                None => return self.connect().await,
            }
        }
    }

    fn checkin(&self, mut c: Conn) {
        if c.usable() {
            let mut idle = self.idle.lock().expect("pool lock");
            if idle.len() < self.max_idle {
                idle.push(c);
            }
        }
    }

    /// Opens up to `n` connections ahead of the run so the first requests do not pay for them.
    pub async fn prewarm(&self, n: usize) {
        let n = n.min(self.max_idle);
        let mut opened = Vec::new();
        for _ in 0..n {
            match self.connect().await {
                Ok(c) => opened.push(c),
                Err(_) => break,
            }
        }
        let mut idle = self.idle.lock().expect("pool lock");
        idle.extend(opened);
    }

    /// A JSON POST to `uri` on this server: its `Host`, and the bearer token when there is one.
    fn post(&self, uri: Uri) -> http::request::Builder {
        let b = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, "application/json");
        match &self.auth {
            Some(a) => b.header(header::AUTHORIZATION, a.clone()),
            None => b,
        }
    }

    /// One POST of a JSON `body` to `path` at the server's root (`/tokenize`), outside any
    /// measurement, with the client's authorization: the status and body, or why not.
    pub async fn post_root(&self, path: &str, body: Bytes) -> Result<(u16, Bytes), String> {
        let uri: Uri = path.parse().map_err(|e| format!("{path}: {e}"))?;
        let mut conn = tokio::time::timeout(self.timeout, self.checkout())
            .await
            .map_err(|_| "timed out connecting".to_string())?
            .map_err(|e| e.to_string())?;
        let req = self
            .post(uri)
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        let Conn {
            sender,
            driver,
            closed,
            ..
        } = &mut conn;
        let call = async {
            sender.ready().await.map_err(|e| e.to_string())?;
            let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status().as_u16();
            let bytes = http_body_util::Limited::new(resp.into_body(), 1 << 20)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>((status, bytes))
        };
        let out = tokio::time::timeout(self.timeout, drive(driver, closed, call))
            .await
            .map_err(|_| "timed out".to_string())?;
        if out.is_ok() {
            self.checkin(conn);
        }
        out
    }

    /// Sends one planned request scheduled at `scheduled` and records what happens; under a
    /// retry policy, tries again after each refusal it names. Never fails: every failure is a
    /// classified record.
    pub async fn execute(
        &self,
        plan: &PlannedRequest,
        scheduled: Instant,
        warmup: bool,
    ) -> RequestRecord {
        let mut retries = Vec::new();
        let mut first_sent = None;
        loop {
            let mut rec = self.attempt(plan, scheduled, warmup).await;
            first_sent = first_sent.or(rec.sent_ns);
            let attempt = retries.len() as u32 + 1;
            let retry = self.retry.as_ref().filter(|p| {
                attempt < p.max_attempts && rec.status.is_some_and(|s| p.on.contains(&s))
            });
            if let Some(policy) = retry {
                let wait = policy.wait(plan.index, attempt, rec.retry_after_s);
                retries.push(crate::record::Retry {
                    status: rec.status.unwrap_or_default(),
                    retry_after_s: rec.retry_after_s,
                    waited_ms: wait.as_secs_f64() * 1e3,
                });
                tokio::time::sleep(wait).await;
                continue;
            }
            if !retries.is_empty() {
                rec.sent_ns = first_sent;
                rec.retries = retries;
            }
            return rec;
        }
    }

    /// One attempt of `execute`.
    async fn attempt(
        &self,
        plan: &PlannedRequest,
        scheduled: Instant,
        warmup: bool,
    ) -> RequestRecord {
        let clock = self.clock;
        let mut rec = RequestRecord::new(
            plan.index,
            request_id(&self.run_tag, plan.index),
            warmup,
            plan.lengths.input,
            plan.lengths.output,
            clock.ns(scheduled),
        );
        if self.tokenizer.is_some() || self.keep_response {
            rec.content_text = Some(String::new());
        }
        if self.keep_text {
            rec.answer_text = Some(String::new());
        }
        // A structured kind's answer is checked: keep its text and tool calls until then.
        let check = plan.kind.as_ref().filter(|k| k.checks());
        if let Some(k) = &plan.kind {
            rec.kind = Some(k.kind());
            rec.eval_task = k.task().map(|t| t.to_string());
        }
        rec.image_bytes = plan.image_bytes;
        rec.class = plan.class;
        if check.is_some() {
            rec.answer_text.get_or_insert_with(String::new);
            rec.tool_calls = Some(Vec::new());
        }
        let mut conn = match tokio::time::timeout(self.timeout, self.checkout()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                rec.error = Some(ErrorClass::Connect);
                rec.error_message = Some(e.to_string());
                rec.done_ns = Some(clock.now_ns());
                return rec;
            }
            Err(_) => {
                rec.error = Some(ErrorClass::Timeout);
                rec.error_message = Some("timed out connecting".into());
                rec.done_ns = Some(clock.now_ns());
                return rec;
            }
        };
        let traceparent = self.trace_context.then(|| {
            let (trace, header) = traceparent(&rec.request_id, plan.index);
            rec.trace_id = Some(trace);
            header
        });
        let mut req = self
            .post(self.path.clone())
            .header(
                header::ACCEPT,
                if self.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .header("x-request-id", rec.request_id.as_str())
            .body(Full::new(plan.body.clone()))
            .expect("request parts are valid");
        if let Some(h) = traceparent
            && let Ok(v) = HeaderValue::from_str(&h)
        {
            req.headers_mut().insert("traceparent", v);
        }
        let Conn {
            sender,
            driver,
            closed,
            rx,
        } = &mut conn;
        let exchange = exchange(
            sender,
            req,
            &mut rec,
            clock,
            rx,
            Shape {
                stream: self.stream,
                api: self.api,
                keep_body: self.keep_response,
            },
        );
        let result = tokio::time::timeout(self.timeout, drive(driver, closed, exchange)).await;
        let reusable = match result {
            Ok(Ok(clean)) => clean,
            Ok(Err((class, msg))) => {
                rec.error = Some(class);
                rec.error_message = Some(msg);
                false
            }
            Err(_) => {
                rec.error = Some(ErrorClass::Timeout);
                rec.error_message = Some(format!("no complete response within {:?}", self.timeout));
                false
            }
        };
        if rec.done_ns.is_none() {
            rec.done_ns = Some(clock.now_ns());
        }
        if let Some(t) = &self.tokenizer {
            let text = if self.keep_response {
                rec.content_text.clone()
            } else {
                rec.content_text.take()
            };
            if let Some(text) = text
                && rec.ok()
            {
                rec.local_output_tokens = Some(t.count(&text));
            }
        }
        finalize_tokens(&mut rec, self.tokenizer.is_some());
        if let Some(k) = check {
            let calls = rec.tool_calls.take().unwrap_or_default();
            if rec.ok() {
                let answer = rec.answer_text.as_deref().unwrap_or_default();
                match k.validate(answer, &calls) {
                    Ok(()) => rec.valid = Some(true),
                    Err(why) => {
                        rec.valid = Some(false);
                        rec.invalid_reason = Some(why);
                    }
                }
            }
            if !self.keep_text {
                rec.answer_text = None;
            }
        }
        if reusable {
            self.checkin(conn);
        }
        rec
    }
}

/// The W3C trace context of a request: its trace id (the request id's 32 hex digits, so the
/// two join) and the `traceparent` header `00-<trace id>-<span id>-01` (sampled), the span id
/// a hash of the request id and index, never zero.
pub fn traceparent(request_id: &str, index: u64) -> (String, String) {
    let trace: String = request_id.chars().filter(char::is_ascii_hexdigit).collect();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ index.rotate_left(17);
    for b in trace.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let header = format!("00-{trace}-{:016x}-01", h | 1);
    (trace, header)
}

/// The `X-Request-Id` of request `index` of a run: UUID-shaped (RFC 9562 version 8: FNV-1a of
/// the run tag, then the index), unique per run and request, because some servers reject any
/// other shape (llama-cpp-python's server answers 400 to a non-UUID request id).
pub fn request_id(run_tag: &str, index: u64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in run_tag.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!(
        "{:08x}-{:04x}-8{:03x}-{:04x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        0x8000 | ((index >> 48) & 0x3fff),
        index & 0xffff_ffff_ffff
    )
}

fn finalize_tokens(rec: &mut RequestRecord, planned_by_tokenizer: bool) {
    if rec.reasoning_tokens.is_none() && rec.reasoning_events > 0 {
        rec.reasoning_tokens = Some(rec.reasoning_events);
    }
    rec.prompt_tokens_source = Some(if rec.prompt_tokens.is_some() {
        PromptTokenSource::ServerUsage
    } else if planned_by_tokenizer {
        PromptTokenSource::Tokenizer
    } else {
        PromptTokenSource::PlanWords
    });
    if rec.output_tokens.is_some() {
        rec.output_tokens_source = Some(TokenSource::ServerUsage);
    } else if rec.ok()
        && let Some(n) = rec.local_output_tokens
    {
        rec.output_tokens = Some(n);
        rec.output_tokens_source = Some(TokenSource::Tokenizer);
    } else if rec.ok() && rec.content_events > 0 {
        rec.output_tokens = Some(rec.content_events);
        rec.output_tokens_source = Some(TokenSource::ContentEvents);
    }
}

type Failure = (ErrorClass, String);

fn status_class(s: u16) -> ErrorClass {
    match s {
        400..=499 => ErrorClass::Http4xx,
        500..=599 => ErrorClass::Http5xx,
        _ => ErrorClass::HttpOther,
    }
}

/// What kind of response `exchange` expects and what it keeps of it.
#[derive(Clone, Copy)]
struct Shape {
    stream: bool,
    api: Api,
    keep_body: bool,
}

/// Sends `req` and reads the whole response into `rec`. `Ok(true)` when the connection is
/// clean for reuse.
async fn exchange(
    sender: &mut http1::SendRequest<Full<Bytes>>,
    req: Request<Full<Bytes>>,
    rec: &mut RequestRecord,
    clock: Clock,
    rx: &RxStamp,
    shape: Shape,
) -> Result<bool, Failure> {
    let Shape {
        stream,
        api,
        keep_body,
    } = shape;
    sender
        .ready()
        .await
        .map_err(|e| (ErrorClass::Connect, format!("connection not ready: {e}")))?;
    rec.sent_ns = Some(clock.now_ns());
    let resp = sender.send_request(req).await.map_err(|e| {
        if e.is_canceled() || e.is_closed() {
            (
                ErrorClass::Connect,
                format!("connection closed before sending: {e}"),
            )
        } else {
            (ErrorClass::StreamCut, format!("no response: {e}"))
        }
    })?;
    // Arrival times are the kernel's receive stamps of the bytes just read (see
    // `yardstick_timing::tcp`), "now" where the platform gives none.
    rec.first_byte_ns = Some(rx.get());
    let status = resp.status().as_u16();
    rec.status = Some(status);
    rec.retry_after_s = resp
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
    let mut body = resp.into_body();
    if !(200..300).contains(&status) {
        let mut text = Vec::new();
        while let Some(Ok(f)) = body.frame().await {
            if let Ok(d) = f.into_data()
                && text.len() < 4096
            {
                text.extend_from_slice(&d);
            }
        }
        let shown: String = String::from_utf8_lossy(&text).chars().take(300).collect();
        return Err((status_class(status), format!("HTTP {status}: {shown}")));
    }
    if !stream {
        let bytes = body
            .collect()
            .await
            .map_err(|e| (ErrorClass::StreamCut, format!("body cut: {e}")))?
            .to_bytes();
        rec.done_ns = Some(rx.get());
        if keep_body {
            rec.response_body = Some(bytes.clone());
        }
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            (
                ErrorClass::MalformedEvent,
                format!("response is not JSON: {e}"),
            )
        })?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err((
                ErrorClass::MalformedEvent,
                format!("error in body: {}", v["error"]),
            ));
        }
        rec.response_id = v["id"].as_str().map(str::to_owned);
        let u = &v["usage"];
        rec.prompt_tokens = u["prompt_tokens"].as_u64();
        rec.cached_prompt_tokens = u["prompt_tokens_details"]["cached_tokens"].as_u64();
        rec.reasoning_tokens = u["completion_tokens_details"]["reasoning_tokens"].as_u64();
        if api != Api::Embeddings {
            rec.output_tokens = u["completion_tokens"].as_u64();
            // The same fields count as content as in a stream: the answer (`message.content`
            // or a completion's `text`) and a reasoning model's `reasoning_content` /
            // `reasoning`, which are output tokens too.
            let c = &v["choices"][0];
            let m = &c["message"];
            if let Some(calls) = m["tool_calls"].as_array() {
                for (k, c) in calls.iter().enumerate() {
                    let f = &c["function"];
                    let name = f["name"].as_str().unwrap_or_default();
                    // Arguments are JSON text; a server that sends an object is answered as
                    // its text.
                    let arguments = match &f["arguments"] {
                        serde_json::Value::String(a) => a.clone(),
                        serde_json::Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    rec.content_bytes += (name.len() + arguments.len()) as u64;
                    if let Some(t) = rec.tool_calls.as_mut() {
                        openai::add_tool_pieces(
                            t,
                            &[openai::ToolCallPiece {
                                index: k,
                                name: name.to_string(),
                                arguments,
                            }],
                        );
                    }
                }
            }
            for (part, reasoning) in [
                (&m["reasoning_content"], true),
                (&m["reasoning"], true),
                (&m["content"], false),
                (&c["text"], false),
            ] {
                if let Some(s) = part.as_str() {
                    rec.content_bytes += s.len() as u64;
                    if let Some(t) = rec.content_text.as_mut() {
                        t.push_str(s);
                    }
                    if !reasoning && let Some(t) = rec.answer_text.as_mut() {
                        t.push_str(s);
                    }
                }
            }
        }
        return Ok(true);
    }

    let mut parser = SseParser::new();
    let mut st = StreamState::default();
    loop {
        let frame = body.frame().await;
        // Timestamp on arrival, before any parsing.
        let t = rx.get();
        match frame {
            None => {
                parser.finish(|d| st.event(d, t, rec));
                break;
            }
            Some(Err(e)) => {
                parser.finish(|d| st.event(d, t, rec));
                if st.done {
                    // Everything arrived; only the connection's end was unclean.
                    return Ok(false);
                }
                return Err((ErrorClass::StreamCut, format!("stream cut: {e}")));
            }
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    parser.feed(&d, |ev| st.event(ev, t, rec));
                }
            }
        }
        if let Some(f) = st.failure.take() {
            return Err(f);
        }
        if st.done {
            break;
        }
    }
    if let Some(f) = st.failure {
        return Err(f);
    }
    if rec.done_ns.is_none() {
        // The body ended without `[DONE]`: accepted (some servers omit it).
        rec.done_ns = Some(rx.get());
    }
    if body.is_end_stream() {
        return Ok(true);
    }
    // `[DONE]` is in; the end of the body normally follows at once. Reuse the connection
    // only if it does.
    match tokio::time::timeout(Duration::from_millis(20), body.frame()).await {
        Ok(None) => Ok(true),
        _ => Ok(false),
    }
}

#[derive(Default)]
struct StreamState {
    done: bool,
    failure: Option<Failure>,
}

impl StreamState {
    /// Applies one event that arrived at `t`.
    fn event(&mut self, data: &[u8], t: u64, rec: &mut RequestRecord) {
        if self.done || self.failure.is_some() {
            return;
        }
        if rec.response_id.is_none() {
            rec.response_id = openai::response_id(data);
        }
        match openai::classify_with(
            data,
            rec.content_text.is_some() || rec.answer_text.is_some() || rec.tool_calls.is_some(),
        ) {
            Ok(None) => {
                self.done = true;
                rec.done_ns = Some(t);
            }
            Ok(Some(ev)) => {
                if ev.error {
                    self.failure = Some((
                        ErrorClass::MalformedEvent,
                        format!(
                            "error event in stream: {}",
                            String::from_utf8_lossy(&data[..data.len().min(300)])
                        ),
                    ));
                    return;
                }
                if ev.content_bytes > 0 {
                    if rec.first_content_ns.is_none() {
                        rec.first_content_ns = Some(t);
                    }
                    if ev.reasoning_bytes > 0 {
                        rec.reasoning_events += 1;
                    }
                    if ev.content_bytes > ev.reasoning_bytes && rec.first_answer_ns.is_none() {
                        rec.first_answer_ns = Some(t);
                    }
                    rec.last_content_ns = Some(t);
                    rec.content_event_ns.push(t);
                    rec.content_events += 1;
                    rec.content_bytes += ev.content_bytes as u64;
                    if let Some(t) = rec.content_text.as_mut() {
                        t.push_str(&ev.text);
                    }
                    if let Some(t) = rec.answer_text.as_mut() {
                        t.push_str(&ev.answer_text);
                    }
                    if let Some(calls) = rec.tool_calls.as_mut() {
                        openai::add_tool_pieces(calls, &ev.tool_calls);
                    }
                }
                if let Some(u) = ev.usage {
                    if u.prompt_tokens.is_some() {
                        rec.prompt_tokens = u.prompt_tokens;
                    }
                    if let Some(c) = u.cached_tokens() {
                        rec.cached_prompt_tokens = Some(c);
                    }
                    if let Some(r) = u.reasoning_tokens() {
                        rec.reasoning_tokens = Some(r);
                    }
                    if u.completion_tokens.is_some() {
                        rec.output_tokens = u.completion_tokens;
                    }
                }
            }
            Err(e) => self.failure = Some((ErrorClass::MalformedEvent, e.to_string())),
        }
    }
}
