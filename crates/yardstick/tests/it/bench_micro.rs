//! `yardstick bench micro`: the real binary, real memory, a real temp directory, real loopback
//! sockets (127.0.0.1 only). Sizes are tiny so the suite stays fast; the figures themselves
//! are not asserted (they depend on the machine), only that they are plausible.

use crate::common::yardstick;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

const QUICK: &[&str] = &["--replicates", "3", "--iterations", "3", "--warmup", "1"];

fn micro_json(args: &[&str]) -> Value {
    let out = yardstick()
        .args(["bench", "micro", "--json"])
        .args(QUICK)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap();
    crate::schema_cli::assert_conforms("bench-micro", &v);
    v
}

fn result<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no result {name} in {v}"))
}

/// A throughput or latency figure: positive, finite, inside its own CI when it has one.
fn plausible(r: &Value, unit: &str) {
    assert_eq!(r["unit"], unit, "{r}");
    let v = r["value"].as_f64().unwrap();
    assert!(v.is_finite() && v > 0.0, "{r}");
    if let Some(ci) = r["ci"].as_array() {
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= v && v <= hi && lo > 0.0, "{r}");
    }
    assert!(r["n"].as_u64().unwrap() >= 1);
}

#[test]
fn memory_and_gemm_report_every_kernel_with_cis() {
    let v = micro_json(&[
        "memory",
        "gemm",
        "--memory-size",
        "2MiB",
        "--gemm-size",
        "48,96",
    ]);
    assert!(!v["machine_profile"].as_str().unwrap().is_empty());
    assert_eq!(v["policy"]["replicates"], 3);
    for k in ["copy", "scale", "add", "triad"] {
        let r = result(&v, &format!("memory.{k}"));
        plausible(r, "GB/s");
        // 3 replicates x 3 measured iterations; the warm-up iteration of each is discarded.
        assert_eq!(r["n"], 9);
        assert_eq!(r["replicates"], 3);
        assert_eq!(r["warmup_discarded"], 3);
        assert!(r["ci"].is_array(), "{r}");
        assert_eq!(r["samples"].as_array().unwrap().len(), 3);
    }
    for n in ["48", "96"] {
        let r = result(&v, &format!("gemm.f32.{n}"));
        plausible(r, "GFLOP/s");
        assert_eq!(r["params"]["n"].as_u64().unwrap().to_string(), n);
    }
    let peak = result(&v, "gemm.f32.peak");
    let best = ["48", "96"]
        .iter()
        .map(|n| {
            result(&v, &format!("gemm.f32.{n}"))["value"]
                .as_f64()
                .unwrap()
        })
        .fold(0.0, f64::max);
    assert_eq!(peak["value"].as_f64().unwrap(), best);
    // 2 MiB arrays sit in this machine's caches: the report says so rather than staying quiet.
    let warnings = v["warnings"].as_array().unwrap();
    if cfg!(debug_assertions) {
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().contains("debug build"))
        );
    }
}

