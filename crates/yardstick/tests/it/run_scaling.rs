//! `yardstick run` of a command swept over world sizes: the summary has the scaling efficiency
//! and Amdahl's fit across the sizes, as `bench exec --world-sizes` reports them.

use crate::common::{command_spec, run_spec};

/// Eight samples per 0.1 s step at world size 1, fourteen at world size 2.
const COMMAND: &str = r#"[sh, -c, "n={worldSize}; s=$((n == 1 ? 8 : 14)); for i in 0 1 2 3 4 5; do echo \"{\\\"step\\\":$i,\\\"step_time_s\\\":0.1,\\\"samples\\\":$s}\" >> \"$YARDSTICK_METRICS\"; done"]"#;

#[test]
fn world_sizes_of_a_command_give_the_scaling_efficiency() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        command_spec("scaling-test", COMMAND, &["worldSizes: [1, 2]"]),
    )
    .unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
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
