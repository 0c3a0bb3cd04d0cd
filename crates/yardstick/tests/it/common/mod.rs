//! Helpers shared by the CLI integration tests.
// The test modules of tests/it each use part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The built binary, with colour off and no store or metrics endpoint inherited from the
/// caller's environment.
pub fn yardstick() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env("NO_COLOR", "1")
        .env_remove("YARDSTICK_STORE")
        .env_remove("YARDSTICK_METRICS");
    c
}

/// A BenchmarkRun named `name` of one `kind: command` e2e layer running `command` (a YAML flow
/// list, e.g. `[sh, -c, "..."]`) with `extra` keys of the layer (e.g. `worldSizes: [1, 2]`):
/// 3 replicates, 1 warm-up step, a 1-minute timeout.
pub fn command_spec(name: &str, command: &str, extra: &[&str]) -> String {
    let mut layer = format!("      - kind: command\n        command: {command}\n");
    for e in extra {
        layer.push_str(&format!("        {e}\n"));
    }
    layered_spec(name, &format!("    e2e:\n{layer}        timeout: 1m\n"))
}

/// An exploratory BenchmarkRun named `name` whose `spec.layers` is `layers` (YAML indented by 4
/// spaces, e.g. `"    component:\n      - kind: startup\n..."`): 3 replicates, 1 warm-up step.
pub fn layered_spec(name: &str, layers: &str) -> String {
    format!(
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: {name}}}
spec:
  mode: exploratory
  workload:
    model: fake
    precision: fp32
    sequenceLengths: 16
    batching: static
    concurrency: 1
    dataset: {{kind: synthetic, seed: 1}}
    correctness: {{policy: none}}
  trials: {{replicates: 3, warmup: {{steps: 1}}, confidenceLevel: 0.95, outlierPolicy: report-tukey}}
  layers:
{layers}"
    )
}

/// `yardstick run --json -q SPEC --store STORE EXTRA...`; every metric it stored is in the
/// metric catalogue ([`assert_metrics_catalogued`]).
pub fn run_spec(spec: &std::path::Path, store: &std::path::Path, extra: &[&str]) -> Output {
    let out = yardstick()
        .args(["run", "--json", "-q"])
        .arg(spec)
        .arg("--store")
        .arg(store)
        .args(extra)
        .output()
        .unwrap();
    assert_metrics_catalogued(store);
    let _ = assert_figures_are_the_summaries(store);
    out
}

