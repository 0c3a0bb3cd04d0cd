//! Sharded `yardstick bench serve` against the real `yardstick sim`: N shards of one seeded plan
//! merge (`--merge`) into exactly the unsharded plan, with exact percentiles of the union and
//! added HDR histograms; `--concurrency C` over N shards runs C streams in total.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use yardstick_stats::histogram::LatencyHistogram;
use yardstick_stats::percentile::percentile_sorted;

use crate::common::Sim;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env("NO_COLOR", "1");
    c
}

fn serve(url: &str, args: &[&str]) -> Command {
    let mut c = bin();
    c.args(["--json", "bench", "serve", "--url", url, "--model", "sim"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let v = serde_json::from_slice(&o.stdout).unwrap();
    crate::schema_cli::assert_conforms("bench-serve", &v);
    v
}

fn rows(dir: &Path) -> Vec<Value> {
    let bytes = std::fs::read(dir.join("requests.parquet")).unwrap();
    yardstick_store::samples::read_rows(bytes).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_i64().map(|x| x as u64))
        .unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Runs the N shards of one plan at once, starting together.
fn run_shards(url: &str, n: u64, dir: &Path, args: &[&str]) -> Vec<(PathBuf, Value)> {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0;
    let start = format!("{start:.3}");
    let children: Vec<_> = (0..n)
        .map(|i| {
            let out = dir.join(format!("shard{i}"));
            let shard = format!("{i}/{n}");
            let mut a: Vec<&str> = args.to_vec();
            a.extend([
                "--shard",
                &shard,
                "--start-at",
                &start,
                "--output",
                out.to_str().unwrap(),
            ]);
            (out.clone(), serve(url, &a).spawn().unwrap())
        })
        .collect();
    children
        .into_iter()
        .map(|(out, c)| (out, json_of(&c.wait_with_output().unwrap())))
        .collect()
}

fn merge(dirs: &[&Path], out: Option<&Path>) -> Output {
    let mut c = bin();
    c.args(["--json", "bench", "serve", "--merge"]);
    c.args(dirs);
    if let Some(o) = out {
        c.arg("--output").arg(o);
    }
    c.output().unwrap()
}

#[test]
fn rate_shards_merge_into_the_unsharded_plan_with_exact_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(&["--ttft-ms", "3", "--itl-ms", "1"]);
    let args = [
        "--scenario",
        "N(12,4)/(5,2)",
        "--rate",
        "150",
        "--arrival",
        "poisson",
        "--seed",
        "11",
        "--max-requests",
        "60",
        "--warmup-requests",
        "3",
        "--slo-ttft-ms",
        "1000",
    ];
    let all_dir = dir.path().join("all");
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--output", all_dir.to_str().unwrap()]);
    let all = json_of(&serve(&sim.url, &a).output().unwrap());
    let shards = run_shards(&sim.url, 3, dir.path(), &args);
    for (i, (_, doc)) in shards.iter().enumerate() {
        assert_eq!(doc["shard"]["index"], i);
        assert_eq!(doc["points"][0]["shard"]["count"], 3);
    }
    // Shards that started together share the schedule's origin (to the clocks' anchoring).
    let origins: Vec<u64> = shards
        .iter()
        .map(|(_, d)| u(&d["points"][0]["schedule_origin_ns"]))
        .collect();
    let spread = origins.iter().max().unwrap() - origins.iter().min().unwrap();
    assert!(spread < 5_000_000, "origins {origins:?}");

    // The union of the shards is the unsharded plan: same indices, lengths, and schedule
    // (each request's offset from its origin, to the nanosecond).
    let plan = |rows: &[Value], origin: u64| -> Vec<(u64, u64, Value, u64, bool)> {
        rows.iter()
            .map(|r| {
                (
                    u(&r["index"]),
                    u(&r["planned_input_tokens"]),
                    r["planned_output_tokens"].clone(),
                    u(&r["scheduled_ns"]) - origin,
                    r["warmup"] == true,
                )
            })
            .collect()
    };
    let whole = plan(&rows(&all_dir), u(&all["points"][0]["schedule_origin_ns"]));
    let mut union = Vec::new();
    for ((d, _), origin) in shards.iter().zip(&origins) {
        union.extend(plan(&rows(d), *origin));
    }
    union.sort_by_key(|p| p.0);
    assert_eq!(union.len(), 63);
    assert_eq!(union, whole);

    let merged_dir = dir.path().join("merged");
    let dirs: Vec<&Path> = shards.iter().map(|(d, _)| d.as_path()).collect();
    let m = json_of(&merge(&dirs, Some(&merged_dir)));
    let p = &m["points"][0];
    assert_eq!(p["requests"]["completed"], 60, "{p}");
    assert_eq!(p["requests"]["warmup"], 3);
    assert_eq!(p["load"], all["points"][0]["load"]);
    assert_eq!(m["merged_from"].as_array().unwrap().len(), 3);
    assert!(p.get("shard").is_none());
    // The merged output holds the union of the records, in plan order.
    let merged_rows = rows(&merged_dir);
    assert_eq!(
        merged_rows
            .iter()
            .map(|r| u(&r["index"]))
            .collect::<Vec<_>>(),
        (0..63).collect::<Vec<_>>()
    );

    // Merged percentiles are the percentiles of the union of the shards' raw samples.
    let shard_rows: Vec<Value> = dirs.iter().flat_map(|d| rows(d)).collect();
    let measured: Vec<&Value> = shard_rows
        .iter()
        .filter(|r| r["warmup"] == false && r["error"].is_null())
        .collect();
    let check = |key: &str, mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        let d = &p[key];
        assert_eq!(u(&d["count"]) as usize, xs.len(), "{key}");
        for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)] {
            assert_eq!(
                d[name].as_f64().unwrap(),
                percentile_sorted(&xs, q),
                "{key} {name}"
            );
        }
        assert_eq!(d["max"].as_f64().unwrap(), *xs.last().unwrap());
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!(
            (d["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
            "{key} mean"
        );
    };
    check(
        "ttft_ms",
        measured
            .iter()
            .map(|r| r["ttft_ms"].as_f64().unwrap())
            .collect(),
    );
    check(
        "e2e_ms",
        measured
            .iter()
            .map(|r| r["e2e_ms"].as_f64().unwrap())
            .collect(),
    );
    check(
        "itl_ms",
        measured
            .iter()
            .flat_map(|r| r["itl_ms"].as_array().unwrap().clone())
            .map(|x| x.as_f64().unwrap())
            .collect(),
    );

    // HDR histograms: the merged one is the shards' added, and equals the histogram of the
    // union of the raw TTFTs (nanoseconds).
    let hist = |d: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("histograms.json")).unwrap()).unwrap()
    };
    let mh = hist(&merged_dir);
    let mut union_h = LatencyHistogram::new(3).unwrap();
    for r in &measured {
        union_h
            .record(u(&r["first_content_ns"]) - u(&r["scheduled_ns"]))
            .unwrap();
    }
    let buckets: Vec<(u64, u64)> =
        serde_json::from_value(mh["points"][0]["ttft"]["buckets"].clone()).unwrap();
    assert_eq!(buckets, union_h.buckets());
    let mut added = LatencyHistogram::new(3).unwrap();
    for d in &dirs {
        let b: Vec<(u64, u64)> =
            serde_json::from_value(hist(d)["points"][0]["ttft"]["buckets"].clone()).unwrap();
        added
            .merge(&LatencyHistogram::from_buckets(3, &b).unwrap())
            .unwrap();
    }
    assert_eq!(added.buckets(), union_h.buckets());
    assert_eq!(
        mh["points"][0]["ttft"]["p99_ms"].as_f64().unwrap(),
        union_h.quantile(0.99) as f64 / 1e6
    );

    // Merging is idempotent on its own output's shape: a re-merge of the merged directory
    // (one "shard" of one) gives the same point.
    let again = json_of(&merge(&[&merged_dir], None));
    assert_eq!(again["points"][0]["ttft_ms"], p["ttft_ms"]);

    // What is not the N shards of one run is refused with exit 2.
    let o = merge(&dirs[..2], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("shards missing: 2/3"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = merge(&[dirs[0], dirs[0], dirs[2]], None);
    assert_eq!(o.status.code(), Some(2));
    let o = merge(&[dirs[0], &all_dir], None);
    assert_eq!(o.status.code(), Some(2));
    let o = merge(&[&dir.path().join("nowhere")], None);
    assert_eq!(o.status.code(), Some(2));
}

/// Server-side concurrency from the sim's log: the most requests between received and last
/// token at once.
fn max_overlap(log: &Path) -> usize {
    let text = std::fs::read_to_string(log).unwrap();
    let mut ev: Vec<(u64, i32)> = Vec::new();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let a = u(&v["received_ns"]);
        let b = v["last_token_ns"].as_u64().unwrap_or(a);
        ev.push((a, 1));
        ev.push((b, -1));
    }
    ev.sort();
    let (mut cur, mut best) = (0i32, 0i32);
    for (_, d) in ev {
        cur += d;
        best = best.max(cur);
    }
    best as usize
}

