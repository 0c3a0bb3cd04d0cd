//! `kind: dataloader` component layers through `yardstick run`: the built-in reader over
//! generated Parquet, JSON Lines and raw files (cold and warm), a user's loader speaking the
//! metric protocol, the input-bound verdict against a trainer in the same run, the gate, the
//! report, and the validator's refusals.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use yardstick_spec::LoaderFormat;
use yardstick_workloads::loader::generate;

use crate::common::{files_under, json, layered_spec, run_spec, yardstick};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The point `point` of a run's summary.
fn point<'a>(v: &'a Value, point: &str) -> &'a Value {
    v["summary"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == point)
        .unwrap_or_else(|| panic!("no point {point} in {v}"))
}

/// The aggregate (mean over replicates) of `metric`'s `value`, with its n and interval.
fn fact(v: &Value, p: &str, metric: &str) -> (f64, u64, Value) {
    let f = &point(v, p)["metrics"][metric]["value"];
    (
        f["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("{p} {metric}: {f}")),
        f["n"].as_u64().unwrap(),
        f.clone(),
    )
}

fn run_ok(dir: &Path, name: &str, layers: &str) -> Value {
    run_in_mode(dir, name, layers, "exploratory")
}

fn run_in_mode(dir: &Path, name: &str, layers: &str, mode: &str) -> Value {
    let spec = dir.join(format!("{name}.yaml"));
    let text = layered_spec(name, layers).replace(
        "mode: exploratory",
        &format!("mode: {mode}\n  backgroundLoad: {{record: true, description: \"test machine\"}}"),
    );
    std::fs::write(&spec, text).unwrap();
    let o = run_spec(&spec, &dir.join("store"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    json(&o)
}

/// The stored result record of replicate `r` of `point_slug`.
fn result(v: &Value, point_slug: &str, r: u32) -> Value {
    let dir = Path::new(v["dir"].as_str().unwrap());
    let p = dir.join(format!("results/{point_slug}/r{r}.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

#[test]
fn the_built_in_reader_reads_parquet_cold_and_warm() {
    let dir = tempfile::tempdir().unwrap();
    generate(&dir.path().join("data"), LoaderFormat::Parquet, 6, 3000).unwrap();
    let v = run_ok(
        dir.path(),
        "loader-parquet",
        "    component:
      - kind: dataloader
        source: {path: data, format: parquet, batch: 128, workers: 3}
        cache: [cold, warm]
        timeout: 60s
",
    );
    assert_eq!(v["status"], "complete", "{v}");
    for (p, slug) in [
        ("component.0.dataloader/cold", "component.0.dataloader_cold"),
        ("component.0.dataloader/warm", "component.0.dataloader_warm"),
    ] {
        let (rate, n, f) = fact(&v, p, "loader_samples_per_s");
        assert_eq!(n, 3, "{p}");
        assert!(rate > 0.0, "{p}: {rate}");
        // Replicates are summarised with an interval.
        let (lo, hi) = (f["ci"][0].as_f64().unwrap(), f["ci"][1].as_f64().unwrap());
        assert!(lo <= rate && rate <= hi, "{p}: {f}");
        let (mb, _, _) = fact(&v, p, "loader_mb_per_s");
        assert!(mb > 0.0);
        let (first, _, _) = fact(&v, p, "loader_first_batch_s");
        assert!(first > 0.0 && first < 60.0);
        // 18,000 rows in batches of at most 128: at least 141 batches (the last of each
        // worker's share may be short).
        let (batches, _, _) = fact(&v, p, "loader_batches");
        assert!((141.0..=144.0).contains(&batches), "{p}: {batches}");
        let batch_ms = &point(&v, p)["metrics"]["loader_batch_ms"];
        assert!(
            batch_ms["p99"]["mean"].as_f64().unwrap() >= batch_ms["p50"]["mean"].as_f64().unwrap()
        );
        for r in 0..3 {
            let rec = result(&v, slug, r);
            let s = &rec["summary"];
            assert_eq!(s["pass"]["samples"], 18000, "{p} r{r}: {s}");
            assert_eq!(s["pass"]["files"], 6);
            assert_eq!(s["pass"]["format"], "parquet");
            assert!(s.get("error").is_none(), "{s}");
            // The per-batch samples are stored with the run.
            let samples = rec["samples"].as_str().expect("per-batch samples");
            assert!(
                Path::new(v["dir"].as_str().unwrap())
                    .join(samples)
                    .is_file()
            );
        }
        let cold = p.ends_with("cold");
        let s = &result(&v, slug, 0)["summary"];
        assert_eq!(s["cache"], if cold { "cold" } else { "warm" });
        if cold {
            // The reader evicted its files and checked: (almost) nothing stayed resident.
            assert_eq!(s["cache_dropped"], true, "{s}");
            assert!(
                s["pass"]["resident_before"].as_f64().unwrap() <= 0.05,
                "{s}"
            );
        } else {
            assert!(s.get("cache_dropped").is_none(), "{s}");
        }
    }
}

#[test]
fn the_example_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let o = run_spec(
        &root.join("examples/dataloader.yaml"),
        &dir.path().join("store"),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    // 4 files of 250 JSON lines each, in batches of 50: 20 batches a pass.
    for p in ["component.0.dataloader/cold", "component.0.dataloader/warm"] {
        assert_eq!(fact(&v, p, "loader_batches").0, 20.0, "{p}");
    }
    let s = &result(&v, "component.0.dataloader_warm", 0)["summary"];
    assert_eq!(s["pass"]["samples"], 1000);
    assert_eq!(s["pass"]["bytes"], s["pass"]["file_bytes"]);
}

/// A loader script that reports `n` batches of `samples` samples taking `step_s` each, and
/// counts its runs in `runs.txt` beside it.
fn loader_script(dir: &Path, name: &str, n: u32, samples: u32, step_s: f64) -> String {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "echo run >> \"$(dirname \"$0\")/{name}.runs\"
i=0
while [ $i -lt {n} ]; do
  echo \"{{\\\"step\\\":$i,\\\"samples\\\":{samples},\\\"bytes\\\":4096,\\\"step_time_s\\\":{step_s}}}\" >> \"$YARDSTICK_METRICS\"
  i=$((i+1))
done
"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_users_loader_reports_its_batches_through_the_metric_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let script = loader_script(dir.path(), "loader.sh", 20, 64, 0.002);
    let v = run_ok(
        dir.path(),
        "loader-command",
        &format!(
            "    component:
      - kind: dataloader
        command: [sh, {script}]
        cache: [cold, warm]
"
        ),
    );
    assert_eq!(v["status"], "complete", "{v}");
    for p in ["component.0.dataloader/cold", "component.0.dataloader/warm"] {
        // 64 samples every 2 ms, exactly as reported: 32,000 samples/s and 2.048 MB/s.
        let (rate, n, _) = fact(&v, p, "loader_samples_per_s");
        assert_eq!(n, 3);
        assert!((rate - 32000.0).abs() < 1e-6, "{p}: {rate}");
        assert!((fact(&v, p, "loader_mb_per_s").0 - 2.048).abs() < 1e-9);
        assert!((fact(&v, p, "loader_first_batch_s").0 - 0.002).abs() < 1e-12);
        assert_eq!(fact(&v, p, "loader_batches").0, 20.0);
    }
    // Three cold passes, and three warm ones each after a discarded pass: 9 runs.
    let runs = std::fs::read_to_string(dir.path().join("loader.sh.runs")).unwrap();
    assert_eq!(runs.lines().count(), 9);
    let cold = &result(&v, "component.0.dataloader_cold", 0)["summary"];
    let may_drop = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok();
    if may_drop {
        assert_eq!(cold["cache_dropped"], true, "{cold}");
    } else {
        assert_eq!(cold["cache_dropped"], false, "{cold}");
        assert!(
            cold["warnings"][0].as_str().unwrap().contains("not cold"),
            "{cold}"
        );
    }
    // The loader's output is kept.
    let logs = files_under(Path::new(v["dir"].as_str().unwrap()), "log");
    assert!(logs.iter().any(|f| f.ends_with("stdout.log")), "{logs:?}");
}

#[test]
fn a_failing_loader_is_a_measured_failure_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bad")).unwrap();
    std::fs::write(dir.path().join("bad/a.jsonl"), "{\"x\":1}\n{oops\n").unwrap();
    let layers = "    component:
      - kind: dataloader
        command: [sh, -c, \"exit 3\"]
        cache: cold
      - kind: dataloader
        source: {path: bad, format: jsonl}
        cache: warm
";
    let spec = dir.path().join("fail.yaml");
    std::fs::write(&spec, layered_spec("loader-fail", layers)).unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
    // Every replicate failed: exit 1 (a measured failure, not bad input), the run stored with
    // its failures recorded.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("measured nothing"), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        Path::new(v["dir"].as_str().unwrap())
            .join("manifest.json")
            .is_file()
    );
    let failures = v["summary"]["failures"].to_string();
    assert!(failures.contains("exited with code 3"), "{failures}");
    assert!(failures.contains("not a JSON line"), "{failures}");
}

#[test]
fn a_loader_slower_than_the_trainer_is_the_bottleneck() {
    let dir = tempfile::tempdir().unwrap();
    // A "trainer" taking 10 ms a step for 32 samples (3,200 samples/s), no input wait reported.
    let trainer = dir.path().join("train.sh");
    std::fs::write(
        &trainer,
        "i=0
while [ $i -lt 30 ]; do
  echo \"{\\\"step\\\":$i,\\\"samples\\\":32,\\\"step_time_s\\\":0.01}\" >> \"$YARDSTICK_METRICS\"
  i=$((i+1))
done
",
    )
    .unwrap();
    let trainer = trainer.display().to_string();
    // Loaders supplying 1,000 and 64,000 samples/s.
    let slow = loader_script(dir.path(), "slow.sh", 10, 10, 0.01);
    let fast = loader_script(dir.path(), "fast.sh", 10, 64, 0.001);
    for (loader, input_bound) in [(slow, true), (fast, false)] {
        let v = run_ok(
            dir.path(),
            "loader-vs-trainer",
            &format!(
                "    component:
      - kind: dataloader
        command: [sh, {loader}]
    e2e:
      - kind: command
        command: [sh, {trainer}]
"
            ),
        );
        let b = &v["summary"]["bottlenecks"]["points"][0];
        assert_eq!(b["point"], "e2e.0.command", "{v}");
        let input = &b["input"];
        assert!(
            (input["demand_samples_per_s"].as_f64().unwrap() - 3200.0).abs() < 1e-6,
            "{input}"
        );
        let evidence = b["evidence"].to_string();
        if input_bound {
            assert_eq!(b["bottleneck"], "input", "{b}");
            assert!((input["supply_samples_per_s"].as_f64().unwrap() - 1000.0).abs() < 1e-6);
            assert!(
                b["evidence"][0]
                    .as_str()
                    .unwrap()
                    .contains("supplies 1000.0 samples/s against the 3200.0"),
                "{evidence}"
            );
        } else {
            assert_ne!(b["bottleneck"], "input", "{b}");
            assert!(
                evidence.contains("input is not the bottleneck"),
                "{evidence}"
            );
        }
    }
}

#[test]
fn a_slower_loader_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let mut ids = Vec::new();
    for (name, step_s) in [("fast.sh", 0.002), ("slow.sh", 0.004)] {
        let script = loader_script(dir.path(), name, 20, 64, step_s);
        // Exploratory specs never gate; a realism one does.
        let v = run_in_mode(
            dir.path(),
            "loader-gate",
            &format!(
                "    component:
      - kind: dataloader
        command: [sh, {script}]
"
            ),
            "realism",
        );
        ids.push(v["run_id"].as_str().unwrap().to_string());
    }
    let o = yardstick()
        .args(["gate", &ids[1], "--baseline", &ids[0], "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let g = json(&o);
    let m = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "loader_samples_per_s")
        .unwrap_or_else(|| panic!("loader_samples_per_s is gated: {g}"));
    assert_eq!(m["verdict"], "FAIL", "{m}");
    // And the report draws the loader's figures.
    let out = dir.path().join("report.html");
    let o = yardstick()
        .args(["report", &ids[1], "--html"])
        .arg(&out)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("Component layers"), "no component section");
    assert!(html.contains("loader_samples_per_s"));
}

#[test]
fn the_validator_refuses_loaders_it_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    for (layer, want) in [
        ("kind: dataloader\n        cache: cold", "needs `source`"),
        (
            "kind: dataloader\n        command: [\"true\"]\n        source: {path: data, format: raw}",
            "not both",
        ),
        (
            "kind: dataloader\n        source: {path: missing, format: raw}",
            "is not a directory",
        ),
        (
            "kind: dataloader\n        source: {path: data, format: raw, pattern: \"[\"}",
            "is not a glob",
        ),
        (
            "kind: dataloader\n        source: {path: data, format: raw, batch: 0}",
            "source.batch is 0",
        ),
        (
            "kind: dataloader\n        source: {path: data, format: raw}\n        cache: [cold, cold]",
            "at most once",
        ),
    ] {
        let spec = dir.path().join("bad.yaml");
        std::fs::write(
            &spec,
            layered_spec("bad-loader", &format!("    component:\n      - {layer}\n")),
        )
        .unwrap();
        let o = yardstick().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{layer}");
        let e = stderr(&o);
        assert!(
            e.contains("error[dataloader-config]") && e.contains(want),
            "{layer}: {e}"
        );
        // file:line:col of the offending entry.
        assert!(e.contains("bad.yaml:"), "{e}");
    }
    // An empty directory validates but has nothing to read: refused before anything runs.
    let spec = dir.path().join("empty.yaml");
    std::fs::write(
        &spec,
        layered_spec(
            "empty-loader",
            "    component:\n      - kind: dataloader\n        source: {path: data, format: parquet}\n",
        ),
    )
    .unwrap();
    let o = run_spec(&spec, &dir.path().join("store"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no files match `*.parquet`"),
        "{}",
        stderr(&o)
    );
    let runs = dir.path().join("store/runs");
    assert!(
        !runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none(),
        "nothing is stored"
    );
}
