//! Profiles taken with the run: the real PyTorch profiler on a small CPU training loop
//! (examples/train_torch.py through `yardstick run`), py-spy and perf on the same loop, and the
//! Nsight Systems reader on a fixture built to its SQLite schema.
//!
//! PyTorch and py-spy come from `YARDSTICK_TORCH_PYTHON` (a python with torch and py-spy; CI
//! installs them under /var/tmp/yardstick-torch).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{json, layered_spec, run_spec};
use crate::external;

const DEFAULT_DIR: &str = "/var/tmp/yardstick-torch";

/// A python with torch, when there is one.
fn torch_python(test: &str) -> Option<PathBuf> {
    let python = std::env::var_os("YARDSTICK_TORCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("venv/bin/python"));
    let ok = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success());
    external::require(
        "pytorch",
        test,
        &format!(
            "a python with torch and py-spy: set YARDSTICK_TORCH_PYTHON, or let .ci/run install \
             them under {DEFAULT_DIR}"
        ),
        ok.then_some(python),
    )
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/train_torch.py")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// A spec profiling examples/train_torch.py on CPU with `profile`.
fn spec(dir: &Path, python: &Path, profile: &str) -> PathBuf {
    spec_steps(dir, python, profile, 12)
}

fn spec_steps(dir: &Path, python: &Path, profile: &str, steps: u32) -> PathBuf {
    let text = layered_spec(
        "profiled",
        &format!(
            "    e2e:
      - kind: command
        command: [\"{}\", \"{}\", \"--steps\", \"{steps}\", \"--device\", \"cpu\"]
        timeout: 5m
        profile: {profile}
",
            python.display(),
            example()
        ),
    );
    let p = dir.join("spec.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn metric(point: &Value, name: &str) -> f64 {
    point["metrics"][name]["value"]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name}: {point}"))
}

#[test]
fn a_torch_profile_breaks_the_step_down_and_stays_out_of_the_statistics() {
    let Some(python) = torch_python("a_torch_profile_breaks_the_step_down") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let spec = spec(
        dir.path(),
        &python,
        "{mode: trace, tool: torch, schedule: {wait: 2, warmup: 2, active: 4, repeat: 1}}",
    );
    let o = run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["status"], "complete", "{v}");
    let point = &v["summary"]["points"][0];
    let id = point["id"].as_str().unwrap();
    // The three measured replicates make the statistics; the profiled one does not.
    assert_eq!(point["metrics"]["step_time_s"]["p50"]["n"], 3, "{point}");
    let prof = &v["summary"]["profiles"][id];
    let a = &prof["analysis"];
    assert_eq!(a["tool"], "torch", "{prof}");
    assert_eq!(a["steps"], 4, "the schedule's active steps: {a}");
    // The phases the loop marks, then the rest, add up to the profiled step.
    let phases: Vec<(&str, f64)> = a["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["s_per_step"].as_f64().unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = phases.iter().map(|p| p.0).collect();
    assert_eq!(
        names,
        ["data", "forward", "backward", "optimizer", "unattributed"],
        "{a}"
    );
    let step = a["step_s"].as_f64().unwrap();
    let sum: f64 = phases.iter().map(|p| p.1).sum();
    assert!((sum - step).abs() < 1e-6 * step.max(1.0), "{sum} vs {step}");
    // The marked phases cover nearly all of it (only the profiler's step bookkeeping is not
    // inside one).
    let unattributed = phases.last().unwrap().1;
    assert!(unattributed < 0.1 * step, "{unattributed} of {step}: {a}");
    // forward + backward + optimizer is what the loop times as step_time_s: the trace and
    // the metric records of the same steps of the profiled replicate agree within 10 %.
    let timed: f64 = phases[1..4].iter().map(|p| p.1).sum();
    let ids: Vec<u64> = a["step_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(ids, [4, 5, 6, 7], "wait 2, warm up 2, record 4: {a}");
    let run = Path::new(v["dir"].as_str().unwrap());
    let logged: Vec<f64> = crate::common::files_under(&run.join("profile"), "jsonl")
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|r| r["step"].as_u64().is_some_and(|s| ids.contains(&s)))
        .filter_map(|r| r["step_time_s"].as_f64())
        .collect();
    assert_eq!(logged.len(), 4, "the profiled steps' metric records");
    let recorded = logged.iter().sum::<f64>() / 4.0;
    assert!(
        (timed - recorded).abs() < 0.1 * recorded,
        "trace {timed} s vs metric protocol {recorded} s per step"
    );
    // Operators: matrix multiplies dominate a GPT's step.
    let top: Vec<&str> = a["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        top.iter()
            .take(8)
            .any(|n| n.contains("mm") || n.contains("linear")),
        "{top:?}"
    );
    // The overhead is reported (profiled over unprofiled median step time); its value depends
    // on the machine's load, so it is printed, not bounded.
    assert!(prof["overhead"].as_f64().unwrap() > 0.0, "{prof}");
    // Facts and files: profile.* facts on the point; the trace stored and hashed with the run.
    assert!(metric(point, "profile.phase.backward_s") > 0.0);
    assert!(metric(point, "profile.compute_s") > 0.0);
    let traces = crate::common::files_under(&run.join("profile"), "json");
    assert!(
        traces
            .iter()
            .any(|t| t.to_string_lossy().ends_with(".pt.trace.json")),
        "{traces:?}"
    );
    let manifest = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    assert!(
        manifest.contains(".pt.trace.json"),
        "the trace is in the manifest"
    );
    let size: u64 = traces
        .iter()
        .map(|t| std::fs::metadata(t).unwrap().len())
        .sum();
    // The report shows where the step time goes, with the top operators.
    let html = dir.path().join("r.html");
    let r = crate::common::yardstick()
        .args(["report", v["run_id"].as_str().unwrap(), "--html"])
        .arg(&html)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Where the step time goes"),
        "no profile section"
    );
    assert!(page.contains("aten::mm"), "no top operators");
    // A second profiled run: compare shows where the step time went in both, never gated.
    let o2 = run_spec(&spec, &store, &[]);
    assert!(
        o2.status.success(),
        "{}",
        String::from_utf8_lossy(&o2.stderr)
    );
    let b = json(&o2)["run_id"].as_str().unwrap().to_string();
    let c = crate::common::yardstick()
        .args(["compare", v["run_id"].as_str().unwrap(), &b, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(text.contains("Where the step time goes"), "{text}");
    assert!(text.contains("profile.phase.backward_s"), "{text}");
    assert!(
        text.contains("profiled step") && text.contains(", of which "),
        "{text}"
    );
    let cj = crate::common::yardstick()
        .args([
            "--json",
            "compare",
            v["run_id"].as_str().unwrap(),
            &b,
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let cj = json(&cj);
    crate::schema_cli::assert_conforms("compare", &cj);
    assert!(
        cj["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["metric"].as_str().unwrap().starts_with("profile.")),
        "profile figures are never among the compared (gated) metrics"
    );
    eprintln!(
        "torch profile: step {step:.4} s, phases {phases:?}, overhead {:.2}, traces {size} bytes",
        prof["overhead"].as_f64().unwrap()
    );
}

/// py-spy and perf profile the same loop from outside: the top functions (Python) and symbols
/// (native), stored with the run; they see no steps.
#[test]
fn py_spy_and_perf_profile_a_python_loop_from_outside() {
    let Some(python) = torch_python("py_spy_and_perf_profile_a_python_loop_from_outside") else {
        return;
    };
    let bin = python.parent().unwrap().to_path_buf();
    for (tool, file) in [
        ("py-spy", "py-spy.speedscope.json"),
        ("perf", "perf-report.txt"),
    ] {
        let have = if tool == "py-spy" {
            bin.join("py-spy").exists()
        } else {
            which("perf")
        };
        let how = if tool == "py-spy" {
            "pip install py-spy into the torch python's environment"
        } else {
            "apt-get install linux-perf"
        };
        if external::require(
            tool,
            "py_spy_and_perf_profile_a_python_loop_from_outside",
            how,
            have.then_some(()),
        )
        .is_none()
        {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let spec = spec_steps(
            dir.path(),
            &python,
            &format!("{{mode: trace, tool: {tool}}}"),
            4,
        );
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = crate::common::yardstick()
            .env("PATH", &path)
            .args(["run", "--json", "-q"])
            .arg(&spec)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&o);
        let id = v["summary"]["points"][0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let prof = &v["summary"]["profiles"][&id];
        assert_eq!(prof["analysis"]["tool"], tool, "{prof}");
        let top = prof["analysis"]["top"].as_array().unwrap();
        assert!(!top.is_empty(), "{tool}: {prof}");
        let shares: f64 = top.iter().map(|t| t["share"].as_f64().unwrap()).sum();
        assert!(shares > 0.0 && shares <= 1.0 + 1e-9, "{tool}: {shares}");
        let run = Path::new(v["dir"].as_str().unwrap());
        let ext = file.rsplit('.').next().unwrap();
        let found = crate::common::files_under(&run.join("profile"), ext)
            .into_iter()
            .any(|f| f.ends_with(file));
        assert!(found, "{tool}: {file} not stored under profile/");
        eprintln!(
            "{tool} profile: top {:?}",
            top.iter()
                .take(3)
                .map(|t| (
                    t["name"].as_str().unwrap().to_string(),
                    t["share"].as_f64().unwrap()
                ))
                .collect::<Vec<_>>()
        );
    }
}

/// Whether Linux perf is installed, recorded for `test` (a failure under
/// YARDSTICK_REQUIRE_EXTERNAL when it is not).
pub(crate) fn have_perf(test: &str) -> bool {
    external::require(
        "perf",
        test,
        "apt-get install linux-perf",
        which("perf").then_some(()),
    )
    .is_some()
}

fn which(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// `bench exec --profile py-spy`: one more run after the measured ones, under py-spy; where the
/// time went is in the JSON output and the traces in --profile-dir. A profiler that is not
/// installed is refused with how to get it.
#[test]
fn bench_exec_profiles_one_more_run() {
    let Some(python) = torch_python("bench_exec_profiles_one_more_run") else {
        return;
    };
    let bin = python.parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prof");
    let script = "def spin(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\nspin(3_000_000)\n";
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = crate::common::yardstick()
        .env("PATH", &path)
        .args([
            "--json",
            "bench",
            "exec",
            "-r",
            "2",
            "--profile",
            "py-spy",
            "--profile-dir",
        ])
        .arg(&out)
        .args(["--", python.to_str().unwrap(), "-c", script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-exec", &v);
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        2,
        "two measured runs: {v}"
    );
    let a = &v["profile"]["analysis"];
    assert_eq!(a["tool"], "py-spy", "{v}");
    let top = a["top"][0]["name"].as_str().unwrap();
    assert!(top.starts_with("spin"), "the busy function leads: {a}");
    assert!(out.join("py-spy.speedscope.json").is_file());

    let o = crate::common::yardstick()
        .env("PATH", "/nonexistent")
        .args([
            "bench",
            "exec",
            "-r",
            "1",
            "--profile",
            "nsys",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`nsys` is not installed"), "{err}");
}

/// The reference trainer (`kind: train`, Rust) profiled with perf: its own kernels lead the
/// symbols; `tool: torch` on it is refused before anything runs.
#[test]
fn perf_profiles_the_reference_trainer() {
    if !have_perf("perf_profiles_the_reference_trainer") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let spec = dir.path().join("train.yaml");
    let text = |tool: &str| {
        layered_spec(
            "train-perf",
            &format!(
                "    e2e:\n      - kind: train\n        preset: tiny\n        steps: 20\n        profile: {{mode: trace, tool: {tool}}}\n"
            ),
        )
    };
    std::fs::write(&spec, text("perf")).unwrap();
    let o = run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let id = v["summary"]["points"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = &v["summary"]["profiles"][&id]["analysis"];
    assert_eq!(a["tool"], "perf", "{v}");
    assert!(!a["top"].as_array().unwrap().is_empty(), "{a}");
    std::fs::write(&spec, text("torch")).unwrap();
    let o = run_spec(&spec, &store, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a PyTorch program"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `bench train --profile perf`: the reference trainer once more under perf, after the measured
/// run; the top symbols in the JSON output and perf's files in --profile-dir.
#[test]
fn bench_train_profiles_one_more_run_under_perf() {
    if !have_perf("bench_train_profiles_one_more_run_under_perf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prof");
    let o = crate::common::yardstick()
        .args([
            "--json",
            "bench",
            "train",
            "--steps",
            "15",
            "--profile",
            "perf",
        ])
        .args([
            "--peak-flops",
            "1e11",
            "--memory-bw",
            "1e10",
            "--profile-dir",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-train", &v);
    let p = &v["profile"];
    assert_eq!(p["analysis"]["tool"], "perf", "{p}");
    assert!(!p["analysis"]["top"].as_array().unwrap().is_empty(), "{p}");
    assert!(out.join("perf.data").is_file() && out.join("perf-report.txt").is_file());
}

/// Two ranks of the same loop under torchrun with DDP over gloo (CPU), profiled in `tb` mode:
/// rank 0's trace (the files TensorBoard's plugin reads) shows the gradient all-reduces as
/// communication, and how much of it ran beside compute.
#[test]
fn a_distributed_torch_profile_sees_the_collectives() {
    let Some(python) = torch_python("a_distributed_torch_profile_sees_the_collectives") else {
        return;
    };
    let torchrun = python.parent().unwrap().join("torchrun");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let text = layered_spec(
        "ddp",
        &format!(
            "    e2e:
      - kind: command
        command: [\"{}\", \"--standalone\", \"--nproc-per-node\", \"2\", \"{}\", \"--steps\", \"6\", \"--device\", \"cpu\"]
        timeout: 5m
        profile: {{mode: tb, tool: torch, schedule: {{wait: 1, warmup: 1, active: 2, repeat: 1}}}}
",
            torchrun.display(),
            example()
        ),
    );
    let spec = dir.path().join("ddp.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let id = v["summary"]["points"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = &v["summary"]["profiles"][&id]["analysis"];
    assert_eq!(a["steps"], 2, "{a}");
    let comm = a["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "communication")
        .unwrap()["s_per_step"]
        .as_f64()
        .unwrap();
    assert!(comm > 0.0, "gloo's all-reduces are communication: {a}");
    let overlap = a["comm_overlap"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&overlap), "{a}");
    // Both ranks' TensorBoard files are stored; rank 0's is read.
    let run = Path::new(v["dir"].as_str().unwrap());
    let traces = crate::common::files_under(&run.join("profile"), "json");
    let names: Vec<String> = traces
        .iter()
        .map(|t| t.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("rank0.")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("rank1.")), "{names:?}");
    eprintln!("ddp profile: communication {comm:.4} s per step, overlap {overlap:.2}");
}
