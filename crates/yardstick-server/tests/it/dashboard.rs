//! The dashboard's pages as the whole application serves them (the binary's tests,
//! `crates/yardstick/tests/it/dashboard.rs`, open them over HTTP and in Chromium), over a store
//! whose runs are written through the warehouse API: what they show, and the markup that keeps
//! their tables within the page.

use axum::http::StatusCode;
use yardstick_store::RunStatus;
use yardstick_store::warehouse::{FactRow, PointRow, RunRow, SqliteWarehouse, Warehouse};

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

/// Stores run `run_id` of `name`, started at minute `minute`, with these aggregate facts
/// (point, metric, statistic, value, unit) and a replicate of each.
fn store_run(
    w: &mut dyn Warehouse,
    run_id: &str,
    name: &str,
    minute: u32,
    facts: &[(&str, &str, &str, f64, &str)],
) {
    w.upsert_run(&RunRow {
        run_id: run_id.into(),
        name: name.into(),
        status: RunStatus::Complete,
        mode: Some("exploratory".into()),
        spec_sha256: "0".repeat(64),
        machine_profile: Some("cpu-test".into()),
        env_sha256: None,
        started_at: format!("2026-01-01T00:{minute:02}:00Z"),
        ended_at: None,
        tool_version: "0.0.0-test".into(),
        git_commit: None,
        location: String::new(),
    })
    .unwrap();
    let mut points: Vec<&str> = facts.iter().map(|f| f.0).collect();
    points.dedup();
    let rows: Vec<PointRow> = points
        .iter()
        .map(|p| PointRow {
            run_id: run_id.into(),
            point_id: p.to_string(),
            layer: "component".into(),
            kind: "serve".into(),
            params: serde_json::json!({}),
        })
        .collect();
    w.upsert_points(&rows).unwrap();
    let fact = |(point, metric, statistic, value, unit): &(&str, &str, &str, f64, &str),
                replicate: Option<u32>| FactRow {
        run_id: run_id.into(),
        point_id: point.to_string(),
        replicate,
        metric: metric.to_string(),
        statistic: statistic.to_string(),
        value: *value,
        ci_lo: replicate.is_none().then_some(value * 0.98),
        ci_hi: replicate.is_none().then_some(value * 1.02),
        unit: unit.to_string(),
        n: 3,
        artifact: None,
        row_group: None,
    };
    let rows: Vec<FactRow> = facts
        .iter()
        .flat_map(|f| [fact(f, None), fact(f, Some(0))])
        .collect();
    w.upsert_facts(&rows).unwrap();
}

/// The row of the run list that links to `run_id`.
fn list_row<'a>(html: &'a str, run_id: &str) -> &'a str {
    let start = html
        .find(&format!("<tr><td><a href=\"/runs/{run_id}\">"))
        .unwrap_or_else(|| panic!("{run_id} not listed"));
    let rest = &html[start..];
    &rest[..rest.find("</tr>").unwrap()]
}

#[tokio::test]
async fn the_run_list_shows_each_runs_headline_as_its_page_does() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path());
    let mut w = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    let serve = "component.0.serve/concurrency=32/scenario=D(128,64)";
    store_run(
        &mut w,
        "01JSERVE000000000000000000",
        "serve-bench",
        1,
        &[
            (serve, "request_throughput", "value", 8.1, "req/s"),
            (serve, "output_token_throughput", "value", 64.8, "tok/s"),
            (serve, "ttft_ms", "p50", 51.8, "ms"),
            (serve, "ttft_ms", "p99", 66.8, "ms"),
        ],
    );
    store_run(
        &mut w,
        "01JMICRO000000000000000000",
        "stream",
        2,
        &[
            ("micro.0.memory", "memory.copy", "value", 18.5, "GB/s"),
            ("micro.0.memory", "memory.triad", "value", 20.25, "GB/s"),
        ],
    );
    store_run(
        &mut w,
        "01JSWEEP000000000000000000",
        "sweep",
        3,
        &[
            (
                "a/concurrency=1",
                "request_throughput",
                "value",
                2.0,
                "req/s",
            ),
            (
                "b/concurrency=8",
                "request_throughput",
                "value",
                15.0,
                "req/s",
            ),
        ],
    );
    store_run(&mut w, "01JEMPTY000000000000000000", "empty", 4, &[]);
    drop(w);
    let app = yardstick_server::api::router(state);
    let html = page(&app, "/runs").await;
    assert!(html.contains("<th>benchmark</th><th>headline</th><th>status</th>"));
    let human = yardstick_report::format::human;

    // A serving run: its request rate and its TTFT p50 (the first figure of another class),
    // labelled and valued as its page's cards are.
    let row = list_row(&html, "01JSERVE000000000000000000");
    let rate = format!("request throughput <b>{}</b>", human(8.1, "req/s"));
    let ttft = format!("TTFT p50 <b>{}</b>", human(51.8, "ms"));
    assert!(row.contains(&rate) && row.contains(&ttft), "{row}");
    assert!(row.find(&rate) < row.find(&ttft), "{row}");
    assert!(!row.contains("output token") && !row.contains("+"), "{row}");
    // The headline is its own cell, before the status; the point and the interval are in its
    // tooltip.
    assert!(
        row.contains("</a></td><td class=\"t\"><span class=\"headline\" title=\""),
        "{row}"
    );
    assert!(row.contains("</span></td><td>complete</td>"), "{row}");
    assert!(row.contains(&format!("title=\"{serve}\n")), "{row}");
    // The same figures head the run's page.
    let run = page(&app, "/runs/01JSERVE000000000000000000").await;
    for (k, v) in [
        ("request throughput", human(8.1, "req/s")),
        ("TTFT p50", human(51.8, "ms")),
    ] {
        assert!(
            run.contains(&format!("<div class=\"k\">{k}</div><div class=\"v\">{v}")),
            "the run page's card {k}: {v}"
        );
    }

    // A micro benchmark: its gated figure.
    let row = list_row(&html, "01JMICRO000000000000000000");
    assert!(
        row.contains(&format!("memory.triad <b>{}</b>", human(20.25, "GB/s"))),
        "{row}"
    );
    // A sweep: its first point's figure, and how many more points.
    let row = list_row(&html, "01JSWEEP000000000000000000");
    assert!(
        row.contains(&format!(
            "request throughput <b>{}</b>",
            human(2.0, "req/s")
        )),
        "{row}"
    );
    assert!(
        row.contains("<span class=\"more\">+1 point</span>"),
        "{row}"
    );
    // A run without facts: nothing to show.
    let row = list_row(&html, "01JEMPTY000000000000000000");
    assert!(
        row.contains("</a></td><td class=\"t\">-</td><td>complete</td>"),
        "{row}"
    );
}
