//! A run split across a group of processes that share a directory: the pods of an Indexed Job
//! (`yardstick run SPEC --shard I/N --shard-dir DIR`, what `yardstick k8s render`'s Job runs),
//! or any N processes started alike.
//!
//! Every member captures its environment (`DIR/env/pod-I.json`) and, when the plan has a micro
//! layer, runs it (`DIR/micro/pod-I.json`). Member 0 is the run's orchestrator: it runs the
//! plan as `yardstick run` does and stores ONE run, with every member's environment and micro
//! figures (`pods/`). The other members walk the same plan and take part only in the steps that
//! span the group, and exit 0 once their parts ran and were reported (member 0 records a part
//! that failed):
//!
//! * a serve point (MLPerf scenarios and capacity searches aside): every member runs its shard
//!   of the load (`bench serve --shard I/N --start-at T --output DIR/steps/<step>/shard-I`), and
//!   member 0 merges the N shards exactly (`yardstick_load::shard_files`) into one point;
//! * a command point: every member runs the command once, as one rank (`RANK`, `WORLD_SIZE`,
//!   `MASTER_ADDR` come from the pod's environment); member 0's is the measured one, and a rank
//!   that fails fails the replicate.
//!
//! Every other point (micro, the reference trainer, evals, start-up, data loading) runs on
//! member 0 only.
//!
//! The barrier of a step is files in `DIR/steps/<point>-r<replicate>/`: each member writes
//! `ready-I` when it reaches the step; member 0, once all N are ready, writes `start` (a unix
//! time two seconds ahead, the common origin of every shard's schedule); each member writes
//! `done-I` (its exit status) when its part ended. Files are written to a temporary name and
//! renamed, so a reader never sees half a file. After a step's merge member 0 removes its
//! directory (every member is past it). Every wait is bounded (`timeout`): member 0 stores the
//! run as `incomplete` with the missing member named, then writes `DIR/abort` with the reason,
//! and the others stop at their next wait — nothing hangs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::placement::{Placement, ServeShards, Start, StepName, nodes_check, stored_report};
use crate::replicate::ReplicateOutcome;
use crate::{Event, RunError};
use yardstick_store::RunWriter;

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PodGroup {
    /// This member's index, 0-based (`JOB_COMPLETION_INDEX`).
    pub index: u32,
    /// Members in all.
    pub count: u32,
    /// The directory every member shares.
    pub dir: PathBuf,
    /// The longest wait for another member.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub timeout: Duration,
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs_f64(f64::deserialize(d)?.max(0.0)))
    }
}

/// How a member's part of a step ended (`done-I`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Done {
    /// The member.
    pub index: u32,
    /// Exit code of what it ran (`None`: it could not run, or was killed).
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Why `--shard I/N` did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardArgError {
    /// Not of the form `I/N`.
    #[error("`{0}` is not I/N")]
    NotIOverN(String),
    /// `I` is not a number.
    #[error("`{0}`: the index is not a number")]
    Index(String),
    /// `N` is not a number.
    #[error("`{0}`: the count is not a number")]
    Count(String),
    /// `I` is not below `N`, or `N` is 0.
    #[error("`{0}`: the index is 0 to N-1, N at least 1")]
    OutOfRange(String),
}

/// Parses `I/N` (`--shard`).
pub fn parse_shard(s: &str) -> Result<(u32, u32), ShardArgError> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| ShardArgError::NotIOverN(s.to_string()))?;
    let i: u32 = i
        .trim()
        .parse()
        .map_err(|_| ShardArgError::Index(s.to_string()))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| ShardArgError::Count(s.to_string()))?;
    if n == 0 || i >= n {
        return Err(ShardArgError::OutOfRange(s.to_string()));
    }
    Ok((i, n))
}

/// Why a wait on the other members of a pod group ended without what it waited for.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// Member 0 gave up the run (its reason).
    #[error("member 0 gave up: {0}")]
    Aborted(String),
    /// What was waited for did not come in time.
    #[error("{what} within {}", humantime::format_duration(*timeout))]
    TimedOut {
        /// What was waited for.
        what: String,
        /// How long.
        timeout: Duration,
    },
}