#[test]
fn concurrency_is_split_over_the_shards() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "15",
        "--itl-ms",
        "2",
        "--log",
        log.to_str().unwrap(),
    ]);
    let args = [
        "--scenario",
        "D(4,6)",
        "--concurrency",
        "7",
        "--max-requests",
        "42",
        "--seed",
        "3",
    ];
    let shards = run_shards(&sim.url, 3, dir.path(), &args);
    let streams: Vec<u64> = shards
        .iter()
        .map(|(_, d)| u(&d["points"][0]["shard"]["streams"]))
        .collect();
    assert_eq!(streams, vec![3, 2, 2]);
    for (_, d) in &shards {
        // The point is reported at its whole level.
        assert_eq!(d["points"][0]["load"]["value"].as_f64(), Some(7.0));
    }
    // The sim logs every request it answered: wait until all 42 measured requests are there
    // (a bounded poll), so the bound below is checked on the real log, not an empty one.
    let lines = |p: &Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while lines(&log) < 42 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Exactly the 42: no warm-up requests here, and none lost or repeated.
    assert_eq!(lines(&log), 42, "requests in the sim's log");
    // Never more than the whole point's 7 streams at the server, and more than one shard's
    // worth (the largest shard has 3 streams) at some moment: the shards ran at once.
    let overlap = max_overlap(&log);
    assert!(
        (4..=7).contains(&overlap),
        "server-side concurrency {overlap}"
    );
    let dirs: Vec<&Path> = shards.iter().map(|(d, _)| d.as_path()).collect();
    let m = json_of(&merge(&dirs, None));
    assert_eq!(m["points"][0]["requests"]["completed"], 42);

    // Fewer streams than shards cannot be split.
    let o = serve(&sim.url, &["--concurrency", "2", "--shard", "0/3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be split over 3 shards"));
}

