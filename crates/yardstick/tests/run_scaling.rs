//! `yardstick run` of a command swept over world sizes: the summary has the scaling efficiency
//! and Amdahl's fit across the sizes, as `bench exec --world-sizes` reports them.

use std::process::Command;

const SPEC: &str = r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: scaling-test}
spec:
  mode: exploratory
  workload:
    model: fake
    precision: fp32
    sequenceLengths: 16
    batching: static
    concurrency: 1
    dataset: {kind: synthetic, seed: 1}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {steps: 1}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  layers:
    e2e:
      - kind: command
        command: [sh, -c, "n={worldSize}; s=$((n == 1 ? 8 : 14)); for i in 0 1 2 3 4 5; do echo \"{\\\"step\\\":$i,\\\"step_time_s\\\":0.1,\\\"samples\\\":$s}\" >> \"$YARDSTICK_METRICS\"; done"]
        worldSizes: [1, 2]
        timeout: 1m
"#;

#[test]
fn world_sizes_of_a_command_give_the_scaling_efficiency() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .env_remove("YARDSTICK_STORE")
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"]["scaling"][0];
    assert_eq!(s["metric"], "samples_per_s", "{}", v["summary"]);
    assert_eq!(s["layer"], 0);
    // 80 samples/s at N=1, 140 at N=2: 140 / (2 * 80) = 87.5 %.
    assert!((s["points"][0]["throughput"].as_f64().unwrap() - 80.0).abs() < 1e-9);
    let eff = s["points"][1]["efficiency"].as_f64().unwrap();
    assert!((eff - 0.875).abs() < 1e-9, "{s}");
}
