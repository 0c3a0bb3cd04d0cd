//! Running a spec on Slurm (`execution.engine: slurm`).
//!
//! `yardstick run SPEC` submits a batch job whose script runs `yardstick run SPEC` again inside
//! the allocation (the *inner* run, with `YARDSTICK_SLURM_INNER=1`), then follows the job:
//! Ctrl-C cancels it (`scancel`), and its final state is reported with the run. The inner run
//! is the orchestrator on the allocation's first node: it captures the environment of every node
//! with one `srun` step, runs every command point as an `srun` step over all the allocation's
//! tasks (ranks from `SLURM_PROCID`/`SLURM_NTASKS`), and stores the batch script, the per-node
//! environments and a record of the job and of every step it ran (`slurm/`) with the run, hashed
//! in its manifest.
//!
//! The store must be on a file system every node sees (as `$HOME` or a project directory is on
//! a cluster): the inner run writes the run directory and the job directory where the outer
//! one reads them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use yardstick_spec::{Execution, Topology};

use crate::placement::{
    Placement, ServeShards, Start, StepName, nodes_check, store_slug, stored_report,
};
use crate::replicate::ReplicateOutcome;
use crate::serve;
use crate::{Event, RunError};
use yardstick_store::RunWriter;

/// Set in the batch script for the inner run.
pub const ENV_INNER: &str = "YARDSTICK_SLURM_INNER";
/// The job directory (script, inner output, per-node environments), set for the inner run.
pub const ENV_JOB_DIR: &str = "YARDSTICK_SLURM_JOB_DIR";

/// The allocation an inner run executes in, from Slurm's environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Allocation {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_JOB_NODELIST` (compressed, as Slurm writes it).
    pub nodelist: String,
    /// `SLURM_JOB_NUM_NODES`.
    pub nodes: u32,
    /// `SLURM_NTASKS`.
    pub ntasks: u32,
    /// The job directory the outer run made.
    pub job_dir: PathBuf,
}

impl Allocation {
    /// The allocation of an inner run: `None` unless [`ENV_INNER`] and `SLURM_JOB_ID` are set.
    pub fn from_env() -> Option<Allocation> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        var(ENV_INNER)?;
        let n = |k: &str| var(k).and_then(|v| v.parse().ok()).unwrap_or(1);
        Some(Allocation {
            job_id: var("SLURM_JOB_ID")?,
            nodelist: var("SLURM_JOB_NODELIST").unwrap_or_default(),
            nodes: n("SLURM_JOB_NUM_NODES"),
            ntasks: n("SLURM_NTASKS"),
            job_dir: PathBuf::from(var(ENV_JOB_DIR)?),
        })
    }

    /// The `srun` prefix of a step over every task of the allocation.
    pub fn srun_all(&self, name: &str) -> Vec<String> {
        vec![
            "srun".into(),
            format!("--ntasks={}", self.ntasks),
            "--kill-on-bad-exit=1".into(),
            format!("--job-name={name}"),
        ]
    }
}

/// Runs `argv` once on every node of `a` as one `srun` step named `name`, each node's standard
/// output written to `<dir>/<node>.json`; returns the step's record (numbered `step`) and the
/// files written, by node, in node order.
pub fn per_node(
    a: &Allocation,
    name: &str,
    what: &str,
    step: usize,
    dir: &Path,
    argv: &[std::ffi::OsString],
) -> (StepRecord, Vec<(String, PathBuf)>, Option<String>) {
    let _ = std::fs::create_dir_all(dir);
    let status = Command::new("srun")
        .arg(format!("--nodes={}", a.nodes))
        .arg(format!("--ntasks={}", a.nodes))
        .arg("--ntasks-per-node=1")
        .arg(format!("--job-name={name}"))
        .args([
            "sh",
            "-c",
            "d=\"$1\"; shift; exec \"$@\" > \"$d/$SLURMD_NODENAME.json\"",
            name,
        ])
        .arg(dir)
        .args(argv)
        .stderr(std::process::Stdio::null())
        .status();
    let exit = status
        .as_ref()
        .ok()
        .and_then(std::process::ExitStatus::code);
    let failure = (exit != Some(0)).then(|| match &status {
        Ok(s) => s.to_string(),
        Err(e) => e.to_string(),
    });
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let record = StepRecord {
        step: format!("{}.{step}", a.job_id),
        what: what.into(),
        state: StepRecord::state_of(exit, false, false).into(),
        exit_code: exit,
        source: "srun".into(),
    };
    (record, files, failure)
}

