//! `yardstick server`: the team server (crate `yardstick-server`), and `yardstick server token`
//! to manage its tokens.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use yardstick_server::auth::{self, Scope};
use yardstick_server::{Server, ServerConfig, ServerError};
use yardstick_store::warehouse::WarehouseLocation;

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output;

/// Serve the store over HTTP: a JSON API of runs, facts, artifacts, comparisons, trends, spec
/// validation and the methodology contract, with its OpenAPI document at /api/openapi.json.
///
/// Prints `listening on http://ADDR` (or `https://`) as the first line on stdout once bound, then serves until
/// Ctrl-C or SIGTERM (requests in flight finish). Each request is logged as one JSON line on
/// stderr. Loopback by default; another address needs TLS (--tls-cert and --tls-key) or an
/// explicit --insecure-http. Reads are open unless --require-read-token; writes always need a
/// token (`yardstick server token create`). Every connection is bounded in time (request head,
/// body, idle keep-alive) and their number is capped; on loopback only requests for localhost,
/// 127.0.0.1 and [::1] are answered unless --allowed-host names more. See docs/server.md.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  yardstick server --store ./yardstick-store\n  \
yardstick server --store ./yardstick-store --listen 127.0.0.1:0\n  \
yardstick server --store /srv/ys --warehouse postgres://ys@db:5432/ys --require-read-token\n  \
yardstick server --store /srv/ys --listen 0.0.0.0:8686 --tls-cert cert.pem --tls-key key.pem\n  \
yardstick server token create --scope push --store /srv/ys --note ci\n  \
yardstick server --store /srv/ys --require-signature --max-push-bytes 2GiB  # for `push`\n  \
yardstick server --store /srv/ys --allowed-host ys.internal --header-timeout 5s\n  \
yardstick server --store /srv/ys --max-connections 256\n  \
yardstick server --store /srv/ys --max-staged-bytes 20GiB --max-open-pushes 32 --push-expiry 6h\n  \
curl -s http://127.0.0.1:8686/api/v1/runs?limit=5"
)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub command: Option<ServerCommand>,
    /// Store directory: run directories, the warehouse (`yardstick.db`) unless --warehouse,
    /// and the token file. A PostgreSQL URL serves only the warehouse (no artifacts, no tokens).
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR|URL"
    )]
    pub store: String,
    /// The warehouse, when not the store directory's SQLite: `postgres://user@host:port/db`.
    #[arg(long, value_name = "URL")]
    pub warehouse: Option<String>,
    /// Address and port to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8686", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Allow plain HTTP on a non-loopback address (tokens then cross the network in clear:
    /// only behind a proxy that terminates TLS).
    #[arg(long)]
    pub insecure_http: bool,
    /// Reads need a token too (scope read, push or admin) as `Authorization: Bearer TOKEN`.
    #[arg(long)]
    pub require_read_token: bool,
    /// Pushed runs must be signed by a key the store trusts (`yardstick trust add`); unsigned
    /// runs and runs signed by other keys are refused. Refuses to start when no key is trusted.
    #[arg(long)]
    pub require_signature: bool,
    /// The largest run a push may carry (the sum of its artifacts), e.g. 1GiB, 200MB.
    #[arg(long, default_value = "1GiB", value_name = "BYTES")]
    pub max_push_bytes: String,
    /// The staging quota: the bytes all open pushes together may stage (each reserves its
    /// run's size when it starts); a push beyond is refused with 507.
    #[arg(long, default_value = "4GiB", value_name = "BYTES")]
    pub max_staged_bytes: String,
    /// How many pushes may be open (started, neither committed nor abandoned) at once; one more
    /// is refused with 429.
    #[arg(long, default_value_t = yardstick_server::api::push::DEFAULT_MAX_OPEN_PUSHES, value_name = "N")]
    pub max_open_pushes: usize,
    /// A staged push nobody touched for this long is abandoned: its uploads are removed (when
    /// the server starts, and whenever a push starts), and it no longer counts in the quota.
    #[arg(long, default_value = "24h", value_name = "DURATION")]
    pub push_expiry: String,
    /// Serve HTTPS with this certificate chain (PEM, leaf first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Also answer requests for this host name (the Host header; NAME or NAME:PORT), e.g. the
    /// name a proxy forwards. On loopback only localhost, 127.0.0.1 and [::1] are answered
    /// otherwise (against DNS rebinding); on another address any host is, unless this is
    /// given. Repeat it for several names.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// How long a request's head (request line and headers), or the TLS handshake, may take to
    /// arrive; a silent or slow connection is closed after it.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub header_timeout: String,
    /// How long a kept-alive connection may wait for its next request, and a response for the
    /// client to read it.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub idle_timeout: String,
    /// How long a request body may pause without a byte (the request is then answered 408 and
    /// the connection closed).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub body_timeout: String,
    /// The slowest a request body may arrive once it has taken longer than --body-timeout, in
    /// bytes per second on average (e.g. 1KiB, 64KB); 0: no minimum.
    #[arg(long, default_value = "1KiB", value_name = "BYTES")]
    pub body_min_rate: String,
    /// How many connections may be open at once; more wait for one to close.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// How long requests in flight may take to finish after Ctrl-C or SIGTERM; the process
    /// ends once they have, or once this has passed.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub shutdown_grace: String,
    #[command(flatten)]
    pub query: QueryLimitArgs,
}

