//! The machine profile: a coarse, stable, readable key and a full hash.
//!
//! Baselines are compared only within one key (docs/methodology.md#baselines-and-regression-gates),
//! so the key must not drift: a key that changes between two captures of the same
//! machine turns every comparison into a false alarm. It therefore holds only what decides
//! performance class and never changes on its own — GPU model and count, driver major, CUDA
//! major.minor, torch major.minor, compute capability; or CPU model, usable CPUs and kernel
//! major.minor — and never a clock, bogomips, temperature, free memory or host name.
//!
//! The hash covers the full *stable* capture ([`ProfileBasis`]): everything that is a property
//! of the hardware/software stack, at full precision (driver 580.65.06, torch 2.11.0+cu130,
//! power limit, PCIe maximum link, allow-listed environment), without volatile readings,
//! without host identity and without per-job identifiers (`SLURM_JOB_ID`, ranks). Equal keys with different hashes mean "same class of machine, not
//! the same stack": a comparison may proceed but should say so. `docs/env.md` lists the rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::capture::Capture;
use crate::cpu::CacheSizes;

/// A machine profile.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct MachineProfile {
    /// The coarse key, e.g. `H100x8_drv580_cuda13.0_torch2.11_sm90`.
    pub key: String,
    /// `sha256:` + hex of the canonical JSON of [`MachineProfile::basis`].
    pub hash: String,
    /// The stable fields the hash covers.
    pub basis: ProfileBasis,
}

/// The stable part of a capture: what the full hash covers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct ProfileBasis {
    /// OS family and architecture, e.g. `linux/x86_64`.
    pub platform: String,
    /// Distribution name.
    pub os_name: Option<String>,
    /// Full kernel release.
    pub kernel: Option<String>,
    /// CPU vendor.
    pub cpu_vendor: Option<String>,
    /// CPU model name.
    pub cpu_model_name: String,
    /// CPUID family/model/stepping.
    pub cpu_id: Option<String>,
    /// Sockets, cores, threads, usable CPUs.
    pub cpu_topology: [u32; 4],
    /// NUMA nodes.
    pub numa_nodes: u32,
    /// ISA extensions of interest.
    pub isa: Vec<String>,
    /// Cache sizes.
    pub cache: CacheSizes,
    /// cpufreq governor.
    pub governor: Option<String>,
    /// Memory, GiB (rounded: MemTotal moves by a few MiB between kernels and boots).
    pub memory_gib: u64,
    /// Container runtime, CPU limit, memory limit and image digest.
    pub container: Vec<String>,
    /// NVIDIA driver version.
    pub driver: Option<String>,
    /// CUDA version supported by the driver.
    pub cuda_driver: Option<String>,
    /// Stable per-GPU facts.
    pub gpus: Vec<GpuBasis>,
    /// Python version.
    pub python: Option<String>,
    /// Installed ML packages and versions.
    pub packages: BTreeMap<String, String>,
    /// torch version and its CUDA.
    pub torch: Option<String>,
    /// CUDA toolkit.
    pub cuda_toolkit: Option<String>,
    /// NCCL version.
    pub nccl: Option<String>,
    /// Allow-listed environment variables, without the per-job identifiers
    /// (`system::ENV_PER_JOB`: Slurm/PBS/LSF job ids, step and rank indices).
    pub env: BTreeMap<String, String>,
}

/// Stable facts of one GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct GpuBasis {
    /// Product name.
    pub name: String,
    /// Compute capability.
    pub compute_capability: Option<String>,
    /// Memory, GiB (rounded).
    pub memory_gib: Option<u64>,
    /// Maximum SM and memory clocks (specification values, not readings).
    pub max_clocks_mhz: [Option<u32>; 2],
    /// Enforced power limit, W.
    pub power_limit_w: Option<u64>,
    /// Maximum PCIe generation and width.
    pub pcie_max: [Option<u32>; 2],
    /// NVLink links present.
    pub nvlink_links: Option<u32>,
    /// ECC enabled.
    pub ecc: Option<bool>,
    /// MIG enabled.
    pub mig: Option<bool>,
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn gib(bytes: u64) -> u64 {
    (bytes as f64 / GIB).round() as u64
}

impl MachineProfile {
    /// Derives the key and hash of a capture.
    pub fn of(c: &Capture) -> Self {
        let basis = basis(c);
        let json = serde_json::to_vec(&basis).unwrap_or_default();
        let hash = format!("sha256:{}", hex::encode(Sha256::digest(&json)));
        Self {
            key: key(c),
            hash,
            basis,
        }
    }
}