/// One `srun` step the inner run launched, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRecord {
    /// `JOBID.N`: Slurm numbers a job's steps from 0 in the order they start, and the inner run
    /// is the only one that starts steps.
    pub step: String,
    /// What it ran (a point and replicate, or the environment capture).
    pub what: String,
    /// `COMPLETED`, `FAILED` (non-zero exit), `TIMEOUT` or `CANCELLED`, from how `srun` ended.
    pub state: String,
    /// `srun`'s exit code.
    pub exit_code: Option<i32>,
    /// Where `state` comes from: `sacct` (Slurm's accounting, when it is configured) or `srun`
    /// (how the step's `srun` ended).
    #[serde(default = "from_srun")]
    pub source: String,
}

fn from_srun() -> String {
    "srun".into()
}

impl StepRecord {
    /// The state of a step from how its `srun` ended.
    pub fn state_of(exit_code: Option<i32>, timed_out: bool, cancelled: bool) -> &'static str {
        if cancelled {
            "CANCELLED"
        } else if timed_out {
            "TIMEOUT"
        } else if exit_code == Some(0) {
            "COMPLETED"
        } else {
            "FAILED"
        }
    }
}

/// How Slurm's accounting (`sacct`) recorded each step of a job: state and exit code by step id
/// (`JOB.N`). `sacct -P` lines are `JobID|State|ExitCode`, the exit code `code:signal`; a state
/// like `CANCELLED by 0` keeps its first word.
pub fn parse_sacct(text: &str) -> BTreeMap<String, (String, Option<i32>)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split('|');
            let (id, state, exit) = (f.next()?, f.next()?, f.next()?);
            let state = state.split_whitespace().next()?.trim_end_matches('+');
            let code = exit.split(':').next().and_then(|c| c.parse().ok());
            (!id.is_empty() && !state.is_empty())
                .then(|| (id.to_string(), (state.to_string(), code)))
        })
        .collect()
}

/// Why Slurm's accounting could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SacctError {
    /// `sacct` could not be run.
    #[error("sacct: {0}")]
    Spawn(std::io::Error),
    /// `sacct` failed and said why (e.g. no accounting storage configured).
    #[error("{0}")]
    Said(String),
    /// `sacct` failed silently.
    #[error("sacct exited with {0}")]
    Exit(std::process::ExitStatus),
}

/// The steps of `job` as Slurm's accounting recorded them, or why they cannot be read (no
/// accounting storage configured: `sacct` says so and exits non-zero).
pub fn sacct_steps(job: &str) -> Result<BTreeMap<String, (String, Option<i32>)>, SacctError> {
    let o = Command::new("sacct")
        .args(["-j", job, "-P", "-n", "--format=JobID,State,ExitCode"])
        .output()
        .map_err(SacctError::Spawn)?;
    if !o.status.success() {
        let why = String::from_utf8_lossy(&o.stderr).trim().to_string();
        return Err(if why.is_empty() {
            SacctError::Exit(o.status)
        } else {
            SacctError::Said(why)
        });
    }
    Ok(parse_sacct(&String::from_utf8_lossy(&o.stdout)))
}

