//! Join keys everywhere: a run under a Slurm job (its variables set as Slurm sets them) stores
//! the run, point, replicate, node and job in every row of its sample and telemetry files, and
//! `--log-format json` writes log lines that carry the same keys.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{Sim, files_under, layered_spec, yardstick};

#[test]
fn samples_telemetry_and_json_logs_carry_the_join_keys() {
    let sim = Sim::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        layered_spec(
            "join-keys",
            &format!(
                "    component:\n      - kind: serve\n        target: {{url: \"{}\", api: chat, model: m}}\n        scenarios: [\"D(16,8)\"]\n        load: {{mode: concurrency, values: [2]}}\n        stop: {{maxRequests: 12}}\n",
                sim.url
            ),
        ),
    )
    .unwrap();
    let store = dir.path().join("store");
    let out = yardstick()
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_STEP_ID", "7")
        .env("SLURMD_NODENAME", "gpu-node-3")
        .env_remove("POD_NAME")
        .args(["--log-format", "json", "run", "--json"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let run_id = crate::common::json(&out)["run_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Every line on stderr is a JSON object with the keys.
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(lines.len() >= 4, "{stderr}");
    for l in &lines {
        assert!(l["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{l}");
        assert!(
            ["info", "warning"].contains(&l["level"].as_str().unwrap()),
            "{l}"
        );
        assert_eq!(l["node"], "gpu-node-3", "{l}");
        assert_eq!(l["slurm_job_id"], "4242", "{l}");
        assert_eq!(l["benchmark"], "join-keys", "{l}");
        assert!(l.get("k8s_pod").is_none(), "{l}");
    }
    let steps: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"].as_str().unwrap().starts_with('['))
        .collect();
    let replicates: BTreeSet<u64> = steps
        .iter()
        .map(|l| {
            assert_eq!(l["run_id"], run_id.as_str(), "{l}");
            assert_eq!(l["point"], "component.0.serve/D(16,8)/concurrency=2");
            l["replicate"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(replicates, [0, 1, 2].into());

    // Every row of every sample file and of the telemetry has them too.
    let files = files_under(&store.join("runs").join(&run_id), "parquet");
    let (mut samples, mut telemetry) = (0, 0);
    for f in &files {
        let rows = yardstick_store::samples::read_rows(std::fs::read(f).unwrap()).unwrap();
        assert!(!rows.is_empty(), "{}", f.display());
        let is_telemetry = f.to_string_lossy().contains("/telemetry/");
        for r in &rows {
            assert_eq!(r["run_id"], run_id.as_str(), "{r}");
            assert_eq!(r["node"], "gpu-node-3", "{r}");
            assert_eq!(r["slurm_job_id"], "4242", "{r}");
            assert_eq!(r["slurm_step_id"], "7", "{r}");
            assert!(r["k8s_pod"].is_null(), "{r}");
            if is_telemetry {
                assert_eq!(r["benchmark"], "join-keys", "{r}");
                // No GPU here: every row is the host's.
                assert!(r["gpu_uuid"].is_null(), "{r}");
            } else if f.ends_with("server-metrics.parquet") {
                // The server's metrics, one row per scrape.
                assert!(r["running"].is_number(), "{r}");
                assert!(r["replicate"].is_number(), "{r}");
            } else {
                assert!(
                    r["request_id"].is_string() && r["trace_id"].is_string(),
                    "{r}"
                );
                assert!(r["replicate"].is_number(), "{r}");
            }
        }
        if is_telemetry {
            telemetry += rows.len();
        } else {
            samples += rows.len();
        }
    }
    assert!(samples >= 36, "{samples} sample rows in {files:?}");
    assert!(telemetry > 0, "no telemetry in {files:?}");
}
