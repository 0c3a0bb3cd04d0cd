//! yardstick-server's integration tests, in process: the whole application (`api::router`) over
//! a real store directory and its SQLite warehouse, driven request by request with tower's
//! `oneshot` — no socket, no child process. The binary's tests (`crates/yardstick/tests/it`)
//! keep the command-line contract and what needs a real connection (timeouts, TLS, shutdown).
//! Run one module with `cargo test -p yardstick-server --test it guard::`.

mod dashboard;
mod guard;
mod queries;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, Response};
use tower::ServiceExt;
use yardstick_server::{AppState, ServerConfig};

/// A server's state over a new, empty store directory (the warehouse is created).
pub fn state(dir: &std::path::Path) -> Arc<AppState> {
    state_with(dir, Default::default())
}

/// [`state`] with these query limits.
pub fn state_with(
    dir: &std::path::Path,
    query: yardstick_server::query::QuerySettings,
) -> Arc<AppState> {
    let config = ServerConfig {
        store_dir: Some(dir.to_path_buf()),
        warehouse: dir.display().to_string(),
        require_read_token: false,
        require_signature: false,
        max_push_bytes: 1024 * 1024,
        query,
        allow_privileged_warehouse: false,
        staging: Default::default(),
        index: None,
        tls: None,
        allowed_hosts: Vec::new(),
        limits: Default::default(),
        access_log: Arc::new(|_| {}),
    };
    Arc::new(AppState::open(config).expect("open the state"))
}

/// One request through the whole application.
pub async fn send(app: &axum::Router, req: Request<Body>) -> Response<Body> {
    app.clone()
        .oneshot(req)
        .await
        .expect("the router is infallible")
}

/// A GET of `path` with `Host: host`.
pub fn get(path: &str, host: &str) -> Request<Body> {
    Request::get(path)
        .header("host", host)
        .body(Body::empty())
        .unwrap()
}

/// The body as JSON.
pub async fn json(res: Response<Body>) -> serde_json::Value {
    let bytes = axum::body::to_bytes(res.into_body(), 16 * 1024 * 1024)
        .await
        .unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}
