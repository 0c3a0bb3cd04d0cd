//! Orchestration of a BenchmarkRun: expand the plan, capture the environment before and after,
//! start the embedded simulator when a serve target asks for it, execute every (point,
//! replicate) in the planned order, store each replicate's raw samples and summary as sealed
//! artifacts the moment it finishes, write facts to the warehouse, aggregate replicates with
//! confidence intervals, and seal (and sign) the run.
//!
//! An interrupted run keeps every finished replicate and is marked `incomplete`; `resume`
//! continues it, skipping replicates whose artifacts exist, and the warehouse upserts facts so
//! nothing is duplicated.
#![deny(missing_docs)]

pub mod bottleneck;
pub mod e2e;
pub mod eval;
pub mod facts;
pub mod import;
pub mod import_serving;
pub mod index;
pub mod loader;
pub mod micro;
pub mod plan;
pub mod pods;
pub mod profile;
pub mod replicate;
pub mod scaling;
pub mod serve;
pub mod slurm;
pub mod startup;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

use facts::Figures;
use replicate::{ReplicateOutcome, ReplicateStatus};
use serde::{Deserialize, Serialize};
use yardstick_spec::{BenchmarkRun, Signing};
use yardstick_store::summary::{PointFailures, RunSummary};
use yardstick_store::warehouse::{PointRow, ReplicateRow, RunRow};
use yardstick_store::{Manifest, RunStatus, RunWriter, StoreError, ToolInfo};

pub use plan::{Plan, Point, PointWork, Step, plan};

/// Why `plan` must not run, if it must not: it has no point at all. A run that
/// measured nothing would be stored as complete.
pub fn nothing_to_run(plan: &Plan) -> Option<String> {
    plan.points
        .is_empty()
        .then(|| "the spec plans no points: no layer produced anything to measure".to_string())
}

/// Why `spec` cannot run here, if it cannot: its `execution.engine` is a scheduler
/// that this process does not run it on: `kubernetes` outside a pod group (the pods of the
/// Indexed Job `yardstick k8s render` writes run `yardstick run --shard I/N`), and `slurm`
/// outside the allocation `yardstick run` submitted (that one is submitted by the binary, and
/// runs here inside the job). Such a run must not silently execute on this machine instead: its
/// nodes, tasks and placement would not hold.
pub fn engine_unsupported(spec: &BenchmarkRun) -> Option<String> {
    let engine = spec.spec.as_ref()?.execution.as_ref()?.engine?;
    match engine {
        yardstick_spec::Engine::Local => None,
        yardstick_spec::Engine::Slurm if slurm::Allocation::from_env().is_some() => None,
        yardstick_spec::Engine::Slurm => Some(
            "`execution.engine: slurm`: this process runs specs on this machine; `yardstick \
             run` submits them to Slurm"
                .into(),
        ),
        yardstick_spec::Engine::Kubernetes => Some(
            "`execution.engine: kubernetes` runs as an Indexed Job on a cluster, not on this \
             machine: its pods run `yardstick run SPEC --shard I/N --shard-dir DIR`"
                .into(),
        ),
    }
}

/// The start of an inner run on Slurm: the batch script, and one `srun` step that captures the
/// environment of every node of the allocation (`slurm/env/<node>.json`).
fn slurm_start(
    a: &slurm::Allocation,
    writer: &mut RunWriter,
    exe: &Path,
    steps: &mut Vec<slurm::StepRecord>,
    on_event: &mut Box<dyn FnMut(Event) + Send>,
) -> Result<(), RunError> {
    let script = format!("slurm/{}/job.sh", a.job_id);
    if !writer.has(&script)
        && let Ok(bytes) = std::fs::read(a.job_dir.join("job.sh"))
    {
        writer.add(&script, &bytes, "slurm")?;
    }
    let (record, files, failure) = slurm::per_node(
        a,
        "env",
        "environment capture on every node",
        steps.len(),
        &a.job_dir.join("env"),
        &[exe.into(), "env".into(), "--json".into()],
    );
    steps.push(record);
    if let Some(why) = failure {
        on_event(Event::Warning(format!(
            "the per-node environment capture (srun) failed: {why}"
        )));
    }
    for (node, f) in files {
        let rel = format!("slurm/{}/env/{}.json", a.job_id, store_slug(&node));
        if let Ok(bytes) = std::fs::read(&f)
            && !bytes.is_empty()
            && !writer.has(&rel)
        {
            writer.add(&rel, &bytes, "env")?;
        }
    }
    Ok(())
}

fn store_slug(s: &str) -> String {
    yardstick_store::run::slug(s)
}

/// The micro layer on every node of the allocation: one `srun` step runs `yardstick bench micro`
/// (the plan's memory, GEMM and storage kinds, with its sizes) once per node; each node's output
/// (`slurm/<job>/micro/<node>.json`) and their consistency check (`slurm/<job>/nodes.json`,
/// `yardstick_analysis::nodes`) are stored. `Null` when the plan has no such micro point.
fn slurm_micro_per_node(
    a: &slurm::Allocation,
    writer: &mut RunWriter,
    exe: &Path,
    plan: &Plan,
    trials: &yardstick_spec::Trials,
    steps: &mut Vec<slurm::StepRecord>,
    on_event: &mut Box<dyn FnMut(Event) + Send>,
) -> Result<serde_json::Value, RunError> {
    let rel_report = format!("slurm/{}/nodes.json", a.job_id);
    let Some(args) = pods::micro_args(plan, trials) else {
        return Ok(serde_json::Value::Null);
    };
    if writer.has(&rel_report) {
        let path = writer.dir().join(&rel_report);
        return Ok(std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default());
    }
    let mut argv: Vec<std::ffi::OsString> = vec![exe.into()];
    argv.extend(args.iter().map(Into::into));
    let (record, files, failure) = slurm::per_node(
        a,
        "micro",
        "micro layer on every node",
        steps.len(),
        &a.job_dir.join("micro"),
        &argv,
    );
    steps.push(record);
    if let Some(why) = failure {
        on_event(Event::Warning(format!(
            "the micro layer on every node (srun) failed: {why}"
        )));
    }
    nodes_check(
        writer,
        files,
        &format!("slurm/{}/micro", a.job_id),
        &rel_report,
        on_event,
    )
}

