//! How long a plan is expected to take, beside the upper bound its time limits give: each
//! point's replicates as long as they took in the last run of the same benchmark in the store,
//! else as a model of the point says (the embedded simulator's known latencies, an open-loop
//! rate, the trainer's step count), else its time limit. The plan's `estimate: at most …` is
//! what the spec allows; this is what to expect.

use std::collections::BTreeMap;

use serde::Serialize;
use yardstick_load::point::PointMode;
use yardstick_spec::scenario::Scenario;
use yardstick_store::warehouse::{RunFilter, Warehouse};

use crate::plan::{Plan, Point, PointWork};

/// Seconds a step costs beyond its measurement (sealing, files, the next step's start).
const PER_STEP_S: f64 = 0.3;
/// Seconds a run costs beyond its steps (environment capture before and after, the summary).
const PER_RUN_S: f64 = 4.0;

/// The expected duration of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Expected {
    /// Seconds.
    pub seconds: f64,
    /// Points timed from the last run of the benchmark in the store.
    pub from_history: usize,
    /// Points whose time is a model of the point (its own figures).
    pub modelled: usize,
    /// Points counted at their time limit (nothing better known).
    pub at_limit: usize,
}

/// How long each point's replicates took in the newest complete run named `name` in `w`:
/// point id → the median of its replicates' wall times, seconds. Empty when there is none.
pub fn history(w: &mut dyn Warehouse, name: &str) -> BTreeMap<String, f64> {
    let filter = RunFilter {
        name: Some(name.to_string()),
        status: Some("complete".to_string()),
        limit: Some(1),
        ..Default::default()
    };
    let Some(run) = w.runs(&filter).ok().and_then(|r| r.into_iter().next()) else {
        return BTreeMap::new();
    };
    let mut by_point: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in w.replicates(&run.run_id).unwrap_or_default() {
        let at = |s: &str| humantime::parse_rfc3339_weak(s).ok();
        if let (Some(a), Some(b)) = (at(&r.started_at), r.ended_at.as_deref().and_then(at))
            && let Ok(d) = b.duration_since(a)
        {
            by_point
                .entry(r.point_id)
                .or_default()
                .push(d.as_secs_f64());
        }
    }
    by_point
        .into_iter()
        .map(|(p, v)| (p, yardstick_stats::descriptive::median(&v)))
        .collect()
}

/// The simulator's latency model when `argv` starts `yardstick sim` (the server under test of
/// a sweep over it): its TTFT, ITL and request slots from its flags, defaults otherwise.
fn sim_server(argv: &[String]) -> Option<yardstick_sim::SimConfig> {
    let exe = std::path::Path::new(argv.first()?).file_name()?.to_str()?;
    if !exe.starts_with("yardstick") || argv.get(1).map(String::as_str) != Some("sim") {
        return None;
    }
    let mut sim = yardstick_sim::SimConfig::default();
    let flag = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = flag("--ttft-ms") {
        sim.ttft = std::time::Duration::from_secs_f64(ms / 1e3);
    }
    if let Some(ms) = flag("--itl-ms") {
        sim.itl = std::time::Duration::from_secs_f64(ms / 1e3);
    }
    if let Some(n) = flag("--max-running").filter(|n| *n >= 1.0) {
        sim.max_running = Some(n as usize);
    }
    Some(sim)
}

