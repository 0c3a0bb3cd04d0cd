//! `yardstick bench serve` against the real `yardstick sim` on loopback: metrics recovered from
//! the simulator's configured model and its ground-truth log, faults counted by class, a killed
//! server, open-loop arrivals, bad input.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Sim;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
}

fn bench(url: &str, args: &[&str]) -> Output {
    bin()
        .args(["--json", "bench", "serve", "--url", url, "--model", "sim"])
        .args(args)
        .output()
        .unwrap()
}

fn json_of(o: &Output) -> Value {
    crate::common::serve_doc(o)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The sim's log, once it holds `n` lines (its writer runs on its own thread).
fn sim_log(path: &Path, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let l = lines(path);
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
fn recovers_the_simulated_model_and_agrees_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let out = dir.path().join("out");
    let sim = Sim::start(&[
        "--ttft-ms",
        "40",
        "--itl-ms",
        "8",
        "--log",
        log.to_str().unwrap(),
    ]);
    let o = bench(
        &sim.url,
        &[
            "--scenario",
            "D(20,10)",
            "--concurrency",
            "4",
            "--max-requests",
            "40",
            "--warmup-requests",
            "4",
            "--slo-ttft-ms",
            "1000",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["scenario"], "D(20,10)");
    assert_eq!(p["load"]["mode"], "concurrency");
    assert_eq!(f(&p["load"]["value"]), 4.0);
    assert_eq!(
        (
            p["requests"]["completed"].as_u64(),
            p["requests"]["failed"].as_u64()
        ),
        (Some(40), Some(0))
    );
    for k in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "client_queue_ms"] {
        for q in ["mean", "p50", "p90", "p95", "p99"] {
            assert!(p[k][q].is_number(), "{k}.{q} missing");
        }
    }
    // The configured model: TTFT 40 ms, then 9 gaps of 8 ms. The sim's timer is never early
    // and at most a tick late; the rest is a busy machine (the upper bounds leave room for a
    // CI runner at load 8; the exact comparison is against the sim's log below).
    let ttft = f(&p["ttft_ms"]["mean"]);
    assert!((40.0..80.0).contains(&ttft), "ttft {ttft}");
    let tpot = f(&p["tpot_ms"]["mean"]);
    assert!((7.0..16.0).contains(&tpot), "tpot {tpot}");
    let itl = f(&p["itl_ms"]["mean"]);
    assert!((7.0..16.0).contains(&itl), "itl {itl}");
    let e2e = f(&p["e2e_ms"]["mean"]);
    assert!((112.0..220.0).contains(&e2e), "e2e {e2e}");
    assert!((f(&p["duration_s"]) * f(&p["request_throughput"]) - 40.0).abs() < 1e-6);
    assert!((f(&p["output_token_throughput"]) / f(&p["request_throughput"]) - 10.0).abs() < 1e-6);
    assert!((f(&p["goodput"]) - f(&p["request_throughput"])).abs() < 1e-9);
    assert_eq!(p["output_tokens_source"]["server_usage"], 40);

    // Per request, against the server's own clock: the client adds only loopback + parsing.
    let server: HashMap<String, Value> = sim_log(&log, 44)
        .into_iter()
        .map(|l| (l["request_id"].as_str().unwrap().to_string(), l))
        .collect();
    let recs = lines(&out.join("requests.jsonl"));
    assert_eq!(recs.len(), 44);
    assert_eq!(recs.iter().filter(|r| r["warmup"] == true).count(), 4);
    // The Parquet records are the same requests: one row each, gaps as a list column.
    let rows =
        yardstick_store::samples::read_rows(std::fs::read(out.join("requests.parquet")).unwrap())
            .unwrap();
    assert_eq!(rows.len(), 44);
    for (row, rec) in rows.iter().zip(&recs) {
        assert_eq!(row["request_id"], rec["request_id"]);
        assert_eq!(row["warmup"], rec["warmup"]);
        if rec["warmup"] == false {
            assert_eq!(row["itl_ms"].as_array().unwrap().len(), 9);
            assert!((f(&row["ttft_ms"]) - f(&rec["ttft_ms"])).abs() < 1e-6);
        }
    }
    let mut errs = Vec::new();
    let mut lags = Vec::new();
    for r in recs.iter().filter(|r| r["warmup"] == false) {
        let s = &server[r["request_id"].as_str().unwrap()];
        errs.push(f(&r["ttft_ms"]) - f(&s["ttft_ms"]));
        assert_eq!(r["itl_ms"].as_array().unwrap().len(), 9);
        assert_eq!(r["output_tokens"], s["output_tokens"]);
        assert_eq!(
            r["prompt_tokens"], 20,
            "the synthetic prompt is exactly 20 sim tokens"
        );
        // Arrival after writing, on the same clock: never before (exact), and a stall of the
        // client's thread on a loaded runner is bounded.
        let lag = (f(&r["first_content_ns"]) - f(&s["first_token_ns"])) / 1e6;
        assert!((0.0..200.0).contains(&lag), "delivery lag {lag} ms");
        lags.push(lag);
    }
    lags.sort_by(f64::total_cmp);
    let p90 = lags[lags.len() * 9 / 10];
    assert!(p90 < 25.0, "delivery lag p90 {p90} ms: {lags:?}");
    let mean_err = errs.iter().sum::<f64>() / errs.len() as f64;
    assert!(
        (0.0..10.0).contains(&mean_err),
        "client TTFT exceeds the server's by {mean_err} ms"
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary, doc);
}

#[test]
fn injected_faults_are_counted_by_class_and_match_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "2",
        "--error-rate",
        "0.2",
        "--timeout-rate",
        "0.1",
        "--hang-ms",
        "20000",
        "--disconnect-rate",
        "0.2",
        "--seed",
        "7",
        "--log",
        log.to_str().unwrap(),
    ]);
    let o = bench(
        &sim.url,
        &[
            "--scenario",
            "D(10,10)",
            "--concurrency",
            "8",
            "--max-requests",
            "80",
            "--request-timeout",
            "700ms",
        ],
    );
    let doc = json_of(&o);
    let p = &doc["points"][0];
    let e = &p["requests"]["errors"];
    let completed = p["requests"]["completed"].as_u64().unwrap();
    let failed = p["requests"]["failed"].as_u64().unwrap();
    assert_eq!(completed + failed, 80);
    let mut by_outcome: HashMap<String, u64> = HashMap::new();
    for l in sim_log(&log, 80) {
        *by_outcome
            .entry(l["outcome"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert!(by_outcome["error"] > 0 && by_outcome["timeout"] > 0 && by_outcome["disconnect"] > 0);
    assert_eq!(e["http_5xx"].as_u64(), Some(by_outcome["error"]));
    assert_eq!(e["timeout"].as_u64(), Some(by_outcome["timeout"]));
    assert_eq!(e["stream_cut"].as_u64(), Some(by_outcome["disconnect"]));
    assert_eq!(completed, by_outcome["ok"]);
    assert!(p["first_error"].is_string());
}

#[test]
fn a_server_killed_mid_run_ends_the_run_with_the_records_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let mut sim = Sim::start(&[
        "--ttft-ms",
        "20",
        "--itl-ms",
        "5",
        "--log",
        log.to_str().unwrap(),
    ]);
    let started = Instant::now();
    let child = bin()
        .args([
            "--json",
            "bench",
            "serve",
            "--url",
            &sim.url,
            "--model",
            "sim",
            "--scenario",
            "D(10,20)",
        ])
        .args(["--concurrency", "8", "--max-duration", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once it has answered some requests (polled: a slow start on a loaded runner must
    // not leave the client with none).
    sim_log(&log, 3);
    sim.kill();
    let o = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "the run did not notice"
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("server stopped answering"));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &doc["points"][0];
    assert!(p["requests"]["completed"].as_u64().unwrap() > 0);
    assert!(
        p["stop_reason"]
            .as_str()
            .unwrap()
            .starts_with("target_unreachable")
    );
    assert!(p["requests"]["errors"]["connect"].as_u64().unwrap() >= 8);
    assert!(p["ttft_ms"]["mean"].is_number());
}

#[test]
fn open_loop_arrivals_keep_their_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let o = bench(
        &sim.url,
        &[
            "--scenario",
            "D(5,2)",
            "--rate",
            "1000",
            "--arrival",
            "constant",
            "--max-requests",
            "1500",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["load"]["mode"], "rate");
    assert_eq!(p["load"]["arrival"], "constant");
    assert_eq!(p["requests"]["failed"], 0);
    let recs = lines(&out.join("requests.jsonl"));
    let sched: Vec<f64> = recs.iter().map(|r| f(&r["scheduled_ns"])).collect();
    // Scheduled exactly 1 ms apart (absolute deadlines: no drift).
    let span_ms = (sched[sched.len() - 1] - sched[0]) / 1e6;
    assert!((span_ms - 1499.0).abs() < 0.01, "span {span_ms}");
    // And actually sent at that rate, within 1 %: the least-squares slope of send time over
    // plan index, so one late wake-up at either end cannot dominate.
    let pts: Vec<(f64, f64)> = recs
        .iter()
        .map(|r| (f(&r["index"]), f(&r["sent_ns"]) / 1e9))
        .collect();
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let rate = sxx / sxy;
    assert!((rate - 1000.0).abs() < 10.0, "sent at {rate} req/s");

    // Seeded arrivals at 500 req/s (mean gap 2 ms): Poisson gaps have CV 1; gamma of shape
    // 0.25 keeps the mean rate and is burstier, CV 1/sqrt(0.25) = 2.
    for (arrival, label, cv_want, tol) in [
        (&[][..], "poisson", 1.0, (0.2, 0.15)),
        (
            &["--arrival", "gamma", "--burstiness", "0.25"][..],
            "gamma(0.25)",
            2.0,
            (0.4, 0.4),
        ),
    ] {
        let mut args = vec![
            "--scenario",
            "D(5,2)",
            "--rate",
            "500",
            "--max-requests",
            "1000",
        ];
        args.extend_from_slice(arrival);
        args.extend_from_slice(&["--output", out.to_str().unwrap()]);
        let doc = json_of(&bench(&sim.url, &args));
        assert_eq!(doc["points"][0]["load"]["arrival"], label);
        assert_eq!(doc["points"][0]["requests"]["completed"], 1000);
        let (mean_gap, cv) = gap_stats(&lines(&out.join("requests.jsonl")));
        assert!(
            (mean_gap - 2.0).abs() < tol.0,
            "{label}: mean gap {mean_gap} ms"
        );
        assert!(
            (cv - cv_want).abs() < tol.1,
            "{label}: gap CV {cv}, want {cv_want}"
        );
    }
}

/// Mean (ms) and coefficient of variation of the gaps between scheduled sends.
fn gap_stats(recs: &[Value]) -> (f64, f64) {
    let mut s: Vec<f64> = recs.iter().map(|r| f(&r["scheduled_ns"]) / 1e6).collect();
    s.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = s.windows(2).map(|w| w[1] - w[0]).collect();
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt() / mean)
}

#[test]
fn max_duration_stops_scheduling_and_drains_requests_in_flight() {
    // Requests take ~300 ms; the point stops scheduling at 1 s and waits for the ones in flight,
    // so nothing is cut and the server's log holds exactly the requests the client reports.
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = (dir.path().join("out"), dir.path().join("sim.jsonl"));
    let sim = Sim::start(&[
        "--ttft-ms",
        "100",
        "--itl-ms",
        "50",
        "--log",
        log.to_str().unwrap(),
    ]);
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--scenario",
            "D(5,5)",
            "--concurrency",
            "4",
            "--max-duration",
            "1s",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    let p = &doc["points"][0];
    assert_eq!(p["stop_reason"], "max_duration");
    assert_eq!(p["requests"]["failed"], 0, "{p}");
    let completed = p["requests"]["completed"].as_u64().unwrap();
    assert!(completed >= 4, "{p}");
    let recs = lines(&out.join("requests.jsonl"));
    assert_eq!(recs.len() as u64, completed);
    assert!(
        recs.iter()
            .all(|r| r["error"].is_null() && r["output_tokens"] == 5)
    );
    // Every request the server received finished on both sides: none was abandoned.
    assert_eq!(sim_log(&log, recs.len()).len(), recs.len());
}

#[test]
fn other_apis_and_non_streaming() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--api",
            "embeddings",
            "--scenario",
            "E(16)",
            "--concurrency",
            "2",
            "--max-requests",
            "6",
            "--output",
            dir.path().to_str().unwrap(),
        ],
    ));
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["completed"], 6);
    assert!(p["ttft_ms"].is_null() && f(&p["e2e_ms"]["mean"]) >= 5.0);
    // The raw records carry the E2E the summary averaged (no content events: the response's
    // completion ends it).
    let rows = yardstick_store::samples::read_rows(
        std::fs::read(dir.path().join("requests.parquet")).unwrap(),
    )
    .unwrap();
    let e2e: Vec<f64> = rows.iter().map(|r| f(&r["e2e_ms"])).collect();
    assert_eq!(e2e.len(), 6);
    let mean = e2e.iter().sum::<f64>() / 6.0;
    assert!(
        (mean - f(&p["e2e_ms"]["mean"])).abs() < 1e-6,
        "{mean} vs {p}"
    );
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--api",
            "completions",
            "--no-stream",
            "--scenario",
            "D(3,4)",
            "--max-requests",
            "3",
        ],
    ));
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["completed"], 3);
    assert!(p["ttft_ms"].is_null());
    assert!(f(&p["e2e_ms"]["mean"]) >= 5.0 + 3.0);
    assert_eq!(
        f(&p["output_token_throughput"]) / f(&p["request_throughput"]),
        4.0
    );
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--scenario",
            "U(5,10)/(2,6)",
            "--scenario",
            "N(20,5)/(4,1)",
            "--scenario",
            "U(3,9)",
            "--concurrency",
            "1,3",
            "--max-requests",
            "6",
        ],
    ));
    assert_eq!(doc["points"].as_array().unwrap().len(), 6);
    assert_eq!(doc["points"][3]["scenario"], "N(20,5)/(4,1)");
    assert_eq!(doc["points"][3]["load"]["value"], 3);
    // One group: uniform prompt lengths, the output left to the server.
    assert_eq!(doc["points"][5]["scenario"], "U(3,9)");
    assert_eq!(doc["points"][5]["requests"]["completed"], 6);
}

