//! The CPU: model, topology, ISA extensions, caches, frequency governor, NUMA nodes.
//!
//! On Linux everything comes from `/proc/cpuinfo` and `/sys/devices/system`; elsewhere from
//! `sysinfo`. Fields that jitter (the current clock) are captured but kept out of the profile key
//! and hash (see [`crate::profile`]).

use std::collections::BTreeSet;
use std::fs;

use serde::{Deserialize, Serialize};

/// ISA extensions worth knowing for ML kernels (x86 flags and aarch64 features).
const ISA_OF_INTEREST: &[&str] = &[
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimdhp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
];

/// What is known about the CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct CpuInfo {
    /// Vendor id, e.g. `GenuineIntel`, `AuthenticAMD`.
    pub vendor: Option<String>,
    /// Marketing model name as the OS reports it.
    pub model_name: String,
    /// CPUID family (x86) or implementer (arm), when known.
    pub family: Option<u32>,
    /// CPUID model, when known.
    pub model: Option<u32>,
    /// CPUID stepping, when known.
    pub stepping: Option<u32>,
    /// Physical packages.
    pub sockets: u32,
    /// Physical cores over all sockets.
    pub cores: u32,
    /// Online logical CPUs.
    pub threads: u32,
    /// Logical CPUs this process may run on (affinity mask).
    pub available: u32,
    /// Whether more than one thread runs per core.
    pub smt: bool,
    /// Whether the OS runs under a hypervisor (x86 `hypervisor` flag).
    pub hypervisor: bool,
    /// cpufreq scaling governor of CPU 0 (`performance`, `powersave`, ...), when exposed.
    pub governor: Option<String>,
    /// Scaling driver of CPU 0 (`intel_pstate`, `acpi-cpufreq`, ...), when exposed.
    pub scaling_driver: Option<String>,
    /// NUMA nodes with CPUs.
    pub numa_nodes: u32,
    /// Maximum frequency (cpufreq `cpuinfo_max_freq`), MHz, when exposed.
    pub max_mhz: Option<f64>,
    /// Mean current frequency over CPUs, MHz. Volatile: never in the key or the hash.
    pub current_mhz: Option<f64>,
    /// Cache sizes per instance.
    pub cache: CacheSizes,
    /// ISA extensions of interest present on this CPU.
    pub isa: Vec<String>,
}

/// Cache sizes of one instance of each level, KiB.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct CacheSizes {
    /// L1 data cache.
    pub l1d_kib: Option<u64>,
    /// L2 cache.
    pub l2_kib: Option<u64>,
    /// L3 (last-level) cache.
    pub l3_kib: Option<u64>,
}

impl CpuInfo {
    /// Whether the CPU has the ISA extension `name` (as in [`CpuInfo::isa`]).
    pub fn has(&self, name: &str) -> bool {
        self.isa.iter().any(|f| f == name)
    }
}

/// Reads the CPU description.
pub fn detect() -> CpuInfo {
    let mut info = if cfg!(target_os = "linux") {
        fs::read_to_string("/proc/cpuinfo")
            .map(|text| parse_cpuinfo(&text))
            .unwrap_or_default()
    } else {
        CpuInfo::default()
    };
    if info.model_name.is_empty() || info.threads == 0 {
        fill_from_sysinfo(&mut info);
    }
    if cfg!(target_os = "linux") {
        fill_from_sysfs(&mut info);
    }
    info.available = available_cpus().unwrap_or(info.threads);
    if info.cores == 0 {
        info.cores = info.threads;
    }
    if info.sockets == 0 {
        info.sockets = 1;
    }
    info.smt = info.threads > info.cores;
    info
}

/// Parses `/proc/cpuinfo` (x86 and aarch64 layouts).
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut processors = 0u32;
    let mut mhz_sum = 0.0;
    let mut mhz_n = 0u32;
    let mut flags: BTreeSet<String> = BTreeSet::new();
    let mut physical_id: Option<String> = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => {
                processors += 1;
                physical_id = None;
            }
            "vendor_id" if info.vendor.is_none() => info.vendor = Some(value.to_owned()),
            "CPU implementer" if info.vendor.is_none() => {
                info.vendor = Some(arm_implementer(value).to_owned());
                info.family = parse_int(value);
            }
            "CPU part" if info.model.is_none() => info.model = parse_int(value),
            "CPU variant" if info.stepping.is_none() => info.stepping = parse_int(value),
            "model name" if info.model_name.is_empty() => info.model_name = value.to_owned(),
            "cpu family" if info.family.is_none() => info.family = value.parse().ok(),
            "model" if info.model.is_none() => info.model = value.parse().ok(),
            "stepping" if info.stepping.is_none() => info.stepping = value.parse().ok(),
            "physical id" => {
                sockets.insert(value.to_owned());
                physical_id = Some(value.to_owned());
            }
            "core id" => {
                cores.insert((physical_id.clone().unwrap_or_default(), value.to_owned()));
            }
            "cpu MHz" => {
                if let Ok(v) = value.parse::<f64>() {
                    mhz_sum += v;
                    mhz_n += 1;
                }
            }
            "flags" | "Features" if flags.is_empty() => {
                flags = value.split_whitespace().map(str::to_owned).collect();
            }
            _ => {}
        }
    }
    info.threads = processors;
    info.sockets = sockets.len() as u32;
    info.cores = cores.len() as u32;
    info.current_mhz = (mhz_n > 0).then(|| mhz_sum / f64::from(mhz_n));
    info.hypervisor = flags.contains("hypervisor");
    info.isa = ISA_OF_INTEREST
        .iter()
        .filter(|f| flags.contains(**f))
        .map(|f| (*f).to_owned())
        .collect();
    info
}

