//! A workload's own metrics through `yardstick run`: a declared one is stored as facts
//! `custom.NAME` in its declared unit, an undeclared one without a unit, and a declaration that
//! nothing reports is a warning of the replicate.

use crate::common::{command_spec, run_spec};

/// Declares `val_acc` (%, higher is better) and `never`, then four steps with `val_acc` 70..73
/// and an undeclared `lr`.
const COMMAND: &str = r#"[sh, -c, "m=$YARDSTICK_METRICS; echo '{\"declare\":\"val_acc\",\"unit\":\"%\",\"direction\":\"higher_is_better\"}' >> $m; echo '{\"declare\":\"never\"}' >> $m; for i in 0 1 2 3; do echo \"{\\\"step\\\":$i,\\\"step_time_s\\\":0.01,\\\"val_acc\\\":7$i,\\\"lr\\\":0.5}\" >> $m; done"]"#;

#[test]
fn custom_metrics_become_facts_in_their_declared_unit() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, command_spec("custom-metrics", COMMAND, &[])).unwrap();
    let store = dir.path().join("store");
    let o = run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["summary"]["points"][0]["metrics"];
    assert_eq!(m["custom.val_acc"]["last"]["mean"], 73.0, "{m}");
    assert_eq!(m["custom.val_acc"]["mean"]["mean"], 71.5, "{m}");
    assert_eq!(m["custom.val_acc"]["last"]["unit"], "%");
    assert_eq!(m["custom.lr"]["p50"]["mean"], 0.5);
    assert_eq!(m["custom.lr"]["p50"]["unit"], "");

    // The warehouse has the same facts, per replicate and aggregated.
    let db = rusqlite::Connection::open(store.join("yardstick.db")).unwrap();
    let units: Vec<(String, String, i64)> = db
        .prepare(
            "SELECT metric, unit, COUNT(*) FROM facts WHERE metric LIKE 'custom.%' \
             GROUP BY metric, unit ORDER BY metric",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // 3 statistics × (3 replicates + the aggregate).
    assert_eq!(
        units,
        [
            ("custom.lr".to_string(), String::new(), 12),
            ("custom.val_acc".to_string(), "%".to_string(), 12)
        ]
    );

    // Each replicate's result keeps the declaration and warns about the unused one.
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    let r0: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run_dir.join("results/e2e.0.command/r0.json")).unwrap(),
    )
    .unwrap();
    let s = &r0["summary"];
    assert_eq!(
        s["custom_metrics"]["val_acc"]["direction"],
        "higher_is_better"
    );
    assert_eq!(s["custom_metrics"]["lr"]["direction"], "unknown");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("`never` was declared (line 2) but never reported"),
        "{warnings}"
    );
}
