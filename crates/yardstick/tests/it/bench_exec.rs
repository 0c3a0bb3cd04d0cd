//! `yardstick bench exec` driven through the built binary against real child processes: sleep,
//! sh -c, a script failing every other run, one hanging past --timeout, one ignoring SIGTERM,
//! metric-protocol workloads (malformed lines, silence, a world-size sweep), Ctrl-C, bad input.
//! Bounded and fast; no timing assertions beyond what physics guarantees (sleep 0.01 ≥ 10 ms).

use crate::common::{alive, json, yardstick};

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn logs(dir: &Path) -> String {
    dir.join("logs").display().to_string()
}

#[test]
fn sleep_has_the_documented_json_shape() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "3",
        "--logs",
        &logs(dir.path()),
        "--",
        "sleep",
        "0.01",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-exec", &v);
    assert_eq!(v["command"], "sleep 0.01");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for r in runs {
        for key in ["wall_s", "user_s", "sys_s", "max_rss_bytes"] {
            assert!(r[key].as_f64().unwrap() >= 0.0, "{key} in {r}");
        }
        assert_eq!(r["exit_code"], 0);
        // sleep cannot finish before its 10 ms.
        assert!(r["wall_s"].as_f64().unwrap() >= 0.01);
        assert!(Path::new(r["stdout"].as_str().unwrap()).exists());
    }
    let w = &v["wall_s"];
    for key in ["mean", "median", "stddev", "min", "max"] {
        assert!(w[key].is_number(), "{key} in {w}");
    }
    let ci = w["ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= w["mean"].as_f64().unwrap());
    assert!(v["warnings"].is_array());
}

#[test]
fn params_make_one_benchmark_per_value_and_logs_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "2",
        "--logs",
        &logs(dir.path()),
        "--param",
        "word=alpha,beta",
        "--",
        "sh",
        "-c",
        "echo {word}; echo oops-{word} >&2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-exec", &v);
    let b = v["benchmarks"].as_array().unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!(b[1]["parameters"]["word"], "beta");
    assert_eq!(b[1]["argv"][2], "echo beta; echo oops-beta >&2");
    let out = std::fs::read_to_string(b[1]["runs"][0]["stdout"].as_str().unwrap()).unwrap();
    let err = std::fs::read_to_string(b[1]["runs"][0]["stderr"].as_str().unwrap()).unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("beta\n", "oops-beta\n"));
}

/// A script that succeeds on even invocations and fails on odd ones (state in a counter file).
fn flaky(dir: &Path) -> String {
    let counter = dir.join("count");
    format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $((n % 2)) -eq 0 ]",
        c = counter.display()
    )
}

#[test]
fn failing_every_other_run_is_measured_with_ignore_failure() {
    let dir = tempfile::tempdir().unwrap();
    let script = flaky(dir.path());
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "4",
        "--ignore-failure",
        "--logs",
        &logs(dir.path()),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let codes: Vec<i64> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["exit_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, vec![0, 1, 0, 1]);
    assert_eq!(v["failed_runs"], 2);
    assert_eq!(v["wall_s"]["n"], 4);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("2 of 4 runs failed")
    );
}

#[test]
fn failing_run_stops_the_benchmark_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let script = flaky(dir.path());
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "4",
        "--logs",
        &logs(dir.path()),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-exec", &v);
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["stopped_early"], true);
    assert_eq!(
        v["wall_s"]["n"], 1,
        "only the successful run is in the statistics"
    );
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--ignore-failure")
    );
}

#[test]
fn a_hanging_run_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "1",
        "--timeout",
        "300ms",
        "--logs",
        &logs(dir.path()),
        "--",
        "sleep",
        "30",
    ]);
    // Stopped at the 300 ms timeout: not before it, long before the 30 s sleep ends.
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = &json(&o)["runs"][0];
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["exit_code"], Value::Null);
    assert_eq!(r["signal"], 15);
}

