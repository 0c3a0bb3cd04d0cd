//! `yardstick import genai-bench|aiperf|vllm-bench|guidellm`: real outputs of the tools
//! (tests/fixtures/import, made as its README says) stored as runs of serve points that compare,
//! gate and report read like any other run.

use crate::common::{self, yardstick};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(rel)
}

fn run_json(args: &[&str]) -> Value {
    let out = yardstick().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn import(store: &str, tool: &str, input: &Path) -> Value {
    let input = input.display().to_string();
    let v = run_json(&[
        "import",
        tool,
        &input,
        "--store",
        store,
        "--profile",
        "sim-2core",
        "--json",
    ]);
    crate::schema_cli::assert_conforms("import", &v);
    v
}

/// The aggregate of (point, metric, statistic) in an import's `--json`.
fn fig(v: &Value, point: &str, name: &str, statistic: &str) -> f64 {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["point"] == point && r["name"] == name && r["statistic"] == statistic)
        .unwrap_or_else(|| panic!("no {point} {name} {statistic} in {v}"))["value"]
        .as_f64()
        .unwrap()
}

fn has(v: &Value, point: &str, name: &str, statistic: &str) -> bool {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["point"] == point && r["name"] == name && r["statistic"] == statistic)
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
}

#[test]
fn import_serving_tools_map_real_outputs_onto_our_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.display().to_string();

    // genai-bench: the experiment folder, one point per concurrency, seconds -> ms.
    let g = import(&s, "genai-bench", &fixture("genai-bench-0.0.5"));
    assert_eq!(g["name"], "import-genai-bench");
    assert_eq!(g["files"].as_array().unwrap().len(), 3);
    let c4 = "import.genai-bench/D(50,20)/concurrency=4";
    assert_eq!(
        g["points"],
        serde_json::json!(["import.genai-bench/D(50,20)/concurrency=1", c4])
    );
    close(fig(&g, c4, "ttft_ms", "mean"), 55.25765837440607);
    close(fig(&g, c4, "tpot_ms", "p50"), 10.065911921150186);
    close(fig(&g, c4, "e2e_ms", "p99"), 256.94697438571895);
    close(
        fig(&g, c4, "request_throughput", "value"),
        15.943562917498962,
    );
    close(fig(&g, c4, "requests", "completed"), 48.0);
    assert!(!has(&g, c4, "itl_ms", "mean"));
    assert!(
        g["notes"][0]
            .as_str()
            .unwrap()
            .contains("from its request start"),
        "{g}"
    );
    let run_dir = store.join("runs").join(g["run_id"].as_str().unwrap());
    // Kept verbatim, hashed in the manifest, verifiable.
    assert_eq!(
        std::fs::read(run_dir.join("imports/experiment_metadata.json")).unwrap(),
        std::fs::read(fixture("genai-bench-0.0.5/experiment_metadata.json")).unwrap()
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["points"].as_array().unwrap().len(), 2);
    assert_eq!(summary["points"][1]["work"]["kind"], "serve");
    assert!(summary["notes"].as_array().unwrap().len() >= 2);
    assert!(
        yardstick()
            .args(["verify", g["run_id"].as_str().unwrap(), "--store", &s])
            .status()
            .unwrap()
            .success()
    );

    // AIPerf: its inter_token_latency is our TPOT, its inter_chunk_latency our ITL.
    let a = import(&s, "aiperf", &fixture("aiperf-0.13.0"));
    let p = "import.aiperf/D(50,20)/concurrency=4";
    assert_eq!(a["files"].as_array().unwrap().len(), 1);
    close(fig(&a, p, "ttft_ms", "mean"), 52.839771025);
    close(fig(&a, p, "tpot_ms", "mean"), 10.036476836842104);
    close(fig(&a, p, "itl_ms", "count"), 760.0);
    close(fig(&a, p, "e2e_ms", "p50"), 242.388904);
    close(
        fig(&a, p, "output_token_throughput", "value"),
        320.5169029941426,
    );
    close(fig(&a, p, "duration_s", "value"), 2.489332992);

    // vllm bench serve: ms already; median is p50.
    let v = import(
        &s,
        "vllm-bench",
        &fixture("vllm-bench-0.33.0/vllm-bench.json"),
    );
    let p = "import.vllm-bench/default/concurrency=4";
    close(fig(&v, p, "ttft_ms", "mean"), 53.69068235013401);
    close(fig(&v, p, "ttft_ms", "p50"), 53.549853997537866);
    close(fig(&v, p, "tpot_ms", "p99"), 10.059454137950333);
    close(fig(&v, p, "itl_ms", "mean"), 10.011542539464962);
    close(fig(&v, p, "e2e_ms", "mean"), 243.9099905999683);
    close(fig(&v, p, "requests", "completed"), 40.0);
    close(
        fig(&v, p, "request_throughput", "value"),
        16.373984591660122,
    );

    // GuideLLM: inter_token_latency_ms is stored as tpot_ms; time_per_output_token_ms is not.
    let gl = import(&s, "guidellm", &fixture("guidellm-0.8.1/benchmarks.json"));
    let p = "import.guidellm/D(50,20)/concurrency=4";
    close(fig(&gl, p, "ttft_ms", "mean"), 53.49898934364319);
    close(fig(&gl, p, "tpot_ms", "mean"), 9.972920543269108);
    close(fig(&gl, p, "requests", "completed"), 40.0);
    close(
        fig(&gl, p, "request_throughput", "value"),
        15.795649092362073,
    );
    assert!(
        gl["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["name"].as_str().unwrap().contains("time_per_output"))
    );
    assert!(
        gl["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("includes the first token"))
    );

    // Facts: one replicate and an aggregate equal to it, with no interval.
    let q = run_json(&[
        "query",
        &format!(
            "SELECT replicate, value, ci_lo FROM facts WHERE run_id = '{}' AND metric = \
             'ttft_ms' AND statistic = 'mean' ORDER BY replicate",
            v["run_id"].as_str().unwrap()
        ),
        "--store",
        &s,
        "--json",
    ]);
    let rows = q["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{q}");
    assert_eq!(rows[0][1], rows[1][1], "{q}");
    assert!(rows.iter().all(|r| r[2].is_null()), "{q}");
    common::assert_metrics_catalogued(&store);
    assert!(common::assert_figures_are_the_summaries(&store) > 0);
}

#[test]
fn import_serving_runs_compare_gate_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.display().to_string();
    // The same vLLM benchmark twice (with and without per-request detail): the same point.
    let a = import(
        &s,
        "vllm-bench",
        &fixture("vllm-bench-0.33.0/vllm-bench.json"),
    );
    let b = import(
        &s,
        "vllm-bench",
        &fixture("vllm-bench-0.33.0/vllm-bench-defaults.json"),
    );
    let (ra, rb) = (a["run_id"].as_str().unwrap(), b["run_id"].as_str().unwrap());
    let c = run_json(&["compare", ra, rb, "--store", &s, "--json"]);
    let m = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft_ms" && m["statistic"] == "p50")
        .unwrap_or_else(|| panic!("no ttft_ms p50 compared: {c}"));
    close(m["baseline"].as_f64().unwrap(), 53.549853997537866);
    close(m["candidate"].as_f64().unwrap(), 52.82071749752504);
    let out = yardstick()
        .args(["compare", ra, rb, "--store", &s])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ttft_ms"));

    // Across tools: nothing in common to compare, said, not an error.
    let g = import(&s, "guidellm", &fixture("guidellm-0.8.1/benchmarks.json"));
    let x = run_json(&[
        "compare",
        ra,
        g["run_id"].as_str().unwrap(),
        "--store",
        &s,
        "--json",
    ]);
    assert!(
        x["warnings"].to_string().contains("only in the baseline"),
        "{x}"
    );

    // The gate against a saved baseline of the same machine profile.
    assert!(
        yardstick()
            .args(["baseline", "save", ra, "--store", &s])
            .status()
            .unwrap()
            .success()
    );
    let gate = yardstick()
        .args(["gate", rb, "--baseline", "auto", "--store", &s, "--json"])
        .output()
        .unwrap();
    let gv: Value = serde_json::from_slice(&gate.stdout).unwrap_or_else(|e| {
        panic!(
            "gate --json: {e}: {}",
            String::from_utf8_lossy(&gate.stderr)
        )
    });
    assert!(gv["verdict"].is_string(), "{gv}");

    // The report: the table, and the HTML with its serving plots.
    let out = yardstick()
        .args(["report", rb, "--store", &s])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("ttft_ms p50") && table.contains("concurrency=4"),
        "{table}"
    );
    let html = dir.path().join("r.html");
    let out = yardstick()
        .args([
            "report",
            g["run_id"].as_str().unwrap(),
            "--store",
            &s,
            "--html",
        ])
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("includes the first token"),
        "notes in the report"
    );
}

#[test]
fn import_serving_wrong_input_is_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.display().to_string();
    let wrong = fixture("vllm-bench-0.33.0/vllm-bench.json");
    for tool in ["guidellm", "aiperf", "genai-bench"] {
        let out = yardstick()
            .args(["import", tool])
            .arg(&wrong)
            .args(["--store", &s])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tool}: {err}");
        assert!(err.contains("vllm-bench.json"), "{tool}: {err}");
        assert!(err.contains("give"), "{tool}: a hint: {err}");
    }
    // Not JSON at all, and a directory without the tool's file.
    let text = dir.path().join("out.txt");
    std::fs::write(&text, "hello").unwrap();
    let out = yardstick()
        .args(["import", "vllm-bench"])
        .arg(&text)
        .args(["--store", &s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("out.txt"));
    let out = yardstick()
        .args(["import", "aiperf"])
        .arg(fixture("guidellm-0.8.1"))
        .args(["--store", &s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("profile_export_aiperf.json"));
    assert!(
        !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().count() == 0
    );
}
