//! Ad-hoc SQL on the server (MCP `query_facts`): the limits each query runs under, and how many
//! may run at once — in all and per client — so that queries can never take every warehouse
//! connection the API needs.
//!
//! A query runs on the blocking pool with a cancel flag; the flag is set when the request is
//! dropped (the client went away) or cancelled, and the warehouse stops the statement at its next
//! progress check ([`yardstick_store::warehouse::QueryLimits`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use yardstick_store::warehouse::{QueryLimits, QueryResult};

use crate::ApiError;
use crate::state::AppState;

/// At most this many requests use the warehouse at once (the rest wait their turn), so a burst
/// of requests cannot open more connections than a PostgreSQL server accepts.
pub const MAX_CONCURRENT_QUERIES: usize = 16;

/// How ad-hoc queries are bounded (`yardstick server --query-*`).
#[derive(Debug, Clone)]
pub struct QuerySettings {
    /// Wall time of one query (`--query-timeout`, default 10 s).
    pub time: Duration,
    /// Rows of one answer; past it the answer is truncated (`--query-max-rows`, default 10,000).
    pub max_rows: usize,
    /// Bytes of one answer as JSON; past it the answer is truncated (`--query-max-bytes`,
    /// default 4 MiB).
    pub max_bytes: usize,
    /// Queries running at once, all clients together (`--query-concurrency`, default 4; always
    /// fewer than the warehouse connections, so the API keeps answering).
    pub concurrent: usize,
    /// Queries running at once from one client (`--query-concurrency-per-client`, default 2).
    pub per_client: usize,
}

impl Default for QuerySettings {
    fn default() -> Self {
        QuerySettings {
            time: Duration::from_secs(10),
            max_rows: 10_000,
            max_bytes: 4 * 1024 * 1024,
            concurrent: 4,
            per_client: 2,
        }
    }
}

/// Query settings that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuerySettingsError {
    /// A zero time limit.
    #[error("--query-timeout must be above zero")]
    ZeroTimeout,
    /// A zero row or byte limit.
    #[error("--query-max-rows and --query-max-bytes must be above zero")]
    ZeroSize,
    /// A zero concurrency.
    #[error("--query-concurrency and --query-concurrency-per-client must be above zero")]
    ZeroConcurrency,
    /// Queries could take every warehouse connection.
    #[error(
        "--query-concurrency {0} must be below {MAX_CONCURRENT_QUERIES}, the warehouse \
         connections the whole API shares (queries may not take them all)"
    )]
    TooConcurrent(usize),
}

impl QuerySettings {
    /// Checks the settings can work: every limit above zero, and room left for the API.
    pub fn check(&self) -> Result<(), QuerySettingsError> {
        if self.time.is_zero() {
            return Err(QuerySettingsError::ZeroTimeout);
        }
        if self.max_rows == 0 || self.max_bytes == 0 {
            return Err(QuerySettingsError::ZeroSize);
        }
        if self.concurrent == 0 || self.per_client == 0 {
            return Err(QuerySettingsError::ZeroConcurrency);
        }
        if self.concurrent >= MAX_CONCURRENT_QUERIES {
            return Err(QuerySettingsError::TooConcurrent(self.concurrent));
        }
        Ok(())
    }
}

/// Who is asking, for the per-client limit: the bearer token when the server checked it
/// (`token_checked`: reads need a token; by its hash), else the peer address, else everyone
/// anonymous together. An unchecked header is not an identity: any client could send a new one
/// with each query.
pub fn client_key(parts: &axum::http::request::Parts, token_checked: bool) -> String {
    if let Some(auth) = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .filter(|_| token_checked)
    {
        use sha2::Digest;
        return format!(
            "token:{}",
            hex::encode(sha2::Sha256::digest(auth.as_bytes()))
        );
    }
    if let Some(axum::extract::ConnectInfo(addr)) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        return format!("peer:{}", addr.ip());
    }
    "anonymous".into()
}

/// The counters of queries in flight.
pub struct QueryGate {
    settings: QuerySettings,
    total: Arc<tokio::sync::Semaphore>,
    clients: Arc<Mutex<HashMap<String, usize>>>,
}

/// A query's place among those running; given back when dropped.
pub struct Admitted {
    _permit: tokio::sync::OwnedSemaphorePermit,
    client: String,
    clients: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = clients.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.client);
            }
        }
    }
}

/// Sets its flag when dropped: a query whose request is dropped (the client went away) stops.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl QueryGate {
    /// The gate for `settings`.
    pub fn new(settings: QuerySettings) -> QueryGate {
        QueryGate {
            total: Arc::new(tokio::sync::Semaphore::new(settings.concurrent)),
            clients: Arc::new(Mutex::new(HashMap::new())),
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &QuerySettings {
        &self.settings
    }

    /// A place for one more query of `client`, or 429 when the client (or everyone together)
    /// already runs as many as allowed.
    pub fn admit(&self, client: &str) -> Result<Admitted, ApiError> {
        let busy = |what: String| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                what,
                Some(
                    "wait for the running queries to finish (each stops at the server's query time limit), or narrow them",
                ),
            )
        };
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let mine = clients.get(client).copied().unwrap_or(0);
        if mine >= self.settings.per_client {
            return Err(busy(format!(
                "this client already runs {mine} queries, the most one client may run at once"
            )));
        }
        let permit = self.total.clone().try_acquire_owned().map_err(|_| {
            busy(format!(
                "the server already runs {} queries, the most it runs at once",
                self.settings.concurrent
            ))
        })?;
        *clients.entry(client.to_string()).or_insert(0) += 1;
        Ok(Admitted {
            _permit: permit,
            client: client.to_string(),
            clients: self.clients.clone(),
        })
    }
}

/// Runs one statement for `client` under the server's limits: admitted by the gate (429 when
/// busy), on a warehouse connection, stopped when the returned future is dropped, `gone` is set
/// (the HTTP client left: [`crate::mcp::ClientGone`]) or `cancelled` completes first.
pub async fn run(
    state: &Arc<AppState>,
    client: &str,
    sql: String,
    gone: Option<Arc<AtomicBool>>,
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<QueryResult, ApiError> {
    let admitted = state.queries.admit(client)?;
    let flag = gone.unwrap_or_default();
    let _cancel = CancelOnDrop(flag.clone());
    let s = state.queries.settings();
    let limits = QueryLimits {
        time: s.time,
        max_rows: s.max_rows,
        max_bytes: s.max_bytes,
        cancel: Some(flag),
    };
    let work = state.blocking(move |_, w| {
        let _admitted = admitted;
        Ok(w.query_with(&sql, &limits)?)
    });
    tokio::select! {
        out = work => out,
        () = cancelled => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the query was cancelled",
            None,
        )),
    }
}
