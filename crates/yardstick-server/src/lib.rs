//! `yardstick server`: the team's shared place to look at results. A JSON API over the same
//! store and warehouse the command line uses (SQLite in a store directory, or PostgreSQL), with
//! bearer tokens by scope, one access-log line per request, its own Prometheus metrics, and an
//! OpenAPI 3.1 document generated from the handlers' types.
//!
//! Every answer is computed by the library the matching command calls: runs and facts from
//! `yardstick-store`'s warehouse, comparisons from `yardstick-gate`, validation, the schema, the
//! rules, the templates and the metric catalogue from `yardstick-spec`. The server adds HTTP,
//! authentication and paging, nothing that would make its numbers differ from the CLI's.
//!
//! * [`mcp`]: the same answers as Model Context Protocol tools (`/mcp`, and `yardstick mcp`).
//! * [`query`]: the limits of ad-hoc SQL (`query_facts`) and how many run at once.
//! * [`client`]: the other side: push a run, fetch a baseline (`push`, `gate --server`).
//! * [`auth`]: tokens (`server-tokens.json` in the store directory, only SHA-256 hashes), scopes.
//! * [`api`]: the routes and their handlers; [`api::router`] builds the whole application.
//! * [`dashboard`]: the HTML pages (`/runs`, `/runs/{id}`, `/trend`, `/compare`, ...).
//! * [`metrics`]: request counts and latency histograms in Prometheus' text format.
//! * [`access`]: the access-log record written for every request.
//! * [`conn`]: connections: the accept loop, the connection cap, the timeouts of every wait.
//! * [`guard`]: the `Host` allowlist and the security headers of every response.
//! * [`state`]: what handlers share (the warehouse connections, the store directory, tokens).
#![deny(missing_docs)]

pub mod access;
pub mod api;
pub mod auth;
pub mod client;
pub mod conn;
pub mod dashboard;
mod error;
pub mod guard;
pub mod mcp;
pub mod metrics;
pub mod query;
pub mod state;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use conn::HttpLimits;
pub use error::{ApiError, ErrorBody, ServerError};
pub use state::AppState;

/// Why a run directory cannot be indexed: the indexer's own error (the indexer lives above
/// this crate, so its type is not known here).
pub type IndexError = Box<dyn std::error::Error + Send + Sync>;

/// Reads the warehouse rows of the run directory at the path, recorded as stored at the
/// location (the store directory); the error says why the run cannot be indexed.
pub type RunIndexer = Arc<
    dyn Fn(&std::path::Path, &str) -> Result<yardstick_store::warehouse::RunRows, IndexError>
        + Send
        + Sync,
>;

/// How the server is set up.
#[derive(Clone)]
pub struct ServerConfig {
    /// The store directory: run directories (`runs/<id>/`), the token file, trust keys. `None`
    /// when the store is only a PostgreSQL warehouse (then runs have no artifacts to serve and
    /// no token can be checked).
    pub store_dir: Option<PathBuf>,
    /// The warehouse: a store directory (its `yardstick.db`) or a `postgres://` URL.
    pub warehouse: String,
    /// Reads need a token of scope `read` (or higher) too.
    pub require_read_token: bool,
    /// Pushed runs must be signed by a key the store trusts (`--require-signature`), on top of
    /// the store's own policy (`yardstick trust require on`).
    pub require_signature: bool,
    /// The largest run a push may carry, in bytes (the sum of its artifacts).
    pub max_push_bytes: u64,
    /// The quota of staged pushes (`--max-staged-bytes`, `--max-open-pushes`, `--push-expiry`).
    pub staging: api::push::StagingLimits,
    /// Reads the warehouse rows of a run directory, to index a pushed run (the binary passes
    /// `yardstick_run::index::read_run_dir`); `None` refuses pushes.
    pub index: Option<RunIndexer>,
    /// Serve HTTPS with this certificate and key (`None`: plain HTTP).
    pub tls: Option<tls::TlsFiles>,
    /// How ad-hoc SQL (MCP `query_facts`) is bounded: time, rows, bytes, queries at once.
    pub query: query::QuerySettings,
    /// Start on a PostgreSQL warehouse whose role is a superuser (or may read the database
    /// host's files) anyway (`--allow-privileged-warehouse`); refused by default, since such a
    /// role lets a read-only query reach the host.
    pub allow_privileged_warehouse: bool,
    /// More `Host` names to answer (`--allowed-host`): on a loopback address, besides
    /// [`guard::LOOPBACK_HOSTS`]; on another address, when given, the only ones (with those).
    pub allowed_hosts: Vec<String>,
    /// Timeouts, the connection cap and the shutdown grace period.
    pub limits: HttpLimits,
    /// Where each request's access-log record goes (the binary prints it as one JSON line on
    /// standard error).
    pub access_log: Arc<dyn Fn(&access::AccessRecord) + Send + Sync>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("store_dir", &self.store_dir)
            .field("warehouse", &self.warehouse)
            .field("require_read_token", &self.require_read_token)
            .field("require_signature", &self.require_signature)
            .field("max_push_bytes", &self.max_push_bytes)
            .field("query", &self.query)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("limits", &self.limits)
            .field("staging", &self.staging)
            .finish_non_exhaustive()
    }
}

/// A bound server, ready to serve.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: HttpLimits,
}

impl Server {
    /// Opens the warehouse (checking it answers), loads the tokens and binds `addr` (port 0: an
    /// ephemeral port, see [`Server::local_addr`]).
    pub async fn bind(addr: SocketAddr, config: ServerConfig) -> Result<Server, ServerError> {
        config.limits.check()?;
        let hosts = guard::HostPolicy::new(is_loopback(&addr), &config.allowed_hosts)?;
        let limits = config.limits.clone();
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        // Opening the warehouse blocks (the PostgreSQL client runs a runtime of its own).
        let state = tokio::task::spawn_blocking(move || AppState::open(config))
            .await
            .map_err(|e| ServerError::Io(std::io::Error::other(e)))??;
        let app = api::router_on(Arc::new(state), hosts);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        Ok(Server {
            listener,
            app,
            tls,
            limits,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener.local_addr().map_err(ServerError::Io)
    }

    /// `https://ADDR` or `http://ADDR`.
    pub fn url(&self) -> Result<String, ServerError> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        Ok(format!("{scheme}://{}", self.local_addr()?))
    }

    /// Serves until `shutdown` completes, then stops accepting and lets requests in flight
    /// finish, for at most the configured [`HttpLimits::shutdown_grace`].
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        conn::serve(self.listener, self.tls, self.app, self.limits, shutdown).await
    }
}

/// Whether listening on `addr` keeps the server on this machine (a loopback address).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}
