//! `yardstick mcp`: the store's runs as Model Context Protocol tools, over stdio.

use std::sync::Arc;

use anyhow::Context;
use yardstick_server::{AppState, ServerConfig, ServerError};
use yardstick_store::warehouse::WarehouseLocation;

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};

/// Serve the store as MCP tools on stdin/stdout (JSON-RPC, one message per line) for an AI
/// assistant or any MCP client: benchmark_contracts, validate_spec, list_runs, get_run,
/// compare_runs, gate_run, trend and query_facts (read-only SQL). Everything is read-only. The
/// same tools are served over HTTP at /mcp by `yardstick server`. See docs/server.md.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick mcp --store ./yardstick-store\n  \
yardstick mcp --store ./yardstick-store --warehouse postgres://ys@db:5432/ys\n\n\
A desktop MCP client's configuration (e.g. Claude Desktop's claude_desktop_config.json):\n  \
{\"mcpServers\": {\"yardstick\": {\"command\": \"yardstick\", \"args\": [\"mcp\", \"--store\", \"/path/to/yardstick-store\"]}}}"
)]
pub struct McpArgs {
    /// Store directory: run directories and the warehouse (`yardstick.db`) unless --warehouse.
    /// A PostgreSQL URL serves only the warehouse (no run directories).
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
    /// The limits of `query_facts` (the same as `yardstick server`'s).
    #[command(flatten)]
    pub query: crate::cmd::server::QueryLimitArgs,
}

fn open_error(e: ServerError) -> anyhow::Error {
    match e {
        ServerError::Config { message, hint } => exit::invalid(message, hint.as_deref()),
        ServerError::Store(e) => crate::cmd::runs::store_error(e),
        e => anyhow::Error::new(e),
    }
}

/// Runs `yardstick mcp`: serves until the client closes stdin.
pub fn run(args: McpArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    let store_dir = match WarehouseLocation::parse(&args.store) {
        WarehouseLocation::Sqlite { store_dir, .. } => Some(store_dir),
        WarehouseLocation::Postgres(_) => None,
    };
    let config = ServerConfig {
        store_dir,
        warehouse: args.warehouse.unwrap_or(args.store),
        require_read_token: false,
        require_signature: false,
        max_push_bytes: 0,
        query: args.query.settings()?,
        allow_privileged_warehouse: args.query.allow_privileged_warehouse,
        staging: Default::default(),
        index: None,
        tls: None,
        allowed_hosts: Vec::new(),
        limits: Default::default(),
        access_log: Arc::new(|_| {}),
    };
    // Standard output carries the protocol only: nothing else is printed there.
    let state = Arc::new(AppState::open(config).map_err(open_error)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(yardstick_server::mcp::serve_stdio(state))
        .context("serving MCP on stdio")?;
    Ok(Status::Ok)
}