/// The micro figures of every node (`files`: node name and `bench micro --json` output), each
/// stored as `<prefix>/<node>.json`, and their consistency check (`yardstick_analysis::nodes`)
/// stored as `rel_report` and returned.
fn nodes_check(
    writer: &mut RunWriter,
    files: Vec<(String, PathBuf)>,
    prefix: &str,
    rel_report: &str,
    on_event: &mut Box<dyn FnMut(Event) + Send>,
) -> Result<serde_json::Value, RunError> {
    let kind = rel_report.split('/').next().unwrap_or("nodes");
    let mut fleet = Vec::new();
    for (node, f) in files {
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        let parsed = serde_json::from_slice::<serde_json::Value>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| match v["error"].as_str() {
                Some(e) => Err(e.to_string()),
                None => yardstick_analysis::nodes::figures_from_micro_json(&v),
            });
        match parsed {
            Ok(figures) => {
                writer.add(
                    &format!("{prefix}/{}.json", store_slug(&node)),
                    &bytes,
                    "micro",
                )?;
                fleet.push((node, figures));
            }
            Err(e) => on_event(Event::Warning(format!(
                "the micro layer on node {node} gave no figures: {e}"
            ))),
        }
    }
    let mut report = yardstick_analysis::nodes::check(&fleet, Default::default());
    if fleet.len() < 2 {
        report.warnings.push(format!(
            "{} node(s) measured: node-to-node consistency needs two or more",
            fleet.len()
        ));
    }
    for (node, evidence) in &report.flagged {
        on_event(Event::Warning(format!(
            "node {node} stands out from the allocation: {}",
            evidence.join("; ")
        )));
    }
    let v = serde_json::to_value(&report).expect("JSON");
    writer.add(
        rel_report,
        &serde_json::to_vec_pretty(&v).expect("JSON"),
        kind,
    )?;
    Ok(v)
}

