//! `execution.engine: kubernetes`: `yardstick k8s render`'s manifests checked against the
//! official Kubernetes OpenAPI schemas (`kubernetes-validate` from PyPI, the release the
//! manifests are typed against) and against goldens; the pods' exact command line, run here as
//! two processes with the environment the Job gives them, against a simulator; and the errors.
//! No cluster runs here: docs/kubernetes.md says what that leaves unexercised.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Sim, json, layered_spec, yardstick};

/// The Kubernetes release of the schemas: the one k8s-openapi's types are (`v1_37`).
const KUBERNETES: &str = "1.37.0";

/// A Python that imports `kubernetes_validate`: `$YARDSTICK_PYTHON`, the venv `.ci/run` makes,
/// or `python3`.
fn validator(test: &str) -> Option<PathBuf> {
    crate::common::python_importing(
        "kubernetes-validate",
        test,
        "kubernetes_validate",
        "kubernetes-validate from PyPI (`pip install kubernetes-validate==1.37.0`) in the venv of \
         YARDSTICK_PYTHON (.ci/run installs it)",
    )
}

/// `kubernetes-validate --strict` of `files` against Kubernetes [`KUBERNETES`]: its output and
/// whether every file passed.
fn validate(python: &Path, files: &[PathBuf]) -> (bool, String) {
    let o = Command::new(python)
        .args(["-m", "kubernetes_validate", "--strict", "-k", KUBERNETES])
        .args(files)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// A spec on Kubernetes named `name` with `execution` (a YAML flow map's inside) and `layers`.
fn spec(dir: &Path, name: &str, execution: &str, layers: &str) -> PathBuf {
    let text = layered_spec(name, layers).replace(
        "  layers:",
        &format!("  execution: {{engine: kubernetes, image: 'registry.example/yardstick:0.1', {execution}}}\n  layers:"),
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

const SERVE: &str = "    component:
      - kind: serve
        target: {url: 'http://vllm.serving.svc:8000', api: chat, model: llama}
        scenarios: [\"D(20,10)\"]
        load: {mode: concurrency, values: [4]}
        stop: {maxRequests: 40, maxDuration: 60s}
";

const COMMAND: &str = "    e2e:
      - kind: command
        command: [torchrun, --nnodes=2, train.py]
        timeout: 10m
";

const MICRO: &str = "    micro:
      - kind: memory
        sizes: [8388608]
";

/// The three representative renders: a two-node GPU Job through Kueue with exclusive placement
/// on a fixed topology, results on a claim and pushed; a one-pod Job without a queue, pushed;
/// a nightly CronJob of two tasks on one node, on a claim.
fn renders(dir: &Path) -> Vec<(&'static str, PathBuf, Vec<&'static str>)> {
    vec![
        (
            "gpu-queue",
            spec(
                dir,
                "llama-serve",
                "nodes: 2, tasksPerNode: 1, cpusPerTask: 8, gpusPerTask: 4, memory: 64GiB, \
                 timeLimit: 2h, queue: team-a, priorityClass: bench-high, placement: {exclusive: \
                 true, topology: fixed, topologyKey: cloud.google.com/gce-topology-block}",
                &format!("{SERVE}{COMMAND}"),
            ),
            vec![
                "--pvc",
                "yardstick-results",
                "--push",
                "https://yardstick.example:8686",
            ],
        ),
        (
            "push-only",
            spec(dir, "micro-one", "memory: 2GiB", MICRO),
            vec!["--push", "http://yardstick.perf.svc:8686"],
        ),
        (
            "cronjob",
            spec(
                dir,
                "nightly-canary",
                "nodes: 1, tasksPerNode: 2, cpusPerTask: 2, queue: canary",
                SERVE,
            ),
            vec!["--pvc", "yardstick-results", "--schedule", "0 3 * * *"],
        ),
    ]
}

fn render(spec: &Path, out: &Path, extra: &[&str]) -> Value {
    let o = yardstick()
        .args(["--json", "k8s", "render"])
        .arg(spec)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    crate::schema_cli::assert_conforms("k8s-render", &v);
    v
}

fn files(v: &Value, out: &Path) -> Vec<PathBuf> {
    v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| out.join(o["file"].as_str().unwrap()))
        .collect()
}

/// A rendered YAML file as JSON (through the spec crate's YAML reader).
fn read_yaml(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap();
    let (node, issues) = yardstick_spec::yaml::parse(&text);
    assert!(issues.is_empty(), "{}: {issues:?}", p.display());
    yardstick_spec::yaml::to_json(&node.unwrap()).0
}

#[test]
fn every_rendered_manifest_passes_the_kubernetes_openapi_schemas() {
    let Some(python) = validator("k8s_schemas") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (name, spec, extra) in renders(dir.path()) {
        let out = dir.path().join(name);
        let v = render(&spec, &out, &extra);
        for o in v["objects"].as_array().unwrap() {
            kinds.insert(o["kind"].as_str().unwrap().to_string());
        }
        all.extend(files(&v, &out));
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["ConfigMap", "CronJob", "Job", "Service"]
    );
    let (ok, report) = validate(&python, &all);
    assert!(ok, "{report}");
    assert_eq!(
        report.matches("INFO").count() + report.matches("PASS").count(),
        all.len(),
        "one verdict per file: {report}"
    );
    // The validator is not a rubber stamp: a Job whose completions is a string, or a field the
    // API does not have, fails.
    let job = dir.path().join("gpu-queue/02-job.yaml");
    let text = std::fs::read_to_string(&job).unwrap();
    let bad = dir.path().join("bad-job.yaml");
    std::fs::write(&bad, text.replace("completions: 2", "completions: \"two\"")).unwrap();
    let unknown = dir.path().join("unknown-field.yaml");
    std::fs::write(
        &unknown,
        text.replace(
            "completionMode: Indexed",
            "completionMode: Indexed\n  gangSize: 2",
        ),
    )
    .unwrap();
    for f in [bad, unknown] {
        let (ok, report) = validate(&python, std::slice::from_ref(&f));
        assert!(!ok, "{} passed: {report}", f.display());
    }
}

#[test]
fn rendered_manifests_match_their_goldens() {
    let dir = tempfile::tempdir().unwrap();
    for (name, spec, extra) in renders(dir.path()) {
        let out = dir.path().join(name);
        let v = render(&spec, &out, &extra);
        let mut all = String::new();
        for f in files(&v, &out) {
            all.push_str(&format!(
                "# {}\n{}---\n",
                f.file_name().unwrap().to_string_lossy(),
                std::fs::read_to_string(&f).unwrap()
            ));
        }
        insta::assert_snapshot!(format!("k8s_render_{name}"), all);
    }
}

#[test]
fn the_manifests_carry_kueue_resources_placement_and_the_pods_command() {
    let dir = tempfile::tempdir().unwrap();
    let (_, spec, extra) = renders(dir.path()).remove(0);
    let out = dir.path().join("k8s");
    render(&spec, &out, &extra);
    let job = read_yaml(&out.join("02-job.yaml"));
    assert_eq!(
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "team-a"
    );
    assert_eq!(job["spec"]["suspend"], true);
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 2);
    assert_eq!(job["spec"]["parallelism"], 2);
    let pod = &job["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"],
        "cloud.google.com/gce-topology-block"
    );
    assert_eq!(pod["spec"]["priorityClassName"], "bench-high");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "4");
    assert_eq!(c["resources"]["requests"]["cpu"], "8");
    assert_eq!(c["command"], serde_json::json!(["yardstick"]));
    assert_eq!(
        c["args"],
        serde_json::json!([
            "run",
            "/spec/spec.yaml",
            "--store",
            "/results/store",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/2",
            "--shard-dir",
            "/results/shards/$(YARDSTICK_JOB_NAME)",
            "--push",
            "https://yardstick.example:8686"
        ])
    );
    let svc = read_yaml(&out.join("01-service.yaml"));
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(pod["spec"]["subdomain"], svc["metadata"]["name"]);
    assert_eq!(
        svc["spec"]["selector"]["app.kubernetes.io/instance"],
        pod["metadata"]["labels"]["app.kubernetes.io/instance"]
    );
    // The ConfigMap holds the spec byte for byte.
    let cm = read_yaml(&out.join("00-configmap.yaml"));
    assert_eq!(
        cm["data"]["spec.yaml"].as_str().unwrap(),
        std::fs::read_to_string(&spec).unwrap()
    );
}