/// The batch script of a run of `spec_path` (absolute) into `store` (absolute), for `x`.
/// `inner` is the inner run's extra arguments (`--resume ID`, `--seed N`, ...).
pub fn batch_script(
    x: &Execution,
    name: &str,
    exe: &Path,
    spec_path: &Path,
    store: &Path,
    job_dir: &Path,
    inner: &[String],
) -> String {
    let q = |s: &str| shell_quote(s);
    let mut opts = vec![
        format!("--job-name={}", q(&format!("yardstick-{name}"))),
        format!("--nodes={}", x.nodes.unwrap_or(1)),
        format!("--ntasks-per-node={}", x.tasks_per_node.unwrap_or(1)),
        format!(
            "--output={}",
            q(&job_dir.join("slurm-%j.out").display().to_string())
        ),
    ];
    if let Some(c) = x.cpus_per_task {
        opts.push(format!("--cpus-per-task={c}"));
    }
    if let Some(g) = x.gpus_per_task.filter(|g| *g > 0) {
        opts.push(format!("--gpus-per-task={g}"));
    }
    if let Some(m) = x
        .memory
        .as_deref()
        .and_then(|m| yardstick_spec::units::parse_bytes(m).ok())
    {
        // Slurm's --mem takes megabytes by default.
        opts.push(format!("--mem={}M", m.div_ceil(1 << 20).max(1)));
    }
    if let Some(t) = x.time_limit {
        opts.push(format!("--time={}", t.0.as_secs().div_ceil(60).max(1)));
    }
    for (flag, v) in [
        ("partition", &x.partition),
        ("account", &x.account),
        ("qos", &x.qos),
    ] {
        if let Some(v) = v {
            opts.push(format!("--{flag}={}", q(v)));
        }
    }
    if let Some(p) = &x.placement {
        if p.exclusive == Some(true) {
            opts.push("--exclusive".into());
        }
        if p.topology == Some(Topology::Fixed) {
            opts.push("--switches=1".into());
        }
    }
    let mut s = String::from(
        "#!/bin/sh\n# Written by `yardstick run`: the run executes inside this allocation.\n",
    );
    for o in &opts {
        s.push_str(&format!("#SBATCH {o}\n"));
    }
    s.push_str(&format!(
        "export {ENV_INNER}=1\nexport {ENV_JOB_DIR}={}\n",
        q(&job_dir.display().to_string())
    ));
    let mut argv = vec![
        exe.display().to_string(),
        "run".into(),
        spec_path.display().to_string(),
        "--store".into(),
        store.display().to_string(),
        "--json".into(),
        "-q".into(),
    ];
    argv.extend(inner.iter().cloned());
    let cmd: Vec<String> = argv.iter().map(|a| q(a)).collect();
    // `exec`: yardstick is the batch step's process, so `scancel`'s SIGTERM reaches it (it
    // stops after the current replicate and stores the run as incomplete) and its exit status is
    // the job's `ExitCode`.
    s.push_str(&format!(
        "exec {} > {}\n",
        cmd.join(" "),
        q(&job_dir.join("run.json").display().to_string()),
    ));
    s
}

/// Single-quotes `s` for `sh` when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,%@+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn run_tool(program: &str, args: &[&str]) -> Result<String, RunError> {
    let o = Command::new(program).args(args).output().map_err(|e| {
        RunError::Invalid(format!(
            "{program}: {e} (engine slurm needs Slurm's commands on the PATH: sbatch, scontrol, scancel, srun)"
        ))
    })?;
    if !o.status.success() {
        return Err(RunError::Workload(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Submits `script`; returns the job id.
pub fn sbatch(script: &Path) -> Result<String, RunError> {
    let out = run_tool("sbatch", &["--parsable", &script.display().to_string()])?;
    // `--parsable` prints `jobid[;cluster]`.
    let id = out.trim().split(';').next().unwrap_or_default().to_string();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return Err(RunError::Workload(format!(
            "sbatch answered {out:?}, not a job id"
        )));
    }
    Ok(id)
}

/// Cancels a job (its steps get SIGTERM, then SIGKILL after the cluster's KillWait).
pub fn scancel(job: &str) -> Result<(), RunError> {
    run_tool("scancel", &[job]).map(|_| ())
}

/// A job as `scontrol show job -o` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobInfo {
    /// Job id.
    pub job_id: String,
    /// `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, ...
    pub state: String,
    /// Why it is pending, or how it ended (`None` when Slurm says so).
    pub reason: Option<String>,
    /// Nodes it ran on.
    pub nodes: Option<String>,
    /// `ExitCode`, as `code:signal`.
    pub exit_code: Option<String>,
}

impl JobInfo {
    /// The batch script's exit code (the part of `ExitCode` before the colon).
    pub fn exit(&self) -> Option<i32> {
        self.exit_code.as_deref()?.split(':').next()?.parse().ok()
    }

    /// Whether the job has ended.
    pub fn finished(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "CONFIGURING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
        )
    }
}

