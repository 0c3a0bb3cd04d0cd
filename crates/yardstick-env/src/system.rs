//! The operating system, memory, container and cgroup limits, and allow-listed environment
//! variables.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The operating system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct OsInfo {
    /// `linux`, `macos`, `windows`, ...
    pub family: String,
    /// Distribution name, e.g. `Debian GNU/Linux 12 (bookworm)`.
    pub name: Option<String>,
    /// Distribution version id, e.g. `12`.
    pub version: Option<String>,
    /// Kernel release, e.g. `6.1.0-18-amd64`.
    pub kernel: Option<String>,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// Host name. Identifies the host: never in the profile key or hash.
    pub hostname: Option<String>,
}

/// Memory of the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct MemoryInfo {
    /// Installed memory visible to the OS, bytes.
    pub total_bytes: u64,
    /// Available memory at capture time, bytes (volatile).
    pub available_bytes: u64,
    /// Swap, bytes.
    pub swap_total_bytes: u64,
    /// Configured huge pages (`HugePages_Total`), when exposed.
    pub hugepages_total: Option<u64>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`), when exposed.
    pub transparent_hugepages: Option<String>,
}

/// Container runtime and cgroup limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct ContainerInfo {
    /// `docker`, `podman`, `kubernetes`, `lxc` or `null` when none is detected.
    pub runtime: Option<String>,
    /// cgroup version (1 or 2), when mounted.
    pub cgroup_version: Option<u8>,
    /// CPU quota in CPUs (quota / period), when limited.
    pub cpu_limit: Option<f64>,
    /// Memory limit in bytes, when limited.
    pub memory_limit_bytes: Option<u64>,
    /// Image reference, when visible (`/run/.containerenv`, or `YARDSTICK_IMAGE`).
    pub image: Option<String>,
    /// Image digest or id, when visible (`YARDSTICK_IMAGE_DIGEST`, or `/run/.containerenv`).
    pub image_digest: Option<String>,
}

/// Reads the OS description.
pub fn os_info() -> OsInfo {
    let (name, version) = fs::read_to_string("/etc/os-release")
        .map(|t| parse_os_release(&t))
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_owned())
        .or_else(sysinfo::System::kernel_version);
    let hostname = fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .or_else(sysinfo::System::host_name);
    OsInfo {
        family: std::env::consts::OS.to_owned(),
        name: name.or_else(sysinfo::System::long_os_version),
        version: version.or_else(sysinfo::System::os_version),
        kernel,
        arch: std::env::consts::ARCH.to_owned(),
        hostname,
    }
}

/// `(PRETTY_NAME, VERSION_ID)` of an os-release file.
pub fn parse_os_release(text: &str) -> (Option<String>, Option<String>) {
    let mut pretty = None;
    let mut version = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().trim_matches('"').to_owned();
            match k.trim() {
                "PRETTY_NAME" => pretty = Some(v),
                "VERSION_ID" => version = Some(v),
                _ => {}
            }
        }
    }
    (pretty, version)
}

/// Reads the memory description.
pub fn memory_info() -> MemoryInfo {
    if let Ok(text) = fs::read_to_string("/proc/meminfo") {
        let mut m = parse_meminfo(&text);
        m.transparent_hugepages = fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .ok()
            .and_then(|s| bracketed(&s));
        return m;
    }
    let mut sys = sysinfo::System::new();
    sys.refresh_memory();
    MemoryInfo {
        total_bytes: sys.total_memory(),
        available_bytes: sys.available_memory(),
        swap_total_bytes: sys.total_swap(),
        hugepages_total: None,
        transparent_hugepages: None,
    }
}

/// The `[selected]` word of a sysfs choice list such as `always [madvise] never`.
fn bracketed(s: &str) -> Option<String> {
    let start = s.find('[')? + 1;
    let end = s[start..].find(']')? + start;
    Some(s[start..end].to_owned())
}

/// Parses `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> MemoryInfo {
    let mut m = MemoryInfo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let mut parts = v.split_whitespace();
        let Some(n) = parts.next().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        let bytes = if parts.next() == Some("kB") {
            n * 1024
        } else {
            n
        };
        match k {
            "MemTotal" => m.total_bytes = bytes,
            "MemAvailable" => m.available_bytes = bytes,
            "SwapTotal" => m.swap_total_bytes = bytes,
            "HugePages_Total" => m.hugepages_total = Some(n),
            _ => {}
        }
    }
    m
}

