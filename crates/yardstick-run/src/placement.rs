//! Where a run's steps execute: on this machine ([`crate::local`]), inside a Slurm allocation
//! ([`crate::slurm::SlurmPlacement`]) or as member 0 of a group of pods
//! ([`crate::pods::PodPlacement`]). A [`Placement`] is everything that differs between them —
//! the engine-wide start (every node's environment and micro figures), the `srun` prefix of a
//! command, a serve replicate split across processes and merged, the barrier around a command's
//! ranks, the record of the steps it launched — so the runners never ask which engine runs
//! them, and an engine never looks at the kind of point.

use std::path::{Path, PathBuf};
use yardstick_analysis::nodes::NodesReport;

use yardstick_store::RunWriter;

use crate::replicate::ReplicateOutcome;
use crate::{Event, Plan, Point, PointWork, RunError, Step};

/// What an engine needs to start: the run directory it stores its captures in, this program
/// (run again on every node or pod), the plan and the trial policy (the micro layer's
/// arguments), and where warnings go.
pub(crate) struct Start<'a> {
    /// The run being written.
    pub writer: &'a mut RunWriter,
    /// This program.
    pub exe: &'a Path,
    /// The plan.
    pub plan: &'a Plan,
    /// The trial policy.
    pub trials: &'a yardstick_spec::Trials,
    /// The tool's version, for an environment captured elsewhere.
    pub tool_version: &'a str,
    /// The variables whose values the environment capture redacts.
    pub secret_env: Vec<String>,
    /// Warnings.
    pub on_event: &'a mut dyn FnMut(Event),
}

/// A step as engines name it: the point's id and slug, the replicate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepName<'a> {
    /// The point id.
    pub id: &'a str,
    /// The point's slug (file and directory names).
    pub slug: &'a str,
    /// The replicate.
    pub replicate: u32,
}

impl<'a> StepName<'a> {
    /// The name of `step` of `point`.
    pub fn of(point: &'a Point, step: &Step) -> StepName<'a> {
        StepName {
            id: &point.id,
            slug: &point.slug,
            replicate: step.replicate,
        }
    }

    /// `<point> r<replicate>`, as warnings and step records say it.
    pub fn what(&self) -> String {
        format!("{} r{}", self.id, self.replicate)
    }
}

/// One replicate of a serve point that could be split across processes (not an MLPerf
/// scenario or a capacity search).
pub(crate) struct ServeShards<'a> {
    /// The point.
    pub work: &'a PointWork,
    /// The step.
    pub step: StepName<'a>,
    /// The target.
    pub url: &'a str,
    /// The replicate's seed.
    pub seed: u64,
    /// This program (`bench serve --shard I/N` in each process).
    pub exe: &'a Path,
}

/// What differs between the engines a run executes on. Each method has the local behaviour
/// as its default; an engine overrides what it changes.
pub(crate) trait Placement {
    /// Refuses a plan this engine cannot run (before anything is created).
    fn check(&self, _plan: &Plan) -> Result<(), RunError> {
        Ok(())
    }

    /// Whether one process runs every step, so a profiled replicate can be taken.
    fn single_process(&self) -> bool {
        true
    }

    /// Before the first step: what the engine captures across its nodes or pods; returns their
    /// consistency check (`summary.json`'s `nodes`, `None` when there is none).
    fn start(&mut self, _start: Start<'_>) -> Result<Option<NodesReport>, RunError> {
        Ok(None)
    }

    /// The prefix that launches the command of `step` on every rank (empty: run it here). A
    /// placement that gives one records the step when it ends ([`Placement::step_ended`]).
    fn launcher(&mut self, _step: &StepName<'_>) -> Vec<String> {
        Vec::new()
    }

    /// A serve replicate split across the engine's processes and merged exactly; `None` when
    /// this placement runs it in this process.
    fn serve_shards(
        &mut self,
        _shards: &ServeShards<'_>,
    ) -> Option<Result<ReplicateOutcome, RunError>> {
        None
    }

    /// A command replicate as this process's rank of `step`, `run` running it here: the other
    /// ranks start with it, and a rank that fails fails the replicate.
    fn as_rank(
        &mut self,
        _step: &StepName<'_>,
        run: &mut dyn FnMut() -> Result<ReplicateOutcome, RunError>,
    ) -> Result<ReplicateOutcome, RunError> {
        run()
    }

    /// `step` ended: with `summary` when it finished, `None` when it was cancelled.
    fn step_ended(
        &mut self,
        _step: &StepName<'_>,
        _summary: Option<&serde_json::Value>,
        _cancelled: bool,
    ) {
    }

    /// `point`'s `step` will not run (its treatment's server is infeasible, `why`): processes
    /// of the engine that would take part in it pass it by.
    fn skipped(&mut self, _point: &crate::Point, _step: &crate::plan::Step, _why: &str) {}

    /// Why the run cannot go on (a member of the group that never came): it stops, incomplete.
    fn stop_reason(&self) -> Option<String> {
        None
    }

    /// Stores the engine's record of the run (the job and its steps) before the run is sealed.
    fn record(&mut self, _writer: &mut RunWriter) -> Result<(), RunError> {
        Ok(())
    }

    /// The run was stored incomplete for `why`: the engine's other processes stop.
    fn stopped(&self, _why: &str) {}
}

/// The micro figures of every node (`files`: node name and `bench micro --json` output), each
/// stored as `<prefix>/<node>.json`, and their consistency check (`yardstick_analysis::nodes`)
/// stored as `rel_report` and returned.
pub(crate) fn nodes_check(
    writer: &mut RunWriter,
    files: Vec<(String, PathBuf)>,
    prefix: &str,
    rel_report: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<NodesReport>, RunError> {
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
                None => yardstick_analysis::nodes::figures_from_micro_json(&v)
                    .map_err(|e| e.to_string()),
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
    writer.add(
        rel_report,
        &serde_json::to_vec_pretty(&report).expect("JSON"),
        kind,
    )?;
    Ok(Some(report))
}

/// A stored report read back (a resumed run's), `None` when it cannot be read.
pub(crate) fn stored_report(writer: &RunWriter, rel: &str) -> Option<NodesReport> {
    std::fs::read(writer.dir().join(rel))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// A node's or pod's name as a file name in the run.
pub(crate) fn store_slug(s: &str) -> String {
    yardstick_store::run::slug(s)
}
