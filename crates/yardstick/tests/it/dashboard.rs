//! The dashboard's HTML pages, served by a real `yardstick server` on loopback over a store with
//! the server tests' real runs (a baseline saved), a benchmark whose name is hostile HTML and a
//! benchmark of 1,000 runs written through the warehouse API. Each page is fetched over HTTP and
//! checked for what it must show (and for escaping); then each is opened in headless Chromium
//! (Debian's `chromium`): no console message, the trend's points are in the rendered DOM, a
//! point's link opens its run's page, and a screenshot of every page is written under
//! `<target>/dashboard-screenshots/` for people to look at.

use std::path::{Path, PathBuf};
use std::time::Instant;

use yardstick_store::RunStatus;
use yardstick_store::warehouse::{
    BaselineRow, FactRow, PointRow, RunRow, SqliteWarehouse, Warehouse,
};

use crate::common::yardstick;
use crate::external;
use crate::server::{ServerProc, copy_dir, fixture};

/// A benchmark name no HTML page may print as markup.
const HOSTILE: &str = "<script>alert('x')</script>&\"quoted\"";
/// The benchmark with many runs.
const BULK: &str = "bulk-trend";
const BULK_RUNS: usize = 1000;

/// Writes `count` runs of `name` (one point, one aggregate fact of output token throughput each,
/// values drifting down so the last ones fall below the tolerance) straight into the store's
/// warehouse. They have no run directory: the pages must cope.
fn insert_runs(store: &Path, name: &str, prefix: &str, count: usize, profile: &str) -> Vec<String> {
    let mut w = SqliteWarehouse::open(&store.join("yardstick.db")).unwrap();
    let mut ids = Vec::new();
    for i in 0..count {
        let run_id = format!("{prefix}{i:0width$}", width = 26 - prefix.len());
        let started_at = format!(
            "2026-01-{:02}T{:02}:{:02}:00Z",
            1 + i / 1440,
            (i / 60) % 24,
            i % 60
        );
        w.upsert_run(&RunRow {
            run_id: run_id.clone(),
            name: name.to_string(),
            status: RunStatus::Complete,
            mode: Some("exploratory".into()),
            spec_sha256: "0".repeat(64),
            machine_profile: Some(profile.to_string()),
            env_sha256: None,
            started_at,
            ended_at: None,
            tool_version: "0.0.0-test".into(),
            git_commit: Some(format!("{i:040x}")),
            location: store.display().to_string(),
        })
        .unwrap();
        let value = 100.0 - 15.0 * (i as f64 / count.max(1) as f64);
        w.upsert_points(&[PointRow {
            run_id: run_id.clone(),
            point_id: "component.0.serve/D(16,8)/concurrency=2".into(),
            layer: "component".into(),
            kind: "serve".into(),
            params: serde_json::json!({"scenario": "D(16,8)", "load_mode": "concurrency", "load_value": 2}),
        }])
        .unwrap();
        w.upsert_facts(&[FactRow {
            run_id: run_id.clone(),
            point_id: "component.0.serve/D(16,8)/concurrency=2".into(),
            replicate: None,
            metric: "output_token_throughput".into(),
            statistic: "value".into(),
            value,
            ci_lo: Some(value - 1.0),
            ci_hi: Some(value + 1.0),
            unit: "tok/s".into(),
            n: 3,
            artifact: None,
            row_group: None,
        }])
        .unwrap();
        ids.push(run_id);
    }
    ids
}

struct Site {
    _dir: tempfile::TempDir,
    server: ServerProc,
    runs: Vec<String>,
    hostile: Vec<String>,
}