/// The start of member 0 of a pod group: its own environment and micro figures, then every
/// member's, stored as `pods/env/pod-I.json` and `pods/micro/pod-I.json` with the nodes check
/// of the micro figures (`pods/nodes.json`, returned; `Null` without a micro layer). A member
/// whose files never come is a warning here; the first step that spans the group then finds it
/// missing and stores the run as incomplete.
#[allow(clippy::too_many_arguments)]
fn pods_start(
    g: &pods::PodGroup,
    writer: &mut RunWriter,
    exe: &Path,
    plan: &Plan,
    trials: &yardstick_spec::Trials,
    tool_version: &str,
    secret_env: Vec<String>,
    on_event: &mut Box<dyn FnMut(Event) + Send>,
) -> Result<serde_json::Value, RunError> {
    if !writer.has(&format!("pods/env/pod-{}.json", g.index)) {
        pods::capture_member(g, exe, plan, trials, tool_version, secret_env);
    }
    let missing = g.wait_members("env");
    if !missing.is_empty() {
        on_event(Event::Warning(format!(
            "no environment from pod(s) {:?} of {}",
            missing, g.count
        )));
    }
    for i in 0..g.count {
        let rel = format!("pods/env/pod-{i}.json");
        if let Ok(bytes) = std::fs::read(g.member_file("env", i))
            && !writer.has(&rel)
        {
            writer.add(&rel, &bytes, "env")?;
        }
    }
    if pods::micro_args(plan, trials).is_none() {
        return Ok(serde_json::Value::Null);
    }
    if writer.has("pods/nodes.json") {
        return Ok(std::fs::read(writer.dir().join("pods/nodes.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default());
    }
    let missing = g.wait_members("micro");
    if !missing.is_empty() {
        on_event(Event::Warning(format!(
            "no micro figures from pod(s) {:?} of {}",
            missing, g.count
        )));
    }
    let files = (0..g.count)
        .map(|i| (format!("pod-{i}"), g.member_file("micro", i)))
        .filter(|(_, f)| f.is_file())
        .collect();
    nodes_check(writer, files, "pods/micro", "pods/nodes.json", on_event)
}

/// Member 0's part of a serve step that spans the group: the barrier, its own shard, every
/// member's, and their exact merge. A member that never reached the step or whose shard never
/// arrived sets `abort` (the run is then stored as incomplete); a shard that failed fails the
/// replicate.
fn pod_serve(
    g: &pods::PodGroup,
    work: &PointWork,
    url: &str,
    seed: u64,
    exe: &Path,
    key: &str,
    abort: &mut Option<String>,
) -> Result<ReplicateOutcome, RunError> {
    let args = serve::shard_args(work, url, seed)?;
    let start_at = g.start(key).map_err(|e| {
        *abort = Some(e.clone());
        RunError::Workload(e)
    })?;
    let own = g.run_serve_shard(exe, &args, key, start_at);
    g.done(key, own.exit_code, own.error.clone());
    let done = g.wait_done(key).map_err(|e| {
        *abort = Some(e.clone());
        RunError::Workload(e)
    })?;
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
    let merged = serve::merge_shards(work, &dirs);
    // Every member is past this step (each wrote its `done`): the shards are in the run now.
    if merged.is_ok() {
        let _ = std::fs::remove_dir_all(g.step_dir(key));
    }
    merged
}

/// The record of a pod group's run (`pods/group.json`): the group, its Job, the steps that
/// spanned it.
fn pods_record(
    g: &pods::PodGroup,
    writer: &mut RunWriter,
    steps: &[serde_json::Value],
) -> Result<(), RunError> {
    let record = serde_json::json!({
        "group": g,
        "job": std::env::var("YARDSTICK_JOB_NAME").ok(),
        "steps": steps,
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

/// The targets of a pod group's serve points: with more than one member every shard loads the
/// same server, so the bundled simulator (which would start inside one pod) is refused.
pub fn check_group_targets(plan: &Plan, g: &pods::PodGroup) -> Result<(), RunError> {
    if g.count < 2 {
        return Ok(());
    }
    match plan.points.iter().find(|p| {
        pods::spans_group(&p.work) && matches!(&p.work, PointWork::Serve { url: None, .. })
    }) {
        Some(p) => Err(RunError::Invalid(format!(
            "{}: the serve target is the bundled simulator (`url: sim`), which would run inside \
             each pod; {} pods split the load of one server every pod reaches (a URL)",
            p.id, g.count
        ))),
        None => Ok(()),
    }
}

/// A member other than 0 of a pod group (`yardstick run SPEC --shard I/N --shard-dir DIR`,
/// I > 0): the same plan as member 0, its part of every step that spans the group. Stores
/// nothing in the store.
pub fn execute_member(
    spec: &BenchmarkRun,
    opts: &RunOptions,
) -> Result<pods::MemberOutcome, RunError> {
    let g = opts
        .pods
        .as_ref()
        .ok_or_else(|| RunError::Internal("not a member of a pod group".into()))?;
    let mut plan = plan::plan(spec);
    if let Some(why) = nothing_to_run(&plan) {
        return Err(RunError::Invalid(why));
    }
    if let Some(only) = &opts.only_points {
        plan.restrict(only).map_err(RunError::Invalid)?;
    }
    check_group_targets(&plan, g)?;
    serve::resolve_target_files(&mut plan, opts.spec_dir.as_deref(), None)?;
    let trials = spec
        .spec
        .as_ref()
        .and_then(|s| s.trials.clone())
        .unwrap_or_default();
    pods::run_member(
        &plan,
        g,
        &opts.self_exe,
        opts.seed,
        &trials,
        &opts.tool.version,
        secret_env_names(spec),
    )
}

/// The record of the job and of every step the inner run started (`slurm/<job>/job.json`).
fn slurm_record(
    a: &slurm::Allocation,
    writer: &mut RunWriter,
    steps: &[slurm::StepRecord],
) -> Result<(), RunError> {
    let info = slurm::job_info(&a.job_id).ok().flatten();
    // Slurm's accounting has the final state of every step when it is configured; otherwise
    // the states are how each `srun` ended.
    let mut steps = steps.to_vec();
    let accounting = match slurm::sacct_steps(&a.job_id) {
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

/// Why a run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user's input is wrong (bad spec, missing key, unknown run id).
    #[error("{0}")]
    Invalid(String),
    /// A store or warehouse failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A workload could not be run at all (not its measured failures, which are recorded).
    #[error("{0}")]
    Workload(String),
    /// A bug.
    #[error("internal error: {0}")]
    Internal(String),
}

impl RunError {
    /// A local file that could not be read or written, named by `what` (`writing PATH`): a
    /// runtime failure, for `map_err`.
    pub(crate) fn io(what: String) -> impl FnOnce(std::io::Error) -> RunError {
        move |e| {
            RunError::Store(yardstick_store::StoreError::Io(std::io::Error::new(
                e.kind(),
                format!("{what}: {e}"),
            )))
        }
    }
}

/// Progress events for a display.
#[derive(Debug, Clone)]
pub enum Event {
    /// The run directory exists.
    Started {
        /// Run id.
        run_id: String,
        /// Run directory.
        dir: PathBuf,
        /// Steps in all.
        steps: usize,
        /// Steps already done (resume).
        done: usize,
    },
    /// A step starts.
    Step {
        /// 1-based step number.
        n: usize,
        /// Steps in all.
        of: usize,
        /// Point id.
        point: String,
        /// Replicate.
        replicate: u32,
    },
    /// A step finished; a few headline numbers.
    StepDone {
        /// Point id.
        point: String,
        /// Replicate.
        replicate: u32,
        /// A one-line summary.
        headline: String,
    },
    /// Something worth a warning.
    Warning(String),
}

/// How to run.
pub struct RunOptions {
    /// Store directory (run directories under `runs/`, SQLite warehouse at `yardstick.db`).
    pub store: PathBuf,
    /// Warehouse location when not the store's SQLite (a `postgres://` URL).
    pub warehouse: Option<String>,
    /// The tool.
    pub tool: ToolInfo,
    /// Cancelled to stop after the current replicate (Ctrl-C).
    pub cancel: CancellationToken,
    /// Seed for plans and arrivals (the replicate index is mixed in).
    pub seed: u64,
    /// Where progress goes.
    pub on_event: Box<dyn FnMut(Event) + Send>,
    /// This program, for running the built-in trainer as a child (`bench train`).
    pub self_exe: PathBuf,
    /// Run only these points of the plan (ids as `yardstick run --dry-run` lists them); `None`
    /// runs every point.
    pub only_points: Option<Vec<String>>,
    /// The spec's directory: eval task and perplexity files are relative to it (`None`: the
    /// working directory).
    pub spec_dir: Option<PathBuf>,
    /// A run directory whose frozen inputs (`inputs/eval/<slug>`, `inputs/target/<slug>`) take
    /// the place of the files the spec names (a re-run by `gate --confirm` reads exactly what the
    /// original read). A resumed run reads its own.
    pub inputs_from: Option<PathBuf>,
    /// Time between telemetry samples (CPU, memory, GPUs) during the run; 1 s is the default
    /// of `yardstick run`, 10 ms the least the sampler accepts.
    pub telemetry_interval: std::time::Duration,
    /// The Slurm allocation this run executes in (the inner run of `engine: slurm`): every
    /// node's environment is captured with `srun`, command points run as `srun` steps over all
    /// the tasks, and the batch script and a record of the job and its steps are stored under
    /// `slurm/`.
    pub slurm: Option<slurm::Allocation>,
    /// This process's place in a pod group (`yardstick run --shard I/N --shard-dir DIR`, the
    /// pods of `yardstick k8s render`'s Indexed Job): member 0 runs and stores the run, with
    /// every member's environment and micro figures under `pods/`, serve points split across
    /// the members and merged, command points one rank per member ([`pods`]). Other members go
    /// through [`execute_member`].
    pub pods: Option<pods::PodGroup>,
}

/// What a run produced (`yardstick run --json`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunOutcome {
    /// Run id.
    pub run_id: String,
    /// Run directory.
    pub dir: PathBuf,
    /// `complete`, or `incomplete` (interrupted: `yardstick run --resume` continues it).
    pub status: RunStatus,
    /// Whether the run was signed.
    pub signed: bool,
    /// `summary.json`: the aggregate facts (one per point × metric × statistic, mean over
    /// replicates with CI), the failures and the analyses; `null` for an interrupted run.
    pub summary: Option<RunSummary>,
}

impl RunOutcome {
    /// The failures of `summary.json`: one entry per point with a failed replicate.
    fn failures(&self) -> &[PointFailures] {
        self.summary.as_ref().map_or(&[], RunSummary::failures)
    }

    /// Points whose every replicate failed: they measured nothing. The run is complete (each
    /// failure is stored), but `yardstick run` exits 1 so that a script does not take it for a
    /// measurement.
    pub fn points_that_measured_nothing(&self) -> Vec<String> {
        self.summary
            .as_ref()
            .map(RunSummary::points_that_measured_nothing)
            .unwrap_or_default()
    }

    /// The outcome as `yardstick run` prints it: the run and its directory, failed replicates
    /// with their errors, scaling across world sizes, and each training point's bottleneck.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let failures = self.failures();
        let _ = writeln!(
            out,
            "run {}: {}{}",
            self.run_id,
            self.status.as_str(),
            if self.signed { ", signed" } else { "" }
        );
        let _ = writeln!(out, "  {}", self.dir.display());
        for f in failures {
            let _ = writeln!(
                out,
                "  {}: {} of {} replicates failed",
                f.point,
                f.failed.len(),
                f.replicates
            );
            for r in &f.failed {
                let _ = writeln!(out, "    - r{}: {}", r.replicate, r.error);
            }
        }
        let section = |pick: fn(&RunSummary) -> &Option<serde_json::Value>| {
            self.summary
                .as_ref()
                .and_then(|s| pick(s).clone())
                .unwrap_or_default()
        };
        // Scaling across world sizes (summary.json's scaling).
        for sc in section(|s| &s.scaling).as_array().into_iter().flatten() {
            for p in sc["points"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "  e2e.{} N={}: {} {:.3}, speedup {:.2}x, efficiency {:.1} %",
                    sc["layer"],
                    p["world_size"],
                    sc["metric"].as_str().unwrap_or_default(),
                    p["throughput"].as_f64().unwrap_or(f64::NAN),
                    p["speedup"].as_f64().unwrap_or(f64::NAN),
                    p["efficiency"].as_f64().unwrap_or(f64::NAN) * 100.0
                );
            }
        }
        // Training points classified on the run's own micro ceilings (summary.json).
        for p in section(|s| &s.bottlenecks)["points"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let _ = writeln!(
                out,
                "  {}: {}-bound",
                p["point"].as_str().unwrap_or("?"),
                p["bottleneck"].as_str().unwrap_or("undetermined")
            );
            for e in p["evidence"].as_array().into_iter().flatten() {
                let _ = writeln!(out, "    - {}", e.as_str().unwrap_or_default());
            }
        }
        out
    }
}

/// Resolves the signing key the spec asks for. `required` without a readable key is invalid
/// input, reported before any work starts.
pub fn signing_key(spec: &BenchmarkRun) -> Result<Option<ed25519_dalek::SigningKey>, RunError> {
    let prov = spec
        .spec
        .as_ref()
        .and_then(|s| s.provenance.clone())
        .unwrap_or_default();
    let policy = prov.signing.unwrap_or(Signing::Optional);
    let path = prov.key.as_deref().map(yardstick_store::sign::expand_home);
    match (policy, path) {
        (Signing::Off, _) | (Signing::Optional, None) => Ok(None),
        (Signing::Optional, Some(p)) if !p.exists() => Ok(None),
        (Signing::Required, None) => Err(RunError::Invalid(
            "provenance.signing is required but no key is named".into(),
        )),
        (_, Some(p)) => match yardstick_store::sign::load_signing_key(&p) {
            Ok(k) => Ok(Some(k)),
            Err(e) => Err(RunError::Invalid(format!(
                "{e} (create one with `yardstick keygen {}`)",
                p.display()
            ))),
        },
    }
}

fn artifact_paths(point: &Point, replicate: u32) -> (String, String) {
    (
        format!("samples/{}/r{replicate}.parquet", point.slug),
        format!("results/{}/r{replicate}.json", point.slug),
    )
}

/// The samples and result of a step: a measured replicate's, or the profiled replicate's
/// under `profile/<slug>/` (apart from the measured ones: never aggregated or gated).
fn step_paths(point: &Point, step: &plan::Step) -> (String, String) {
    if step.profile {
        (
            format!("profile/{}/samples.parquet", point.slug),
            format!("profile/{}/result.json", point.slug),
        )
    } else {
        artifact_paths(point, step.replicate)
    }
}

/// Executes a spec as a new run (`resume: None`) or continues an incomplete one.
pub fn execute(
    spec_text: &str,
    spec: &BenchmarkRun,
    resume: Option<&str>,
    mut opts: RunOptions,
) -> Result<RunOutcome, RunError> {
    let key = signing_key(spec)?;
    let mut plan = plan::plan(spec);
    if let Some(why) =
        nothing_to_run(&plan).or_else(|| engine_unsupported(spec).filter(|_| opts.pods.is_none()))
    {
        return Err(RunError::Invalid(why));
    }
    if let Some(only) = &opts.only_points {
        plan.restrict(only).map_err(RunError::Invalid)?;
    }
    if let Some(g) = &opts.pods {
        if !g.leader() {
            return Err(RunError::Internal(
                "a pod group's member other than 0 stores no run (execute_member)".into(),
            ));
        }
        check_group_targets(&plan, g)?;
    }
    let runs_dir = opts.store.join("runs");
    // Input files are read before anything is created: a bad one is invalid input. A resumed run
    // reads its own frozen copies, so every replicate sees the content the run started with.
    let frozen = opts.inputs_from.clone().or_else(|| {
        resume
            .filter(|id| yardstick_store::run::unsafe_run_id(id).is_none())
            .map(|id| runs_dir.join(id))
    });
    let eval_inputs = eval::EvalInputs::load(&plan, opts.spec_dir.as_deref(), frozen.as_deref())?;
    loader::check_sources(&plan, opts.spec_dir.as_deref())?;
    let target_files =
        serve::resolve_target_files(&mut plan, opts.spec_dir.as_deref(), frozen.as_deref())?;
    let mut writer = match resume {
        None => RunWriter::create(&runs_dir, &plan.name, spec_text, opts.tool.clone())?,
        Some(id) => {
            if let Some(why) = yardstick_store::run::unsafe_run_id(id) {
                return Err(RunError::Invalid(format!("`{id}` is not a run id: {why}")));
            }
            let dir = runs_dir.join(id);
            if !dir.join(yardstick_store::run::MANIFEST).exists() {
                return Err(RunError::Invalid(format!(
                    "no run {id} in {}",
                    runs_dir.display()
                )));
            }
            let w = RunWriter::resume(&dir)?;
            if w.manifest().spec_sha256
                != yardstick_store::fsutil::sha256_bytes(spec_text.as_bytes())
            {
                return Err(RunError::Invalid(format!(
                    "run {id} was started from a different spec; resume it with the same spec file"
                )));
            }
            w
        }
    };
    let mode = spec
        .spec
        .as_ref()
        .and_then(|s| s.mode)
        .map(|m| m.to_string());
    let trials = spec
        .spec
        .as_ref()
        .and_then(|s| s.trials.clone())
        .unwrap_or_default();

    // Environment before.
    let env_before = yardstick_env::capture(&yardstick_env::CaptureOptions {
        tool_version: Some(opts.tool.version.clone()),
        secret_env: secret_env_names(spec),
        ..Default::default()
    });
    if !writer.has("env.json") {
        let bytes = serde_json::to_vec_pretty(&env_before).expect("JSON");
        writer.set_env(&bytes, &env_before.machine_profile)?;
    } else if writer.manifest().machine_profile.as_deref()
        != Some(env_before.machine_profile.as_str())
    {
        let msg = format!(
            "machine profile changed since the run started: {} -> {}",
            writer
                .manifest()
                .machine_profile
                .clone()
                .unwrap_or_default(),
            env_before.machine_profile
        );
        (opts.on_event)(Event::Warning(msg.clone()));
        writer.note(msg)?;
    }

    let location = opts
        .warehouse
        .clone()
        .unwrap_or_else(|| opts.store.display().to_string());
    let mut wh = yardstick_store::warehouse::open_warehouse(&location)?;
    let run_row = |m: &Manifest| RunRow {
        run_id: m.run_id.clone(),
        name: m.name.clone(),
        status: m.effective_status(),
        mode: mode.clone(),
        spec_sha256: m.spec_sha256.clone(),
        machine_profile: m.machine_profile.clone(),
        env_sha256: m.env_sha256.clone(),
        started_at: m.started_at.clone(),
        ended_at: m.ended_at.clone(),
        tool_version: m.tool.version.clone(),
        git_commit: m.tool.git_commit.clone(),
        location: location.clone(),
    };
    let run_id = writer.run_id().to_string();
    wh.upsert_run(&RunRow {
        status: RunStatus::Running,
        ..run_row(writer.manifest())
    })?;
    wh.upsert_points(
        &plan
            .points
            .iter()
            .map(|p| PointRow {
                run_id: run_id.clone(),
                point_id: p.id.clone(),
                layer: p.layer.clone(),
                kind: index::point_kind(&p.work),
                params: serde_json::to_value(&p.work).expect("JSON"),
            })
            .collect::<Vec<_>>(),
    )?;

    // Profiles are taken by one process: not across a pod group or a Slurm allocation.
    if (opts.pods.as_ref().is_some_and(|g| g.count > 1) || opts.slurm.is_some())
        && plan.steps.iter().any(|s| s.profile)
    {
        plan.steps.retain(|s| !s.profile);
        (opts.on_event)(Event::Warning(
            "profiles are taken in single-process runs only: not across pods or Slurm tasks              (profile the command with `yardstick run` on one machine)"
                .into(),
        ));
    }
    let done = plan
        .steps
        .iter()
        .filter(|s| writer.has(&step_paths(&plan.points[s.point], s).1))
        .count();
    (opts.on_event)(Event::Started {
        run_id: run_id.clone(),
        dir: writer.dir().to_path_buf(),
        steps: plan.steps.len(),
        done,
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Internal(format!("async runtime: {e}")))?;
    let needs_sim = plan.points.iter().any(|p| {
        matches!(
            &p.work,
            PointWork::Serve { url: None, .. } | PointWork::Eval { url: None, .. }
        )
    });
    let sim = if needs_sim {
        Some(start_sim(&rt, &plan)?)
    } else {
        None
    };
    let _ = yardstick_load::raise_nofile_limit();
    // The task files and texts an eval read, and the CA and tokenizer files of the targets,
    // stored with the run (frozen content, hashed; a re-run reads these copies).
    let inputs = (eval_inputs.files.iter().map(|f| ("eval", f)))
        .chain(target_files.iter().map(|f| ("target", f)));
    for (kind, (name, path)) in inputs {
        let rel = input_artifact(kind, name);
        if !writer.has(&rel) {
            let bytes = std::fs::read(path)
                .map_err(|e| RunError::Invalid(format!("{}: {e}", path.display())))?;
            writer.add(&rel, &bytes, "input")?;
        }
    }

    let scratch = opts.store.join("tmp").join(&run_id);
    let component_layers: Vec<yardstick_spec::ComponentLayer> = spec
        .spec
        .as_ref()
        .and_then(|s| s.layers.as_ref())
        .and_then(|l| l.component.clone())
        .unwrap_or_default();
    let e2e_layers: Vec<yardstick_spec::E2eLayer> = spec
        .spec
        .as_ref()
        .and_then(|s| s.layers.as_ref())
        .and_then(|l| l.e2e.clone())
        .unwrap_or_default();
    // Telemetry throughout (CPU, memory, GPUs when NVML loads), at the run's interval.
    let sampler =
        match yardstick_env::telemetry::Sampler::start(yardstick_env::telemetry::SamplerConfig {
            interval: opts.telemetry_interval,
            ..Default::default()
        }) {
            Ok(s) => Some(s),
            Err(e) => {
                (opts.on_event)(Event::Warning(format!("telemetry is off: {e}")));
                None
            }
        };
    // Inside a Slurm allocation: the batch script and every node's environment, once per job.
    let mut steps: Vec<slurm::StepRecord> = Vec::new();
    let mut nodes_report = serde_json::Value::Null;
    if let Some(a) = &opts.slurm {
        slurm_start(
            a,
            &mut writer,
            &opts.self_exe,
            &mut steps,
            &mut opts.on_event,
        )?;
        nodes_report = slurm_micro_per_node(
            a,
            &mut writer,
            &opts.self_exe,
            &plan,
            &trials,
            &mut steps,
            &mut opts.on_event,
        )?;
    }
    // In a pod group: every member's environment and micro figures.
    let mut pod_steps: Vec<serde_json::Value> = Vec::new();
    if let Some(g) = &opts.pods {
        nodes_report = pods_start(
            g,
            &mut writer,
            &opts.self_exe,
            &plan,
            &trials,
            &opts.tool.version,
            secret_env_names(spec),
            &mut opts.on_event,
        )?;
    }
    // Why a pod group cannot go on (a member that never came): the run stops as incomplete.
    let mut abort: Option<String> = None;
    let group = opts.pods.clone().filter(|g| g.count > 1);
    let mut interrupted = false;
    for (n, step) in plan.steps.iter().enumerate() {
        if opts.cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        let point = &plan.points[step.point];
        let (samples_path, result_path) = step_paths(point, step);
        let logs_prefix = if step.profile {
            format!("profile/{}/logs/", point.slug)
        } else {
            format!("logs/{}/r{}/", point.slug, step.replicate)
        };
        if writer.has(&result_path) {
            // Finished before an interruption. The warehouse is an index of the stored run, and
            // a kill can land after the result is sealed but before its facts are written:
            // index it again from the sealed record (upserts, so nothing is duplicated).
            let path = writer.dir().join(&result_path);
            let record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).map_err(StoreError::from)?)
                    .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))?;
            if !step.profile {
                index_replicate(wh.as_mut(), &run_id, &point.id, step.replicate, &record)?;
            }
            continue;
        }
        // Files an unfinished attempt at this replicate sealed before a kill are not a finished
        // measurement (the result record is what finishes one): drop them and measure again.
        let mut unfinished = vec![
            samples_path.clone(),
            format!("eval/{}/r{}/", point.slug, step.replicate),
            logs_prefix.clone(),
        ];
        if step.profile {
            unfinished.push(format!("profile/{}/", point.slug));
        }
        writer.discard_unfinished(&unfinished)?;
        (opts.on_event)(Event::Step {
            n: n + 1,
            of: plan.steps.len(),
            point: point.id.clone(),
            replicate: step.replicate,
        });
        let started_at = yardstick_env::now_rfc3339();
        let seed = opts.seed ^ (u64::from(step.replicate) << 32);
        let outcome = match &point.work {
            PointWork::Serve { url, .. } => {
                let url = match (url, &sim) {
                    (Some(u), _) => u.clone(),
                    (None, Some(s)) => format!("http://{}", s.addr),
                    (None, None) => unreachable!("the simulator starts when a target needs it"),
                };
                match (&group, &opts.slurm) {
                    // Split across the pods of the group, merged exactly by member 0.
                    (Some(g), _) if pods::spans_group(&point.work) => {
                        let key = pods::step_key(&point.slug, step.replicate);
                        let out =
                            pod_serve(g, &point.work, &url, seed, &opts.self_exe, &key, &mut abort);
                        pod_steps.push(serde_json::json!({
                            "step": key,
                            "part": "serve shards",
                            "pods": g.count,
                            "state": if out.is_ok() { "COMPLETED" } else { "FAILED" },
                            "error": out.as_ref().err().map(ToString::to_string),
                        }));
                        out
                    }
                    // Split across every task of the allocation, merged exactly (MLPerf
                    // scenarios and capacity searches are not sharded).
                    (_, Some(a))
                        if a.ntasks > 1
                            && matches!(
                                &point.work,
                                PointWork::Serve {
                                    mlperf: None,
                                    capacity: None,
                                    ..
                                }
                            ) =>
                    {
                        let dir = a
                            .job_dir
                            .join("serve")
                            .join(format!("{}-r{}", point.slug, step.replicate));
                        let out = serve::run_replicate_sharded(
                            &point.work,
                            &url,
                            seed,
                            a,
                            &opts.self_exe,
                            &dir,
                        );
                        // The step either merged (srun exited 0) or failed.
                        let (exit, state) = match &out {
                            Ok(_) => (Some(0), "COMPLETED"),
                            Err(_) => (None, "FAILED"),
                        };
                        steps.push(slurm::StepRecord {
                            step: format!("{}.{}", a.job_id, steps.len()),
                            what: format!("{} r{} ({} shards)", point.id, step.replicate, a.ntasks),
                            state: state.into(),
                            exit_code: exit,
                            source: "srun".into(),
                        });
                        out
                    }
                    _ => serve::run_replicate(&rt, &point.work, &url, seed, opts.cancel.clone()),
                }
            }
            PointWork::Eval { url, .. } => {
                let url = match (url, &sim) {
                    (Some(u), _) => u.clone(),
                    (None, Some(s)) => format!("http://{}", s.addr),
                    (None, None) => unreachable!("the simulator starts when a target needs it"),
                };
                eval::run_replicate(&rt, &point.work, &eval_inputs, &url)
            }
            PointWork::Micro { micro: kind, sizes } => {
                micro::run_replicate(kind, sizes.as_ref(), &trials, seed)
            }
            PointWork::Train {
                layer,
                preset,
                steps,
                ..
            } => {
                // On Slurm, one rank per task: `bench train` takes its rank and world size
                // from SLURM_PROCID and SLURM_NTASKS.
                let mut argv = opts
                    .slurm
                    .as_ref()
                    .map(|a| a.srun_all(&point.slug))
                    .unwrap_or_default();
                argv.extend([
                    opts.self_exe.display().to_string(),
                    "bench".into(),
                    "train".into(),
                    "--preset".into(),
                    preset.clone(),
                ]);
                if let Some(n) = steps {
                    argv.extend(["--steps".into(), n.to_string()]);
                }
                let entry = e2e_layers.get(*layer).cloned().unwrap_or_default();
                e2e::run_replicate(e2e::E2eRequest {
                    argv,
                    layer: &entry,
                    trials: &trials,
                    expect_metrics: true,
                    scratch: &scratch,
                    run_id: &run_id,
                    seed,
                    cancel: opts.cancel.clone(),
                    profile: entry.profile.as_ref().filter(|_| step.profile),
                })
            }
            PointWork::Startup { layer, argv, cache } => {
                let entry = component_layers.get(*layer).cloned().unwrap_or_default();
                startup::run_replicate(&entry, argv, cache, &scratch, opts.cancel.clone())
            }
            PointWork::Dataloader { .. } => loader::run_replicate(
                &point.work,
                opts.spec_dir.as_deref(),
                &scratch,
                step.replicate,
                opts.cancel.clone(),
            ),
            PointWork::Command { layer, argv, .. } => {
                let entry = e2e_layers.get(*layer).cloned().unwrap_or_default();
                // On Slurm, one step over every task of the allocation (ranks from
                // SLURM_PROCID and SLURM_NTASKS).
                let argv = match &opts.slurm {
                    Some(a) => {
                        let mut v = a.srun_all(&point.slug);
                        v.extend(argv.iter().cloned());
                        v
                    }
                    None => argv.clone(),
                };
                // In a pod group: every member runs it as one rank, from a common barrier.
                let key = pods::step_key(&point.slug, step.replicate);
                let started = match &group {
                    Some(g) => g.start(&key).map(|_| ()).map_err(|e| {
                        abort = Some(e.clone());
                        RunError::Workload(e)
                    }),
                    None => Ok(()),
                };
                let out = started.and_then(|()| {
                    e2e::run_replicate(e2e::E2eRequest {
                        argv,
                        layer: &entry,
                        trials: &trials,
                        expect_metrics: false,
                        scratch: &scratch,
                        run_id: &run_id,
                        seed,
                        cancel: opts.cancel.clone(),
                        profile: entry.profile.as_ref().filter(|_| step.profile),
                    })
                });
                match &group {
                    Some(g) if abort.is_none() => {
                        let own = out.as_ref().ok().and_then(|o| {
                            o.summary[yardstick_spec::metrics::id::EXIT_CODE].as_i64()
                        });
                        g.done(&key, own.map(|c| c as i32), None);
                        let ranks = g.wait_done(&key).map_err(|e| {
                            abort = Some(e.clone());
                            RunError::Workload(e)
                        });
                        if ranks.is_ok() {
                            // Every rank is past this step.
                            let _ = std::fs::remove_dir_all(g.step_dir(&key));
                        }
                        let failed = ranks.as_ref().ok().and_then(|d| {
                            d.iter()
                                .find(|d| d.index != 0 && d.exit_code != Some(0))
                                .cloned()
                        });
                        pod_steps.push(serde_json::json!({
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
                    _ => out,
                }
            }
        };
        if opts.cancel.is_cancelled() {
            // A replicate cut short by Ctrl-C is not a finished measurement: keep nothing of it
            // (on Slurm, its step is recorded as cancelled).
            if let (Some(a), PointWork::Command { .. } | PointWork::Train { .. }) =
                (&opts.slurm, &point.work)
            {
                steps.push(slurm::StepRecord {
                    step: format!("{}.{}", a.job_id, steps.len()),
                    what: format!("{} r{}", point.id, step.replicate),
                    state: "CANCELLED".into(),
                    exit_code: None,
                    source: "srun".into(),
                });
            }
            interrupted = true;
            break;
        }
        if let Some(why) = &abort {
            (opts.on_event)(Event::Warning(format!(
                "{} r{}: {why}; the run stops here",
                point.id, step.replicate
            )));
            interrupted = true;
            break;
        }
        let ReplicateOutcome {
            status,
            summary,
            figures,
            samples,
            logs,
            eval_files,
            profile: profiled,
        } = match outcome {
            Ok(x) => x,
            // A workload that cannot run is measured as a failed replicate, not a crash.
            Err(RunError::Workload(msg)) => ReplicateOutcome::failed(msg),
            Err(e) => return Err(e),
        };
        if let ReplicateStatus::Failed(e) = &status {
            (opts.on_event)(Event::Warning(format!(
                "{} r{}: {e}",
                point.id, step.replicate
            )));
        }
        if let (Some(a), PointWork::Command { .. } | PointWork::Train { .. }) =
            (&opts.slurm, &point.work)
        {
            let exit = summary[yardstick_spec::metrics::id::EXIT_CODE]
                .as_i64()
                .map(|c| c as i32);
            let timed_out = summary["error"]
                .as_str()
                .is_some_and(|e| e.contains("timed out") || e.contains("timeout"));
            steps.push(slurm::StepRecord {
                step: format!("{}.{}", a.job_id, steps.len()),
                what: format!("{} r{}", point.id, step.replicate),
                state: slurm::StepRecord::state_of(exit, timed_out, opts.cancel.is_cancelled())
                    .into(),
                exit_code: exit,
                source: "srun".into(),
            });
        }
        if let Some(why) = summary.get("unsupported").and_then(|e| e.as_str()) {
            (opts.on_event)(Event::Warning(format!(
                "{} r{}: perplexity unsupported by this server: {why}",
                point.id, step.replicate
            )));
        }
        for (name, bytes) in &eval_files {
            let rel = format!("eval/{}/r{}/{name}", point.slug, step.replicate);
            writer.add(&rel, bytes, "eval")?;
        }
        for (name, bytes) in &logs {
            let rel = format!("{logs_prefix}{name}");
            writer.add(&rel, bytes, "log")?;
        }
        let mut summary = summary;
        if let Some(p) = profiled {
            for (name, bytes) in &p.files {
                writer.add(&format!("profile/{}/{name}", point.slug), bytes, "profile")?;
            }
            match p.analysis {
                Ok(a) => summary["profile"] = serde_json::to_value(&a).expect("JSON"),
                Err(why) => {
                    (opts.on_event)(Event::Warning(format!("{} profile: {why}", point.id)));
                    summary["profile_error"] = why.into();
                }
            }
        }
        let mut sample_artifact = None;
        if let Some(table) = samples {
            let bytes = table.to_parquet(&[
                ("yardstick.run_id", &run_id),
                ("yardstick.point", &point.id),
                ("yardstick.replicate", &step.replicate.to_string()),
            ])?;
            writer.add(&samples_path, &bytes, "samples")?;
            sample_artifact = Some(samples_path.clone());
        }
        let record = serde_json::json!({
            "point": point.id,
            "replicate": step.replicate,
            "started_at": started_at,
            "ended_at": yardstick_env::now_rfc3339(),
            "samples": sample_artifact,
            "summary": summary,
            "figures": figures,
        });
        writer.add(
            &result_path,
            &serde_json::to_vec_pretty(&record).expect("JSON"),
            "result",
        )?;
        if step.profile {
            // The profiled replicate perturbs timing: its figures stay out of the facts.
            continue;
        }
        index_replicate(wh.as_mut(), &run_id, &point.id, step.replicate, &record)?;
        (opts.on_event)(Event::StepDone {
            point: point.id.clone(),
            replicate: step.replicate,
            headline: facts::headline(&summary, &figures),
        });
    }
    if let Some(s) = sim {
        s.stop(&rt);
    }
    let mut telemetry_summary = serde_json::Value::Null;
    if let Some(sampler) = sampler {
        match sampler.stop() {
            Ok(t) if !t.rows.is_empty() => {
                std::fs::create_dir_all(&scratch).map_err(StoreError::from)?;
                let tmp = scratch.join("telemetry.parquet");
                match yardstick_env::telemetry::write_parquet(&tmp, &t.rows) {
                    Ok(()) => {
                        let bytes = std::fs::read(&tmp).map_err(StoreError::from)?;
                        writer.add(
                            &format!("telemetry/{}.parquet", t.started_ms),
                            &bytes,
                            "telemetry",
                        )?;
                    }
                    Err(e) => (opts.on_event)(Event::Warning(format!("telemetry not stored: {e}"))),
                }
                telemetry_summary = serde_json::to_value(&t.summary).unwrap_or_default();
            }
            Ok(_) => {}
            Err(e) => (opts.on_event)(Event::Warning(format!("telemetry lost: {e}"))),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = std::fs::remove_dir(opts.store.join("tmp"));

    if interrupted {
        if let Some(a) = &opts.slurm {
            slurm_record(a, &mut writer, &steps)?;
        }
        let why = abort.unwrap_or_else(|| "interrupted before every replicate finished".into());
        if let Some(g) = &opts.pods {
            pods_record(g, &mut writer, &pod_steps)?;
        }
        let m = writer.interrupt(&why)?;
        // Only once the run is stored: the other members stop when they read it, and the Job
        // controller may then end this pod too.
        if let Some(g) = &opts.pods {
            g.abort(&why);
        }
        wh.upsert_run(&run_row(&m))?;
        return Ok(RunOutcome {
            run_id,
            dir: runs_dir.join(&m.run_id),
            status: RunStatus::Incomplete,
            signed: false,
            summary: None,
        });
    }

    // Aggregate over replicates from the stored results (so a resumed run aggregates everything).
    let level = spec
        .spec
        .as_ref()
        .and_then(|s| s.trials.as_ref())
        .and_then(|t| t.confidence_level)
        .unwrap_or(0.95);
    let (mut per_point, mut per_point_figures) = (Vec::new(), Vec::new());
    for p in &plan.points {
        let (mut reps, mut figures_per_point) = (Vec::new(), Vec::new());
        for r in 0..plan.replicates {
            let path = writer.dir().join(artifact_paths(p, r).1);
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).map_err(StoreError::from)?)
                    .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))?;
            let figures = Figures::of_record(&v)
                .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))?;
            figures_per_point.push(v["summary"].get("error").is_none().then_some(figures));
            reps.push(v["summary"].clone());
        }
        per_point.push((p.id.clone(), reps));
        per_point_figures.push((p.id.clone(), figures_per_point));
    }
    let mut aggregate = facts::aggregate(&run_id, &per_point_figures, level);
    // Profiles: their analysis is the point's `profile.*` facts (one profiled replicate, no
    // interval) and a `profiles` section of the summary, beside the measured figures.
    let mut profiles = serde_json::Map::new();
    for p in &plan.points {
        let path = writer.dir().join(format!("profile/{}/result.json", p.slug));
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))?;
        let entry = profile::summary_entry(&v["summary"], &per_point, &p.id, &p.slug);
        aggregate.extend(profile::fact_rows(&run_id, &p.id, &v["summary"]));
        profiles.insert(p.id.clone(), entry);
    }
    wh.upsert_facts(&aggregate)?;
    let mut summary = facts::summary(&plan, &aggregate, level);
    summary.failures = Some(facts::failures(&per_point));
    if !profiles.is_empty() {
        summary.profiles = Some(profiles.into());
    }
    summary.telemetry = Some(telemetry_summary);
    let present = |v: serde_json::Value| (!v.is_null()).then_some(v);
    summary.scaling = present(scaling::scaling(&plan, &per_point));
    summary.nodes = present(nodes_report.clone());
    summary.eval = present(eval::eval_summary(&plan, &per_point));
    let precision = spec
        .spec
        .as_ref()
        .and_then(|s| s.workload.as_ref()?.precision);
    summary.bottlenecks = present(bottleneck::bottlenecks(&plan, &aggregate, precision));
    writer.add(
        "summary.json",
        &serde_json::to_vec_pretty(&summary).expect("JSON"),
        "summary",
    )?;

    // Environment after: a changed profile mid-run is flagged. Captured exactly like the one
    // before (Python probe included): the key has the torch version when torch is installed, so
    // skipping the probe here reported a "changed" profile on every machine with torch.
    let env_after = yardstick_env::capture(&yardstick_env::CaptureOptions {
        tool_version: Some(opts.tool.version.clone()),
        secret_env: secret_env_names(spec),
        ..Default::default()
    });
    if writer.manifest().machine_profile.as_deref() != Some(env_after.machine_profile.as_str()) {
        let msg = format!(
            "machine profile changed during the run: {} -> {}",
            writer
                .manifest()
                .machine_profile
                .clone()
                .unwrap_or_default(),
            env_after.machine_profile
        );
        (opts.on_event)(Event::Warning(msg.clone()));
        writer.note(msg)?;
    }
    writer.add(
        "env.after.json",
        &serde_json::to_vec_pretty(&env_after).expect("JSON"),
        "env",
    )?;
    let signed = key.is_some();
    if let Some(a) = &opts.slurm {
        slurm_record(a, &mut writer, &steps)?;
    }
    if let Some(g) = &opts.pods {
        pods_record(g, &mut writer, &pod_steps)?;
    }
    let m = writer.complete(key.as_ref())?;
    wh.upsert_run(&run_row(&m))?;
    Ok(RunOutcome {
        run_id,
        dir: runs_dir.join(&m.run_id),
        status: RunStatus::Complete,
        signed,
        summary: Some(summary),
    })
}

