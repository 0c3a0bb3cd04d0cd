//! One capture of the environment, and the machine profile derived from it.
//!
//! The slow parts (Python, `rustc`, `git status`, NVML) run on their own threads while the
//! files under `/proc` and `/sys` are read, so a capture costs about as much as its slowest
//! probe, each of which is bounded by [`CaptureOptions::probe_timeout`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::EnvError;
use crate::cpu::{self, CpuInfo};
use crate::gpu::{self, GpuInfo, NvidiaInfo};
use crate::software::{self, ProbeRecord, SoftwareInfo};
use crate::system::{self, ContainerInfo, MemoryInfo, OsInfo};

/// Version of the capture's JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// What a capture does.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Version string of the tool doing the capture (recorded in `software.yardstick`).
    pub tool_version: Option<String>,
    /// Directory whose git commit is recorded; `None` for the current directory.
    pub work_dir: Option<PathBuf>,
    /// Probe Python (and torch) by running the interpreter.
    pub probe_python: bool,
    /// Probe `rustc --version`.
    pub probe_rustc: bool,
    /// Run `git status` to learn whether the work tree is dirty.
    pub probe_git_status: bool,
    /// Load NVML.
    pub probe_gpus: bool,
    /// Deadline of each probe that runs a process.
    pub probe_timeout: Duration,
    /// Variables that hold secrets whatever their names (a spec's `apiKeyEnv`, `--bearer-env`):
    /// their values are redacted wherever an allow-listed variable repeats them.
    pub secret_env: Vec<String>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        Self {
            tool_version: None,
            work_dir: None,
            probe_python: true,
            probe_rustc: true,
            probe_git_status: true,
            probe_gpus: true,
            probe_timeout: Duration::from_millis(1500),
            secret_env: Vec::new(),
        }
    }
}

/// One capture of the environment (`env.json` of a run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Capture {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema: u32,
    /// When the capture was taken, RFC 3339 UTC.
    pub captured_at: String,
    /// The coarse machine-profile key.
    pub machine_profile: String,
    /// `sha256:` hash of the stable part of the capture ([`ProfileBasis`](crate::ProfileBasis)).
    pub profile_hash: String,
    /// The operating system and host.
    pub os: OsInfo,
    /// The CPU.
    pub cpu: CpuInfo,
    /// Memory.
    pub memory: MemoryInfo,
    /// Container runtime and cgroup limits.
    pub container: ContainerInfo,
    /// The NVIDIA driver stack, or why there is none.
    pub nvidia: NvidiaInfo,
    /// NVIDIA GPUs (empty without NVML).
    pub gpus: Vec<GpuInfo>,
    /// Software versions.
    pub software: SoftwareInfo,
    /// Allow-listed environment variables.
    pub env: BTreeMap<String, String>,
    /// How each probe went (outcome and time).
    pub probes: Vec<ProbeRecord>,
    /// Wall time of the whole capture, ms.
    pub capture_ms: f64,
}

impl Capture {
    /// Reads a capture from JSON (an `env.json`, or a fixture).
    pub fn from_json(text: &str) -> Result<Self, EnvError> {
        Ok(serde_json::from_str(text)?)
    }
}

/// Captures the environment.
pub fn capture(opts: &CaptureOptions) -> Capture {
    let start = Instant::now();
    let timeout = opts.probe_timeout;
    let work_dir = opts
        .work_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));

    std::thread::scope(|s| {
        let python = opts
            .probe_python
            .then(|| s.spawn(move || software::probe_python(timeout)));
        let rustc = opts
            .probe_rustc
            .then(|| s.spawn(move || software::probe_rustc(timeout)));
        let dirty = {
            let dir = work_dir.clone();
            opts.probe_git_status
                .then(|| s.spawn(move || software::probe_git_dirty(&dir, timeout)))
        };
        let gpus = opts.probe_gpus.then(|| {
            s.spawn(|| {
                let t = Instant::now();
                let (info, gpus) = gpu::capture_gpus();
                let outcome = if info.available { "ok" } else { "absent" };
                let rec = ProbeRecord::new("nvml", outcome, t, info.reason.clone());
                (info, gpus, rec)
            })
        });

        let mut c = Capture {
            schema: SCHEMA_VERSION,
            captured_at: now_rfc3339(),
            os: system::os_info(),
            cpu: cpu::detect(),
            memory: system::memory_info(),
            container: system::container_info(),
            env: system::allowed_env_with(&opts.secret_env),
            ..Capture::default()
        };
        c.software.yardstick = opts.tool_version.clone();
        c.software.git = software::git_head(&work_dir);
        c.software.cuda_toolkit = software::cuda_toolkit();

        if let Some(h) = python {
            let (py, torch, rec) = join(h, "python");
            c.software.python = py;
            c.software.torch = torch;
            c.probes.push(rec);
        } else {
            c.probes.push(skipped("python"));
        }
        c.software.nccl = software::nccl(c.software.python.as_ref());
        if let Some(h) = rustc {
            let (v, rec) = join(h, "rustc");
            c.software.rustc = v;
            c.probes.push(rec);
        } else {
            c.probes.push(skipped("rustc"));
        }
        if let Some(h) = dirty {
            let (d, rec) = join(h, "git-status");
            if let Some(git) = c.software.git.as_mut() {
                git.dirty = d;
            }
            c.probes.push(rec);
        }
        match gpus {
            Some(h) => {
                let (info, gpus, rec) = join(h, "nvml");
                c.nvidia = info;
                c.gpus = gpus;
                c.probes.push(rec);
            }
            None => {
                c.nvidia = NvidiaInfo {
                    available: false,
                    reason: Some("no NVIDIA GPU: NVML probe disabled".into()),
                    ..NvidiaInfo::default()
                };
                c.probes.push(skipped("nvml"));
            }
        }
        c.refresh_profile();
        c.capture_ms = start.elapsed().as_secs_f64() * 1e3;
        c
    })
}

fn skipped(name: &str) -> ProbeRecord {
    ProbeRecord {
        name: name.to_owned(),
        outcome: "skipped".into(),
        elapsed_ms: 0.0,
        detail: None,
    }
}

/// Joins a probe thread; a panicking probe becomes that probe's default plus an error record.
fn join<T: ProbeResult>(h: std::thread::ScopedJoinHandle<'_, T>, name: &str) -> T {
    h.join().unwrap_or_else(|_| T::panicked(name))
}

trait ProbeResult {
    fn panicked(name: &str) -> Self;
}

fn panicked_record(name: &str) -> ProbeRecord {
    ProbeRecord {
        name: name.to_owned(),
        outcome: "error".into(),
        elapsed_ms: 0.0,
        detail: Some("probe panicked".into()),
    }
}

impl<A: Default> ProbeResult for (A, ProbeRecord) {
    fn panicked(name: &str) -> Self {
        (A::default(), panicked_record(name))
    }
}

impl<A: Default, B: Default> ProbeResult for (A, B, ProbeRecord) {
    fn panicked(name: &str) -> Self {
        (A::default(), B::default(), panicked_record(name))
    }
}

/// The current time as RFC 3339 UTC with milliseconds (truncated), e.g.
/// `2026-05-09T07:35:25.123Z`: the one timestamp format of yardstick (captures, manifests,
/// baselines, warehouse rows).
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339_of_unix_ms(now.as_millis() as i64)
}

/// Formats Unix milliseconds as RFC 3339 UTC.
pub fn rfc3339_of_unix_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        tod / 3600,
        tod % 3600 / 60,
        tod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_of_unix_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_of_unix_ms(1_709_251_199_999),
            "2024-02-29T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339_of_unix_ms(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
