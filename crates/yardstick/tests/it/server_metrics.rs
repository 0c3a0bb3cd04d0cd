//! `bench serve` scraping the simulator's Prometheus endpoint (vLLM's metric names) during each
//! point: the server's running and waiting requests, KV-cache usage and its own TTFT, beside
//! the client's.

use serde_json::Value;

use crate::common::{Sim, json, yardstick};

fn serve(sim: &Sim, extra: &[&str]) -> std::process::Output {
    yardstick()
        .args([
            "--json",
            "bench",
            "serve",
            "--url",
            &sim.url,
            "--model",
            "m",
            "--scenario",
            "D(16,8)",
            "--concurrency",
            "8",
            "--max-requests",
            "120",
            "--scrape-interval",
            "200ms",
        ])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_servers_own_metrics_explain_the_queue_and_agree_on_ttft() {
    // 4 slots, 8 streams: half the requests wait for a slot.
    let sim = Sim::start(&["--ttft-ms", "10", "--itl-ms", "5", "--max-running", "4"]);
    let o = serve(&sim, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: Value = json(&o)["points"][0].clone();
    crate::schema_cli::assert_conforms("bench-serve", &json(&o));
    assert!(p["server_scrapes"].as_u64().unwrap() >= 2, "{p}");
    assert_eq!(p["server_scrape_failures"], 0);
    assert_eq!(p["server_running"]["max"], 4.0, "{p}");
    assert!(p["server_waiting"]["max"].as_f64().unwrap() >= 1.0, "{p}");
    assert_eq!(p["server_kv_cache_usage"], 1.0, "4 of 4 slots: {p}");
    assert_eq!(p["server_preemptions"], 0.0);
    // The client's TTFT counts from the scheduled send, the server's from receipt: on loopback
    // they differ by the client's and the kernel's share, well under 5 ms.
    let server = p["server_ttft_ms"].as_f64().unwrap();
    let client = p["ttft_ms"]["mean"].as_f64().unwrap();
    let diff = p["ttft_client_minus_server_ms"].as_f64().unwrap();
    assert!((client - server - diff).abs() < 1e-6);
    assert!(diff.abs() < 5.0, "client {client} ms, server {server} ms");
    assert!(
        server > 10.0,
        "queueing for a slot shows in the server's TTFT too: {server}"
    );
    // Where the wait happened: in the server's queue (half the requests wait a whole slot
    // hold of 45 ms), not in the client.
    let queue = p["server_queue_ms"].as_f64().unwrap();
    assert!(
        queue > 10.0 && queue < server,
        "server queue {queue} ms, TTFT {server} ms"
    );
    assert!(p["client_queue_ms"]["p99"].as_f64().unwrap() < queue);
    assert!(p.get("client_bottleneck").is_none(), "{p}");

    // The scrapes themselves, stored as a series with --output.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = serve(&sim, &["--output", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scrapes = json(&o)["points"][0]["server_scrapes"].as_u64().unwrap();
    let rows = yardstick_store::samples::read_rows(
        std::fs::read(out.join("server-metrics-p0.parquet")).unwrap(),
    )
    .unwrap();
    assert_eq!(rows.len() as u64, scrapes, "a row per scrape");
    assert!(
        rows.iter()
            .any(|r| r["waiting"].as_f64().unwrap_or(0.0) >= 1.0)
    );
    assert_eq!(
        rows.iter()
            .filter_map(|r| r["running"].as_f64())
            .fold(0.0, f64::max),
        4.0
    );

    // Off: nothing scraped. A bad URL: exit 2.
    let off = json(&serve(&sim, &["--server-metrics", "off"]));
    assert!(off["points"][0].get("server_scrapes").is_none(), "{off}");
    let bad = serve(&sim, &["--server-metrics", "not a url"]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let bad = serve(&sim, &["--scrape-interval", "0s"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn cost_per_token_follows_the_price_and_energy_is_measured_or_said_unavailable() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "2"]);
    let o = serve(
        &sim,
        &[
            "--cost-per-accelerator-hour",
            "2.48",
            "--accelerators",
            "8",
            "--energy",
            "--server-metrics",
            "off",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: Value = json(&o)["points"][0].clone();
    let per_s = 2.48 * 8.0 / 3600.0;
    let tput = p["output_token_throughput"].as_f64().unwrap();
    let rps = p["request_throughput"].as_f64().unwrap();
    let per_m = p["cost_per_1m_output_tokens"].as_f64().unwrap();
    assert!(
        (per_m - per_s / tput * 1e6).abs() < 1e-9 * per_m.max(1.0),
        "{p}"
    );
    let per_k = p["cost_per_1k_requests"].as_f64().unwrap();
    assert!(
        (per_k - per_s / rps * 1e3).abs() < 1e-9 * per_k.max(1.0),
        "{p}"
    );
    // Exactly one of a figure and a reason.
    let rapl = std::path::Path::new("/sys/class/powercap/intel-rapl:0/energy_uj");
    match (
        p.get("energy_j_per_output_token"),
        p.get("energy_unavailable"),
    ) {
        (Some(j), None) => {
            assert!(std::fs::read_to_string(rapl).is_ok());
            assert!(j.as_f64().unwrap() > 0.0, "{p}");
        }
        (None, Some(why)) => {
            assert!(
                std::fs::read_to_string(rapl).is_err(),
                "RAPL readable, yet: {why}"
            );
            assert!(why.as_str().unwrap().contains("RAPL"), "{why}");
        }
        other => panic!("energy: {other:?}"),
    }
    // Without a price, no cost; a bad price is exit 2.
    let plain = json(&serve(&sim, &["--server-metrics", "off"]));
    assert!(
        plain["points"][0]
            .get("cost_per_1m_output_tokens")
            .is_none()
    );
    let bad = serve(&sim, &["--cost-per-accelerator-hour", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = serve(&sim, &["--accelerators", "4"]);
    assert_eq!(bad.status.code(), Some(2), "--accelerators needs a price");
}

#[test]
fn a_runs_serve_points_keep_the_servers_series_and_facts() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "2", "--max-running", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let spec = dir.path().join("s.yaml");
    std::fs::write(
        &spec,
        crate::common::layered_spec(
            "scraped",
            &format!(
                "    component:
      - kind: serve
        target: {{url: \"{}\", api: chat, model: m}}
        scenarios: [\"D(16,8)\"]
        load: {{mode: concurrency, values: [4]}}
        stop: {{maxRequests: 200, maxDuration: 20s}}
",
                sim.url
            ),
        )
        .replace("concurrency: 1\n", "concurrency: 4\n"),
    )
    .unwrap();
    let o = crate::common::run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let p = &v["summary"]["points"][0];
    // 200 requests of 19 ms through 2 slots take about 2 s: scraped every 500 ms, every
    // replicate has scrapes in the middle of its point, when both slots are busy.
    assert!(
        p["metrics"]["server_scrapes"]["value"]["mean"]
            .as_f64()
            .unwrap()
            >= 3.0,
        "{p}"
    );
    assert_eq!(p["metrics"]["server_running"]["max"]["mean"], 2.0, "{p}");
    assert!(
        p["metrics"]["server_ttft_ms"]["value"]["mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let run = std::path::Path::new(v["dir"].as_str().unwrap());
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    let series: Vec<&str> = manifest
        .split('"')
        .filter(|s| s.ends_with("/server-metrics.parquet"))
        .collect();
    assert_eq!(series.len(), 3, "one series per replicate: {series:?}");
    for s in series {
        let rows =
            yardstick_store::samples::read_rows(std::fs::read(run.join(s)).unwrap()).unwrap();
        assert!(!rows.is_empty());
    }
}
