//! What a runner sees of a run and of one step ([`RunContext`], [`StepContext`]): below the
//! phases that make them and the runners that take them, so that neither imports the other.

use std::net::SocketAddr;
use std::path::Path;

use tokio_util::sync::CancellationToken;
use yardstick_spec::{ComponentLayer, E2eLayer, Trials};

use crate::eval::EvalInputs;
use crate::placement::{Placement, StepName};
use crate::plan::{Point, Step};

/// What every step of a run shares: where targets are, the inputs read, the trial policy and the
/// layers of the spec, the scratch directory, the run, this program and Ctrl-C.
pub(crate) struct RunContext<'a> {
    /// The async runtime the serving and eval runners use.
    pub rt: &'a tokio::runtime::Runtime,
    /// The embedded simulator, when a target is `url: sim`.
    pub sim: Option<SocketAddr>,
    /// The eval tasks and texts, read before the run started.
    pub eval_inputs: &'a EvalInputs,
    /// The trial policy.
    pub trials: &'a Trials,
    /// The spec's e2e layers (a command or trainer point's timeout, environment, profile).
    pub e2e_layers: &'a [E2eLayer],
    /// The spec's component layers (a start-up point's readiness).
    pub component_layers: &'a [ComponentLayer],
    /// Logs and files while a step runs.
    pub scratch: &'a Path,
    /// The spec's directory.
    pub spec_dir: Option<&'a Path>,
    /// The run id.
    pub run_id: &'a str,
    /// This program.
    pub exe: &'a Path,
    /// Cancelled on Ctrl-C.
    pub cancel: &'a CancellationToken,
    /// Where serve steps push hot metrics and traces (`--remote-write`, `--otlp`).
    pub hot: &'a [yardstick_load::hot::HotSink],
    /// The telemetry's last readings, mirrored into the hot metrics.
    pub gauges: &'a std::sync::Arc<yardstick_load::hot::Gauges>,
    /// The benchmark's name (a label of hot metrics).
    pub benchmark: &'a str,
}

impl RunContext<'_> {
    /// The URL of a target: the one the spec names, or the embedded simulator's.
    pub fn target(&self, url: Option<&String>) -> String {
        match (url, &self.sim) {
            (Some(u), _) => u.clone(),
            (None, Some(addr)) => format!("http://{addr}"),
            (None, None) => unreachable!("the simulator starts when a target needs it"),
        }
    }
}

/// One step as its runner sees it: the run, where it runs, the point, the replicate, its seed.
pub(crate) struct StepContext<'a> {
    /// What the run's steps share.
    pub run: &'a RunContext<'a>,
    /// The engine.
    pub placement: &'a mut dyn Placement,
    /// The point.
    pub point: &'a Point,
    /// The step (replicate, profiled or not).
    pub step: &'a Step,
    /// The replicate's seed.
    pub seed: u64,
}

impl<'a> StepContext<'a> {
    /// The step's name, as engines record it.
    pub fn name(&self) -> StepName<'a> {
        StepName::of(self.point, self.step)
    }
}
