//! `yardstick env`: the environment capture and machine profile (crate `yardstick-env`).

use std::io::Write;
use std::time::Duration;

use yardstick_env::{Capture, CaptureOptions};

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output::{self, style};

/// Print the environment capture and the machine profile.
///
/// The profile key is coarse and stable (GPU model×count, driver major, CUDA, torch,
/// compute capability; or CPU model×usable CPUs and kernel): baselines are compared only within
/// one key. The hash covers every stable field. Field list and key rules: docs/env.md.
#[derive(Debug, clap::Args)]
pub struct EnvArgs {
    /// Do not run the Python interpreter (no Python, torch or NCCL-wheel versions).
    #[arg(long)]
    pub no_python: bool,
    /// Do not load NVML (records "no NVIDIA GPU: NVML probe disabled").
    #[arg(long)]
    pub no_gpu: bool,
    /// Deadline of each probe that runs a process (python, rustc, git), in ms.
    #[arg(long, default_value_t = 1500, value_name = "MS")]
    pub probe_timeout_ms: u64,
    /// Print only the machine-profile key (one line), for scripts.
    #[arg(long, conflicts_with = "json")]
    pub key: bool,
}

/// Runs `yardstick env`.
pub fn run(args: EnvArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if args.probe_timeout_ms == 0 || args.probe_timeout_ms > 60_000 {
        return Err(exit::invalid(
            format!(
                "--probe-timeout-ms {} is out of range",
                args.probe_timeout_ms
            ),
            Some("give a deadline between 1 and 60000 ms, e.g. --probe-timeout-ms 1500"),
        ));
    }
    let opts = CaptureOptions {
        tool_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        probe_python: !args.no_python,
        probe_gpus: !args.no_gpu,
        probe_timeout: Duration::from_millis(args.probe_timeout_ms),
        ..CaptureOptions::default()
    };
    let c = yardstick_env::capture(&opts);
    if g.json {
        output::json(&c)?;
    } else if args.key {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", c.machine_profile)?;
    } else {
        print_human(&c)?;
    }
    Ok(Status::Ok)
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn or_dash(v: Option<&str>) -> &str {
    v.unwrap_or("-")
}

fn print_human(c: &Capture) -> anyhow::Result<()> {
    let mut out = anstream::stdout().lock();
    let (b, d, r) = (style::BOLD, style::DIM, style::RESET);
    let row = |out: &mut dyn Write, label: &str, value: String| -> std::io::Result<()> {
        writeln!(out, "{b}{label:<16}{r} {value}")
    };
    row(&mut out, "machine profile", c.machine_profile.clone())?;
    row(&mut out, "profile hash", c.profile_hash.clone())?;
    row(
        &mut out,
        "os",
        format!(
            "{} · kernel {} · {}",
            or_dash(c.os.name.as_deref()),
            or_dash(c.os.kernel.as_deref()),
            c.os.arch
        ),
    )?;
    let cpu = &c.cpu;
    let id = match (cpu.family, cpu.model) {
        (Some(f), Some(m)) => format!(" (family {f} model {m})"),
        _ => String::new(),
    };
    row(
        &mut out,
        "cpu",
        format!(
            "{}{id} · {} socket(s), {} cores, {} threads, {} usable · NUMA nodes {} · governor {}",
            cpu.model_name,
            cpu.sockets,
            cpu.cores,
            cpu.threads,
            cpu.available,
            cpu.numa_nodes,
            or_dash(cpu.governor.as_deref())
        ),
    )?;
    if !cpu.isa.is_empty() {
        row(&mut out, "", format!("{d}isa: {}{r}", cpu.isa.join(" ")))?;
    }
    let cache = &cpu.cache;
    row(
        &mut out,
        "",
        format!(
            "{d}cache: L1d {} KiB · L2 {} KiB · L3 {} KiB{r}",
            cache.l1d_kib.map_or("-".into(), |v| v.to_string()),
            cache.l2_kib.map_or("-".into(), |v| v.to_string()),
            cache.l3_kib.map_or("-".into(), |v| v.to_string()),
        ),
    )?;
    row(
        &mut out,
        "memory",
        format!(
            "{} total · {} available · swap {}",
            gib(c.memory.total_bytes),
            gib(c.memory.available_bytes),
            gib(c.memory.swap_total_bytes)
        ),
    )?;
    let ct = &c.container;
    row(
        &mut out,
        "container",
        format!(
            "{} · cgroup {} · cpu limit {} · memory limit {}{}",
            or_dash(ct.runtime.as_deref()),
            ct.cgroup_version.map_or("-".into(), |v| format!("v{v}")),
            ct.cpu_limit.map_or("none".into(), |v| format!("{v:.2}")),
            ct.memory_limit_bytes.map_or("none".into(), gib),
            ct.image_digest
                .as_deref()
                .map_or(String::new(), |i| format!(" · image {i}"))
        ),
    )?;
    if c.nvidia.available {
        row(
            &mut out,
            "nvidia",
            format!(
                "driver {} · CUDA (driver) {} · NVML {}",
                or_dash(c.nvidia.driver_version.as_deref()),
                or_dash(c.nvidia.cuda_driver_version.as_deref()),
                or_dash(c.nvidia.nvml_version.as_deref())
            ),
        )?;
        for gpu in &c.gpus {
            row(
                &mut out,
                &format!("gpu {}", gpu.index),
                format!(
                    "{} · sm {} · {} · SM {}/{} MHz · {} W limit · {} °C · PCIe gen {}/{} x{}/{}{}",
                    gpu.name,
                    or_dash(gpu.compute_capability.as_deref()),
                    gpu.memory_total_bytes.map_or("-".into(), gib),
                    gpu.sm_clock_mhz.map_or("-".into(), |v| v.to_string()),
                    gpu.sm_clock_max_mhz.map_or("-".into(), |v| v.to_string()),
                    gpu.power_limit_w.map_or("-".into(), |v| format!("{v:.0}")),
                    gpu.temperature_c.map_or("-".into(), |v| v.to_string()),
                    gpu.pcie.gen_current.map_or("-".into(), |v| v.to_string()),
                    gpu.pcie.gen_max.map_or("-".into(), |v| v.to_string()),
                    gpu.pcie.width_current.map_or("-".into(), |v| v.to_string()),
                    gpu.pcie.width_max.map_or("-".into(), |v| v.to_string()),
                    match &gpu.throttle_reasons {
                        Some(t) if !t.is_empty() => format!(" · throttle: {}", t.join(",")),
                        _ => String::new(),
                    }
                ),
            )?;
        }
    } else {
        row(
            &mut out,
            "gpus",
            or_dash(c.nvidia.reason.as_deref()).to_owned(),
        )?;
    }
    let sw = &c.software;
    let git = sw.git.as_ref().map_or("-".to_owned(), |g| {
        let commit = g.commit.as_deref().map_or("-", |c| &c[..c.len().min(12)]);
        let dirty = match g.dirty {
            Some(true) => ", dirty",
            Some(false) => ", clean",
            None => "",
        };
        format!("{commit} ({}{dirty})", or_dash(g.branch.as_deref()))
    });
    row(
        &mut out,
        "software",
        format!(
            "yardstick {} · git {git} · {}",
            or_dash(sw.yardstick.as_deref()),
            or_dash(sw.rustc.as_deref())
        ),
    )?;
    row(
        &mut out,
        "",
        format!(
            "python {} · torch {} (CUDA {}) · CUDA toolkit {} · NCCL {}",
            sw.python.as_ref().map_or("-", |p| p.version.as_str()),
            sw.torch.as_ref().map_or("-", |t| t.version.as_str()),
            sw.torch
                .as_ref()
                .and_then(|t| t.cuda.as_deref())
                .unwrap_or("-"),
            or_dash(sw.cuda_toolkit.as_deref()),
            sw.nccl.as_ref().map_or("-", |n| n.version.as_str()),
        ),
    )?;
    if !c.env.is_empty() {
        let vars: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        row(&mut out, "env", vars.join(" "))?;
    }
    let probes: Vec<String> = c
        .probes
        .iter()
        .map(|p| format!("{} {} {:.0} ms", p.name, p.outcome, p.elapsed_ms))
        .collect();
    writeln!(
        out,
        "{d}captured in {:.0} ms ({}){r}",
        c.capture_ms,
        probes.join(", ")
    )?;
    Ok(())
}
