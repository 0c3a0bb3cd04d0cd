//! `bench exec --metrics-fifo` (live metric lines from a FIFO), the bottleneck classification of
//! a metric-protocol workload, and a snapshot of the human output (mock executor: deterministic
//! times; the logs path redacted).

use crate::common::{json, yardstick};

use std::process::{Output, Stdio};

fn run(args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A workload that reports three steps through `$YARDSTICK_METRICS` (which must be a FIFO),
/// one line per `echo`, then hangs.
const HANGS_AFTER_THREE_STEPS: &str = r#"
[ -p "$YARDSTICK_METRICS" ] || { echo "not a FIFO: $YARDSTICK_METRICS" >&2; exit 7; }
for i in 0 1 2; do
  echo "{\"step\":$i,\"step_time_s\":0.25,\"tokens\":1024,\"loss\":$((5 - i))}" > "$YARDSTICK_METRICS"
done
exec sleep 30
"#;

#[test]
fn a_hung_workload_keeps_the_steps_it_reported_through_the_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "1",
        "--metrics-fifo",
        "--timeout",
        "1s",
        "--logs",
        &logs.display().to_string(),
        "--",
        "sh",
        "-c",
        HANGS_AFTER_THREE_STEPS,
    ]);
    // The run timed out (exit 1), but its three finished steps are analysed.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let r = &v["runs"][0];
    assert_eq!(r["timed_out"], true, "{v}");
    assert_eq!(r["metrics"]["records"], 3, "{v}");
    assert_eq!(r["training"]["steps"], 3);
    assert_eq!(r["training"]["step_time_s"]["p50"], 0.25);
    assert_eq!(r["training"]["loss"]["last"], 3.0);
    // The lines are kept in the logs; the FIFO is gone.
    let copy = std::fs::read_to_string(logs.join("b0-r0.metrics.jsonl")).unwrap();
    assert_eq!(copy.lines().count(), 3);
    assert!(!logs.join("b0-r0.metrics.fifo").exists());
}

#[test]
fn bottleneck_of_a_metric_workload_with_given_ceilings() {
    let dir = tempfile::tempdir().unwrap();
    // 12 steps of 0.2 s, 1e10 FLOPs and 1e9 bytes each (10 FLOP/B), 0.1 s of it waiting for
    // data: input-bound (50 % of the step), whatever the roofline says.
    let script = r#"for i in $(seq 0 11); do echo "{\"step\":$i,\"step_time_s\":0.2,\"flops\":1e10,\"bytes\":1e9,\"data_wait_s\":DW}" >> "$YARDSTICK_METRICS"; done"#;
    let exec = |data_wait: &str| {
        let o = run(&[
            "bench",
            "exec",
            "--json",
            "--runs",
            "1",
            "--warmup-steps",
            "0",
            "--peak-flops",
            "1e12",
            "--memory-bw",
            "2e10",
            "--logs",
            &dir.path().join(data_wait).display().to_string(),
            "--",
            "sh",
            "-c",
            &script.replace("DW", data_wait),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        json(&o)
    };
    let v = exec("0.1");
    let b = &v["bottleneck"];
    assert_eq!(b["bottleneck"], "input", "{b}");
    assert!(
        b["evidence"][0]
            .as_str()
            .unwrap()
            .starts_with("50% of the step")
    );
    assert_eq!(b["ceilings"]["peak_flops"], 1e12);
    // Without the wait: 10 FLOP/B is below the ridge 1e12 / 2e10 = 50: memory-bound; achieved
    // 5e10 FLOP/s of an attainable 2e11 (25 %).
    let v = exec("0");
    let b = &v["bottleneck"];
    assert_eq!(b["bottleneck"], "memory", "{b}");
    assert_eq!(b["placement"]["ridge"], 50.0);
    assert_eq!(b["placement"]["efficiency"], 0.25);
    assert_eq!(b["bytes_source"], "reported");
}

#[test]
fn human_output_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs").display().to_string();
    let o = run(&[
        "bench",
        "exec",
        "--runs",
        "6",
        "--logs",
        &logs,
        "--debug-mock-times",
        "0.9,0.1,0.1,0.12,0.1,0.11",
        "--",
        "train.sh",
        "--steps",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout)
        .unwrap()
        .replace(&logs, "[LOGS]");
    insta::assert_snapshot!("bench_exec_human", out);
}
