//! What every answer goes through: the `Host` allowlist (against DNS rebinding), the security
//! headers, readiness, and metrics labels that a client cannot invent.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};

use crate::{get, json, send, state};

const ROUTES: &[&str] = &[
    "/api/v1/runs",
    "/runs",
    "/api/v1/baselines",
    "/api/benchmark/contracts",
    "/api/openapi.json",
    "/metrics",
    "/mcp",
];

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route_and_loopback_names_answer() {
    let dir = tempfile::tempdir().unwrap();
    let app = yardstick_server::api::router(state(dir.path()));
    for route in ROUTES {
        let res = send(&app, get(route, "attacker.example")).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{route}");
        let body = json(res).await;
        assert!(
            body["hint"].as_str().unwrap().contains("--allowed-host"),
            "{route}: {body}"
        );
    }
    for host in ["127.0.0.1:8686", "localhost", "[::1]:9000"] {
        let res = send(&app, get("/api/v1/runs", host)).await;
        assert_eq!(res.status(), StatusCode::OK, "{host}");
        assert_eq!(json(res).await["runs"], serde_json::json!([]));
    }
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let app = yardstick_server::api::router(state(dir.path()));
    for (path, status) in [
        ("/runs", StatusCode::OK),
        ("/api/v1/runs", StatusCode::OK),
        ("/api/v1/runs/NOPE", StatusCode::NOT_FOUND),
        ("/no/such/route", StatusCode::NOT_FOUND),
    ] {
        let res = send(&app, get(path, "127.0.0.1")).await;
        assert_eq!(res.status(), status, "{path}");
        for (name, value) in yardstick_server::guard::SECURITY_HEADERS {
            assert_eq!(
                res.headers().get(*name).and_then(|v| v.to_str().ok()),
                Some(*value),
                "{path}: {name}"
            );
        }
    }
    let csp = yardstick_server::guard::CONTENT_SECURITY_POLICY;
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
}

#[tokio::test]
async fn healthz_opens_the_warehouse_and_says_ready() {
    let dir = tempfile::tempdir().unwrap();
    let app = yardstick_server::api::router(state(dir.path()));
    let res = send(&app, get("/healthz", "127.0.0.1")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(json(res).await["status"], "ok");
}

#[tokio::test]
async fn invented_methods_share_one_metrics_label() {
    let dir = tempfile::tempdir().unwrap();
    let app = yardstick_server::api::router(state(dir.path()));
    for i in 0..20 {
        let method =
            Method::from_bytes(format!("INVENTED{i}{}", "X".repeat(2000)).as_bytes()).unwrap();
        let req = Request::builder()
            .method(method)
            .uri("/api/v1/runs")
            .header("host", "127.0.0.1")
            .body(Body::empty())
            .unwrap();
        let res = send(&app, req).await;
        assert!(res.status().is_client_error(), "{}", res.status());
    }
    let res = send(&app, get("/metrics", "127.0.0.1")).await;
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        !text.contains("INVENTED"),
        "a client's method became a label"
    );
    assert!(text.contains("method=\"other\""), "{text}");
    assert!(text.len() < 64 * 1024, "{} bytes of metrics", text.len());
}