/// A replicate of `p` by a model of the point, seconds; `None` when nothing about the point
/// says how long it takes. `server` is the command of the server under test that `p` measures.
fn modelled(p: &Point, server: Option<&[String]>) -> Option<f64> {
    match &p.work {
        PointWork::Micro { micro, sizes, .. } => {
            let n = sizes.as_ref().map_or(1, Vec::len).max(1) as f64;
            let each = match micro.as_str() {
                "memory" | "gemm" => 1.5,
                // Every size of every type, a few seconds each at the largest.
                "gpu-gemm" => 20.0,
                "gpu-memory" | "gpu-pcie" => 3.0,
                _ => 5.0,
            };
            Some(n * each)
        }
        PointWork::Serve { url, point, .. } => {
            let requests = point
                .max_requests
                .map(|n| (n + point.warmup_requests) as f64);
            let limit = point.max_duration.map(|d| d.as_secs_f64());
            let by_requests = match point.load_mode {
                PointMode::Rate | PointMode::MlperfServer if point.load_value > 0.0 => {
                    requests.map(|n| n / point.load_value)
                }
                PointMode::Concurrency
                    if url.is_none() || server.and_then(sim_server).is_some() =>
                {
                    // The embedded simulator, or `yardstick sim` as the server under test: its
                    // latencies are known.
                    let sim = server.and_then(sim_server).unwrap_or_default();
                    let out = point
                        .scenario
                        .parse::<Scenario>()
                        .ok()?
                        .mean_output(sim.default_max_tokens as f64);
                    let request = sim.ttft.as_secs_f64() + out * sim.itl.as_secs_f64();
                    let streams = point
                        .load_value
                        .max(1.0)
                        .min(sim.max_running.map_or(f64::INFINITY, |n| n as f64));
                    requests.map(|n| (n / streams).ceil() * request)
                }
                _ => None,
            };
            match (by_requests, limit) {
                (Some(t), Some(l)) => Some(t.min(l)),
                (t, _) => t,
            }
        }
        PointWork::Train { preset, steps, .. } => {
            let per_step = if preset == "small" { 1.5 } else { 0.3 };
            Some(2.0 + steps.unwrap_or(50) as f64 * per_step)
        }
        _ => None,
    }
}

/// A replicate of `p` at its time limit, seconds, when it has one.
fn at_limit(p: &Point) -> Option<f64> {
    match &p.work {
        PointWork::Serve { point, .. } => point.max_duration.map(|d| d.as_secs_f64()),
        PointWork::Command { timeout, .. } | PointWork::Dataloader { timeout, .. } => {
            timeout.map(|t| t.as_secs_f64())
        }
        _ => None,
    }
}

impl Plan {
    /// The expected duration of the plan's steps: per point, the median replicate time of the
    /// last run in `history` ([`history`]), else a model of the point, else its time limit;
    /// `None` when a point has none of these.
    pub fn expected(&self, history: &BTreeMap<String, f64>) -> Option<Expected> {
        let mut e = Expected {
            seconds: PER_RUN_S,
            from_history: 0,
            modelled: 0,
            at_limit: 0,
        };
        let mut per_point = Vec::with_capacity(self.points.len());
        for p in &self.points {
            let s = if let Some(s) = history.get(&p.id) {
                e.from_history += 1;
                *s
            } else if let Some(s) = modelled(
                p,
                p.treatment
                    .and_then(|t| self.treatments.get(t)?.server.as_ref())
                    .map(|s| s.argv.as_slice()),
            ) {
                e.modelled += 1;
                s
            } else {
                e.at_limit += 1;
                at_limit(p)?
            };
            per_point.push(s);
        }
        for step in &self.steps {
            e.seconds += per_point.get(step.point).copied().unwrap_or(0.0) + PER_STEP_S;
        }
        Some(e)
    }

