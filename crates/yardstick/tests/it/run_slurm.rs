//! `execution.engine: slurm` through real `sbatch`, `srun`, `scontrol` and `scancel`: a
//! one-node cluster on this machine (`scripts/slurm-up.sh`, which `.ci/run` runs under CI).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{json, layered_spec, yardstick};
use crate::external;

/// Whether Slurm answers on this machine (a failure under `YARDSTICK_REQUIRE_EXTERNAL=1` when
/// it does not), for tests of other modules that need it.
pub fn slurm_up() -> bool {
    slurm().is_some()
}

/// Slurm answering on this machine: `sinfo` lists a node that is up.
fn slurm() -> Option<()> {
    let ok = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .is_some_and(|s| {
            // Up, whatever it is busy with (idle, mixed, allocated, completing).
            let s = s.trim();
            !s.is_empty()
                && !["down", "drain", "fail", "not_responding", "unknown"]
                    .iter()
                    .any(|bad| s.contains(bad))
        });
    external::require(
        "slurm",
        "run_slurm",
        "scripts/slurm-up.sh starts a one-node cluster (slurm-wlm and munge, as root)",
        ok.then_some(()),
    )
}

/// A rank-aware "trainer": 20 steps of 8 samples, 10 ms each, tagged with Slurm's rank and world
/// size; it waits for `gate` to exist first, when given.
fn trainer(dir: &Path, gate: Option<&Path>) -> String {
    let p = dir.join("train.sh");
    let wait = gate.map_or_else(String::new, |g| {
        format!("while [ ! -f {} ]; do sleep 0.2; done\n", g.display())
    });
    std::fs::write(
        &p,
        format!(
            "{wait}i=0
while [ $i -lt 20 ]; do
  echo \"{{\\\"step\\\":$i,\\\"samples\\\":8,\\\"step_time_s\\\":0.01,\\\"rank\\\":$SLURM_PROCID,\\\"world_size\\\":$SLURM_NTASKS}}\" >> \"$YARDSTICK_METRICS\"
  i=$((i+1))
done
"
        ),
    )
    .unwrap();
    p.display().to_string()
}