#[test]
fn bad_input_exits_2_and_shows_the_accepted_forms() {
    // An unreadable CA file is refused before any request is made.
    let o = bench(
        "https://127.0.0.1:9",
        &["--ca-cert", "/nonexistent/ca.pem", "--max-requests", "1"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CA certificate file /nonexistent/ca.pem"),
        "{err}"
    );
    for bad in ["D(100)", "N(1,2)/(3)", "D(-1,5)", "X(1,2)"] {
        let o = bench(
            "http://127.0.0.1:9",
            &["--scenario", bad, "--max-requests", "1"],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(bad), "{err}");
        assert!(
            err.contains("D(in,out)") && err.contains("E(tokens)"),
            "{err}"
        );
    }
    let o = bench("http://127.0.0.1:9", &["--scenario", "E(5)"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--api embeddings"));
    for args in [
        &["--url-less"][..],
        &["--rate", "0"],
        &["--arrival", "weibull", "--rate", "1"],
        &["--shard", "3/2"],
        &["--max-duration", "soon"],
        &["--bearer-env", "YARDSTICK_SURELY_UNSET_VAR"],
        &["--tokenizer", "/nonexistent/tokenizer.json"],
    ] {
        let o = bench("http://127.0.0.1:9", args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = bench("ftp://127.0.0.1:9", &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn shards_partition_the_seeded_plan_and_time_warmup_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let plan_of = |shard: Option<&str>| -> Vec<(u64, u64)> {
        let out = dir.path().join(shard.unwrap_or("all").replace('/', "of"));
        let mut args = vec![
            "--scenario",
            "N(8,3)/(3,1)",
            "--concurrency",
            "2",
            "--max-requests",
            "10",
            "--seed",
            "5",
            "--output",
            out.to_str().unwrap(),
        ];
        if let Some(s) = shard {
            args.extend(["--shard", s]);
        }
        json_of(&bench(&sim.url, &args));
        lines(&out.join("requests.jsonl"))
            .iter()
            .map(|r| {
                (
                    r["index"].as_u64().unwrap(),
                    r["planned_input_tokens"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let all = plan_of(None);
    let mut merged = plan_of(Some("0/2"));
    let odd = plan_of(Some("1/2"));
    assert!(merged.iter().all(|(i, _)| i % 2 == 0) && odd.iter().all(|(i, _)| i % 2 == 1));
    merged.extend(odd);
    merged.sort();
    assert_eq!(merged, all);
    assert_eq!(
        all.iter().map(|p| p.0).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(
        all.iter().any(|p| p.1 != all[0].1),
        "lengths are drawn, not constant"
    );

    let out = dir.path().join("warm");
    let sim = Sim::start(&["--ttft-ms", "20", "--itl-ms", "5"]);
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--scenario",
            "D(5,4)",
            "--concurrency",
            "2",
            "--max-requests",
            "12",
            "--warmup-duration",
            "300ms",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["completed"], 12);
    let recs = lines(&out.join("requests.jsonl"));
    // Warm-up time counts from the run's start (its schedule origin), not from whichever
    // request a worker scheduled first.
    let t0 = f(&p["schedule_origin_ns"]);
    let warm: Vec<&Value> = recs.iter().filter(|r| r["warmup"] == true).collect();
    assert!(!warm.is_empty());
    assert_eq!(p["requests"]["warmup"].as_u64(), Some(warm.len() as u64));
    for r in &recs {
        let since = (f(&r["scheduled_ns"]) - t0) / 1e6;
        if (since - 300.0).abs() > 2.0 {
            assert_eq!(r["warmup"] == true, since < 300.0, "{r}");
        }
    }
}

#[test]
fn prompts_from_a_sharegpt_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("sg.json");
    std::fs::write(
        &data,
        r#"[{"conversations":[{"from":"human","value":"what is the capital of France"},{"from":"gpt","value":"Paris it is"}]},
           {"conversations":[{"from":"human","value":"count to two"},{"from":"gpt","value":"one two"}]}]"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let sim = Sim::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--dataset",
            data.to_str().unwrap(),
            "--max-requests",
            "8",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    let p = &doc["points"][0];
    assert_eq!(p["scenario"], "dataset:sg.json");
    assert_eq!(p["requests"]["completed"], 8);
    let recs = lines(&out.join("requests.jsonl"));
    assert_eq!(recs.len(), 8);
    for r in recs {
        let planned = (
            r["planned_input_tokens"].as_u64(),
            r["planned_output_tokens"].as_u64(),
        );
        assert!(
            planned == (Some(6), Some(3)) || planned == (Some(3), Some(2)),
            "{planned:?}"
        );
        assert_eq!(r["prompt_tokens"].as_u64(), planned.0);
        assert_eq!(r["output_tokens"].as_u64(), planned.1);
    }
    // JSON lines: a prompt with its output length, and chat messages (contents joined).
    let jl = dir.path().join("prompts.jsonl");
    std::fs::write(
        &jl,
        "{\"prompt\":\"one two three four\",\"output_tokens\":5}\n{\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],\"max_tokens\":2}\n",
    )
    .unwrap();
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--dataset",
            jl.to_str().unwrap(),
            "--max-requests",
            "8",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    assert_eq!(doc["points"][0]["scenario"], "dataset:prompts.jsonl");
    assert_eq!(doc["points"][0]["requests"]["completed"], 8);
    let mut seen = std::collections::BTreeSet::new();
    for r in lines(&out.join("requests.jsonl")) {
        let got = (r["prompt_tokens"].as_u64(), r["output_tokens"].as_u64());
        assert!(
            got == (Some(4), Some(5)) || got == (Some(2), Some(2)),
            "{got:?}"
        );
        seen.insert(got);
    }
    assert_eq!(seen.len(), 2, "both dataset lines were sent");
    let o = bench(
        &sim.url,
        &[
            "--dataset",
            "/nonexistent/data.jsonl",
            "--max-requests",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn tokenizer_json_sets_prompt_lengths_and_counts_output_locally() {
    // A byte-level BPE tokenizer.json (trained on the bundled corpus): the plan asks for
    // exact counts of its tokens; the sim counts words, so its usage differs and the local
    // count of the output is recorded beside the server's.
    let tok = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../yardstick-load/corpus/bpe-tokenizer.json"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--scenario",
            "D(37,4)",
            "--concurrency",
            "2",
            "--max-requests",
            "6",
            "--tokenizer",
            tok,
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    assert_eq!(doc["points"][0]["requests"]["completed"], 6);
    let mut disagree = 0;
    let recs = lines(&out.join("requests.jsonl"));
    assert_eq!(recs.len(), 6);
    for r in recs {
        assert_eq!(r["planned_input_tokens"], 37);
        // BPE tokens of corpus text outnumber its words (and a prompt was sent).
        assert!(
            (5..37).contains(&r["prompt_tokens"].as_u64().unwrap()),
            "{r}"
        );
        assert_eq!(r["prompt_tokens_source"], "server_usage");
        let local = r["local_output_tokens"].as_u64().unwrap();
        assert!(local >= 1, "{r}");
        let server = r["output_tokens"].as_u64().unwrap() as f64;
        if (server - local as f64).abs() > 0.1 * server {
            disagree += 1;
        }
    }
    // The sim counts words and the BPE splits them: the counts disagree, and the summary says
    // so for exactly the requests where they do.
    assert!(disagree > 0);
    assert_eq!(doc["points"][0]["token_count_disagreements"], disagree);
    let human = bin()
        .args(["bench", "serve", "--url", &sim.url, "--model", "sim"])
        .args([
            "--scenario",
            "D(37,4)",
            "--concurrency",
            "2",
            "--max-requests",
            "6",
        ])
        .args(["--tokenizer", tok, "--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(human.status.success(), "{text}");
    assert!(
        text.contains("warning: ")
            && text.contains("completed request(s) report output tokens (server usage) more than 10 % away from the local tokenizer"),
        "{text}"
    );
    let o = bench(&sim.url, &["--tokenizer", "/nonexistent/tokenizer.json"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Issue 33: a Mooncake trace replayed against the simulator on the trace's own clock. Every
/// request is sent with its trace lengths (the simulator's log has the prompt and output token
/// counts); the point ends with the trace (`trace_end`) and takes at least the trace's span;
/// prompts built from the hash ids share prefixes as the trace's requests did, so the
/// simulator's prefix cache (vLLM's scheme, 16-token blocks, large enough to keep everything)
/// serves exactly the share of prompt tokens the trace's theoretical hit rate says, and the
/// client reports the same rate from the responses' usage.
#[test]
fn a_mooncake_trace_replays_on_its_clock_with_its_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let trace = dir.path().join("mooncake.jsonl");
    // (ms, input, output, hash ids): requests 2 and 4 share request 1's blocks, request 3
    // shares its first block and ends in a partial block of its own; request 5 is new.
    let rows: [(u64, u64, u64, &[u64]); 5] = [
        (1000, 1024, 4, &[1, 2]),
        (1150, 1024, 3, &[1, 2]),
        (1300, 700, 5, &[1, 3]),
        (1450, 1536, 2, &[1, 2, 4]),
        (1600, 512, 6, &[9]),
    ];
    let text: String = rows
        .iter()
        .map(|(t, i, o, h)| {
            format!(
                "{{\"timestamp\": {t}, \"input_length\": {i}, \"output_length\": {o}, \"hash_ids\": {h:?}}}\n"
            )
        })
        .collect();
    std::fs::write(&trace, text).unwrap();
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--prefix-cache-tokens",
        "1000000",
        "--log",
        log.to_str().unwrap(),
    ]);
    let started = Instant::now();
    let o = bench(
        &sim.url,
        &[
            "--trace",
            trace.to_str().unwrap(),
            "--trace-format",
            "mooncake",
        ],
    );
    let took = started.elapsed();
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["scenario"], "trace:mooncake.jsonl", "{p}");
    assert_eq!(p["load"]["mode"], "trace");
    assert_eq!(p["stop_reason"], "trace_end");
    assert_eq!(p["requests"]["completed"].as_u64(), Some(5), "{p}");
    // The schedule spans 600 ms: no replay of it can take less.
    assert!(took >= Duration::from_millis(600), "{took:?}");
    // Each request's lengths, as the simulator counted them (log order is completion order).
    let mut got: Vec<(u64, u64)> = sim_log(&log, 5)
        .iter()
        .map(|r| {
            (
                r["prompt_tokens"].as_u64().unwrap(),
                r["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(u64, u64)> = rows.iter().map(|(_, i, o, _)| (*i, *o)).collect();
    want.sort();
    assert_eq!(got, want);
    // Theoretical: request 2 hits 1024, request 3 its first block (512), request 4 its first
    // two (1024): 2560 of 4796 prompt tokens.
    let theoretical = 2560.0 / 4796.0;
    let log = sim_log(&log, 5);
    let cached: u64 = log
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .sum();
    let prompt: u64 = log
        .iter()
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!((cached, prompt), (2560, 4796), "{log:?}");
    let measured = f(&p["prompt_cache_hit_rate"]);
    assert!(
        (measured - theoretical).abs() < 1e-9,
        "{measured} vs {theoretical}"
    );
    // Schedule fidelity: every request's send − due time, sane and ordered; the trace block.
    let l = &p["schedule_lateness_ms"];
    assert_eq!(l["count"].as_u64(), Some(5), "{p}");
    let (p50, p99, max) = (f(&l["p50"]), f(&l["p99"]), f(&l["max"]));
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{l}");
    assert!(max < 5_000.0, "{l}");
    assert!(
        l["late"].as_u64().is_some() && f(&l["threshold_ms"]) > 0.0,
        "{l}"
    );
    assert_eq!(p["trace"]["requests"].as_u64(), Some(5), "{p}");
    assert!((f(&p["trace"]["theoretical_prefix_hit_rate"]) - theoretical).abs() < 1e-9);
    // What the client said before sending anything.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("5 requests over") && err.contains("prefix-cache hit rate at most 53.4 %"),
        "{err}"
    );
}

/// A trace that is out of order is refused before any request is sent (exit 2), naming the
/// file, line and column.
#[test]
fn a_bad_trace_is_refused_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"at_ms\": 10, \"input_tokens\": 4, \"output_tokens\": 2}\n{\"at_ms\": 5, \"input_tokens\": 4, \"output_tokens\": 2}\n",
    )
    .unwrap();
    let o = bench("http://127.0.0.1:9", &["--trace", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("t.jsonl:2:2: the time goes back (5 after 10)") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn the_server_counts_the_prompts_and_a_gap_is_a_warning() {
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let args = ["--scenario", "D(37,4)", "--max-requests", "6"];
    // The plan counts words and so does the sim: no gap.
    let doc = json_of(&bench(&sim.url, &args));
    let c = &doc["points"][0]["prompt_token_check"];
    assert_eq!(c["endpoint"], format!("{}/tokenize", sim.url), "{c}");
    assert_eq!(c["prompts"], 32, "{c}");
    assert_eq!(c["planned_tokens"], 32 * 37, "{c}");
    assert_eq!(c["server_tokens"], 32 * 37, "{c}");
    assert_eq!(c["gap_pct"], 0.0, "{c}");
    assert!(c.get("warning").is_none(), "{c}");
    // Planned in BPE tokens, counted in words by the server: the gap is measured and warned of.
    let tok = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../yardstick-load/corpus/bpe-tokenizer.json"
    );
    let mut a = args.to_vec();
    a.extend(["--tokenizer", tok]);
    let doc = json_of(&bench(&sim.url, &a));
    let c = &doc["points"][0]["prompt_token_check"];
    let gap = c["gap_pct"].as_f64().unwrap();
    assert!(gap < -5.0, "{c}");
    let expect = (c["server_tokens"].as_f64().unwrap() - c["planned_tokens"].as_f64().unwrap())
        / c["planned_tokens"].as_f64().unwrap()
        * 100.0;
    assert!((gap - expect).abs() < 1e-9, "{c}");
    assert!(
        c["warning"].as_str().unwrap().contains("--tokenizer"),
        "{c}"
    );
    let human = bin()
        .args(["bench", "serve", "--url", &sim.url, "--model", "sim"])
        .args(&a)
        .args(["--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("warning: the server counts"), "{text}");
    // Off when asked.
    a.push("--no-token-check");
    let doc = json_of(&bench(&sim.url, &a));
    assert!(doc["points"][0].get("prompt_token_check").is_none());
}

/// Every request carries a W3C `traceparent` whose trace id is the record's `trace_id` (the
/// request id's hex digits), and the record keeps the server's own response id — what the
/// simulator's log says it received and answered, request by request; `--no-trace-context`
/// sends none.
#[test]
fn requests_carry_a_traceparent_and_records_keep_the_servers_response_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "1",
        "--itl-ms",
        "1",
        "--log",
        log.to_str().unwrap(),
    ]);
    for (name, extra) in [("stream", &[][..]), ("whole", &["--no-stream"][..])] {
        let out = dir.path().join(name);
        let mut args = vec![
            "--scenario",
            "D(8,4)",
            "--concurrency",
            "2",
            "--max-requests",
            "20",
            "--output",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        json_of(&bench(&sim.url, &args));
        let truth = crate::common::sim_log_by_id(&log);
        let lines = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
        let mut n = 0;
        for l in lines.lines() {
            let r: Value = serde_json::from_str(l).unwrap();
            let id = r["request_id"].as_str().unwrap();
            let trace = r["trace_id"].as_str().unwrap();
            assert_eq!(trace, id.replace('-', ""), "{r}");
            assert_eq!(trace.len(), 32);
            let seen = &truth[id];
            let tp = seen["traceparent"].as_str().unwrap();
            let parts: Vec<&str> = tp.split('-').collect();
            assert_eq!(parts.len(), 4, "{tp}");
            assert_eq!((parts[0], parts[1], parts[3]), ("00", trace, "01"), "{tp}");
            assert!(
                parts[2].len() == 16 && parts[2] != "0000000000000000",
                "{tp}"
            );
            assert_eq!(
                r["response_id"].as_str(),
                Some(format!("chatcmpl-{}", seen["seq"]).as_str()),
                "{name}: {r}"
            );
            n += 1;
        }
        assert_eq!(n, 20, "{name}");
    }
    // Off: no header reaches the server and records have no trace id.
    let out = dir.path().join("off");
    json_of(&bench(
        &sim.url,
        &[
            "--no-trace-context",
            "--max-requests",
            "5",
            "--output",
            out.to_str().unwrap(),
        ],
    ));
    let truth = crate::common::sim_log_by_id(&log);
    for l in std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
    {
        let r: Value = serde_json::from_str(l).unwrap();
        assert!(r.get("trace_id").is_none(), "{r}");
        assert!(
            truth[r["request_id"].as_str().unwrap()]
                .get("traceparent")
                .is_none()
        );
        assert!(r["response_id"].is_string(), "{r}");
    }
}
