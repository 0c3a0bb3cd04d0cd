//! Ctrl-C (SIGINT) and SIGTERM, with real signals sent to the built binary: one handler and one
//! cancellation token serve `run`, `bench serve`, `bench exec` and `sim`. The first signal stops
//! gracefully and keeps what finished; a second exits 130 at once and leaves no child behind.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Sim, alive, command_spec, files_under, json, yardstick};

fn signal(child: &Child, sig: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{sig} failed");
}

/// Waits (up to a minute) until `path` exists.
fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_stops_a_run_after_the_current_replicate_and_stores_it_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first-done");
    let second = dir.path().join("second-started");
    // The first replicate finishes at once; the next one waits until it is interrupted.
    let script = format!(
        "if [ -e {f} ]; then touch {s}; sleep 30; else touch {f}; fi",
        f = first.display(),
        s = second.display()
    );
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        command_spec("interrupted", &format!("[sh, -c, \"{script}\"]"), &[]),
    )
    .unwrap();
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
    wait_for(&second);
    let t0 = Instant::now();
    signal(&child, "INT");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        t0.elapsed() < Duration::from_secs(25),
        "the 30 s replicate was not cut short"
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted: finishing the current replicate"),
        "{err}"
    );
    let v = json(&o);
    let run_id = v["run_id"].as_str().unwrap_or_else(|| panic!("{v}"));
    // The stored run is incomplete and holds the replicate that finished, not the cut one.
    let verify = yardstick()
        .args(["verify", "--json", run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let r = json(&verify);
    assert_eq!(r["status"], "incomplete", "{r}");
    let results: Vec<_> = files_under(&store.join("runs").join(run_id), "json")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/results/"))
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
}

#[test]
fn ctrl_c_drains_a_serve_sweep_and_reports_it_interrupted() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "2"]);
    let mut child = yardstick()
        .args([
            "bench",
            "serve",
            "--json",
            "--url",
            &sim.url,
            "--model",
            "m",
            "--concurrency",
            "2",
            "--max-duration",
            "60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The point has started once its `point 1/1` line is on standard error.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "bench serve ended before its point started: {seen}"
        );
        seen.push_str(&line);
        if line.contains("point 1/1") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    signal(&child, "INT");
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let o = child.wait_with_output().unwrap();
    let err = seen + &rest.join().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(30), "not stopped early");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted: draining requests in flight"),
        "{err}"
    );
    let v = json(&o);
    let point = &v["points"][0];
    assert_eq!(point["stop_reason"], "interrupted", "{v}");
    assert!(
        point["requests"]["completed"].as_u64().unwrap_or(0) > 0,
        "{v}"
    );
}

#[test]
fn a_second_ctrl_c_exits_130_and_kills_a_child_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // The child ignores SIGTERM, so the first Ctrl-C waits out a long grace period.
    let script = format!(
        "trap '' TERM; echo $$ > {p}.tmp; mv {p}.tmp {p}; while :; do sleep 1; done",
        p = pidfile.display()
    );
    let child = yardstick()
        .args([
            "bench",
            "exec",
            "--json",
            "--runs",
            "2",
            "--kill-grace",
            "60s",
            "--",
        ])
        .args(["sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&pidfile);
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(&pid), "the child should still be in its grace period");
    signal(&child, "INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&pid) {
        assert!(Instant::now() < deadline, "child {pid} outlived yardstick");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_shuts_the_simulator_down_cleanly() {
    let mut child = yardstick()
        .args(["sim", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on "), "{line:?}");
    signal(&child, "TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the simulator ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}
