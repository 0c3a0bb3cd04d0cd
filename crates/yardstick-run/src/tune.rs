//! The tuner (`spec.tune`): searches a sweep's factors for the best treatment instead of walking
//! them all. Every round is an ordinary stored run of a few treatments:
//!
//! - **probes** (named `<benchmark>.probe`): one replicate of each proposed treatment with a
//!   share (`tune.probe`) of each serve layer's requests — cheap, noisy, enough to rank;
//! - **the final run** (the benchmark's own name): the two best probed treatments measured as the
//!   spec says (every replicate, every request), so the answer has intervals and a test.
//!
//! `tpe` proposes each next pair of treatments from what the probes measured (one
//! Tree-structured Parzen Estimator per factor, from the `tpe` crate; an infeasible treatment
//! is told the worst value, so the search learns to avoid it), and spends the last third of the
//! budget on the unprobed neighbours of the best so far (one factor one level away); `halving`
//! probes a Latin hypercube of three quarters of `budget` and keeps the better third at each
//! rung, with three times the requests, until two remain, then spends the last quarter on the
//! unprobed neighbours of the last rung's best. The answer — the best treatment with its interval, whether it
//! beats the runner-up by Welch's test at the spec's confidence, and every probe — is
//! `tune.json` in the final run, beside `best.yaml`: the spec with each factor fixed at the best
//! level (runnable as it is) and the server's exact command line and environment.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use rand::SeedableRng;
use serde::Serialize;
use yardstick_spec::metrics::Direction;
use yardstick_spec::{BenchmarkRun, FactorLevel, Spec, TuneStrategy};
use yardstick_store::summary::RunSummary;

use crate::plan::{Plan, plan};
use crate::{Event, RunError, RunOptions, RunOutcome, execute};

/// The tuner's settings with the defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Settings {
    /// The objective metric.
    pub objective: String,
    /// Its statistic.
    pub statistic: String,
    /// `maximize` or `minimize`.
    pub goal: String,
    /// Constraints: (metric, statistic, min, max).
    pub constraints: Vec<Constraint>,
    /// Treatments the search may probe.
    pub budget: usize,
    /// `tpe` or `halving`.
    pub strategy: String,
    /// Share of the requests a first probe sends.
    pub probe: f64,
    /// Seed of the proposals.
    pub seed: u64,
    /// Confidence of the final test.
    pub confidence: f64,
    /// The second objective the first is traded against (`tune.tradeOff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trade_off: Option<Objective>,
}

/// A second objective, filled in.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Objective {
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// `maximize` or `minimize`.
    pub goal: String,
}

/// One constraint, filled in.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Constraint {
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// The mean must be at least this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The mean must be at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// The statistic a metric is read at when the spec names none: `value` for a single figure,
/// the median for a distribution.
fn default_statistic(metric: &str) -> String {
    yardstick_spec::metrics::lookup(metric)
        .filter(|d| !d.statistics.contains(&"value"))
        .map_or("value", |d| {
            if d.statistics.contains(&"p50") {
                "p50"
            } else {
                d.statistics.first().copied().unwrap_or("value")
            }
        })
        .to_string()
}

impl Settings {
    /// The settings of `spec.tune`, when there is one.
    pub fn of(spec: &Spec) -> Option<Settings> {
        let t = spec.tune.as_ref()?;
        let (objective, goal) = match (&t.maximize, &t.minimize) {
            (Some(m), _) => (m.clone(), "maximize"),
            (None, Some(m)) => (m.clone(), "minimize"),
            (None, None) => return None,
        };
        let statistic = t
            .statistic
            .clone()
            .unwrap_or_else(|| default_statistic(&objective));
        Some(Settings {
            statistic,
            goal: goal.into(),
            constraints: t
                .subject_to
                .iter()
                .flatten()
                .filter_map(|c| {
                    let metric = c.metric.clone()?;
                    Some(Constraint {
                        statistic: c
                            .statistic
                            .clone()
                            .unwrap_or_else(|| default_statistic(&metric)),
                        metric,
                        min: c.min,
                        max: c.max,
                    })
                })
                .collect(),
            objective,
            budget: t.budget.unwrap_or(16) as usize,
            strategy: match t.strategy.unwrap_or(TuneStrategy::Tpe) {
                TuneStrategy::Halving => "halving",
                TuneStrategy::Tpe | TuneStrategy::Bayesian => "tpe",
            }
            .into(),
            probe: t.probe.unwrap_or(0.25),
            seed: t.seed.unwrap_or(0),
            trade_off: t.trade_off.as_ref().and_then(|o| {
                let (metric, goal) = match (&o.maximize, &o.minimize) {
                    (Some(m), _) => (m.clone(), "maximize"),
                    (None, Some(m)) => (m.clone(), "minimize"),
                    (None, None) => return None,
                };
                Some(Objective {
                    statistic: o
                        .statistic
                        .clone()
                        .unwrap_or_else(|| default_statistic(&metric)),
                    metric,
                    goal: goal.into(),
                })
            }),
            confidence: spec
                .trials
                .as_ref()
                .and_then(|x| x.confidence_level)
                .unwrap_or(0.95),
        })
    }

    fn maximize(&self) -> bool {
        self.goal == "maximize"
    }

    /// `a` is better than `b`.
    fn better(&self, a: f64, b: f64) -> bool {
        if self.maximize() { a > b } else { a < b }
    }

