//! `yardstick baseline`, `compare` and `gate` driven through the built binary on real runs
//! against the simulator: A/A must not FAIL; a slower simulator (TTFT 40 → 80 ms) must FAIL with
//! exit 3, also against an exported baseline file; replacing a baseline needs --force. (The machine-profile refusal is unit-tested on the
//! library function: faking a second machine by editing env.json would not be honest.)

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::Sim;

/// A simulator whose time to first token is `ttft_ms`.
fn sim_with_ttft(ttft_ms: u32) -> Sim {
    Sim::start(&["--ttft-ms", &ttft_ms.to_string()])
}

fn yardstick() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env_remove("YARDSTICK_STORE").env("NO_COLOR", "1");
    c
}

/// A tiny gating spec (realism mode: exploratory specs never gate): one serving point, three
/// replicates of 12 measured requests.
fn spec(url: &str) -> String {
    spec_in_mode(url, "realism")
}

fn spec_in_mode(url: &str, mode: &str) -> String {
    format!(
        r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: gate-tiny
spec:
  mode: {mode}
  backgroundLoad: {{record: true, description: "test machine"}}
  workload:
    model: sim-llama
    precision: fp32
    sequenceLengths: "D(16,8)"
    batching: continuous
    concurrency: [2]
    dataset: {{kind: synthetic, seed: 42}}
    correctness: {{policy: none}}
  trials:
    replicates: 3
    warmup: {{requests: 2}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
    order: interleaved
  layers:
    component:
      - kind: serve
        target: {{url: "{url}", api: chat, model: sim-llama}}
        scenarios: ["D(16,8)"]
        load: {{mode: concurrency, values: [2]}}
        stop: {{maxRequests: 12, maxDuration: 10s}}
  provenance:
    signing: off
"#
    )
}

/// Runs a spec into `store` and returns the run id.
fn run(store: &Path, name: &str, url: &str) -> String {
    run_spec(store, name, &spec(url))
}

fn run_spec(store: &Path, name: &str, text: &str) -> String {
    let path = store.parent().unwrap().join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    let out = yardstick()
        .args([
            "run",
            path.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ])
        .args(["--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ULIDs sort by time; the newest is the run just made.
    let mut names: Vec<String> = std::fs::read_dir(store.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.pop().unwrap()
}

fn cmd(store: &Path, args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .args(["--store", store.to_str().unwrap()])
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn aa_runs_do_not_fail_and_baselines_need_force_to_replace() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = run(&store, "a", "sim");
    let b = run(&store, "b", "sim");
    assert_ne!(a, b);

    // No baseline yet: `--baseline auto` is invalid input.
    let out = cmd(&store, &["gate", &b, "--baseline", "auto"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no baseline stored"));

    let out = cmd(&store, &["baseline", "save", &a]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Replacing it with another run needs --force.
    let out = cmd(&store, &["baseline", "save", &b]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    let listed = json(&cmd(&store, &["baseline", "list", "--json"]));
    assert_eq!(listed["baselines"][0]["run_id"], a.as_str());
    let shown = json(&cmd(
        &store,
        &["baseline", "show", "--name", "gate-tiny", "--json"],
    ));
    assert_eq!(shown["baselines"][0]["run_id"], a.as_str());

    // compare: identical specs, and ratios with CIs from 3 replicates each.
    let out = cmd(&store, &["compare", &a, &b, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let c = json(&out);
    assert_eq!(c["spec_diffs"].as_array().unwrap().len(), 0, "{c}");
    let metrics = c["metrics"].as_array().unwrap();
    let ttft = metrics
        .iter()
        .find(|m| m["metric"] == "ttft_ms" && m["statistic"] == "p50")
        .expect("ttft p50 compared");
    assert_eq!(ttft["baseline_replicates"].as_array().unwrap().len(), 3);
    assert!(ttft["ci_lo"].as_f64().unwrap() <= ttft["ci_hi"].as_f64().unwrap());
    assert!(ttft["mann_whitney_p"].as_f64().is_some());

    // A/A gate: never FAIL (PASS, or INCONCLUSIVE on a noisy machine).
    let out = cmd(&store, &["gate", &b, "--baseline", "auto", "--json"]);
    let g = json(&out);
    assert_ne!(g["verdict"], "FAIL", "{g}");
    assert!(matches!(out.status.code(), Some(0) | Some(4)), "{out:?}");
    assert_eq!(g["exploratory"], false);

    // --force replaces.
    let out = cmd(&store, &["baseline", "save", &b, "--force"]);
    assert_eq!(out.status.code(), Some(0));
    let listed = json(&cmd(&store, &["baseline", "list", "--json"]));
    assert_eq!(listed["baselines"][0]["run_id"], b.as_str());

    // An unknown run is invalid input.
    let out = cmd(&store, &["gate", "NOPE", "--baseline", &a]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_slower_simulator_fails_the_gate_with_exit_3() {
    let fast = sim_with_ttft(40);
    let slow = sim_with_ttft(80);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = run(&store, "a", &fast.url);
    let b = run(&store, "b", &slow.url);
    drop((fast, slow));

    // compare names the one field that moved: the target URL.
    let c = json(&cmd(&store, &["compare", &a, &b, "--json"]));
    let diffs: Vec<&str> = c["spec_diffs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].ends_with("target.url"), "{diffs:?}");
    assert!(
        c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w.as_str().unwrap().contains("more than one variable")),
        "{c}"
    );

    let out = cmd(&store, &["baseline", "save", &a]);
    assert_eq!(out.status.code(), Some(0));
    let out = cmd(&store, &["gate", &b, "--json"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let g = json(&out);
    assert_eq!(g["verdict"], "FAIL");
    let ttft = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft_ms")
        .expect("ttft gated");
    assert_eq!(ttft["verdict"], "FAIL", "{ttft}");
    assert!(ttft["ci_lo"].as_f64().unwrap() > 1.05, "{ttft}");

    // The human output names the failing metric too.
    let out = cmd(&store, &["gate", &b, "--baseline", &a]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ttft_ms p50") && text.contains("FAIL"),
        "{text}"
    );
    assert!(text.contains("gate: FAIL"), "{text}");

    // The same verdict from an exported baseline file (baselines kept in git).
    let dir = tmp.path().join("baselines");
    let out = cmd(
        &store,
        &[
            "baseline",
            "export",
            "--dir",
            dir.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = json(&out)["files"].clone();
    let file = files[0].as_str().unwrap().to_string();
    assert!(
        file.ends_with(".json") && Path::new(&file).is_file(),
        "{files}"
    );
    let out = cmd(&store, &["gate", &b, "--baseline", &file, "--json"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(json(&out)["comparison"]["baseline_run"], a.as_str());
}

#[test]
fn exploratory_specs_are_reported_not_enforced() {
    let fast = sim_with_ttft(40);
    let slow = sim_with_ttft(80);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = run_spec(&store, "a", &spec_in_mode(&fast.url, "exploratory"));
    let b = run_spec(&store, "b", &spec_in_mode(&slow.url, "exploratory"));
    drop((fast, slow));
    let out = cmd(&store, &["gate", &b, "--baseline", &a, "--json"]);
    // The regression is found and reported, but an exploratory spec never gates: exit 0.
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let g = json(&out);
    assert_eq!(g["verdict"], "FAIL");
    assert_eq!(g["exploratory"], true);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not enforced"));
}
