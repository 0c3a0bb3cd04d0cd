//! `yardstick env`: the real binary on this machine (real /proc, real NVML loading, real Python).

use std::process::Command;

use serde_json::Value;

fn yardstick() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env("NO_COLOR", "1");
    c
}

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
    let out = yardstick().args(["env", "--key"]).output().unwrap();
    assert!(out.status.success());
    let key_line = String::from_utf8(out.stdout).unwrap();
    let b = env_json(&[]);
    assert_eq!(a["machine_profile"], b["machine_profile"]);
    assert_eq!(key_line.trim(), b["machine_profile"].as_str().unwrap());
    // The hash covers Python packages too, so compare two captures with the same probes.
    let c = env_json(&[]);
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
    if python().is_none() {
        eprintln!("skipped: no python3 on PATH");
        return;
    }
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
    if python_probe["outcome"] != "ok" {
        eprintln!("skipped: python probe {python_probe}");
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
