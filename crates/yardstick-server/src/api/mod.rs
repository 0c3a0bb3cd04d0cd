//! The routes. Every `/api` route is registered through aide, so `GET /api/openapi.json` lists
//! it with its parameters and response types; [`ROUTES`] is the list a test checks it against.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /healthz` | readiness: the warehouse answers a trivial read (503 when it does not) |
//! | `GET /metrics` | Prometheus text: requests and latencies |
//! | `GET /api/openapi.json` | this API, OpenAPI 3.1 |
//! | `GET /api/benchmark/contracts` | schema, rules, templates, metric catalogue, gate policy |
//! | `GET /api/v1/runs` | runs, filtered and paged |
//! | `GET /api/v1/runs/{id}` | one run: row, manifest, summary, env, spec, failures |
//! | `GET /api/v1/runs/{id}/facts` | its facts |
//! | `GET /api/v1/runs/{id}/artifacts` | its artifacts (path, size, sha256) |
//! | `GET /api/v1/runs/{id}/artifacts/{*path}` | one artifact, streamed, checked against its hash |
//! | `GET /api/v1/runs/{id}/gate` | `yardstick gate RUN --baseline auto\|RUN --json` |
//! | `GET /api/v1/baselines` | the stored baselines |
//! | `PUT /api/v1/baselines` | set a baseline (scope admin) |
//! | `GET /api/v1/compare` | `yardstick compare A B --json` |
//! | `GET /api/v1/trend` | one metric of one benchmark over time |
//! | `GET /api/v1/trends` | several metrics (and profiles) of one benchmark over time |
//! | `POST /api/v1/validate` | `yardstick validate --json` of a spec in the body |
//! | `POST /api/v1/pushes` | start pushing a run: its manifest (and attestation), checked |
//! | `PUT /api/v1/pushes/{id}/blobs/{sha256}` | one artifact's bytes, checked against its hash |
//! | `POST /api/v1/pushes/{id}/commit` | verify, store and index the pushed run |

use std::sync::Arc;

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with, put_with};
use aide::openapi::{Info, OpenApi};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use crate::ApiError;
use crate::auth::{Denied, Scope};
use crate::guard::HostPolicy;
use crate::state::AppState;

mod artifacts;
pub mod contracts;
pub mod extract;
pub mod gate;
pub mod push;
pub mod runs;
pub mod trend;
pub mod validate;

pub use contracts::{Contracts, GatePolicy};
pub use runs::{RunDetail, RunsPage};
pub use trend::{TrendOut, TrendPoint, TrendSeries, TrendsOut};
pub use validate::ValidateOut;

/// Every route the server answers, as `METHOD path` with OpenAPI's `{name}` parameters.
pub const ROUTES: &[&str] = &[
    "GET /healthz",
    "GET /metrics",
    "GET /api/openapi.json",
    "GET /api/benchmark/contracts",
    "GET /api/v1/runs",
    "GET /api/v1/runs/{id}",
    "GET /api/v1/runs/{id}/facts",
    "GET /api/v1/runs/{id}/artifacts",
    "GET /api/v1/runs/{id}/artifacts/{path}",
    "GET /api/v1/runs/{id}/gate",
    "GET /api/v1/baselines",
    "PUT /api/v1/baselines",
    "GET /api/v1/compare",
    "GET /api/v1/trend",
    "GET /api/v1/trends",
    "POST /api/v1/validate",
    "POST /api/v1/pushes",
    "PUT /api/v1/pushes/{id}/blobs/{sha256}",
    "POST /api/v1/pushes/{id}/commit",
];

/// Whether the API serves `method` on `route` (a matched path, as [`ROUTES`] spells it; HEAD
/// goes with GET).
pub fn serves(method: &Method, route: &str) -> bool {
    // The MCP endpoint answers its own methods (POST, GET, DELETE; others are its 405).
    if route == crate::mcp::PATH {
        return true;
    }
    let route = route.replace("{*path}", "{path}");
    let method = if *method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    ROUTES
        .iter()
        .any(|r| r.split_once(' ') == Some((method, route.as_str())))
}

