//! `yardstick playbook`: the tail-latency and starvation playbooks against the simulator, each in
//! both directions. Tail latency: a
//! planted cause (2 request slots: requests queue in the server as the rate grows) is found,
//! and a clean server (64 slots, never full at these rates) is not blamed. Each run is stored,
//! and its `summary.json` carries the diagnosis.

use serde_json::Value;

use crate::common::{Sim, json, yardstick};

/// `yardstick --json playbook ARGS... --store STORE [-- CMD...]`, which must exit 0: its JSON
/// outcome.
fn playbook_json(args: &[&str], store: &std::path::Path) -> Value {
    let cut = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let o = yardstick()
        .args(["--json", "playbook"])
        .args(&args[..cut])
        .arg("--store")
        .arg(store)
        .args(&args[cut..])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o)
}

fn tail_latency(sim: &Sim, store: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["tail-latency", "--url", &sim.url, "--model", "m"];
    args.extend([
        "--scenario",
        "D(16,8)",
        "--levels",
        "4",
        "--replicates",
        "3",
    ]);
    args.extend([
        "--requests",
        "60",
        "--duration",
        "3",
        "--probe-concurrency",
        "16",
    ]);
    args.extend(extra);
    playbook_json(&args, store)
}

#[test]
fn tail_latency_finds_a_planted_queue_and_does_not_blame_a_clean_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");

    // Planted: two slots of 51 ms requests (about 37 req/s). The probe fills them; rates up to
    // that throughput queue requests, far beyond a busy machine's noise.
    let busy = Sim::start(&["--ttft-ms", "30", "--itl-ms", "3", "--max-running", "2"]);
    let out = tail_latency(&busy, &store, &["--slo-ttft-ms", "80"]);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "tail-latency", "{d:#}");
    assert_eq!(d["verdict"], "queueing", "{d:#}");
    assert_ne!(d["confidence"], "low", "{d:#}");
    let knee = d["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["claim"].as_str().unwrap().starts_with("The knee"))
        .unwrap_or_else(|| panic!("no knee in {d:#}"));
    assert!(knee["where"].as_str().unwrap().contains("/rate="), "{knee}");
    assert!(knee["figures"]["ttft_p99_growth_ms"].as_f64().unwrap() > 0.0);
    assert!(
        d["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().contains("replica")),
        "{d:#}"
    );
    // The run is stored with its diagnosis, and its spec names the playbook.
    let run_dir = std::path::PathBuf::from(out["dir"].as_str().unwrap());
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["diagnosis"], *d);
    let spec = std::fs::read_to_string(run_dir.join("spec.yaml")).unwrap();
    assert!(spec.contains("playbook: tail-latency"), "{spec}");
    // The report opens on it: HTML, Markdown.
    let run_id = out["run_id"].as_str().unwrap();
    let html = dir.path().join("r.html");
    let o = yardstick()
        .args(["report", run_id, "--markdown", "-", "--html"])
        .arg(&html)
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
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("**Diagnosis (tail-latency): queueing**"),
        "{md}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    assert!(at("id=\"diagnosis\"") < at("id=\"headlines\""));
    assert!(page.contains("The knee is at"));
    // The dashboard's run page opens on it too.
    let server = crate::server::ServerProc::start(&store, &[]);
    let r = server.get(&format!("/runs/{run_id}"));
    assert_eq!(r.status, 200);
    let page = String::from_utf8_lossy(&r.body);
    assert!(page.contains("Diagnosis: Why is my p99 TTFT bad"), "{page}");
    assert!(page.contains(">queueing</span>"), "{page}");
    drop(server);

    // Clean: 64 slots, and rates up to 40 req/s need about 2 of them. Nothing is blamed: the
    // tail is flat, or (on a noisy machine) the sweep says it cannot tell.
    let idle = Sim::start(&["--ttft-ms", "30", "--itl-ms", "3", "--max-running", "64"]);
    let out = tail_latency(&idle, &store, &["--max-rate", "40"]);
    let d = &out["diagnosis"];
    assert!(
        ["no-knee", "inconclusive"].contains(&d["verdict"].as_str().unwrap()),
        "{d:#}"
    );

    // The spec `show` writes runs with `yardstick run`, which ends on the diagnosis too.
    let o = yardstick()
        .args([
            "playbook",
            "show",
            "tail-latency",
            "--url",
            &idle.url,
            "--model",
            "m",
        ])
        .args(["--scenario", "D(16,8)", "--max-rate", "40", "--levels", "2"])
        .args(["--requests", "20", "--duration", "2"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let spec = dir.path().join("tail.yaml");
    std::fs::write(&spec, &o.stdout).unwrap();
    let o = yardstick()
        .arg("run")
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("diagnosis (tail-latency): "), "{stdout}");
}