/// Every sealed result record under `store` carries `figures` (what its runner measured, from
/// its typed result) that are exactly the numbers of its `summary` (every number at the top of
/// the summary or one level down, read the way records without figures are read): the facts a
/// run stores say what its summaries say, for every kind of point. Returns the records read.
pub fn assert_figures_are_the_summaries(store: &std::path::Path) -> usize {
    use yardstick_store::record::{Figures, ReplicateRecord, legacy_figures};
    let key = |f: &Figures| {
        let mut v: Vec<(String, String, u64, String)> = f
            .measurements
            .iter()
            .map(|m| {
                (
                    m.metric.clone(),
                    m.statistic.clone(),
                    m.value.to_bits(),
                    m.unit().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let mut records = 0;
    for run in std::fs::read_dir(store.join("runs")).into_iter().flatten() {
        let results = run.unwrap().path().join("results");
        for point in std::fs::read_dir(&results).into_iter().flatten() {
            for rec in std::fs::read_dir(point.unwrap().path()).unwrap() {
                let path = rec.unwrap().path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let record = ReplicateRecord::read(&std::fs::read(&path).unwrap()).unwrap();
                let Some(typed) = record.figures.clone() else {
                    panic!("{}: a result record without figures", path.display());
                };
                let from_summary = legacy_figures(&record.summary);
                assert_eq!(
                    key(&typed),
                    key(&from_summary),
                    "{}: the figures (left) are not the summary's numbers (right)",
                    path.display()
                );
                if !typed.measurements.is_empty() {
                    assert_eq!(typed.n, from_summary.n, "{}: n", path.display());
                }
                records += 1;
            }
        }
    }
    records
}

/// Every metric with facts in `store`'s warehouse is in the metric catalogue
/// (`yardstick_spec::metrics`): a runner that stores a metric nobody catalogued fails here.
pub fn assert_metrics_catalogued(store: &std::path::Path) {
    let db = store.join("yardstick.db");
    if !db.exists() {
        return;
    }
    let c = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut q = c.prepare("SELECT DISTINCT metric FROM facts").unwrap();
    let unknown: Vec<String> = q
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .filter(|m| yardstick_spec::metrics::lookup(m).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "metrics stored but missing from the catalogue (crates/yardstick-spec/src/metrics.rs): \
         {unknown:?}"
    );
}

/// Standard output as JSON; panics with both streams when it is not.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `yardstick --json bench serve --url URL --model m ARGS...` with colours off.
pub fn bench_serve_json(url: &str, args: &[&str]) -> Output {
    yardstick()
        .env("NO_COLOR", "1")
        .args(["--json", "bench", "serve", "--url", url, "--model", "m"])
        .args(args)
        .output()
        .unwrap()
}

/// The JSON document of a successful `bench serve --json`, checked against its published
/// schema; panics with the exit code and standard error otherwise.
pub fn serve_doc(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(out);
    crate::schema_cli::assert_conforms("bench-serve", &v);
    v
}

/// Writes `spec` with each `(from, to, says)` replacement into `path` in turn and checks that
/// `yardstick validate` refuses it with exit 2, saying `says` at a `spec.yaml:` position.
pub fn assert_validate_refuses(path: &Path, spec: &str, cases: &[(&str, &str, &str)]) {
    for (from, to, says) in cases {
        assert!(spec.contains(from), "the spec has no `{from}`");
        std::fs::write(path, spec.replacen(from, to, 1)).unwrap();
        let o = yardstick()
            .args(["validate", path.to_str().unwrap()])
            .output()
            .unwrap();
        let err =
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(2), "{says}: {err}");
        assert!(
            err.contains(says) && err.contains("spec.yaml:"),
            "{says}: {err}"
        );
    }
}

/// A Python whose `import` of `modules` succeeds: `$YARDSTICK_PYTHON`, the virtualenv `.ci/run`
/// makes, or `python3`; recorded as external `component` of `test` (`how` says how to install
/// it when none is found).
pub fn python_importing(component: &str, test: &str, modules: &str, how: &str) -> Option<PathBuf> {
    let found = std::env::var_os("YARDSTICK_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            PathBuf::from("/var/tmp/yardstick-pytools/venv/bin/python"),
            PathBuf::from("python3"),
        ])
        .find(|p| {
            Command::new(p)
                .args(["-c", &format!("import {modules}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    yardstick_testsupport::external::require(component, test, how, found)
}

/// The lines of a `yardstick sim --log` file by request id.
pub fn sim_log_by_id(log: &Path) -> std::collections::HashMap<String, serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["request_id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// A running `yardstick sim` on an ephemeral loopback port, killed on drop.
pub struct Sim {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Sim {
    /// Starts `yardstick sim --port 0 ARGS...` and waits for its `listening on URL` line.
    pub fn start(args: &[&str]) -> Sim {
        Sim::start_on_port(0, args)
    }

    /// Starts `yardstick sim --port PORT ARGS...` (0: an ephemeral port), e.g. to replace a
    /// simulator by another at the same URL.
    pub fn start_on_port(port: u16, args: &[&str]) -> Sim {
        let mut child = Command::new(env!("CARGO_BIN_EXE_yardstick"))
            .env("NO_COLOR", "1")
            .args(["sim", "--port", &port.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn yardstick sim");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        let addr = url.strip_prefix("http://").unwrap_or(&url).to_string();
        Sim { child, url, addr }
    }
}

impl Sim {
    /// Kills the simulator now (a server dying mid-run).
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file under `dir` (recursively) whose extension is `ext`, sorted.
pub fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether process `pid` is still running: it has a `/proc` entry and is not a zombie nobody
/// has reaped yet. (The state follows the parenthesised command name, which may hold spaces.)
pub fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}
