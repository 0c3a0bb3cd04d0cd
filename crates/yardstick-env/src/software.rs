//! Software versions: git commit of the working directory, Rust, Python and its ML packages,
//! torch (with the CUDA it was built for), the CUDA toolkit and NCCL.
//!
//! Probes that start a process run quietly (stdin and stderr closed), in parallel, and are
//! killed at a deadline; a probe that times out is recorded as such. Python is probed without
//! importing torch (importing it takes seconds): package versions come from the `*.dist-info`
//! directories on `sys.path`, and torch's CUDA version from its `version.py`, read as text.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Software found on the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct SoftwareInfo {
    /// Version of yardstick itself.
    pub yardstick: Option<String>,
    /// The git state of the working directory, when it is in a repository.
    pub git: Option<GitInfo>,
    /// `rustc --version`, when a Rust toolchain is on PATH.
    pub rustc: Option<String>,
    /// The Python interpreter and its ML packages, when Python is found.
    pub python: Option<PythonInfo>,
    /// PyTorch, when installed for that interpreter.
    pub torch: Option<TorchInfo>,
    /// CUDA toolkit version (`/usr/local/cuda/version.json` or `$CUDA_HOME`), when installed.
    pub cuda_toolkit: Option<String>,
    /// NCCL, when found (a Python wheel or a system library).
    pub nccl: Option<NcclInfo>,
}

/// The git state of a working directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct GitInfo {
    /// The commit checked out (40 hex digits).
    pub commit: Option<String>,
    /// The branch, when HEAD is a branch.
    pub branch: Option<String>,
    /// Whether tracked files differ from the commit; `None` when `git status` was not available
    /// in time.
    pub dirty: Option<bool>,
}

/// A Python interpreter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct PythonInfo {
    /// `sys.version`, first word (e.g. `3.11.7`).
    pub version: String,
    /// `sys.executable`.
    pub executable: String,
    /// Versions of the ML packages of interest that are installed.
    pub packages: BTreeMap<String, String>,
}

/// PyTorch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct TorchInfo {
    /// `torch.__version__`, e.g. `2.4.0+cu124`.
    pub version: String,
    /// `torch.version.cuda`: the CUDA runtime torch was built with; `None` for CPU builds.
    pub cuda: Option<String>,
    /// `torch.version.hip`, for ROCm builds.
    pub hip: Option<String>,
    /// `torch.version.git_version`.
    pub git_version: Option<String>,
}

/// NCCL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct NcclInfo {
    /// Version, e.g. `2.21.5`.
    pub version: String,
    /// Where it was found: a wheel name (`nvidia-nccl-cu12`) or a library path.
    pub source: String,
}

/// How one probe went.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct ProbeRecord {
    /// The probe (`python`, `rustc`, `git-status`, `nvml`).
    pub name: String,
    /// `ok`, `absent` (nothing to probe), `timeout`, `error` or `skipped`.
    pub outcome: String,
    /// Wall time of the probe, ms.
    pub elapsed_ms: f64,
    /// Why, when not `ok`.
    pub detail: Option<String>,
}

impl ProbeRecord {
    pub(crate) fn new(name: &str, outcome: &str, start: Instant, detail: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            outcome: outcome.to_owned(),
            elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
            detail,
        }
    }
}

/// The output of a command run with a deadline.
#[derive(Debug)]
pub(crate) enum CmdOutcome {
    /// Exited 0 with this stdout.
    Ok(String),
    /// Not found on PATH.
    Absent,
    /// Killed at the deadline.
    Timeout,
    /// Exited non-zero or failed to start.
    Error(String),
}

/// Runs `program args` quietly; kills it at `timeout`.
pub(crate) fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> CmdOutcome {
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CmdOutcome::Absent,
        Err(e) => return CmdOutcome::Error(e.to_string()),
    };
    let mut stdout = child.stdout.take();
    // Read on another thread so a chatty child never blocks on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(out) = stdout.as_mut() {
            let _ = out.take(1 << 20).read_to_string(&mut s);
        }
        s
    });
    let deadline = Instant::now() + timeout;
    let mut sleep = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let out = reader.join().unwrap_or_default();
                return if status.success() {
                    CmdOutcome::Ok(out)
                } else {
                    CmdOutcome::Error(format!("exited with {status}"))
                };
            }
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return CmdOutcome::Timeout;
            }
            Ok(None) => {
                std::thread::sleep(sleep);
                sleep = (sleep * 2).min(Duration::from_millis(10));
            }
            Err(e) => return CmdOutcome::Error(e.to_string()),
        }
    }
}

