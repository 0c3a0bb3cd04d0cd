//! The request path: [`yardstick_load::Client`] (the load generator's HTTP/1.1 client, with its
//! keep-alive pool, TLS and bearer token) keeping response texts and bodies.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use yardstick_load::plan::{Lengths, PlannedRequest};
use yardstick_load::{Api, Client, ClientConfig, Clock, ErrorClass, RequestRecord};

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
    /// The whole response body (JSON).
    pub body: Bytes,
}

/// Sends request bodies to an OpenAI-compatible server (non-streamed, responses kept).
#[derive(Clone)]
pub struct HttpBackend {
    client: Arc<Client>,
    api: Api,
    next: Arc<AtomicU64>,
}

impl std::fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend")
            .field("api", &self.api)
            .finish()
    }
}

/// Why [`HttpBackend::post`] got no JSON answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PostError {
    /// The server answered, but with an error (HTTP status, error body, not JSON).
    Refused(String),
    /// No answer: connection failure, timeout, cut response.
    Failed(String),
}

/// Why [`HttpBackend::generate`] got no generation (the item is recorded as failed with this).
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The request failed: no answer, or an error answer (the load client's account of it).
    #[error("{0}")]
    Request(String),
    /// The answer is not JSON.
    #[error("response is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The answer has no generated text.
    #[error("response has no choices[0] text")]
    NoText,
    /// The task sending the request failed.
    #[error("request task failed: {0}")]
    Task(tokio::task::JoinError),
}

/// Attempts per request when the connection fails before the request was sent (a pooled
/// connection the server had closed); never retried once the server may have seen it.
const CONNECT_ATTEMPTS: usize = 3;

impl HttpBackend {
    /// A backend for `url` (http or https; a `/v1` suffix is optional) and `api`; `bearer_env`
    /// names a variable holding a bearer token; `ca_cert` a PEM file of extra CA certificates
    /// for https; `max_idle` connections are kept for reuse.
    pub fn new(
        url: &str,
        api: Api,
        timeout: Duration,
        bearer_env: Option<&str>,
        ca_cert: Option<&std::path::Path>,
        max_idle: usize,
    ) -> Result<HttpBackend, EvalError> {
        let cfg = ClientConfig {
            url: url.to_string(),
            api,
            stream: false,
            request_timeout: timeout,
            bearer_env: bearer_env.map(str::to_string),
            max_idle: max_idle.max(1),
            ca_cert: ca_cert.map(std::path::Path::to_path_buf),
            retry: None,
        };
        let client = Client::new(&cfg, Clock::new(), "eval")
            .map_err(|e| EvalError::Config(e.to_string()))?
            .keeping_responses();
        Ok(HttpBackend {
            client: Arc::new(client),
            api,
            next: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The API called.
    pub fn api(&self) -> Api {
        self.api
    }

    async fn send(&self, body: &Bytes) -> RequestRecord {
        let mut attempt = 0;
        loop {
            let plan = PlannedRequest {
                index: self.next.fetch_add(1, Ordering::Relaxed),
                lengths: Lengths {
                    input: 0,
                    output: None,
                },
                body: body.clone(),
                kind: None,
                image_bytes: None,
                class: None,
            };
            let rec = self.client.execute(&plan, Instant::now(), false).await;
            attempt += 1;
            if rec.error == Some(ErrorClass::Connect) && attempt < CONNECT_ATTEMPTS {
                continue;
            }
            return rec;
        }
    }

    /// Sends `body` and returns the response document.
    pub async fn post(&self, body: Vec<u8>) -> Result<serde_json::Value, PostError> {
        let rec = self.send(&Bytes::from(body)).await;
        if let Some(class) = rec.error {
            let msg = rec
                .error_message
                .unwrap_or_else(|| class.name().to_string());
            return Err(match class {
                ErrorClass::Http4xx
                | ErrorClass::Http5xx
                | ErrorClass::HttpOther
                | ErrorClass::MalformedEvent => PostError::Refused(msg),
                _ => PostError::Failed(msg),
            });
        }
        let body = rec.response_body.unwrap_or_default();
        serde_json::from_slice(&body)
            .map_err(|e| PostError::Refused(format!("response is not JSON: {e}")))
    }

    /// Sends `body` and returns the generation; every failure is an error with its cause.
    pub async fn generate(&self, body: Vec<u8>) -> Result<Generation, GenerateError> {
        let rec = self.send(&Bytes::from(body)).await;
        if let Some(class) = rec.error {
            return Err(GenerateError::Request(
                rec.error_message
                    .unwrap_or_else(|| class.name().to_string()),
            ));
        }
        let latency_ms = match (rec.sent_ns, rec.done_ns) {
            (Some(a), Some(b)) => (b as f64 - a as f64) / 1e6,
            _ => 0.0,
        };
        let body = rec.response_body.unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&body).map_err(GenerateError::NotJson)?;
        let c = &v["choices"][0];
        if c["message"]["content"].as_str().is_none() && c["text"].as_str().is_none() {
            return Err(GenerateError::NoText);
        }
        Ok(Generation {
            text: rec.content_text.unwrap_or_default(),
            output_tokens: rec.output_tokens,
            latency_ms,
            body,
        })
    }
}