/// Sessions shard by session (every turn of a session in one shard), and the merged point
/// keeps the server's metrics that each shard scraped: the longest series, with the merged
/// client TTFT beside the server's.
#[test]
fn session_shards_merge_whole_sessions_and_keep_the_servers_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "2",
        "--prefix-cache-tokens",
        "50000",
    ]);
    let args = [
        "--scenario",
        "D(16,4)",
        "--rate",
        "20",
        "--turns",
        "3",
        "--think-time",
        "20",
        "--shared-prefix",
        "32",
        "--max-requests",
        "12",
        "--scrape-interval",
        "100ms",
    ];
    let shards = run_shards(&sim.url, 2, dir.path(), &args);
    for (d, doc) in &shards {
        let p = &doc["points"][0];
        assert!(u(&p["server_scrapes"]) >= 2, "{p}");
        assert!(d.join("server-metrics-p0.parquet").exists());
        // Each shard's sessions are its own plan units: every turn of them.
        for r in rows(d) {
            assert_eq!(
                u(&r["session"]) % 2,
                u(&p["shard"]["index"]),
                "a session's turns stay in its shard: {r}"
            );
        }
    }
    let merged_dir = dir.path().join("merged");
    let dirs: Vec<&Path> = shards.iter().map(|(d, _)| d.as_path()).collect();
    let m = json_of(&merge(&dirs, Some(&merged_dir)));
    let p = &m["points"][0];
    assert_eq!(p["sessions"]["completed"], 12, "{p}");
    assert_eq!(p["sessions"]["turns"], 36, "{p}");
    assert_eq!(p["requests"]["completed"], 36, "{p}");
    // The server's figures survive the merge, measured against the merged client TTFT.
    let most = shards
        .iter()
        .map(|(_, d)| u(&d["points"][0]["server_scrapes"]))
        .max()
        .unwrap();
    assert_eq!(u(&p["server_scrapes"]), most, "{p}");
    let server = p["server_ttft_ms"].as_f64().unwrap();
    let client = p["ttft_ms"]["mean"].as_f64().unwrap();
    assert!(
        (p["ttft_client_minus_server_ms"].as_f64().unwrap() - (client - server)).abs() < 1e-6,
        "{p}"
    );
    assert!(
        p["server_prefix_cache_hit_rate"].as_f64().unwrap() > 0.0,
        "{p}"
    );
    assert!(merged_dir.join("server-metrics-p0.parquet").exists());
}

