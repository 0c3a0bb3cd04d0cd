//! `yardstick_run::execute` in process: a serve point against the embedded simulator
//! (`target: {url: sim}`), a command point, a replicate that fails, and a run interrupted after
//! its first replicate and resumed. Each test stores its run in a temporary directory and reads
//! back what a user would find there: the outcome, `summary.json`, the sealed records, the files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use yardstick_run::{Event, RunOptions, RunOutcome, execute};
use yardstick_spec::BenchmarkRun;
use yardstick_store::{RunStatus, ToolInfo};

/// The events of a run, as lines (`started <done>/<steps>`, `step <point> r<n>`,
/// `done <point> r<n>`, `warning <text>`).
type Events = Arc<Mutex<Vec<String>>>;

/// A spec checked as `yardstick run` checks it; panics on any error.
pub(crate) fn checked(text: &str) -> BenchmarkRun {
    let c = yardstick_spec::check_str(text);
    assert!(c.is_valid(), "{:#?}", c.diagnostics);
    c.spec.expect("a decoded spec")
}

/// Options of an in-process run storing under `store`; every event goes to the returned list,
/// and `cancel` (when given) is cancelled once `cancel_after` replicates are done.
pub(crate) fn options(
    store: &Path,
    cancel_after: Option<(usize, CancellationToken)>,
) -> (RunOptions, Events) {
    let events: Events = Arc::default();
    let seen = events.clone();
    let cancel = cancel_after
        .as_ref()
        .map_or_else(CancellationToken::new, |(_, c)| c.clone());
    let on_event = Box::new(move |e: Event| {
        let line = match e {
            Event::Started { steps, done, .. } => format!("started {done}/{steps}"),
            Event::Step {
                point, replicate, ..
            } => format!("step {point} r{replicate}"),
            Event::StepDone {
                point, replicate, ..
            } => format!("done {point} r{replicate}"),
            Event::Warning(w) => format!("warning {w}"),
            Event::Note(n) => format!("note {n}"),
        };
        let mut all = seen.lock().unwrap();
        all.push(line);
        if let Some((n, token)) = &cancel_after
            && all.iter().filter(|l| l.starts_with("done ")).count() >= *n
        {
            token.cancel();
        }
    });
    let opts = RunOptions {
        store: store.to_path_buf(),
        warehouse: None,
        tool: ToolInfo {
            name: "yardstick".into(),
            version: "0.0.0-test".into(),
            git_commit: None,
        },
        cancel,
        seed: 7,
        on_event,
        self_exe: PathBuf::from("yardstick"),
        only_points: None,
        spec_dir: None,
        inputs_from: None,
        telemetry_interval: std::time::Duration::from_millis(200),
        slurm: None,
        pods: None,
        before_seal: None,
        hot: Vec::new(),
    };
    (opts, events)
}

/// A spec (as JSON, which is YAML too) named `name` with `workload` and `layers`: an
/// exploratory run of 3 replicates, warm-up `warmup`.
fn spec(name: &str, workload: Value, warmup: Value, layers: Value) -> String {
    let body = json!({
        "apiVersion": "yardstick/v1",
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": {
            "mode": "exploratory",
            "workload": workload,
            "trials": {
                "replicates": 3,
                "warmup": warmup,
                "confidenceLevel": 0.95,
                "outlierPolicy": "report-tukey",
            },
            "layers": layers,
        },
    });
    serde_json::to_string_pretty(&body).unwrap()
}

/// One serve point (concurrency 1) against the embedded simulator, 6 requests a replicate.
pub(crate) fn serve_spec() -> String {
    let lengths = "D(20,10)";
    spec(
        "execute-serve",
        json!({
            "model": "sim-llama", "precision": "bf16", "sequenceLengths": lengths,
            "batching": "continuous", "concurrency": [1],
            "dataset": {"kind": "synthetic", "seed": 1}, "correctness": {"policy": "none"},
        }),
        json!({"requests": 1}),
        json!({"component": [{
            "kind": "serve",
            "target": {"url": "sim", "api": "chat", "model": "sim-llama"},
            "scenarios": [lengths],
            "load": {"mode": "concurrency", "values": [1]},
            "stop": {"maxRequests": 6, "maxDuration": "30s"},
        }]}),
    )
}

