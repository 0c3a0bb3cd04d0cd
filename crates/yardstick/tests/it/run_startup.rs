//! `kind: startup` component layers through `yardstick run`: the real `yardstick sim` and the
//! real llama.cpp server (llama-cpp-python with SmolLM2) started, timed to ready, and stopped,
//! cold and warm.

use std::net::TcpListener;
use std::path::Path;

use serde_json::Value;

use crate::common::{layered_spec, run_spec, yardstick};
use crate::external;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn startup_spec(name: &str, layer: &str) -> String {
    layered_spec(
        name,
        &format!("    component:\n      - kind: startup\n{layer}\n"),
    )
}

/// The aggregate of `metric` at `point`, with its n.
fn fact(v: &Value, point: &str, metric: &str) -> Option<(f64, u64)> {
    let p = v["summary"]["points"]
        .as_array()?
        .iter()
        .find(|p| p["id"] == point)?;
    let f = &p["metrics"][metric]["value"];
    Some((f["mean"].as_f64()?, f["n"].as_u64()?))
}

fn run_ok(dir: &Path, name: &str, layer: &str) -> Value {
    let spec = dir.join(format!("{name}.yaml"));
    std::fs::write(&spec, startup_spec(name, layer)).unwrap();
    let o = run_spec(&spec, &dir.join("store"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_simulator_is_timed_to_ready_cold_and_warm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let bin = env!("CARGO_BIN_EXE_yardstick");
    let layer = format!(
        "        command: [{bin}, sim, --port, \"{port}\"]
        ready: {{http: \"http://127.0.0.1:{port}/health\"}}
        cache: [cold, warm]
        timeout: 30s
        grace: 5s"
    );
    let v = run_ok(dir.path(), "startup-sim", &layer);
    assert_eq!(v["status"], "complete", "{v}");
    for point in ["component.0.startup/cold", "component.0.startup/warm"] {
        let (ready, n) = fact(&v, point, "time_to_ready_s").expect(point);
        assert_eq!(n, 3, "{point}");
        let (listen, _) = fact(&v, point, "time_to_listen_s").expect(point);
        let (first, _) = fact(&v, point, "time_to_first_output_s").expect(point);
        let (shutdown, _) = fact(&v, point, "shutdown_s").expect(point);
        let (rss, _) = fact(&v, point, "startup_peak_rss_bytes").expect(point);
        // The simulator binds, prints `listening on`, then answers: listen ≤ ready, all under
        // the timeout; it exits on SIGTERM well within the grace period.
        assert!(listen <= ready && ready < 30.0, "{point}: {listen} {ready}");
        assert!(first > 0.0 && first < 30.0, "{point}: {first}");
        assert!(shutdown > 0.0 && shutdown < 5.0, "{point}: {shutdown}");
        assert!(rss > 1e6, "{point}: {rss}");
        eprintln!(
            "yardstick sim {point}: ready {:.1} ms, listen {:.1} ms, first output {:.1} ms, shutdown {:.1} ms",
            ready * 1e3,
            listen * 1e3,
            first * 1e3,
            shutdown * 1e3
        );
    }
    // Each replicate says which cache state it measured, and whether a cold one was cold.
    let run_dir = Path::new(v["dir"].as_str().unwrap_or_default()).to_path_buf();
    let run_dir = if run_dir.as_os_str().is_empty() {
        dir.path()
            .join("store/runs")
            .join(v["run_id"].as_str().unwrap())
    } else {
        run_dir
    };
    let r0: Value = serde_json::from_slice(
        &std::fs::read(run_dir.join("results/component.0.startup_cold/r0.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r0["summary"]["cache"], "cold");
    assert!(r0["summary"]["cache_dropped"].is_boolean(), "{r0}");
    if r0["summary"]["cache_dropped"] == false {
        assert!(
            r0["summary"]["warnings"][0]
                .as_str()
                .unwrap()
                .contains("not cold"),
            "{r0}"
        );
    }
}

#[test]
fn a_log_line_is_ready_and_a_command_that_dies_is_a_failed_replicate() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_ok(
        dir.path(),
        "startup-log",
        "        command: [sh, -c, \"sleep 0.2; echo 'model loaded'; exec sleep 60\"]
        ready: {log: \"model loaded\"}
        grace: 5s",
    );
    let (ready, n) = fact(&v, "component.0.startup/warm", "time_to_ready_s").unwrap();
    assert_eq!(n, 3);
    assert!((0.15..5.0).contains(&ready), "{ready}");

    // Exits before ready: every replicate failed, the point measured nothing (exit 1).
    let spec = dir.path().join("dies.yaml");
    std::fs::write(
        &spec,
        startup_spec(
            "startup-dies",
            "        command: [sh, -c, \"echo starting; exit 3\"]
        ready: {log: \"never printed\"}",
        ),
    )
    .unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let failures = v["summary"]["failures"].to_string();
    assert!(
        failures.contains("exited with status 3 before it was ready"),
        "{failures}"
    );
}

#[test]
fn a_startup_layer_without_a_readiness_check_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.yaml");
    std::fs::write(
        &spec,
        startup_spec(
            "startup-bad",
            "        command: [\"true\"]\n        cache: [cold, cold]",
        ),
    )
    .unwrap();
    let o = yardstick().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("error[startup-config]") && e.contains("needs `ready`"),
        "{e}"
    );
    std::fs::write(
        &spec,
        startup_spec(
            "startup-bad",
            "        command: [\"true\"]\n        ready: {http: \"https://x/\", log: up}",
        ),
    )
    .unwrap();
    let o = yardstick().arg("validate").arg(&spec).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("exactly one of `http`, `log`"), "{e}");
    assert!(e.contains("must be an http:// URL"), "{e}");
}

#[test]
fn llama_cpp_with_smollm2_is_timed_to_ready_cold_and_warm() {
    let Some((python, model)) = external::require(
        "llama-cpp-server",
        "llama_cpp_with_smollm2_is_timed_to_ready_cold_and_warm",
        &format!(
            "llama-cpp-python[server] and the SmolLM2 GGUF: set YARDSTICK_LLAMA_PYTHON and \
             YARDSTICK_LLAMA_MODEL, or let .ci/run install them under {}",
            crate::eval_real_model::DEFAULT_DIR
        ),
        crate::eval_real_model::locate(),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let layer = format!(
        "        command: [{}, -m, llama_cpp.server, --model, {}, --host, 127.0.0.1, --port, \"{port}\", --n_ctx, \"512\", --n_threads, \"2\"]
        ready: {{http: \"http://127.0.0.1:{port}/v1/models\"}}
        cache: [cold, warm]
        timeout: 180s
        grace: 10s",
        python.display(),
        model.display()
    );
    let v = run_ok(dir.path(), "startup-llama", &layer);
    assert_eq!(v["status"], "complete", "{v}");
    for point in ["component.0.startup/cold", "component.0.startup/warm"] {
        let (ready, n) = fact(&v, point, "time_to_ready_s").expect(point);
        let (listen, _) = fact(&v, point, "time_to_listen_s").expect(point);
        let (rss, _) = fact(&v, point, "startup_peak_rss_bytes").expect(point);
        assert_eq!(n, 3);
        assert!(
            listen <= ready && ready < 180.0,
            "{point}: {listen} {ready}"
        );
        // The model's weights are in memory once it answers.
        assert!(rss > 50e6, "{point}: {rss}");
        eprintln!(
            "llama.cpp SmolLM2-135M {point}: ready {ready:.2} s, listen {listen:.2} s, peak RSS {:.0} MB",
            rss / 1e6
        );
    }
}

#[test]
fn the_startup_example_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/startup.yaml");
    // As a user who installed yardstick runs it: `yardstick` on the PATH.
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
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for point in ["component.0.startup/cold", "component.0.startup/warm"] {
        assert_eq!(fact(&v, point, "time_to_ready_s").unwrap().1, 3, "{point}");
    }
}