/// Detects the container runtime and cgroup limits.
pub fn container_info() -> ContainerInfo {
    let mut c = ContainerInfo::default();
    if let Ok(text) = fs::read_to_string("/run/.containerenv") {
        c.runtime = Some("podman".into());
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim().trim_matches('"');
                match k.trim() {
                    "image" if !v.is_empty() => c.image = Some(v.to_owned()),
                    "imageid" if !v.is_empty() => c.image_digest = Some(v.to_owned()),
                    _ => {}
                }
            }
        }
    } else if Path::new("/.dockerenv").exists() {
        c.runtime = Some("docker".into());
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        c.runtime = Some("kubernetes".into());
    }
    if c.runtime.is_none()
        && fs::read_to_string("/proc/1/environ").is_ok_and(|e| e.contains("container=lxc"))
    {
        c.runtime = Some("lxc".into());
    }
    if let Ok(v) = std::env::var("YARDSTICK_IMAGE") {
        c.image = Some(v);
    }
    if let Ok(v) = std::env::var("YARDSTICK_IMAGE_DIGEST") {
        c.image_digest = Some(v);
    }
    let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroup_limits(&mut c, &cgroup);
    c
}

/// Reads the CPU and memory limits of this process's cgroup (v2 unified, or v1 controllers).
fn cgroup_limits(c: &mut ContainerInfo, self_cgroup: &str) {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        c.cgroup_version = Some(2);
        let rel = self_cgroup
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("/");
        let dir = root.join(rel.trim_start_matches('/'));
        for d in [dir.as_path(), root] {
            if c.cpu_limit.is_none() {
                c.cpu_limit = fs::read_to_string(d.join("cpu.max"))
                    .ok()
                    .and_then(|s| parse_cpu_max(&s));
            }
            if c.memory_limit_bytes.is_none() {
                c.memory_limit_bytes = fs::read_to_string(d.join("memory.max"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
            }
        }
        return;
    }
    if !root.join("memory").exists() && !root.join("cpu").exists() {
        return;
    }
    c.cgroup_version = Some(1);
    let path_of = |controller: &str| -> String {
        self_cgroup
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ':');
                let (_, ctrls, path) = (it.next()?, it.next()?, it.next()?);
                ctrls.split(',').any(|x| x == controller).then_some(path)
            })
            .next()
            .unwrap_or("/")
            .trim_start_matches('/')
            .to_owned()
    };
    let mem_rel = path_of("memory");
    for d in [root.join("memory").join(&mem_rel), root.join("memory")] {
        if let Some(limit) = fs::read_to_string(d.join("memory.limit_in_bytes"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            // v1 reports "unlimited" as a huge page-rounded number near i64::MAX.
            if limit < (1u64 << 62) {
                c.memory_limit_bytes = Some(limit);
            }
            break;
        }
    }
    let cpu_rel = path_of("cpu");
    for d in [root.join("cpu").join(&cpu_rel), root.join("cpu")] {
        let quota = fs::read_to_string(d.join("cpu.cfs_quota_us"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        let period = fs::read_to_string(d.join("cpu.cfs_period_us"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        if let (Some(q), Some(p)) = (quota, period) {
            if q > 0 && p > 0 {
                c.cpu_limit = Some(q as f64 / p as f64);
            }
            break;
        }
    }
}

/// Parses cgroup v2 `cpu.max` (`max 100000` or `200000 100000`) into CPUs.
pub fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?.parse::<f64>().ok()?;
    let period = it.next()?.parse::<f64>().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// Environment variables captured by exact name. Only settings that change performance;
/// nothing that could hold a secret. [`ENV_PER_JOB`] names are captured too.
pub const ENV_ALLOW: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "PYTORCH_CUDA_ALLOC_CONF",
    "TORCH_CUDA_ARCH_LIST",
    "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCH_COMPILE_DISABLE",
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "RAYON_NUM_THREADS",
    "TOKIO_WORKER_THREADS",
    "XLA_FLAGS",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "SLURM_NNODES",
    "SLURM_NTASKS",
    "SLURM_CPUS_PER_TASK",
    "SLURM_GPUS_ON_NODE",
];

/// Allow-listed variables that identify one job, step or process rather than the stack it ran
/// on (Slurm, PBS and LSF job ids, Slurm step/task/node indices, torchrun ranks). They are
/// recorded — they say which job produced a run — but stay out of the profile hash: every job
/// gets a new id, and a hash that changed with it would make each run its own machine.
pub const ENV_PER_JOB: &[&str] = &[
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "PBS_JOBID",
    "LSB_JOBID",
    "RANK",
    "LOCAL_RANK",
    "NODE_RANK",
];

/// Whether the variable `name` identifies a job, step or rank ([`ENV_PER_JOB`]): recorded, not
/// hashed.
pub fn env_per_job(name: &str) -> bool {
    ENV_PER_JOB.contains(&name)
}

/// Prefixes captured wholesale: NCCL and UCX tuning knobs (they hold no credentials).
pub const ENV_ALLOW_PREFIXES: &[&str] = &["NCCL_", "UCX_"];

/// Words that exclude a variable even when allow-listed by prefix.
const ENV_DENY_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether the variable `name` is captured.
pub fn env_allowed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if ENV_DENY_WORDS.iter().any(|w| upper.contains(w)) {
        return false;
    }
    ENV_ALLOW.contains(&name)
        || ENV_PER_JOB.contains(&name)
        || ENV_ALLOW_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// What replaces the value of an allow-listed variable that carries a secret.
pub const REDACTED: &str = "<redacted: holds the value of a secret variable>";

/// The allow-listed environment variables of this process. A value that contains the value of
/// any variable whose name marks a secret (`…KEY`, `…TOKEN`, `…SECRET`, …; 8 characters or
/// more) is replaced by [`REDACTED`]: a token copied into, say, an `NCCL_` setting must not
/// reach `env.json` because the name looked harmless.
pub fn allowed_env() -> BTreeMap<String, String> {
    allowed_env_with(&[])
}

/// [`allowed_env`], also treating the variables named in `secret_names` as secrets whatever
/// their names (a spec's `apiKeyEnv` may be called anything).
pub fn allowed_env_with(secret_names: &[String]) -> BTreeMap<String, String> {
    redact_env(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        secret_names,
    )
}

/// [`allowed_env_with`] over a given environment.
pub fn redact_env(
    vars: Vec<(String, String)>,
    secret_names: &[String],
) -> BTreeMap<String, String> {
    let secrets: Vec<&str> = vars
        .iter()
        .filter(|(k, v)| {
            (secret_names.contains(k) || (!env_allowed(k) && is_secret_name(k))) && v.len() >= 8
        })
        .map(|(_, v)| v.as_str())
        .collect();
    vars.iter()
        .filter(|(k, _)| env_allowed(k))
        .map(|(k, v)| {
            let v = if secrets.iter().any(|s| v.contains(s)) {
                REDACTED.to_string()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ENV_DENY_WORDS.iter().any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_value_under_an_allowed_name_is_redacted() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let env = redact_env(
            vars(&[
                ("HF_TOKEN", "hf_abcdefgh12345"),
                ("NCCL_SOCKET_IFNAME", "hf_abcdefgh12345"),
                ("UCX_TLS", "x-hf_abcdefgh12345-y"),
                ("NCCL_IB_HCA", "mlx5_0"),
                ("CUDA_VISIBLE_DEVICES", "0,1"),
            ]),
            &[],
        );
        assert_eq!(env["NCCL_SOCKET_IFNAME"], REDACTED);
        assert_eq!(env["UCX_TLS"], REDACTED);
        assert_eq!(env["NCCL_IB_HCA"], "mlx5_0");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0,1");
        assert!(!env.contains_key("HF_TOKEN"));
        // A short secret value (under 8 characters) does not blank ordinary settings.
        let env = redact_env(vars(&[("MY_KEY", "0"), ("CUDA_VISIBLE_DEVICES", "0")]), &[]);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0");
        // A secret variable with an innocent name, named by the spec (`apiKeyEnv`).
        let pairs = [
            ("YS_BENCH_AUTH", "abcdefgh12345"),
            ("NCCL_DEBUG_FILE", "abcdefgh12345"),
        ];
        assert_eq!(
            redact_env(vars(&pairs), &[])["NCCL_DEBUG_FILE"],
            "abcdefgh12345"
        );
        let env = redact_env(vars(&pairs), &["YS_BENCH_AUTH".to_string()]);
        assert_eq!(env["NCCL_DEBUG_FILE"], REDACTED);
    }

    #[test]
    fn env_allow_list_keeps_secrets_out() {
        assert!(env_allowed("CUDA_VISIBLE_DEVICES"));
        assert!(env_allowed("NCCL_IB_HCA"));
        assert!(!env_allowed("NCCL_API_KEY"));
        assert!(!env_allowed("HF_TOKEN"));
        assert!(!env_allowed("AWS_SECRET_ACCESS_KEY"));
        assert!(!env_allowed("PATH"));
    }

    #[test]
    fn per_job_identifiers_are_recorded() {
        for name in ENV_PER_JOB {
            assert!(env_allowed(name), "{name} is per-job but not recorded");
        }
        assert!(env_per_job("SLURM_JOB_ID"));
        assert!(!env_per_job("SLURM_NNODES"));
        assert!(!env_per_job("WORLD_SIZE"));
    }

    #[test]
    fn parses_meminfo_and_os_release() {
        let m = parse_meminfo(
            "MemTotal:       24576000 kB\nMemAvailable:   20000000 kB\nSwapTotal: 0 kB\nHugePages_Total:       4\n",
        );
        assert_eq!(m.total_bytes, 24_576_000 * 1024);
        assert_eq!(m.available_bytes, 20_000_000 * 1024);
        assert_eq!(m.hugepages_total, Some(4));
        let (name, ver) =
            parse_os_release("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_ID=\"12\"\n");
        assert_eq!(name.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(ver.as_deref(), Some("12"));
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
    }

    #[test]
    fn cpu_max() {
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
    }

    #[test]
    fn reads_this_machine() {
        let m = memory_info();
        assert!(m.total_bytes > 0);
        let os = os_info();
        assert!(!os.arch.is_empty());
        let _ = container_info();
    }
}