#[test]
fn storage_measures_a_temp_directory_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let v = micro_json(&[
        "storage",
        "--path",
        dir.path().to_str().unwrap(),
        "--storage-size",
        "4MiB",
        "--duration",
        "30ms",
    ]);
    for k in ["seq_read", "seq_write", "rand_read", "rand_write"] {
        let r = result(&v, &format!("storage.{k}"));
        plausible(r, "MB/s");
        // 3 replicates x 3 measured iterations: the cluster bootstrap always has an interval.
        assert_eq!(r["n"], 9, "{r}");
        assert!(r["ci"].is_array(), "no CI: {r}");
        let mode = r["params"]["io_mode"].as_str().unwrap();
        assert!(mode == "direct" || mode.starts_with("buffered"), "{mode}");
    }
    // 4 MiB in 1 MiB blocks: 4 blocks x 3 measured iterations x 3 replicates per sequential
    // pass; the random passes time every 4 KiB operation of their 30 ms iterations.
    for (k, block) in [
        ("seq_read", 1 << 20),
        ("seq_write", 1 << 20),
        ("rand_read", 4096),
        ("rand_write", 4096),
    ] {
        let p50 = result(&v, &format!("storage.{k}.p50_us"));
        let p99 = result(&v, &format!("storage.{k}.p99_us"));
        plausible(p50, "us");
        plausible(p99, "us");
        assert!(p99["value"].as_f64() >= p50["value"].as_f64());
        assert_eq!(p50["higher_is_better"], false);
        assert_eq!(p50["params"]["block_bytes"], block, "{p50}");
        if k.starts_with("seq") {
            assert_eq!(p50["n"], 36, "warm-up blocks are dropped: {p50}");
        }
        // An order-statistic interval exists for the median from n >= 6 and for p99 at 95 %
        // from n >= 299: require it wherever n allows one.
        assert!(p50["ci"].is_array(), "no CI: {p50}");
        let n = p99["n"].as_u64().unwrap();
        assert_eq!(p99["ci"].is_array(), n >= 299, "{p99}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "probe files left behind: {left:?}");
}

#[test]
fn network_loopback_bandwidth_and_rtt() {
    let v = micro_json(&["network", "--network-size", "4MiB", "--duration", "20ms"]);
    let bw = result(&v, "network.bandwidth");
    plausible(bw, "Gbit/s");
    assert_eq!(bw["params"]["target"], "loopback");
    assert!(
        bw["params"]["address"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    let rtt = result(&v, "network.rtt");
    plausible(rtt, "us");
    let p99 = result(&v, "network.rtt.p99");
    plausible(p99, "us");
    assert!(p99["value"].as_f64() >= rtt["value"].as_f64());
}

/// Kills the listener we started if the test fails half-way.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn peer_mode_against_our_own_listener() {
    let mut listener = Child(
        yardstick()
            .args([
                "bench",
                "micro",
                "network",
                "--listen",
                "127.0.0.1:0",
                "--listen-for",
                "60s",
            ])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(listener.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");
    let v = micro_json(&[
        "network",
        "--peer",
        &addr,
        "--network-size",
        "1MiB",
        "--duration",
        "20ms",
    ]);
    let bw = result(&v, "network.bandwidth");
    plausible(bw, "Gbit/s");
    assert_eq!(bw["params"]["target"], "peer");
    assert_eq!(bw["params"]["address"], addr);
}

#[test]
fn a_peer_that_is_not_a_yardstick_listener_is_a_clear_failure() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let out = yardstick()
        .args(["bench", "micro", "network", "--peer", &addr])
        .args(QUICK)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a yardstick listener"), "{err}");
    server.join().unwrap();
}

#[test]
fn bf16_gemm_side_by_side_with_f32_where_the_cpu_has_it() {
    let v = micro_json(&["gemm", "--gemm-size", "64"]);
    plausible(result(&v, "gemm.f32.64"), "GFLOP/s");
    let skipped = v["skipped"].as_array().unwrap();
    if let Some(s) = skipped.iter().find(|s| s["name"] == "gemm.bf16") {
        // A CPU without avx512_bf16: said so, and no bf16 figure.
        assert_eq!(s["reason"], "skipped: CPU lacks avx512_bf16");
        assert!(
            !v["results"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"].as_str().unwrap().contains("bf16"))
        );
        return;
    }
    let bf16 = result(&v, "gemm.bf16.64");
    plausible(bf16, "GFLOP/s");
    assert_eq!(bf16["params"]["accumulate"], "f32");
    assert_eq!(result(&v, "gemm.bf16.peak")["value"], bf16["value"]);
    let ratio = result(&v, "gemm.bf16_vs_f32.64");
    plausible(ratio, "x");
    let expect =
        bf16["value"].as_f64().unwrap() / result(&v, "gemm.f32.64")["value"].as_f64().unwrap();
    assert_eq!(ratio["value"].as_f64().unwrap(), expect);
}

#[test]
fn a_cpu_without_avx512_bf16_is_reported_as_skipped() {
    // Forced: the library reads YARDSTICK_GEMM_NO_BF16 as "this CPU lacks avx512_bf16".
    let out = yardstick()
        .env("YARDSTICK_GEMM_NO_BF16", "1")
        .args(["bench", "micro", "gemm", "--gemm-size", "32", "--json"])
        .args(QUICK)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gemm.f32.32", "gemm.f32.peak"]);
    assert_eq!(v["skipped"][0]["name"], "gemm.bf16");
    let reason = v["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("skipped: CPU lacks avx512_bf16"),
        "{reason}"
    );
    // The human table says it too.
    let out = yardstick()
        .env("YARDSTICK_GEMM_NO_BF16", "1")
        .args([
            "bench",
            "micro",
            "gemm",
            "--gemm-dtype",
            "bf16",
            "--gemm-size",
            "32",
        ])
        .args(QUICK)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("gemm.bf16") && text.contains("skipped: CPU lacks avx512_bf16"),
        "{text}"
    );
}

#[test]
fn human_table_lists_results() {
    let out = yardstick()
        .args(["bench", "micro", "memory", "--memory-size", "1MiB"])
        .args(QUICK)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for k in ["memory.copy", "memory.triad", "GB/s", "machine profile"] {
        assert!(text.contains(k), "{k} missing in {text}");
    }
}

#[test]
fn bad_input_exits_2_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let missing = missing.to_str().unwrap();
    for (args, needle) in [
        (vec!["cache"], "unknown micro benchmark `cache`"),
        (
            vec!["memory", "--replicates", "0"],
            "replicates must be >= 1",
        ),
        (
            vec!["memory", "--confidence", "1.5"],
            "confidence level 1.5",
        ),
        (
            vec!["memory", "--memory-size", "12XB"],
            "`12XB` is not a size",
        ),
        (vec!["memory", "--warmup", "lots"], "`lots` is not a count"),
        (
            vec!["memory", "--outliers", "drop"],
            "--outliers: unknown outlier policy `drop`",
        ),
        (vec!["memory", "--threads", "0"], "--threads must be >= 1"),
        (
            vec!["gemm", "--gemm-dtype", "int3"],
            "--gemm-dtype: unknown precision `int3`",
        ),
        (
            vec!["gemm", "--gemm-dtype", "fp32,nope"],
            "--gemm-dtype: unknown precision `nope`",
        ),
        (
            vec!["gemm", "--gemm-size", "0"],
            "GEMM size 0 is out of range",
        ),
        (vec!["storage", "--path", missing], "not a directory"),
        (vec!["storage", "--storage-size", "4KiB"], "too small"),
        (
            vec!["network", "--duration", "0s"],
            "not a positive duration",
        ),
        (
            vec!["memory", "--listen", "127.0.0.1:0"],
            "--listen serves only the network benchmark",
        ),
    ] {
        let out = yardstick()
            .args(["bench", "micro"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