/// The scope a request needs, by method and route template: `None` for the open routes.
/// Reads (and `POST /api/v1/validate`, which stores nothing) need `read` only when the server
/// requires read tokens; anything else is a write and needs `push` at least.
pub fn needed_scope(method: &Method, route: &str, require_read_token: bool) -> Option<Scope> {
    if matches!(route, "/healthz" | "/metrics" | "/api/openapi.json") {
        return None;
    }
    // Every MCP tool reads (or, for validate_spec, stores nothing): the reads' rule.
    if route == crate::mcp::PATH {
        return require_read_token.then_some(Scope::Read);
    }
    let read = *method == Method::GET
        || *method == Method::HEAD
        || *method == Method::OPTIONS
        || (*method == Method::POST && route == "/api/v1/validate");
    if read {
        require_read_token.then_some(Scope::Read)
    } else if route == "/api/v1/baselines" {
        // What every later run is judged against.
        Some(Scope::Admin)
    } else {
        Some(Scope::Push)
    }
}

async fn authorize(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = crate::access::route_of(&req);
    // A method the route does not serve gets its 405 from the router, with or without a token.
    if !serves(req.method(), &route) {
        return next.run(req).await;
    }
    let Some(needed) = needed_scope(req.method(), &route, state.config.require_read_token) else {
        return next.run(req).await;
    };
    let tokens = match state.current_tokens() {
        Ok(t) => t,
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or(""));
    match tokens.check(header, needed) {
        Ok(_) => next.run(req).await,
        Err(Denied::Unauthenticated(m)) => {
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                m,
                Some("create one with `yardstick server token create --scope SCOPE` on the server's store"),
            )
            .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        Err(Denied::Forbidden(m)) => ApiError::new(StatusCode::FORBIDDEN, m, None).into_response(),
    }
}

/// How long `/healthz` waits for a warehouse connection, and then for its answer.
pub const HEALTH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Health {
    /// `ok`.
    status: &'static str,
    /// The server's version.
    version: &'static str,
    /// The warehouse's schema version, as it just answered.
    schema_version: u32,
}

/// Readiness: a warehouse connection answers a trivial read within [`HEALTH_WAIT`] (twice:
/// for a free connection, then for the answer); 503 with what is wrong otherwise.
async fn healthz(State(state): State<Arc<AppState>>) -> Result<axum::Json<Health>, ApiError> {
    let schema_version = state.ready(HEALTH_WAIT).await?;
    Ok(axum::Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        schema_version,
    }))
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        state.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::not_found(
        "no such route",
        Some("GET /api/openapi.json lists every route"),
    )
}

