//! `yardstick bench serve --mlperf …` against the real `yardstick sim` on loopback: the four
//! MLPerf LoadGen scenarios, the Server verdicts and early-stopping validity, bad flags.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::Sim;

/// The simulator these tests use: TTFT 20 ms, then a token every 2 ms.
fn sim() -> Sim {
    Sim::start(&["--ttft-ms", "20", "--itl-ms", "2"])
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
}

fn bench(url: &str, args: &[&str]) -> Output {
    bin()
        .args(["--json", "bench", "serve", "--url", url, "--model", "sim"])
        .args(["--scenario", "D(10,5)"])
        .args(args)
        .output()
        .unwrap()
}

/// The first MLPerf result of a successful run.
fn mlperf(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    crate::schema_cli::assert_conforms("bench-serve", &doc);
    assert_eq!(doc["points"].as_array().unwrap().len(), 1);
    doc["mlperf"][0].clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn single_stream_p90_is_the_simulated_ttft_with_ci_and_early_stopping() {
    let sim = sim();
    let m = mlperf(&bench(
        &sim.url,
        &["--mlperf", "single-stream", "--max-requests", "70"],
    ));
    assert_eq!(m["scenario"], "single-stream");
    assert_eq!(m["validity"], "VALID", "{m}");
    assert_eq!(
        (m["queries"].as_u64(), m["samples_failed"].as_u64()),
        (Some(70), Some(0))
    );
    let l = &m["latency"];
    assert_eq!(l["metric"], "ttft");
    assert_eq!(f(&l["percentile"]), 0.9);
    let p90 = f(&l["value_ms"]);
    // The sim's timer is never early, so 20 ms is exact. Above it, loopback and a debug build
    // add a few ms, and a loaded 2-core CI machine (load average up to ~8) can add tens of ms
    // of scheduling delay: the upper bound only catches gross errors (a TTFT counted from the
    // wrong instant, or in the wrong unit).
    assert!((20.0..120.0).contains(&p90), "p90 TTFT {p90}");
    let (lo, hi) = (f(&l["ci"]["lower"]), f(&l["ci"]["upper"]));
    assert!(lo <= p90 && p90 <= hi, "CI [{lo}, {hi}] around {p90}");
    assert_eq!(f(&l["ci_level"]), 0.95);
    let est = f(&l["early_stopping"]["estimate"]);
    assert!(est >= lo && est < 150.0, "early-stopping estimate {est}");
    assert!(l["early_stopping"]["t"].as_u64().unwrap() >= 1);
    assert!(m["result"].is_null() && m["server"].is_null());
}

#[test]
fn single_stream_without_streaming_reports_e2e_and_too_few_queries_are_invalid() {
    let sim = sim();
    let m = mlperf(&bench(
        &sim.url,
        &[
            "--mlperf",
            "single-stream",
            "--max-requests",
            "20",
            "--no-stream",
        ],
    ));
    let l = &m["latency"];
    assert_eq!(l["metric"], "e2e");
    // 20 ms to the first token, then 4 gaps of 2 ms: never less than 28 ms; the upper bound
    // leaves room for scheduling delay on a loaded machine (see above).
    let p90 = f(&l["value_ms"]);
    assert!((28.0..150.0).contains(&p90), "p90 E2E {p90}");
    // 20 queries are too few for LoadGen's p90 early-stopping estimate (64 needed).
    assert!(l["early_stopping"].is_null());
    assert_eq!(m["validity"], "INVALID");
    let why = m["reasons"][0].as_str().unwrap();
    assert!(
        why.contains("too few queries") && why.contains("64"),
        "{why}"
    );
}

#[test]
fn multi_stream_issues_whole_batches_and_reports_batch_latency() {
    let sim = sim();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let m = mlperf(&bench(
        &sim.url,
        &[
            "--mlperf",
            "multi-stream",
            "--samples-per-query",
            "4",
            "--max-requests",
            "40",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    assert_eq!(m["scenario"], "multi-stream");
    assert_eq!(
        (
            m["queries"].as_u64(),
            m["queries_completed"].as_u64(),
            m["samples_per_query"].as_u64(),
            m["samples_completed"].as_u64()
        ),
        (Some(10), Some(10), Some(4), Some(40))
    );
    let l = &m["latency"];
    assert_eq!(
        (l["metric"].as_str(), f(&l["percentile"])),
        (Some("batch_e2e"), 0.99)
    );
    // Last sample of a batch: 20 ms + 4 × 2 ms after the batch was issued (never less); the
    // p99 of 10 batches is their maximum, so the upper bound leaves room for one batch hit by
    // scheduling delay on a loaded machine.
    let p99 = f(&l["value_ms"]);
    assert!((28.0..150.0).contains(&p99), "p99 batch latency {p99}");
    // 10 queries cannot support a p99 claim.
    assert_eq!(m["validity"], "INVALID");
    assert!(l["early_stopping"].is_null() && l["ci"].is_null());
    // Every sample of a batch was scheduled together; the next batch after the last one ended.
    let recs: Vec<Value> = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 40);
    for (b, batch) in recs.chunks(4).enumerate() {
        let s0 = batch[0]["scheduled_ns"].as_u64().unwrap();
        assert!(batch.iter().all(|r| r["scheduled_ns"].as_u64() == Some(s0)));
        if let Some(next) = recs.get((b + 1) * 4) {
            let done = batch
                .iter()
                .map(|r| r["done_ns"].as_u64().unwrap())
                .max()
                .unwrap();
            assert!(next["scheduled_ns"].as_u64().unwrap() >= done);
        }
    }
}

#[test]
fn server_passes_generous_bounds_validly() {
    let sim = sim();
    // Bounds 100× the simulated TTFT and 250× its TPOT. Latency is counted from the scheduled
    // instant, so a stall of the loaded machine delays every query in flight at once: tolerating
    // one or two queries over the bound would not help, and one over the bound already needs
    // 662 queries for early stopping (LoadGen) — so the bounds are generous enough that no
    // query crosses them, and `over_bound == 0` with 459 queries required stays exact.
    let m = mlperf(&bench(
        &sim.url,
        &[
            "--mlperf",
            "server",
            "--rate",
            "250",
            "--max-requests",
            "480",
            "--ttft-bound-ms",
            "2000",
            "--tpot-bound-ms",
            "500",
        ],
    ));
    assert_eq!(m["scenario"], "server");
    assert_eq!(m["result"], "PASS", "{m}");
    assert_eq!(m["validity"], "VALID", "{m}");
    let s = &m["server"];
    assert_eq!(f(&s["target_qps"]), 250.0);
    let achieved = f(&s["achieved_qps"]);
    assert!(
        achieved > 150.0 && achieved < 350.0,
        "achieved {achieved} QPS"
    );
    let b = s["bounds"].as_array().unwrap();
    assert_eq!(
        (b[0]["metric"].as_str(), b[1]["metric"].as_str()),
        (Some("ttft"), Some("tpot"))
    );
    for b in b {
        assert_eq!(b["within"], true);
        assert_eq!(b["over_bound"], 0);
        assert_eq!(b["early_stopping"]["passed"], true);
        assert_eq!(b["early_stopping"]["required"], 459);
    }
    assert!(f(&b[0]["p99_ms"]) >= 20.0 && f(&b[1]["p99_ms"]) >= 2.0);
}

#[test]
fn server_fails_a_ttft_bound_below_the_simulated_ttft() {
    let sim = sim();
    let m = mlperf(&bench(
        &sim.url,
        &[
            "--mlperf",
            "server",
            "--rate",
            "100",
            "--max-requests",
            "60",
            "--ttft-bound-ms",
            "5",
        ],
    ));
    assert_eq!(m["result"], "FAIL");
    assert_eq!(m["validity"], "INVALID");
    let ttft = &m["server"]["bounds"][0];
    assert_eq!(
        (ttft["within"].as_bool(), ttft["over_bound"].as_u64()),
        (Some(false), Some(60))
    );
    assert_eq!(ttft["early_stopping"]["passed"], false);
    // The default TPOT bound (200 ms) is met.
    let tpot = &m["server"]["bounds"][1];
    assert_eq!(
        (f(&tpot["bound_ms"]), tpot["within"].as_bool()),
        (200.0, Some(true))
    );
    let why = m["reasons"][0].as_str().unwrap();
    assert!(
        why.contains("TTFT") && why.contains("exceeds the 5 ms bound"),
        "{why}"
    );
}

#[test]
fn server_with_too_few_queries_passes_but_is_invalid() {
    let sim = sim();
    let m = mlperf(&bench(
        &sim.url,
        &[
            "--mlperf",
            "server",
            "--rate",
            "100",
            "--max-requests",
            "40",
        ],
    ));
    assert_eq!(m["result"], "PASS");
    assert_eq!(m["validity"], "INVALID");
    let es = &m["server"]["bounds"][0]["early_stopping"];
    assert_eq!(
        (es["queries"].as_u64(), es["required"].as_u64()),
        (Some(40), Some(459))
    );
    assert_eq!(es["passed"], false);
    let why = m["reasons"][0].as_str().unwrap();
    assert!(
        why.contains("too few queries") && why.contains("459 needed"),
        "{why}"
    );
}

#[test]
fn offline_issues_everything_at_once_and_completes_it() {
    let sim = sim();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = bench(
        &sim.url,
        &[
            "--mlperf",
            "offline",
            "--max-requests",
            "100",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let m = mlperf(&o);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["points"][0]["load"]["value"], 100.0);
    assert_eq!(m["scenario"], "offline");
    assert_eq!(
        (
            m["samples_completed"].as_u64(),
            m["samples_failed"].as_u64()
        ),
        (Some(100), Some(0))
    );
    assert_eq!(m["validity"], "VALID");
    // All at once, from the records: each query takes at least 28 ms at the simulator, and
    // (nearly) all of them were issued before the first one had finished. In sequence that is
    // 1; with a smaller pool it is the pool's width. (Not "every one": on a loaded machine the
    // client may be descheduled between starting its 100 workers.)
    let recs: Vec<Value> = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 100);
    let first_done = recs
        .iter()
        .map(|r| r["done_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    let together = recs
        .iter()
        .filter(|r| r["scheduled_ns"].as_u64().unwrap() < first_done)
        .count();
    assert!(together >= 90, "only {together} of 100 issued together");
    // And the whole run takes about one request's time (30 ms), far less than 100 in sequence
    // (at least 2.8 s); the bound leaves room for a loaded machine.
    let d = f(&m["duration_s"]);
    assert!((0.028..2.5).contains(&d), "offline took {d} s");
    assert!(f(&m["samples_per_s"]) > 40.0);
}

#[test]
fn bad_mlperf_flags_exit_2() {
    let url = "http://127.0.0.1:9";
    for args in [
        &["--mlperf", "server"][..],
        &["--mlperf", "server", "--rate", "1,2"],
        &["--mlperf", "offline"],
        &["--mlperf", "warp-speed"],
        &["--mlperf", "single-stream", "--concurrency", "4"],
        &["--mlperf", "single-stream", "--ttft-bound-ms", "5"],
        &["--mlperf", "multi-stream", "--samples-per-query", "0"],
    ] {
        let o = bench(url, args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
