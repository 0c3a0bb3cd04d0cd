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