fn parse_int(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn arm_implementer(code: &str) -> &'static str {
    match parse_int(code) {
        Some(0x41) => "ARM",
        Some(0x4e) => "NVIDIA",
        Some(0x51) => "Qualcomm",
        Some(0x61) => "Apple",
        Some(0xc0) => "Ampere",
        Some(0x48) => "HiSilicon",
        _ => "arm",
    }
}

fn fill_from_sysinfo(info: &mut CpuInfo) {
    use sysinfo::{CpuRefreshKind, RefreshKind, System};
    let sys =
        System::new_with_specifics(RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing()));
    if let Some(cpu) = sys.cpus().first() {
        if info.model_name.is_empty() {
            info.model_name = cpu.brand().trim().to_owned();
        }
        if info.vendor.is_none() && !cpu.vendor_id().is_empty() {
            info.vendor = Some(cpu.vendor_id().to_owned());
        }
    }
    if info.threads == 0 {
        info.threads = sys.cpus().len() as u32;
    }
    if info.cores == 0 {
        info.cores = System::physical_core_count().unwrap_or(0) as u32;
    }
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn fill_from_sysfs(info: &mut CpuInfo) {
    let base = "/sys/devices/system/cpu/cpu0/cpufreq";
    info.governor = read_trim(&format!("{base}/scaling_governor"));
    info.scaling_driver = read_trim(&format!("{base}/scaling_driver"));
    info.max_mhz = read_trim(&format!("{base}/cpuinfo_max_freq"))
        .and_then(|s| s.parse::<f64>().ok())
        .map(|khz| khz / 1000.0);
    info.numa_nodes = fs::read_dir("/sys/devices/system/node")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("node")
                        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
                })
                .count() as u32
        })
        .unwrap_or(0)
        .max(1);
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let (Some(level), Some(kind), Some(size)) = (
            read_trim(&format!("{dir}/level")),
            read_trim(&format!("{dir}/type")),
            read_trim(&format!("{dir}/size")),
        ) else {
            continue;
        };
        let Some(kib) = parse_cache_size(&size) else {
            continue;
        };
        match (level.as_str(), kind.as_str()) {
            ("1", "Data") => info.cache.l1d_kib = Some(kib),
            ("2", _) => info.cache.l2_kib = Some(kib),
            ("3", _) => info.cache.l3_kib = Some(kib),
            _ => {}
        }
    }
}

/// Parses a sysfs cache size such as `32K`, `1024K`, `32768K` or `2M` into KiB.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(k) = s.strip_suffix('K') {
        k.parse().ok()
    } else if let Some(m) = s.strip_suffix('M') {
        m.parse::<u64>().ok().map(|m| m * 1024)
    } else {
        s.parse::<u64>().ok().map(|b| b / 1024)
    }
}

/// Logical CPUs in this process's affinity mask.
#[cfg(target_os = "linux")]
pub fn available_cpus() -> Option<u32> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            Some(libc::CPU_COUNT(&set) as u32)
        } else {
            None
        }
    }
}

/// Logical CPUs this process may use.
#[cfg(not(target_os = "linux"))]
pub fn available_cpus() -> Option<u32> {
    std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XEON: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\ncpu MHz\t\t: 2000.000\nphysical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\ncpu MHz\t\t: 3000.000\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n";

    #[test]
    fn parses_x86_topology_and_flags() {
        let c = parse_cpuinfo(XEON);
        assert_eq!(c.threads, 3);
        assert_eq!(c.sockets, 2);
        assert_eq!(c.cores, 2);
        assert_eq!(c.family, Some(6));
        assert_eq!(c.model, Some(143));
        assert_eq!(c.current_mhz, Some(2500.0));
        assert_eq!(
            c.isa,
            [
                "avx",
                "avx2",
                "fma",
                "avx512f",
                "avx512_bf16",
                "amx_tile",
                "amx_bf16"
            ]
        );
    }

    #[test]
    fn parses_aarch64_features() {
        let text = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve sve2 bf16 i8mm\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\n\nprocessor\t: 1\n";
        let c = parse_cpuinfo(text);
        assert_eq!(c.vendor.as_deref(), Some("ARM"));
        assert_eq!(c.model, Some(0xd4f));
        assert_eq!(c.threads, 2);
        assert_eq!(c.isa, ["asimd", "sve", "sve2", "bf16", "i8mm"]);
    }

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_cache_size("32K"), Some(32));
        assert_eq!(parse_cache_size("2M"), Some(2048));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn detects_this_machine() {
        let c = detect();
        assert!(c.threads >= 1);
        assert!(c.available >= 1 && c.available <= c.threads.max(c.available));
        assert!(!c.model_name.is_empty());
    }
}