#[test]
fn playbook_list_show_and_bad_input() {
    let o = yardstick()
        .args(["--json", "playbook", "list"])
        .output()
        .unwrap();
    let list = json(&o);
    assert_eq!(list[0]["name"], "tail-latency");
    assert_eq!(list[1]["name"], "starvation");
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "backpressure" && p["verdicts"][0] == "sheds-load"),
        "{list:#}"
    );
    // `show` with --max-rate writes a spec without probing; `validate` accepts it.
    let o = yardstick()
        .args([
            "playbook",
            "show",
            "tail-latency",
            "--url",
            "http://127.0.0.1:9",
        ])
        .args(["--model", "m", "--max-rate", "40", "--levels", "4"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let spec = String::from_utf8(o.stdout).unwrap();
    assert!(spec.contains("values: [10, 20, 30, 40]"), "{spec}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &spec).unwrap();
    let v = yardstick().arg("validate").arg(&path).output().unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
    // The playbook's rule: one serve entry sweeping rates.
    std::fs::write(&path, spec.replace("mode: rate", "mode: concurrency")).unwrap();
    let v = yardstick().arg("validate").arg(&path).output().unwrap();
    assert_eq!(v.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&v.stderr).contains("playbook-config")
            || String::from_utf8_lossy(&v.stdout).contains("playbook-config")
    );
    for (args, says) in [
        (
            vec!["playbook", "show", "nope"],
            "unrecognized subcommand 'nope'",
        ),
        (
            vec![
                "playbook",
                "starvation",
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--short",
                "D(4096,8)",
            ],
            "has no longer prompts than --short",
        ),
        (
            vec![
                "playbook",
                "starvation",
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--long-share",
                "1.5",
            ],
            "must be between 0 and 1",
        ),
        (
            vec!["playbook", "tail-latency", "--model", "m"],
            "needs --url",
        ),
        (
            vec![
                "playbook",
                "tail-latency",
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--levels",
                "1",
            ],
            "2 to 20 rates",
        ),
        (
            vec![
                "playbook",
                "backpressure",
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--overload",
                "0.5",
            ],
            "must be above 1",
        ),
    ] {
        let o = yardstick().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn starvation(sim: &Sim, store: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["starvation", "--url", &sim.url, "--model", "m"];
    args.extend([
        "--short",
        "D(32,8)",
        "--long",
        "D(1024,8)",
        "--long-share",
        "0.25",
    ]);
    args.extend([
        "--requests",
        "60",
        "--duration",
        "8",
        "--probe-concurrency",
        "8",
    ]);
    args.extend(extra);
    playbook_json(&args, store)
}

/// The starvation playbook in both directions: one request slot (a long request's 107 ms
/// prefill and decode holds it; short requests arriving meanwhile wait) is head-of-line
/// blocking; 256 slots at the same rate slow neither class.
#[test]
fn starvation_finds_head_of_line_blocking_and_does_not_blame_a_clean_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let timing = [
        "--ttft-ms",
        "5",
        "--ttft-per-token-ms",
        "0.1",
        "--itl-ms",
        "2",
    ];
    let one = Sim::start(&[&timing[..], &["--max-running", "1"]].concat());
    let out = starvation(&one, &store, &[]);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "starvation", "{d:#}");
    assert_eq!(d["verdict"], "head-of-line", "{d:#}");
    let hol = d["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["figures"]["behind_ttft_mean_ms"].is_number())
        .expect("head-of-line evidence");
    assert!(
        hol["figures"]["behind_ttft_mean_ms"].as_f64().unwrap()
            > hol["figures"]["clear_ttft_mean_ms"].as_f64().unwrap(),
        "{hol:#}"
    );
    assert!(d["actions"][0].as_str().unwrap().contains("chunked"));
    // The run's summary holds the classes, and the diagnosis.
    let summary: Value = serde_json::from_slice(
        &std::fs::read(std::path::Path::new(out["dir"].as_str().unwrap()).join("summary.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(summary["diagnosis"]["verdict"], "head-of-line");
    let mixed = summary["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["id"]
                .as_str()
                .unwrap()
                .contains("0.75*D(32,8)+0.25*D(1024,8)")
        })
        .expect("the mixed point");
    assert!(
        mixed["metrics"]["short_ttft_ms"]["p99"]["mean"].is_number(),
        "{mixed:#}"
    );
    assert!(mixed["metrics"]["head_of_line_share"]["value"]["mean"].is_number());

    let many = Sim::start(&[&timing[..], &["--max-running", "256"]].concat());
    let out = starvation(&many, &store, &["--rate", "12"]);
    let d = &out["diagnosis"];
    assert!(
        ["fair", "inconclusive"].contains(&d["verdict"].as_str().unwrap()),
        "{d:#}"
    );
}

/// A rank-aware workload that really sleeps each step (25 steps) and reports the time it took,
/// tagged with its rank and world size (`RANK`/`WORLD_SIZE` here, Slurm's in a task); the rank
/// named by `$SLOW_RANK` sleeps 65 ms instead of 50.
fn sleeper(dir: &std::path::Path) -> String {
    let p = dir.join("ranks.sh");
    std::fs::write(
        &p,
        r#"r=${RANK:-${SLURM_PROCID:-0}}; n=${WORLD_SIZE:-${SLURM_NTASKS:-1}}
d=0.05; [ "$r" = "$SLOW_RANK" ] && d=0.065
i=0
while [ $i -lt 25 ]; do
  s=$(date +%s%N); sleep $d; e=$(date +%s%N)
  t=$(awk "BEGIN{print ($e-$s)/1e9}")
  echo "{\"step\":$i,\"samples\":8,\"step_time_s\":$t,\"rank\":$r,\"world_size\":$n}" >> "$YARDSTICK_METRICS"
  i=$((i+1))
done
"#,
    )
    .unwrap();
    p.display().to_string()
}

fn stragglers(store: &std::path::Path, engine: &[&str], slow: &str, script: &str) -> Value {
    let slow = format!("SLOW_RANK={slow}");
    let mut args = vec!["stragglers", "--tasks", "2"];
    args.extend(engine);
    args.extend(["--", "env", &slow, "sh", script]);
    playbook_json(&args, store)
}

/// The stragglers playbook here (two ranks as two processes): a rank that sleeps 30 % longer
/// each step is the straggler, on this host; equal ranks are not blamed.
#[test]
fn stragglers_finds_a_slow_rank_and_does_not_blame_equal_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let script = sleeper(dir.path());
    let out = stragglers(&store, &[], "1", &script);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "stragglers", "{d:#}");
    assert_eq!(d["verdict"], "straggler", "{d:#}");
    assert!(d["summary"].as_str().unwrap().contains("rank 1"), "{d:#}");
    let e = &d["evidence"][0]["figures"];
    assert_eq!(e["rank"], 1.0, "{d:#}");
    assert!(
        e["median_step_time_ratio"].as_f64().unwrap() > 1.15,
        "{d:#}"
    );
    assert!(
        d["actions"][0].as_str().unwrap().contains("state=drain"),
        "{d:#}"
    );

    let out = stragglers(&store, &[], "none", &script);
    let d = &out["diagnosis"];
    assert!(
        ["no-straggler", "inconclusive"].contains(&d["verdict"].as_str().unwrap()),
        "{d:#}"
    );
}

/// The same on the one-node Slurm cluster CI starts: two tasks of one srun step per replicate.
#[test]
fn stragglers_on_slurm_finds_the_slow_task() {
    if !crate::run_slurm::slurm_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let script = sleeper(dir.path());
    let out = stragglers(&store, &["--engine", "slurm"], "1", &script);
    let d = &out["diagnosis"];
    assert_eq!(d["verdict"], "straggler", "{d:#}");
    let node = String::from_utf8(
        std::process::Command::new("hostname")
            .arg("-s")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        d["summary"].as_str().unwrap().contains("rank 1"),
        "{d:#} (node {node})"
    );
}

fn backpressure(sim: &Sim, store: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["backpressure", "--url", &sim.url, "--model", "m"];
    args.extend([
        "--scenario",
        "D(16,8)",
        "--requests",
        "200",
        "--duration",
        "3",
    ]);
    args.extend(["--probe-concurrency", "16"]);
    args.extend(extra);
    playbook_json(&args, store)
}

fn evidence_at<'a>(d: &'a Value, starts: &str) -> &'a Value {
    d["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["claim"].as_str().unwrap().starts_with(starts))
        .unwrap_or_else(|| panic!("no evidence `{starts}` in {d:#}"))
}

/// The backpressure playbook in both directions, on two slots of 34 ms requests (about 58
/// req/s): with an unbounded queue (planted: the excess waits, p99 TTFT grows without end) it
/// is `unbounded-queue`; with a queue of 2 that answers 429 and `Retry-After: 1` it is
/// `sheds-load`, and the client that retries as told gets more requests answered.
#[test]
fn backpressure_finds_an_unbounded_queue_and_credits_a_server_that_sheds_load() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let timing = ["--ttft-ms", "20", "--itl-ms", "2", "--max-running", "2"];

    let unbounded = Sim::start(&timing);
    let out = backpressure(&unbounded, &store, &[]);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "backpressure", "{d:#}");
    assert_eq!(d["verdict"], "unbounded-queue", "{d:#}");
    let over = evidence_at(d, "Overloaded, ");
    assert_eq!(over["figures"]["refused_share"], 0.0, "{over:#}");
    assert!(
        over["figures"]["ttft_p99_ms"].as_f64().unwrap()
            > 2.0
                * evidence_at(d, "Below capacity")["figures"]["ttft_p99_ms"]
                    .as_f64()
                    .unwrap(),
        "{d:#}"
    );
    assert!(
        d["actions"][0]
            .as_str()
            .unwrap()
            .contains("admission control"),
        "{d:#}"
    );

    let shedding =
        Sim::start(&[&timing[..], &["--max-waiting", "2", "--retry-after", "1"]].concat());
    let out = backpressure(&shedding, &store, &["--capacity", "58"]);
    let d = &out["diagnosis"];
    assert_eq!(d["verdict"], "sheds-load", "{d:#}");
    let over = evidence_at(d, "Overloaded, 116");
    assert!(
        over["figures"]["refused_share_lo"].as_f64().unwrap() > 0.0,
        "{over:#}"
    );
    assert_eq!(over["figures"]["retry_after_share"], 1.0, "{over:#}");
    let retrying = evidence_at(
        d,
        "Overloaded, 116.000 req/s offered by a client that retries",
    );
    assert!(
        retrying["figures"]["attempts_per_request"]
            .as_f64()
            .unwrap()
            > 1.0,
        "{retrying:#}"
    );
    assert!(
        retrying["figures"]["served_share"].as_f64().unwrap()
            > over["figures"]["served_share"].as_f64().unwrap(),
        "{d:#}"
    );
    // The retrying point's records keep every refusal they waited out.
    let run_dir = std::path::PathBuf::from(out["dir"].as_str().unwrap());
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    let retry_point = summary["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["work"]["retry"].is_object())
        .expect("the retrying point");
    assert!(
        retry_point["metrics"]["attempts_per_request"]["value"]["mean"]
            .as_f64()
            .unwrap()
            > 1.0,
        "{retry_point:#}"
    );
}

