//! The request path: one non-streaming POST per item.
//!
//! TEMPORARY, to be merged into `yardstick_load::Client`: that client drops the response text
//! (it keeps it only to count tokens with a local tokenizer and then discards it), and this slice
//! may not change `yardstick-load`. So this module reuses the client's URL handling
//! ([`yardstick_load::client::endpoint`]) and request conventions but sends the request itself
//! over a plain hyper HTTP/1.1 connection (http only, no TLS). The merge: a `keep_text` option on
//! `ClientConfig` so that `RequestRecord::content_text` survives `Client::execute`, then
//! [`HttpBackend`] becomes a thin wrapper around `Client::execute`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use yardstick_load::Api;

use crate::EvalError;

/// One generation: the output text, server token counts and latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The output text (`choices[0].message.content` or `choices[0].text`).
    pub text: String,
    /// `usage.completion_tokens`, when reported.
    pub output_tokens: Option<u64>,
    /// Request sent to full response received, milliseconds.
    pub latency_ms: f64,
}

/// Sends request bodies to an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct HttpBackend {
    uri: http::Uri,
    api: Api,
    timeout: Duration,
    bearer: Option<String>,
}

impl HttpBackend {
    /// A backend for `url` (a `/v1` suffix is optional) and `api`; `bearer_env` names a variable
    /// holding a bearer token.
    pub fn new(
        url: &str,
        api: Api,
        timeout: Duration,
        bearer_env: Option<&str>,
    ) -> Result<HttpBackend, EvalError> {
        let uri = yardstick_load::client::endpoint(url, api)
            .map_err(|e| EvalError::Config(e.to_string()))?;
        if uri.scheme_str() != Some("http") {
            return Err(EvalError::Config(format!(
                "`{url}`: bench eval supports http:// URLs only for now (https comes with the merge into yardstick-load's client)"
            )));
        }
        let bearer =
            match bearer_env {
                None => None,
                Some(v) => Some(std::env::var(v).ok().filter(|t| !t.is_empty()).ok_or_else(
                    || EvalError::Config(format!("environment variable {v} is unset or empty")),
                )?),
            };
        Ok(HttpBackend {
            uri,
            api,
            timeout,
            bearer,
        })
    }

    /// The API called.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Sends `body` and returns the generation; every failure is an error with its cause.
    pub async fn generate(&self, body: Vec<u8>) -> Result<Generation, String> {
        match tokio::time::timeout(self.timeout, self.exchange(body)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no complete response within {:?}", self.timeout)),
        }
    }

    async fn exchange(&self, body: Vec<u8>) -> Result<Generation, String> {
        let authority = self.uri.authority().ok_or("no authority")?.clone();
        let port = authority.port_u16().unwrap_or(80);
        let stream = TcpStream::connect((authority.host(), port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let driver = tokio::spawn(conn);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.uri.path())
            .header(header::HOST, authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        if let Some(t) = &self.bearer {
            let v = header::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| "bearer token is not valid in a header".to_string())?;
            req.headers_mut().insert(header::AUTHORIZATION, v);
        }
        let t0 = Instant::now();
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("no response: {e}"))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body cut: {e}"))?
            .to_bytes();
        let latency_ms = t0.elapsed().as_secs_f64() * 1e3;
        driver.abort();
        if !(200..300).contains(&status) {
            let shown: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
            return Err(format!("HTTP {status}: {shown}"));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("response is not JSON: {e}"))?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(format!("error in body: {}", v["error"]));
        }
        let c = &v["choices"][0];
        let text = c["message"]["content"]
            .as_str()
            .or(c["text"].as_str())
            .ok_or_else(|| "response has no choices[0] text".to_string())?
            .to_string();
        Ok(Generation {
            text,
            output_tokens: v["usage"]["completion_tokens"].as_u64(),
            latency_ms,
        })
    }
}
