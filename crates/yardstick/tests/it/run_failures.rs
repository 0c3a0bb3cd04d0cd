//! `yardstick run` with replicates whose workload fails: the run completes with every failure
//! stored and listed; a point whose every replicate failed measured nothing, so the command
//! exits 1.

use crate::common::{command_spec, run_spec, yardstick};

use std::path::Path;
use std::process::Output;

/// A command that fails on the invocations listed in `fail` (0-based, counted in a state
/// file beside the spec) and at world size 2 when `ws2_fails`.
fn spec(dir: &Path, fail: &[u32], ws2_fails: bool) -> String {
    let state = dir.join("calls");
    let fail_list = fail
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let ws2 = if ws2_fails {
        "[ {worldSize} = 2 ] && exit 7; "
    } else {
        ""
    };
    let sizes = if ws2_fails { "[1, 2]" } else { "[1]" };
    let command = format!(
        r#"[sh, -c, "{ws2}n=$(cat '{state}' 2>/dev/null || echo 0); echo $((n + 1)) > '{state}'; for f in {fail_list}; do [ $n = $f ] && exit 5; done; for i in 0 1 2 3; do echo \"{{\\\"step\\\":$i,\\\"step_time_s\\\":0.01}}\" >> \"$YARDSTICK_METRICS\"; done"]"#,
        state = state.display()
    );
    command_spec(
        "failures-test",
        &command,
        &[&format!("worldSizes: {sizes}")],
    )
}

/// `yardstick run SPEC --store STORE` with its human output.
fn run_human(spec: &Path, store: &Path) -> Output {
    yardstick()
        .arg("run")
        .arg(spec)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_failed_replicate_is_listed_and_the_run_still_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(dir.path(), &[1], false)).unwrap();
    let o = run_human(&spec_path, &dir.path().join("store"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains(": complete"), "{out}");
    assert!(out.contains("1 of 3 replicates failed"), "{out}");
    assert!(
        out.contains("    - r1: the command exited with status 5"),
        "{out}"
    );
}

#[test]
fn a_point_whose_every_replicate_failed_exits_1_and_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(dir.path(), &[], true)).unwrap();
    let store = dir.path().join("store");
    let o = run_spec(&spec_path, &store, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("measured nothing: every replicate failed"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The run is complete (every failure is a stored measurement) and names the failures.
    assert_eq!(v["status"], "complete");
    let failures = v["summary"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let f = &failures[0];
    assert!(
        f["point"].as_str().unwrap().contains("2"),
        "the world-size-2 point: {f}"
    );
    assert!(err.contains(f["point"].as_str().unwrap()), "{err}");
    assert_eq!(f["replicates"], 3);
    let failed = f["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 3);
    for (r, x) in failed.iter().enumerate() {
        assert_eq!(x["replicate"], r as u64);
        assert!(x["error"].as_str().unwrap().contains("status 7"), "{x}");
    }
    let run_id = v["run_id"].as_str().unwrap();
    let o = yardstick()
        .args(["verify", run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stdout));
}
