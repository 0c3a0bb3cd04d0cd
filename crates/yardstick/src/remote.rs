//! A client of a `yardstick server`: JSON requests and streamed file uploads over HTTP/1.1 or
//! HTTPS (the public roots, or `--ca-cert FILE`), with a bearer token that never reaches a log
//! or an output. Errors from the server keep its status, message and hint.

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How long one request may take (an upload of a large artifact included).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why a request to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The URL, token or CA file is wrong: nothing was sent.
    #[error("{0}")]
    Setup(String),
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
}

impl RemoteError {
    /// The HTTP status of a server's refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            RemoteError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's hint, if it gave one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            RemoteError::Status { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// The error for the command line: a refusal the client can fix (4xx) or a bad setup is
    /// invalid input (exit 2); an unreachable or failing server (5xx) is a runtime failure
    /// (exit 1).
    pub fn into_cli(self) -> anyhow::Error {
        match &self {
            RemoteError::Setup(_) => crate::exit::invalid(self.to_string(), None),
            RemoteError::Status { status, hint, .. } if (400..500).contains(status) => {
                let hint = hint.clone();
                crate::exit::invalid(self.to_string(), hint.as_deref())
            }
            _ => anyhow::Error::new(self),
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
    ) -> Result<Remote, RemoteError> {
        let base = url.trim_end_matches('/').to_string();
        let uri: Uri = base
            .parse()
            .map_err(|e| RemoteError::Setup(format!("`{url}` is not a URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(RemoteError::Setup(format!(
                "`{url}` is not an http:// or https:// URL of a yardstick server"
            )));
        }
        let auth = match token {
            None => None,
            Some(t) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", t.trim())).map_err(|_| {
                        RemoteError::Setup("the token has characters a header cannot carry".into())
                    })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let tls = yardstick_load::client::tls_config(ca_cert)
            .map_err(|e| RemoteError::Setup(e.to_string()))?;
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
    ) -> Result<T, RemoteError> {
        let unreachable = |why: String| RemoteError::Unreachable {
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
            .map_err(|e| RemoteError::Setup(format!("{path}: {e}")))?;
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
            return Err(RemoteError::Status {
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
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, RemoteError> {
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
    ) -> Result<T, RemoteError> {
        let bytes = serde_json::to_vec(body).map_err(|e| RemoteError::Setup(e.to_string()))?;
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
    ) -> Result<T, RemoteError> {
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
    pub async fn download(&self, path: &str) -> Result<(Bytes, Option<String>), RemoteError> {
        let unreachable = |why: String| RemoteError::Unreachable {
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
            .map_err(|e| RemoteError::Setup(format!("{path}: {e}")))?;
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
            return Err(RemoteError::Status {
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
