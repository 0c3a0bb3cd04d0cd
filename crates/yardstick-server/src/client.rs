//! A client of a `yardstick server` (what `yardstick push`, `run --push` and `gate --server`
//! use): JSON requests and streamed file uploads over HTTP/1.1 or HTTPS (the public roots, or a
//! CA file), with a bearer token that never reaches a log or an output. Errors from the server
//! keep its status, message and hint.
//!
//! * [`Remote`]: one server; `get`, `post`, `put_file`, `download`.
//! * [`push`]: send a finished run directory (manifest, missing blobs, commit).
//! * [`fetch_baseline`]: a baseline run of the server as the gate's [`RunData`], its eval items
//!   downloaded and checked against their sha256.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use yardstick_error::UserFacing;
use yardstick_gate::RunData;
use yardstick_store::layout::MANIFEST;
use yardstick_store::run::ATTESTATION;
use yardstick_store::warehouse::{BaselineRow, FactRow, RunRow};

use crate::api::gate::PushGate;
use crate::api::push::{BlobStored, PushStart, PushState, PushStatus};

/// How long one request may take (an upload of a large artifact included).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why talking to a server failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL, token or CA file is wrong: nothing was sent.
    #[error("{0}")]
    Setup(String),
    /// What was to be sent or asked for is wrong (an unreadable run directory, a baseline the
    /// server does not have): the user's input.
    #[error("{message}")]
    Input {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: Option<String>,
    },
    /// The server could not be reached, or the connection broke.
    #[error("{url}: {why}")]
    Unreachable {
        /// The server.
        url: String,
        /// Why.
        why: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered {status}: {error}")]
    Status {
        /// The server.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's message.
        error: String,
        /// The server's hint.
        hint: Option<String>,
    },
    /// An upload failed.
    #[error("uploading {path}: {source}")]
    Upload {
        /// The artifact.
        path: String,
        /// Why.
        source: Box<ClientError>,
    },
    /// The server's answer cannot be used (a run that does not read, an artifact whose bytes do
    /// not match its hash).
    #[error("{0}")]
    Answer(String),
    /// A local file could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ClientError {
    /// The HTTP status of a server's refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            ClientError::Upload { source, .. } => source.status(),
            _ => None,
        }
    }

    fn input(message: impl Into<String>, hint: Option<&str>) -> ClientError {
        ClientError::Input {
            message: message.into(),
            hint: hint.map(str::to_owned),
        }
    }
}

impl UserFacing for ClientError {
    /// Whether the user can fix it: a bad setup, bad input, or a refusal of the server (4xx).
    /// An unreachable or failing server (5xx) is not.
    fn is_invalid_input(&self) -> bool {
        match self {
            ClientError::Setup(_) | ClientError::Input { .. } => true,
            ClientError::Status { status, .. } => (400..500).contains(status),
            ClientError::Upload { source, .. } => source.is_invalid_input(),
            _ => false,
        }
    }

    /// The hint, if there is one (the server's, for a refusal).
    fn hint(&self) -> Option<String> {
        match self {
            ClientError::Status { hint, .. } | ClientError::Input { hint, .. } => hint.clone(),
            ClientError::Upload { source, .. } => source.hint(),
            _ => None,
        }
    }
}

/// A request body: all at once, or a file's chunks read on a blocking thread.
enum ReqBody {
    Full(Full<Bytes>),
    Channel(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>),
}

impl http_body::Body for ReqBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            ReqBody::Full(f) => Pin::new(f)
                .poll_frame(cx)
                .map(|o| o.map(|r| r.map_err(|never| match never {}))),
            ReqBody::Channel(rx) => rx
                .poll_recv(cx)
                .map(|o| o.map(|r| r.map(http_body::Frame::data))),
        }
    }
}

/// A server to talk to.
pub struct Remote {
    base: String,
    auth: Option<HeaderValue>,
    client: Client<HttpsConnector<HttpConnector>, ReqBody>,
}

