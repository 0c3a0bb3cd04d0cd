//! The capture as people read it (`yardstick env`). ANSI styles mark labels and secondary
//! lines; the caller strips them when the output is not a terminal.

use std::fmt::Write;

use crate::Capture;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn or_dash(v: Option<&str>) -> &str {
    v.unwrap_or("-")
}

/// A capture as `yardstick env` prints it: one labelled row per part of the machine.
pub fn capture(c: &Capture) -> String {
    let mut out = String::new();
    write_capture(&mut out, c).expect("writing to a String");
    out
}

fn write_capture(out: &mut String, c: &Capture) -> std::fmt::Result {
    let (b, d, r) = (BOLD, DIM, RESET);
    let row = |out: &mut String, label: &str, value: String| -> std::fmt::Result {
        writeln!(out, "{b}{label:<16}{r} {value}")
    };
    row(out, "machine profile", c.machine_profile.clone())?;
    row(out, "profile hash", c.profile_hash.clone())?;
    row(
        out,
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
        out,
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
        row(out, "", format!("{d}isa: {}{r}", cpu.isa.join(" ")))?;
    }
    let cache = &cpu.cache;
    row(
        out,
        "",
        format!(
            "{d}cache: L1d {} KiB · L2 {} KiB · L3 {} KiB{r}",
            cache.l1d_kib.map_or("-".into(), |v| v.to_string()),
            cache.l2_kib.map_or("-".into(), |v| v.to_string()),
            cache.l3_kib.map_or("-".into(), |v| v.to_string()),
        ),
    )?;
    row(
        out,
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
        out,
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
            out,
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
                out,
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
        row(out, "gpus", or_dash(c.nvidia.reason.as_deref()).to_owned())?;
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
        out,
        "software",
        format!(
            "yardstick {} · git {git} · {}",
            or_dash(sw.yardstick.as_deref()),
            or_dash(sw.rustc.as_deref())
        ),
    )?;
    row(
        out,
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
        row(out, "env", vars.join(" "))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CaptureOptions;

    #[test]
    fn every_part_of_the_machine_has_a_labelled_row() {
        let c = crate::capture(&CaptureOptions {
            probe_python: false,
            probe_gpus: false,
            ..CaptureOptions::default()
        });
        let text = capture(&c);
        let plain = text.replace(BOLD, "").replace(DIM, "").replace(RESET, "");
        let first = plain.lines().next().unwrap();
        assert_eq!(
            first,
            format!("{:<16} {}", "machine profile", c.machine_profile)
        );
        for label in [
            "profile hash",
            "os",
            "cpu",
            "memory",
            "container",
            "software",
        ] {
            assert!(
                plain
                    .lines()
                    .any(|l| l.starts_with(&format!("{label:<16} "))),
                "no `{label}` row in\n{plain}"
            );
        }
        // Without NVML the reason is the `gpus` row; memory is in GiB with one decimal.
        assert!(
            plain.contains("gpus") || plain.contains("nvidia"),
            "{plain}"
        );
        assert!(plain.contains(" GiB total"), "{plain}");
        assert!(
            plain
                .trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("captured in ")
        );
    }
}
