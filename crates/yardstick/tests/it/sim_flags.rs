//! The simulator's latency-model flags through the real binaries: `yardstick sim` with
//! `--ttft-per-token-ms`, `--itl-jitter-ms` and `--itl-slowdown`, and `yardstick bench serve`'s
//! `--max-in-flight`. The sim is never early, so its model gives lower bounds; upper bounds are
//! loose (a loaded machine only ever makes things later). No throughput is asserted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::Sim;

fn bench(url: &str, args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(["--json", "bench", "serve", "--url", url, "--model", "sim"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The sim's log once it holds `n` lines.
fn sim_log(path: &Path, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let l: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if l.len() >= n {
            return l;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the sim log never reached {n} lines");
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn ttft_grows_with_the_prompt_by_ttft_per_token_ms() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--ttft-per-token-ms",
        "2",
        "--itl-ms",
        "1",
        "--log",
        log.to_str().unwrap(),
    ]);
    for (prompt, n_before) in [(40u64, 0usize), (4, 4)] {
        let doc = bench(
            &sim.url,
            &[
                "--scenario",
                &format!("D({prompt},2)"),
                "--concurrency",
                "1",
                "--max-requests",
                "4",
            ],
        );
        let want = 5.0 + 2.0 * prompt as f64;
        let lines = sim_log(&log, n_before + 4);
        for l in &lines[n_before..] {
            assert_eq!(l["prompt_tokens"].as_u64(), Some(prompt));
            let ttft = f(&l["ttft_ms"]);
            // Never early; at most a timer tick late, plus a loaded machine.
            assert!(
                ttft >= want - 0.01 && ttft < want + 500.0,
                "{ttft} vs {want}"
            );
        }
        let client = f(&doc["points"][0]["ttft_ms"]["min"]);
        assert!(client >= want - 0.01, "client TTFT {client} < {want}");
    }
}

#[test]
fn itl_jitter_spreads_the_gaps_around_the_mean() {
    let sim = Sim::start(&["--ttft-ms", "2", "--itl-ms", "6", "--itl-jitter-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    bench(
        &sim.url,
        &[
            "--scenario",
            "D(4,41)",
            "--concurrency",
            "2",
            "--max-requests",
            "6",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let bytes = std::fs::read(out.join("requests.parquet")).unwrap();
    let rows = yardstick_store::samples::read_rows(bytes).unwrap();
    let gaps: Vec<f64> = rows
        .iter()
        .flat_map(|r| r["itl_ms"].as_array().unwrap().clone())
        .map(|x| f(&x))
        .collect();
    assert_eq!(gaps.len(), 6 * 40);
    // Gaps are drawn uniformly from 6 ± 5 ms: a quarter of them below 3.5 ms and a quarter
    // above 8.5 ms. Without jitter nearly all would sit at 6-7 ms.
    let short = gaps.iter().filter(|&&g| g < 3.5).count();
    let long = gaps.iter().filter(|&&g| g > 8.5).count();
    assert!(short >= 12 && long >= 12, "short {short}, long {long}");
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!(mean < 6.0 + 50.0, "{mean}");
}

#[test]
fn itl_slowdown_stretches_gaps_with_the_running_requests() {
    // Each gap is itl × (1 + slowdown × (running − 1)): with 4 closed-loop streams mostly
    // running together, gaps are well above the 4 ms of a lone request and at most 16 ms
    // (plus a loaded machine).
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "1",
        "--itl-ms",
        "4",
        "--itl-slowdown",
        "1",
        "--log",
        log.to_str().unwrap(),
    ]);
    bench(
        &sim.url,
        &[
            "--scenario",
            "D(4,21)",
            "--concurrency",
            "4",
            "--max-requests",
            "12",
        ],
    );
    let lines = sim_log(&log, 12);
    let per_gap: Vec<f64> = lines
        .iter()
        .map(|l| (f(&l["e2e_ms"]) - f(&l["ttft_ms"])) / 20.0)
        .collect();
    let mean = per_gap.iter().sum::<f64>() / per_gap.len() as f64;
    // Alone a gap is 4 ms; with two or more running it is at least 8 ms.
    assert!(mean >= 6.0, "mean gap {mean} ms: no slowdown seen");
    assert!(mean < 16.0 + 50.0, "mean gap {mean}");
    // A lone request is not slowed down.
    let lone = Sim::start(&["--ttft-ms", "1", "--itl-ms", "4", "--itl-slowdown", "1"]);
    let doc = bench(
        &lone.url,
        &[
            "--scenario",
            "D(4,21)",
            "--concurrency",
            "1",
            "--max-requests",
            "2",
        ],
    );
    let tpot = f(&doc["points"][0]["tpot_ms"]["min"]);
    assert!((3.0..4.0 + 50.0).contains(&tpot), "{tpot}");
}

#[test]
fn max_in_flight_caps_requests_at_the_server_and_queues_in_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "20",
        "--itl-ms",
        "2",
        "--log",
        log.to_str().unwrap(),
    ]);
    // 30 arrivals in ~75 ms, but only 3 in flight, each ~28 ms long: the last ones wait in the
    // client for at least 9 rounds of ~28 ms.
    let doc = bench(
        &sim.url,
        &[
            "--scenario",
            "D(4,5)",
            "--rate",
            "400",
            "--arrival",
            "constant",
            "--max-in-flight",
            "3",
            "--max-requests",
            "30",
        ],
    );
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["completed"], 30);
    let lines = sim_log(&log, 30);
    let mut ev: Vec<(u64, i32)> = Vec::new();
    for l in &lines {
        let a = l["received_ns"].as_u64().unwrap();
        ev.push((a, 1));
        ev.push((l["last_token_ns"].as_u64().unwrap(), -1));
    }
    ev.sort();
    let (mut cur, mut most) = (0, 0);
    for (_, d) in ev {
        cur += d;
        most = most.max(cur);
    }
    // Exactly the cap at the busiest moment: never more, and reached (400 req/s outruns 3
    // slots of ~28 ms; the first three are sent within 5 ms).
    assert_eq!(most, 3, "requests at once at the server");
    // Waiting for the cap is client queueing, and counts in TTFT (from the scheduled time).
    let queue = f(&p["client_queue_ms"]["max"]);
    assert!(queue >= 9.0 * 28.0 - 75.0, "client queue max {queue}");
    assert!(f(&p["ttft_ms"]["max"]) >= queue);
}
