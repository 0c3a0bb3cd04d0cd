//! `yardstick report` through the built binary on real runs against the simulator: the
//! terminal table, every file format, a saved gate result, `-` for stdout, and invalid input.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{Sim, yardstick};

/// Two load points of one scenario, three replicates of 16 measured requests each.
fn spec(url: &str) -> String {
    format!(
        r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: report-tiny
spec:
  mode: realism
  backgroundLoad: {{record: true, description: "test machine"}}
  workload:
    model: sim-llama
    precision: fp32
    sequenceLengths: "D(16,8)"
    batching: continuous
    concurrency: [1, 4]
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
        load: {{mode: concurrency, values: [1, 4]}}
        stop: {{maxRequests: 16, maxDuration: 10s}}
  provenance:
    signing: off
"#
    )
}

fn run(store: &Path, spec_path: &Path) -> String {
    let out = yardstick()
        .args(["run", spec_path.to_str().unwrap(), "--store"])
        .arg(store)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["run_id"].as_str().expect("run_id").to_string()
}

fn cmd(store: &Path, args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn report_covers_a_run_and_a_gate_result_in_every_format() {
    let sim = Sim::start(&["--ttft-ms", "40"]);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let spec_path = tmp.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(&sim.url)).unwrap();
    let a = run(&store, &spec_path);
    let b = run(&store, &spec_path);
    assert_eq!(
        cmd(&store, &["baseline", "save", &a]).status.code(),
        Some(0)
    );
    let gate = cmd(&store, &["gate", &b, "--baseline", "auto", "--json"]);
    let gate_json: Value = serde_json::from_slice(&gate.stdout).expect("gate --json");
    let gate_file = tmp.path().join("gate.json");
    std::fs::write(&gate_file, &gate.stdout).unwrap();

    // The terminal table (not a terminal here: no colour codes), by a unique id prefix.
    let out = cmd(&store, &["report", &b[..20]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(!table.contains('\x1b'), "{table}");
    for needle in [
        "POINT",
        "95 % CI",
        "request_throughput value",
        "ttft_ms p50",
        "concurrency=4",
        "P99 NORMAL",
    ] {
        assert!(table.contains(needle), "{needle} missing:\n{table}");
    }

    // Every file format at once, with the gate result, and --json listing what was written.
    let html = tmp.path().join("r.html");
    let xlsx = tmp.path().join("r.xlsx");
    let md = tmp.path().join("r.md");
    let junit = tmp.path().join("junit.xml");
    let csv = tmp.path().join("csv");
    let out = yardstick()
        .args(["report", &b, "--json", "--gate"])
        .arg(&gate_file)
        .arg("--html")
        .arg(&html)
        .arg("--xlsx")
        .arg(&xlsx)
        .arg("--markdown")
        .arg(&md)
        .arg("--junit")
        .arg(&junit)
        .arg("--csv")
        .arg(&csv)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let formats: Vec<&str> = listed["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["format"].as_str().unwrap())
        .collect();
    assert_eq!(&formats[..4], ["html", "xlsx", "markdown", "junit"]);
    assert!(formats[4..].iter().all(|f| *f == "csv") && formats.len() > 8);
    crate::schema_cli::assert_conforms("report", &listed);
    assert_eq!(listed["report"]["run"]["run"]["run_id"], b.as_str());
    assert_eq!(listed["report"]["gate"]["verdict"], gate_json["verdict"]);

    let page = std::fs::read_to_string(&html).unwrap();
    // Gate ratios; TTFT and E2E histograms (linear, log) of 2 points; 2 CDFs; 1 throughput-
    // latency curve; TTFT/TPOT/ITL percentiles; telemetry (at least one metric).
    assert!(
        page.matches("<svg").count() > 1 + 8 + 2 + 1 + 3,
        "{}",
        page.len()
    );
    assert!(page.contains("p99 if normal"));
    assert!(page.contains("Not plotted: no point reported per-step times"));
    assert!(!page.contains("<script") && !page.contains("src="));
    eprintln!("HTML report of a 2-point run: {} bytes", page.len());

    assert_eq!(&std::fs::read(&xlsx).unwrap()[..2], b"PK");

    let markdown = std::fs::read_to_string(&md).unwrap();
    let verdict = gate_json["verdict"].as_str().unwrap();
    assert!(
        markdown.contains("**Gate: ") && markdown.contains(verdict),
        "{markdown}"
    );
    assert!(markdown.contains(&format!("`{b}`")));

    let xml = std::fs::read_to_string(&junit).unwrap();
    let gated = gate_json["metrics"].as_array().unwrap().len();
    assert_eq!(xml.matches("<testcase ").count(), gated, "{xml}");
    let fails = gate_json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["verdict"] == "FAIL")
        .count();
    assert_eq!(xml.matches("<failure ").count(), fails);

    for f in [
        "run",
        "summary",
        "gate",
        "latency",
        "point-01",
        "point-02",
        "environment",
    ] {
        assert!(csv.join(format!("{f}.csv")).is_file(), "{f}.csv");
    }
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    assert!(summary.starts_with("point,metric,statistic,mean,ci_lo,ci_hi"));

    // `-` writes to stdout (for `>> $GITHUB_STEP_SUMMARY`); the notices stay on stderr.
    let out = cmd(&store, &["report", &b, "--markdown", "-"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("## yardstick report: report-tiny"));

    // --compact: the comment a pull request wants — the verdict, only the rows that moved (a
    // verdict other than PASS, or a change whose interval excludes none), and the link.
    let out = cmd(
        &store,
        &[
            "report",
            &b,
            "--gate",
            gate_file.to_str().unwrap(),
            "--markdown",
            "-",
            "--compact",
            "--link",
            "https://ci.example/runs/7",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let comment = text(&out.stdout);
    assert!(
        comment.starts_with("### yardstick gate: ") && comment.contains(verdict),
        "{comment}"
    );
    assert!(comment.contains("[full report](https://ci.example/runs/7)"));
    let moved = gate_json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["verdict"] != "PASS"
                || m["ci_lo"].as_f64().is_some_and(|lo| lo > 1.0)
                || m["ci_hi"].as_f64().is_some_and(|hi| hi < 1.0)
        })
        .count();
    let rows = comment
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| |") && !l.starts_with("| ---"))
        .count();
    assert_eq!(rows, moved.min(25), "{comment}");
    assert!(comment.contains(&format!(
        "{moved} of {} metrics moved",
        gate_json["metrics"].as_array().unwrap().len()
    )));
    assert!(comment.len() < markdown.len(), "{comment}");
    // Without a gate: the headline figures; --compact without --markdown is a mistake.
    let out = cmd(&store, &["report", &b, "--markdown", "-", "--compact"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("### yardstick: `report-tiny`"));
    assert!(text(&out.stdout).contains("request_throughput value"));
    let out = cmd(&store, &["report", &b, "--compact"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no --markdown was given"));

    // An empty gate file (the gate could not compare) reports the run alone, with a warning.
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let out = cmd(
        &store,
        &[
            "report",
            &b,
            "--gate",
            empty.to_str().unwrap(),
            "--markdown",
            "-",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("is empty (the gate produced no result)"));
    assert!(!text(&out.stdout).contains("**Gate"));

    // Invalid input is exit 2: an unknown run, a file that is not a gate result.
    let out = cmd(&store, &["report", "01NOSUCHRUN"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no run `01NOSUCHRUN`"));
    let bogus = tmp.path().join("bogus.json");
    std::fs::write(&bogus, "{\"runs\": []}").unwrap();
    let out = cmd(&store, &["report", &b, "--gate", bogus.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("neither `yardstick gate --json`"));
}

/// A stand-in distributed trainer speaking the metric protocol: `$1` ranks, 12 steps, the first
/// three slow (warm-up), rank r 4 ms slower than rank 0, and a bigger world slower per step.
const FAKE_TRAINER: &str = r#"#!/bin/sh
n=$1
s=0
while [ $s -lt 12 ]; do
  r=0
  while [ $r -lt $n ]; do
    t=$((100 + r * 4 + n * 8 + s % 3))
    if [ $s -lt 3 ]; then t=$((t * 2)); fi
    printf '{"step":%d,"step_time_s":0.%03d,"tokens":2048,"samples":4,"loss":2.5,"rank":%d,"world_size":%d}\n' \
      $s $t $r $n >> "$YARDSTICK_METRICS"
    r=$((r + 1))
  done
  s=$((s + 1))
done
"#;

#[test]
fn report_plots_steps_ranks_and_scaling_from_a_real_command_run() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let trainer = tmp.path().join("trainer.sh");
    std::fs::write(&trainer, FAKE_TRAINER).unwrap();
    let mut perm = std::fs::metadata(&trainer).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&trainer, perm).unwrap();
    let spec_path = tmp.path().join("train.yaml");
    std::fs::write(
        &spec_path,
        format!(
            r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: fake-distributed
spec:
  mode: realism
  backgroundLoad: {{record: true, description: "test machine"}}
  workload:
    model: fake
    precision: fp32
    sequenceLengths: 512
    batching: static
    batchSize: 4
    concurrency: 1
    dataset: {{kind: synthetic, seed: 7}}
    correctness: {{policy: none}}
  trials:
    replicates: 3
    warmup: {{steps: 3}}
    confidenceLevel: 0.95
    outlierPolicy: report-mad
    order: interleaved
  layers:
    e2e:
      - kind: command
        command: ["{}", "{{worldSize}}"]
        worldSizes: [1, 2]
        timeout: 1m
  provenance: {{signing: off}}
"#,
            trainer.display()
        ),
    )
    .unwrap();
    let id = run(&store, &spec_path);
    let html = tmp.path().join("r.html");
    let csv = tmp.path().join("csv");
    let out = yardstick()
        .args(["report", &id, "--html"])
        .arg(&html)
        .arg("--csv")
        .arg(&csv)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    // Step times from the stored metric logs, warm-up shaded; two ranks at world size 2.
    assert_eq!(
        page.matches("<figcaption>Step time · ").count(),
        2,
        "step-time plots"
    );
    assert!(page.contains("warm-up (trimmed)"));
    assert_eq!(page.matches("<figcaption>Step time per rank").count(), 1);
    assert!(page.contains("<figcaption>Scaling efficiency"));
    assert!(page.contains("Not plotted: no serving points in this run"));
    // World size 2 is slower per step than world size 1: efficiency below 1.
    let scaling = std::fs::read_to_string(csv.join("scaling.csv")).unwrap();
    let rows: Vec<&str> = scaling.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{scaling}");
    let eff: f64 = rows[1].rsplit(',').next().unwrap().parse().unwrap();
    assert!(eff > 0.5 && eff < 1.0, "{scaling}");
}

#[test]
fn report_compare_overlays_two_engines_on_one_frontier_in_html_and_svg_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Two "engines": one with 2 sequence slots, one with 8 and faster tokens.
    let slow = Sim::start(&["--ttft-ms", "5", "--itl-ms", "4", "--max-running", "2"]);
    let fast = Sim::start(&["--ttft-ms", "5", "--itl-ms", "2", "--max-running", "8"]);
    let mut ids = Vec::new();
    for (name, sim) in [("engine-a", &slow), ("engine-b", &fast)] {
        let text = spec(&sim.url)
            .replace("name: report-tiny", &format!("name: {name}"))
            .replace("concurrency: [1, 4]", "concurrency: [1, 4, 8]")
            .replace(
                "values: [1, 4]}",
                "values: [1, 4, 8]}\n        slo: {ttftMs: 30}",
            );
        let p = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&p, text).unwrap();
        ids.push(run(&store, &p));
    }
    let html = dir.path().join("engines.html");
    let plots = dir.path().join("plots");
    let out = cmd(
        &store,
        &[
            "report",
            &ids[0],
            "--compare",
            &ids[1],
            "--html",
            html.to_str().unwrap(),
            "--svg",
            plots.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"frontier\""), "no frontier section");
    for name in ["engine-a", "engine-b"] {
        assert!(page.contains(name), "{name} is not on the frontier");
    }
    assert!(page.contains("Goodput vs offered load"));
    assert!(page.contains("tok/s per user"));
    for f in ["frontier-1.svg", "frontier-2.svg", "frontier-3.svg"] {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
    }
    // A run that is not there is bad input.
    let out = cmd(&store, &["report", &ids[0], "--compare", "01NOSUCHRUN"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