fn site() -> Site {
    let f = fixture();
    let dir = tempfile::Builder::new()
        .prefix("ys-dashboard-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let saved = yardstick()
        .args(["baseline", "save", &f.runs[0], "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    // The second run gated against it: its verdicts are recorded for the trend.
    let gated = yardstick()
        .args(["gate", &f.runs[1], "--baseline", "auto", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        matches!(gated.status.code(), Some(0 | 3 | 4)),
        "{}",
        String::from_utf8_lossy(&gated.stderr)
    );
    let hostile = insert_runs(&store, HOSTILE, "01HOSTILE", 3, "<b>profile</b>");
    let bulk = insert_runs(&store, BULK, "01BULK", BULK_RUNS, "bulk-profile");
    SqliteWarehouse::open(&store.join("yardstick.db"))
        .unwrap()
        .set_baseline(
            &BaselineRow {
                machine_profile: "bulk-profile".into(),
                benchmark: BULK.into(),
                run_id: bulk[0].clone(),
                created_at: "2026-01-02T00:00:00Z".into(),
                note: None,
            },
            true,
        )
        .unwrap();
    let server = ServerProc::start(&store, &[]);
    Site {
        _dir: dir,
        server,
        runs: f.runs.clone(),
        hostile,
    }
}

fn page(s: &ServerProc, path: &str) -> String {
    let r = s.get(path);
    assert_eq!(
        r.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/html")),
        "{path}: {:?}",
        r.header("content-type")
    );
    let html = String::from_utf8(r.body).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{path}");
    // No file from anywhere else, no script.
    for needle in ["<script", "src=", "@import", "url(", "<iframe"] {
        assert!(!html.contains(needle), "{path}: found {needle:?}");
    }
    html
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The dashboard's pages: their URLs on this site.
fn pages(site: &Site) -> Vec<(&'static str, String)> {
    let (a, b) = (&site.runs[0], &site.runs[1]);
    vec![
        ("runs", "/runs".to_string()),
        ("run", format!("/runs/{b}")),
        (
            "trend",
            "/trend?name=server-tiny&metric=ttft_ms,output_token_throughput".to_string(),
        ),
        (
            "trend-bulk",
            format!("/trend?name={BULK}&metric=output_token_throughput&statistic=value"),
        ),
        ("compare", format!("/compare?a={a}&b={b}")),
        ("baselines", "/baselines".to_string()),
        ("contracts", "/contracts".to_string()),
    ]
}

#[test]
fn dashboard_pages_show_the_runs_and_escape_what_users_wrote() {
    let site = site();
    let s = &site.server;
    let (a, b) = (&site.runs[0], &site.runs[1]);

    let root = s.get("/");
    assert_eq!(root.status, 303);
    assert_eq!(root.header("location"), Some("/runs"));

    let runs = page(s, "/runs");
    for id in [a, b] {
        assert!(runs.contains(&format!("/runs/{id}")), "run {id} listed");
    }
    assert!(runs.contains("server-tiny"));
    let hostile = page(s, &format!("/runs?name={}", enc(HOSTILE)));
    assert_eq!(hostile.matches("<tr><td><a href=\"/runs/").count(), 3);
    assert!(
        hostile.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;quoted&quot;")
    );
    assert!(hostile.contains("&lt;b&gt;profile&lt;/b&gt;"));
    assert!(!hostile.contains("<b>profile") && !hostile.contains("\"quoted\""));
    // Filters and paging.
    let tiny = page(s, "/runs?name=server-tiny&status=complete&profile=");
    assert!(tiny.contains(&format!("/runs/{a}")) && !tiny.contains("bulk-trend"));
    let paged = page(s, &format!("/runs?name={BULK}&limit=10&offset=10"));
    assert_eq!(paged.matches("<tr><td><a href=\"/runs/").count(), 10);
    assert!(paged.contains("offset=20") && paged.contains("offset=0"));
    assert_eq!(s.get("/runs?status=bogus").status, 400);
    assert_eq!(s.get("/runs?limit=0").status, 400);

    let run = page(s, &format!("/runs/{b}"));
    assert!(run.contains(b.as_str()) && run.contains("server-tiny"));
    for want in [
        "throughput",
        "TTFT p99",
        // The catalogue's headline statistic of TPOT (the report's cards).
        "TPOT p50",
        "gate against baseline",
        "<svg",
        "<details",
    ] {
        assert!(run.contains(want), "run page shows {want:?}");
    }
    assert!(run.contains(&format!("/compare?a={a}&amp;b={b}")));
    // Headline cards come first, tables last.
    assert!(run.find("class=\"cards\"").unwrap() < run.find("<svg").unwrap());
    assert!(run.find("<svg").unwrap() < run.find("<details").unwrap());
    let missing = s.get("/runs/NOSUCHRUN");
    assert_eq!(missing.status, 404);
    assert!(String::from_utf8_lossy(&missing.body).contains("<!DOCTYPE html>"));

    let trend = page(
        s,
        "/trend?name=server-tiny&metric=ttft_ms,output_token_throughput",
    );
    assert!(trend.contains("ttft_ms") && trend.contains("output_token_throughput"));
    assert_eq!(
        trend.matches("<a class=\"pt\"").count(),
        4,
        "a point per run and metric"
    );
    assert!(trend.contains("baseline"));
    // The gated run's points carry the gate's recorded verdict; the baseline's do not.
    assert_eq!(
        trend.matches("data-source=\"gate\"").count(),
        2,
        "the gated run's two points: {}",
        trend
    );
    assert!(trend.contains(&format!("against {a}")));
    // Without a metric: the newest run's gated metrics.
    let default = page(s, "/trend?name=server-tiny");
    assert!(default.matches("<svg").count() >= 2);
    // The hostile benchmark's trend.
    let ht = page(
        s,
        &format!(
            "/trend?name={}&metric=output_token_throughput",
            enc(HOSTILE)
        ),
    );
    assert_eq!(ht.matches("<a class=\"pt\"").count(), 3);
    assert!(!ht.contains("<script>alert") && !ht.contains("<b>profile"));
    let hr = page(s, &format!("/runs/{}", site.hostile[0]));
    assert!(hr.contains("&lt;script&gt;") && !hr.contains("<script>alert"));

    // A thousand runs in one trend, every one a linked point, some flagged.
    let t0 = Instant::now();
    let bulk = page(
        s,
        &format!("/trend?name={BULK}&metric=output_token_throughput&statistic=value"),
    );
    let took = t0.elapsed();
    assert_eq!(bulk.matches("<a class=\"pt\"").count(), BULK_RUNS);
    assert!(bulk.contains("data-verdict=\"FAIL\""));
    assert!(
        !bulk.contains("data-source=\"gate\""),
        "never gated: indications only"
    );
    eprintln!(
        "trend page of {BULK_RUNS} runs: {} ms, {} bytes",
        took.as_millis(),
        bulk.len()
    );

    let cmp = page(s, &format!("/compare?a={a}&b={b}"));
    assert!(cmp.contains(a.as_str()) && cmp.contains(b.as_str()));
    assert!(cmp.contains("output_token_throughput") || cmp.contains("TTFT"));
    assert_eq!(page(s, "/compare").matches("<form").count(), 1);

    let bl = page(s, "/baselines");
    assert!(bl.contains(&format!("/runs/{a}")) && bl.contains("server-tiny"));
    let ct = page(s, "/contracts");
    for want in ["ttft_ms", "metadata-name", "Gate tolerances"] {
        assert!(ct.contains(want), "contracts show {want:?}");
    }
    // The API is untouched: still JSON, and its document lists no page.
    assert!(s.get("/api/v1/runs").json()["runs"].is_array());
    let doc = s.get("/api/openapi.json").json();
    assert!(doc["paths"].get("/runs").is_none());
}

#[test]
fn dashboard_pages_need_the_read_token_when_reads_do() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let out = yardstick()
        .args(["server", "token", "create", "--scope", "read", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap();
    let token = token.split_whitespace().next().unwrap().to_string();
    let s = ServerProc::start(&store, &["--require-read-token"]);
    for path in [
        "/runs",
        "/trend?name=server-tiny",
        "/baselines",
        "/contracts",
    ] {
        let r = s.get(path);
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert!(String::from_utf8_lossy(&r.body).contains("<!DOCTYPE html>"));
        let auth = format!("Bearer {token}");
        let ok = s.request("GET", path, &[("Authorization", &auth)], b"");
        assert_eq!(ok.status, 200, "{path}");
        // A token in the URL is not a token.
        let sep = if path.contains('?') { '&' } else { '?' };
        assert_eq!(s.get(&format!("{path}{sep}token={token}")).status, 401);
    }
}

/// Where the screenshots go: `<target>/dashboard-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("dashboard-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn dashboard_pages_render_in_headless_chromium_and_trend_points_link_to_runs() {
    let Some(bin) = external::require(
        "chromium",
        "dashboard_pages_render_in_headless_chromium_and_trend_points_link_to_runs",
        "looked at $YARDSTICK_CHROMIUM, else chromium/chromium-browser in /usr/bin and PATH; \
         install it with `apt-get install -y chromium fonts-liberation` (.ci/run does on CI)",
        crate::chromium::find(),
    ) else {
        return;
    };
    let site = site();
    let base = site.server.url.clone();
    let prof = tempfile::tempdir().unwrap();
    let shots = screenshot_dir();
    for (i, (name, path)) in pages(&site).into_iter().enumerate() {
        let url = format!("{base}{path}");
        let out = crate::chromium::run(
            &bin,
            &prof.path().join(format!("d{i}")),
            &url,
            &["--dump-dom"],
        );
        assert!(out.status.success(), "{name}: {out:?}");
        let console = crate::chromium::console_lines(&out.stderr);
        assert!(console.is_empty(), "{name}: console messages: {console:#?}");
        let dom = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            dom.contains("<main>"),
            "{name}: {}",
            &dom[..dom.len().min(300)]
        );
        match name {
            "trend" => assert_eq!(dom.matches("class=\"pt\"").count(), 4, "{name}"),
            "trend-bulk" => assert_eq!(dom.matches("class=\"pt\"").count(), BULK_RUNS),
            _ => {}
        }
        if name == "trend" {
            // Follow the first point's link, as the browser resolved it.
            let href = dom
                .split("class=\"pt\" href=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .expect("a point with a link");
            assert!(href.starts_with("/runs/"), "{href}");
            let run_url = format!("{base}{href}");
            let out =
                crate::chromium::run(&bin, &prof.path().join("follow"), &run_url, &["--dump-dom"]);
            let run_dom = String::from_utf8_lossy(&out.stdout);
            let id = href.trim_start_matches("/runs/");
            assert!(site.runs.iter().any(|r| r == id), "{id} is a stored run");
            assert!(
                run_dom.contains("<h1>server-tiny</h1>")
                    && run_dom.contains(&format!("run <code>{id}</code>")),
                "the run page of {id}"
            );
            assert!(crate::chromium::console_lines(&out.stderr).is_empty());
        }
        let png = shots.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png);
        let out = crate::chromium::run(
            &bin,
            &prof.path().join(format!("s{i}")),
            &url,
            &[
                &format!("--screenshot={}", png.display()),
                "--window-size=1366,2200",
                "--hide-scrollbars",
            ],
        );
        let bytes =
            std::fs::read(&png).unwrap_or_else(|e| panic!("{name}: no screenshot ({e}): {out:?}"));
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        assert!(
            bytes.len() > 20_000,
            "{name}: screenshot is {} bytes",
            bytes.len()
        );
    }
    eprintln!("dashboard screenshots: {}", shots.display());
}