    /// `a` before `b` when it is the better objective value (equal otherwise).
    fn compare(&self, a: f64, b: f64) -> std::cmp::Ordering {
        if self.better(a, b) {
            std::cmp::Ordering::Less
        } else if self.better(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }

    /// Whether `a` dominates `b` (objective, second objective): at least as good in both and
    /// better in one.
    fn dominates(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        let second_better = |x: f64, y: f64| match &self.trade_off {
            Some(o) if o.goal == "maximize" => x > y,
            _ => x < y,
        };
        let no_worse = !self.better(b.0, a.0) && !second_better(b.1, a.1);
        no_worse && (self.better(a.0, b.0) || second_better(a.1, b.1))
    }

    /// Each feasible treatment's Pareto rank over the two objectives (0: on the front; 1: on the
    /// front once those are removed; ...), `usize::MAX` for the rest. Without a second objective
    /// the rank is the position by the objective.
    fn ranks(&self, ms: &[&Measured]) -> Vec<usize> {
        let pairs: Vec<Option<(f64, f64)>> = ms
            .iter()
            .map(|m| match (m.feasible, m.objective, m.second) {
                (true, Some(a), Some(b)) if self.trade_off.is_some() => Some((a, b)),
                (true, Some(a), _) if self.trade_off.is_none() => Some((a, 0.0)),
                _ => None,
            })
            .collect();
        let mut rank = vec![usize::MAX; ms.len()];
        let mut level = 0;
        loop {
            let free: Vec<usize> = (0..ms.len())
                .filter(|&i| rank[i] == usize::MAX && pairs[i].is_some())
                .collect();
            if free.is_empty() {
                break;
            }
            let front: Vec<usize> = free
                .iter()
                .copied()
                .filter(|&i| {
                    !free.iter().any(|&j| {
                        j != i && self.dominates(pairs[j].expect("kept"), pairs[i].expect("kept"))
                    })
                })
                .collect();
            for i in front {
                rank[i] = level;
            }
            level += 1;
        }
        rank
    }

    /// `ms` ordered as the search ranks them: by Pareto rank over the two objectives (with a
    /// second objective), then by the objective; infeasible treatments last.
    fn order<T>(&self, v: &mut Vec<T>, m: impl Fn(&T) -> &Measured) {
        let ranks = self.ranks(&v.iter().map(&m).collect::<Vec<_>>());
        let mut keyed: Vec<(usize, T)> = ranks.into_iter().zip(v.drain(..)).collect();
        keyed.sort_by(|(ra, a), (rb, b)| {
            ra.cmp(rb).then_with(|| {
                self.compare(
                    m(a).objective.unwrap_or(f64::NAN),
                    m(b).objective.unwrap_or(f64::NAN),
                )
            })
        });
        v.extend(keyed.into_iter().map(|(_, x)| x));
    }
}

/// What one treatment measured in one round.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Measured {
    /// The treatment (`factor=value/...`).
    pub treatment: String,
    /// Its factors' levels.
    pub values: BTreeMap<String, String>,
    /// The round's run.
    pub run_id: String,
    /// Share of the requests it sent (1 in the final run).
    pub fidelity: f64,
    /// The point the objective was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    /// The objective's mean over the round's replicates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// Its interval (two replicates or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
    /// The second objective's mean (`tune.tradeOff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second: Option<f64>,
    /// Its interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_ci: Option<[f64; 2]>,
    /// Whether it counts: its server started and it met every constraint.
    pub feasible: bool,
    /// Why it does not count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `tune.json`: the search and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TuneReport {
    /// The settings.
    pub settings: Settings,
    /// Treatments in the whole space.
    pub space: usize,
    /// Each probe round's run, in order.
    pub probe_runs: Vec<String>,
    /// Every probe, in order.
    pub probes: Vec<Measured>,
    /// The final run.
    pub final_run: String,
    /// The finalists as the final run measured them, best first.
    pub finalists: Vec<Measured>,
    /// The best feasible treatment of the final run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best: Option<Measured>,
    /// Whether the best beats the runner-up at the spec's confidence (Welch's t-test on their
    /// replicates); `None` without a feasible runner-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub significantly_better: Option<bool>,
    /// The test's two-sided p-value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// With a second objective: the finalists on the Pareto front of the final run's means
    /// (none does better on both), best objective first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pareto_front: Vec<String>,
    /// Runs of earlier rounds this search took from the store instead of measuring them again
    /// (`yardstick run --resume`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resumed_from: Vec<String>,
    /// Seconds spent measuring probes (their steps), and the final run's steps.
    pub probe_seconds: f64,
    /// See `probe_seconds`.
    pub final_seconds: f64,
}

impl TuneReport {
    /// The answer as `yardstick run` prints it.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let s = &self.settings;
        let mut out = format!(
            "tune: {} {} ({}), {} of {} treatment(s) probed with {} ({} probe run(s), {:.0} s measuring), final run {} ({:.0} s)\n",
            s.goal,
            s.objective,
            s.statistic,
            self.probes
                .iter()
                .map(|p| &p.treatment)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            self.space,
            s.strategy,
            self.probe_runs.len(),
            self.probe_seconds,
            self.final_run,
            self.final_seconds,
        );
        if !self.resumed_from.is_empty() {
            let _ = writeln!(
                out,
                "  resumed: {} earlier round(s) taken from the store ({})",
                self.resumed_from.len(),
                self.resumed_from.join(", ")
            );
        }
        if self.final_run.is_empty() {
            out.push_str("  interrupted before the final run: continue the search with --resume\n");
            return out;
        }
        for (i, f) in self.finalists.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {} {}: {}{}",
                match i {
                    0 => "best     ",
                    1 => "runner-up",
                    _ => "finalist ",
                },
                f.treatment,
                describe(f),
                self.settings
                    .trade_off
                    .as_ref()
                    .filter(|_| f.feasible)
                    .map(|o| format!("; {} {} {}", o.metric, o.statistic, describe_second(f)))
                    .unwrap_or_default()
            );
        }
        match (self.significantly_better, self.p_value) {
            (Some(true), Some(p)) => {
                let _ = writeln!(
                    out,
                    "  the best is significantly better than the runner-up (Welch p = {p:.3})"
                );
            }
            (Some(false), Some(p)) => {
                let _ = writeln!(
                    out,
                    "  the best is NOT significantly better than the runner-up (Welch p = {p:.3}): either will do"
                );
            }
            _ => {}
        }
        if let Some(o) = &self.settings.trade_off
            && !self.pareto_front.is_empty()
        {
            let _ = writeln!(
                out,
                "  Pareto front ({} {} {} vs {} {} {}; none of the others does better on both): {}",
                s.goal,
                s.objective,
                s.statistic,
                o.goal,
                o.metric,
                o.statistic,
                self.pareto_front.join(", ")
            );
        }
        if self.best.is_none() {
            out.push_str("  no treatment was feasible\n");
        }
        out
    }
}