/// Why a member of a pod group could not take part in a step.
#[derive(Debug, thiserror::Error)]
pub enum PodGroupError {
    /// A file of the shared directory could not be written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        error: std::io::Error,
    },
    /// Member 0: some members never reached the step.
    #[error("pod(s) {} never reached step {key}: not {wait}", join(missing))]
    NeverReached {
        /// The members missing.
        missing: Vec<u32>,
        /// The step.
        key: String,
        /// Why the wait ended.
        wait: WaitError,
    },
    /// Another member: member 0 never wrote the step's start time.
    #[error("step {key}: {wait}")]
    NoStartTime {
        /// The step.
        key: String,
        /// Why the wait ended.
        wait: WaitError,
    },
    /// The step's start time is not a time.
    #[error("{}: not a time", path.display())]
    NotATime {
        /// The start file.
        path: PathBuf,
    },
    /// Member 0: some members' parts of the step never arrived.
    #[error(
        "the shard of pod(s) {} of step {key} never arrived: not {wait}",
        join(missing)
    )]
    ShardsMissing {
        /// The members missing.
        missing: Vec<u32>,
        /// The step.
        key: String,
        /// Why the wait ended.
        wait: WaitError,
    },
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

impl PodGroup {
    /// Whether this member orchestrates and stores the run.
    pub fn leader(&self) -> bool {
        self.index == 0
    }

    /// The directory of one step's barrier and shards.
    pub fn step_dir(&self, key: &str) -> PathBuf {
        self.dir.join("steps").join(key)
    }

    /// The file of member `i` in `sub` (`env`, `micro`).
    pub fn member_file(&self, sub: &str, i: u32) -> PathBuf {
        self.dir.join(sub).join(format!("pod-{i}.json"))
    }

    fn abort_file(&self) -> PathBuf {
        self.dir.join("abort")
    }

    /// Member 0 gives up: every other member stops at its next wait.
    pub fn abort(&self, why: &str) {
        let _ = write_atomic(&self.abort_file(), why.as_bytes());
    }

    fn aborted(&self) -> Option<String> {
        std::fs::read_to_string(self.abort_file()).ok()
    }

