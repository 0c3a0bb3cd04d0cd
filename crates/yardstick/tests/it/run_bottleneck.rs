//! `yardstick run` of a spec with a micro layer (memory, GEMM) and the built-in trainer: the
//! run's own micro figures are the ceilings its training point is classified on, in
//! `summary.json`, the `--json` outcome and the human output.
#![cfg(feature = "train")]

use crate::common::run_spec;

const SPEC: &str = "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: roofline-test}
spec:
  mode: exploratory
  workload:
    model: tiny
    precision: fp32
    sequenceLengths: 64
    batching: static
    concurrency: 1
    dataset: {kind: synthetic, seed: 1}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {steps: 2}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  layers:
    micro:
      - kind: memory
        sizes: [4194304]
      - kind: gemm
        sizes: [128]
    e2e:
      - kind: train
        preset: tiny
        steps: 8
        timeout: 5m
";

#[test]
fn the_training_point_is_classified_on_the_runs_own_ceilings() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let store = dir.path().join("store");
    let o = run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &v["summary"]["bottlenecks"];
    assert_eq!(b["ceilings_source"]["peak"], "gemm.f32.128", "{b}");
    assert_eq!(b["ceilings_source"]["memory"], "memory.triad");
    assert!(b["ceilings"]["peak_flops"].as_f64().unwrap() > 0.0);
    let p = &b["points"][0];
    assert!(p["point"].as_str().unwrap().starts_with("e2e."), "{p}");
    // Eight tiny steps: the trainer's start-up (launch to its first step) can outweigh them
    // (0.69 s against 0.40 s of steps in a debug build on the development VM), which is then
    // the honest verdict; the steps are placed on the roofline either way.
    let kind = p["bottleneck"].as_str().unwrap();
    let share = p["control_plane"]["share"].as_f64().unwrap();
    assert!(share > 0.0 && share <= 1.0, "{p}");
    if share >= 0.5 {
        assert_eq!(kind, "control-plane", "{p}");
    } else {
        assert!(kind == "compute" || kind == "memory", "{p}");
    }
    // The trainer reports its FLOPs and bytes per step: the placement is there, with the run's
    // ridge point in the evidence.
    let placement = &p["placement"];
    assert!(placement["intensity"].as_f64().unwrap() > 0.0);
    assert!(placement["efficiency"].as_f64().unwrap() > 0.0);
    assert!(
        p["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("this run's micro layer")),
        "{p}"
    );
    // The same in the stored summary.json.
    let run_id = v["run_id"].as_str().unwrap();
    let stored: serde_json::Value = serde_json::from_slice(
        &std::fs::read(store.join("runs").join(run_id).join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stored["bottlenecks"], *b);
}
