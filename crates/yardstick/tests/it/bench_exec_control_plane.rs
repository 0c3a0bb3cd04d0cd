//! Control-plane-bound classification of command workloads through the real binary: a
//! workload that sleeps before its first step (slow imports, scheduler, rendezvous) and then
//! reports a few fast steps over the metric protocol is control-plane-bound in `bench exec`
//! (file and FIFO) and in `yardstick run`; one whose wall time is its steps is not. And a
//! collective's reported bus bandwidth is cited against the link peak.

use crate::common::{command_spec, json, run_spec, yardstick};

use serde_json::Value;

/// Sleeps 1 s, then reports three 1 ms steps as they end.
const SLOW_START: &str = r#"sleep 1
for i in 0 1 2; do
  echo "{\"step\":$i,\"step_time_s\":0.001}" >> "$YARDSTICK_METRICS"
done"#;

/// Four steps of 0.3 s, each reported when it ends; no start-up to speak of.
const BUSY: &str = r#"for i in 0 1 2 3; do
  sleep 0.3
  echo "{\"step\":$i,\"step_time_s\":0.3}" >> "$YARDSTICK_METRICS"
done"#;

fn exec(script: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let o = yardstick()
        .args([
            "bench",
            "exec",
            "--json",
            "--runs",
            "1",
            "--warmup-steps",
            "0",
        ])
        .args(extra)
        .arg("--logs")
        .arg(dir.path().join("logs"))
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o)
}

#[test]
fn a_workload_that_sleeps_before_its_steps_is_control_plane_bound() {
    for extra in [&[][..], &["--metrics-fifo"][..]] {
        let v = exec(SLOW_START, extra);
        let b = &v["bottleneck"];
        assert_eq!(b["bottleneck"], "control-plane", "{extra:?}: {b}");
        let t = &b["control_plane"];
        assert_eq!(
            t["source"],
            if extra.is_empty() {
                "file-poll"
            } else {
                "fifo"
            }
        );
        assert_eq!(t["step_records"], 3);
        // The 1 s sleep is start-up: the first step began after it.
        let startup = t["startup_s"].as_f64().unwrap();
        assert!(startup >= 0.99, "{t}");
        assert!(t["teardown_s"].as_f64().unwrap() >= 0.0);
        assert!(
            (t["service_s"].as_f64().unwrap() - 0.003).abs() < 1e-12,
            "{t}"
        );
        let wall = v["runs"][0]["wall_s"].as_f64().unwrap();
        assert_eq!(t["wall_s"].as_f64().unwrap(), wall);
        let share = t["control_plane_share"].as_f64().unwrap();
        assert!(share > 0.5 && share <= 1.0, "{t}");
        // The evidence names the share, then the start-up and teardown seconds.
        let ev: Vec<&str> = b["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert!(ev[0].contains("of the job's wall time"), "{ev:?}");
        assert!(ev[0].contains("is start-up and teardown"), "{ev:?}");
        assert!(
            ev[1].starts_with(&format!(
                "start-up (launch to the first step) {startup:.3} s"
            )),
            "{ev:?}"
        );
        assert_eq!(b["observation"]["wall_s"].as_f64().unwrap(), wall);
    }
}

#[test]
fn a_workload_whose_wall_time_is_its_steps_is_not() {
    let v = exec(BUSY, &[]);
    let b = &v["bottleneck"];
    assert_ne!(b["bottleneck"], "control-plane", "{b}");
    let t = &b["control_plane"];
    assert_eq!(t["step_records"], 4);
    assert!((t["service_s"].as_f64().unwrap() - 1.2).abs() < 1e-9, "{t}");
    let share = t["control_plane_share"].as_f64().unwrap();
    // Start-up and teardown take some time, but less than half.
    assert!(share > 0.0 && share < 0.5, "{t}");
    assert!(
        b["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("start-up and teardown are")),
        "{b}"
    );
}

#[test]
fn buffered_step_lines_are_not_read_as_a_slow_start() {
    // Six 0.2 s steps whose lines all arrive at once at the end: the timeline is refused with
    // a warning instead of calling the run's whole life start-up.
    let script = r#"sleep 0.2; for i in 0 1 2 3 4 5; do echo "{\"step\":$i,\"step_time_s\":0.2}"; done >> "$YARDSTICK_METRICS""#;
    let v = exec(script, &[]);
    assert!(v["runs"][0]["timeline"].is_null(), "{v}");
    assert!(v["bottleneck"].is_null(), "{}", v["bottleneck"]);
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("buffered its output")),
        "{}",
        v["warnings"]
    );
}

#[test]
fn collective_busbw_is_compared_with_the_link_peak() {
    // 40 % of every 0.2 s step in exposed collectives at 150 GB/s on a 400 GB/s link; the
    // steps take the run's wall time, so start-up does not decide.
    let script = r#"for i in 0 1 2; do sleep 0.2; echo "{\"step\":$i,\"step_time_s\":0.2,\"comm_s\":0.08,\"comm_busbw_gbps\":150}" >> "$YARDSTICK_METRICS"; done"#;
    let v = exec(
        script,
        &[
            "--peak-flops",
            "1e12",
            "--memory-bw",
            "1e11",
            "--link-bw",
            "4e11",
        ],
    );
    let b = &v["bottleneck"];
    assert_eq!(b["bottleneck"], "communication", "{b}");
    assert_eq!(b["observation"]["comm_busbw"], 150e9);
    assert_eq!(b["ceilings"]["link_bw"], 4e11);
    assert_eq!(
        b["evidence"][1],
        "collective bus bandwidth 150.00 GB/s is 38% of the link peak 400.00 GB/s \
         (not saturated: overlap or larger buckets before a faster link)",
        "{b}"
    );
    assert_eq!(v["runs"][0]["training"]["comm_busbw_gbps"], 150.0);
}

#[test]
fn a_run_point_that_sleeps_before_its_steps_is_control_plane_bound() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    let script = serde_json::to_string(SLOW_START).unwrap();
    std::fs::write(
        &spec,
        command_spec("control-plane-test", &format!("[sh, -c, {script}]"), &[]),
    )
    .unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let p = &v["summary"]["bottlenecks"]["points"][0];
    assert!(p["point"].as_str().unwrap().starts_with("e2e."), "{p}");
    assert_eq!(p["bottleneck"], "control-plane", "{p}");
    assert!(
        p["control_plane"]["startup_s"].as_f64().unwrap() >= 0.99,
        "{p}"
    );
    assert!(p["control_plane"]["share"].as_f64().unwrap() > 0.5, "{p}");
    assert!(
        p["evidence"][1]
            .as_str()
            .unwrap()
            .starts_with("start-up (launch to the first step)"),
        "{p}"
    );
}