/// The limits of ad-hoc SQL on the server (MCP `query_facts`).
#[derive(Debug, clap::Args)]
pub struct QueryLimitArgs {
    /// How long one query may run before it is interrupted, e.g. 10s, 2m.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub query_timeout: String,
    /// Rows one answer may carry; past that it is truncated (`truncated: true`).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub query_max_rows: usize,
    /// Bytes one answer may carry as JSON, e.g. 4MiB; past that it is truncated.
    #[arg(long, default_value = "4MiB", value_name = "BYTES")]
    pub query_max_bytes: String,
    /// Queries running at once, all clients together (below 16, the warehouse connections
    /// the whole API shares); more are answered 429.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub query_concurrency: usize,
    /// Queries running at once from one client (a token, or an address); more are answered 429.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub query_concurrency_per_client: usize,
    /// Start even when the PostgreSQL warehouse role is a superuser or may read the database
    /// host's files (refused by default: a read-only query could reach the host).
    #[arg(long)]
    pub allow_privileged_warehouse: bool,
}

impl QueryLimitArgs {
    /// The server's query settings, or exit 2 naming the flag.
    pub fn settings(&self) -> anyhow::Result<yardstick_server::query::QuerySettings> {
        let time = yardstick_spec::units::parse_duration(&self.query_timeout)
            .map_err(|e| crate::cmd::flag_error("query-timeout", e))?;
        let max_bytes = yardstick_spec::units::parse_bytes(&self.query_max_bytes)
            .map_err(|e| crate::cmd::flag_error("query-max-bytes", e))?;
        let settings = yardstick_server::query::QuerySettings {
            time,
            max_rows: self.query_max_rows,
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
            concurrent: self.query_concurrency,
            per_client: self.query_concurrency_per_client,
        };
        settings
            .check()
            .map_err(|m| exit::invalid(m.to_string(), Some("see `yardstick server --help`")))?;
        Ok(settings)
    }
}

/// The `server` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ServerCommand {
    /// Create, list and revoke the server's tokens.
    Token(TokenArgs),
}

/// Manage tokens: only their SHA-256 is stored, in `<store>/server-tokens.json` (mode 0600).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick server token create --scope push --note \"CI runners\"\n  \
yardstick server token list --store /srv/ys\n  yardstick server token revoke 3f9a1c0b2d4e"
)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

/// The `server token` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it once (it cannot be shown again; only its hash is kept).
    Create(TokenCreateArgs),
    /// List the tokens (id, scope, creation time, note; never the tokens).
    #[command(
        after_help = "Examples:\n  yardstick server token list --store /srv/ys\n  \
yardstick server token list --json"
    )]
    List(TokenStoreArgs),
    /// Revoke a token by its id (`token list`); the server refuses it at once.
    #[command(
        after_help = "Examples:\n  yardstick server token revoke 3f9a1c0b2d4e --store /srv/ys"
    )]
    Revoke(TokenRevokeArgs),
}