/// A mean with its interval when it has one.
fn figure(mean: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (mean, ci) {
        (Some(v), Some([lo, hi])) => format!("{v:.4} [{lo:.4}, {hi:.4}]"),
        (Some(v), None) => format!("{v:.4}"),
        _ => "not measured".into(),
    }
}

fn describe_second(m: &Measured) -> String {
    figure(m.second, m.second_ci)
}

fn describe(m: &Measured) -> String {
    match &m.reason {
        Some(r) if !m.feasible => format!("infeasible ({r})"),
        _ => figure(m.objective, m.ci),
    }
}

/// A treatment as level indices, one per factor (the sweep's factor order).
type Combo = Vec<usize>;

/// The label every round of one search carries (its value is the search's token), so that
/// `yardstick run --resume` finds the rounds a search already measured.
pub const SEARCH_LABEL: &str = "yardstick.tune.search";

/// A round an earlier attempt of this search stored.
#[derive(Debug, Clone)]
struct Prior {
    run_id: String,
    complete: bool,
    spec_sha256: String,
}

/// The earlier rounds of the search `run_id` belongs to: its token and its runs, oldest first.
fn search_of(store: &Path, run_id: &str) -> Result<(String, VecDeque<Prior>), RunError> {
    let runs = store.join("runs");
    let dir = crate::run_dir(store, run_id)?;
    let labels = |dir: &Path| -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(dir.join("spec.yaml")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(v["metadata"]["labels"].clone())
    };
    let token = labels(&dir)
        .and_then(|l| l[SEARCH_LABEL].as_str().map(str::to_string))
        .ok_or_else(|| {
            RunError::Invalid(format!(
                "run {run_id} is not a round of a tuned search (its spec has no `{SEARCH_LABEL}` label)"
            ))
        })?;
    let mut prior = Vec::new();
    for e in std::fs::read_dir(&runs).map_err(yardstick_store::StoreError::from)? {
        let Ok(e) = e else { continue };
        let Some(l) = labels(&e.path()) else { continue };
        if l[SEARCH_LABEL].as_str() != Some(token.as_str()) {
            continue;
        }
        let m = yardstick_store::run::read_manifest(&e.path())?;
        let complete = m.effective_status() == yardstick_store::RunStatus::Complete;
        if complete && l["yardstick.tune"] == "final" {
            return Err(RunError::Invalid(format!(
                "the search of run {run_id} has finished: its final run is {} (`yardstick show {}`); run the spec again without --resume for a new search",
                m.run_id, m.run_id
            )));
        }
        prior.push(Prior {
            run_id: m.run_id.clone(),
            complete,
            spec_sha256: m.spec_sha256.clone(),
        });
    }
    // Run ids are ULIDs: their order is the order the rounds started in.
    prior.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok((token, prior.into()))
}

/// A token no other search shares.
fn fresh_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// What the rounds so far hold: their runs, probes, time, and what an earlier attempt stored.
struct Rounds {
    prior: VecDeque<Prior>,
    resumed: Vec<String>,
    probe_runs: Vec<String>,
    probes: Vec<Measured>,
    probe_seconds: f64,
    /// The run that was interrupted, which ends the search for now.
    interrupted: Option<RunOutcome>,
}