// The machine profile of a capture: derived here, recorded by `capture::capture`.
impl Capture {
    /// Recomputes [`Capture::machine_profile`] and [`Capture::profile_hash`] from the fields.
    pub fn refresh_profile(&mut self) -> MachineProfile {
        let p = MachineProfile::of(self);
        self.machine_profile = p.key.clone();
        self.profile_hash = p.hash.clone();
        p
    }

    /// The machine profile of this capture.
    pub fn profile(&self) -> MachineProfile {
        MachineProfile::of(self)
    }

    /// The stable fields the profile hash covers.
    pub fn basis(&self) -> ProfileBasis {
        basis(self)
    }
}

/// The stable part of a capture.
pub fn basis(c: &Capture) -> ProfileBasis {
    let cpu = &c.cpu;
    let mut container = Vec::new();
    if let Some(r) = &c.container.runtime {
        container.push(format!("runtime={r}"));
    }
    if let Some(l) = c.container.cpu_limit {
        container.push(format!("cpus={l}"));
    }
    if let Some(m) = c.container.memory_limit_bytes {
        container.push(format!("memory_gib={}", gib(m)));
    }
    if let Some(d) = &c.container.image_digest {
        container.push(format!("image={d}"));
    }
    ProfileBasis {
        platform: format!("{}/{}", c.os.family, c.os.arch),
        os_name: c.os.name.clone(),
        kernel: c.os.kernel.clone(),
        cpu_vendor: cpu.vendor.clone(),
        cpu_model_name: cpu.model_name.clone(),
        cpu_id: cpu.family.map(|f| {
            format!(
                "{f}/{}/{}",
                cpu.model.unwrap_or_default(),
                cpu.stepping.unwrap_or_default()
            )
        }),
        cpu_topology: [cpu.sockets, cpu.cores, cpu.threads, cpu.available],
        numa_nodes: cpu.numa_nodes,
        isa: cpu.isa.clone(),
        cache: cpu.cache.clone(),
        governor: cpu.governor.clone(),
        memory_gib: gib(c.memory.total_bytes),
        container,
        driver: c.nvidia.driver_version.clone(),
        cuda_driver: c.nvidia.cuda_driver_version.clone(),
        gpus: c
            .gpus
            .iter()
            .map(|g| GpuBasis {
                name: g.name.clone(),
                compute_capability: g.compute_capability.clone(),
                memory_gib: g.memory_total_bytes.map(gib),
                max_clocks_mhz: [g.sm_clock_max_mhz, g.mem_clock_max_mhz],
                power_limit_w: g.power_limit_w.map(|w| w.round() as u64),
                pcie_max: [g.pcie.gen_max, g.pcie.width_max],
                nvlink_links: g.nvlink.as_ref().map(|n| n.total),
                ecc: g.ecc.enabled,
                mig: g.mig_enabled,
            })
            .collect(),
        python: c.software.python.as_ref().map(|p| p.version.clone()),
        packages: c
            .software
            .python
            .as_ref()
            .map(|p| p.packages.clone())
            .unwrap_or_default(),
        torch: c.software.torch.as_ref().map(|t| {
            format!(
                "{} cuda={} hip={}",
                t.version,
                t.cuda.as_deref().unwrap_or("none"),
                t.hip.as_deref().unwrap_or("none")
            )
        }),
        cuda_toolkit: c.software.cuda_toolkit.clone(),
        nccl: c.software.nccl.as_ref().map(|n| n.version.clone()),
        env: c
            .env
            .iter()
            .filter(|(k, _)| !crate::system::env_per_job(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// The first `n` dot-separated parts of a version (`12.4.1` → `12.4` for n = 2), with any
/// local suffix (`2.4.0+cu124` → `2.4`) dropped.
pub fn version_prefix(v: &str, n: usize) -> String {
    let core = v.split(['+', '-', ' ']).next().unwrap_or(v);
    core.split('.').take(n).collect::<Vec<_>>().join(".")
}

/// The profile key of a capture (rules in the module docs and `docs/env.md`).
pub fn key(c: &Capture) -> String {
    let torch = c
        .software
        .torch
        .as_ref()
        .map(|t| format!("torch{}", version_prefix(&t.version, 2)));
    if c.nvidia.available && !c.gpus.is_empty() {
        let mut parts = vec![gpu_groups(c)];
        if let Some(d) = &c.nvidia.driver_version {
            parts.push(format!("drv{}", version_prefix(d, 1)));
        }
        let cuda = c
            .software
            .torch
            .as_ref()
            .and_then(|t| t.cuda.clone())
            .or_else(|| c.software.cuda_toolkit.clone())
            .or_else(|| c.nvidia.cuda_driver_version.clone());
        if let Some(v) = cuda {
            parts.push(format!("cuda{}", version_prefix(&v, 2)));
        }
        parts.extend(torch);
        let mut sms: Vec<String> = Vec::new();
        for g in &c.gpus {
            if let Some(cc) = &g.compute_capability {
                let sm = format!("sm{}", cc.replace('.', ""));
                if !sms.contains(&sm) {
                    sms.push(sm);
                }
            }
        }
        if !sms.is_empty() {
            parts.push(sms.join("+"));
        }
        if c.gpus.iter().any(|g| g.mig_enabled == Some(true)) {
            parts.push("mig".into());
        }
        parts.join("_")
    } else {
        let mut parts = vec![format!(
            "cpu-{}x{}c",
            cpu_token(&c.cpu),
            c.cpu.available.max(1)
        )];
        parts.push(os_token(c));
        parts.extend(torch);
        parts.join("_")
    }
}

/// GPU models and counts in order of first appearance: `H100x8`, `A100x4+V100x2`.
fn gpu_groups(c: &Capture) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for g in &c.gpus {
        let short = gpu_short_name(&g.name);
        match groups.iter_mut().find(|(n, _)| *n == short) {
            Some((_, count)) => *count += 1,
            None => groups.push((short, 1)),
        }
    }
    groups
        .iter()
        .map(|(n, k)| format!("{n}x{k}"))
        .collect::<Vec<_>>()
        .join("+")
}

/// A short GPU model name: vendor and series words, memory size and type, and the SXM form
/// factor dropped; PCIe and NVL variants kept as a suffix. `NVIDIA H100 80GB HBM3` → `H100`,
/// `NVIDIA A100-PCIE-40GB` → `A100-PCIe`, `NVIDIA GeForce RTX 4090` → `RTX4090`.
pub fn gpu_short_name(name: &str) -> String {
    const DROP: &[&str] = &[
        "nvidia",
        "tesla",
        "geforce",
        "quadro",
        "gpu",
        "generation",
        "edition",
        "server",
    ];
    let mut pcie = false;
    let mut nvl = false;
    let mut kept = Vec::new();
    for tok in name.split(|ch: char| ch.is_whitespace() || ch == '-' || ch == '_') {
        let lower = tok.to_ascii_lowercase();
        if tok.is_empty() || DROP.contains(&lower.as_str()) {
            continue;
        }
        if lower == "pcie" {
            pcie = true;
            continue;
        }
        if lower == "nvl" {
            nvl = true;
            continue;
        }
        let is_mem_size = lower
            .strip_suffix("gb")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|ch| ch.is_ascii_digit()));
        let is_mem_type = lower.starts_with("hbm") || lower.starts_with("gddr");
        let is_sxm = lower.starts_with("sxm");
        if is_mem_size || is_mem_type || is_sxm {
            continue;
        }
        kept.push(tok);
    }
    let mut s: String = kept
        .concat()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    if s.is_empty() {
        s = "GPU".into();
    }
    if pcie {
        s.push_str("-PCIe");
    }
    if nvl {
        s.push_str("-NVL");
    }
    s
}

/// A short CPU model token: vendor words, trademarks, core counts and the nominal clock
/// (`@ 2.20GHz`) dropped. Without a model number in the name (virtual CPUs often report
/// `AMD EPYC` or `Intel Xeon CPU`), the CPUID family and model are appended (`EPYC-f25m17`),
/// which never change on a machine.
pub fn cpu_token(cpu: &crate::cpu::CpuInfo) -> String {
    const DROP: &[&str] = &[
        "amd",
        "intel",
        "cpu",
        "processor",
        "(r)",
        "(tm)",
        "core(tm)",
        "xeon(r)",
    ];
    let mut name = cpu.model_name.replace("(R)", "").replace("(TM)", "");
    for cut in ["@", " with ", " w/ "] {
        if let Some(i) = name.find(cut) {
            name.truncate(i);
        }
    }
    let kept: Vec<String> = name
        .split_whitespace()
        .filter(|t| {
            let lower = t.to_ascii_lowercase();
            let is_core_count = lower
                .strip_suffix("-core")
                .is_some_and(|n| n.chars().all(|ch| ch.is_ascii_digit()));
            !DROP.contains(&lower.as_str()) && !is_core_count
        })
        .map(|t| {
            t.chars()
                .filter(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '+' | '.' | '-'))
                .collect::<String>()
        })
        .filter(|t| !t.is_empty())
        .collect();
    let mut token = kept.join("-");
    let has_model_number = kept.iter().any(|t| t.chars().any(|ch| ch.is_ascii_digit()));
    if !has_model_number && let (Some(f), Some(m)) = (cpu.family, cpu.model) {
        if !token.is_empty() {
            token.push('-');
        }
        token.push_str(&format!("f{f}m{m}"));
    }
    if token.is_empty() {
        token = "unknown".into();
    }
    token
}

