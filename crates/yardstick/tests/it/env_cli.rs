//! `yardstick env`: the real binary on this machine (real /proc, real NVML loading, real Python).

use crate::common::yardstick;

use crate::external;

use serde_json::Value;

fn env_json(extra: &[&str]) -> Value {
    let out = yardstick()
        .args(["env", "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn json_has_the_documented_shape() {
    let v = env_json(&[]);
    let key = v["machine_profile"].as_str().unwrap();
    assert!(!key.is_empty());
    assert!(v["profile_hash"].as_str().unwrap().starts_with("sha256:"));
    for field in ["cpu", "memory", "os", "container", "software", "nvidia"] {
        assert!(v[field].is_object(), "{field}");
    }
    assert!(v["gpus"].is_array());
    assert!(v["cpu"]["threads"].as_u64().unwrap() >= 1);
    assert!(v["memory"]["total_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        v["software"]["yardstick"].as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    if v["nvidia"]["available"] == Value::Bool(false) {
        // No NVML on this machine: a clear record, an empty GPU list, a CPU key.
        assert!(
            v["nvidia"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("no NVIDIA GPU")
        );
        assert_eq!(v["gpus"].as_array().unwrap().len(), 0);
        assert!(key.starts_with("cpu-"), "{key}");
    }
    let probes: Vec<&str> = v["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(probes.contains(&"python") && probes.contains(&"nvml"));
}

#[test]
fn key_is_stable_across_runs_and_matches_json() {
    let a = env_json(&["--no-python"]);
    // A generous probe deadline: a Python probe timing out on a loaded runner in one capture
    // and not the other would change what the two captured, not the key's stability.
    let slow_ok = ["--probe-timeout-ms", "20000"];
    let out = yardstick()
        .args(["env", "--key"])
        .args(slow_ok)
        .output()
        .unwrap();
    assert!(out.status.success());
    let key_line = String::from_utf8(out.stdout).unwrap();
    let b = env_json(&slow_ok);
    assert_eq!(a["machine_profile"], b["machine_profile"]);
    assert_eq!(key_line.trim(), b["machine_profile"].as_str().unwrap());
    // The hash covers Python packages too, so compare two captures with the same probes.
    let c = env_json(&slow_ok);
    assert_eq!(b["profile_hash"], c["profile_hash"]);
}

#[test]
fn human_output_names_the_profile() {
    let out = yardstick().arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let key = env_json(&["--no-python"])["machine_profile"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("machine profile"), "{text}");
    assert!(text.contains(&key), "{text}");
    assert!(text.contains("captured in"), "{text}");
    assert!(!text.contains('\x1b'), "NO_COLOR output has escapes");
}

#[test]
fn probes_can_be_switched_off() {
    let v = env_json(&["--no-python", "--no-gpu"]);
    let probes = v["probes"].as_array().unwrap();
    let outcome = |name: &str| {
        probes
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["outcome"].as_str().unwrap().to_owned())
    };
    assert_eq!(outcome("python").as_deref(), Some("skipped"));
    assert_eq!(outcome("nvml").as_deref(), Some("skipped"));
    assert_eq!(v["software"]["python"], Value::Null);
    assert!(
        v["nvidia"]["reason"]
            .as_str()
            .unwrap()
            .contains("probe disabled")
    );
}

#[test]
fn bad_probe_timeout_is_invalid_input() {
    let out = yardstick()
        .args(["env", "--probe-timeout-ms", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--probe-timeout-ms 0 is out of range"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    let out = yardstick()
        .args(["env", "--probe-timeout-ms", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn python() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
}

/// A torch wheel's layout (dist-info + generated version.py) on PYTHONPATH is found without
/// importing torch, and its versions enter the key.
#[test]
fn torch_is_found_without_importing_it() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path();
    std::fs::create_dir_all(site.join("torch-2.4.0+cu124.dist-info")).unwrap();
    std::fs::create_dir_all(site.join("torch")).unwrap();
    // An import of this package would fail loudly: the probe must not import it.
    std::fs::write(
        site.join("torch/__init__.py"),
        "raise SystemExit('torch was imported')\n",
    )
    .unwrap();
    std::fs::write(
        site.join("torch/version.py"),
        "from typing import Optional\n__version__ = '2.4.0+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\ngit_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'\nhip: Optional[str] = None\n",
    )
    .unwrap();
    std::fs::create_dir_all(site.join("nvidia_nccl_cu12-2.20.5.dist-info")).unwrap();
    let out = yardstick()
        .args(["env", "--json"])
        .env("PYTHONPATH", site)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let python_probe = v["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "python")
        .unwrap()
        .clone();
    // The probe needs a working python3 on PATH: without one this test checks nothing, so it
    // goes through the external-component switch (a failure under YARDSTICK_REQUIRE_EXTERNAL=1).
    let how = match python() {
        None => "no python3 on PATH; install it (`apt-get install -y python3`)".to_string(),
        Some(p) => format!(
            "{} is on PATH but the python probe gave {python_probe}",
            p.display()
        ),
    };
    if external::require(
        "python3",
        "torch_is_found_without_importing_it",
        &how,
        (python().is_some() && python_probe["outcome"] == "ok").then_some(()),
    )
    .is_none()
    {
        return;
    }
    assert_eq!(v["software"]["torch"]["version"], "2.4.0+cu124");
    assert_eq!(v["software"]["torch"]["cuda"], "12.4");
    assert_eq!(v["software"]["nccl"]["version"], "2.20.5");
    assert_eq!(v["software"]["nccl"]["source"], "nvidia-nccl-cu12");
    let key = v["machine_profile"].as_str().unwrap();
    assert!(
        key.ends_with("_torch2.4") || key.contains("_torch2.4_"),
        "{key}"
    );
}

/// A `bench micro --json`-shaped file of one machine's ceilings.
pub(crate) fn micro_file(
    dir: &std::path::Path,
    name: &str,
    profile: &str,
    results: &[(&str, f64, &str)],
) -> String {
    let results: Vec<Value> = results
        .iter()
        .map(|(n, v, u)| serde_json::json!({"name": n, "value": v, "unit": u}))
        .collect();
    let path = dir.join(name);
    std::fs::write(
        &path,
        serde_json::json!({"machine_profile": profile, "results": results}).to_string(),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn compare_two_profiles_on_a_comparative_roofline() {
    // The pair of docs/methodology.md#comparing-machines: A has the higher peak (2 PFLOP/s bf16, 2 TB/s), B the higher bandwidth
    // (1 PFLOP/s, 4 TB/s).
    let dir = tempfile::tempdir().unwrap();
    let a = micro_file(
        dir.path(),
        "a.json",
        "A100x1_high_peak",
        &[
            ("gemm.bf16.8192", 2000.0, "TFLOP/s"),
            ("gemm.f32.8192", 60.0, "TFLOP/s"),
            ("memory.triad", 2.0, "TB/s"),
        ],
    );
    let b = micro_file(
        dir.path(),
        "b.json",
        "B200x1_high_bw",
        &[
            ("gemm.bf16.8192", 1000.0, "TFLOP/s"),
            ("memory.triad", 4.0, "TB/s"),
        ],
    );
    let out = yardstick()
        .args(["env", "compare", &a, &b, "--workload", "decode=2"])
        .args(["--workload", "train=2000", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dtype"], "bf16");
    assert_eq!(v["inputs"][0]["machine_profile"], "A100x1_high_peak");
    assert!(
        v["inputs"][1]["source"]
            .as_str()
            .unwrap()
            .contains("gemm.bf16.8192")
    );
    assert_eq!(v["ridge_a"], 1000.0);
    assert_eq!(v["ridge_b"], 250.0);
    assert_eq!(v["crossover_intensity"], 500.0);
    assert_eq!(v["workloads"][0]["name"], "decode");
    assert_eq!(v["workloads"][0]["faster"], "b");
    assert_eq!(v["workloads"][0]["ratio_b_over_a"], 2.0);
    assert_eq!(v["workloads"][1]["faster"], "a");

    // The human table says where the rooflines cross and who wins each workload.
    let out = yardstick()
        .args(["env", "compare", &a, &b, "--workload", "decode=2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("cross at 500.000 FLOP/B"), "{text}");
    assert!(text.contains("below it B (higher bandwidth)"), "{text}");
    assert!(text.contains("decode"), "{text}");

    // fp32: B has no f32 GEMM, so there is nothing to compare — invalid input, named.
    let out = yardstick()
        .args(["env", "compare", &a, &b, "--dtype", "fp32"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a gemm.f32.N"), "{err}");
}

#[test]
fn compare_rejects_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let ok = micro_file(
        dir.path(),
        "ok.json",
        "m",
        &[
            ("gemm.f32.64", 10.0, "GFLOP/s"),
            ("memory.triad", 5.0, "GB/s"),
        ],
    );
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let garbage = garbage.to_str().unwrap();
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    for (args, needle) in [
        (vec![ok.as_str(), garbage], "B "),
        (vec![missing, ok.as_str()], "A "),
        (
            vec![ok.as_str(), ok.as_str(), "--workload", "decode"],
            "is not NAME=FLOP_PER_BYTE",
        ),
        (
            vec![ok.as_str(), ok.as_str(), "--workload", "x=-3"],
            "is not NAME=FLOP_PER_BYTE",
        ),
        (
            vec![ok.as_str(), ok.as_str(), "--dtype", "int4"],
            "no CPU GEMM figure for `int4`",
        ),
    ] {
        let out = yardstick()
            .args(["env", "compare"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
    }
}
