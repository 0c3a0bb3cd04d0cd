//! `bench serve --find-capacity` against the bundled simulator, whose capacity follows from its
//! latency model: with `--max-running M` sequences at once, each holding its slot for
//! `ttft + (out − 1) × itl`, a constant-rate open loop queues nothing up to `M / hold` requests
//! per second and queues without bound above it; a closed loop of `M` streams never waits, and
//! of `M + 1` streams one request in `M + 1` waits a whole hold.

use serde_json::Value;

use crate::common::{Sim, json, yardstick};

fn search(sim: &Sim, extra: &[&str]) -> Value {
    let o = yardstick()
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
            "--find-capacity",
            "--slo-ttft-ms",
            "25",
            "--slo-percentile",
            "90",
            "--warmup-requests",
            "10",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    json(&o)
}

#[test]
fn the_rate_search_finds_the_simulators_derived_capacity_within_5_percent() {
    // 8 slots, each held 10 + 7 × 5 = 45 ms: 8 / 0.045 = 177.8 req/s.
    let sim = Sim::start(&["--ttft-ms", "10", "--itl-ms", "5", "--max-running", "8"]);
    let truth = 8.0 / 0.045;
    let v = search(
        &sim,
        &[
            "--arrival",
            "constant",
            "--capacity-start",
            "20",
            "--capacity-precision",
            "0.02",
            "--probe-requests",
            "200",
        ],
    );
    let c = &v["capacity"];
    crate::schema_cli::assert_conforms("bench-serve-capacity", &v);
    let found = c["capacity"].as_f64().unwrap();
    let breaks = c["breaks_at"].as_f64().unwrap();
    eprintln!(
        "capacity: {} (derived {truth:.1} req/s), {} probes, {:.1} s",
        c["statement"],
        c["probes"].as_array().unwrap().len(),
        v["wall_s"].as_f64().unwrap()
    );
    assert!(
        (found - truth).abs() / truth <= 0.05,
        "found {found}, derived {truth}: {}",
        c["statement"]
    );
    assert!(found < breaks && (breaks - found) / breaks <= 0.02 + 1e-9);
    assert_eq!(c["end"], "converged");
    // Every probe is a measured point with its test; loads held are below loads broken.
    for p in c["probes"].as_array().unwrap() {
        assert!(p["requests"].as_u64().unwrap() >= 200, "{p}");
        assert!(p["summary"]["ttft_ms"]["p50"].as_f64().unwrap() > 0.0);
        let load = p["load"].as_f64().unwrap();
        match p["outcome"].as_str().unwrap() {
            "holds" => assert!(load <= found),
            _ => assert!(load >= breaks),
        }
    }
    assert!(c["output_token_throughput"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_concurrency_search_finds_the_simulators_slots_and_bad_settings_exit_2() {
    let sim = Sim::start(&["--ttft-ms", "10", "--itl-ms", "5", "--max-running", "6"]);
    let v = search(
        &sim,
        &["--capacity-axis", "concurrency", "--probe-requests", "100"],
    );
    let c = &v["capacity"];
    assert_eq!(c["capacity"], 6.0, "{}", c["statement"]);
    assert_eq!(c["breaks_at"], 7.0, "{}", c["statement"]);
    assert_eq!(c["axis"], "concurrency");
    // The human output names the answer and lists every probe.
    let o = yardstick()
        .args([
            "bench",
            "serve",
            "--url",
            &sim.url,
            "--model",
            "m",
            "--scenario",
            "D(16,8)",
            "--find-capacity",
            "--capacity-axis",
            "concurrency",
            "--capacity-start",
            "6",
            "--capacity-max",
            "7",
            "--slo-ttft-ms",
            "25",
            "--slo-attainment",
            "0.9",
            "--probe-requests",
            "100",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("capacity: D(16,8): sustains 6–7 concurrent requests at 90 % of requests meeting TTFT ≤ 25 ms"),
        "{text}"
    );
    for bad in [
        &["--find-capacity"][..],
        &[
            "--find-capacity",
            "--slo-ttft-ms",
            "25",
            "--slo-percentile",
            "100",
        ],
        &[
            "--find-capacity",
            "--slo-ttft-ms",
            "25",
            "--capacity-start",
            "0",
        ],
        &["--find-capacity", "--slo-ttft-ms", "25", "--rate", "5"],
        &[
            "--find-capacity",
            "--slo-ttft-ms",
            "25",
            "--probe-requests",
            "0",
        ],
    ] {
        let o = yardstick()
            .args(["bench", "serve", "--url", &sim.url, "--model", "m"])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
