//! The Model Context Protocol face of the server, with the official Rust SDK (`rmcp`): the same
//! answers as the JSON API, as MCP tools an assistant can call. `yardstick mcp` serves them over
//! stdio ([`serve_stdio`]); `yardstick server` at `/mcp` over streamable HTTP ([`http_service`]),
//! behind the same authorization as its reads.
//!
//! Every tool calls the function the matching JSON API handler calls (`api::runs::select`,
//! `api::runs::detail`, `api::runs::compare_runs`, `api::gate::gate_run`, `api::trend::compute`,
//! `api::validate::check`, `api::contracts::build`) and `query_facts` runs the warehouse's
//! read-only query, as `yardstick query` does. Input schemas come from the argument types
//! (schemars), output schemas from the answer types; each answer carries the value as structured
//! content, a short text summary, and the value as JSON text for clients that read only text.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig as McpInfo,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yardstick_store::warehouse::QueryResult;

use crate::ApiError;
use crate::api::contracts;
use crate::api::gate::{self, GateQuery};
use crate::api::runs::{self, CompareQuery, RunsPage, RunsQuery};
use crate::api::trend::{self, TrendOut, TrendQuery};
use crate::api::validate::{self, ValidateOut, ValidateQuery};
use crate::state::AppState;

/// The path of the MCP endpoint on `yardstick server`.
pub const PATH: &str = "/mcp";

/// The tools whose listing carries an output schema: those whose answers are small. The others
/// (`benchmark_contracts`, `get_run`, `compare_runs`, `gate_run`) answer large documents whose
/// schemas would be three quarters of `tools/list` — about 35 KB an assistant pays for in every
/// conversation — so their descriptions say where the schema is (`yardstick schema`, the
/// server's OpenAPI document); their answers still carry structured content.
pub const WITH_OUTPUT_SCHEMA: &[&str] = &["validate_spec", "list_runs", "trend", "query_facts"];

/// The names of the tools, in the order they are listed.
pub const TOOLS: &[&str] = &[
    "benchmark_contracts",
    "validate_spec",
    "list_runs",
    "get_run",
    "compare_runs",
    "gate_run",
    "trend",
    "query_facts",
];

/// The SQL statement of a query, trimmed of blanks and a trailing `;`; `None` when nothing is
/// left. `yardstick query` and the `query_facts` tool both pass it to
/// [`yardstick_store::warehouse::Warehouse::query`], which runs it read-only.
pub fn statement(sql: &str) -> Option<&str> {
    let sql = sql.trim().trim_end_matches(';').trim();
    (!sql.is_empty()).then_some(sql)
}

/// Arguments of `get_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRunArgs {
    /// Run id (ULID), or a unique prefix of one.
    pub id: String,
}

/// Arguments of `gate_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRunArgs {
    /// The candidate run: id (ULID) or a unique prefix of one.
    pub id: String,
    /// `auto` (the stored baseline of the run's machine profile and benchmark; the default) or
    /// a run id (or unique prefix).
    pub baseline: Option<String>,
    /// Compare runs of different machine profiles anyway (reported, not enforced).
    #[serde(default)]
    pub cross_profile: bool,
    /// Ignore the machine profile's recorded noise floors (tolerances only).
    #[serde(default)]
    pub no_noise_floor: bool,
}

/// Arguments of `validate_spec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateSpecArgs {
    /// The spec: a BenchmarkRun document as YAML text (at most 1 MiB).
    pub spec: String,
    /// Treat warnings as errors (`yardstick validate --deny-warnings`).
    #[serde(default)]
    pub deny_warnings: bool,
    /// The name the diagnostics give the spec (default `<request>`).
    pub name: Option<String>,
}

/// Arguments of `query_facts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// One SQL statement that returns rows (SELECT, WITH, VALUES, EXPLAIN) over the warehouse's
    /// tables (runs, points, replicates, facts, baselines...; docs/warehouse.md). The database
    /// refuses writes.
    pub sql: String,
}

/// The MCP server: the tools over one [`AppState`] (its warehouse connections and store).
#[derive(Clone)]
pub struct YardstickMcp {
    state: Arc<AppState>,
    tool_router: ToolRouter<YardstickMcp>,
}

/// A tool's answer: the value as structured content, then a summary and the value as JSON text.
fn answer<T: Serialize>(value: &T, summary: String) -> Result<CallToolResult, ErrorData> {
    let value = serde_json::to_value(value)
        .map_err(|e| ErrorData::internal_error(format!("serializing the answer: {e}"), None))?;
    let mut result = CallToolResult::structured(value);
    result.content.insert(0, ContentBlock::text(summary));
    Ok(result)
}