/// The routes with their OpenAPI document (as JSON), before any state is attached.
pub fn documented_routes() -> (axum::Router<Arc<AppState>>, String) {
    aide::generate::extract_schemas(true);
    let mut api = OpenApi {
        info: Info {
            title: "yardstick server".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some(
                "Stored benchmark runs, their facts and artifacts, comparisons, trends and spec \
                 validation, over a yardstick store. Errors are JSON `{error, hint}`."
                    .into(),
            ),
            ..Info::default()
        },
        ..OpenApi::default()
    };
    let app = ApiRouter::new()
        .api_route(
            "/healthz",
            get_with(healthz, |op| {
                op.id("healthz").summary(
                    "Readiness: the warehouse answers a trivial read (503 with what is wrong when \
                     it does not); no token needed",
                )
            }),
        )
        .api_route(
            "/metrics",
            get_with(metrics, |op| {
                op.id("metrics")
                    .summary("Prometheus metrics: request counts and latency histograms by route")
                    .response::<200, String>()
            }),
        )
        .api_route(
            "/api/benchmark/contracts",
            get_with(contracts::contracts, |op| {
                op.id("benchmarkContracts").summary(
                    "The methodology contract as data: the BenchmarkRun JSON Schema, every \
                     validation rule, the init templates, the metric catalogue, the gate policy",
                )
            }),
        )
        .api_route(
            "/api/v1/runs",
            get_with(runs::list, |op| {
                op.id("listRuns")
                    .summary("Stored runs, newest first, filtered and paged")
            }),
        )
        .api_route(
            "/api/v1/runs/{id}",
            get_with(runs::show, |op| {
                op.id("getRun").summary(
                    "One run (id or unique prefix): warehouse row, points, replicates, manifest, \
                     summary, environment, spec text, failures, bottlenecks",
                )
            }),
        )
        .api_route(
            "/api/v1/runs/{id}/facts",
            get_with(runs::facts, |op| {
                op.id("getRunFacts").summary("Every fact of one run")
            }),
        )
        .api_route(
            "/api/v1/runs/{id}/artifacts",
            get_with(artifacts::list, |op| {
                op.id("listRunArtifacts")
                    .summary("The artifacts of one run, as its manifest lists them")
            }),
        )
        .api_route(
            "/api/v1/runs/{id}/artifacts/{*path}",
            get_with(artifacts::download, |op| {
                op.id("getRunArtifact").summary(
                    "One artifact, streamed; only paths the manifest lists. The sha256 is in the \
                     X-Yardstick-Sha256 header and checked while streaming",
                )
            }),
        )
        .api_route(
            "/api/v1/runs/{id}/gate",
            get_with(gate::gate, |op| {
                op.id("gateRun").summary(
                    "Gate a run against its baseline (auto, or a run): what `yardstick gate RUN \
                     --json` prints; nothing is re-run or recorded",
                )
            }),
        )
        .api_route(
            "/api/v1/baselines",
            get_with(gate::baselines, |op| {
                op.id("listBaselines").summary(
                    "The stored baselines: one reference run per machine profile and benchmark",
                )
            })
            .put_with(gate::set_baseline, |op| {
                op.id("setBaseline").summary(
                    "Make a complete run the baseline of its machine profile and benchmark \
                     (token of scope admin): what `yardstick baseline save RUN` does; replacing \
                     another run's baseline needs `force`",
                )
            }),
        )
        .api_route(
            "/api/v1/compare",
            get_with(runs::compare, |op| {
                op.id("compareRuns")
                    .summary("Compare two runs: what `yardstick compare A B --json` prints")
            }),
        )
        .api_route(
            "/api/v1/trend",
            get_with(trend::trend, |op| {
                op.id("trend").summary(
                    "One metric of one benchmark over time: a series per machine profile and \
                     point, each point a run with its value and confidence interval",
                )
            }),
        )
        .api_route(
            "/api/v1/trends",
            get_with(trend::trends, |op| {
                op.id("trends").summary(
                    "Several metrics (and machine profiles) of one benchmark over time: a trend \
                     per metric, each point with its recorded gate verdict",
                )
            }),
        )
        .api_route(
            "/api/v1/validate",
            post_with(validate::validate, |op| {
                op.id("validateSpec").summary(
                    "Validate a spec (YAML in the body): what `yardstick validate --json` prints",
                )
            })
            .layer(axum::extract::DefaultBodyLimit::max(
                validate::VALIDATE_BODY_LIMIT,
            )),
        )
        .api_route(
            "/api/v1/pushes",
            post_with(push::start, |op| {
                op.id("startPush").summary(
                    "Start pushing a run (token of scope push): its manifest and attestation are \
                     checked (paths, size, signature, run id) and the sha256 of every content \
                     still to upload is answered; `stored` when the server has this run already",
                )
            })
            .layer(axum::extract::DefaultBodyLimit::max(push::START_BODY_LIMIT)),
        )
        .api_route(
            "/api/v1/pushes/{id}/blobs/{sha256}",
            put_with(push::upload, |op| {
                op.id("uploadPushBlob").summary(
                    "Upload one content of a push, streamed; refused unless the bytes hash to \
                     the sha256 and have the size the manifest lists",
                )
            }),
        )
        .api_route(
            "/api/v1/pushes/{id}/commit",
            post_with(push::commit, |op| {
                op.id("commitPush").summary(
                    "Commit a push: the run is assembled, verified under the store's trust \
                     policy, moved into the store and indexed",
                )
            }),
        )
        .fallback(not_found);
    let app = app.finish_api(&mut api);
    (app, openapi_json(api))
}

/// The whole application: routes, the OpenAPI document, the dashboard's pages, authorization,
/// access log and metrics, answering a loopback server's hosts only.
pub fn router(state: Arc<AppState>) -> axum::Router {
    router_on(state, HostPolicy::default())
}