fn spec(dir: &Path, name: &str, script: &str, micro: bool) -> std::path::PathBuf {
    let micro = if micro {
        "    micro:\n      - kind: memory\n        sizes: [8388608]\n"
    } else {
        ""
    };
    let text = layered_spec(
        name,
        &format!("{micro}    e2e:\n      - kind: command\n        command: [sh, {script}]\n"),
    )
    .replace(
        "  layers:",
        "  execution: {engine: slurm, nodes: 1, tasksPerNode: 2, timeLimit: 10m}\n  layers:",
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn read(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn a_run_on_slurm_submits_runs_every_step_with_srun_and_stores_the_job() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let script = trainer(dir.path(), None);
    let spec = spec(dir.path(), "slurm-train", &script, true);
    // The dry run shows the batch script.
    let o = yardstick()
        .arg("run")
        .arg(&spec)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("#SBATCH --ntasks-per-node=2"));

    let started = Instant::now();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("slurm run: {:.1} s wall", started.elapsed().as_secs_f64());
    let v = json(&o);
    crate::schema_cli::assert_conforms("run", &v);
    assert_eq!(v["status"], "complete", "{v}");
    assert_eq!(v["slurm"]["state"], "COMPLETED", "{v}");
    assert!(crate::common::assert_figures_are_the_summaries(&store) > 0);
    let job = v["slurm"]["job_id"].as_str().unwrap().to_string();
    // Two ranks, one srun step over both tasks per replicate: the analysis sees world size 2.
    let p = v["summary"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "e2e.0.command")
        .unwrap();
    assert_eq!(p["metrics"]["world_size"]["value"]["mean"], 2.0, "{p}");
    // The script, every node's environment and the job's steps are stored with the run, hashed.
    let run = Path::new(v["dir"].as_str().unwrap());
    let script = std::fs::read_to_string(run.join(format!("slurm/{job}/job.sh"))).unwrap();
    assert!(
        script.contains("#SBATCH --nodes=1") && script.contains("exec "),
        "{script}"
    );
    let node =
        String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout).unwrap();
    let env = read(&run.join(format!("slurm/{job}/env/{}.json", node.trim())));
    assert!(env["machine_profile"].is_string(), "{env}");
    let record = read(&run.join(format!("slurm/{job}/job.json")));
    assert_eq!(record["allocation"]["ntasks"], 2);
    // No accounting storage on this one-node cluster: the states are how each srun ended, and
    // the record says why sacct was not used.
    assert!(
        record["accounting"]
            .as_str()
            .unwrap()
            .starts_with("unavailable: "),
        "{record}"
    );
    assert!(
        record["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["source"] == "srun")
    );
    let steps: Vec<(String, String)> = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap().to_string(),
                s["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The environment capture, the micro layer on every node, three replicates of the command.
    assert_eq!(steps.len(), 5, "{steps:?}");
    assert_eq!(record["steps"][1]["what"], "micro layer on every node");
    let micro = read(&run.join(format!("slurm/{job}/micro/{}.json", node.trim())));
    assert!(
        micro["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "memory.triad"),
        "{micro}"
    );
    // One node: the consistency check has nothing to compare, and says so.
    let nodes = read(&run.join(format!("slurm/{job}/nodes.json")));
    assert_eq!(nodes["nodes"], serde_json::json!([node.trim()]));
    assert_eq!(v["summary"]["nodes"], nodes);
    assert!(
        nodes["warnings"].to_string().contains("needs two or more"),
        "{nodes}"
    );
    for (i, (id, state)) in steps.iter().enumerate() {
        assert_eq!(id, &format!("{job}.{i}"));
        assert_eq!(state, "COMPLETED");
    }
    // The report says why it has no node comparison: one node (sections without data are
    // folded under "Not plotted", each with its reason).
    let html = dir.path().join("report.html");
    let o = yardstick()
        .args(["report", v["run_id"].as_str().unwrap(), "--html"])
        .arg(&html)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"not-plotted\""), "no folded notes");
    assert!(page.contains("needs two or more"), "no nodes note");
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(manifest.contains(&format!("slurm/{job}/job.json")));
    let o = yardstick()
        .args(["verify", v["run_id"].as_str().unwrap(), "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn ctrl_c_cancels_the_job_and_the_run_resumes_in_another() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let gate = dir.path().join("go");
    let script = trainer(dir.path(), Some(&gate));
    let spec = spec(dir.path(), "slurm-cancel", &script, false);
    let child = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the job runs its first step (the trainer is waiting for the gate file).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let q = Command::new("squeue")
            .args(["-h", "-o", "%j %T"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&q.stdout).contains("yardstick-slurm-cancel RUNNING")
            && std::fs::read_dir(store.join("runs")).is_ok_and(|mut d| d.next().is_some())
        {
            break;
        }
        assert!(Instant::now() < deadline, "the job never ran");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // Ctrl-C, as a user at the terminal.
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert_eq!(v["status"], "incomplete", "{v}");
    assert_eq!(v["slurm"]["state"], "CANCELLED", "{v}");
    let first = v["slurm"]["job_id"].as_str().unwrap().to_string();
    let run_id = v["run_id"].as_str().unwrap().to_string();
    let run = Path::new(v["dir"].as_str().unwrap()).to_path_buf();
    let record = read(&run.join(format!("slurm/{first}/job.json")));
    let last = record["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["state"], "CANCELLED", "{record}");

    // Resumed in a second job, the run completes with both jobs' records.
    std::fs::write(&gate, "").unwrap();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .args(["--store"])
        .arg(&store)
        .args(["--resume", &run_id])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["status"], "complete");
    let second = v["slurm"]["job_id"].as_str().unwrap();
    assert_ne!(second, first);
    assert!(run.join(format!("slurm/{second}/job.json")).is_file());
    assert!(run.join(format!("slurm/{first}/job.sh")).is_file());
}

fn sigint(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn serving_load_is_split_across_the_tasks_and_merged_exactly() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let text = layered_spec(
        "slurm-serve",
        "    component:
      - kind: serve
        target: {url: sim, api: chat, model: sim-llama}
        scenarios: [\"D(20,10)\"]
        load: {mode: concurrency, values: [4]}
        cost: {perAcceleratorHour: 2.48, accelerators: 8}
        stop: {maxRequests: 40, maxDuration: 60s}
",
    )
    .replace(
        "  layers:",
        "  execution: {engine: slurm, nodes: 1, tasksPerNode: 2, timeLimit: 10m}\n  layers:",
    );
    let spec = dir.path().join("serve.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["slurm"]["state"], "COMPLETED", "{v}");
    let job = v["slurm"]["job_id"].as_str().unwrap();
    let run = Path::new(v["dir"].as_str().unwrap());
    for r in 0..3 {
        let rec = read(&run.join(format!(
            "results/component.0.serve_D_20_10_concurrency_4/r{r}.json"
        )));
        let s = &rec["summary"];
        // Two shards of 20 requests each, merged into the point's 40, as one client would.
        assert_eq!(s["load"]["shards"], 2, "{s}");
        assert_eq!(s["requests"]["completed"], 40, "{s}");
        assert!(s["ttft_ms"]["p50"].as_f64().unwrap() > 0.0);
        // The merged point is priced like one client's.
        let per_m = 2.48 * 8.0 / 3600.0 / s["output_token_throughput"].as_f64().unwrap() * 1e6;
        let cost = s["cost_per_1m_output_tokens"]
            .as_f64()
            .unwrap_or_else(|| panic!("{s}"));
        assert!((cost - per_m).abs() < 1e-9 * per_m, "{cost} vs {per_m}");
    }
    let record = read(&run.join(format!("slurm/{job}/job.json")));
    let serve_steps: Vec<&Value> = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["what"].as_str().unwrap().contains("(2 shards)"))
        .collect();
    assert_eq!(serve_steps.len(), 3, "{record}");
    assert!(serve_steps.iter().all(|s| s["state"] == "COMPLETED"));
}

#[test]
fn a_sweep_starts_its_server_inside_the_allocation_and_the_tasks_share_the_load() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let hosts = dir.path().join("hosts");
    // The server writes the `{host}` it was given (the node it runs on, where clients of other
    // nodes would reach it) and where it runs; on this one-node cluster the load stays on
    // loopback.
    let text = layered_spec(
        "slurm-sweep",
        "    component:
      - kind: serve
        target: {url: \"http://127.0.0.1:{port}\", api: chat, model: m}
        scenarios: [\"D(20,10)\"]
        load: {mode: concurrency, values: [4]}
        stop: {maxRequests: 40, maxDuration: 60s}
",
    )
    .replace(
        "  layers:",
        &format!(
            "  execution: {{engine: slurm, nodes: 1, tasksPerNode: 2, timeLimit: 10m}}
  server:
    command: [sh, -c, \"echo {{host}} $SLURM_JOB_ID $(hostname) >> {hosts}; exec {bin} sim --port {{port}} --max-running {{slots}} --ttft-ms 20 --itl-ms 2\"]
    ready: {{http: \"http://127.0.0.1:{{port}}/health\", timeout: 30s}}
    stop: {{grace: 5s}}
  sweep:
    factors: {{slots: [1, 4]}}
  layers:",
            hosts = hosts.display(),
            bin = env!("CARGO_BIN_EXE_yardstick"),
        ),
    );
    let spec = dir.path().join("sweep.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["slurm"]["state"], "COMPLETED", "{v}");
    let job = v["slurm"]["job_id"].as_str().unwrap();
    // Each treatment's server started inside the job, on its node, told that node's name.
    let starts = std::fs::read_to_string(&hosts).unwrap();
    let lines: Vec<&str> = starts.lines().collect();
    assert!(lines.len() >= 2, "{starts}");
    for l in &lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 3, "{l}");
        assert_eq!(f[1], job, "{l}");
        assert_eq!(f[0], f[2], "{{host}} is the node the server runs on: {l}");
    }
    let run = Path::new(v["dir"].as_str().unwrap());
    let tput = |slots: u32| -> f64 {
        let s = &v["summary"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["id"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("slots={slots}"))
            })
            .unwrap_or_else(|| panic!("{v}"))["metrics"]["request_throughput"]["value"];
        s["mean"].as_f64().unwrap()
    };
    for slots in [1, 4] {
        for r in 0..3 {
            let rec = read(&run.join(format!(
                "results/component.0.serve_D_20_10_concurrency_4_slots_{slots}/r{r}.json"
            )));
            let s = &rec["summary"];
            // Both tasks drove the server the batch step started: two shards, merged.
            assert_eq!(s["load"]["shards"], 2, "{s}");
            assert_eq!(s["requests"]["completed"], 40, "{s}");
        }
    }
    // Four slots serve four streams at once; one slot serves them in turn.
    assert!(tput(4) > 2.0 * tput(1), "{} vs {}", tput(4), tput(1));
    assert!(
        run.join("server").is_dir(),
        "the server's output is kept with the run"
    );
}

#[test]
fn a_trace_is_replayed_in_shards_across_the_tasks_and_merged_whole() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let lines: Vec<String> = (0..40u64)
        .map(|k| {
            format!(
                r#"{{"at_ms": {}, "input_tokens": {}, "output_tokens": 4}}"#,
                k * 25,
                20 + k % 5
            )
        })
        .collect();
    std::fs::write(dir.path().join("t.jsonl"), lines.join("\n") + "\n").unwrap();
    let text = layered_spec(
        "slurm-trace",
        "    component:
      - kind: serve
        target: {url: sim, api: chat, model: sim-llama}
        load: {mode: trace, trace: {file: t.jsonl, format: jsonl}}
        stop: {maxDuration: 60s}
",
    )
    .replace(
        "  layers:",
        "  execution: {engine: slurm, nodes: 1, tasksPerNode: 2, timeLimit: 10m}\n  layers:",
    );
    let spec = dir.path().join("trace.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let run = Path::new(v["dir"].as_str().unwrap());
    let rec = read(&run.join("results/component.0.serve_trace_t/r0.json"));
    let s = &rec["summary"];
    // Two shards of the trace, merged into its 40 requests with the trace block.
    assert_eq!(s["load"]["shards"], 2, "{s}");
    assert_eq!(s["requests"]["completed"], 40, "{s}");
    assert_eq!(s["trace"]["requests"], 40, "{s}");
    assert_eq!(s["schedule_lateness_ms"]["count"], 40, "{s}");
}

#[test]
fn the_reference_trainer_trains_one_rank_per_task_and_the_slowest_rank_is_analysed() {
    if slurm().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let text = layered_spec(
        "slurm-reference",
        "    e2e:\n      - kind: train\n        preset: tiny\n        steps: 12\n",
    )
    .replace(
        "  layers:",
        "  execution: {engine: slurm, nodes: 1, tasksPerNode: 2, cpusPerTask: 1, timeLimit: 10m}\n  layers:",
    );
    let spec = dir.path().join("reference.yaml");
    std::fs::write(&spec, text).unwrap();
    let started = Instant::now();
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!(
        "slurm reference trainer, 2 ranks: {:.1} s wall",
        started.elapsed().as_secs_f64()
    );
    let v = json(&o);
    assert_eq!(v["status"], "complete", "{v}");
    assert_eq!(v["slurm"]["state"], "COMPLETED", "{v}");
    let p = v["summary"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"].as_str().unwrap().starts_with("e2e.0.train"))
        .unwrap_or_else(|| panic!("no training point: {v}"));
    assert_eq!(p["metrics"]["world_size"]["value"]["mean"], 2.0, "{p}");
    // Every replicate's analysis saw both ranks, each with its 12 steps, and named the slowest.
    let run = Path::new(v["dir"].as_str().unwrap());
    let job = v["slurm"]["job_id"].as_str().unwrap();
    let record = read(&run.join(format!("slurm/{job}/job.json")));
    let steps = record["steps"].as_array().unwrap();
    let train_steps: Vec<&Value> = steps
        .iter()
        .filter(|s| s["what"].as_str().unwrap().starts_with("e2e.0.train"))
        .collect();
    assert_eq!(train_steps.len(), 3, "a step per replicate: {steps:?}");
    assert!(train_steps.iter().all(|s| s["state"] == "COMPLETED"));
    for r in 0..3 {
        let rec = read(&run.join(format!("results/e2e.0.train_tiny/r{r}.json")));
        let ranks = &rec["summary"]["ranks"];
        let per_rank = ranks["ranks"].as_array().unwrap();
        assert_eq!(per_rank.len(), 2, "{rec}");
        for (i, one) in per_rank.iter().enumerate() {
            assert_eq!(one["rank"], i);
            // 12 steps, the first dropped as warm-up. (Both ranks append to one metrics file;
            // the trainer once wrote a line in pieces, two ranks' lines could interleave, and a
            // rank then lost a step here.)
            assert_eq!(one["step_time_s"]["n"], 11, "{one}");
        }
        assert!(ranks["slowest_rank"].as_u64().unwrap() < 2, "{ranks}");
        assert!(ranks["median_spread"].as_f64().unwrap() >= 0.0);
    }
}