/// The `Key=Value` fields of one `scontrol -o` line.
pub fn parse_scontrol(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The job `job` now; `None` once Slurm no longer knows it (ended longer ago than MinJobAge).
pub fn job_info(job: &str) -> Result<Option<JobInfo>, RunError> {
    let o = Command::new("scontrol")
        .args(["show", "job", "-o", job])
        .output()
        .map_err(|e| RunError::Invalid(format!("scontrol: {e}")))?;
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() || text.trim().is_empty() {
        return Ok(None);
    }
    let f = parse_scontrol(text.lines().next().unwrap_or_default());
    let get = |k: &str| f.get(k).filter(|v| v.as_str() != "(null)").cloned();
    Ok(Some(JobInfo {
        job_id: get("JobId").unwrap_or_else(|| job.to_string()),
        state: get("JobState").unwrap_or_else(|| "UNKNOWN".into()),
        reason: get("Reason").filter(|r| r != "None"),
        nodes: get("NodeList"),
        exit_code: get("ExitCode"),
    }))
}

/// What a followed job left: its last state (`None`: Slurm had already forgotten it) and the
/// inner run's `--json` output (`run.json` in the job directory), if it wrote one.
#[derive(Debug)]
pub struct Followed {
    /// The job at its end.
    pub info: Option<JobInfo>,
    /// The inner `yardstick run --json` output.
    pub run: Option<serde_json::Value>,
}

/// Follows job `id` to its end, polling every half second: `on_state` hears each new state
/// (with its reason); a cancelled `cancel` cancels the job once (`scancel`, whose failure goes
/// to `on_warning`). Then reads the inner run's output from `dir/run.json`, waiting up to
/// 5 s for a shared file system to show it.
pub fn follow(
    id: &str,
    dir: &Path,
    cancel: &tokio_util::sync::CancellationToken,
    on_state: &mut dyn FnMut(&str),
    on_warning: &mut dyn FnMut(&str),
) -> Result<Followed, RunError> {
    let mut cancelled = false;
    let mut last_state = String::new();
    let info = loop {
        if cancel.is_cancelled() && !cancelled {
            cancelled = true;
            if let Err(e) = scancel(id) {
                on_warning(&format!("scancel {id}: {e}"));
            }
        }
        match job_info(id).map_err(|e| RunError::Workload(format!("following job {id}: {e}")))? {
            Some(i) if i.finished() => break Some(i),
            Some(i) => {
                if i.state != last_state {
                    on_state(&format!(
                        "job {id}: {}{}",
                        i.state,
                        i.reason
                            .as_deref()
                            .map_or_else(String::new, |r| format!(" ({r})"))
                    ));
                    last_state = i.state.clone();
                }
            }
            // Forgotten by Slurm (ended longer ago than MinJobAge): read what it left.
            None => break None,
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let read = || -> Option<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).ok()?).ok()
    };
    let mut run = read();
    for _ in 0..20 {
        if run.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        run = read();
    }
    Ok(Followed { info, run })
}

/// A run inside a Slurm allocation (the inner run of `engine: slurm`): every node's environment
/// and micro figures are captured with one `srun` step each, command and trainer points run as
/// an `srun` step over every task of the allocation, a serve point is split across the tasks
/// and merged, and the batch script and a record of the job and of every step it started are
/// stored under `slurm/<job>/`.
pub(crate) struct SlurmPlacement {
    a: Allocation,
    /// The steps started, in order (Slurm numbers them `JOB.N` in that order).
    steps: Vec<StepRecord>,
    /// Whether the current step was launched with [`Allocation::srun_all`].
    launched: bool,
}

impl SlurmPlacement {
    /// The placement of a run in allocation `a`.
    pub(crate) fn new(a: Allocation) -> SlurmPlacement {
        SlurmPlacement {
            a,
            steps: Vec::new(),
            launched: false,
        }
    }

    /// Records the next step, numbered in the order the steps started.
    fn push(&mut self, what: String, state: &str, exit_code: Option<i32>) {
        self.steps.push(StepRecord {
            step: format!("{}.{}", self.a.job_id, self.steps.len()),
            what,
            state: state.into(),
            exit_code,
            source: "srun".into(),
        });
    }

    /// The batch script, and one `srun` step that captures the environment of every node of
    /// the allocation (`slurm/<job>/env/<node>.json`).
    fn store_script_and_envs(&mut self, s: &mut Start<'_>) -> Result<(), RunError> {
        let a = &self.a;
        let script = format!("slurm/{}/job.sh", a.job_id);
        if !s.writer.has(&script)
            && let Ok(bytes) = std::fs::read(a.job_dir.join("job.sh"))
        {
            s.writer.add(&script, &bytes, "slurm")?;
        }
        let (record, files, failure) = per_node(
            a,
            "env",
            "environment capture on every node",
            self.steps.len(),
            &a.job_dir.join("env"),
            &[s.exe.into(), "env".into(), "--json".into()],
        );
        self.steps.push(record);
        if let Some(why) = failure {
            (s.on_event)(Event::Warning(format!(
                "the per-node environment capture (srun) failed: {why}"
            )));
        }
        for (node, f) in files {
            let rel = format!("slurm/{}/env/{}.json", self.a.job_id, store_slug(&node));
            if let Ok(bytes) = std::fs::read(&f)
                && !bytes.is_empty()
                && !s.writer.has(&rel)
            {
                s.writer.add(&rel, &bytes, "env")?;
            }
        }
        Ok(())
    }

