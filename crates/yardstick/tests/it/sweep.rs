//! `spec.server` and `spec.sweep`: yardstick starts the server under test for each treatment
//! (here the real `yardstick sim`, as a child process on a port yardstick picks), measures it,
//! stops it, and keeps its output; a server that cannot start makes its treatment infeasible,
//! not the run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{alive, assert_validate_refuses, files_under, json, run_spec, yardstick};

/// A sweep spec whose server is `command` (a YAML flow list) and whose factors are `factors`
/// (a YAML flow mapping): one serve layer at concurrency 4 on the server's `{port}`.
fn sweep_spec(command: &str, factors: &str, replicates: u32) -> String {
    format!(
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: sweep-sim}}
spec:
  mode: exploratory
  workload: {{model: m, precision: bf16, sequenceLengths: \"D(32,16)\", batching: continuous, concurrency: 4, dataset: {{kind: synthetic, seed: 1}}, correctness: {{policy: none}}}}
  trials: {{replicates: {replicates}, warmup: {{requests: 2}}, confidenceLevel: 0.95, outlierPolicy: none}}
  server:
    command: {command}
    ready: {{http: \"http://127.0.0.1:{{port}}/health\", timeout: 20s}}
    stop: {{grace: 5s}}
  sweep:
    factors: {factors}
  layers:
    component:
      - kind: serve
        target: {{url: \"http://127.0.0.1:{{port}}\", api: chat, model: m}}
        scenarios: [\"D(32,16)\"]
        load: {{mode: concurrency, values: [4]}}
        stop: {{maxRequests: 30}}
"
    )
}

fn sim_command(extra: &str) -> String {
    format!(
        "[\"{}\", sim, --port, \"{{port}}\", --max-running, \"{{slots}}\", --ttft-ms, \"20\", --itl-ms, \"2\"{extra}]",
        env!("CARGO_BIN_EXE_yardstick")
    )
}

/// Every `server.json` a run stored.
fn starts(run_dir: &Path) -> Vec<serde_json::Value> {
    files_under(&run_dir.join("server"), "json")
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

fn mean(v: &serde_json::Value, point: &str, metric: &str, statistic: &str) -> f64 {
    v["summary"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == point)
        .unwrap_or_else(|| panic!("no point {point} in {v}"))["metrics"][metric][statistic]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {metric} {statistic} of {point}"))
}

#[test]
fn a_sweep_starts_the_server_for_each_treatment_and_keeps_infeasible_ones_as_answers() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, sweep_spec(&sim_command(""), "{slots: [1, 4, 0]}", 3)).unwrap();
    let store = dir.path().join("store");
    let o = run_spec(&spec, &store, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    // The infeasible treatment is an answer of the sweep: the run succeeds.
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v = json(&o);
    let sweep = v["summary"]["sweep"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(sweep.len(), 3, "{sweep:?}");
    let by_id = |id: &str| sweep.iter().find(|t| t["id"] == id).unwrap().clone();
    let (one, four, zero) = (by_id("slots=1"), by_id("slots=4"), by_id("slots=0"));
    assert_eq!(one["status"], "measured");
    assert_eq!(four["status"], "measured");
    assert_eq!(zero["status"], "infeasible");
    // The reason carries the server's own words (the tail of its output).
    let reason = zero["reason"].as_str().unwrap();
    assert!(
        reason.contains("exited with status 2")
            && reason.contains("max running must be at least 1"),
        "{reason}"
    );
    // Interleaved replicates restart the server when the treatment changes: once per round.
    assert_eq!(one["time_to_ready_s"].as_array().unwrap().len(), 3, "{one}");
    assert!(one["time_to_ready_s"][0].as_f64().unwrap() > 0.0);
    // The points carry their treatment, and the factor changes what the server does: four
    // slots serve four streams about four times as fast as one.
    let p1 = "component.0.serve/D(32,16)/concurrency=4/slots=1";
    let p4 = "component.0.serve/D(32,16)/concurrency=4/slots=4";
    assert_eq!(one["points"], serde_json::json!([p1]));
    let (t1, t4) = (
        mean(&v, p1, "request_throughput", "value"),
        mean(&v, p4, "request_throughput", "value"),
    );
    assert!(t4 > 2.5 * t1, "slots=4 {t4} req/s vs slots=1 {t1} req/s");
    assert!(mean(&v, p1, "ttft_ms", "p50") > 2.0 * mean(&v, p4, "ttft_ms", "p50"));
    // Each start is stored with its command (port filled in) and output; no server outlives
    // the run.
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    let starts = starts(&run_dir);
    assert_eq!(starts.len(), 3 + 3 + 1, "{starts:?}");
    for s in &starts {
        let argv: Vec<&str> = s["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[3], s["port"].as_u64().unwrap().to_string(), "{s}");
        assert!(
            !argv.contains(&"{port}") && !argv.contains(&"{slots}"),
            "{s}"
        );
        assert!(!alive(&s["pid"].to_string()), "server {s} outlived the run");
    }
    let zero_start = starts.iter().find(|s| s["treatment"] == "slots=0").unwrap();
    assert!(zero_start["infeasible"].as_str().is_some(), "{zero_start}");
    let stderr_logs: Vec<_> = files_under(&run_dir.join("server"), "log")
        .into_iter()
        .filter(|p| p.ends_with("stderr.log"))
        .collect();
    assert!(
        stderr_logs.iter().any(|p| std::fs::read_to_string(p)
            .unwrap()
            .contains("max running must be at least 1")),
        "{stderr_logs:?}"
    );
    // The stored run verifies (every server file is sealed in its manifest).
    let verify = yardstick()
        .args(["verify", "--json", v["run_id"].as_str().unwrap(), "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_run_whose_every_treatment_is_infeasible_measured_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, sweep_spec(&sim_command(""), "{slots: [0]}", 3)).unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_server_that_is_not_found_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        sweep_spec(
            "[no-such-server-binary, --port, \"{port}\", \"{slots}\"]",
            "{slots: [1, 2]}",
            3,
        ),
    )
    .unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .args(["run", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`no-such-server-binary` is not found on PATH"),
        "{err}"
    );
    assert!(!store.join("runs").exists() || files_under(&store.join("runs"), "json").is_empty());
}

#[test]
fn validate_refuses_factors_and_placeholders_that_do_not_meet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    let spec = sweep_spec(&sim_command(""), "{slots: [1, 4]}", 3);
    // The spec itself is valid.
    std::fs::write(&path, &spec).unwrap();
    let ok = yardstick().args(["validate"]).arg(&path).output().unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_validate_refuses(
        &path,
        &spec,
        &[
            (
                "{slots: [1, 4]}",
                "{slots: [1, 4], unused: [a, b]}",
                "factor `unused` is used nowhere",
            ),
            (
                "{slots: [1, 4]}",
                "{slots: []}",
                "factor `slots` has no levels",
            ),
            (
                "{slots: [1, 4]}",
                "{slots: [1, 1]}",
                "lists level `1` twice",
            ),
            (
                "model: m}",
                "model: \"{model}\"}",
                "`{model}` names no factor of `spec.sweep.factors`",
            ),
            (
                "http://127.0.0.1:{port}/health",
                "https://127.0.0.1:{port}/health",
                "`ready.http` must be an http:// URL",
            ),
            (
                "{slots: [1, 4]}",
                "{slots: [1, 4]}\n    design: random\n    samples: 9",
                "the grid has only 2",
            ),
            (
                "{slots: [1, 4]}",
                "{slots: [1, 4], port: [1]}",
                "`port` cannot be a factor",
            ),
            (
                "{slots: [1, 4]}",
                "{slots: [1, 4], host: [a]}",
                "`host` cannot be a factor",
            ),
        ],
    );
    // On Slurm the server runs inside the allocation, on Kubernetes in pod 0; `{host}` is
    // where clients reach it.
    for execution in [
        "{engine: slurm, nodes: 1, tasksPerNode: 2, timeLimit: 10m}",
        "{engine: kubernetes, image: example/yardstick:1, nodes: 2}",
    ] {
        let elsewhere = spec
            .replace(
                "  server:\n",
                &format!("  execution: {execution}\n  server:\n"),
            )
            .replace(
                "url: \"http://127.0.0.1:{port}\"",
                "url: \"http://{host}:{port}\"",
            );
        std::fs::write(&path, &elsewhere).unwrap();
        let ok = yardstick().args(["validate"]).arg(&path).output().unwrap();
        assert_eq!(
            ok.status.code(),
            Some(0),
            "{execution}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }
    // `{port}` without a server to give it.
    let no_server = spec.split("  server:").next().unwrap().to_string()
        + &spec[spec.find("  layers:").unwrap()..];
    assert_validate_refuses(
        &path,
        &no_server,
        &[(
            "api: chat",
            "api: chat",
            "`{port}` is the port of the server under test, and the spec starts none",
        )],
    );
    assert_validate_refuses(
        &path,
        &no_server,
        &[(
            "http://127.0.0.1:{port}\", api",
            "http://{host}:8000\", api",
            "`{host}` is the host of the server under test, and the spec starts none",
        )],
    );
}

#[test]
fn an_interrupted_sweep_resumes_where_it_stopped_and_leaves_no_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("started-4");
    // The slots=4 server marks its first start, so the test interrupts the run while it runs.
    let command = format!(
        "[sh, -c, \"if [ {{slots}} = 4 ]; then touch {mark}; fi; exec {bin} sim --port {{port}} --max-running {{slots}} --ttft-ms 20 --itl-ms 2\"]",
        mark = mark.display(),
        bin = env!("CARGO_BIN_EXE_yardstick"),
    );
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, sweep_spec(&command, "{slots: [1, 4]}", 3)).unwrap();
    let store = dir.path().join("store");
    let child = yardstick()
        .args(["run", "--json"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !mark.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the slots=4 server never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let first = json(&o);
    assert_eq!(first["status"], "incomplete", "{first}");
    let run_id = first["run_id"].as_str().unwrap().to_string();
    let run_dir = store.join("runs").join(&run_id);
    for s in starts(&run_dir) {
        assert!(
            !alive(&s["pid"].to_string()),
            "server {s} outlived the interrupted run"
        );
    }
    let done_before: Vec<_> = files_under(&run_dir.join("results"), "json");
    assert!(
        !done_before.is_empty(),
        "slots=1 r0 finished before the interruption"
    );

    let resumed = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .args(["--resume", &run_id])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "{err}");
    let v = json(&resumed);
    assert_eq!(v["status"], "complete", "{v}");
    assert_eq!(files_under(&run_dir.join("results"), "json").len(), 6);
    // What finished before the interruption was kept, not measured again.
    for p in &done_before {
        assert!(p.exists(), "{p:?}");
    }
    let sweep = v["summary"]["sweep"].as_array().unwrap();
    assert!(sweep.iter().all(|t| t["status"] == "measured"), "{sweep:?}");
}

#[test]
fn the_sweep_example_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sweep.yaml");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_yardstick")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = yardstick()
        .env("PATH", path)
        .args(["run", "--json", "-q"])
        .arg(&example)
        .arg("--store")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let sweep = v["summary"]["sweep"].as_array().unwrap();
    let ids: Vec<&str> = sweep.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["slots=1", "slots=2", "slots=4"]);
    assert!(sweep.iter().all(|t| t["status"] == "measured"), "{sweep:?}");
    // More slots, more throughput: each treatment measured its own server.
    let tput = |slots: u32| {
        mean(
            &v,
            &format!("component.0.serve/D(64,32)/concurrency=4/slots={slots}"),
            "request_throughput",
            "value",
        )
    };
    assert!(
        tput(2) > 1.5 * tput(1) && tput(4) > 1.5 * tput(2),
        "{} {} {}",
        tput(1),
        tput(2),
        tput(4)
    );
}

/// A tuned spec over the simulator: slots × inter-token latency, where the best treatment is
/// known (the most slots, the fastest tokens).
fn tune_spec(factors: &str, tune: &str) -> String {
    let command = format!(
        "[\"{}\", sim, --port, \"{{port}}\", --max-running, \"{{slots}}\", --ttft-ms, \"10\", --itl-ms, \"{{itl}}\"]",
        env!("CARGO_BIN_EXE_yardstick")
    );
    sweep_spec(&command, factors, 3)
        .replace("concurrency: 4}", "concurrency: 8}")
        .replace("values: [4]", "values: [8]")
        .replace("maxRequests: 30", "maxRequests: 80")
        .replace("  layers:\n", &format!("  tune: {tune}\n  layers:\n"))
}

fn run_tuned(spec: &str) -> (serde_json::Value, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    let store = dir.path().join("store");
    let o = run_spec(&path, &store, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (json(&o), store, dir)
}

#[test]
fn successive_halving_finds_the_best_treatment_and_stores_the_answer() {
    let (v, store, _dir) = run_tuned(&tune_spec(
        "{slots: [1, 2, 4, 8], itl: [1, 2, 4]}",
        "{maximize: request_throughput, budget: 6, strategy: halving}",
    ));
    let t = &v["tune"];
    assert_eq!(t["space"], 12, "{t}");
    // Six probed in the first rung, at a quarter of the requests, one replicate each.
    let probes = t["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 6, "{t}");
    assert!(probes.iter().all(|p| p["fidelity"] == 0.25));
    let best = &t["best"];
    assert_eq!(best["treatment"], "itl=1/slots=8", "{t}");
    let [lo, hi] = [
        best["ci"][0].as_f64().unwrap(),
        best["ci"][1].as_f64().unwrap(),
    ];
    let mean = best["objective"].as_f64().unwrap();
    assert!(lo <= mean && mean <= hi && lo > 0.0, "{best}");
    // The final run is the benchmark's own run: the two finalists, three replicates each.
    assert_eq!(t["final_run"], v["run_id"]);
    assert_eq!(t["finalists"].as_array().unwrap().len(), 2);
    assert_eq!(t["significantly_better"], true, "{t}");
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("tune.json")).unwrap()).unwrap();
    assert_eq!(stored["best"], t["best"]);
    // best.yaml: the server's exact command line, and a spec that validates as it is with each
    // factor fixed at the best level.
    let best_yaml = std::fs::read_to_string(run_dir.join("best.yaml")).unwrap();
    assert!(
        best_yaml.contains("--max-running 8 --ttft-ms 10 --itl-ms 1"),
        "{best_yaml}"
    );
    let check = yardstick()
        .arg("validate")
        .arg(run_dir.join("best.yaml"))
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let fixed: serde_json::Value = serde_json::from_str(
        &best_yaml
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    assert_eq!(
        fixed["spec"]["sweep"]["factors"]["slots"],
        serde_json::json!([8])
    );
    assert!(fixed["spec"]["tune"].is_null());
    // The probe runs are stored under their own name, so they never pass for the benchmark's.
    for id in t["probe_runs"].as_array().unwrap() {
        let spec = std::fs::read_to_string(
            store
                .join("runs")
                .join(id.as_str().unwrap())
                .join("spec.yaml"),
        )
        .unwrap();
        assert!(spec.contains("\"sweep-sim.probe\""), "{spec}");
    }
}

#[test]
fn tpe_learns_around_infeasible_treatments_and_constraints() {
    let (v, _store, _dir) = run_tuned(
        &tune_spec(
            "{slots: [0, 1, 8], itl: [1, 4]}",
            "{maximize: request_throughput, budget: 6, strategy: tpe, seed: 3, subjectTo: [{metric: ttft_ms, statistic: p50, max: 50}]}",
        )
        .replace("sweep-sim", "tune-sim"),
    );
    let t = &v["tune"];
    let probes = t["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 6, "{t}");
    // Every treatment probed once: TPE never asks twice for what it measured.
    let mut ids: Vec<&str> = probes
        .iter()
        .map(|p| p["treatment"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "{ids:?}");
    for p in probes {
        let slots = p["values"]["slots"].as_str().unwrap();
        match slots {
            // No server: infeasible, with the server's words.
            "0" => {
                assert_eq!(p["feasible"], false, "{p}");
                assert!(p["reason"].as_str().unwrap().contains("max running"), "{p}");
            }
            // One slot, eight streams: requests queue, TTFT far above 50 ms.
            "1" => {
                assert_eq!(p["feasible"], false, "{p}");
                assert!(
                    p["reason"].as_str().unwrap().contains("above its bound 50"),
                    "{p}"
                );
            }
            _ => assert_eq!(p["feasible"], true, "{p}"),
        }
    }
    assert_eq!(t["best"]["treatment"], "itl=1/slots=8", "{t}");
}

#[test]
fn a_second_objective_ends_with_the_pareto_front_of_the_trade() {
    // More slots serve more requests per second, but each slot slows every token (the
    // simulator's --itl-slowdown): throughput against time per output token is a real trade.
    // The slower tokens (itl=4) lose on both at every slot count, so none is on the front.
    let spec = tune_spec(
        "{slots: [1, 2, 8], itl: [1, 4]}",
        "{maximize: request_throughput, tradeOff: {minimize: tpot_ms, statistic: p50}, budget: 6, strategy: tpe, seed: 1}",
    )
    .replace("\"{itl}\"]", "\"{itl}\", --itl-slowdown, \"0.5\"]")
    .replace("sweep-sim", "pareto-sim");
    let (v, store, _dir) = run_tuned(&spec);
    let t = &v["tune"];
    assert_eq!(t["settings"]["trade_off"]["metric"], "tpot_ms", "{t}");
    let probes = t["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 6, "{t}");
    assert!(probes.iter().all(|p| p["second"].as_f64().is_some()), "{t}");
    // The final run measured the probes' front: the three fast-token treatments.
    let finalists: Vec<&str> = t["finalists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["treatment"].as_str().unwrap())
        .collect();
    assert_eq!(finalists.len(), 3, "{t}");
    assert!(finalists.iter().all(|f| f.starts_with("itl=1/")), "{t}");
    // As the final run measured them, best throughput first: each is on the front, none
    // dominated by another on both means.
    assert_eq!(
        t["pareto_front"],
        serde_json::json!(["itl=1/slots=8", "itl=1/slots=2", "itl=1/slots=1"]),
        "{t}"
    );
    let pairs: Vec<(f64, f64)> = t["finalists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["objective"].as_f64().unwrap(),
                f["second"].as_f64().unwrap(),
            )
        })
        .collect();
    for (i, a) in pairs.iter().enumerate() {
        for (j, b) in pairs.iter().enumerate() {
            assert!(
                i == j || !(b.0 >= a.0 && b.1 <= a.1),
                "{b:?} dominates {a:?}: {t}"
            );
        }
    }
    assert_eq!(t["best"]["treatment"], "itl=1/slots=8", "{t}");
    assert!(t["best"]["second_ci"][0].as_f64().unwrap() > 0.0, "{t}");
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("tune.json")).unwrap()).unwrap();
    assert_eq!(stored["pareto_front"], t["pareto_front"]);
}

#[test]
fn an_interrupted_search_resumes_from_the_rounds_it_stored() {
    let dir = tempfile::tempdir().unwrap();
    let starts_log = dir.path().join("starts");
    // Each server start appends its treatment, so the test interrupts the search in its second
    // probe round and then sees which treatments the resumed search started again.
    let command = format!(
        "[sh, -c, \"echo {{slots}}/{{itl}} >> {log}; exec {bin} sim --port {{port}} --max-running {{slots}} --ttft-ms 10 --itl-ms {{itl}}\"]",
        log = starts_log.display(),
        bin = env!("CARGO_BIN_EXE_yardstick"),
    );
    let spec_text = sweep_spec(&command, "{slots: [1, 2, 8], itl: [1, 4]}", 3)
        .replace("  layers:\n", "  tune: {maximize: request_throughput, budget: 4, strategy: tpe, seed: 2}\n  layers:\n")
        .replace("sweep-sim", "resume-tune");
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, &spec_text).unwrap();
    let store = dir.path().join("store");
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&starts_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let child = yardstick()
        .args(["run", "--json"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // The third start is the second round's first treatment.
    while lines().len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the second probe round never started: {:?}",
            lines()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let first = json(&o);
    assert_eq!(first["status"], "incomplete", "{first}");
    let t = &first["tune"];
    let rounds = t["probe_runs"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{t}");
    assert_eq!(rounds[1], first["run_id"], "{t}");
    assert_eq!(t["probes"].as_array().unwrap().len(), 2, "{t}");
    assert!(t.get("best").is_none(), "{t}");
    let before = lines();

    let resumed = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .args(["--resume", first["run_id"].as_str().unwrap()])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "{err}");
    let v = json(&resumed);
    let t = &v["tune"];
    // The finished round was taken as stored, the interrupted one continued: the same runs.
    assert_eq!(t["resumed_from"], serde_json::json!(rounds), "{t}");
    assert_eq!(t["probe_runs"].as_array().unwrap()[..2], rounds[..], "{t}");
    let probes = t["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 4, "{t}");
    let treatment = |p: &serde_json::Value| {
        format!(
            "{}/{}",
            p["values"]["slots"].as_str().unwrap(),
            p["values"]["itl"].as_str().unwrap()
        )
    };
    // The search went on where it stopped: the first servers it started are the interrupted
    // round's (the replicate Ctrl-C cut short is measured again); the first round was not.
    let after: Vec<String> = lines().split_off(before.len());
    assert_eq!(
        after[..2],
        [treatment(&probes[2]), treatment(&probes[3])],
        "{before:?} then {after:?}"
    );
    assert!(t["best"]["treatment"].is_string(), "{t}");
    // Resuming a finished search is refused with where its answer is.
    let again = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .args(["--resume", first["run_id"].as_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("has finished") && err.contains(v["run_id"].as_str().unwrap()),
        "{err}"
    );
}

#[test]
fn validate_refuses_a_tuner_it_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    let spec = tune_spec(
        "{slots: [1, 8], itl: [1, 4]}",
        "{maximize: request_throughput, budget: 4}",
    );
    std::fs::write(&path, &spec).unwrap();
    let ok = yardstick().arg("validate").arg(&path).output().unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_validate_refuses(
        &path,
        &spec,
        &[
            (
                "maximize: request_throughput",
                "maximize: requests_per_fortnight",
                "`requests_per_fortnight` is not a metric of the catalogue",
            ),
            (
                "maximize: request_throughput",
                "maximize: request_throughput, minimize: ttft_ms",
                "exactly one of `maximize` and `minimize`",
            ),
            (
                "budget: 4",
                "budget: 1",
                "a search probes 2 to 1000 treatments",
            ),
            (
                "budget: 4",
                "budget: 4, probe: 1.5",
                "it is a share of the requests",
            ),
            (
                "{slots: [1, 8], itl: [1, 4]}",
                "{slots: [1, 8], itl: [1, 4]}\n    design: lhs\n    samples: 2",
                "with `tune` the tuner chooses them",
            ),
        ],
    );
}