/// Runs a tuned spec: probe rounds, then the final run, whose outcome is returned with the
/// report (also stored in it as `tune.json`, beside `best.yaml`). `make_opts` gives the
/// options of each round's run (a fresh progress callback, the same store and cancellation).
///
/// `resume` names a run of an earlier, interrupted attempt (any of its rounds): the rounds it
/// finished are taken from the store as they are, the one it interrupted is continued, and
/// the search goes on from there. The search is deterministic given its seed and what it
/// measured, so it asks for the same rounds again; one whose spec differs is refused.
///
/// An interrupted round ends the search with that round's (incomplete) outcome and a report
/// without an answer.
pub fn execute_tuned(
    spec: &BenchmarkRun,
    resume: Option<&str>,
    make_opts: &mut dyn FnMut() -> RunOptions,
    on_event: &mut dyn FnMut(Event),
) -> Result<(RunOutcome, TuneReport), RunError> {
    let body = spec
        .spec
        .as_ref()
        .ok_or_else(|| RunError::Invalid("the spec has no `spec`".into()))?;
    let settings = Settings::of(body)
        .ok_or_else(|| RunError::Invalid("the spec has no `tune` objective".into()))?;
    let sweep = body
        .sweep
        .as_ref()
        .ok_or_else(|| RunError::Invalid("a tuner needs `sweep.factors`".into()))?;
    let levels = yardstick_spec::sweep::levels(sweep);
    let space = yardstick_spec::sweep::grid_size(&levels) as usize;
    let full = plan(spec);
    let (token, prior) = match resume {
        Some(id) => search_of(&make_opts().store, id)?,
        None => (fresh_token(), VecDeque::new()),
    };
    let mut spec = spec.clone();
    spec.metadata
        .get_or_insert_with(Default::default)
        .labels
        .insert(SEARCH_LABEL.into(), token);
    let spec = &spec;
    let index_of = |c: &Combo| -> usize {
        c.iter()
            .zip(&levels)
            .fold(0, |i, (&k, (_, ls))| i * ls.len() + k)
    };
    let mut rounds = Rounds {
        prior,
        resumed: Vec::new(),
        probe_runs: Vec::new(),
        probes: Vec::new(),
        probe_seconds: 0.0,
        interrupted: None,
    };
    // A probe round: `None` once it was interrupted.
    let mut round = |combos: &[Combo],
                     fidelity: f64,
                     rounds: &mut Rounds,
                     on_event: &mut dyn FnMut(Event)|
     -> Result<Option<Vec<Measured>>, RunError> {
        let treatments: Vec<usize> = combos.iter().map(&index_of).collect();
        on_event(Event::Note(format!(
            "tune: probing {} ({:.0} % of the requests)",
            treatments
                .iter()
                .map(|&t| full.treatments[t].id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            fidelity * 100.0
        )));
        let r = run_round(
            spec,
            &full,
            &treatments,
            Some(fidelity),
            &settings,
            make_opts,
            None,
            rounds,
        )?;
        rounds.probe_runs.push(r.run_id.clone());
        if let Some(o) = r
            .outcome
            .filter(|o| o.status != yardstick_store::RunStatus::Complete)
        {
            rounds.interrupted = Some(o);
            return Ok(None);
        }
        rounds.probe_seconds += r.seconds;
        for m in &r.measured {
            on_event(Event::Note(format!(
                "tune: {} {}{}",
                m.treatment,
                describe(m),
                settings
                    .trade_off
                    .as_ref()
                    .filter(|_| m.feasible)
                    .map(|o| format!("; {} {}", o.metric, describe_second(m)))
                    .unwrap_or_default()
            )));
        }
        rounds.probes.extend(r.measured.iter().cloned());
        Ok(Some(r.measured))
    };
    let budget = settings.budget.min(space);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(settings.seed);
    // Every treatment the search measured, as it ranks them (see `Settings::order`).
    let ranked: Vec<(Combo, Measured)> = 'search: {
        if settings.strategy == "halving" {
            // A quarter of the budget refines around the last rung's best (its unprobed
            // neighbours, at that rung's share of the requests): a Latin hypercube of a few
            // dozen treatments rarely holds the best one, but it lands near it.
            let refine = budget / 4;
            let first = budget - refine;
            let mut alive = crate::sweep::latin_hypercube(&levels, first, &mut rng);
            if alive.len() < first {
                // Fill with distinct random treatments (a small space repeats combinations).
                for c in crate::sweep::random(&levels, space, &mut rng) {
                    if alive.len() >= first {
                        break;
                    }
                    if !alive.contains(&c) {
                        alive.push(c);
                    }
                }
            }
            let probed = alive.clone();
            let mut fidelity = settings.probe;
            loop {
                let Some(measured) = round(&alive, fidelity, &mut rounds, on_event)? else {
                    break 'search Vec::new();
                };
                let mut kept: Vec<(Combo, Measured)> =
                    alive.iter().cloned().zip(measured).collect();
                kept.retain(|(_, m)| m.feasible && m.objective.is_some());
                settings.order(&mut kept, |(_, m)| m);
                let keep = alive.len().div_ceil(3).max(2);
                // Two survivors go to the final run: probing them again would buy nothing.
                if keep <= 2 || kept.len() <= 2 || fidelity >= 1.0 {
                    let mut next: Vec<Combo> = Vec::new();
                    for (best, _) in incumbents(&settings, &kept) {
                        for c in neighbours(best, &levels) {
                            if next.len() < refine && !probed.contains(&c) && !next.contains(&c) {
                                next.push(c);
                            }
                        }
                    }
                    if !next.is_empty() {
                        let Some(measured) = round(&next, fidelity, &mut rounds, on_event)? else {
                            break 'search Vec::new();
                        };
                        kept.extend(
                            next.into_iter()
                                .zip(measured)
                                .filter(|(_, m)| m.feasible && m.objective.is_some()),
                        );
                        settings.order(&mut kept, |(_, m)| m);
                    }
                    break 'search kept;
                }
                alive = kept.into_iter().take(keep).map(|(c, _)| c).collect();
                fidelity = (fidelity * 3.0).min(1.0);
            }
        }
        // Small batches: the estimator learns from every pair of probes.
        let batch = 2;
        let mut tpe_rng =
            <rand_tpe::rngs::SmallRng as rand_tpe::SeedableRng>::seed_from_u64(settings.seed);
        let estimators = || -> Vec<_> {
            levels
                .iter()
                .map(|(_, ls)| {
                    // The better quarter of the probes is "good" (the crate's default tenth
                    // leaves one or two observations there at a dozen probes).
                    tpe::TpeOptimizerBuilder::new()
                        .gamma(0.25)
                        .build(
                            tpe::histogram_estimator(),
                            tpe::categorical_range(ls.len()).expect("a factor has levels"),
                        )
                        .expect("valid settings")
                })
                .collect()
        };
        let mut optimizers = estimators();
        let mut tried: Vec<(Combo, Measured)> = Vec::new();
        while tried.len() < budget {
            if settings.trade_off.is_some() && !tried.is_empty() {
                // Pareto ranks change as probes arrive: the estimators learn them afresh (an
                // infeasible treatment is the worst there is).
                optimizers = estimators();
                let ranks = settings.ranks(&tried.iter().map(|(_, m)| m).collect::<Vec<_>>());
                for ((c, _), r) in tried.iter().zip(ranks) {
                    let value = if r == usize::MAX { 1e300 } else { r as f64 };
                    for (o, &k) in optimizers.iter_mut().zip(c) {
                        let _ = o.tell(k as f64 + 0.5, value);
                    }
                }
            }
            let n = batch.min(budget - tried.len());
            let mut next: Vec<Combo> = Vec::new();
            // The last third of the budget refines around the best so far (with a second
            // objective, around each treatment on the front): its neighbours (one factor one
            // level away) that no probe measured yet.
            if tried.len() >= budget - budget / 3 {
                for (best, _) in incumbents(&settings, &tried) {
                    for c in neighbours(best, &levels) {
                        if next.len() < n
                            && !tried.iter().any(|(t, _)| *t == c)
                            && !next.contains(&c)
                        {
                            next.push(c);
                        }
                    }
                }
            }
            while next.len() < n {
                let mut c: Combo = Vec::new();
                for (o, (_, ls)) in optimizers.iter_mut().zip(&levels) {
                    let x = o.ask(&mut tpe_rng).unwrap_or(0.0);
                    c.push((x.max(0.0) as usize).min(ls.len() - 1));
                }
                let seen = |c: &Combo| tried.iter().any(|(t, _)| t == c) || next.contains(c);
                if seen(&c) {
                    // TPE asked for a treatment already measured: take an unmeasured one.
                    match crate::sweep::random(&levels, space, &mut rng)
                        .into_iter()
                        .find(|c| !seen(c))
                    {
                        Some(fresh) => c = fresh,
                        None => break,
                    }
                }
                next.push(c);
            }
            if next.is_empty() {
                break;
            }
            let Some(measured) = round(&next, settings.probe, &mut rounds, on_event)? else {
                break 'search Vec::new();
            };
            for (c, m) in next.into_iter().zip(measured) {
                if settings.trade_off.is_none() {
                    // TPE minimises; an infeasible treatment is the worst there is.
                    let value = match (m.feasible, m.objective) {
                        (true, Some(v)) if settings.maximize() => -v,
                        (true, Some(v)) => v,
                        _ => 1e300,
                    };
                    for (o, &k) in optimizers.iter_mut().zip(&c) {
                        let _ = o.tell(k as f64 + 0.5, value);
                    }
                }
                tried.push((c, m));
            }
        }
        tried.retain(|(_, m)| m.feasible && m.objective.is_some());
        settings.order(&mut tried, |(_, m)| m);
        tried
    };
    let Rounds {
        mut prior,
        mut resumed,
        probe_runs,
        probes,
        probe_seconds,
        interrupted,
    } = rounds;
    let mut partial = TuneReport {
        settings: settings.clone(),
        space,
        probe_runs,
        probes,
        final_run: String::new(),
        finalists: Vec::new(),
        best: None,
        significantly_better: None,
        p_value: None,
        pareto_front: Vec::new(),
        resumed_from: resumed.clone(),
        probe_seconds,
        final_seconds: 0.0,
    };
    if let Some(outcome) = interrupted {
        return Ok((outcome, partial));
    }
    // Two finalists; with a second objective, the probes' Pareto front (two to four of it).
    let finalists_n = match &settings.trade_off {
        None => 2,
        Some(_) => settings
            .ranks(&ranked.iter().map(|(_, m)| m).collect::<Vec<_>>())
            .iter()
            .filter(|&&r| r == 0)
            .count()
            .clamp(2, 4),
    };
    let finalists: Vec<usize> = ranked
        .iter()
        .take(finalists_n)
        .map(|(c, _)| index_of(c))
        .collect();
    if finalists.is_empty() {
        return Err(RunError::Workload(format!(
            "tune: none of the {} probed treatment(s) was feasible: {}",
            partial.probes.len(),
            partial
                .probes
                .iter()
                .map(|p| format!("{}: {}", p.treatment, describe(p)))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    on_event(Event::Note(format!(
        "tune: the final run measures {} as the spec says",
        finalists
            .iter()
            .map(|&t| full.treatments[t].id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )));
    // The answer is computed from the final run's own results before it is sealed, so the run
    // carries it.
    let report_slot: std::sync::Arc<std::sync::Mutex<Option<TuneReport>>> = Default::default();
    let slot = report_slot.clone();
    let spec_for_hook = spec.clone();
    let full_for_hook = full.clone();
    let final_treatments = finalists.clone();
    let for_hook = partial.clone();
    let hook: crate::BeforeSeal = Box::new(move |summary: &RunSummary, dir: &Path| {
        let (report, best_yaml) = answer(
            for_hook,
            &spec_for_hook,
            &full_for_hook,
            &finalists,
            summary,
            dir,
        );
        let json = serde_json::to_vec_pretty(&report).expect("JSON");
        *slot.lock().expect("not poisoned") = Some(report);
        let mut files = vec![("tune.json".to_string(), json)];
        if let Some(y) = best_yaml {
            files.push(("best.yaml".to_string(), y.into_bytes()));
        }
        files
    });
    let mut last = Rounds {
        prior: std::mem::take(&mut prior),
        resumed: std::mem::take(&mut resumed),
        probe_runs: Vec::new(),
        probes: Vec::new(),
        probe_seconds: 0.0,
        interrupted: None,
    };
    let r = run_round(
        spec,
        &full,
        &final_treatments,
        None,
        &settings,
        make_opts,
        Some(hook),
        &mut last,
    )?;
    let outcome = r
        .outcome
        .ok_or_else(|| RunError::Internal("the final run was not run".into()))?;
    if outcome.status != yardstick_store::RunStatus::Complete {
        partial.resumed_from = last.resumed;
        return Ok((outcome, partial));
    }
    let report = report_slot
        .lock()
        .expect("not poisoned")
        .take()
        .ok_or_else(|| RunError::Internal("the final run ended before its answer".into()))?;
    Ok((outcome, report))
}

/// The treatments to refine around: the best so far, or with a second objective every one on
/// the Pareto front (infeasible ones never).
fn incumbents<'a>(s: &Settings, tried: &'a [(Combo, Measured)]) -> Vec<&'a (Combo, Measured)> {
    let mut ordered: Vec<&(Combo, Measured)> = tried.iter().collect();
    s.order(&mut ordered, |x| &x.1);
    let ranks = s.ranks(&ordered.iter().map(|x| &x.1).collect::<Vec<_>>());
    ordered
        .into_iter()
        .zip(ranks)
        .filter(|(_, r)| *r == 0)
        .map(|(x, _)| x)
        .take(if s.trade_off.is_some() { usize::MAX } else { 1 })
        .collect()
}

/// The treatments one factor one level away from `c`.
fn neighbours(c: &Combo, levels: &[(String, Vec<String>)]) -> Vec<Combo> {
    let mut out = Vec::new();
    for (f, (_, ls)) in levels.iter().enumerate() {
        for k in [c[f].checked_sub(1), Some(c[f] + 1)].into_iter().flatten() {
            if k < ls.len() {
                let mut n = c.clone();
                n[f] = k;
                out.push(n);
            }
        }
    }
    out
}

fn sort_best_first<T>(v: &mut [T], s: &Settings, key: impl Fn(&T) -> f64) {
    v.sort_by(|a, b| s.compare(key(a), key(b)));
}

/// One round's run and what each of its treatments measured.
struct Round {
    run_id: String,
    /// `None` for a probe round an earlier attempt finished (taken from the store).
    outcome: Option<RunOutcome>,
    measured: Vec<Measured>,
    /// The steps' seconds.
    seconds: f64,
}

/// One round: a run of `treatments` (probe fidelity, one replicate, `<name>.probe`; or the
/// spec as it is, for the final run), and what each treatment measured. Seconds are the sum of
/// the steps' durations. When an earlier attempt of the search stored this round, its run is
/// taken as it is (finished) or continued (interrupted).
#[allow(clippy::too_many_arguments)]
fn run_round(
    spec: &BenchmarkRun,
    full: &Plan,
    treatments: &[usize],
    fidelity: Option<f64>,
    settings: &Settings,
    make_opts: &mut dyn FnMut() -> RunOptions,
    before_seal: Option<crate::BeforeSeal>,
    rounds: &mut Rounds,
) -> Result<Round, RunError> {
    let mut round = spec.clone();
    if let Some(body) = round.spec.as_mut() {
        body.tune = None;
        if let Some(f) = fidelity {
            scale(body, f);
            if let Some(t) = body.trials.as_mut() {
                t.replicates = Some(1);
            }
            if let Some(m) = round.metadata.as_mut() {
                m.name = m.name.as_ref().map(|n| format!("{n}.probe"));
                m.labels.insert("yardstick.tune".into(), "probe".into());
            }
        } else if let Some(m) = round.metadata.as_mut() {
            m.labels.insert("yardstick.tune".into(), "final".into());
        }
    }
    let ids: Vec<String> = full
        .points
        .iter()
        .filter(|p| p.treatment.is_some_and(|t| treatments.contains(&t)))
        .map(|p| p.id.clone())
        .collect();
    let mut opts = make_opts();
    opts.only_points = Some(ids);
    opts.before_seal = before_seal;
    // The stored spec is the one that ran (a probe's fewer requests and single replicate).
    let text = serde_json::to_string_pretty(&round).expect("JSON");
    let mut continued = None;
    if let Some(p) = rounds.prior.pop_front() {
        if p.spec_sha256 != yardstick_store::fsutil::sha256_bytes(text.as_bytes()) {
            return Err(RunError::Invalid(format!(
                "run {} of this search ran another round than the search asks for now (the spec or the store changed since); run the spec again without --resume",
                p.run_id
            )));
        }
        let dir = crate::run_dir(&opts.store, &p.run_id)?;
        if p.complete && fidelity.is_some() {
            let summary: RunSummary = std::fs::read(dir.join("summary.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .ok_or_else(|| {
                    RunError::Invalid(format!("run {} has no readable summary.json", p.run_id))
                })?;
            rounds.resumed.push(p.run_id.clone());
            let measured = treatments
                .iter()
                .map(|&t| {
                    measure(
                        full,
                        t,
                        &summary,
                        &p.run_id,
                        fidelity.unwrap_or(1.0),
                        settings,
                    )
                })
                .collect();
            return Ok(Round {
                seconds: step_seconds(&dir),
                run_id: p.run_id,
                outcome: None,
                measured,
            });
        }
        rounds.resumed.push(p.run_id.clone());
        continued = Some(p.run_id);
    }
    let outcome = execute(&text, &round, continued.as_deref(), opts)?;
    let summary = outcome.summary.clone().unwrap_or_default();
    let measured = if outcome.status == yardstick_store::RunStatus::Complete {
        treatments
            .iter()
            .map(|&t| {
                measure(
                    full,
                    t,
                    &summary,
                    &outcome.run_id,
                    fidelity.unwrap_or(1.0),
                    settings,
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Round {
        seconds: step_seconds(&outcome.dir),
        run_id: outcome.run_id.clone(),
        outcome: Some(outcome),
        measured,
    })
}

/// Scales every serve layer's request budget to `f` of it (at least 10 requests).
fn scale(spec: &mut Spec, f: f64) {
    for c in spec
        .layers
        .iter_mut()
        .flat_map(|l| l.component.iter_mut().flatten())
    {
        if let Some(stop) = c.stop.as_mut() {
            if let Some(n) = stop.max_requests.as_mut() {
                *n = ((*n as f64 * f).ceil() as u64).max(10).min(*n);
            }
            if let Some(d) = stop.max_duration.as_mut() {
                d.0 = d.0.mul_f64(f);
            }
        }
        if let Some(cap) = c.load.as_mut().and_then(|l| l.capacity.as_mut())
            && let Some(n) = cap.probe_requests.as_mut()
        {
            *n = ((*n as f64 * f).ceil() as u64).max(10).min(*n);
        }
    }
}

/// What treatment `t` measured in a round's summary.
fn measure(
    full: &Plan,
    t: usize,
    summary: &RunSummary,
    run_id: &str,
    fidelity: f64,
    s: &Settings,
) -> Measured {
    let treatment = &full.treatments[t];
    let points: Vec<&str> = full
        .points
        .iter()
        .filter(|p| p.treatment == Some(t))
        .map(|p| p.id.as_str())
        .collect();
    let sweep_entry = summary
        .sweep
        .iter()
        .flatten()
        .find(|x| x.id == treatment.id);
    let mut m = Measured {
        treatment: treatment.id.clone(),
        values: treatment.values.clone(),
        run_id: run_id.to_string(),
        fidelity,
        point: None,
        objective: None,
        ci: None,
        second: None,
        second_ci: None,
        feasible: false,
        reason: None,
    };
    if let Some(e) = sweep_entry.filter(|e| e.status == "infeasible") {
        m.reason = e.reason.clone();
        return m;
    }
    let agg = |metric: &str, statistic: &str| {
        summary
            .points
            .iter()
            .filter(|p| points.contains(&p.id.as_str()))
            .find_map(|p| {
                p.metrics
                    .get(metric)
                    .and_then(|x| x.get(statistic))
                    .filter(|a| a.mean.is_finite())
                    .map(|a| (p.id.clone(), a.clone()))
            })
    };
    let Some((point, a)) = agg(&s.objective, &s.statistic) else {
        m.reason = Some(format!(
            "it measured no {} {} (every replicate failed, or no point reports it)",
            s.objective, s.statistic
        ));
        return m;
    };
    (m.point, m.objective, m.ci) = (Some(point), Some(a.mean), a.ci);
    if let Some(o) = &s.trade_off {
        let Some((_, a)) = agg(&o.metric, &o.statistic) else {
            m.reason = Some(format!(
                "it measured no {} {} (the objective it is traded against)",
                o.metric, o.statistic
            ));
            return m;
        };
        (m.second, m.second_ci) = (Some(a.mean), a.ci);
    }
    for c in &s.constraints {
        let Some((_, a)) = agg(&c.metric, &c.statistic) else {
            m.reason = Some(format!("it measured no {} {}", c.metric, c.statistic));
            return m;
        };
        if let Some(max) = c.max.filter(|&x| a.mean > x) {
            m.reason = Some(format!(
                "{} {} is {:.4}, above its bound {max}",
                c.metric, c.statistic, a.mean
            ));
            return m;
        }
        if let Some(min) = c.min.filter(|&x| a.mean < x) {
            m.reason = Some(format!(
                "{} {} is {:.4}, below its bound {min}",
                c.metric, c.statistic, a.mean
            ));
            return m;
        }
    }
    m.feasible = true;
    m
}

/// The seconds a run's steps took (their records' start and end), not its set-up.
fn step_seconds(dir: &Path) -> f64 {
    let Ok(points) = std::fs::read_dir(dir.join("results")) else {
        return 0.0;
    };
    let at = |s: Option<&str>| s.and_then(|s| humantime::parse_rfc3339_weak(s).ok());
    let mut total = 0.0;
    for p in points.flatten() {
        for r in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
            if let Ok(rec) = crate::read_record(&r.path())
                && let (Some(a), Some(b)) =
                    (at(rec.started_at.as_deref()), at(rec.ended_at.as_deref()))
                && let Ok(d) = b.duration_since(a)
            {
                total += d.as_secs_f64();
            }
        }
    }
    total
}

/// The replicate values of `metric` `statistic` of `point` in the run at `dir`.
fn replicate_values(
    dir: &Path,
    full: &Plan,
    point: &str,
    metric: &str,
    statistic: &str,
) -> Vec<f64> {
    let Some(p) = full.points.iter().find(|p| p.id == point) else {
        return Vec::new();
    };
    (0..full.replicates)
        .filter_map(|r| crate::read_record(&dir.join(crate::artifact_paths(p, r).1)).ok())
        .filter(|rec| !rec.failed())
        .filter_map(|rec| rec.figures().get(metric, statistic))
        .collect()
}

/// The answer from the final run's summary: the finalists best first, the test between the
/// two, and `best.yaml`.
fn answer(
    mut report: TuneReport,
    spec: &BenchmarkRun,
    full: &Plan,
    finalists: &[usize],
    summary: &RunSummary,
    dir: &Path,
) -> (TuneReport, Option<String>) {
    let s = report.settings.clone();
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut measured: Vec<Measured> = finalists
        .iter()
        .map(|&t| measure(full, t, summary, &run_id, 1.0, &s))
        .collect();
    measured.sort_by_key(|m| !m.feasible);
    let feasible = measured.iter().filter(|m| m.feasible).count();
    sort_best_first(&mut measured[..feasible], &s, |m| {
        m.objective.unwrap_or(f64::NAN)
    });
    report.final_run = run_id;
    report.final_seconds = step_seconds(dir);
    report.best = measured.first().filter(|m| m.feasible).cloned();
    if feasible >= 2 {
        let values = |m: &Measured| {
            replicate_values(
                dir,
                full,
                m.point.as_deref().unwrap_or_default(),
                &s.objective,
                &s.statistic,
            )
        };
        let (a, b) = (values(&measured[0]), values(&measured[1]));
        if let Ok(t) = yardstick_stats::hypothesis::welch_t(&a, &b) {
            report.p_value = Some(t.p_value);
            report.significantly_better = Some(t.p_value < 1.0 - s.confidence);
        }
    }
    if s.trade_off.is_some() {
        let ranks = s.ranks(&measured.iter().collect::<Vec<_>>());
        report.pareto_front = measured
            .iter()
            .zip(ranks)
            .filter(|(_, r)| *r == 0)
            .map(|(m, _)| m.treatment.clone())
            .collect();
    }
    report.finalists = measured;
    let best_yaml = report.best.as_ref().map(|b| best_yaml(spec, full, b));
    (report, best_yaml)
}

/// The spec with every factor fixed at the best treatment's level and no `tune` (runnable as it
/// is), under a header with the server's exact command line and environment.
fn best_yaml(spec: &BenchmarkRun, full: &Plan, best: &Measured) -> String {
    let mut fixed = spec.clone();
    if let Some(body) = fixed.spec.as_mut() {
        body.tune = None;
        if let Some(f) = body.sweep.as_mut().and_then(|s| s.factors.as_mut()) {
            for (name, levels) in f.iter_mut() {
                if let Some(v) = best.values.get(name) {
                    levels.retain(|l| &l.to_string() == v);
                    if levels.is_empty() {
                        *levels = vec![FactorLevel::Text(v.clone())];
                    }
                }
            }
        }
    }
    let mut header = format!(
        "# The best treatment yardstick's tuner found: {}\n",
        best.treatment
    );
    if let Some(server) = full
        .treatments
        .iter()
        .find(|t| t.id == best.treatment)
        .and_then(|t| t.server.as_ref())
    {
        header.push_str("# Its server ({port} is a free port):\n#   ");
        for (k, v) in &server.env {
            header.push_str(&format!("{k}={} ", shell_quote(v)));
        }
        header.push_str(
            &server
                .argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
        );
        header.push('\n');
    }
    header.push_str("# Run it again as it is: yardstick run best.yaml\n");
    // JSON is YAML: the spec exactly as the types hold it.
    header + &serde_json::to_string_pretty(&fixed).expect("JSON") + "\n"
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@{}".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether `spec` is tuned.
pub fn is_tuned(spec: &BenchmarkRun) -> bool {
    spec.spec.as_ref().is_some_and(|s| s.tune.is_some())
}

/// The direction the catalogue gives the objective, when it disagrees with the goal: a warning
/// worth printing (maximizing a latency is usually a mistake).
pub fn goal_warning(spec: &BenchmarkRun) -> Option<String> {
    let s = Settings::of(spec.spec.as_ref()?)?;
    let d = yardstick_spec::metrics::lookup(&s.objective)?;
    let against = match d.direction {
        Direction::HigherIsBetter => !s.maximize(),
        Direction::LowerIsBetter => s.maximize(),
        _ => false,
    };
    against.then(|| {
        format!(
            "tune: {} {} although the catalogue says {} is better for it",
            s.goal,
            s.objective,
            if s.maximize() { "lower" } else { "higher" }
        )
    })
}

/// What a tuned spec will do, for the plan's text (`None` when it is not tuned).
pub fn plan_line(spec: &BenchmarkRun, plan: &Plan) -> Option<String> {
    let s = Settings::of(spec.spec.as_ref()?)?;
    let space = plan.treatments.len();
    Some(format!(
        "tune: {} {} ({}){} over {space} treatment(s): {} probe(s) with {}, one replicate at {:.0} % of the requests each, then {} in a final run of {} replicate(s); the points above are the space, not the steps",
        s.goal,
        s.objective,
        s.statistic,
        s.trade_off
            .as_ref()
            .map(|o| format!(" against {} {} ({})", o.goal, o.metric, o.statistic))
            .unwrap_or_default(),
        s.budget.min(space),
        s.strategy,
        s.probe * 100.0,
        if s.trade_off.is_some() {
            "the probes' Pareto front (2 to 4 treatments)"
        } else {
            "the best two"
        },
        plan.replicates
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_statistics_follow_the_catalogue() {
        assert_eq!(default_statistic("request_throughput"), "value");
        assert_eq!(default_statistic("ttft_ms"), "p50");
    }

    #[test]
    fn probes_scale_the_request_budget_but_keep_ten() {
        let mut spec: Spec = serde_json::from_value(serde_json::json!({
            "layers": {"component": [
                {"kind": "serve", "stop": {"maxRequests": 100, "maxDuration": "40s"}},
                {"kind": "serve", "stop": {"maxRequests": 12}}
            ]}
        }))
        .unwrap();
        scale(&mut spec, 0.25);
        let c = spec.layers.unwrap().component.unwrap();
        let stop = c[0].stop.as_ref().unwrap();
        assert_eq!(stop.max_requests, Some(25));
        assert_eq!(stop.max_duration.unwrap().0.as_secs(), 10);
        assert_eq!(c[1].stop.as_ref().unwrap().max_requests, Some(10));
    }

    fn settings(trade_off: Option<&str>) -> Settings {
        Settings {
            objective: "request_throughput".into(),
            statistic: "value".into(),
            goal: "maximize".into(),
            constraints: Vec::new(),
            budget: 8,
            strategy: "tpe".into(),
            probe: 0.25,
            seed: 0,
            confidence: 0.95,
            trade_off: trade_off.map(|goal| Objective {
                metric: "tpot_ms".into(),
                statistic: "p50".into(),
                goal: goal.into(),
            }),
        }
    }

    fn probe(name: &str, objective: f64, second: f64, feasible: bool) -> Measured {
        Measured {
            treatment: name.into(),
            values: BTreeMap::new(),
            run_id: String::new(),
            fidelity: 1.0,
            point: None,
            objective: Some(objective),
            ci: None,
            second: Some(second),
            second_ci: None,
            feasible,
            reason: None,
        }
    }

    #[test]
    fn pareto_ranks_peel_fronts_and_leave_the_infeasible_last() {
        // (throughput up, time per token down)
        let ms = [
            probe("a", 100.0, 9.0, true),  // front: the most throughput
            probe("b", 60.0, 2.0, true),   // front: the fastest tokens
            probe("c", 50.0, 9.5, true),   // dominated by a and b; second front? no: by a
            probe("d", 80.0, 5.0, true),   // front: between
            probe("e", 70.0, 6.0, true),   // dominated by d only: second front
            probe("f", 500.0, 1.0, false), // infeasible: never ranked
        ];
        let refs: Vec<&Measured> = ms.iter().collect();
        let s = settings(Some("minimize"));
        assert_eq!(s.ranks(&refs), vec![0, 0, 2, 0, 1, usize::MAX]);
        let mut ordered = refs.clone();
        s.order(&mut ordered, |m| m);
        let names: Vec<&str> = ordered.iter().map(|m| m.treatment.as_str()).collect();
        assert_eq!(names, ["a", "d", "b", "e", "c", "f"]);
        // Maximizing the second objective turns the trade around: b (2.0) loses to everyone.
        let s = settings(Some("maximize"));
        assert_eq!(s.ranks(&refs)[1], 2);
        // Without a second objective the rank is the order by the objective alone.
        let s = settings(None);
        assert_eq!(s.ranks(&refs), vec![0, 3, 4, 1, 2, usize::MAX]);
        // Equal on both: neither dominates the other.
        let twins = [probe("x", 1.0, 1.0, true), probe("y", 1.0, 1.0, true)];
        let s = settings(Some("minimize"));
        assert_eq!(s.ranks(&twins.iter().collect::<Vec<_>>()), vec![0, 0]);
    }

    #[test]
    fn shell_quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("--port"), "--port");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