/// The run's frozen copy of an input file the spec names (`kind` is `eval` or `target`):
/// `inputs/<kind>/<slug>`.
fn input_artifact(kind: &str, name: &str) -> String {
    format!("inputs/{kind}/{}", plan::slug(name))
}

/// Resolves an input file the spec names: the frozen copy in `frozen`'s run directory when it
/// has one, else relative to `base`, the spec's directory (the working directory when `None`).
pub(crate) fn resolve_input(
    base: Option<&Path>,
    frozen: Option<&Path>,
    kind: &str,
    name: &str,
) -> PathBuf {
    if let Some(copy) = frozen
        .map(|run| run.join(input_artifact(kind, name)))
        .filter(|c| c.is_file())
    {
        return copy;
    }
    let p = Path::new(name);
    match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.to_path_buf(),
    }
}

/// Writes one sealed replicate record (`results/<point>/rN.json`) into the warehouse: its facts
/// and its replicate row. Idempotent, so a resumed run can index again what a kill left unindexed.
fn index_replicate(
    wh: &mut dyn yardstick_store::warehouse::Warehouse,
    run_id: &str,
    point_id: &str,
    replicate: u32,
    record: &serde_json::Value,
) -> Result<(), RunError> {
    let (row, facts, _) = index::replicate_rows(run_id, point_id, replicate, record, "")
        .map_err(|e| RunError::Internal(format!("{point_id} r{replicate}: {e}")))?;
    wh.upsert_facts(&facts)?;
    wh.upsert_replicate(&ReplicateRow {
        ended_at: record["ended_at"].as_str().map(str::to_string),
        ..row
    })?;
    Ok(())
}