/// Finds `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The Python interpreter to probe: `$YARDSTICK_PYTHON`, the active virtualenv or conda
/// environment, else `python3`/`python` on PATH. A pyenv shim is resolved to the interpreter it
/// would run, because the shim itself (a bash script) costs hundreds of milliseconds.
pub fn find_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("YARDSTICK_PYTHON") {
        return Some(PathBuf::from(p));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            for exe in ["bin/python3", "bin/python"] {
                let p = Path::new(&prefix).join(exe);
                if is_executable(&p) {
                    return Some(p);
                }
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["python3", "python"] {
            let p = dir.join(name);
            if !is_executable(&p) {
                continue;
            }
            if dir.file_name().is_some_and(|d| d == "shims") {
                if let Some(real) = resolve_pyenv_shim(&dir, name) {
                    return Some(real);
                }
                // A shim for the `system` version: keep looking further down PATH.
                continue;
            }
            return Some(p);
        }
    }
    None
}

fn resolve_pyenv_shim(shims: &Path, name: &str) -> Option<PathBuf> {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| shims.parent().map(Path::to_path_buf))?;
    let version = std::env::var("PYENV_VERSION")
        .ok()
        .or_else(|| {
            let cwd = std::env::current_dir().ok()?;
            cwd.ancestors()
                .find_map(|d| fs::read_to_string(d.join(".python-version")).ok())
        })
        .or_else(|| fs::read_to_string(root.join("version")).ok())?;
    let version = version.split_whitespace().next()?.to_owned();
    if version == "system" {
        return None;
    }
    let p = root.join("versions").join(version).join("bin").join(name);
    is_executable(&p).then_some(p)
}

/// Python packages whose versions are recorded when installed.
pub const PYTHON_PACKAGES: &[&str] = &[
    "torch",
    "numpy",
    "triton",
    "transformers",
    "accelerate",
    "deepspeed",
    "flash-attn",
    "vllm",
    "sglang",
    "jax",
    "jaxlib",
    "tensorflow",
    "nvidia-nccl-cu11",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
];

// Lists `*.dist-info` directories on sys.path instead of importing importlib.metadata (one
// directory listing per path entry, no METADATA parsing): the probe costs little more than the
// interpreter's start-up.
const PYTHON_PROBE: &str = r#"
import sys, os, json
want = {n.replace('-', '_').lower(): n for n in NAMES}
r = {"version": sys.version.split()[0], "executable": sys.executable, "packages": {}}
for p in sys.path:
    try:
        ents = os.listdir(p or '.')
    except OSError:
        continue
    for e in ents:
        if e.endswith('.dist-info'):
            name, _, ver = e[:-10].partition('-')
            k = name.replace('-', '_').replace('.', '_').lower()
            if k in want and want[k] not in r["packages"]:
                r["packages"][want[k]] = ver
                if k == 'torch':
                    r["torch_dir"] = os.path.join(p or '.', 'torch')
print(json.dumps(r))
"#;

#[derive(Deserialize)]
struct PythonProbeOut {
    version: String,
    executable: String,
    #[serde(default)]
    packages: BTreeMap<String, String>,
    #[serde(default)]
    torch_dir: Option<String>,
}

/// Probes Python and torch. Returns the interpreter, torch when installed, and the record.
pub fn probe_python(timeout: Duration) -> (Option<PythonInfo>, Option<TorchInfo>, ProbeRecord) {
    let start = Instant::now();
    let Some(python) = find_python() else {
        return (
            None,
            None,
            ProbeRecord::new("python", "absent", start, Some("no python3 on PATH".into())),
        );
    };
    let names = serde_json::to_string(PYTHON_PACKAGES).unwrap_or_else(|_| "[]".into());
    let script = PYTHON_PROBE.replace("NAMES", &names);
    match run_with_timeout(&python, &["-c", &script], timeout) {
        CmdOutcome::Ok(out) => match serde_json::from_str::<PythonProbeOut>(out.trim()) {
            Ok(p) => {
                let torch = p.packages.get("torch").map(|v| {
                    let mut t = p
                        .torch_dir
                        .as_deref()
                        .and_then(|d| fs::read_to_string(Path::new(d).join("version.py")).ok())
                        .map(|text| parse_torch_version_py(&text))
                        .unwrap_or_default();
                    if t.version.is_empty() {
                        t.version = v.clone();
                    }
                    t
                });
                let info = PythonInfo {
                    version: p.version,
                    executable: p.executable,
                    packages: p.packages,
                };
                (
                    Some(info),
                    torch,
                    ProbeRecord::new("python", "ok", start, None),
                )
            }
            Err(e) => (
                None,
                None,
                ProbeRecord::new("python", "error", start, Some(format!("bad output: {e}"))),
            ),
        },
        CmdOutcome::Absent => (
            None,
            None,
            ProbeRecord::new("python", "absent", start, None),
        ),
        CmdOutcome::Timeout => (
            None,
            None,
            ProbeRecord::new(
                "python",
                "timeout",
                start,
                Some(format!(
                    "{} did not answer within {} ms",
                    python.display(),
                    timeout.as_millis()
                )),
            ),
        ),
        CmdOutcome::Error(e) => (
            None,
            None,
            ProbeRecord::new("python", "error", start, Some(e)),
        ),
    }
}

