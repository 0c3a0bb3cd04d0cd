//! Machine-profile rules, on NVML-free captures of real GPU machines (written from the
//! documented fields of `nvidia-smi --query-gpu`) and on two real captures of this machine.

use std::path::Path;

use yardstick_env::{Capture, CaptureOptions, capture};

fn fixture(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Capture::from_json(&text).unwrap();
    c.refresh_profile();
    c
}

#[test]
fn keys_of_real_gpu_machines() {
    for (file, key) in [
        ("dgx-h100.json", "H100x8_drv580_cuda13.0_torch2.11_sm90"),
        ("dgx-a100-40gb.json", "A100x8_drv535_cuda12.1_torch2.1_sm80"),
        ("gcp-g2-l4.json", "L4x1_drv550_cuda12.4_sm89"),
        (
            "workstation-2x-rtx4090.json",
            "RTX4090x2_drv560_cuda12.4_torch2.5_sm89",
        ),
        (
            "dgx-a100-mig.json",
            "A100x8_drv535_cuda12.1_torch2.1_sm80_mig",
        ),
        ("hgx-b200.json", "B200x8_drv570_cuda12.8_torch2.7_sm100"),
    ] {
        let c = fixture(file);
        assert_eq!(c.machine_profile, key, "{file}");
        assert!(c.profile_hash.starts_with("sha256:") && c.profile_hash.len() == 71);
    }
}

/// Everything that jitters between two captures of one machine: clocks, temperatures, power
/// draw, used memory, throttle state, host identity, time.
fn jitter(c: &mut Capture, step: u32) {
    c.captured_at = format!("2026-03-02T10:{:02}:00.000Z", step % 60);
    c.capture_ms += f64::from(step);
    c.os.hostname = Some(format!("node-{step}"));
    c.cpu.current_mhz = Some(1500.0 + f64::from(step) * 137.0);
    c.memory.available_bytes -= u64::from(step) * (1 << 27);
    c.memory.total_bytes -= u64::from(step) * (1 << 20); // MemTotal moves by MiB across boots
    for g in &mut c.gpus {
        g.sm_clock_mhz = g.sm_clock_mhz.map(|m| m.saturating_sub(step * 45));
        g.temperature_c = g.temperature_c.map(|t| t + step);
        g.power_draw_w = g.power_draw_w.map(|w| w + f64::from(step) * 11.0);
        g.memory_used_bytes = g.memory_used_bytes.map(|b| b + (u64::from(step) << 30));
        g.throttle_reasons = Some(vec!["sw_thermal_slowdown".into()]);
        g.uuid = Some(format!("GPU-{step:08x}-0000-0000-0000-000000000000"));
        g.pcie.gen_current = Some(1); // links drop to gen 1 at idle
        g.ecc.corrected_volatile = Some(u64::from(step));
    }
}

#[test]
fn key_and_hash_ignore_jitter() {
    for file in [
        "dgx-h100.json",
        "gcp-g2-l4.json",
        "workstation-2x-rtx4090.json",
    ] {
        let base = fixture(file);
        for step in 1..5 {
            let mut c = base.clone();
            jitter(&mut c, step);
            let p = c.profile();
            assert_eq!(p.key, base.machine_profile, "{file} step {step}");
            assert_eq!(p.hash, base.profile_hash, "{file} step {step}");
        }
    }
}

#[test]
fn driver_patch_changes_the_hash_not_the_key() {
    let base = fixture("dgx-h100.json");
    let mut c = base.clone();
    c.nvidia.driver_version = Some("580.82.07".into());
    let p = c.profile();
    assert_eq!(p.key, base.machine_profile);
    assert_ne!(p.hash, base.profile_hash);
}

#[test]
fn per_job_identifiers_are_recorded_but_not_hashed() {
    // Two jobs on the same Slurm node: only the job, step and rank ids differ.
    let base = fixture("dgx-h100.json");
    let job = |id: &str, rank: &str| {
        let mut c = base.clone();
        for (k, v) in [
            ("SLURM_JOB_ID", id),
            ("SLURM_JOBID", id),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", rank),
            ("RANK", rank),
            ("LOCAL_RANK", rank),
            ("SLURM_NNODES", "2"),
        ] {
            c.env.insert(k.into(), v.into());
        }
        c.refresh_profile();
        c
    };
    let a = job("4242001", "0");
    let b = job("4242917", "3");
    assert_eq!(a.env["SLURM_JOB_ID"], "4242001", "still recorded");
    assert_eq!(b.env["RANK"], "3");
    assert_eq!(a.machine_profile, b.machine_profile);
    assert_eq!(a.profile_hash, b.profile_hash);
    let basis = a.profile().basis;
    assert!(!basis.env.contains_key("SLURM_JOB_ID"));
    assert_eq!(basis.env["SLURM_NNODES"], "2");
    // The job's size is a property of the stack: it stays in the hash.
    let mut c = b.clone();
    c.env.insert("SLURM_NNODES".into(), "4".into());
    c.refresh_profile();
    assert_ne!(c.profile_hash, a.profile_hash);
    // So is a tuning knob.
    let mut c = b.clone();
    c.env.insert("NCCL_ALGO".into(), "Ring".into());
    c.refresh_profile();
    assert_ne!(c.profile_hash, a.profile_hash);
}