/// `linux6.1` (kernel major.minor); elsewhere the OS family and version major.
fn os_token(c: &Capture) -> String {
    let family = if c.os.family.is_empty() {
        "os"
    } else {
        c.os.family.as_str()
    };
    let version = if family == "linux" {
        c.os.kernel.as_deref().map(|k| version_prefix(k, 2))
    } else {
        c.os.version.as_deref().map(|v| version_prefix(v, 1))
    };
    format!("{family}{}", version.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuInfo;

    #[test]
    fn gpu_names() {
        for (name, short) in [
            ("NVIDIA H100 80GB HBM3", "H100"),
            ("NVIDIA H100 PCIe", "H100-PCIe"),
            ("NVIDIA H100 NVL", "H100-NVL"),
            ("NVIDIA A100-SXM4-80GB", "A100"),
            ("NVIDIA A100-PCIE-40GB", "A100-PCIe"),
            ("NVIDIA A100 80GB PCIe", "A100-PCIe"),
            ("Tesla V100-SXM2-16GB", "V100"),
            ("Tesla T4", "T4"),
            ("NVIDIA L4", "L4"),
            ("NVIDIA L40S", "L40S"),
            ("NVIDIA A10G", "A10G"),
            ("NVIDIA GeForce RTX 4090", "RTX4090"),
            ("NVIDIA GeForce RTX 4090 Laptop GPU", "RTX4090Laptop"),
            ("NVIDIA RTX A6000", "RTXA6000"),
            ("NVIDIA RTX 6000 Ada Generation", "RTX6000Ada"),
            ("NVIDIA GH200 480GB", "GH200"),
            ("NVIDIA B200", "B200"),
        ] {
            assert_eq!(gpu_short_name(name), short, "{name}");
        }
    }

    fn cpu(name: &str, family: Option<u32>, model: Option<u32>) -> CpuInfo {
        CpuInfo {
            model_name: name.into(),
            family,
            model,
            ..CpuInfo::default()
        }
    }

    #[test]
    fn cpu_tokens() {
        for (name, token) in [
            ("AMD EPYC 7B13 64-Core Processor", "EPYC-7B13"),
            ("Intel(R) Xeon(R) Platinum 8480+", "Xeon-Platinum-8480+"),
            ("Intel(R) Core(TM) i7-1185G7 @ 3.00GHz", "Core-i7-1185G7"),
            ("AMD Ryzen 9 7950X 16-Core Processor", "Ryzen-9-7950X"),
            (
                "AMD Ryzen 7 7840U w/ Radeon  780M Graphics",
                "Ryzen-7-7840U",
            ),
            ("Apple M2 Pro", "Apple-M2-Pro"),
            ("Neoverse-V2", "Neoverse-V2"),
        ] {
            assert_eq!(cpu_token(&cpu(name, Some(6), Some(1))), token, "{name}");
        }
        assert_eq!(
            cpu_token(&cpu("AMD EPYC", Some(25), Some(17))),
            "EPYC-f25m17"
        );
        assert_eq!(
            cpu_token(&cpu("Intel(R) Xeon(R) CPU @ 2.20GHz", Some(6), Some(85))),
            "Xeon-f6m85"
        );
        assert_eq!(cpu_token(&cpu("", None, None)), "unknown");
    }

    #[test]
    fn versions() {
        assert_eq!(version_prefix("12.4.1", 2), "12.4");
        assert_eq!(version_prefix("2.4.0+cu124", 2), "2.4");
        assert_eq!(version_prefix("580.65.06", 1), "580");
        assert_eq!(version_prefix("6.18.44-fc-v669", 2), "6.18");
        assert_eq!(version_prefix("13.0", 2), "13.0");
    }
}