/// Parses torch's generated `version.py` (`__version__ = '2.4.0+cu124'`,
/// `cuda: Optional[str] = '12.4'`, `hip: Optional[str] = None`, `git_version = '...'`).
pub fn parse_torch_version_py(text: &str) -> TorchInfo {
    let mut t = TorchInfo::default();
    for line in text.lines() {
        let Some((lhs, rhs)) = line.split_once('=') else {
            continue;
        };
        let name = lhs.split(':').next().unwrap_or("").trim();
        let rhs = rhs.trim();
        let value = rhs
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
            .map(str::to_owned);
        match name {
            "__version__" => t.version = value.unwrap_or_default(),
            "cuda" => t.cuda = value,
            "hip" => t.hip = value,
            "git_version" => t.git_version = value,
            _ => {}
        }
    }
    t
}

/// Probes `rustc --version`.
pub fn probe_rustc(timeout: Duration) -> (Option<String>, ProbeRecord) {
    let start = Instant::now();
    let Some(rustc) = which("rustc") else {
        return (None, ProbeRecord::new("rustc", "absent", start, None));
    };
    match run_with_timeout(&rustc, &["--version"], timeout) {
        CmdOutcome::Ok(out) => (
            Some(out.trim().to_owned()),
            ProbeRecord::new("rustc", "ok", start, None),
        ),
        CmdOutcome::Absent => (None, ProbeRecord::new("rustc", "absent", start, None)),
        CmdOutcome::Timeout => (None, ProbeRecord::new("rustc", "timeout", start, None)),
        CmdOutcome::Error(e) => (None, ProbeRecord::new("rustc", "error", start, Some(e))),
    }
}

/// Reads the git commit and branch of the repository containing `dir` from `.git` directly
/// (no process), or `None` outside a repository.
pub fn git_head(dir: &Path) -> Option<GitInfo> {
    let (git_dir, common_dir) = find_git_dir(dir)?;
    let head = fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let mut info = GitInfo::default();
    if let Some(reference) = head.strip_prefix("ref: ") {
        info.branch = reference.strip_prefix("refs/heads/").map(str::to_owned);
        info.commit = fs::read_to_string(common_dir.join(reference))
            .or_else(|_| fs::read_to_string(git_dir.join(reference)))
            .ok()
            .map(|s| s.trim().to_owned())
            .or_else(|| packed_ref(&common_dir, reference));
    } else {
        info.commit = Some(head.to_owned());
    }
    Some(info)
}

fn find_git_dir(start: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in start.ancestors() {
        let dot = dir.join(".git");
        let git_dir = if dot.is_dir() {
            dot
        } else if let Ok(text) = fs::read_to_string(&dot) {
            let rel = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
            dir.join(rel)
        } else {
            continue;
        };
        let common = fs::read_to_string(git_dir.join("commondir"))
            .map(|c| git_dir.join(c.trim()))
            .unwrap_or_else(|_| git_dir.clone());
        return Some((git_dir, common));
    }
    None
}

fn packed_ref(common_dir: &Path, reference: &str) -> Option<String> {
    let text = fs::read_to_string(common_dir.join("packed-refs")).ok()?;
    text.lines().find_map(|l| {
        let (hash, name) = l.split_once(' ')?;
        (name.trim() == reference).then(|| hash.to_owned())
    })
}

