//! `yardstick import nccl|fio|stream`: the tools' output (samples in their documented formats,
//! shared with yardstick-workloads' parser tests) stored as runs, with facts in the warehouse
//! under the micro layer's names.

use crate::common::{self, yardstick};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../yardstick-workloads/tests/fixtures")
        .join(name)
}

fn run_json(args: &[&str]) -> Value {
    let out = yardstick().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn figure<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn three_nccl_runs_become_replicates_with_an_interval() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("all_reduce_perf_8xH100.txt")).unwrap();
    // Three runs of the same job: the 8 GiB row's busbw is 413.78, 410.00 and 417.56.
    let mut paths = Vec::new();
    for (i, busbw) in ["413.78", "410.00", "417.56"].iter().enumerate() {
        let p = dir.path().join(format!("ar{i}.txt"));
        std::fs::write(
            &p,
            text.replace("236.45  413.78", &format!("236.45  {busbw}")),
        )
        .unwrap();
        paths.push(p.display().to_string());
    }
    let store = dir.path().join("store");
    let store_s = store.display().to_string();
    let mut args = vec!["import", "nccl"];
    args.extend(paths.iter().map(String::as_str));
    args.extend([
        "--store",
        &store_s,
        "--profile",
        "H100x8_drv570_cuda12.8",
        "--json",
    ]);
    let v = run_json(&args);
    crate::schema_cli::assert_conforms("import", &v);
    assert_eq!(v["name"], "import-nccl-all_reduce");
    assert_eq!(v["point"], "import.nccl");
    assert_eq!(v["machine_profile"], "H100x8_drv570_cuda12.8");
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    let big = figure(&v, "nccl.all_reduce.busbw.8589934592");
    // A bandwidth: the geometric mean with the t interval of the logarithms (scipy: gmean
    // 413.76848921529097, exp(t.interval(0.95, 2, mean(log), sem(log))) [404.484, 423.266]).
    assert!((big["value"].as_f64().unwrap() - 413.76848921529097).abs() < 1e-9);
    assert_eq!(big["unit"], "GB/s");
    assert_eq!(big["n"], 3);
    let ci = big["ci"].as_array().unwrap();
    assert!(
        (ci[0].as_f64().unwrap() - 404.48416384223304).abs() < 1e-9
            && (ci[1].as_f64().unwrap() - 423.265922307608).abs() < 1e-9,
        "{ci:?}"
    );
    assert_eq!(big["params"]["ranks"], 8);
    // Identical rows in every file: a zero-width interval.
    let small = figure(&v, "nccl.all_reduce.algbw.1048576");
    assert!((small["value"].as_f64().unwrap() - 30.07).abs() < 1e-9);

    // The run is stored, complete, and verifiable; the files are kept verbatim.
    let run_id = v["run_id"].as_str().unwrap();
    let run_dir = store.join("runs").join(run_id);
    assert_eq!(
        std::fs::read_to_string(run_dir.join("imports/0-ar0.txt")).unwrap(),
        std::fs::read_to_string(&paths[0]).unwrap()
    );
    let spec = std::fs::read_to_string(run_dir.join("spec.yaml")).unwrap();
    assert!(
        spec.contains("kind: Import") && spec.contains("nccl-tests"),
        "{spec}"
    );
    // `verify` finds the run as every other command does: by id or by a unique prefix in any
    // case; a prefix that matches nothing is the user's error (exit 2) with a hint.
    for name in [run_id.to_string(), run_id[..8].to_ascii_lowercase()] {
        let verify = yardstick()
            .args(["verify", &name, "--store", &store_s])
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&verify.stderr)
        );
    }
    let none = yardstick()
        .args(["verify", "0000NOTARUN", "--store", &store_s])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no run `0000NOTARUN` under") && err.contains("runs list"),
        "{err}"
    );

    // Facts in the warehouse: one per file and the aggregate, under the same names.
    let q = run_json(&[
        "query",
        "SELECT replicate, value, ci_lo, n FROM facts WHERE metric = \
         'nccl.all_reduce.busbw.8589934592' AND statistic = 'value' ORDER BY replicate",
        "--store",
        &store_s,
        "--json",
    ]);
    let rows = q["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{q}");
    let runs = run_json(&["runs", "list", "--store", &store_s, "--json"]);
    let text = runs.to_string();
    assert!(text.contains(run_id) && text.contains("complete"), "{text}");
    common::assert_metrics_catalogued(&store);
    assert!(common::assert_figures_are_the_summaries(&store) > 0);
}

#[test]
fn fio_and_stream_land_under_the_micro_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store_s = store.display().to_string();
    let fio = fixture("fio_nvme.json").display().to_string();
    let v = run_json(&[
        "import", "fio", &fio, "--store", &store_s, "--here", "--json",
    ]);
    assert_eq!(v["name"], "import-fio");
    let seq = figure(&v, "storage.seq_read");
    assert_eq!(seq["value"], 3221.225472);
    assert_eq!(seq["unit"], "MB/s");
    assert!(seq["ci"].is_null());
    assert!(
        figure(&v, "fio.randread.read.iops")["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // --here: this machine's profile.
    assert!(!v["machine_profile"].as_str().unwrap().is_empty());
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(">= 3 runs"))
    );

    let stream = fixture("stream_omp.txt").display().to_string();
    let out = yardstick()
        .args(["import", "stream", &stream, "--store", &store_s])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("memory.triad") && text.contains("GB/s"),
        "{text}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no machine profile"), "{stderr}");
    let q = run_json(&[
        "query",
        "SELECT unit, value FROM facts WHERE metric = 'memory.triad' AND statistic = 'value' AND replicate = -1",
        "--store",
        &store_s,
        "--json",
    ]);
    let rows = q["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{q}");
    common::assert_metrics_catalogued(&store);
    assert!(common::assert_figures_are_the_summaries(&store) > 0);
}

#[test]
fn wrong_tool_or_failed_run_is_invalid_input_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store_s = store.display().to_string();
    let stream = fixture("stream_omp.txt").display().to_string();
    let out = yardstick()
        .args(["import", "nccl", &stream, "--store", &store_s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("looks like STREAM output"), "{err}");
    // nccl-tests that counted wrong elements must not report a bandwidth.
    let wrong = fixture("all_reduce_perf_wrong.txt").display().to_string();
    let out = yardstick()
        .args(["import", "nccl", &wrong, "--store", &store_s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().count() == 0
    );
    let out = yardstick()
        .args([
            "import",
            "fio",
            "/nonexistent/fio.json",
            "--store",
            &store_s,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