#[test]
fn sigterm_ignorers_are_killed_with_their_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "trap '' TERM; sleep 30 & echo $! > {}; wait",
        pidfile.display()
    );
    let t0 = Instant::now();
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "1",
        // Long enough for sh to reach its `trap` on a loaded runner before the SIGTERM.
        "--timeout",
        "2s",
        "--kill-grace",
        "300ms",
        "--logs",
        &logs(dir.path()),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // Not before the 2 s timeout.
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = &json(&o)["runs"][0];
    assert_eq!(
        (r["timed_out"].clone(), r["signal"].clone()),
        (Value::Bool(true), 9.into())
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the grandchild sleep {pid} survived");
}

#[test]
fn ctrl_c_stops_the_child_and_reports_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("started");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let child = yardstick()
        .args([
            "bench",
            "exec",
            "--json",
            "--runs",
            "3",
            "--kill-grace",
            "300ms",
            "--logs",
            &logs(dir.path()),
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first run's child is up (so the handler is installed and a run is in
    // progress), not after a fixed sleep.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pidfile.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(pidfile.exists(), "the first run never started");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["runs"][0]["cancelled"], true);
    assert!(stderr(&o).contains("interrupted"));
}

const WRITER: &str = r#"
m="$YARDSTICK_METRICS"
echo '{"step":0,"step_time_s":0.2,"tokens":1000,"samples":10,"loss":3.0}' >> "$m"
echo 'loading checkpoint...' >> "$m"
echo '{"step":1,"step_time_s":0.1,"tokens":1000,"samples":10,"loss":2.5}' >> "$m"
echo '{"step":2,"step_time_s":"slow"}' >> "$m"
echo '{"step":3,"step_time_s":0.1,"tokens":1000,"samples":10,"loss":2.0,"lr":0.001}' >> "$m"
"#;

#[test]
fn metric_protocol_malformed_lines_are_counted_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "1",
        "--warmup-steps",
        "1",
        "--model-params",
        "1e6",
        "--peak-flops",
        "1e11",
        "--cost-per-device-hour",
        "3.6",
        "--logs",
        &logs(dir.path()),
        "--",
        "sh",
        "-c",
        WRITER,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let r = &v["runs"][0];
    assert_eq!(r["metrics"]["records"], 3);
    assert_eq!(r["metrics"]["malformed_count"], 2);
    let lines: Vec<i64> = r["metrics"]["malformed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_i64().unwrap())
        .collect();
    assert_eq!(lines, vec![2, 4]);
    let t = &r["training"];
    assert_eq!(
        (t["steps"].clone(), t["measured_steps"].clone()),
        (3.into(), 2.into())
    );
    assert_eq!(t["tokens_per_s"]["aggregate"], 10000.0);
    // 6 * 1e6 * 1000 FLOPs in 0.1 s on one device of 1e11 FLOP/s: 0.6.
    assert!((t["mfu"]["p50"].as_f64().unwrap() - 0.6).abs() < 1e-12);
    assert_eq!(t["loss"]["first"], 3.0);
    assert_eq!(t["custom_keys"][0], "lr");
    assert!(
        v["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("2 malformed metric lines (line 2, 4)")),
        "{}",
        v["warnings"]
    );
}

#[test]
fn a_silent_workload_gets_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "bench",
        "exec",
        "--runs",
        "1",
        "--expect-metrics",
        "--logs",
        &logs(dir.path()),
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("wrote no metric records"), "{out}");
    assert!(out.contains("YARDSTICK_METRICS"), "{out}");
}

