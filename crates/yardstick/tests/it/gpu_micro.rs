//! The GPU micro layer through the real binary. These machines have no GPU (CI has none): the
//! tests check what a user without one sees — each GPU probe listed as skipped with the library
//! it looked for and where, a run of GPU points that completes and records the skip, and a spec
//! that `requires: gpu` refused before any work. On a machine with a usable GPU the same tests
//! check that the probes measure instead (`scripts/gpu-check.sh` is the full device check).

use std::process::Output;

use serde_json::Value;

use crate::common::yardstick;

/// Whether the CUDA driver library is on this machine at all (then the skip reason differs).
fn driver_present() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).exists())
        || std::path::Path::new("/dev/nvidia0").exists()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bench_micro_gpu_lists_each_probe_as_skipped_with_what_it_looked_for() {
    let out = yardstick()
        .args([
            "bench",
            "micro",
            "gpu",
            "--json",
            "--replicates",
            "1",
            "--iterations",
            "1",
        ])
        .args([
            "--gpu-memory-size",
            "1MiB",
            "--gpu-gemm-size",
            "256",
            "--pcie-size",
            "1MiB",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::schema_cli::assert_conforms("bench-micro", &v);
    if driver_present() {
        // A GPU machine: something was measured, or the reason is not a missing library.
        let measured = !v["results"].as_array().unwrap().is_empty();
        assert!(
            measured || !v["skipped"].as_array().unwrap().is_empty(),
            "{v}"
        );
        return;
    }
    assert_eq!(v["results"], serde_json::json!([]), "{v}");
    let skipped = v["skipped"].as_array().unwrap();
    let names: Vec<&str> = skipped
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gpu.hbm", "gpu.pcie", "gpu.gemm"]);
    for s in skipped {
        let reason = s["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("skipped: no CUDA driver library"),
            "{reason}"
        );
        assert!(reason.contains("libcuda.so.1"), "{reason}");
        assert!(reason.contains("LD_LIBRARY_PATH="), "{reason}");
        assert!(reason.contains("/usr/local/cuda/lib64"), "{reason}");
    }
    // The human table says so too.
    let text = yardstick()
        .args(["bench", "micro", "gpu-gemm", "--replicates", "1"])
        .output()
        .unwrap();
    assert!(text.status.success(), "{}", stderr(&text));
    let all = format!("{}{}", String::from_utf8_lossy(&text.stdout), stderr(&text));
    assert!(all.contains("no CUDA driver library"), "{all}");
}

#[test]
fn a_bad_gpu_gemm_setting_is_refused_with_exit_2() {
    for (args, want) in [
        (vec!["--gpu-gemm-dtype", "int4"], "int4"),
        (vec!["--gpu-memory-size", "lots"], "gpu-memory-size"),
        (vec!["--gpu-memory-size", "4KiB"], "at least 64 kib"),
        (vec!["--gpu-gemm-size", "100"], "multiple of 16"),
    ] {
        let out = yardstick()
            .args(["bench", "micro", "gpu"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).to_lowercase().contains(want),
            "{}",
            stderr(&out)
        );
    }
}

fn gpu_spec(requires: &str) -> String {
    format!(
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: gpu-test}}
spec:
  mode: exploratory
{requires}  workload:
    model: m
    precision: bf16
    sequenceLengths: \"D(20,10)\"
    batching: continuous
    concurrency: [1]
    dataset: {{kind: synthetic, seed: 1}}
    correctness: {{policy: none}}
  trials: {{replicates: 3, warmup: {{runs: 1}}, confidenceLevel: 0.95, outlierPolicy: report-tukey}}
  layers:
    micro:
      - kind: gpu-memory
        sizes: [1048576]
      - kind: memory
        sizes: [1048576]
"
    )
}

#[test]
fn a_spec_that_requires_a_gpu_is_refused_before_any_work() {
    if driver_present() {
        return; // the refusal is for machines without a usable GPU
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("gpu.yaml");
    std::fs::write(&spec, gpu_spec("  requires: gpu\n")).unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .arg("run")
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("requires a GPU (`requires: gpu`)"), "{e}");
    assert!(e.contains("no CUDA driver library"), "{e}");
    assert!(
        !store.join("runs").exists()
            || std::fs::read_dir(store.join("runs"))
                .unwrap()
                .next()
                .is_none()
    );
    // The list form is the same requirement.
    std::fs::write(&spec, gpu_spec("  requires: [gpu]\n")).unwrap();
    let o = yardstick()
        .arg("run")
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn without_requires_a_gpu_point_is_recorded_as_skipped_and_the_rest_measures() {
    if driver_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("gpu.yaml");
    std::fs::write(&spec, gpu_spec("")).unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let run_dir = std::fs::read_dir(store.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    let text = summary.to_string();
    assert!(text.contains("micro.0.gpu-memory"), "{text}");
    assert!(
        text.contains("memory.copy"),
        "the CPU point still measures: {text}"
    );
    // Each replicate of the GPU point says what was skipped and why.
    let reps = std::fs::read_dir(run_dir.join("replicates"))
        .map(|d| d.count())
        .unwrap_or(0);
    let found = walk(&run_dir)
        .into_iter()
        .filter(|p| p.ends_with("summary.json") || p.extension().is_some_and(|e| e == "json"))
        .any(|p| {
            let s = std::fs::read_to_string(&p).unwrap_or_default();
            s.contains("\"skipped\"") && s.contains("no CUDA driver library")
        });
    assert!(
        found,
        "no replicate records the skip (replicates dir entries: {reps})"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
