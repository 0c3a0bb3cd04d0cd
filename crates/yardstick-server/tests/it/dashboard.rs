//! The dashboard's pages as the whole application serves them (the binary's tests,
//! `crates/yardstick/tests/it/dashboard.rs`, open them over HTTP and in Chromium): what they
//! show, and the markup that keeps their tables within the page.

use axum::http::StatusCode;

use crate::{get, send, state};

/// The page at `path`, as HTML.
async fn page(app: &axum::Router, path: &str) -> String {
    let res = send(app, get(path, "127.0.0.1")).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    let bytes = axum::body::to_bytes(res.into_body(), 16 * 1024 * 1024)
        .await
        .unwrap();
    let html = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{path}");
    html
}

#[tokio::test]
async fn contracts_put_each_definition_and_hint_under_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let app = yardstick_server::api::router(state(dir.path()));
    let html = page(&app, "/contracts").await;
    // The metric table: five short columns, the definition on a wrapping line under the row.
    assert!(html.contains(
        "<thead><tr><th>metric</th><th>unit</th><th>better</th><th>gated</th>\
         <th>statistics</th></tr></thead>"
    ));
    for m in yardstick_spec::metrics::CATALOGUE {
        let id = yardstick_report::format::xml_escape(m.id);
        let def = yardstick_report::format::xml_escape(m.definition);
        let row = html
            .split("<tr class=\"lead\">")
            .find(|r| r.starts_with(&format!("<td class=\"t\"><code>{id}</code></td>")))
            .unwrap_or_else(|| panic!("no row for {id}"));
        assert!(
            row.contains(&format!(
                "</tr>\n<tr class=\"why\"><td colspan=\"5\">{def}</td></tr>"
            )),
            "{row}"
        );
    }
    // The rules: the hint under the row.
    assert!(html.contains(
        "<thead><tr><th>rule</th><th>checks</th><th>why (methodology.md)</th></tr></thead>"
    ));
    for r in yardstick_spec::rules::RULES {
        let hint = yardstick_report::format::xml_escape(r.hint);
        assert!(
            html.contains(&format!(
                "<tr class=\"why\"><td colspan=\"3\">hint: {hint}</td></tr>"
            )),
            "{}",
            r.id
        );
    }
    // No fixed-width column is left, and the rules that wrap these cells are served.
    assert!(!html.contains("min-width:320px"));
    for rule in [
        "td.t{white-space:normal;overflow-wrap:anywhere;",
        "tr.why>td{white-space:normal;overflow-wrap:anywhere;",
    ] {
        assert!(html.contains(rule), "{rule}");
    }
}
