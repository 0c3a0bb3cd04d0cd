//! Hot metrics with a real receiver: Debian's Prometheus (2.42) with its remote-write receiver.
//! `bench serve --remote-write` and `run --remote-write` push while the load runs; the series are
//! queried back through Prometheus's HTTP API. A receiver that is down costs the benchmark
//! nothing but dropped (counted) pushes. `.ci/run` installs `prometheus`; elsewhere set
//! `YARDSTICK_PROMETHEUS` to the binary.

use std::io::Read;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Sim, bench_serve_json, json, serve_doc, yardstick};
use crate::external;

struct Prometheus {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn locate() -> Option<PathBuf> {
    std::env::var_os("YARDSTICK_PROMETHEUS")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/usr/bin/prometheus")))
        .filter(|p| p.exists())
}

fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    std::io::Write::write_all(
        &mut s,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

fn start(test: &str) -> Option<Prometheus> {
    let bin = external::require(
        "prometheus",
        test,
        "Debian's `prometheus` (apt-get install prometheus), or set YARDSTICK_PROMETHEUS",
        locate(),
    )?;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, "global: {scrape_interval: 1m}\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prometheus");
    let p = Prometheus {
        child,
        addr,
        _dir: dir,
    };
    let t0 = Instant::now();
    while get(&p.addr, "/-/ready").is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "prometheus not ready in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(p)
}

/// An instant query's vector: (labels, value) per series.
fn query(p: &Prometheus, q: &str) -> Vec<(serde_json::Value, f64)> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = get(&p.addr, &format!("/api/v1/query?query={enc}")).expect("query answered");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metric"].clone(),
                r["value"][1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn bench_serve_and_run_push_live_series_that_prometheus_stores() {
    let Some(prom) = start("bench_serve_and_run_push_live_series_that_prometheus_stores") else {
        return;
    };
    let write = format!("http://{}/api/v1/write", prom.addr);
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let out = yardstick()
        .env("YS_HOT_CANARY", "Bearer hot-secret-canary-7731")
        .args([
            "--json", "bench", "serve", "--url", &sim.url, "--model", "m",
        ])
        .args([
            "--scenario",
            "D(16,8)",
            "--concurrency",
            "4",
            "--max-requests",
            "300",
        ])
        .args(["--remote-write", &write, "--hot-interval", "200ms"])
        .args(["--remote-write-header", "Authorization=YS_HOT_CANARY"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc = serve_doc(&out);
    let hot = &doc["hot_metrics"][0];
    assert!(hot["pushes"].as_u64().unwrap() >= 1, "{hot}");
    assert_eq!(hot["dropped_pushes"], 0, "{hot}");
    // The header's value came from the environment and went nowhere else.
    let all = format!("{doc}{stderr}");
    assert!(
        !all.contains("hot-secret-canary"),
        "the header value leaked"
    );
    let completed = doc["points"][0]["requests"]["completed"]
        .as_u64()
        .unwrap_or_else(|| panic!("{doc}"));
    // The last push is the final count: Prometheus holds what the summary says.
    let done = query(
        &prom,
        "yardstick_requests_completed_total{benchmark=\"bench-serve\"}",
    );
    assert_eq!(done.len(), 1, "{done:?}");
    let (labels, value) = &done[0];
    assert_eq!(*value as u64, completed, "{labels}");
    assert_eq!(labels["point"], "D(16,8)/concurrency=4", "{labels}");
    assert!(labels["node"].as_str().is_some_and(|n| !n.is_empty()));
    let ttft = query(
        &prom,
        "yardstick_ttft_seconds_count{benchmark=\"bench-serve\"}",
    );
    assert_eq!(ttft[0].1 as u64, completed);
    // Every TTFT is above the simulator's 5 ms and well under a second.
    let under_5ms = query(
        &prom,
        "yardstick_ttft_seconds_bucket{benchmark=\"bench-serve\",le=\"0.005\"}",
    );
    assert_eq!(under_5ms[0].1, 0.0);
    let under_1s = query(
        &prom,
        "yardstick_ttft_seconds_bucket{benchmark=\"bench-serve\",le=\"1\"}",
    );
    assert_eq!(under_1s[0].1 as u64, completed);
    // Every request's send against its schedule, and every token gap (8 tokens: 7 gaps each).
    let late = query(
        &prom,
        "yardstick_schedule_lateness_seconds_count{benchmark=\"bench-serve\"}",
    );
    assert_eq!(late[0].1 as u64, completed);
    let itl = query(
        &prom,
        "yardstick_itl_seconds_count{benchmark=\"bench-serve\"}",
    );
    assert_eq!(itl[0].1 as u64, completed * 7, "{itl:?}");
    // The simulator's own metrics, scraped and mirrored: nothing runs once the load is done.
    let running = query(
        &prom,
        "yardstick_server_requests_running{benchmark=\"bench-serve\"}",
    );
    assert_eq!(running.len(), 1, "{running:?}");
    assert!(running[0].1 <= 4.0, "{running:?}");
    // Every panel of the Grafana dashboard we ship answers from these series (its variables
    // set to "all").
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../deploy/grafana/yardstick.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut exprs = 0;
    // Telemetry panels answer for `run` (checked below); a GPU's series exist only with a GPU.
    let mut telemetry_exprs = Vec::new();
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let raw = t["expr"].as_str().unwrap();
            if raw.contains("yardstick_telemetry_util_pct") {
                continue;
            }
            if raw.contains("yardstick_telemetry_") {
                telemetry_exprs.push(raw.to_string());
                continue;
            }
            let e = raw
                .replace("$__rate_interval", "1m")
                .replace("$benchmark", "bench-serve")
                .replace("$run_id", ".*")
                .replace("$point", ".*");
            let got = query(&prom, &e);
            assert!(
                got.iter().any(|(_, v)| v.is_finite()),
                "panel {}: `{e}` answered {got:?}",
                panel["title"]
            );
            exprs += 1;
        }
    }
    assert!(exprs >= 10, "{exprs}");
    assert!(!telemetry_exprs.is_empty());
    // No series carries a request id: labels are the low-cardinality join keys.
    let series = get(
        &prom.addr,
        "/api/v1/series?match%5B%5D=%7B__name__%3D~%22yardstick_.%2A%22%7D",
    )
    .unwrap();
    assert!(!series.contains("request_id"), "{series}");

    // A spec's `observability`: one series per step of `yardstick run`, labelled with the run
    // and the replicate.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    let text = crate::common::layered_spec(
        "hot-run",
        &format!(
            "    component:\n      - kind: serve\n        target: {{url: \"{}\", api: chat, model: m}}\n        scenarios: [\"D(16,8)\"]\n        load: {{mode: concurrency, values: [2]}}\n        stop: {{maxRequests: 40}}\n",
            sim.url
        ),
    )
    .replace(
        "  layers:\n",
        &format!(
            "  observability: {{remoteWrite: {{url: \"{write}\", headersEnv: {{Authorization: YS_HOT_CANARY}}}}, interval: 200ms}}\n  layers:\n"
        ),
    );
    std::fs::write(&spec, &text).unwrap();
    crate::common::assert_validate_refuses(
        &spec,
        &text,
        &[
            (&write, "ftp://x/api/v1/write", "is not an http(s) URL"),
            (
                "interval: 200ms",
                "interval: 10ms",
                "`interval` is below 100ms",
            ),
        ],
    );
    std::fs::write(&spec, &text).unwrap();
    let o = yardstick()
        .env("YS_HOT_CANARY", "Bearer hot-secret-canary-7731")
        .args(["run", "--json", "-q", "--telemetry-interval", "100ms"])
        .arg(&spec)
        .arg("--store")
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run_id = json(&o)["run_id"].as_str().unwrap().to_string();
    let per_step = query(
        &prom,
        &format!("yardstick_requests_completed_total{{benchmark=\"hot-run\",run_id=\"{run_id}\"}}"),
    );
    let mut replicates: Vec<String> = per_step
        .iter()
        .map(|(l, _)| l["replicate"].as_str().unwrap().to_string())
        .collect();
    replicates.sort();
    assert_eq!(replicates, ["0", "1", "2"], "{per_step:?}");
    assert!(
        per_step.iter().all(|(l, v)| {
            l["point"] == "component.0.serve/D(16,8)/concurrency=2" && *v >= 40.0
        })
    );
    // The node's telemetry, mirrored from the run's sampler into each step's series.
    let mem = query(
        &prom,
        &format!("yardstick_telemetry_memory_used_bytes{{run_id=\"{run_id}\",device=\"host\"}}"),
    );
    assert!(!mem.is_empty(), "no telemetry mirrored");
    assert!(mem.iter().all(|(_, v)| *v > 1e6), "{mem:?}");
    for raw in &telemetry_exprs {
        let e = raw
            .replace("$benchmark", "hot-run")
            .replace("$run_id", &run_id);
        let got = query(&prom, &e);
        assert!(
            got.iter().any(|(_, v)| v.is_finite()),
            "`{e}` answered {got:?}"
        );
    }
}

#[test]
fn a_receiver_that_is_down_costs_dropped_pushes_not_the_benchmark() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    // Nothing listens on port 1.
    let out = bench_serve_json(
        &sim.url,
        &[
            "--scenario",
            "D(16,8)",
            "--concurrency",
            "2",
            "--max-requests",
            "60",
            "--remote-write",
            "http://127.0.0.1:1/api/v1/write",
            "--hot-interval",
            "100ms",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc = serve_doc(&out);
    assert_eq!(doc["points"][0]["requests"]["completed"], 60);
    let hot = &doc["hot_metrics"][0];
    assert_eq!(hot["pushes"], 0, "{hot}");
    assert!(hot["dropped_pushes"].as_u64().unwrap() >= 1, "{hot}");
    assert!(hot["dropped_samples"].as_u64().unwrap() > 0, "{hot}");
    assert!(stderr.contains("dropped"), "{stderr}");
    // Bad flags are the user's mistakes.
    for args in [
        vec!["--remote-write", "ftp://x/y"],
        vec![
            "--remote-write",
            "http://127.0.0.1:1/w",
            "--remote-write-header",
            "Authorization=YS_UNSET_VAR_91",
        ],
        vec!["--remote-write-header", "A=B"],
        vec![
            "--remote-write",
            "http://127.0.0.1:1/w",
            "--hot-interval",
            "10ms",
        ],
    ] {
        let o = bench_serve_json(
            &sim.url,
            &[&["--max-requests", "5"][..], &args[..]].concat(),
        );
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