/// One command point: the command counts its invocations in `dir/calls` and exits 5 on the
/// invocations listed in `fail` (0-based); otherwise it reports 4 steps.
fn command_spec(dir: &Path, fail: &[u32]) -> String {
    let state = dir.join("calls").display().to_string();
    let fail_list = fail
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    let script = format!(
        "n=$(cat '{state}' 2>/dev/null || echo 0); echo $((n + 1)) > '{state}'; \
         for f in {fail_list}; do [ $n = $f ] && exit 5; done; \
         for i in 0 1 2 3; do echo \"{{\\\"step\\\":$i,\\\"step_time_s\\\":0.01}}\" >> \"$YARDSTICK_METRICS\"; done"
    );
    spec(
        "execute-command",
        json!({
            "model": "fake", "precision": "fp32", "sequenceLengths": 16, "batching": "static",
            "concurrency": 1, "dataset": {"kind": "synthetic", "seed": 1},
            "correctness": {"policy": "none"},
        }),
        json!({"steps": 1}),
        json!({"e2e": [{"kind": "command", "command": ["sh", "-c", script], "timeout": "1m"}]}),
    )
}

/// Files of a run directory, relative to it, sorted.
pub(crate) fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The sealed record of every replicate (`results/<point>/rN.json`), in path order.
fn records(out: &RunOutcome) -> Vec<serde_json::Value> {
    files(&out.dir)
        .into_iter()
        .filter(|f| f.starts_with("results/"))
        .map(|f| serde_json::from_slice(&std::fs::read(out.dir.join(f)).unwrap()).unwrap())
        .collect()
}

fn run(text: &str, store: &Path, resume: Option<&str>) -> (RunOutcome, Vec<String>) {
    let (opts, events) = options(store, None);
    let out = execute(text, &checked(text), resume, opts).expect("the run executes");
    let events = events.lock().unwrap().clone();
    (out, events)
}

#[test]
fn a_serve_point_runs_against_the_simulator_and_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (out, events) = run(&serve_spec(), &dir.path().join("store"), None);
    assert_eq!(out.status, RunStatus::Complete, "{events:?}");
    assert!(!out.signed);
    let stored = files(&out.dir);
    for r in 0..3 {
        for kind in ["samples", "results"] {
            let ext = if kind == "samples" { "parquet" } else { "json" };
            assert!(
                stored
                    .iter()
                    .any(|f| f.starts_with(&format!("{kind}/"))
                        && f.ends_with(&format!("/r{r}.{ext}"))),
                "{kind} of r{r} in {stored:?}"
            );
        }
    }
    for f in [
        "summary.json",
        "env.json",
        "env.after.json",
        "manifest.json",
        "spec.yaml",
    ] {
        assert!(stored.iter().any(|s| s == f), "{f} in {stored:?}");
    }
    let recs = records(&out);
    assert_eq!(recs.len(), 3);
    for r in &recs {
        assert!(r["summary"].get("error").is_none(), "{r}");
        assert!(
            r["samples"]
                .as_str()
                .is_some_and(|s| s.ends_with(".parquet")),
            "{r}"
        );
        assert!(
            r["figures"]["measurements"]
                .as_array()
                .is_some_and(|m| !m.is_empty()),
            "{r}"
        );
    }
    let summary = out.summary.as_ref().expect("a complete run has a summary");
    assert!(summary.failures().is_empty());
    assert!(out.points_that_measured_nothing().is_empty());
    assert_eq!(
        events.iter().filter(|e| e.starts_with("done ")).count(),
        3,
        "{events:?}"
    );
    assert_eq!(events[0], "started 0/3");
    // What was stored is what the outcome says.
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(on_disk, serde_json::to_value(summary).unwrap());
}