    /// The micro layer on every node of the allocation: one `srun` step runs `yardstick bench
    /// micro` (the plan's memory, GEMM and storage kinds, with its sizes) once per node; each
    /// node's output (`slurm/<job>/micro/<node>.json`) and their consistency check
    /// (`slurm/<job>/nodes.json`, `yardstick_analysis::nodes`) are stored. `Null` when the plan
    /// has no such micro point.
    fn micro_per_node(
        &mut self,
        s: &mut Start<'_>,
    ) -> Result<Option<yardstick_analysis::nodes::NodesReport>, RunError> {
        let a = &self.a;
        let rel_report = format!("slurm/{}/nodes.json", a.job_id);
        let Some(args) = crate::pods::micro_args(s.plan, s.trials) else {
            return Ok(None);
        };
        if s.writer.has(&rel_report) {
            return Ok(stored_report(s.writer, &rel_report));
        }
        let mut argv: Vec<std::ffi::OsString> = vec![s.exe.into()];
        argv.extend(args.iter().map(Into::into));
        let (record, files, failure) = per_node(
            a,
            "micro",
            "micro layer on every node",
            self.steps.len(),
            &a.job_dir.join("micro"),
            &argv,
        );
        self.steps.push(record);
        if let Some(why) = failure {
            (s.on_event)(Event::Warning(format!(
                "the micro layer on every node (srun) failed: {why}"
            )));
        }
        nodes_check(
            s.writer,
            files,
            &format!("slurm/{}/micro", self.a.job_id),
            &rel_report,
            s.on_event,
        )
    }
}

impl Placement for SlurmPlacement {
    fn single_process(&self) -> bool {
        false
    }

    fn start(
        &mut self,
        mut s: Start<'_>,
    ) -> Result<Option<yardstick_analysis::nodes::NodesReport>, RunError> {
        self.store_script_and_envs(&mut s)?;
        self.micro_per_node(&mut s)
    }

    /// One step over every task of the allocation (ranks from `SLURM_PROCID` and
    /// `SLURM_NTASKS`).
    fn launcher(&mut self, step: &StepName<'_>) -> Vec<String> {
        self.launched = true;
        self.a.srun_all(step.slug)
    }

    /// Split across every task of the allocation, merged exactly.
    fn serve_shards(&mut self, s: &ServeShards<'_>) -> Option<Result<ReplicateOutcome, RunError>> {
        if self.a.ntasks <= 1 {
            return None;
        }
        let dir = self
            .a
            .job_dir
            .join("serve")
            .join(format!("{}-r{}", s.step.slug, s.step.replicate));
        let out = run_replicate_sharded(s.work, s.url, s.seed, &self.a, s.exe, &dir);
        // The step either merged (srun exited 0) or failed.
        let (exit, state) = match &out {
            Ok(_) => (Some(0), "COMPLETED"),
            Err(_) => (None, "FAILED"),
        };
        let what = format!("{} ({} shards)", s.step.what(), self.a.ntasks);
        self.push(what, state, exit);
        Some(out)
    }

    fn step_ended(
        &mut self,
        step: &StepName<'_>,
        summary: Option<&serde_json::Value>,
        cancelled: bool,
    ) {
        if !std::mem::take(&mut self.launched) {
            return;
        }
        let Some(summary) = summary else {
            self.push(step.what(), "CANCELLED", None);
            return;
        };
        let exit = summary[yardstick_spec::metrics::id::EXIT_CODE]
            .as_i64()
            .map(|c| c as i32);
        let timed_out = summary["error"]
            .as_str()
            .is_some_and(|e| e.contains("timed out") || e.contains("timeout"));
        self.push(
            step.what(),
            StepRecord::state_of(exit, timed_out, cancelled),
            exit,
        );
    }

