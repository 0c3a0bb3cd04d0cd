//! The access log: one record per request, with the route it matched, its status and how long
//! it took. Headers are never recorded (the `Authorization` header carries tokens), nor the
//! query string (it is the client's text; the route and path say what was asked). What the
//! client chose is clipped: the method to [`MAX_METHOD`] bytes, the path to [`MAX_PATH`].

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use crate::conn::BodyTimedOut;
use crate::guard::clip;
use crate::state::AppState;

/// The longest method a record carries (longer ones are cut and end with `…`).
pub const MAX_METHOD: usize = 24;
/// The longest path a record carries (longer ones are cut and end with `…`).
pub const MAX_PATH: usize = 1024;

/// One request, as logged.
#[derive(Debug, Clone, Serialize)]
pub struct AccessRecord {
    /// RFC 3339 time the request arrived.
    pub time: String,
    /// HTTP method (at most [`MAX_METHOD`] bytes).
    pub method: String,
    /// The path, without the query string (at most [`MAX_PATH`] bytes).
    pub path: String,
    /// The route template it matched (`/api/v1/runs/{id}`), or `unmatched`.
    pub route: String,
    /// Response status.
    pub status: u16,
    /// Time to the response head, in milliseconds.
    pub duration_ms: f64,
}

/// The route label of a request: the template it matched, so metrics and logs group by route
/// instead of by every run id.
pub(crate) fn route_of(req: &Request) -> String {
    req.extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string())
}

/// Middleware: times the request, counts it in the metrics and writes the access record.
pub(crate) async fn layer(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let time = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let method = req.method().clone();
    let path = clip(req.uri().path(), MAX_PATH);
    let route = route_of(&req);
    let slow_body = req.extensions().get::<BodyTimedOut>().cloned();
    let mut response = json_errors(next.run(req).await);
    if slow_body.is_some_and(|b| b.is_set()) {
        response = body_too_slow();
    }
    let elapsed = start.elapsed();
    let status = response.status().as_u16();
    state
        .metrics
        .observe(method.as_str(), &route, status, elapsed);
    (state.config.access_log)(&AccessRecord {
        time,
        method: clip(method.as_str(), MAX_METHOD),
        path,
        route,
        status,
        duration_ms: elapsed.as_secs_f64() * 1e3,
    });
    response
}

/// 408 for a request whose body came too slowly (see [`crate::conn::HttpLimits`]), whatever its
/// handler made of the failed read; the connection closes after it.
fn body_too_slow() -> Response {
    use axum::response::IntoResponse;
    let mut r = crate::ApiError::new(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        "the request body arrived too slowly",
        Some("send the body without pauses; the server's --body-timeout and --body-min-rate set how slow it may be"),
    )
    .into_response();
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
}

/// Gives the errors axum answers by itself (405 method not allowed, an unreadable body) the
/// JSON body every other error has (the dashboard's HTML error pages stay HTML).
fn json_errors(response: Response) -> Response {
    use axum::response::IntoResponse;
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (message, hint) = match status.as_u16() {
        405 => (
            "this route does not answer this method",
            "GET /api/openapi.json lists every route and its methods",
        ),
        413 => (
            "the request body is too large",
            "see the route's limit in docs/server.md",
        ),
        _ => (
            status.canonical_reason().unwrap_or("error"),
            "GET /api/openapi.json describes every route",
        ),
    };
    let mut out = crate::ApiError::new(status, message, Some(hint)).into_response();
    if let Some(allow) = response.headers().get(axum::http::header::ALLOW) {
        out.headers_mut()
            .insert(axum::http::header::ALLOW, allow.clone());
    }
    out
}