/// Where the token file is.
#[derive(Debug, clap::Args)]
pub struct TokenStoreArgs {
    /// Store directory the server serves.
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
}

/// Arguments of `server token create`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick server token create --scope push --store /srv/ys --note \"CI runners\"\n  \
TOKEN=$(yardstick server token create --scope read -q) && curl -H \"Authorization: Bearer $TOKEN\" \
http://127.0.0.1:8686/api/v1/runs"
)]
pub struct TokenCreateArgs {
    /// What the token may do: read (runs, facts, artifacts), push (send runs, and read), admin
    /// (baselines and everything else).
    #[arg(long, value_parser = ["read", "push", "admin"])]
    pub scope: String,
    /// Who or what the token is for (shown by `token list`).
    #[arg(long)]
    pub note: Option<String>,
    #[command(flatten)]
    pub store: TokenStoreArgs,
}

/// Arguments of `server token revoke`.
#[derive(Debug, clap::Args)]
pub struct TokenRevokeArgs {
    /// The token's id, as `token list` shows it.
    pub id: String,
    #[command(flatten)]
    pub store: TokenStoreArgs,
}

fn server_error(e: ServerError) -> anyhow::Error {
    match e {
        ServerError::Config { message, hint } => exit::invalid(message, hint.as_deref()),
        ServerError::Bind { .. } => exit::invalid(
            e.to_string(),
            Some("pick another --listen port (0 picks a free one)"),
        ),
        ServerError::Store(e) => crate::cmd::runs::store_error(e),
        e => anyhow::Error::new(e),
    }
}

/// Runs `yardstick server`.
pub fn run(args: ServerArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        Some(ServerCommand::Token(t)) => token(t, g),
        None => serve(args),
    }
}

fn serve(args: ServerArgs) -> anyhow::Result<Status> {
    let tls = match (args.tls_cert.clone(), args.tls_key.clone()) {
        (Some(cert), Some(key)) => Some(yardstick_server::tls::TlsFiles { cert, key }),
        _ => None,
    };
    if !yardstick_server::is_loopback(&args.listen) && tls.is_none() && !args.insecure_http {
        return Err(exit::invalid(
            format!(
                "refusing to listen on {} (not a loopback address) without TLS",
                args.listen
            ),
            Some(
                "tokens would cross the network in clear: pass --tls-cert FILE --tls-key FILE, keep the default 127.0.0.1, or pass --insecure-http behind a TLS-terminating proxy",
            ),
        ));
    }
    let store_dir = match WarehouseLocation::parse(&args.store) {
        WarehouseLocation::Sqlite { store_dir, .. } => Some(store_dir),
        WarehouseLocation::Postgres(_) => None,
    };
    let warehouse = args.warehouse.clone().unwrap_or_else(|| args.store.clone());
    // A store directory that does not exist yet is created (a new team server that will receive
    // pushes), and said so; one that cannot be created is invalid input (exit 2). A store
    // without a warehouse yet gets an empty one.
    if let Some(dir) = &store_dir
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).map_err(|e| {
            exit::invalid(
                format!("--store {}: cannot create it: {e}", dir.display()),
                Some("pass --store DIR, a directory this user can write"),
            )
        })?;
        output::info(&format!("created a new, empty store at {}", dir.display()));
    }
    let max_push_bytes = yardstick_spec::units::parse_bytes(&args.max_push_bytes)
        .map_err(|e| crate::cmd::flag_error("max-push-bytes", e))?;
    let limits = yardstick_server::HttpLimits {
        header_timeout: crate::cmd::parse_duration("header-timeout", &args.header_timeout)?,
        idle_timeout: crate::cmd::parse_duration("idle-timeout", &args.idle_timeout)?,
        body_timeout: crate::cmd::parse_duration("body-timeout", &args.body_timeout)?,
        body_min_rate: match args.body_min_rate.trim() {
            "0" => 0,
            rate => yardstick_spec::units::parse_bytes(rate)
                .map_err(|e| crate::cmd::flag_error("body-min-rate", e))?,
        },
        max_connections: args.max_connections,
        shutdown_grace: crate::cmd::parse_duration("shutdown-grace", &args.shutdown_grace)?,
    };
    if args.max_open_pushes == 0 {
        return Err(exit::invalid(
            "--max-open-pushes 0 would refuse every push",
            Some("give 1 or more (default 16)"),
        ));
    }
    let staging = yardstick_server::api::push::StagingLimits {
        max_bytes: yardstick_spec::units::parse_bytes(&args.max_staged_bytes)
            .map_err(|e| crate::cmd::flag_error("max-staged-bytes", e))?,
        max_pushes: args.max_open_pushes,
        expiry: crate::cmd::parse_duration("push-expiry", &args.push_expiry)?,
    };
    let config = ServerConfig {
        store_dir,
        warehouse,
        require_read_token: args.require_read_token,
        require_signature: args.require_signature,
        max_push_bytes,
        query: args.query.settings()?,
        allow_privileged_warehouse: args.query.allow_privileged_warehouse,
        staging,
        index: Some(Arc::new(|dir, location| {
            yardstick_run::index::read_run_dir(dir, location).map_err(Into::into)
        })),
        tls,
        allowed_hosts: args.allowed_hosts.clone(),
        limits,
        access_log: Arc::new(|record| {
            if let Ok(line) = serde_json::to_string(record) {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{line}");
            }
        }),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let shutdown = crate::interrupt::token("shutting down: finishing requests in flight");
    let served = rt.block_on(async move {
        let server = Server::bind(args.listen, config)
            .await
            .map_err(server_error)?;
        let url = server.url().map_err(server_error)?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {url}")?;
        out.flush()?;
        drop(out);
        server
            .serve(shutdown.cancelled_owned())
            .await
            .map_err(server_error)?;
        Ok(Status::Ok)
    });
    // Work still on the blocking pool (a warehouse query of a request the grace period cut
    // off) is not waited for: the process ends now, not when the query does.
    rt.shutdown_timeout(BLOCKING_GRACE);
    if served.is_ok() {
        output::info("server stopped");
    }
    served
}