impl Remote {
    /// A client of the server at `url` (`http://` or `https://`), sending `token` as a bearer
    /// token when given, trusting `ca_cert`'s certificates besides the public roots.
    pub fn new(
        url: &str,
        token: Option<String>,
        ca_cert: Option<&Path>,
    ) -> Result<Remote, ClientError> {
        let base = url.trim_end_matches('/').to_string();
        let uri: Uri = base
            .parse()
            .map_err(|e| ClientError::Setup(format!("`{url}` is not a URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(ClientError::Setup(format!(
                "`{url}` is not an http:// or https:// URL of a yardstick server"
            )));
        }
        let auth = match token {
            None => None,
            Some(t) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", t.trim())).map_err(|_| {
                        ClientError::Setup("the token has characters a header cannot carry".into())
                    })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let tls = yardstick_load::client::tls_config(ca_cert)
            .map_err(|e| ClientError::Setup(e.to_string()))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(30)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        Ok(Remote { base, auth, client })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&'static str>,
        content_length: Option<u64>,
        body: ReqBody,
    ) -> Result<T, ClientError> {
        let unreachable = |why: String| ClientError::Unreachable {
            url: self.base.clone(),
            why,
        };
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(header::ACCEPT, "application/json");
        if let Some(t) = content_type {
            req = req.header(header::CONTENT_TYPE, t);
        }
        if let Some(n) = content_length {
            req = req.header(header::CONTENT_LENGTH, n);
        }
        if let Some(a) = &self.auth {
            req = req.header(header::AUTHORIZATION, a.clone());
        }
        let req = req
            .body(body)
            .map_err(|e| ClientError::Setup(format!("{path}: {e}")))?;
        let resp = tokio::time::timeout(REQUEST_TIMEOUT, async {
            let resp = self.client.request(req).await?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .map_err(|e| e.to_string());
            Ok::<_, hyper_util::client::legacy::Error>((status, bytes))
        })
        .await
        .map_err(|_| unreachable(format!("no answer within {REQUEST_TIMEOUT:?}")))?
        .map_err(|e| {
            // The innermost cause says what happened (connection refused, TLS, reset).
            let mut why = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                why = s.to_string();
                src = s.source();
            }
            unreachable(why)
        })?;
        let (status, bytes) = resp;
        let bytes = bytes.map_err(unreachable)?;
        if !status.is_success() {
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(ClientError::Status {
                url: self.base.clone(),
                status: status.as_u16(),
                error: v["error"].as_str().map_or_else(
                    || String::from_utf8_lossy(&bytes).chars().take(300).collect(),
                    str::to_owned,
                ),
                hint: v["hint"].as_str().map(str::to_owned),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            unreachable(format!(
                "{path}: the answer is not what a yardstick server sends ({e})"
            ))
        })
    }

    /// `GET path` (with its query), decoded from JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(
            Method::GET,
            path,
            None,
            None,
            ReqBody::Full(Full::new(Bytes::new())),
        )
        .await
    }

    /// `POST path` with a JSON body, the answer decoded from JSON.
    pub async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Setup(e.to_string()))?;
        self.send(
            Method::POST,
            path,
            Some("application/json"),
            Some(bytes.len() as u64),
            ReqBody::Full(Full::new(Bytes::from(bytes))),
        )
        .await
    }

    /// `PUT path` with the bytes of `file` (of `size` bytes), streamed from disk.
    pub async fn put_file<T: DeserializeOwned>(
        &self,
        path: &str,
        file: std::fs::File,
        size: u64,
    ) -> Result<T, ClientError> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut f = file;
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                match f.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx
                            .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
        });
        self.send(
            Method::PUT,
            path,
            Some("application/octet-stream"),
            Some(size),
            ReqBody::Channel(rx),
        )
        .await
    }

    /// `GET path` of raw bytes (an artifact), with the response's `X-Yardstick-Sha256`.
    pub async fn download(&self, path: &str) -> Result<(Bytes, Option<String>), ClientError> {
        let unreachable = |why: String| ClientError::Unreachable {
            url: self.base.clone(),
            why,
        };
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(format!("{}{path}", self.base));
        if let Some(a) = &self.auth {
            req = req.header(header::AUTHORIZATION, a.clone());
        }
        let req = req
            .body(ReqBody::Full(Full::new(Bytes::new())))
            .map_err(|e| ClientError::Setup(format!("{path}: {e}")))?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = resp.status();
        let sha = resp
            .headers()
            .get("x-yardstick-sha256")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| unreachable(e.to_string()))?
            .to_bytes();
        if !status.is_success() {
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(ClientError::Status {
                url: self.base.clone(),
                status: status.as_u16(),
                error: v["error"].as_str().unwrap_or("").to_string(),
                hint: v["hint"].as_str().map(str::to_owned),
            });
        }
        Ok((bytes, sha))
    }
}

