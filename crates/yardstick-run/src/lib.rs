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
pub mod estimate;
pub mod eval;
pub mod facts;
pub mod import;
pub mod import_serving;
pub mod index;
pub mod loader;
mod local;
pub mod micro;
mod phases;
mod placement;
pub mod plan;
pub mod playbook;
pub mod pods;
pub mod profile;
pub mod replicate;
pub mod scaling;
pub mod scheduler;
pub mod serve;
pub mod slurm;
pub mod startup;
mod step;
pub mod sut;
pub mod sweep;
pub mod tune;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

use serde::{Deserialize, Serialize};
use yardstick_spec::{BenchmarkRun, Signing};
use yardstick_store::summary::{PointFailures, RunSummary};
use yardstick_store::warehouse::ReplicateRow;
use yardstick_store::{RunStatus, StoreError, ToolInfo};

pub use phases::execute;
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

/// The targets of a pod group's serve points: with more than one member every shard loads the
/// same server, so the bundled simulator (which would start inside one pod) is refused.
pub fn check_group_targets(plan: &Plan, g: &pods::PodGroup) -> Result<(), RunError> {
    if g.count < 2 {
        return Ok(());
    }
    if let Some(p) = plan
        .points
        .iter()
        .find(|p| p.work.spans_group() && matches!(&p.work, PointWork::Serve { url: None, .. }))
    {
        return Err(RunError::Invalid(format!(
            "{}: the serve target is the bundled simulator (`url: sim`), which would run inside \
             each pod; {} pods split the load of one server every pod reaches (a URL)",
            p.id, g.count
        )));
    }
    // The server under test runs in pod 0: a loopback target would send every other pod's
    // shard to its own loopback.
    let loopback = |u: &str| {
        let rest = u.split_once("://").map_or(u, |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or_default();
        // `[::1]:{port}`, `127.0.0.1:{port}`, `localhost:{port}`.
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.split(':').next().unwrap_or_default(),
        };
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    match plan.points.iter().find(|p| {
        p.treatment
            .and_then(|t| plan.treatments.get(t))
            .is_some_and(|t| t.server.is_some())
            && matches!(&p.work, PointWork::Serve { url: Some(u), .. } if loopback(u))
    }) {
        Some(p) => Err(RunError::Invalid(format!(
            "{}: the target is this pod's loopback, but the server under test runs in pod 0 and \
             {} pods split its load; give the target as `http://{{host}}:{{port}}` (pod 0's \
             address) and let the server listen on every interface",
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
        plan.restrict(only)
            .map_err(|e| RunError::Invalid(e.to_string()))?;
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

/// Why a run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user's input is wrong (bad spec, missing key, unknown run id).
    #[error("{0}")]
    Invalid(String),
    /// The spec's `provenance` names no key it requires, or one that cannot be read.
    #[error("{0}")]
    SigningKey(String),
    /// A store or warehouse failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A workload could not be run at all (not its measured failures, which are recorded).
    #[error("{0}")]
    Workload(String),
    /// A bug.
    #[error("internal error: {0}")]
    Internal(String),
    /// The store admits only runs a key it trusts signed, and the run would not be (refused
    /// before any work).
    #[error(
        "the store {} admits only runs signed by a key it trusts, and this {} {refusal}",
        store.display(),
        match writer { Writer::Spec => "spec", Writer::Import => "import" }
    )]
    Untrusted {
        /// The store directory.
        store: PathBuf,
        /// What would have written the run.
        writer: Writer,
        /// What the run lacks.
        refusal: yardstick_store::trust::Refusal,
    },
}

/// What writes a run into a store: a spec's execution (`yardstick run`, `gate --confirm`'s
/// re-run) or an import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// A spec, signed by its `provenance.key`.
    Spec,
    /// An import, signed by the key the caller passes.
    Import,
}

impl yardstick_error::UserFacing for RunError {
    fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            RunError::Invalid(_) | RunError::SigningKey(_) | RunError::Untrusted { .. }
        )
    }

    fn hint(&self) -> Option<String> {
        match self {
            RunError::Untrusted {
                writer: Writer::Spec,
                ..
            } => Some(
                "set `provenance: {signing: required, key: PATH}` to a key whose .pub `yardstick trust list` shows, or `yardstick trust add PATH.pub`".into(),
            ),
            RunError::Untrusted {
                writer: Writer::Import,
                ..
            } => Some("pass --key with a secret key whose .pub `yardstick trust list` shows".into()),
            RunError::SigningKey(_) => Some(
                "create a key with `yardstick keygen PATH`, or set `provenance.signing: optional`"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// Refuses, before any work, a run the store at `store` would not admit: one `key` (`None`:
/// unsigned) does not sign with a key the store trusts, when its policy requires that
/// (`yardstick trust require on`). Every path that writes a run into a store goes through here:
/// [`execute`], the importers, and so `gate --confirm`'s re-run.
pub fn check_admitted(
    store: &Path,
    key: Option<&ed25519_dalek::SigningKey>,
    writer: Writer,
) -> Result<(), RunError> {
    let trust = yardstick_store::trust::load(store)?;
    trust
        .admits(key.map(|k| k.verifying_key()).as_ref())
        .map_err(|refusal| RunError::Untrusted {
            store: store.to_path_buf(),
            writer,
            refusal,
        })
}

/// The key that signs a run of `spec` in the store at `store`: refused as invalid input when
/// the spec names a key that cannot be read, or when the store would not admit what it signs
/// ([`check_admitted`]).
pub fn admitted_key(
    spec: &BenchmarkRun,
    store: &Path,
) -> Result<Option<ed25519_dalek::SigningKey>, RunError> {
    let key = signing_key(spec)?;
    check_admitted(store, key.as_ref(), Writer::Spec)?;
    Ok(key)
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
    /// Something worth a line of progress (the server under test starting, ready).
    Note(String),
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
    /// Files to add to the run once its summary is written and before it is sealed (the
    /// tuner's answer in its final run): called with the summary and the run directory.
    pub before_seal: Option<BeforeSeal>,
    /// Where serve steps push hot metrics and traces while they run (`--remote-write`,
    /// `--otlp`, `--otlp-traces`); their labels are set per step (benchmark, run id, point,
    /// replicate, node), and a trace sink's SLO is the point's.
    pub hot: Vec<yardstick_load::hot::HotSink>,
}

/// See [`RunOptions::before_seal`]: (name relative to the run directory, contents).
pub type BeforeSeal = Box<dyn FnOnce(&RunSummary, &Path) -> Vec<(String, Vec<u8>)> + Send>;

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
    ///
    /// A point of an infeasible treatment (its server never became ready: every error begins
    /// with [`sut::INFEASIBLE`]) is an answer of a sweep, not a failure of the run — unless no
    /// point of the run measured anything.
    pub fn points_that_measured_nothing(&self) -> Vec<String> {
        let Some(summary) = &self.summary else {
            return Vec::new();
        };
        let empty = summary.points_that_measured_nothing();
        let infeasible = |p: &String| {
            summary.failures().iter().any(|f| {
                &f.point == p
                    && f.failed
                        .iter()
                        .all(|r| r.error.starts_with(sut::INFEASIBLE))
            })
        };
        let measured_any = summary.points.len() > empty.len();
        empty
            .into_iter()
            .filter(|p| !(measured_any && infeasible(p)))
            .collect()
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
        // Scaling across world sizes (summary.json's scaling).
        let scaling = self.summary.as_ref().and_then(|s| s.scaling.as_ref());
        for sc in scaling.into_iter().flatten() {
            for p in &sc.report.points {
                let _ = writeln!(
                    out,
                    "  e2e.{} N={}: {} {:.3}, speedup {:.2}x, efficiency {:.1} %",
                    sc.layer,
                    p.world_size,
                    sc.report.metric,
                    p.throughput,
                    p.speedup,
                    p.efficiency * 100.0
                );
            }
        }
        // Training points classified on the run's own micro ceilings (summary.json).
        let bottlenecks = self.summary.as_ref().and_then(|s| s.bottlenecks.as_ref());
        for p in bottlenecks.into_iter().flat_map(|b| &b.points) {
            let _ = writeln!(
                out,
                "  {}: {}-bound",
                p.point,
                p.classification.bottleneck.as_str()
            );
            for e in &p.classification.evidence {
                let _ = writeln!(out, "    - {e}");
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
        (Signing::Required, None) => Err(RunError::SigningKey(
            "provenance.signing is required but no key is named".into(),
        )),
        (_, Some(p)) => match yardstick_store::sign::load_signing_key(&p) {
            Ok(k) => Ok(Some(k)),
            Err(e) => Err(RunError::SigningKey(format!(
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

/// Reads a sealed replicate record of this run (`path`, in its run directory); a record that
/// does not read is a bug of this yardstick, which wrote it.
fn read_record(path: &Path) -> Result<yardstick_store::record::ReplicateRecord, RunError> {
    let bytes = std::fs::read(path).map_err(StoreError::from)?;
    yardstick_store::record::ReplicateRecord::read(&bytes)
        .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))
}

/// Writes one sealed replicate record (`results/<point>/rN.json`) into the warehouse: its facts
/// and its replicate row. Idempotent, so a resumed run can index again what a kill left unindexed.
fn index_replicate(
    wh: &mut dyn yardstick_store::warehouse::Warehouse,
    run_id: &str,
    point_id: &str,
    replicate: u32,
    record: &yardstick_store::record::ReplicateRecord,
) -> Result<(), RunError> {
    let (row, facts, _) = index::replicate_rows(run_id, point_id, replicate, record, "");
    wh.upsert_facts(&facts)?;
    wh.upsert_replicate(&ReplicateRow {
        ended_at: record.ended_at.clone(),
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
                url: None, point, ..
            } => Some(point.model.clone()),
            PointWork::Eval {
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