/// The whole application, answering only requests whose `Host` the policy allows (every
/// route, the MCP endpoint [`crate::mcp::PATH`] included), every response with the security
/// headers ([`crate::guard::SECURITY_HEADERS`]).
pub fn router_on(state: Arc<AppState>, hosts: HostPolicy) -> axum::Router {
    let (app, doc) = documented_routes();
    let doc = Arc::new(doc);
    // The Host check is the router's, for every route: rmcp's own check (on a loopback
    // server's default names) is off, so that --allowed-host names reach /mcp too.
    app.route(
        crate::mcp::PATH,
        axum::routing::any_service(crate::mcp::http_service(state.clone(), false))
            .layer(middleware::from_fn(crate::mcp::watch_client)),
    )
    .route(
        "/api/openapi.json",
        axum::routing::get(move || {
            let doc = doc.clone();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    doc.as_ref().clone(),
                )
            }
        }),
    )
    .merge(crate::dashboard::routes(state.clone()))
    .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
    .layer(middleware::from_fn_with_state(
        Arc::new(hosts),
        crate::guard::check_host,
    ))
    .layer(middleware::from_fn_with_state(
        state.clone(),
        crate::access::layer,
    ))
    .layer(middleware::from_fn(crate::guard::security_headers))
    .with_state(state)
}

/// The OpenAPI document as JSON, with axum's catch-all `{*path}` spelled as OpenAPI's `{path}`
/// and the document itself listed.
fn openapi_json(mut api: OpenApi) -> String {
    if let Some(paths) = api.paths.as_mut() {
        let old = std::mem::take(&mut paths.paths);
        paths.paths = old
            .into_iter()
            .map(|(k, v)| (k.replace("{*", "{"), v))
            .collect();
    }
    let mut value = serde_json::to_value(&api).unwrap_or_default();
    // The document's own route, documented by hand (it is not a handler aide sees).
    value["paths"]["/api/openapi.json"] = serde_json::json!({
        "get": {
            "operationId": "openapi",
            "summary": "This document (OpenAPI 3.1)",
            "responses": {"200": {"description": "The OpenAPI document", "content": {"application/json": {"schema": {"type": "object"}}}}}
        }
    });
    serde_json::to_string(&value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openapi_document_lists_every_route_and_only_those() {
        let (_, doc) = documented_routes();
        let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut listed = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                listed.push(format!("{} {path}", method.to_uppercase()));
            }
        }
        listed.sort();
        let mut want: Vec<String> = ROUTES.iter().map(|r| r.to_string()).collect();
        want.sort();
        assert_eq!(listed, want);
        // The catch-all's parameter is named like the template's.
        let params = &doc["paths"]["/api/v1/runs/{id}/artifacts/{path}"]["get"]["parameters"];
        let names: Vec<&str> = params
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["id", "path"]);
        // Errors are documented with their JSON body.
        let runs = &doc["paths"]["/api/v1/runs"]["get"]["responses"];
        for code in ["200", "400", "401", "404"] {
            assert!(
                runs[code]["content"]["application/json"].is_object(),
                "{code}: {runs}"
            );
        }
    }

    #[test]
    fn writes_always_need_a_token_reads_only_when_required() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(needed_scope(&get, "/api/v1/runs", false), None);
        assert_eq!(needed_scope(&get, "/api/v1/runs", true), Some(Scope::Read));
        assert_eq!(needed_scope(&post, "/api/v1/validate", false), None);
        assert_eq!(
            needed_scope(&post, "/api/v1/validate", true),
            Some(Scope::Read)
        );
        assert_eq!(
            needed_scope(&post, "/api/v1/runs", false),
            Some(Scope::Push)
        );
        assert_eq!(
            needed_scope(&post, "/api/v1/pushes", false),
            Some(Scope::Push)
        );
        assert_eq!(
            needed_scope(&Method::PUT, "/api/v1/pushes/{id}/blobs/{sha256}", false),
            Some(Scope::Push)
        );
        assert_eq!(
            needed_scope(&Method::DELETE, "/api/v1/runs/{id}", false),
            Some(Scope::Push)
        );
        assert_eq!(
            needed_scope(&Method::PUT, "/api/v1/baselines", false),
            Some(Scope::Admin)
        );
        assert_eq!(
            needed_scope(&Method::DELETE, "/api/v1/runs/{id}", false),
            Some(Scope::Push)
        );
        for m in [Method::GET, Method::POST, Method::DELETE] {
            assert_eq!(needed_scope(&m, crate::mcp::PATH, false), None);
            assert_eq!(needed_scope(&m, crate::mcp::PATH, true), Some(Scope::Read));
        }
        for open in ["/healthz", "/metrics", "/api/openapi.json"] {
            assert_eq!(needed_scope(&get, open, true), None);
        }
    }
}