/// How long the runtime waits for blocking work once serving has stopped.
const BLOCKING_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// What `yardstick server token create --json` prints: the token, shown this once.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct TokenCreated {
    /// The bearer token (only its hash is stored).
    pub token: String,
    /// Its id, as `token list` shows it.
    pub id: String,
    /// What it may do.
    pub scope: Scope,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

fn token(args: TokenArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        TokenCommand::Create(a) => {
            let scope = Scope::parse(&a.scope).expect("clap checked the scope");
            let created = auth::create(&a.store.store, scope, a.note).map_err(server_error)?;
            if g.json {
                output::json(&TokenCreated {
                    token: created.token.clone(),
                    id: created.record.id.clone(),
                    scope: created.record.scope,
                    created_at: created.record.created_at.clone(),
                })?;
            } else {
                crate::output::outln!("{}", created.token)?;
                output::info(&format!(
                    "token {} (scope {}) created; it is shown only now, store it as a secret \
                     (only its hash is kept in {})",
                    created.record.id,
                    scope.as_str(),
                    auth::tokens_path(&a.store.store).display()
                ));
            }
            Ok(Status::Ok)
        }
        TokenCommand::List(a) => {
            let file = auth::load(&a.store).map_err(server_error)?;
            if g.json {
                output::json(&file.tokens)?;
                return Ok(Status::Ok);
            }
            if file.tokens.is_empty() {
                output::info("no tokens; `yardstick server token create --scope read|push|admin`");
                return Ok(Status::Ok);
            }
            let rows: Vec<Vec<String>> = file
                .tokens
                .iter()
                .map(|t| {
                    vec![
                        t.id.clone(),
                        t.scope.as_str().to_string(),
                        t.created_at.clone(),
                        t.note.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            crate::cmd::runs::print_table(&["id", "scope", "created", "note"], &rows)?;
            Ok(Status::Ok)
        }
        TokenCommand::Revoke(a) => {
            if auth::revoke(&a.store.store, &a.id).map_err(server_error)? {
                output::info(&format!("token {} revoked", a.id));
                Ok(Status::Ok)
            } else {
                Err(exit::invalid(
                    format!("no token with id {}", a.id),
                    Some("`yardstick server token list` shows the ids"),
                ))
            }
        }
    }
}