/// The pod's command line with the Job's substitutions: `$(VAR)` from `env`, `/spec/spec.yaml`
/// and `/results` mapped to local paths, `yardstick` the built binary.
fn pod_command(job: &Value, env: &[(String, String)], spec: &Path, results: &Path) -> Command {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let subst = |s: &str| -> String {
        let mut s = s.to_string();
        for (k, v) in env {
            s = s.replace(&format!("$({k})"), v);
        }
        s = s.replace("/spec/spec.yaml", &spec.display().to_string());
        s.replace("/results", &results.display().to_string())
    };
    assert_eq!(c["command"], serde_json::json!(["yardstick"]));
    let mut cmd = yardstick();
    for a in c["args"].as_array().unwrap() {
        cmd.arg(subst(a.as_str().unwrap()));
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// The variables the rendered Job gives pod `i` of the Job named `yardstick-pods-local-x7k2p`.
fn pod_env(job: &Value, i: u32) -> Vec<(String, String)> {
    job_pod_env(job, "yardstick-pods-local-x7k2p", i)
}

/// The variables the rendered Job `job` gives pod `i` when the Job is named `name`, resolved as
/// the kubelet would: the downward API's fields (the completion index, the Job's name, the node,
/// the pod and its namespace) and `$(VAR)` references to variables defined before.
fn job_pod_env(job: &Value, name: &str, i: u32) -> Vec<(String, String)> {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let mut out: Vec<(String, String)> = Vec::new();
    for e in c["env"].as_array().unwrap() {
        let key = e["name"].as_str().unwrap().to_string();
        let value = if let Some(v) = e["value"].as_str() {
            let mut v = v.to_string();
            for (k, val) in &out {
                v = v.replace(&format!("$({k})"), val);
            }
            v
        } else if let Some(f) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            match f {
                "metadata.annotations['batch.kubernetes.io/job-completion-index']" => i.to_string(),
                "metadata.labels['batch.kubernetes.io/job-name']" => name.to_string(),
                "spec.nodeName" => format!("node-{i}"),
                "metadata.name" => format!("{name}-{i}-abcde"),
                "metadata.namespace" => "default".to_string(),
                other => panic!("a field the test does not resolve: {other}"),
            }
        } else if e["valueFrom"]["secretKeyRef"].is_object() {
            "a-token".into()
        } else {
            panic!("an env entry the test does not resolve: {e}")
        };
        out.push((key, value));
    }
    out
}

fn runs(store: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(store.join("runs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("manifest.json").is_file())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_pods_command_lines_run_here_merge_their_shards_into_one_run() {
    let sim = Sim::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let layers = format!(
        "{MICRO}    component:
      - kind: serve
        target: {{url: '{}', api: chat, model: sim-llama}}
        scenarios: [\"D(20,10)\"]
        load: {{mode: concurrency, values: [4]}}
        stop: {{maxRequests: 40, maxDuration: 60s}}
",
        sim.url
    );
    let spec = spec(dir.path(), "pods-local", "nodes: 2", &layers);
    let out = dir.path().join("k8s");
    render(&spec, &out, &["--pvc", "results"]);
    let job = read_yaml(&out.join("02-job.yaml"));
    // What the pods mount: the ConfigMap's spec at /spec/spec.yaml, the claim at /results.
    let cm = read_yaml(&out.join("00-configmap.yaml"));
    let mounted = dir.path().join("spec-volume/spec.yaml");
    std::fs::create_dir_all(mounted.parent().unwrap()).unwrap();
    std::fs::write(&mounted, cm["data"]["spec.yaml"].as_str().unwrap()).unwrap();
    let results = dir.path().join("claim");
    std::fs::create_dir_all(&results).unwrap();
    // `--json` (a global flag) for the outputs' schemas; the Job's pods log the text form.
    let pods: Vec<_> = (0..2)
        .map(|i| {
            pod_command(&job, &pod_env(&job, i), &mounted, &results)
                .arg("--json")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = pods
        .into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect();
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "pod {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let v0 = json(&outs[0]);
    crate::schema_cli::assert_conforms("run", &v0);
    assert_eq!(v0["status"], "complete", "{v0}");
    let v1 = json(&outs[1]);
    crate::schema_cli::assert_conforms("run-member", &v1);
    assert_eq!(v1["index"], 1);
    // Pod 1 took part in the three replicates of the serve point and stored no run: the store
    // holds exactly one, pod 0's.
    assert_eq!(v1["steps"].as_array().unwrap().len(), 3, "{v1}");
    let store = results.join("store");
    let stored = runs(&store);
    assert_eq!(stored.len(), 1, "{stored:?}");
    // The shards are in the run; the shared directory keeps none of them.
    let steps = results.join("shards/yardstick-pods-local-x7k2p/steps");
    assert!(
        std::fs::read_dir(&steps).map_or(true, |mut d| d.next().is_none()),
        "{}",
        steps.display()
    );
    let run = &stored[0];
    assert_eq!(run, Path::new(v0["dir"].as_str().unwrap()));
    for r in 0..3 {
        let rec: Value = serde_json::from_slice(
            &std::fs::read(run.join(format!(
                "results/component.0.serve_D_20_10_concurrency_4/r{r}.json"
            )))
            .unwrap(),
        )
        .unwrap();
        let s = &rec["summary"];
        // Two shards of 20 requests each, merged into the point's 40, as one client would.
        assert_eq!(s["load"]["shards"], 2, "{s}");
        assert_eq!(s["requests"]["completed"], 40, "{s}");
        assert!(s["ttft_ms"]["p50"].as_f64().unwrap() > 0.0, "{s}");
    }
    // Every pod's environment and micro figures, and their nodes check, are in the one run.
    for i in 0..2 {
        let env: Value = serde_json::from_slice(
            &std::fs::read(run.join(format!("pods/env/pod-{i}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(env["pod"]["index"], i, "{env}");
        assert_eq!(env["pod"]["node"], format!("node-{i}"));
        assert!(run.join(format!("pods/micro/pod-{i}.json")).is_file());
    }
    let nodes: Value =
        serde_json::from_slice(&std::fs::read(run.join("pods/nodes.json")).unwrap()).unwrap();
    assert_eq!(
        nodes["nodes"],
        serde_json::json!(["pod-0", "pod-1"]),
        "{nodes}"
    );
    assert_eq!(v0["summary"]["nodes"], nodes);
    let group: Value =
        serde_json::from_slice(&std::fs::read(run.join("pods/group.json")).unwrap()).unwrap();
    assert_eq!(group["job"], "yardstick-pods-local-x7k2p");
    assert_eq!(group["steps"].as_array().unwrap().len(), 3, "{group}");
    let o = yardstick()
        .args(["verify", v0["run_id"].as_str().unwrap(), "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

/// Runs the rendered Job `job` here as `n` pods of the Job named `name`, with `env` over what
/// the Job gives them; their outputs.
fn run_pods(
    job: &Value,
    name: &str,
    n: u32,
    spec: &Path,
    results: &Path,
    env: &[(&str, &str)],
) -> Vec<std::process::Output> {
    let pods: Vec<_> = (0..n)
        .map(|i| {
            pod_command(job, &job_pod_env(job, name, i), spec, results)
                .envs(env.iter().copied())
                .arg("--json")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    pods.into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect()
}

#[test]
fn a_command_point_runs_once_per_pod_as_a_rank_and_a_failed_rank_fails_the_replicate() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    // Each rank notes what it was told; rank 1 fails once `fail` exists.
    let script = format!(
        "echo \"$RANK/$WORLD_SIZE $MASTER_ADDR:$MASTER_PORT\" >> {m}/rank-$RANK; \
         [ \"$RANK\" = 0 ] || [ ! -f {m}/fail ]",
        m = marks.display()
    );
    let layers = format!(
        "    e2e:\n      - kind: command\n        command: [sh, -c, {}]\n        timeout: 1m\n",
        serde_json::to_string(&script).unwrap()
    );
    let spec = spec(dir.path(), "ranks", "nodes: 2", &layers);
    let out = dir.path().join("k8s");
    render(&spec, &out, &["--pvc", "results"]);
    let job = read_yaml(&out.join("02-job.yaml"));
    let results = dir.path().join("claim");
    let outs = run_pods(&job, "yardstick-ranks-a1", 2, &spec, &results, &[]);
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "pod {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(json(&outs[0])["status"], "complete");
    // Three replicates, each run once by each pod with its rank and pod 0 as the master.
    for rank in 0..2 {
        let lines = std::fs::read_to_string(marks.join(format!("rank-{rank}"))).unwrap();
        assert_eq!(
            lines.lines().collect::<Vec<_>>(),
            vec![format!("{rank}/2 yardstick-ranks-a1-0.yardstick-ranks:29500"); 3],
            "{lines}"
        );
    }
    // A rank that fails fails the replicate, named; pod 0 still stores the (complete) run and
    // exits 1 (every replicate of the point failed); pod 1 reported its parts, so it exits 0 —
    // the Job's outcome is pod 0's, and a failing pod 1 would have the Job controller end pod 0.
    std::fs::write(marks.join("fail"), "").unwrap();
    let outs = run_pods(&job, "yardstick-ranks-b2", 2, &spec, &results, &[]);
    assert_eq!(
        outs[0].status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&outs[0].stderr)
    );
    assert_eq!(outs[1].status.code(), Some(0));
    let v1 = json(&outs[1]);
    assert!(
        v1["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["done"]["exit_code"] == 1),
        "{v1}"
    );
    let v = json(&outs[0]);
    assert_eq!(v["status"], "complete", "{v}");
    let failures = v["summary"]["failures"].to_string();
    assert!(failures.contains("rank 1 failed"), "{failures}");
    assert_eq!(runs(&results.join("store")).len(), 2);
}

/// The server under test on Kubernetes: pod 0 starts each treatment's server (here the
/// simulator, as the image's server program would be) and both pods' shards drive it at
/// `{host}` — pod 0's address through the headless Service, which the test maps to this
/// machine's loopback as it maps the claim to a directory. A treatment whose server never gets
/// ready is skipped by both pods (pod 1 does not wait for it) and kept as infeasible.
#[test]
fn pod_0_starts_the_server_under_test_and_every_pod_drives_it() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let layers = "    component:
      - kind: serve
        target: {url: 'http://{host}:{port}', api: chat, model: m}
        scenarios: [\"D(20,10)\"]
        load: {mode: concurrency, values: [4]}
        stop: {maxRequests: 40, maxDuration: 60s}
";
    let text = std::fs::read_to_string(spec(dir.path(), "pods-sut", "nodes: 2", layers))
        .unwrap()
        .replace(
            "  layers:",
            &format!(
                "  server:
    command: [sh, -c, \"echo $JOB_COMPLETION_INDEX {{slots}} >> {starts}; exec {bin} sim --port {{port}} --max-running {{slots}} --ttft-ms 20 --itl-ms 2\"]
    ready: {{http: \"http://127.0.0.1:{{port}}/health\", timeout: 20s}}
    stop: {{grace: 5s}}
  sweep:
    factors: {{slots: [0, 1, 4]}}
  layers:",
                starts = starts.display(),
                bin = env!("CARGO_BIN_EXE_yardstick"),
            ),
        );
    let spec = dir.path().join("pods-sut.yaml");
    std::fs::write(&spec, text).unwrap();
    let out = dir.path().join("k8s");
    render(&spec, &out, &["--pvc", "results"]);
    let job = read_yaml(&out.join("02-job.yaml"));
    let results = dir.path().join("claim");
    std::fs::create_dir_all(&results).unwrap();
    // The headless Service's name for pod 0 is this machine here.
    let outs = run_pods(
        &job,
        "yardstick-pods-sut-x1",
        2,
        &spec,
        &results,
        &[("MASTER_ADDR", "127.0.0.1")],
    );
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "pod {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let v0 = json(&outs[0]);
    assert_eq!(v0["status"], "complete", "{v0}");
    // Only pod 0 ever started a server.
    let log = std::fs::read_to_string(&starts).unwrap();
    assert!(
        !log.is_empty() && log.lines().all(|l| l.starts_with("0 ")),
        "{log}"
    );
    // Pod 1 drove the feasible treatments' replicates and passed the infeasible one's by.
    let v1 = json(&outs[1]);
    let parts: Vec<&str> = v1["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["part"].as_str().unwrap())
        .collect();
    assert_eq!(
        parts.iter().filter(|p| **p == "serve-shard").count(),
        6,
        "{v1}"
    );
    assert_eq!(parts.iter().filter(|p| **p == "skipped").count(), 3, "{v1}");
    let run = Path::new(v0["dir"].as_str().unwrap());
    for slots in [1, 4] {
        for r in 0..3 {
            let rec: Value = serde_json::from_slice(
                &std::fs::read(run.join(format!(
                    "results/component.0.serve_D_20_10_concurrency_4_slots_{slots}/r{r}.json"
                )))
                .unwrap(),
            )
            .unwrap();
            let s = &rec["summary"];
            assert_eq!(s["load"]["shards"], 2, "{s}");
            assert_eq!(s["requests"]["completed"], 40, "{s}");
        }
    }
    let sweep = v0["summary"]["sweep"].as_array().unwrap();
    let status = |id: &str| {
        sweep
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("{sweep:?}"))["status"]
            .clone()
    };
    assert_eq!(status("slots=0"), "infeasible", "{sweep:?}");
    assert_eq!(status("slots=4"), "measured", "{sweep:?}");
    // A loopback target with several pods is refused before any work: only pod 0 has the server.
    let loopback = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("http://{host}:{port}", "http://127.0.0.1:{port}");
    std::fs::write(&spec, loopback).unwrap();
    let o = pod_command(
        &job,
        &job_pod_env(&job, "yardstick-pods-sut-x2", 0),
        &spec,
        &results,
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("give the target as `http://{host}:{port}`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_pod_that_never_comes_leaves_the_run_incomplete_instead_of_hanging() {
    let sim = Sim::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let layers = format!(
        "    component:
      - kind: serve
        target: {{url: '{}', api: chat, model: sim-llama}}
        scenarios: [\"D(20,10)\"]
        load: {{mode: concurrency, values: [2]}}
        stop: {{maxRequests: 10, maxDuration: 60s}}
",
        sim.url
    );
    let spec = spec(dir.path(), "pods-alone", "nodes: 2", &layers);
    let out = dir.path().join("k8s");
    render(&spec, &out, &["--pvc", "results"]);
    let job = read_yaml(&out.join("02-job.yaml"));
    let results = dir.path().join("claim");
    let started = std::time::Instant::now();
    let o = pod_command(&job, &pod_env(&job, 0), &spec, &results)
        .args(["--json", "--shard-timeout", "2s"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(started.elapsed().as_secs() < 60);
    let v = json(&o);
    assert_eq!(v["status"], "incomplete", "{v}");
    let manifest =
        std::fs::read_to_string(Path::new(v["dir"].as_str().unwrap()).join("manifest.json"))
            .unwrap();
    assert!(
        manifest.contains("pod(s) 1 never reached step"),
        "{manifest}"
    );
    // The pod that comes late finds the run given up and stops at once.
    let o = pod_command(&job, &pod_env(&job, 1), &spec, &results)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("member 0 gave up"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    // A bad spec: every diagnostic at file:line:col, exit 2, nothing written.
    let bad = dir.path().join("bad.yaml");
    let text = std::fs::read_to_string(spec(dir.path(), "bad", "nodes: 0", MICRO)).unwrap();
    std::fs::write(&bad, text).unwrap();
    let out = dir.path().join("k8s");
    let o = yardstick()
        .args(["k8s", "render"])
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .args(["--push", "http://x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    let at = format!("{}:", bad.display());
    assert!(
        e.lines()
            .any(|l| l.starts_with(&at) && l.contains("execution-config")),
        "{e}"
    );
    assert!(!out.exists());
    // Several pods without a shared claim.
    let two = spec(dir.path(), "two", "nodes: 2", MICRO);
    let o = yardstick()
        .args(["k8s", "render"])
        .arg(&two)
        .args(["--push", "http://x", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pvc"));
    // Not a kubernetes spec.
    let local = dir.path().join("local.yaml");
    std::fs::write(&local, layered_spec("local", MICRO)).unwrap();
    let o = yardstick()
        .args(["k8s", "render"])
        .arg(&local)
        .args(["--push", "http://x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("engine: kubernetes"));
    // No cluster configured: submit says so, with the way around.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let o = yardstick()
        .args(["k8s", "submit"])
        .arg(&two)
        .args(["--pvc", "results"])
        .env("HOME", &home)
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no Kubernetes cluster is configured"), "{e}");
    assert!(e.contains("kubectl apply -f"), "{e}");
    // `yardstick run` of a kubernetes spec outside a pod points at k8s render.
    let o = yardstick()
        .args(["run"])
        .arg(&two)
        .arg("--store")
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("yardstick k8s render"), "{e}");
    assert!(!dir.path().join("store/runs").exists());
    // A bad --shard.
    let o = yardstick()
        .args(["run"])
        .arg(&two)
        .args(["--shard", "2/2", "--shard-dir"])
        .arg(dir.path().join("shards"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--shard"));
}

#[test]
fn submit_with_a_kubeconfig_but_without_the_client_explains_how_to_get_it() {
    if cfg!(feature = "kubernetes-client") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let one = spec(dir.path(), "one", "nodes: 1", MICRO);
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, "apiVersion: v1\nkind: Config\n").unwrap();
    let o = yardstick()
        .args(["k8s", "submit"])
        .arg(&one)
        .args(["--push", "http://x"])
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--features kubernetes-client"), "{e}");
    assert!(e.contains("kubectl apply -f DIR"), "{e}");
}

/// A fake Kubernetes API server on 127.0.0.1: it answers server-side apply with the object sent,
/// a Job that is suspended once and then complete, pod 0 of the Job and its log; it records
/// every request as `METHOD PATH`.
#[cfg(feature = "kubernetes-client")]
struct FakeApi {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[cfg(feature = "kubernetes-client")]
impl FakeApi {
    fn start() -> FakeApi {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let seen = requests.clone();
        let job: std::sync::Arc<std::sync::Mutex<Option<Value>>> = Default::default();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = seen.clone();
                let job = job.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut len = 0;
                        loop {
                            let mut h = String::new();
                            reader.read_line(&mut h).unwrap();
                            if h.trim().is_empty() {
                                break;
                            }
                            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                len = v.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; len];
                        reader.read_exact(&mut body).unwrap();
                        let mut parts = line.split_whitespace();
                        let (method, target) = (parts.next().unwrap(), parts.next().unwrap());
                        let path = target.split('?').next().unwrap().to_string();
                        let n = {
                            let mut s = seen.lock().unwrap();
                            s.push(format!("{method} {path}"));
                            s.iter()
                                .filter(|r| r.starts_with("GET /apis/batch"))
                                .count()
                        };
                        let (ctype, answer) = if method == "PATCH" {
                            let v: Value = serde_json::from_slice(&body).unwrap();
                            if v["kind"] == "Job" {
                                *job.lock().unwrap() = Some(v.clone());
                            }
                            ("application/json", v.to_string())
                        } else if path.ends_with("/log") {
                            (
                                "text/plain",
                                "run 01FAKERUN: complete\n  pushed to the server\n".to_string(),
                            )
                        } else if path.ends_with("/pods") {
                            let list = serde_json::json!({
                                "apiVersion": "v1", "kind": "PodList", "metadata": {},
                                "items": [{"metadata": {"name": "j-0-abcde", "annotations": {
                                    "batch.kubernetes.io/job-completion-index": "0"}}}]
                            });
                            ("application/json", list.to_string())
                        } else {
                            let mut j = job.lock().unwrap().clone().unwrap();
                            if n >= 2 {
                                j["spec"]["suspend"] = false.into();
                                j["status"] = serde_json::json!({"succeeded": 1, "conditions": [
                                    {"type": "Complete", "status": "True"}]});
                            }
                            ("application/json", j.to_string())
                        };
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                    }
                });
            }
        });
        FakeApi { url, requests }
    }
}

#[cfg(feature = "kubernetes-client")]
#[test]
fn submit_applies_every_object_follows_the_job_and_prints_pod_0s_output() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {{server: '{}'}}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context: {{cluster: fake, \
             user: u, namespace: perf}}\ncurrent-context: c\n",
            api.url
        ),
    )
    .unwrap();
    let one = spec(dir.path(), "one", "nodes: 1, queue: team-a", MICRO);
    let o = yardstick()
        .args(["--json", "k8s", "submit"])
        .arg(&one)
        .args(["--push", "http://yardstick.perf.svc:8686"])
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    crate::schema_cli::assert_conforms("k8s-submit", &v);
    assert_eq!(v["state"], "Complete", "{v}");
    assert_eq!(v["namespace"], "perf");
    assert!(v["pod0_log"].as_str().unwrap().contains("01FAKERUN"), "{v}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("Suspended (waiting for Kueue to admit it)"),
        "{e}"
    );
    let requests = api.requests.lock().unwrap().clone();
    for want in [
        "PATCH /api/v1/namespaces/perf/configmaps/yardstick-one-spec",
        "PATCH /api/v1/namespaces/perf/services/yardstick-one",
        "PATCH /apis/batch/v1/namespaces/perf/jobs/yardstick-one",
        "GET /apis/batch/v1/namespaces/perf/jobs/yardstick-one",
        "GET /api/v1/namespaces/perf/pods",
        "GET /api/v1/namespaces/perf/pods/j-0-abcde/log",
    ] {
        assert!(requests.iter().any(|r| r == want), "{want}: {requests:#?}");
    }
}