#[test]
fn a_command_point_runs_its_command_and_stores_its_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (out, events) = run(
        &command_spec(dir.path(), &[]),
        &dir.path().join("store"),
        None,
    );
    assert_eq!(out.status, RunStatus::Complete, "{events:?}");
    let stored = files(&out.dir);
    for r in 0..3 {
        assert!(
            stored
                .iter()
                .any(|f| f.starts_with("logs/") && f.contains(&format!("/r{r}/"))),
            "logs of r{r} in {stored:?}"
        );
    }
    let recs = records(&out);
    assert_eq!(recs.len(), 3);
    for r in &recs {
        assert!(r["summary"].get("error").is_none(), "{r}");
        assert_eq!(r["summary"]["exit_code"], 0, "{r}");
    }
    assert!(out.summary.as_ref().unwrap().failures().is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calls"))
            .unwrap()
            .trim(),
        "3"
    );
    assert!(
        !events.iter().any(|e| e.starts_with("warning ")),
        "{events:?}"
    );
}

#[test]
fn a_failed_replicate_is_stored_as_a_failure_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (out, events) = run(
        &command_spec(dir.path(), &[1]),
        &dir.path().join("store"),
        None,
    );
    assert_eq!(out.status, RunStatus::Complete, "{events:?}");
    let failures = out.summary.as_ref().unwrap().failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].replicates, 3);
    assert_eq!(failures[0].failed.len(), 1);
    assert_eq!(failures[0].failed[0].replicate, 1);
    assert!(
        failures[0].failed[0].error.contains("exited with status 5"),
        "{failures:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("warning ") && e.contains("r1:") && e.contains("status 5")),
        "{events:?}"
    );
    // The failed replicate is sealed too, with its error and no figures aggregated.
    let recs = records(&out);
    assert_eq!(recs.len(), 3);
    assert!(recs[1]["summary"]["error"].is_string(), "{}", recs[1]);
    assert!(recs[0]["summary"].get("error").is_none());
    assert!(out.points_that_measured_nothing().is_empty());
    assert!(
        out.text().contains("1 of 3 replicates failed"),
        "{}",
        out.text()
    );
}

#[test]
fn an_interrupted_run_is_incomplete_and_resume_runs_only_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let text = command_spec(dir.path(), &[]);
    let token = CancellationToken::new();
    let (opts, events) = options(&store, Some((1, token)));
    let first = execute(&text, &checked(&text), None, opts).expect("the run executes");
    assert_eq!(first.status, RunStatus::Incomplete);
    assert!(first.summary.is_none());
    assert_eq!(records(&first).len(), 1, "{:?}", files(&first.dir));
    assert!(!first.dir.join("summary.json").exists());
    assert_eq!(
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.starts_with("done "))
            .count(),
        1
    );

    // A different spec does not resume it.
    let other = command_spec(dir.path(), &[2]);
    let (opts, _) = options(&store, None);
    let err = execute(&other, &checked(&other), Some(&first.run_id), opts).unwrap_err();
    assert!(err.to_string().contains("different spec"), "{err}");

    let (second, events) = run(&text, &store, Some(&first.run_id));
    assert_eq!(second.status, RunStatus::Complete, "{events:?}");
    assert_eq!(second.run_id, first.run_id);
    assert_eq!(second.dir, first.dir);
    assert_eq!(events[0], "started 1/3", "{events:?}");
    assert_eq!(
        events.iter().filter(|e| e.starts_with("step ")).count(),
        2,
        "{events:?}"
    );
    // Three replicates in all, each run once.
    assert_eq!(records(&second).len(), 3);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calls"))
            .unwrap()
            .trim(),
        "3"
    );
    assert!(second.summary.as_ref().unwrap().failures().is_empty());
    // The warehouse holds each replicate once.
    let db = rusqlite::Connection::open(store.join("yardstick.db")).unwrap();
    let n: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM replicates WHERE run_id = ?1",
            [&second.run_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 3);
}