/// Whether the work tree of `dir` has modified tracked files (`git status`, with a deadline).
pub fn probe_git_dirty(dir: &Path, timeout: Duration) -> (Option<bool>, ProbeRecord) {
    let start = Instant::now();
    let Some(git) = which("git") else {
        return (None, ProbeRecord::new("git-status", "absent", start, None));
    };
    let dir_s = dir.to_string_lossy();
    let args = [
        "-C",
        dir_s.as_ref(),
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ];
    match run_with_timeout(&git, &args, timeout) {
        CmdOutcome::Ok(out) => (
            Some(!out.trim().is_empty()),
            ProbeRecord::new("git-status", "ok", start, None),
        ),
        CmdOutcome::Absent => (None, ProbeRecord::new("git-status", "absent", start, None)),
        CmdOutcome::Timeout => (None, ProbeRecord::new("git-status", "timeout", start, None)),
        CmdOutcome::Error(e) => (
            None,
            ProbeRecord::new("git-status", "error", start, Some(e)),
        ),
    }
}

/// The CUDA toolkit version from `$CUDA_HOME`/`$CUDA_PATH` or `/usr/local/cuda`.
pub fn cuda_toolkit() -> Option<String> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    roots.iter().find_map(|root| {
        if let Ok(text) = fs::read_to_string(root.join("version.json")) {
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            return v["cuda"]["version"].as_str().map(str::to_owned);
        }
        let text = fs::read_to_string(root.join("version.txt")).ok()?;
        text.split_whitespace().last().map(str::to_owned)
    })
}

/// NCCL: the Python wheel's version when present, else a system `libnccl.so.X.Y.Z`.
pub fn nccl(python: Option<&PythonInfo>) -> Option<NcclInfo> {
    if let Some(p) = python {
        for wheel in ["nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"] {
            if let Some(v) = p.packages.get(wheel) {
                return Some(NcclInfo {
                    version: v.clone(),
                    source: wheel.to_owned(),
                });
            }
        }
    }
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/local/cuda/lib64",
        "/usr/lib",
    ];
    for dir in dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        let mut best: Option<(Vec<u32>, String)> = None;
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(v) = name.strip_prefix("libnccl.so.") {
                let parts: Vec<u32> = v.split('.').filter_map(|x| x.parse().ok()).collect();
                if parts.len() == 3 && best.as_ref().is_none_or(|(b, _)| parts > *b) {
                    best = Some((parts, name.clone()));
                }
            }
        }
        if let Some((v, name)) = best {
            return Some(NcclInfo {
                version: v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
                source: format!("{dir}/{name}"),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_torch_version_py() {
        let text = "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n__version__ = '2.4.0+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\ngit_version = 'e4ee3be4063b7c430974252fdf7db42273388d86'\nhip: Optional[str] = None\n";
        let t = parse_torch_version_py(text);
        assert_eq!(t.version, "2.4.0+cu124");
        assert_eq!(t.cuda.as_deref(), Some("12.4"));
        assert_eq!(t.hip, None);
        assert_eq!(
            t.git_version.as_deref(),
            Some("e4ee3be4063b7c430974252fdf7db42273388d86")
        );
    }

    #[test]
    fn timeout_kills_a_slow_child() {
        let sleep = which("sleep").expect("sleep (coreutils) on PATH");
        let t = Instant::now();
        let out = run_with_timeout(&sleep, &["5"], Duration::from_millis(50));
        assert!(matches!(out, CmdOutcome::Timeout), "{out:?}");
        // Killed at the timeout: not before it, and long before the 5 s sleep ends.
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_secs(4),
            "{took:?}"
        );
    }

    #[test]
    fn absent_program() {
        let out = run_with_timeout(
            Path::new("/nonexistent/yardstick-no-such-program"),
            &[],
            Duration::from_secs(1),
        );
        assert!(matches!(out, CmdOutcome::Absent));
    }

    #[test]
    fn git_head_of_a_fresh_repository() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        fs::create_dir_all(git.join("refs/heads")).unwrap();
        fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(
            git.join("packed-refs"),
            "# pack-refs with: peeled\n0123456789abcdef0123456789abcdef01234567 refs/heads/main\n",
        )
        .unwrap();
        let sub = dir.path().join("a/b");
        fs::create_dir_all(&sub).unwrap();
        let info = git_head(&sub).unwrap();
        assert_eq!(info.branch.as_deref(), Some("main"));
        assert_eq!(
            info.commit.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
    }
}