#[test]
fn trace_shards_split_the_trace_and_merge_into_the_whole_replay() {
    let dir = tempfile::tempdir().unwrap();
    // 60 requests 20 ms apart; every third shares the first of its two blocks with the others.
    let trace = dir.path().join("t.jsonl");
    let lines: Vec<String> = (0..60u64)
        .map(|k| {
            format!(
                r#"{{"at_ms": {}, "input_tokens": {}, "output_tokens": {}, "hash_ids": [{}, {}]}}"#,
                k * 20,
                600 + k % 7,
                3 + k % 4,
                if k % 3 == 0 { 1 } else { 100 + k },
                200 + k
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let sim = Sim::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let args = [
        "--trace",
        trace.to_str().unwrap(),
        "--trace-format",
        "jsonl",
        "--seed",
        "5",
    ];
    let all_dir = dir.path().join("all");
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--output", all_dir.to_str().unwrap()]);
    let all = json_of(&serve(&sim.url, &a).output().unwrap());
    let shards = run_shards(&sim.url, 2, dir.path(), &args);
    // Each shard replays its share of the trace on the trace's clock.
    let plan = |rows: &[Value], origin: u64| -> Vec<(u64, u64, Value, u64)> {
        rows.iter()
            .map(|r| {
                (
                    u(&r["index"]),
                    u(&r["planned_input_tokens"]),
                    r["planned_output_tokens"].clone(),
                    u(&r["scheduled_ns"]) - origin,
                )
            })
            .collect()
    };
    let whole = plan(&rows(&all_dir), u(&all["points"][0]["schedule_origin_ns"]));
    assert_eq!(whole.len(), 60);
    let mut union = Vec::new();
    for (d, doc) in &shards {
        let part = plan(&rows(d), u(&doc["points"][0]["schedule_origin_ns"]));
        assert_eq!(part.len(), 30, "{}", d.display());
        union.extend(part);
    }
    union.sort_by_key(|p| p.0);
    // The same requests, lengths and due times (k × 20 ms after the origin, to the nanosecond).
    assert_eq!(union, whole);
    assert!(whole.iter().all(|p| p.3 == p.0 * 20_000_000), "{whole:?}");
    let dirs: Vec<&Path> = shards.iter().map(|(d, _)| d.as_path()).collect();
    let m = json_of(&merge(&dirs, None));
    let p = &m["points"][0];
    assert_eq!(p["requests"]["completed"], 60, "{p}");
    assert_eq!(p["load"], all["points"][0]["load"], "{p}");
    // Schedule fidelity of the union: every request's lateness, as the whole run reports it.
    assert_eq!(p["schedule_lateness_ms"]["count"], 60, "{p}");
    assert_eq!(p["trace"], all["points"][0]["trace"], "{p}");
}
