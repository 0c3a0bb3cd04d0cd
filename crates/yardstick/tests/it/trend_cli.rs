//! `yardstick trend --changes`: a benchmark's history in a real store, where the server under
//! test got slower half-way (the simulator's TTFT doubled), has exactly one change point, at the
//! first slow run, with its size.

use crate::common::{json, yardstick};

fn spec(ttft_ms: u32) -> String {
    format!(
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: trend-sim}}
spec:
  mode: exploratory
  workload: {{model: m, precision: bf16, sequenceLengths: \"D(16,4)\", batching: continuous, concurrency: 1, dataset: {{kind: synthetic, seed: 1}}, correctness: {{policy: none}}}}
  trials: {{replicates: 3, warmup: {{requests: 1}}, confidenceLevel: 0.95, outlierPolicy: none}}
  server:
    command: [\"{bin}\", sim, --port, \"{{port}}\", --ttft-ms, \"{ttft_ms}\", --itl-ms, \"1\"]
    ready: {{http: \"http://127.0.0.1:{{port}}/health\", timeout: 20s}}
  layers:
    component:
      - kind: serve
        target: {{url: \"http://127.0.0.1:{{port}}\", api: chat, model: m}}
        scenarios: [\"D(16,4)\"]
        load: {{mode: concurrency, values: [1]}}
        stop: {{maxRequests: 8}}
",
        bin = env!("CARGO_BIN_EXE_yardstick")
    )
}

#[test]
fn a_history_with_a_slowdown_has_one_change_point_at_the_first_slow_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = dir.path().join("spec.yaml");
    let mut run_ids = Vec::new();
    for i in 0..12 {
        std::fs::write(&path, spec(if i < 6 { 20 } else { 40 })).unwrap();
        let o = yardstick()
            .args(["run", "--json", "-q"])
            .arg(&path)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        run_ids.push(json(&o)["run_id"].as_str().unwrap().to_string());
    }
    let o = yardstick()
        .args([
            "trend",
            "trend-sim",
            "--metric",
            "ttft_ms",
            "--statistic",
            "p50",
            "--changes",
            "--json",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t = json(&o);
    let series = t["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{t}");
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 12);
    let changes = series[0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let c = &changes[0];
    assert_eq!(c["run_id"], run_ids[6].as_str(), "{c}");
    assert_eq!(c["previous_run"], run_ids[5].as_str(), "{c}");
    assert_eq!(c["direction"], "worse");
    // TTFT doubled: about +20 ms, and the interval says so.
    let (lo, hi) = (c["ci_lo"].as_f64().unwrap(), c["ci_hi"].as_f64().unwrap());
    assert!(lo > 10.0 && hi < 30.0, "{c}");
    assert!(c["relative_pct"].as_f64().unwrap() > 60.0, "{c}");
    assert!(c["p_value"].as_f64().unwrap() <= 0.05);

    // As people read it: the change line sits before the first slow run.
    let o = yardstick()
        .args([
            "trend",
            "trend-sim",
            "--metric",
            "ttft_ms",
            "--statistic",
            "p50",
            "--changes",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let change = text
        .find("── worse change")
        .unwrap_or_else(|| panic!("{text}"));
    let first_slow = text.find(&run_ids[6]).unwrap();
    let last_fast = text.find(&run_ids[5]).unwrap();
    assert!(last_fast < change && change < first_slow, "{text}");

    // A metric that is not in the catalogue, and a benchmark with no runs, are the user's
    // mistakes (exit 2).
    for args in [
        vec!["trend", "trend-sim", "--metric", "speediness"],
        vec!["trend", "no-such-benchmark"],
    ] {
        let o = yardstick()
            .args(&args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