/// A tool error the caller sees (`isError: true`): the API's message and hint.
fn refusal(e: ApiError) -> CallToolResult {
    let text = match &e.body.hint {
        Some(h) => format!("{} (hint: {h})", e.body.error),
        None => e.body.error.clone(),
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// `Ok` answers and tool errors both reach the caller; only a failure to serialize is a
/// protocol error.
fn reply<T: Serialize>(
    out: Result<T, ApiError>,
    summary: impl FnOnce(&T) -> String,
) -> Result<CallToolResult, ErrorData> {
    match out {
        Ok(v) => answer(&v, summary(&v)),
        Err(e) => Ok(refusal(e)),
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn verdict_text<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

#[tool_router]
impl YardstickMcp {
    /// The tools over `state`.
    pub fn new(state: Arc<AppState>) -> YardstickMcp {
        YardstickMcp {
            state,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "The methodology contract as data: the BenchmarkRun JSON Schema, every \
                       validation rule, the init templates, the metric catalogue and the gate \
                       policy (what GET /api/benchmark/contracts answers; its schema is in the \
                       server's OpenAPI document).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn benchmark_contracts(&self) -> Result<CallToolResult, ErrorData> {
        let c = contracts::build();
        let summary = format!(
            "{} validation rules, {} init templates, {} metrics in the catalogue; gate verdicts {}",
            c.rules.len(),
            c.templates.len(),
            c.metrics.len(),
            c.gate.verdicts.join(", ")
        );
        answer(&c, summary)
    }

    #[tool(
        description = "Validate a BenchmarkRun spec (YAML text): every diagnostic with its \
                       severity, rule id, message, hint, field path, line and column, as \
                       `yardstick validate --json` prints them. Nothing is stored.",
        output_schema = schema_for_output::<ValidateOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn validate_spec(
        &self,
        Parameters(args): Parameters<ValidateSpecArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.spec.len() > crate::api::validate::VALIDATE_BODY_LIMIT {
            return Ok(refusal(ApiError::bad_request(
                format!(
                    "the spec is {} bytes; at most {} are validated",
                    args.spec.len(),
                    crate::api::validate::VALIDATE_BODY_LIMIT
                ),
                None,
            )));
        }
        let q = ValidateQuery {
            deny_warnings: args.deny_warnings,
            name: args.name,
        };
        let out = tokio::task::spawn_blocking(move || validate::check(args.spec.as_bytes(), &q))
            .await
            .map_err(ApiError::internal);
        reply(out, |v| {
            let f = &v.files[0];
            let mut s = format!(
                "{}: {}, {} error(s), {} warning(s)",
                f.file,
                if v.valid { "valid" } else { "INVALID" },
                f.errors,
                f.warnings
            );
            for d in f.diagnostics.iter().take(10) {
                let d = serde_json::to_value(d).unwrap_or_default();
                s.push_str(&format!(
                    "\n{} [{}] {}",
                    d["severity"].as_str().unwrap_or(""),
                    d["rule"].as_str().unwrap_or(""),
                    d["message"].as_str().unwrap_or("")
                ));
            }
            s
        })
    }

    #[tool(
        description = "Stored runs, newest first: filter by benchmark name, machine profile, \
                       label, status and time, page with limit and offset (what GET /api/v1/runs \
                       answers).",
        output_schema = schema_for_output::<RunsPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_runs(
        &self,
        Parameters(q): Parameters<RunsQuery>,
    ) -> Result<CallToolResult, ErrorData> {
        let out = self
            .state
            .blocking(move |st, w| runs::select(st, w, &q))
            .await;
        reply(out, |p| {
            let mut s = format!("{} (offset {})", plural(p.runs.len(), "run"), p.offset);
            if let Some(n) = p.next_offset {
                s.push_str(&format!("; more from offset {n}"));
            }
            for r in p.runs.iter().take(20) {
                s.push_str(&format!(
                    "\n{} {} {} {}",
                    r.run_id,
                    r.name,
                    r.status.as_str(),
                    r.started_at
                ));
            }
            s
        })
    }

    #[tool(
        description = "One run (id or unique prefix): its warehouse row, points, replicates, \
                       manifest, summary (aggregate facts, and a playbook run's diagnosis: \
                       verdict, confidence, evidence, actions), environment, spec text, failures \
                       and bottlenecks (what GET /api/v1/runs/{id} answers; its schema is in the \
                       server's OpenAPI document).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_run(
        &self,
        Parameters(args): Parameters<GetRunArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let out = self
            .state
            .blocking(move |st, w| runs::detail(st, w, &args.id))
            .await;
        reply(out, |d| {
            let diagnosis = d
                .summary
                .as_ref()
                .and_then(|s| s.get("diagnosis"))
                .and_then(|x| {
                    Some(format!(
                        "; diagnosis ({}): {}, {} confidence — {}",
                        x["playbook"].as_str()?,
                        x["verdict"].as_str()?,
                        x["confidence"].as_str()?,
                        x["summary"].as_str()?
                    ))
                })
                .unwrap_or_default();
            format!(
                "run {} of {}: {}, started {}, {}, {}{diagnosis}",
                d.run.run_id,
                d.run.name,
                d.run.status.as_str(),
                d.run.started_at,
                plural(d.points.len(), "point"),
                plural(d.replicates.len(), "replicate")
            )
        })
    }

    #[tool(
        description = "Compare two runs, baseline `a` and candidate `b` (ids or unique \
                       prefixes): spec and environment differences, and each headline metric \
                       with its confidence interval, as `yardstick compare A B --json` prints \
                       (schema: `yardstick schema --output compare`).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn compare_runs(
        &self,
        Parameters(q): Parameters<CompareQuery>,
    ) -> Result<CallToolResult, ErrorData> {
        let out = self
            .state
            .blocking(move |st, w| runs::compare_runs(st, w, &q))
            .await;
        reply(out, |c| {
            format!(
                "{} vs {}: {} compared, {} spec and {} environment difference(s), {}",
                c.baseline_run,
                c.candidate_run,
                plural(c.metrics.len(), "metric"),
                c.spec_diffs.len(),
                c.env_diffs.len(),
                plural(c.warnings.len(), "warning")
            )
        })
    }

    #[tool(
        description = "Gate a run against its baseline (`auto`: the stored baseline of its \
                       machine profile and benchmark, or a run id): the verdict and each metric's, \
                       as `yardstick gate RUN --json` prints (schema: `yardstick schema --output \
                       gate`). Nothing is re-run or recorded.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn gate_run(
        &self,
        Parameters(args): Parameters<GateRunArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let q = GateQuery {
            baseline: args.baseline,
            cross_profile: args.cross_profile,
            no_noise_floor: args.no_noise_floor,
        };
        let out = self
            .state
            .blocking(move |st, w| gate::gate_run(st, w, &args.id, &q))
            .await;
        reply(out, |g| {
            format!(
                "verdict {} for {} against baseline {}{} ({} gated)",
                verdict_text(&g.report.verdict),
                g.report.comparison.candidate_run,
                g.report.comparison.baseline_run,
                if g.report.exploratory {
                    ", exploratory: not enforced"
                } else {
                    ""
                },
                plural(g.report.metrics.len(), "metric")
            )
        })
    }

    #[tool(
        description = "One metric of one benchmark over time: a series per machine profile and \
                       point of the sweep, each point a run with its value (mean over replicates) \
                       and confidence interval, oldest first; with `changes: true`, each \
                       series' change points (E-divisive means with a permutation test: the \
                       first run after each change, the step with its interval, the commits \
                       between) — what GET /api/v1/trend answers.",
        output_schema = schema_for_output::<TrendOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn trend(
        &self,
        Parameters(q): Parameters<TrendQuery>,
    ) -> Result<CallToolResult, ErrorData> {
        let out = self.state.blocking(move |_, w| trend::compute(w, &q)).await;
        reply(out, |t| {
            let points: usize = t.series.iter().map(|s| s.points.len()).sum();
            let changes: Option<usize> = t
                .series
                .iter()
                .map(|s| s.changes.as_ref().map(Vec::len))
                .sum();
            format!(
                "{} {} of {}: {}, {} in all{}",
                t.metric,
                t.statistic,
                t.benchmark,
                plural(t.series.len(), "series"),
                plural(points, "point"),
                changes
                    .map(|n| format!(", {}", plural(n, "change point")))
                    .unwrap_or_default()
            )
            .replace("seriess", "series")
        })
    }

    #[tool(
        description = "One read-only SQL statement (SELECT, WITH, VALUES, EXPLAIN) against the \
                       warehouse, as `yardstick query` runs it: writes are refused by the \
                       database. Tables: runs, points, replicates, facts, baselines \
                       (docs/warehouse.md). Aggregate facts have replicate = -1. Only reads of \
                       the warehouse's tables with SQLite's ordinary functions are allowed; the \
                       server stops a query at its time limit and truncates long answers \
                       (`truncated` says so): add a LIMIT.",
        output_schema = schema_for_output::<QueryResult>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn query_facts(
        &self,
        Parameters(args): Parameters<QueryArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(sql) = statement(&args.sql).map(str::to_owned) else {
            return Ok(refusal(ApiError::bad_request(
                "the query is empty",
                Some("e.g. SELECT * FROM runs LIMIT 5"),
            )));
        };
        let parts = ctx.extensions.get::<axum::http::request::Parts>();
        let checked = self.state.config.require_read_token;
        let client = parts.map_or_else(
            || "stdio".to_string(),
            |p| crate::query::client_key(p, checked),
        );
        let gone = parts
            .and_then(|p| p.extensions.get::<ClientGone>())
            .map(|g| g.0.clone());
        let out =
            crate::query::run(&self.state, &client, sql, gone, ctx.ct.cancelled_owned()).await;
        reply(out, |r| {
            let mut s = format!(
                "{}; columns: {}",
                plural(r.rows.len(), "row"),
                r.columns.join(", ")
            );
            if let Some(why) = &r.truncated_by {
                s.push_str(&format!(
                    "; truncated: {why} (the server's limit); add a LIMIT or narrow the query"
                ));
            }
            s
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for YardstickMcp {
    fn get_info(&self) -> McpInfo {
        let mut server = Implementation::new("yardstick", env!("CARGO_PKG_VERSION"));
        server.title = Some("yardstick benchmark store".into());
        McpInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(server)
            .with_instructions(
                "Read-only access to a yardstick store of benchmark runs: list and inspect runs, \
                 compare and gate them, trend a metric, query the warehouse with SQL, validate a \
                 spec and read the methodology contract.",
            )
    }
}

/// Serves the tools over standard input and output until the client closes them.
pub async fn serve_stdio(state: Arc<AppState>) -> Result<(), std::io::Error> {
    let service = YardstickMcp::new(state)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    service.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// Set when the HTTP client of an MCP request goes away: the response's body was dropped before
/// it was read to the end. The MCP SDK keeps running a tool when its HTTP stream closes, so the
/// query tool watches this flag (it reaches the tool in the request's extensions).
#[derive(Clone, Debug, Default)]
pub struct ClientGone(pub Arc<AtomicBool>);

/// A response body that sets its [`ClientGone`] flag when dropped.
struct WatchedBody {
    inner: axum::body::Body,
    gone: ClientGone,
}

impl http_body::Body for WatchedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.gone.0.store(true, Ordering::Relaxed);
    }
}

/// Middleware of [`PATH`]: gives each request a [`ClientGone`] flag, set when its response is
/// dropped (the client closed the connection, or the answer was sent in full).
pub async fn watch_client(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let gone = ClientGone::default();
    req.extensions_mut().insert(gone.clone());
    let (parts, inner) = next.run(req).await.into_parts();
    axum::response::Response::from_parts(parts, axum::body::Body::new(WatchedBody { inner, gone }))
}

/// The streamable HTTP service mounted at [`PATH`]. `loopback`: the server listens on a loopback
/// address, so requests must name a loopback host (against DNS rebinding); on another address
/// (TLS, or `--insecure-http` behind a proxy) any host is accepted.
pub fn http_service(
    state: Arc<AppState>,
    loopback: bool,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    YardstickMcp,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(crate::api::validate::VALIDATE_BODY_LIMIT + 64 * 1024);
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(YardstickMcp::new(state.clone())),
        Default::default(),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_with_an_input_schema_and_small_ones_with_output_schemas() {
        let tools = YardstickMcp::tool_router().list_all();
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        let mut want: Vec<&str> = TOOLS.to_vec();
        want.sort();
        assert_eq!(names, want);
        for t in &tools {
            assert_eq!(t.input_schema.get("type"), Some(&"object".into()), "{t:?}");
            match &t.output_schema {
                Some(out) => assert_eq!(out.get("type"), Some(&"object".into()), "{t:?}"),
                None => assert!(!WITH_OUTPUT_SCHEMA.contains(&&*t.name), "{t:?}"),
            }
        }
        // The listing an assistant pays for in every conversation stays small (issue 39).
        let listed = serde_json::to_vec(&tools).unwrap().len();
        assert!(listed < 20_000, "tools/list is {listed} bytes");
    }

    #[test]
    fn statements_are_trimmed_and_empty_ones_refused() {
        assert_eq!(statement("  SELECT 1 ;  "), Some("SELECT 1"));
        assert_eq!(statement(";;"), None);
        assert_eq!(statement("   "), None);
    }
}