    /// Waits until `ready` holds, polling; the error says what was missing.
    fn wait(&self, what: &str, mut ready: impl FnMut() -> bool) -> Result<(), WaitError> {
        let end = Instant::now() + self.timeout;
        loop {
            if ready() {
                return Ok(());
            }
            if !self.leader()
                && let Some(why) = self.aborted()
            {
                return Err(WaitError::Aborted(why));
            }
            if Instant::now() >= end {
                return Err(WaitError::TimedOut {
                    what: what.to_string(),
                    timeout: self.timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for `sub/pod-I.json` of every member; returns the members whose file never came.
    pub fn wait_members(&self, sub: &str) -> Vec<u32> {
        let missing = |g: &PodGroup| -> Vec<u32> {
            (0..g.count)
                .filter(|i| !g.member_file(sub, *i).is_file())
                .collect()
        };
        let _ = self.wait(sub, || missing(self).is_empty());
        missing(self)
    }

    /// This member reached step `key`; waits for its start time (unix seconds). Member 0
    /// writes it once every member is ready.
    pub fn start(&self, key: &str) -> Result<f64, PodGroupError> {
        let d = self.step_dir(key);
        write_atomic(&d.join(format!("ready-{}", self.index)), b"").map_err(|error| {
            PodGroupError::Io {
                path: d.clone(),
                error,
            }
        })?;
        let start = d.join("start");
        if self.leader() {
            let missing = |g: &PodGroup| -> Vec<u32> {
                (0..g.count)
                    .filter(|i| !d.join(format!("ready-{i}")).exists())
                    .collect()
            };
            self.wait("every pod ready", || missing(self).is_empty())
                .map_err(|wait| PodGroupError::NeverReached {
                    missing: missing(self),
                    key: key.to_string(),
                    wait,
                })?;
            let t = crate::serve::start_ahead();
            write_atomic(&start, format!("{t:.3}").as_bytes()).map_err(|error| {
                PodGroupError::Io {
                    path: start.clone(),
                    error,
                }
            })?;
            return Ok(t);
        }
        self.wait("the start time of step", || start.is_file())
            .map_err(|wait| PodGroupError::NoStartTime {
                key: key.to_string(),
                wait,
            })?;
        std::fs::read_to_string(&start)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| PodGroupError::NotATime {
                path: start.clone(),
            })
    }

    /// Member 0: step `key` will not run (`why`); the others pass it by once they reach it.
    pub fn skip(&self, key: &str, why: &str) {
        let d = self.step_dir(key);
        let _ = write_atomic(&d.join("skip"), why.as_bytes());
        let _ = write_atomic(
            &d.join("start"),
            format!("{:.3}", crate::serve::start_ahead()).as_bytes(),
        );
    }

    /// Why member 0 skipped step `key`, when it did (read after [`PodGroup::start`]).
    pub fn skipped(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.step_dir(key).join("skip")).ok()
    }

    /// Member 0: the target every member's shard of serve step `key` reaches (the server under
    /// test's address, which only member 0 knows: it started the server). Written before the
    /// step's start time.
    pub fn set_target(&self, key: &str, url: &str) -> Result<(), PodGroupError> {
        let path = self.step_dir(key).join("target");
        write_atomic(&path, url.as_bytes()).map_err(|error| PodGroupError::Io { path, error })
    }

    /// The target member 0 wrote for serve step `key`, when it wrote one.
    pub fn target(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.step_dir(key).join("target")).ok()
    }

    /// This member's part of step `key` ended.
    pub fn done(&self, key: &str, exit_code: Option<i32>, error: Option<String>) {
        let d = Done {
            index: self.index,
            exit_code,
            error,
        };
        let _ = write_atomic(
            &self.step_dir(key).join(format!("done-{}", self.index)),
            &serde_json::to_vec(&d).expect("JSON"),
        );
    }

    /// Member 0: waits for every other member's part of step `key`; an error names the members
    /// that never reported.
    pub fn wait_done(&self, key: &str) -> Result<Vec<Done>, PodGroupError> {
        let d = self.step_dir(key);
        let missing = |g: &PodGroup| -> Vec<u32> {
            (0..g.count)
                .filter(|i| !d.join(format!("done-{i}")).is_file())
                .collect()
        };
        self.wait("every pod's part", || missing(self).is_empty())
            .map_err(|wait| PodGroupError::ShardsMissing {
                missing: missing(self),
                key: key.to_string(),
                wait,
            })?;
        Ok((0..self.count)
            .filter_map(|i| {
                serde_json::from_slice(&std::fs::read(d.join(format!("done-{i}"))).ok()?).ok()
            })
            .collect())
    }

    /// This member's shard of a serve step: `exe ARGS --shard I/N --start-at T --output
    /// DIR/steps/<key>/shard-I`, and how it ended.
    pub fn run_serve_shard(&self, exe: &Path, job: &Path, key: &str, start_at: f64) -> Done {
        let out = self.step_dir(key).join(format!("shard-{}", self.index));
        let status = std::process::Command::new(exe)
            .args(crate::serve::shard_args(job))
            .arg("--shard")
            .arg(format!("{}/{}", self.index, self.count))
            .arg("--start-at")
            .arg(format!("{start_at:.3}"))
            .arg("--output")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .status();
        done_of(self.index, status)
    }

    /// Where this member writes the serve point its shard of step `key` reads (its own file:
    /// every member writes the same point, none waits for another's).
    pub fn shard_job(&self, key: &str) -> PathBuf {
        self.step_dir(key)
            .join(format!("point-{}.json", self.index))
    }

    /// This member's rank of a command step (a member other than 0; member 0's is measured).
    pub fn run_command_rank(&self, argv: &[String], key: &str) -> Done {
        let Some((program, rest)) = argv.split_first() else {
            return Done {
                index: self.index,
                exit_code: None,
                error: Some("empty command".into()),
            };
        };
        let status = std::process::Command::new(program)
            .args(rest)
            .env(
                "YARDSTICK_METRICS",
                self.step_dir(key)
                    .join(format!("metrics-{}.jsonl", self.index)),
            )
            .stdout(std::process::Stdio::null())
            .status();
        done_of(self.index, status)
    }
}

fn done_of(index: u32, status: std::io::Result<std::process::ExitStatus>) -> Done {
    match status {
        Ok(s) => Done {
            index,
            exit_code: s.code(),
            error: (!s.success()).then(|| s.to_string()),
        },
        Err(e) => Done {
            index,
            exit_code: None,
            error: Some(e.to_string()),
        },
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The key of a step's barrier directory.
pub fn step_key(point_slug: &str, replicate: u32) -> String {
    format!("{point_slug}-r{replicate}")
}

/// What a member other than 0 did (`yardstick run --shard I/N` with I > 0 prints it).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemberOutcome {
    /// The member.
    pub index: u32,
    /// Members in all.
    pub count: u32,
    /// The steps it took part in, with how its part ended.
    pub steps: Vec<MemberStep>,
}

impl MemberOutcome {
    /// What people read: the steps shared with member 0, and each failed one.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let failed: Vec<&MemberStep> = self
            .steps
            .iter()
            .filter(|s| s.done.exit_code != Some(0))
            .collect();
        let mut out = format!(
            "process {} of {}: {} step(s) shared with process 0, {} failed; process 0 stores the run (and records the failures)\n",
            self.index,
            self.count,
            self.steps.len(),
            failed.len()
        );
        for f in &failed {
            let _ = writeln!(
                out,
                "  {} ({}): {}",
                f.step,
                f.part,
                f.done.error.as_deref().unwrap_or("failed")
            );
        }
        out
    }
}

/// One step a member took part in.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemberStep {
    /// The step (`<point>-r<replicate>`).
    pub step: String,
    /// `serve-shard` or `command-rank`.
    pub part: String,
    /// How it ended.
    pub done: Done,
}

/// A member other than 0: captures its environment (and micro layer), then takes its part in
/// every step of `plan` that spans the group, in the plan's order. Stores no run.
pub fn run_member(
    plan: &crate::Plan,
    group: &PodGroup,
    exe: &Path,
    seed: u64,
    trials: &yardstick_spec::Trials,
    tool_version: &str,
    secret_env: Vec<String>,
) -> Result<MemberOutcome, RunError> {
    capture_member(group, exe, plan, trials, tool_version, secret_env);
    let mut steps = Vec::new();
    for step in &plan.steps {
        let point = &plan.points[step.point];
        // Profiles are taken by one process (pod 0 skips them in a group too).
        if !point.work.spans_group() || step.profile {
            continue;
        }
        let key = step_key(&point.slug, step.replicate);
        let start_at = group
            .start(&key)
            .map_err(|e| RunError::Workload(e.to_string()))?;
        if let Some(why) = group.skipped(&key) {
            let done = Done {
                index: group.index,
                exit_code: None,
                error: Some(format!("skipped: {why}")),
            };
            steps.push(MemberStep {
                step: key,
                part: "skipped".into(),
                done,
            });
            continue;
        }
        let seed = seed ^ (u64::from(step.replicate) << 32);
        let (part, done) = match &point.work {
            crate::PointWork::Serve { url, .. } => {
                // Member 0's target when it wrote one (the server under test it started).
                let url = group
                    .target(&key)
                    .unwrap_or_else(|| url.clone().unwrap_or_default());
                let job = group.shard_job(&key);
                crate::serve::write_shard_job(&point.work, &url, seed, &job)?;
                (
                    "serve-shard",
                    group.run_serve_shard(exe, &job, &key, start_at),
                )
            }
            crate::PointWork::Command { argv, .. } => {
                ("command-rank", group.run_command_rank(argv, &key))
            }
            _ => unreachable!("only steps that span the group"),
        };
        group.done(&key, done.exit_code, done.error.clone());
        steps.push(MemberStep {
            step: key,
            part: part.into(),
            done,
        });
    }
    Ok(MemberOutcome {
        index: group.index,
        count: group.count,
        steps,
    })
}

/// The `bench micro` arguments of the plan's micro kinds that run on every node (memory, GEMM,
/// storage, with the plan's sizes); `None` when the plan has none.
pub fn micro_args(plan: &crate::Plan, trials: &yardstick_spec::Trials) -> Option<Vec<String>> {
    let mut args: Vec<String> = vec!["--json".into(), "bench".into(), "micro".into()];
    let mut kinds = 0;
    for p in &plan.points {
        let crate::PointWork::Micro {
            micro,
            sizes,
            dtype,
        } = &p.work
        else {
            continue;
        };
        let flag = match micro.as_str() {
            "memory" => "--memory-size",
            "gemm" => "--gemm-size",
            "storage" => "--storage-size",
            "gpu-memory" => "--gpu-memory-size",
            "gpu-pcie" => "--pcie-size",
            "gpu-gemm" => "--gpu-gemm-size",
            _ => continue,
        };
        args.push(micro.clone());
        kinds += 1;
        for s in sizes.iter().flatten() {
            args.extend([flag.to_string(), s.to_string()]);
        }
        if let Some(d) = dtype {
            let flag = if micro == "gpu-gemm" {
                "--gpu-gemm-dtype"
            } else {
                "--gemm-dtype"
            };
            let name = serde_json::to_value(d)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            args.extend([flag.to_string(), name]);
        }
    }
    if kinds == 0 {
        return None;
    }
    args.extend([
        "--replicates".into(),
        trials.replicates.unwrap_or(3).max(3).to_string(),
    ]);
    Some(args)
}

/// This member's environment (`env/pod-I.json`) and, when the plan has a micro layer, its micro
/// figures (`micro/pod-I.json`, `bench micro --json`) in the shared directory.
pub fn capture_member(
    group: &PodGroup,
    exe: &Path,
    plan: &crate::Plan,
    trials: &yardstick_spec::Trials,
    tool_version: &str,
    secret_env: Vec<String>,
) {
    let env = yardstick_env::capture(&yardstick_env::CaptureOptions {
        tool_version: Some(tool_version.to_string()),
        secret_env,
        ..Default::default()
    });
    let mut v = serde_json::to_value(&env).expect("JSON");
    v["pod"] = serde_json::json!({
        "index": group.index,
        "node": std::env::var("YARDSTICK_NODE_NAME").ok(),
        "job": std::env::var("YARDSTICK_JOB_NAME").ok(),
    });
    let _ = write_atomic(
        &group.member_file("env", group.index),
        &serde_json::to_vec_pretty(&v).expect("JSON"),
    );
    if let Some(args) = micro_args(plan, trials) {
        let out = std::process::Command::new(exe).args(&args).output();
        // Written whatever happened, so member 0 does not wait out its timeout for a file that
        // will never come: a failure is a document that gives no figures, and says why.
        let bytes = match out {
            Ok(o) if o.status.success() => o.stdout,
            Ok(o) => serde_json::to_vec(&serde_json::json!({
                "error": format!(
                    "bench micro: {}: {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )
            }))
            .expect("JSON"),
            Err(e) => {
                serde_json::to_vec(&serde_json::json!({"error": format!("bench micro: {e}")}))
                    .expect("JSON")
            }
        };
        let _ = write_atomic(&group.member_file("micro", group.index), &bytes);
    }
}

/// Member 0 of a pod group, the one that stores the run: every member's environment and micro
/// figures under `pods/`, a serve point split across the members and merged, a command point
/// run by every member as one rank from a common barrier, and the record of the group and of
/// the steps that spanned it (`pods/group.json`). A group of one member spans nothing.
pub(crate) struct PodPlacement {
    g: PodGroup,
    /// The steps that spanned the group, in order.
    steps: Vec<serde_json::Value>,
    /// Why the group cannot go on (a member that never came): the run stops as incomplete.
    abort: Option<String>,
}

impl PodPlacement {
    /// The placement of member 0 of `g`.
    pub(crate) fn new(g: PodGroup) -> PodPlacement {
        PodPlacement {
            g,
            steps: Vec::new(),
            abort: None,
        }
    }

    /// Whether steps span the group (it has more than one member).
    fn spans(&self) -> bool {
        self.g.count > 1
    }

    /// A wait on the other members that failed: the run stops here.
    fn gave_up(&mut self, e: PodGroupError) -> RunError {
        let e = e.to_string();
        self.abort = Some(e.clone());
        RunError::Workload(e)
    }

    /// Member 0's part of a serve step that spans the group: the barrier, its own shard, every
    /// member's, and their exact merge. A member that never reached the step or whose shard
    /// never arrived stops the run; a shard that failed fails the replicate.
    fn serve(&mut self, s: &ServeShards<'_>, key: &str) -> Result<ReplicateOutcome, RunError> {
        let g = self.g.clone();
        let job = g.shard_job(key);
        crate::serve::write_shard_job(s.work, s.url, s.seed, &job)?;
        g.set_target(key, s.url).map_err(|e| self.gave_up(e))?;
        let start_at = g.start(key).map_err(|e| self.gave_up(e))?;
        let own = g.run_serve_shard(s.exe, &job, key, start_at);
        g.done(key, own.exit_code, own.error.clone());
        let done = g.wait_done(key).map_err(|e| self.gave_up(e))?;
        if let Some(bad) = done.iter().find(|d| d.exit_code != Some(0)) {
            return Err(RunError::Workload(format!(
                "the serve shard of pod {} failed: {}",
                bad.index,
                bad.error.as_deref().unwrap_or("no exit code")
            )));
        }
        let dirs: Vec<PathBuf> = (0..g.count)
            .map(|i| g.step_dir(key).join(format!("shard-{i}")))
            .collect();
        let merged = crate::serve::merge_shards(s.work, &dirs);
        // Every member is past this step (each wrote its `done`): the shards are in the run now.
        if merged.is_ok() {
            let _ = std::fs::remove_dir_all(g.step_dir(key));
        }
        merged
    }
}

impl Placement for PodPlacement {
    /// Only member 0 stores a run; with more than one member, the bundled simulator (which would
    /// start inside one pod) is refused as a serve target.
    fn check(&self, plan: &crate::Plan) -> Result<(), RunError> {
        if !self.g.leader() {
            return Err(RunError::Internal(
                "a pod group's member other than 0 stores no run (execute_member)".into(),
            ));
        }
        crate::check_group_targets(plan, &self.g)
    }

    fn single_process(&self) -> bool {
        !self.spans()
    }

    /// Its own environment and micro figures, then every member's, stored as
    /// `pods/env/pod-I.json` and `pods/micro/pod-I.json` with the nodes check of the micro
    /// figures (`pods/nodes.json`, returned; `Null` without a micro layer). A member whose
    /// files never come is a warning here; the first step that spans the group then finds it
    /// missing and stores the run as incomplete.
    fn start(
        &mut self,
        s: Start<'_>,
    ) -> Result<Option<yardstick_analysis::nodes::NodesReport>, RunError> {
        let g = &self.g;
        if !s.writer.has(&format!("pods/env/pod-{}.json", g.index)) {
            capture_member(g, s.exe, s.plan, s.trials, s.tool_version, s.secret_env);
        }
        let missing = g.wait_members("env");
        if !missing.is_empty() {
            (s.on_event)(Event::Warning(format!(
                "no environment from pod(s) {:?} of {}",
                missing, g.count
            )));
        }
        for i in 0..g.count {
            let rel = format!("pods/env/pod-{i}.json");
            if let Ok(bytes) = std::fs::read(g.member_file("env", i))
                && !s.writer.has(&rel)
            {
                s.writer.add(&rel, &bytes, "env")?;
            }
        }
        if micro_args(s.plan, s.trials).is_none() {
            return Ok(None);
        }
        if s.writer.has("pods/nodes.json") {
            return Ok(stored_report(s.writer, "pods/nodes.json"));
        }
        let missing = g.wait_members("micro");
        if !missing.is_empty() {
            (s.on_event)(Event::Warning(format!(
                "no micro figures from pod(s) {:?} of {}",
                missing, g.count
            )));
        }
        let files = (0..g.count)
            .map(|i| (format!("pod-{i}"), g.member_file("micro", i)))
            .filter(|(_, f)| f.is_file())
            .collect();
        nodes_check(s.writer, files, "pods/micro", "pods/nodes.json", s.on_event)
    }

    /// Split across the pods of the group, merged exactly by member 0.
    fn serve_shards(&mut self, s: &ServeShards<'_>) -> Option<Result<ReplicateOutcome, RunError>> {
        if !self.spans() {
            return None;
        }
        let key = step_key(s.step.slug, s.step.replicate);
        let out = self.serve(s, &key);
        self.steps.push(serde_json::json!({
            "step": key,
            "part": "serve shards",
            "pods": self.g.count,
            "state": if out.is_ok() { "COMPLETED" } else { "FAILED" },
            "error": out.as_ref().err().map(ToString::to_string),
        }));
        Some(out)
    }

    /// Every member runs the command as one rank, from a common barrier; member 0's is the
    /// measured one, and a rank that fails fails the replicate.
    fn as_rank(
        &mut self,
        step: &StepName<'_>,
        run: &mut dyn FnMut() -> Result<ReplicateOutcome, RunError>,
    ) -> Result<ReplicateOutcome, RunError> {
        if !self.spans() {
            return run();
        }
        let key = &step_key(step.slug, step.replicate);
        let g = self.g.clone();
        g.start(key).map_err(|e| self.gave_up(e))?;
        let out = run();
        let own = out
            .as_ref()
            .ok()
            .and_then(|o| o.summary[yardstick_spec::metrics::id::EXIT_CODE].as_i64());
        g.done(key, own.map(|c| c as i32), None);
        let ranks = g.wait_done(key).map_err(|e| self.gave_up(e));
        if ranks.is_ok() {
            // Every rank is past this step.
            let _ = std::fs::remove_dir_all(g.step_dir(key));
        }
        let failed = ranks.as_ref().ok().and_then(|d| {
            d.iter()
                .find(|d| d.index != 0 && d.exit_code != Some(0))
                .cloned()
        });
        self.steps.push(serde_json::json!({
            "step": key,
            "part": "command ranks",
            "pods": g.count,
            "state": if ranks.is_ok() && failed.is_none() { "COMPLETED" } else { "FAILED" },
        }));
        match (ranks, failed, out) {
            (Err(e), _, _) => Err(e),
            (Ok(_), Some(bad), Ok(mut o)) => {
                o.fail(format!(
                    "rank {} failed: {}",
                    bad.index,
                    bad.error.as_deref().unwrap_or("no exit code")
                ));
                Ok(o)
            }
            (Ok(_), _, out) => out,
        }
    }

    fn skipped(&mut self, point: &crate::Point, step: &crate::plan::Step, why: &str) {
        if self.spans() && point.work.spans_group() && !step.profile {
            self.g.skip(&step_key(&point.slug, step.replicate), why);
        }
    }

    fn stop_reason(&self) -> Option<String> {
        self.abort.clone()
    }

    /// The record of a pod group's run (`pods/group.json`): the group, its Job, the steps that
    /// spanned it.
    fn record(&mut self, writer: &mut RunWriter) -> Result<(), RunError> {
        let record = serde_json::json!({
            "group": self.g,
            "job": std::env::var("YARDSTICK_JOB_NAME").ok(),
            "steps": self.steps,
        });
        if !writer.has("pods/group.json") {
            writer.add(
                "pods/group.json",
                &serde_json::to_vec_pretty(&record).expect("JSON"),
                "pods",
            )?;
        }
        Ok(())
    }

    /// Only once the run is stored: the other members stop when they read it, and the Job
    /// controller may then end this pod too.
    fn stopped(&self, why: &str) {
        self.g.abort(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(dir: &Path, index: u32, count: u32, ms: u64) -> PodGroup {
        PodGroup {
            index,
            count,
            dir: dir.to_path_buf(),
            timeout: Duration::from_millis(ms),
        }
    }

    #[test]
    fn shards_parse_as_index_over_count() {
        assert_eq!(parse_shard("1/4"), Ok((1, 4)));
        assert!(parse_shard("4/4").is_err());
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("x/2").is_err());
        assert!(parse_shard("3").is_err());
    }

    #[test]
    fn every_member_starts_at_the_time_member_0_wrote_once_all_were_ready() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let members: Vec<_> = (1..3)
            .map(|i| {
                let g = group(&d, i, 3, 10_000);
                std::thread::spawn(move || g.start("p-r0"))
            })
            .collect();
        let t0 = group(&d, 0, 3, 10_000).start("p-r0").unwrap();
        for m in members {
            assert_eq!(m.join().unwrap().unwrap(), (t0 * 1000.0).round() / 1000.0);
        }
    }

    #[test]
    fn a_member_that_never_comes_is_named_and_nothing_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let leader = group(dir.path(), 0, 2, 200);
        let e = leader.start("p-r0").unwrap_err().to_string();
        assert!(e.contains("pod(s) 1 never reached step p-r0"), "{e}");
        leader.done("p-r1", Some(0), None);
        let e = leader.wait_done("p-r1").unwrap_err().to_string();
        assert!(e.contains("pod(s) 1 of step p-r1 never arrived"), "{e}");
        // A member waiting for a start stops when member 0 gives up.
        leader.abort("gave up");
        let member = group(dir.path(), 1, 2, 60_000);
        let t = Instant::now();
        let e = member.start("p-r2").unwrap_err().to_string();
        assert!(e.contains("member 0 gave up"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
