//! The dashboard: server-rendered HTML pages over the same store and the same library calls as
//! the JSON API, one URL per view so that a link can be pasted into a chat.
//!
//! * `/` redirects to `/runs`;
//! * `/runs`: the stored runs, newest first, each with its headline figures, filtered by `name`,
//!   `profile`, `status`, paged;
//! * `/runs/{id}`: headline cards (the report's: each point's headline figures from the metric
//!   catalogue, micro points' value figures, SLO verdicts, the bottleneck verdict, the gate
//!   verdict against the stored baseline), the report's plots, then the tables, folded;
//! * `/trend`: one plot per metric over time, CI band, baseline line, each run a linked point
//!   coloured by how it compares with the baseline;
//! * `/compare?a=&b=`: two runs side by side and their comparison;
//! * `/baselines`, `/contracts`.
//!
//! Plots are SVG rendered here by `yardstick-report` (the same code as `yardstick report`);
//! there is no script and no file from anywhere else, every user-supplied text is escaped.
//! Reads need the same token as the API's when the server requires one (`Authorization:
//! Bearer`, which a browser sends only through a proxy that adds it; see docs/server.md).

mod pages;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::ApiError;
use crate::auth::{Denied, Scope};
use crate::state::AppState;

/// Every dashboard page, as `GET path` (HTML; not part of the JSON API's OpenAPI document).
pub const PAGES: &[&str] = &[
    "GET /",
    "GET /runs",
    "GET /runs/{id}",
    "GET /trend",
    "GET /compare",
    "GET /baselines",
    "GET /contracts",
];

/// The dashboard's routes, with their read-token check; merged into [`crate::api::router`].
pub fn routes(state: Arc<AppState>) -> axum::Router<Arc<AppState>> {
    axum::Router::new()
        .route(
            "/",
            get(|| async {
                (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, HeaderValue::from_static("/runs"))],
                )
            }),
        )
        .route("/runs", get(pages::runs))
        .route("/runs/{id}", get(pages::run))
        .route("/trend", get(pages::trend))
        .route("/compare", get(pages::compare))
        .route("/baselines", get(pages::baselines))
        .route("/contracts", get(pages::contracts))
        .route_layer(middleware::from_fn_with_state(state, guard))
}

/// Reads need a token of scope `read` when the server requires one, as for the API.
async fn guard(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if !state.config.require_read_token {
        return next.run(req).await;
    }
    let tokens = match state.current_tokens() {
        Ok(t) => t,
        Err(e) => return PageError::from(ApiError::internal(e)).into_response(),
    };
    let auth = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or(""));
    match tokens.check(auth, Scope::Read) {
        Ok(_) => next.run(req).await,
        Err(Denied::Unauthenticated(m)) => {
            let mut r = PageError {
                status: StatusCode::UNAUTHORIZED,
                message: m,
                hint: Some(
                    "this server requires a read token: send `Authorization: Bearer TOKEN` \
                     (a browser needs a proxy that adds it, see docs/server.md)"
                        .into(),
                ),
            }
            .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        Err(Denied::Forbidden(m)) => PageError {
            status: StatusCode::FORBIDDEN,
            message: m,
            hint: None,
        }
        .into_response(),
    }
}

/// An error page: the status, and the message and hint as HTML.
#[derive(Debug)]
pub struct PageError {
    status: StatusCode,
    message: String,
    hint: Option<String>,
}

impl PageError {
    fn bad_request(message: impl Into<String>) -> PageError {
        PageError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            hint: None,
        }
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> PageError {
        PageError {
            status: e.status,
            message: e.body.error,
            hint: e.body.hint,
        }
    }
}

impl From<yardstick_store::StoreError> for PageError {
    fn from(e: yardstick_store::StoreError) -> PageError {
        ApiError::from(e).into()
    }
}

impl From<yardstick_report::ReportError> for PageError {
    fn from(e: yardstick_report::ReportError) -> PageError {
        use yardstick_report::ReportError as R;
        let status = match &e {
            R::NotFound(_) => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        PageError {
            status,
            message: e.to_string(),
            hint: None,
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let mut body = format!(
            "<h1>{} {}</h1><p class=\"warn\">{}</p>",
            self.status.as_u16(),
            esc(self.status.canonical_reason().unwrap_or("error")),
            esc(&self.message)
        );
        if let Some(h) = &self.hint {
            body.push_str(&format!("<p>{}</p>", esc(h)));
        }
        body.push_str("<p><a href=\"/runs\">All runs</a></p>");
        (self.status, html_page("error", "", &body)).into_response()
    }
}

/// Escapes text for HTML element content and double-quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    yardstick_report::format::xml_escape(s)
}

/// Percent-encodes a query-string value (everything but the unreserved characters): the
/// client's [`crate::client::escape`].
pub(crate) use crate::client::escape as enc;

const EXTRA_CSS: &str = "
header.top{background:#1d1d1f;color:#fff;padding:8px 24px}
header.top a{color:#fff;text-decoration:none;margin-right:18px}
header.top a.on{border-bottom:2px solid #fff}
header.top b{margin-right:24px}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:8px 0 14px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#444}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px}.cols>div{min-width:0}
a.pt circle{stroke:#fff;stroke-width:1}a.pt:hover circle{stroke:#000;stroke-width:2}
";

/// A whole page: the navigation bar, `title`, the body.
pub(crate) fn html_page(title: &str, active: &str, body: &str) -> axum::response::Html<String> {
    let mut o = String::with_capacity(body.len() + 4096);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    o.push_str(&format!("<title>{} · yardstick</title>\n", esc(title)));
    o.push_str("<style>");
    o.push_str(yardstick_report::html::CSS);
    o.push_str(EXTRA_CSS);
    o.push_str("</style></head><body>\n<header class=\"top\"><b>yardstick</b>");
    for (href, label) in [
        ("/runs", "Runs"),
        ("/trend", "Trends"),
        ("/compare", "Compare"),
        ("/baselines", "Baselines"),
        ("/contracts", "Contracts"),
    ] {
        let on = if href == active { " class=\"on\"" } else { "" };
        o.push_str(&format!("<a href=\"{href}\"{on}>{label}</a>"));
    }
    o.push_str("</header>\n<main>\n");
    o.push_str(body);
    o.push_str("\n</main></body></html>\n");
    axum::response::Html(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded_and_text_escaped() {
        assert_eq!(enc("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(enc("llama-serve_1.0~x"), "llama-serve_1.0~x");
        assert_eq!(
            esc("<script>alert(\"x\")</script>"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
        );
    }

    #[test]
    fn pages_do_not_collide_with_the_api() {
        for p in PAGES {
            assert!(!crate::api::ROUTES.contains(p), "{p}");
        }
    }
}