#[test]
fn stack_changes_change_the_key() {
    let base = fixture("dgx-h100.json");

    let mut c = base.clone();
    c.software.torch.as_mut().unwrap().version = "2.12.0+cu130".into();
    assert_eq!(c.profile().key, "H100x8_drv580_cuda13.0_torch2.12_sm90");

    let mut c = base.clone();
    c.gpus.truncate(4); // CUDA_VISIBLE_DEVICES=0,1,2,3
    assert_eq!(c.profile().key, "H100x4_drv580_cuda13.0_torch2.11_sm90");

    let mut c = base.clone();
    c.nvidia.driver_version = Some("575.57.08".into());
    assert_eq!(c.profile().key, "H100x8_drv575_cuda13.0_torch2.11_sm90");

    let mut c = base.clone();
    c.gpus[0].power_limit_w = Some(500.0); // power-capped: same class, different stack
    assert_eq!(c.profile().key, base.machine_profile);
    assert_ne!(c.profile().hash, base.profile_hash);
}

#[test]
fn heterogeneous_gpus_are_listed_in_order() {
    let mut c = fixture("dgx-a100-40gb.json");
    let h100 = fixture("dgx-h100.json");
    c.gpus.truncate(2);
    c.gpus.push(h100.gpus[0].clone());
    assert_eq!(
        c.profile().key,
        "A100x2+H100x1_drv535_cuda12.1_torch2.1_sm80+sm90"
    );
}

#[test]
fn cuda_falls_back_from_torch_to_toolkit_to_driver() {
    let mut c = fixture("dgx-h100.json");
    c.software.torch = None;
    assert_eq!(c.profile().key, "H100x8_drv580_cuda13.0_sm90");
    c.software.cuda_toolkit = Some("12.9.1".into());
    assert_eq!(c.profile().key, "H100x8_drv580_cuda12.9_sm90");
    c.software.cuda_toolkit = None;
    c.nvidia.cuda_driver_version = Some("13.1".into());
    assert_eq!(c.profile().key, "H100x8_drv580_cuda13.1_sm90");
}

#[test]
fn without_nvml_the_key_is_the_cpu_key() {
    let mut c = fixture("dgx-h100.json");
    c.nvidia.available = false;
    c.nvidia.reason = Some("no NVIDIA GPU: the NVIDIA driver is not loaded".into());
    c.gpus.clear();
    assert_eq!(
        c.profile().key,
        "cpu-Xeon-Platinum-8480Cx224c_linux5.15_torch2.11"
    );
    let l4 = fixture("gcp-g2-l4.json");
    let mut c = l4.clone();
    c.gpus.clear();
    c.nvidia.available = false;
    assert_eq!(c.profile().key, "cpu-Xeon-f6m85x8c_linux6.1");
}

#[test]
fn capture_json_round_trips() {
    let c = fixture("workstation-2x-rtx4090.json");
    let text = serde_json::to_string(&c).unwrap();
    let back = Capture::from_json(&text).unwrap();
    assert_eq!(back, c);
    assert!(c.gpus[0].unsupported.contains(&"mig_enabled".to_owned()));
    assert!(Capture::from_json("{not json").is_err());
}

fn quick() -> CaptureOptions {
    CaptureOptions {
        probe_python: false,
        probe_rustc: false,
        probe_git_status: false,
        ..CaptureOptions::default()
    }
}

#[test]
fn two_captures_of_this_machine_agree() {
    let a = capture(&quick());
    // Load the CPUs between the captures so clocks and available memory move.
    let hog: Vec<u64> = (0..2_000_000u64).map(|i| i.wrapping_mul(i)).collect();
    std::hint::black_box(&hog);
    let b = capture(&quick());
    assert_eq!(a.machine_profile, b.machine_profile);
    assert_eq!(a.profile_hash, b.profile_hash);
    assert!(!a.machine_profile.is_empty());
    // The key never carries a clock: no "MHz"/"GHz" and no bogomips-like decimals.
    let lower = a.machine_profile.to_ascii_lowercase();
    assert!(!lower.contains("hz"), "{}", a.machine_profile);
    if !a.nvidia.available {
        assert!(
            a.machine_profile.starts_with("cpu-"),
            "{}",
            a.machine_profile
        );
        assert!(a.gpus.is_empty());
        assert!(
            a.nvidia
                .reason
                .as_deref()
                .unwrap()
                .starts_with("no NVIDIA GPU")
        );
    }
}

#[test]
fn capture_reads_real_proc() {
    let c = capture(&quick());
    assert!(c.cpu.threads >= 1);
    assert!(c.memory.total_bytes > c.memory.available_bytes / 2);
    assert!(c.os.kernel.is_some() || !cfg!(target_os = "linux"));
    assert_eq!(c.schema, 1);
    assert!(c.captured_at.ends_with('Z'));
    let names: Vec<&str> = c.probes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["python", "rustc", "nvml"]);
    assert_eq!(c.probes[0].outcome, "skipped");
}