    /// The estimate as `yardstick run` prints it: what to expect (and where that comes from)
    /// and the upper bound of the spec's time limits.
    pub fn estimate_line(&self, history: &BTreeMap<String, f64>) -> String {
        let upper = self
            .estimate_upper_s
            .map(|s| format!("at most {}", crate::plan::fmt_secs(s)));
        let expected = self.expected(history).map(|e| {
            let from = if e.from_history == self.points.len() {
                " (as long as the last run of this benchmark in the store)".to_string()
            } else if e.from_history > 0 {
                format!(
                    " ({} of {} points timed by the last run of this benchmark)",
                    e.from_history,
                    self.points.len()
                )
            } else if e.at_limit > 0 {
                format!(" ({} point(s) counted at their time limit)", e.at_limit)
            } else {
                String::new()
            };
            format!("about {}{from}", crate::plan::fmt_secs(e.seconds))
        });
        match (expected, upper) {
            (Some(e), Some(u)) => format!("estimate: {e}; {u}"),
            (Some(e), None) => format!("estimate: {e}"),
            (None, Some(u)) => format!("estimate: {u}"),
            (None, None) => "estimate: unknown (a point has no time limit, or an eval point reads \
                             its items from a file)"
                .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    fn plan(yaml: &str) -> crate::plan::Plan {
        let c = yardstick_spec::check_str(yaml);
        crate::plan::plan(c.spec.as_ref().expect("a spec"))
    }

    const QUICK: &str = "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: q}\n\
spec:\n  mode: exploratory\n  trials: {replicates: 3, warmup: {requests: 4}}\n  layers:\n    \
component:\n      - kind: serve\n        target: {url: sim, api: chat, model: m}\n        \
scenarios: [\"D(64,16)\"]\n        load: {mode: concurrency, values: [1, 8]}\n        \
stop: {maxRequests: 30, maxDuration: 30s}\n";

    /// The simulator's latencies are known: 34 requests of 50 ms + 16 × 10 ms at one stream is
    /// 7.1 s (measured: 6.95–7.28 s per replicate), at 8 streams 5 rounds of 0.21 s (measured
    /// about 1.0 s); the upper bound is the 30 s limit per replicate.
    #[test]
    fn the_simulator_points_are_modelled() {
        let p = plan(QUICK);
        let e = p.expected(&BTreeMap::new()).unwrap();
        assert_eq!((e.from_history, e.modelled, e.at_limit), (0, 2, 0));
        let steps = 3.0 * (34.0 * 0.21 + 5.0 * 0.21);
        let want = super::PER_RUN_S + steps + 6.0 * super::PER_STEP_S;
        assert!((e.seconds - want).abs() < 1e-9, "{e:?} vs {want}");
        let line = p.estimate_line(&BTreeMap::new());
        assert!(
            line.starts_with("estimate: about 30 s; at most 3.0 min"),
            "{line}"
        );
    }

    /// `yardstick sim` as the server under test of a sweep is modelled from its flags: with
    /// one request slot the 4 streams take turns (44 requests of 20 ms + 32 × 2 ms: 3.7 s), with
    /// four they run at once (11 rounds: 0.92 s).
    #[test]
    fn a_sweep_over_the_simulator_is_modelled_from_its_flags() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sweep.yaml"),
        )
        .unwrap();
        let p = plan(&text);
        let e = p.expected(&BTreeMap::new()).unwrap();
        assert_eq!((e.modelled, e.at_limit), (3, 0), "{e:?}");
        let per_round = 44.0 * 0.084 + 22.0 * 0.084 + 11.0 * 0.084;
        let want = super::PER_RUN_S + 3.0 * per_round + 9.0 * super::PER_STEP_S;
        assert!((e.seconds - want).abs() < 1e-6, "{e:?} vs {want}");
    }

    /// A previous run's replicate times replace the model, point by point.
    #[test]
    fn history_replaces_the_model() {
        let p = plan(QUICK);
        let mut h = BTreeMap::new();
        h.insert(p.points[0].id.clone(), 10.0);
        let e = p.expected(&h).unwrap();
        assert_eq!((e.from_history, e.modelled), (1, 1));
        let line = p.estimate_line(&h);
        assert!(
            line.contains("1 of 2 points timed by the last run"),
            "{line}"
        );
        h.insert(p.points[1].id.clone(), 1.0);
        let line = p.estimate_line(&h);
        assert!(line.contains("as long as the last run"), "{line}");
        let e = p.expected(&h).unwrap();
        let want = super::PER_RUN_S + 3.0 * 11.0 + 6.0 * super::PER_STEP_S;
        assert!((e.seconds - want).abs() < 1e-9, "{e:?}");
    }
}