    /// The record of the job and of every step the inner run started (`slurm/<job>/job.json`).
    fn record(&mut self, writer: &mut RunWriter) -> Result<(), RunError> {
        let a = &self.a;
        let info = job_info(&a.job_id).ok().flatten();
        // Slurm's accounting has the final state of every step when it is configured;
        // otherwise the states are how each `srun` ended.
        let mut steps = self.steps.clone();
        let accounting = match sacct_steps(&a.job_id) {
            Ok(acct) => {
                for s in &mut steps {
                    if let Some((state, exit)) = acct.get(&s.step) {
                        s.state = state.clone();
                        s.exit_code = exit.or(s.exit_code);
                        s.source = "sacct".into();
                    }
                }
                "sacct".to_string()
            }
            Err(why) => format!("unavailable: {why}"),
        };
        let record = serde_json::json!({
            "allocation": a,
            "job": info,
            "accounting": accounting,
            "steps": steps,
        });
        let rel = format!("slurm/{}/job.json", a.job_id);
        if !writer.has(&rel) {
            writer.add(
                &rel,
                &serde_json::to_vec_pretty(&record).expect("JSON"),
                "slurm",
            )?;
        }
        Ok(())
    }
}

/// One replicate of a serve point split across every task of a Slurm allocation: one `srun`
/// step runs `yardstick bench serve --shard $SLURM_PROCID/N --start-at T` in each task (the
/// same plan, seed and start time, each task its share of the arrivals or streams), and the
/// shards' records are merged exactly into one point (`yardstick_load::shard_files`), the same
/// summary and samples as one process would give. MLPerf scenarios are not sharded: they run in
/// this process.
pub fn run_replicate_sharded(
    work: &crate::plan::PointWork,
    url: &str,
    seed: u64,
    alloc: &Allocation,
    exe: &std::path::Path,
    dir: &std::path::Path,
) -> Result<ReplicateOutcome, RunError> {
    let n = alloc.ntasks.max(1);
    let start_at = serve::start_ahead();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| RunError::Internal(format!("{}: {e}", dir.display())))?;
    // Every task reads the point from the job directory, which the allocation shares.
    let job = dir.join("point.json");
    serve::write_shard_job(work, url, seed, &job)?;
    let args = serve::shard_args(&job);
    let status = std::process::Command::new("srun")
        .arg(format!("--ntasks={n}"))
        .arg("--kill-on-bad-exit=1")
        .arg("--job-name=serve")
        .args([
            "sh",
            "-c",
            "d=\"$1\"; n=\"$2\"; t=\"$3\"; shift 3; exec \"$@\" --shard \"$SLURM_PROCID/$n\" \
             --start-at \"$t\" --output \"$d/shard-$SLURM_PROCID\" > /dev/null",
            "serve",
        ])
        .arg(dir)
        .arg(n.to_string())
        .arg(format!("{start_at:.3}"))
        .arg(exe)
        .args(&args)
        .status();
    let exit = status
        .as_ref()
        .ok()
        .and_then(std::process::ExitStatus::code);
    if exit != Some(0) {
        return Err(RunError::Workload(format!(
            "the sharded serve step failed ({})",
            match status {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            }
        )));
    }
    let dirs: Vec<std::path::PathBuf> = (0..n).map(|i| dir.join(format!("shard-{i}"))).collect();
    let out = serve::merge_shards(work, &dirs)?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_spec::{DurationSpec, Placement};

    #[test]
    fn the_batch_script_carries_the_allocation_and_runs_yardstick_inside_it() {
        let x = Execution {
            nodes: Some(2),
            tasks_per_node: Some(4),
            cpus_per_task: Some(8),
            gpus_per_task: Some(1),
            memory: Some("64GiB".into()),
            time_limit: Some(DurationSpec(std::time::Duration::from_secs(5400))),
            partition: Some("gpu".into()),
            account: Some("perf team".into()),
            placement: Some(Placement {
                exclusive: Some(true),
                topology: Some(Topology::Fixed),
                topology_key: None,
            }),
            ..Default::default()
        };
        let s = batch_script(
            &x,
            "llama",
            Path::new("/opt/yardstick"),
            Path::new("/home/me/bench.yaml"),
            Path::new("/home/me/store"),
            Path::new("/home/me/store/slurm/1"),
            &["--resume".into(), "01ABC".into()],
        );
        for line in [
            "#SBATCH --job-name=yardstick-llama",
            "#SBATCH --nodes=2",
            "#SBATCH --ntasks-per-node=4",
            "#SBATCH --cpus-per-task=8",
            "#SBATCH --gpus-per-task=1",
            "#SBATCH --mem=65536M",
            "#SBATCH --time=90",
            "#SBATCH --partition=gpu",
            "#SBATCH --account='perf team'",
            "#SBATCH --exclusive",
            "#SBATCH --switches=1",
            "#SBATCH --output=/home/me/store/slurm/1/slurm-%j.out",
            "export YARDSTICK_SLURM_INNER=1",
            "exec /opt/yardstick run /home/me/bench.yaml --store /home/me/store --json -q --resume 01ABC > /home/me/store/slurm/1/run.json",
        ] {
            assert!(s.lines().any(|l| l == line), "missing {line:?} in\n{s}");
        }
        assert!(s.starts_with("#!/bin/sh\n"));
    }

    #[test]
    fn sacct_lines_read_as_slurm_writes_them() {
        let got = parse_sacct(
            "61|COMPLETED|0:0\n61.batch|COMPLETED|0:0\n61.0|COMPLETED|0:0\n\
             61.1|FAILED|1:0\n61.2|CANCELLED by 0|0:15\n61.3|TIMEOUT|0:0\n61.4|RUNNING+|0:0\n\n|x|y\n",
        );
        assert_eq!(got["61.0"], ("COMPLETED".to_string(), Some(0)));
        assert_eq!(got["61.1"], ("FAILED".to_string(), Some(1)));
        assert_eq!(got["61.2"], ("CANCELLED".to_string(), Some(0)));
        assert_eq!(got["61.3"].0, "TIMEOUT");
        assert_eq!(got["61.4"].0, "RUNNING");
        assert_eq!(got.len(), 7);
    }

    #[test]
    fn scontrol_lines_and_step_states_read_as_slurm_writes_them() {
        let f = parse_scontrol(
            "JobId=42 JobName=yardstick-x UserId=root(0) JobState=CANCELLED Reason=None \
             ExitCode=0:15 NodeList=vm BatchHost=vm",
        );
        assert_eq!(f["JobState"], "CANCELLED");
        assert_eq!(f["ExitCode"], "0:15");
        assert_eq!(f["NodeList"], "vm");
        let pending = JobInfo {
            job_id: "1".into(),
            state: "PENDING".into(),
            reason: None,
            nodes: None,
            exit_code: None,
        };
        assert!(!pending.finished());
        assert!(
            JobInfo {
                state: "NODE_FAIL".into(),
                ..pending
            }
            .finished()
        );
        assert_eq!(StepRecord::state_of(Some(0), false, false), "COMPLETED");
        assert_eq!(StepRecord::state_of(Some(3), false, false), "FAILED");
        assert_eq!(StepRecord::state_of(None, true, false), "TIMEOUT");
        assert_eq!(StepRecord::state_of(None, false, true), "CANCELLED");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn the_placement_records_the_steps_it_launched_in_the_order_they_started() {
        use crate::placement::{Placement as _, StepName};
        let mut p = SlurmPlacement::new(Allocation {
            job_id: "42".into(),
            nodelist: "n[1-2]".into(),
            nodes: 2,
            ntasks: 4,
            job_dir: "/nonexistent".into(),
        });
        let name = |replicate| StepName {
            id: "e2e.cmd",
            slug: "e2e-cmd",
            replicate,
        };
        assert_eq!(
            p.launcher(&name(0)),
            [
                "srun",
                "--ntasks=4",
                "--kill-on-bad-exit=1",
                "--job-name=e2e-cmd"
            ]
        );
        p.step_ended(&name(0), Some(&serde_json::json!({"exit_code": 0})), false);
        // A step not launched with srun (a micro point, say) is not a Slurm step.
        p.step_ended(&name(1), Some(&serde_json::json!({})), false);
        p.launcher(&name(1));
        p.step_ended(
            &name(1),
            Some(&serde_json::json!({"exit_code": 124, "error": "the command timed out"})),
            false,
        );
        p.launcher(&name(2));
        p.step_ended(&name(2), None, true);
        let got: Vec<(&str, &str, &str, Option<i32>)> = p
            .steps
            .iter()
            .map(|s| {
                (
                    s.step.as_str(),
                    s.what.as_str(),
                    s.state.as_str(),
                    s.exit_code,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("42.0", "e2e.cmd r0", "COMPLETED", Some(0)),
                ("42.1", "e2e.cmd r1", "TIMEOUT", Some(124)),
                ("42.2", "e2e.cmd r2", "CANCELLED", None),
            ]
        );
    }
}