/// Escapes a path segment or query value (RFC 3986 unreserved characters stay).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The bearer token from the variable `var`, if set and not empty.
pub fn token_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|t| !t.trim().is_empty())
}

/// What a push did (`yardstick push --json`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PushOutput {
    /// The run's id.
    pub run_id: String,
    /// The server.
    pub url: String,
    /// The push's id on the server.
    pub push_id: String,
    /// `stored`.
    pub state: PushState,
    /// The server had this run already: nothing was sent but the manifest.
    pub already_stored: bool,
    /// Artifacts of the run.
    pub artifacts: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Contents uploaded by this push (the server had the others).
    pub uploaded: usize,
    /// Bytes uploaded by this push.
    pub uploaded_bytes: u64,
    /// Wall time of the push, in seconds.
    pub seconds: f64,
    /// The signature, as the server checked it.
    pub signature: String,
    /// Whether a key the server trusts signed the run.
    pub verified: bool,
    /// The server's gating of the run against its baseline (null when none is set there).
    pub gate: Option<PushGate>,
}

impl PushOutput {
    /// One line for people (two when the server gated the run).
    pub fn text(&self) -> String {
        let line = if self.already_stored {
            format!(
                "run {}: already stored on {} (nothing to send)",
                self.run_id, self.url
            )
        } else {
            format!(
                "run {}: pushed to {} ({} artifact(s), {} of {} byte(s) sent in {:.2} s); {}",
                self.run_id,
                self.url,
                self.artifacts,
                self.uploaded_bytes,
                self.bytes,
                self.seconds,
                self.signature
            )
        };
        match &self.gate {
            Some(g) => format!(
                "{line}\nthe server gated it against baseline {}: {}",
                g.baseline_run, g.verdict
            ),
            None => line,
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Pushes the run in `dir` to `remote`: its manifest (and attestation) first, then every
/// artifact the server does not have, then the commit that verifies and stores it.
pub fn push(remote: &Remote, dir: &Path) -> Result<PushOutput, ClientError> {
    let manifest_bytes = std::fs::read(dir.join(MANIFEST)).map_err(|e| {
        ClientError::input(
            format!("{}: {e}", dir.join(MANIFEST).display()),
            Some("name a run directory or a run id in --store"),
        )
    })?;
    let manifest =
        yardstick_store::read_manifest(dir).map_err(|e| ClientError::input(e.to_string(), None))?;
    let attestation = match std::fs::read(dir.join(ATTESTATION)) {
        Ok(b) => Some(
            String::from_utf8(b)
                .map_err(|_| ClientError::input(format!("{ATTESTATION}: not UTF-8"), None))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ClientError::input(format!("{ATTESTATION}: {e}"), None)),
    };
    let start = PushStart {
        manifest: String::from_utf8(manifest_bytes)
            .map_err(|_| ClientError::input("manifest.json is not UTF-8", None))?,
        attestation,
    };
    let t0 = Instant::now();
    runtime()?.block_on(async {
        let status: PushStatus = remote.post("/api/v1/pushes", &start).await?;
        let mut uploaded = 0;
        let mut uploaded_bytes = 0;
        let mut last = status.clone();
        if status.state == PushState::Uploading {
            for sha in &status.missing {
                // Any artifact with this content: the server stores it once.
                let Some(a) = manifest.artifacts.iter().find(|a| &a.sha256 == sha) else {
                    continue;
                };
                let file = yardstick_store::fsutil::open_in(dir, &a.path)
                    .map_err(|e| ClientError::input(format!("{}: {e}", a.path), None))?
                    .ok_or_else(|| {
                        ClientError::input(
                            format!("{} is listed in the manifest but missing", a.path),
                            Some("`yardstick verify RUN` shows what is missing"),
                        )
                    })?;
                let size = file.metadata().map(|m| m.len()).unwrap_or(a.size);
                let _: BlobStored = remote
                    .put_file(
                        &format!("/api/v1/pushes/{}/blobs/{sha}", status.push_id),
                        file,
                        size,
                    )
                    .await
                    .map_err(|e| ClientError::Upload {
                        path: a.path.clone(),
                        source: Box::new(e),
                    })?;
                uploaded += 1;
                uploaded_bytes += size;
            }
            last = remote
                .post(
                    &format!("/api/v1/pushes/{}/commit", status.push_id),
                    &serde_json::json!({}),
                )
                .await?;
        }
        Ok(PushOutput {
            run_id: last.run_id,
            url: remote.url().to_string(),
            push_id: last.push_id,
            state: last.state,
            already_stored: last.already_stored,
            artifacts: last.artifacts,
            bytes: last.bytes,
            uploaded,
            uploaded_bytes,
            seconds: t0.elapsed().as_secs_f64(),
            signature: last.signature,
            verified: last.verified,
            gate: last.gate,
        })
    })
}

/// A directory removed when dropped: a baseline's files fetched from a server.
#[derive(Debug)]
pub struct Fetched(PathBuf);

impl Drop for Fetched {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The baseline of `cand` on a server: `auto` (the server's baseline of the candidate's machine
/// profile and benchmark) or a run id there. Its row, facts, spec and environment come from the
/// API; its eval items (paired comparisons read them) are downloaded, checked against their
/// sha256, into a temporary directory that lives as long as the returned [`Fetched`].
pub fn fetch_baseline(
    remote: &Remote,
    which: &str,
    cand: &RunData,
) -> Result<(RunData, Fetched), ClientError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let id = if which == "auto" {
            let profile = cand.run.machine_profile.clone().unwrap_or_default();
            #[derive(Deserialize)]
            struct Baselines {
                baselines: Vec<BaselineRow>,
            }
            let list: Baselines = remote
                .get(&format!(
                    "/api/v1/baselines?benchmark={}&profile={}",
                    escape(&cand.run.name),
                    escape(&profile)
                ))
                .await?;
            match list.baselines.into_iter().next() {
                Some(b) => b.run_id,
                None => {
                    return Err(ClientError::input(
                        format!(
                            "{} has no baseline for benchmark {} on machine profile {profile}",
                            remote.url(),
                            cand.run.name
                        ),
                        Some(
                            "save one on the server's store (`yardstick baseline save RUN --store DIR`), or name a run of the server with --baseline RUN_ID",
                        ),
                    ));
                }
            }
        } else if Path::new(which).exists() {
            return Err(ClientError::input(
                format!("--baseline {which}: with --server the baseline is `auto` or a run id on the server"),
                Some("drop --server to gate against a baseline file"),
            ));
        } else {
            which.to_string()
        };
        let detail: serde_json::Value = remote
            .get(&format!("/api/v1/runs/{}", escape(&id)))
            .await?;
        let run: RunRow = serde_json::from_value(detail["run"].clone()).map_err(|e| {
            ClientError::Answer(format!("{}: the run {id} does not read: {e}", remote.url()))
        })?;
        #[derive(Deserialize)]
        struct Facts {
            facts: Vec<FactRow>,
        }
        let facts: Facts = remote
            .get(&format!("/api/v1/runs/{}/facts", escape(&run.run_id)))
            .await?;
        let spec = detail["spec"]
            .as_str()
            .and_then(|t| yardstick_spec::check_bytes(t.as_bytes()).spec);
        let spec_value = spec
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(serde_json::Value::Null);
        let dir = Fetched(std::env::temp_dir().join(format!(
            "yardstick-gate-{}-{}",
            std::process::id(),
            run.run_id
        )));
        std::fs::create_dir_all(&dir.0)?;
        let artifacts: Vec<yardstick_store::Artifact> =
            serde_json::from_value(detail["manifest"]["artifacts"].clone()).unwrap_or_default();
        for a in artifacts.iter().filter(|a| a.path.starts_with("eval/")) {
            if yardstick_store::fsutil::unsafe_relative(&a.path).is_some() {
                continue;
            }
            let path: Vec<String> = a.path.split('/').map(escape).collect();
            let (bytes, _) = remote
                .download(&format!(
                    "/api/v1/runs/{}/artifacts/{}",
                    escape(&run.run_id),
                    path.join("/")
                ))
                .await?;
            if yardstick_store::fsutil::sha256_bytes(&bytes) != a.sha256 {
                return Err(ClientError::Answer(format!(
                    "{}: artifact {} of run {} does not match its sha256",
                    remote.url(),
                    a.path,
                    run.run_id
                )));
            }
            yardstick_store::fsutil::write_atomic(&dir.0.join(&a.path), &bytes)?;
        }
        let data = RunData {
            dir: dir.0.clone(),
            env: detail["env"].clone(),
            run,
            spec,
            spec_value,
            facts: facts.facts,
        };
        Ok((data, dir))
    })
}