/// The scheduler's side of backpressure on the one-node Slurm cluster, both directions: jobs
/// that end at once, 0.7 per second, start as they come (`keeps-up`); jobs that hold a core for
/// 2 s, submitted at twice the node's cores per second, start at a quarter of that rate, each
/// waiting longer than the one before (`backlogged`).
#[test]
fn backpressure_on_slurm_finds_a_backlog_and_does_not_blame_a_scheduler_that_keeps_up() {
    if !crate::run_slurm::slurm_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let burst = |extra: &[&str]| {
        let mut args = vec!["backpressure", "--engine", "slurm"];
        args.extend(extra);
        playbook_json(&args, &store)
    };
    // This one-node cluster starts about a job a second (2 s after submission): 0.7 per second
    // is within what it keeps up with.
    let out = burst(&["--jobs", "6", "--rate", "0.7"]);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "backpressure", "{d:#}");
    assert_eq!(d["verdict"], "keeps-up", "{d:#}");
    assert_eq!(d["evidence"][0]["figures"]["started_share"], 1.0, "{d:#}");

    let cpus: u32 = String::from_utf8(
        std::process::Command::new("sinfo")
            .args(["-h", "-o", "%c"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .trim_end_matches('+')
    .parse()
    .unwrap();
    let (jobs, rate) = ((4 * cpus).to_string(), (2 * cpus).to_string());
    let out = burst(&["--jobs", &jobs, "--rate", &rate, "--hold", "2"]);
    let d = &out["diagnosis"];
    assert_eq!(d["verdict"], "backlogged", "{d:#}");
    let f = &d["evidence"][1]["figures"];
    assert!(
        f["last_quarter_s"].as_f64().unwrap() > f["first_quarter_s"].as_f64().unwrap() + 1.0,
        "{d:#}"
    );
}

/// Readiness on the one-node Slurm cluster, both directions: the node as it is is `ready`
/// (medium confidence: one node, nothing to compare it with); asked for one GPU more than it
/// shows — what a GPU fallen off the bus looks like — it is `not-ready`, named with the
/// command that drains it (printed, not run).
#[test]
fn readiness_on_slurm_passes_the_node_and_fails_it_when_a_gpu_is_missing() {
    if !crate::run_slurm::slurm_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = playbook_json(&["readiness", "--nodes", "1"], &store);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "readiness", "{d:#}");
    assert_eq!(
        (d["verdict"].as_str(), d["confidence"].as_str()),
        (Some("ready"), Some("medium")),
        "{d:#}"
    );
    assert_eq!(d["evidence"][0]["figures"]["nodes"], 1.0, "{d:#}");

    let env = json(&yardstick().args(["env", "--json"]).output().unwrap());
    let more = (env["gpus"].as_array().unwrap().len() + 1).to_string();
    let out = playbook_json(
        &["readiness", "--nodes", "1", "--gpus-per-node", &more],
        &store,
    );
    let d = &out["diagnosis"];
    assert_eq!(d["verdict"], "not-ready", "{d:#}");
    let node = d["evidence"][1]["where"].as_str().unwrap();
    assert!(
        d["evidence"][1]["claim"]
            .as_str()
            .unwrap()
            .contains(&format!("GPUs where every node must have {more}")),
        "{d:#}"
    );
    assert!(
        d["actions"][0]
            .as_str()
            .unwrap()
            .contains(&format!("scontrol update nodename={node} state=drain")),
        "{d:#}"
    );
}

/// Readiness with nccl-tests output: a real 8-GPU `all_reduce_perf` output (average bus
/// bandwidth 197.2 GB/s, 414.2 at 8 GiB) passes a floor of 150 GB/s and fails one of 300, which
/// names the host its ranks ran on with the drain command; an output whose collectives returned
/// wrong elements makes the allocation not ready whatever the bandwidth. Bad input is refused
/// before any job.
#[test]
fn readiness_reads_nccl_tests_output_in_both_directions() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../yardstick-workloads/tests/fixtures")
        .canonicalize()
        .unwrap();
    let good = fixtures.join("all_reduce_perf_8xH100.txt");
    let wrong = fixtures.join("all_reduce_perf_wrong.txt");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for (args, needle) in [
        (
            vec!["--nccl-tests", "/nonexistent/ar.txt"],
            "--nccl-tests /nonexistent/ar.txt",
        ),
        (vec!["--nccl-tests", "Cargo.toml"], "not nccl-tests output"),
        (
            vec![
                "--nccl-tests",
                good.to_str().unwrap(),
                "--nccl-min-busbw",
                "0",
            ],
            "a bandwidth in GB/s above 0",
        ),
    ] {
        let o = yardstick()
            .args(["playbook", "readiness", "--nodes", "1"])
            .args(&args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    if !crate::run_slurm::slurm_up() {
        return;
    }
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["readiness", "--nodes", "1"];
        args.extend(extra);
        playbook_json(&args, &store)["diagnosis"].clone()
    };
    let nccl = |d: &Value| -> Value {
        d["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["where"] == "expect.ncclTests")
            .cloned()
            .unwrap_or_else(|| panic!("no nccl-tests evidence: {d:#}"))
    };
    let d = run(&[
        "--nccl-tests",
        good.to_str().unwrap(),
        "--nccl-min-busbw",
        "150",
    ]);
    assert_eq!(d["verdict"], "ready", "{d:#}");
    let e = nccl(&d);
    assert_eq!(e["figures"]["avg_busbw_gbps"], 197.172, "{e:#}");
    assert_eq!(e["figures"]["peak_busbw_gbps"], 414.21, "{e:#}");
    assert_eq!(e["figures"]["ranks"], 8.0, "{e:#}");
    assert!(
        e["claim"]
            .as_str()
            .unwrap()
            .contains("8 ranks on dgx-h100-017"),
        "{e:#}"
    );

    let d = run(&[
        "--nccl-tests",
        good.to_str().unwrap(),
        "--nccl-min-busbw",
        "300",
    ]);
    assert_eq!(d["verdict"], "not-ready", "{d:#}");
    assert!(
        nccl(&d)["claim"]
            .as_str()
            .unwrap()
            .contains("averaged 197.2 GB/s of bus bandwidth, below the 300 GB/s required"),
        "{d:#}"
    );
    assert!(
        d["actions"].as_array().unwrap().iter().any(|a| a
            .as_str()
            .unwrap()
            .contains("scontrol update nodename=dgx-h100-017 state=drain")),
        "{d:#}"
    );

    let d = run(&["--nccl-tests", wrong.to_str().unwrap()]);
    assert_eq!(d["verdict"], "not-ready", "{d:#}");
    let s = d["summary"].as_str().unwrap();
    assert!(
        s.contains("cannot be trusted") && s.contains("12 wrong elements"),
        "{d:#}"
    );
}

/// Triage: one command stores the bundle (micro, the reference trainer and its perf profile, a
/// short serve against the simulator), answers with the trainer's bottleneck class, and writes
/// the HTML report that opens on that diagnosis.
#[test]
fn triage_classifies_the_workload_and_writes_one_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let html = dir.path().join("ticket.html");
    let mut args = vec![
        "triage",
        "--url",
        &sim.url,
        "--model",
        "m",
        "--steps",
        "20",
        "--html",
        html.to_str().unwrap(),
    ];
    // With perf, the bundle profiles the trainer too.
    let perf = crate::profile::have_perf("triage_classifies_the_workload_and_writes_one_report");
    if perf {
        args.extend(["--profile", "perf"]);
    }
    let out = playbook_json(&args, &store);
    let d = &out["diagnosis"];
    assert_eq!(d["playbook"], "triage", "{d:#}");
    let classes = [
        "compute",
        "memory",
        "communication",
        "input",
        "control-plane",
        "undetermined",
    ];
    assert!(classes.contains(&d["verdict"].as_str().unwrap()), "{d:#}");
    let claims: Vec<&str> = d["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["claim"].as_str().unwrap())
        .collect();
    assert!(claims[0].contains("GFLOP/s peak compute"), "{claims:?}");
    assert!(
        claims.iter().any(|c| c.starts_with("Serving: ")),
        "{claims:?}"
    );
    assert_eq!(out["report"].as_str().unwrap(), html.to_str().unwrap());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("id=\"diagnosis\""),
        "no diagnosis in the report"
    );
}