struct EmbeddedSim {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl EmbeddedSim {
    fn stop(self, rt: &tokio::runtime::Runtime) {
        let _ = self.stop.send(());
        let _ = rt.block_on(self.task);
    }
}

fn start_sim(rt: &tokio::runtime::Runtime, plan: &Plan) -> Result<EmbeddedSim, RunError> {
    let model = plan
        .points
        .iter()
        .find_map(|p| match &p.work {
            PointWork::Serve {
                url: None, model, ..
            }
            | PointWork::Eval {
                url: None, model, ..
            } => Some(model.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let cfg = yardstick_sim::SimConfig {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        model,
        ..Default::default()
    };
    let sim = rt
        .block_on(yardstick_sim::Sim::bind(cfg))
        .map_err(|e| RunError::Workload(format!("cannot start the embedded simulator: {e}")))?;
    let addr = sim.local_addr();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = rt.spawn(async move {
        sim.serve(async {
            let _ = rx.await;
        })
        .await;
    });
    Ok(EmbeddedSim {
        addr,
        stop: tx,
        task,
    })
}

/// The variables a spec names as holding secrets (`target.apiKeyEnv`): the environment capture
/// redacts their values wherever an allow-listed variable repeats them.
pub fn secret_env_names(spec: &BenchmarkRun) -> Vec<String> {
    spec.spec
        .as_ref()
        .and_then(|s| s.layers.as_ref())
        .and_then(|l| l.component.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.target.as_ref().and_then(|t| t.api_key_env.clone()))
        .collect()
}

/// The run directory of `run_id` in a store; a run id that could name a path elsewhere (`..`,
/// `/`) is refused.
pub fn run_dir(store: &Path, run_id: &str) -> Result<PathBuf, RunError> {
    Ok(yardstick_store::run::run_dir(store, run_id)?)
}