#[test]
fn world_size_sweep_reports_scaling_from_the_metric_protocol() {
    // 10·N samples per 0.1 s step, except 8 ranks only reach 65 samples per step: 100 → 650
    // samples/s at 8 is 81.25 %, the example of docs/methodology.md#training.
    let dir = tempfile::tempdir().unwrap();
    let script = r#"s=$(( {worldSize} == 8 ? 65 : 10 * {worldSize} ));
for i in 0 1 2 3 4; do echo "{\"step\":$i,\"step_time_s\":0.1,\"samples\":$s}" >> "$YARDSTICK_METRICS"; done"#;
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "2",
        "--world-sizes",
        "1,2,8",
        "--warmup-steps",
        "0",
        "--logs",
        &logs(dir.path()),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = &json(&o)["scaling"];
    assert_eq!(s["metric"], "samples_per_s");
    let eff: Vec<f64> = s["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["efficiency"].as_f64().unwrap())
        .collect();
    assert_eq!(eff, vec![1.0, 1.0, 0.8125]);
    // Amdahl through (2, 2.0) and (8, 6.5): s = Σxy/Σx² with x = 1 − 1/n, y = 1/S − 1/n.
    let (x2, y2, x8, y8) = (0.5, 0.0, 0.875, 1.0 / 6.5 - 0.125);
    let expected = (x2 * y2 + x8 * y8) / (x2 * x2 + x8 * x8);
    let got = s["amdahl"]["serial_fraction"].as_f64().unwrap();
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
}

#[test]
fn mock_executor_makes_warnings_deterministic() {
    let o = run(&[
        "bench",
        "exec",
        "--runs",
        "6",
        "--debug-mock-times",
        "0.9,0.1,0.1,0.1,0.1,0.1",
        "--",
        "anything",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("the first run was slower than the rest (900.00 ms vs median 100.00 ms)"),
        "{out}"
    );
    assert!(out.contains("100.00 ms … 900.00 ms    6 runs"), "{out}");
    // Made-up timings say so, for people and machines.
    assert!(stderr(&o).contains("MOCKED"), "{}", stderr(&o));
    let o = run(&[
        "--json",
        "bench",
        "exec",
        "--runs",
        "3",
        "--debug-mock-times",
        "0.1",
        "--",
        "anything",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["mocked"], true);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_input_exits_2_with_a_hint() {
    let cases: &[&[&str]] = &[
        &["bench", "exec", "--runs", "0", "--", "true"],
        &["bench", "exec", "--param", "nope", "--", "true"],
        &["bench", "exec", "--param", "n=1,2", "--", "true"],
        &["bench", "exec", "--timeout", "soon", "--", "true"],
        &[
            "bench",
            "exec",
            "--world-sizes",
            "0,2",
            "--",
            "echo",
            "{worldSize}",
        ],
        &["bench", "exec", "--gpu", "abacus", "--", "true"],
        &[
            "bench",
            "exec",
            "--",
            "/nonexistent/yardstick-no-such-program",
        ],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("error"), "{args:?}: {}", stderr(&o));
    }
    let o = run(&["bench", "exec", "--param", "n=1,2", "--", "true"]);
    assert!(
        stderr(&o).contains("hint: put `{n}` where the value goes"),
        "{}",
        stderr(&o)
    );
    // No command at all: clap's usage error, also exit 2.
    assert_eq!(run(&["bench", "exec"]).status.code(), Some(2));
}

/// Without --logs, `bench exec` leaves nothing in the temporary directory when every run
/// succeeded (it used to leave a directory per call), and keeps and names the logs when a run
/// failed.
#[test]
fn without_logs_nothing_is_left_in_the_temp_dir_unless_a_run_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let litter = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("yardstick-exec-"))
            .collect()
    };
    let exec = |cmd: &str| {
        yardstick()
            .args(["bench", "exec", "--runs", "3", "--", "sh", "-c", cmd])
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap()
    };
    let o = exec("echo fine");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("logs: not kept"), "{out}");
    assert_eq!(litter(), Vec::<String>::new());

    let o = exec("echo broken >&2; exit 3");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let kept = litter();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "logs kept in {}",
            tmp.path().join(&kept[0]).display()
        )),
        "{err}"
    );
    let logs: Vec<_> = std::fs::read_dir(tmp.path().join(&kept[0]))
        .unwrap()
        .flatten()
        .collect();
    assert!(
        logs.iter()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("broken"))),
        "the failed run's stderr is kept"
    );
}
