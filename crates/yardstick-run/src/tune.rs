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
//! budget on the unprobed neighbours of the best so far (one factor one level away); `halving` probes a Latin
//! hypercube of `budget` treatments and keeps the better third at each rung, with three times
//! the requests, until two remain. The answer — the best treatment with its interval, whether it
//! beats the runner-up by Welch's test at the spec's confidence, and every probe — is
//! `tune.json` in the final run, beside `best.yaml`: the spec with each factor fixed at the best
//! level (runnable as it is) and the server's exact command line and environment.

use std::collections::BTreeMap;
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
        for (i, f) in self.finalists.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {} {}: {}",
                if i == 0 { "best     " } else { "runner-up" },
                f.treatment,
                describe(f)
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
        if self.best.is_none() {
            out.push_str("  no treatment was feasible\n");
        }
        out
    }
}

fn describe(m: &Measured) -> String {
    match (m.objective, m.ci, &m.reason) {
        (_, _, Some(r)) if !m.feasible => format!("infeasible ({r})"),
        (Some(v), Some([lo, hi]), _) => format!("{v:.4} [{lo:.4}, {hi:.4}]"),
        (Some(v), None, _) => format!("{v:.4}"),
        _ => "not measured".into(),
    }
}

/// A treatment as level indices, one per factor (the sweep's factor order).
type Combo = Vec<usize>;

/// Runs a tuned spec: probe rounds, then the final run, whose outcome is returned with the
/// report (also stored in it as `tune.json`, beside `best.yaml`). `make_opts` gives the
/// options of each round's run (a fresh progress callback, the same store and cancellation).
pub fn execute_tuned(
    spec: &BenchmarkRun,
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
    let index_of = |c: &Combo| -> usize {
        c.iter()
            .zip(&levels)
            .fold(0, |i, (&k, (_, ls))| i * ls.len() + k)
    };
    let mut probes: Vec<Measured> = Vec::new();
    let mut probe_runs = Vec::new();
    let mut probe_seconds = 0.0;
    let mut round = |combos: &[Combo],
                     fidelity: f64,
                     probes: &mut Vec<Measured>,
                     on_event: &mut dyn FnMut(Event)|
     -> Result<Vec<Measured>, RunError> {
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
        let (outcome, measured, seconds) = run_round(
            spec,
            &full,
            &treatments,
            Some(fidelity),
            &settings,
            make_opts,
            None,
        )?;
        probe_runs.push(outcome.run_id.clone());
        probe_seconds += seconds;
        for m in &measured {
            on_event(Event::Note(format!(
                "tune: {} {}",
                m.treatment,
                describe(m)
            )));
        }
        probes.extend(measured.iter().cloned());
        Ok(measured)
    };
    let budget = settings.budget.min(space);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(settings.seed);
    let ranked = match settings.strategy.as_str() {
        "halving" => {
            let mut alive = crate::sweep::latin_hypercube(&levels, budget, &mut rng);
            if alive.len() < budget {
                // Fill with distinct random treatments (a small space repeats combinations).
                for c in crate::sweep::random(&levels, space, &mut rng) {
                    if alive.len() >= budget {
                        break;
                    }
                    if !alive.contains(&c) {
                        alive.push(c);
                    }
                }
            }
            let mut fidelity = settings.probe;
            loop {
                let measured = round(&alive, fidelity, &mut probes, on_event)?;
                let mut order: Vec<(Combo, &Measured)> =
                    alive.iter().cloned().zip(measured.iter()).collect();
                order.retain(|(_, m)| m.feasible && m.objective.is_some());
                sort_best_first(&mut order, &settings, |(_, m)| {
                    m.objective.unwrap_or(f64::NAN)
                });
                let keep = alive.len().div_ceil(3).max(2);
                // Two survivors go to the final run: probing them again would buy nothing.
                if keep <= 2 || order.len() <= 2 || fidelity >= 1.0 {
                    break order.into_iter().map(|(c, _)| c).collect::<Vec<_>>();
                }
                alive = order.into_iter().take(keep).map(|(c, _)| c).collect();
                fidelity = (fidelity * 3.0).min(1.0);
            }
        }
        _ => {
            // Small batches: the estimator learns from every pair of probes.
            let batch = 2;
            let mut tpe_rng =
                <rand_tpe::rngs::SmallRng as rand_tpe::SeedableRng>::seed_from_u64(settings.seed);
            let mut optimizers: Vec<_> = levels
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
                .collect();
            let mut tried: Vec<(Combo, Measured)> = Vec::new();
            while tried.len() < budget {
                let n = batch.min(budget - tried.len());
                let mut next: Vec<Combo> = Vec::new();
                // The last third of the budget refines around the best so far: its neighbours
                // (one factor one level away) that no probe measured yet.
                if tried.len() >= budget - budget / 3 {
                    let incumbent = tried
                        .iter()
                        .filter(|(_, m)| m.feasible && m.objective.is_some())
                        .fold(None::<&(Combo, Measured)>, |best, x| match best {
                            Some(b)
                                if !settings.better(
                                    x.1.objective.unwrap_or(f64::NAN),
                                    b.1.objective.unwrap_or(f64::NAN),
                                ) =>
                            {
                                Some(b)
                            }
                            _ => Some(x),
                        });
                    if let Some((best, _)) = incumbent {
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
                let measured = round(&next, settings.probe, &mut probes, on_event)?;
                for (c, m) in next.into_iter().zip(measured) {
                    // TPE minimises; an infeasible treatment is the worst there is.
                    let value = match (m.feasible, m.objective) {
                        (true, Some(v)) if settings.maximize() => -v,
                        (true, Some(v)) => v,
                        _ => 1e300,
                    };
                    for (o, &k) in optimizers.iter_mut().zip(&c) {
                        let _ = o.tell(k as f64 + 0.5, value);
                    }
                    tried.push((c, m));
                }
            }
            tried.retain(|(_, m)| m.feasible && m.objective.is_some());
            sort_best_first(&mut tried, &settings, |(_, m)| {
                m.objective.unwrap_or(f64::NAN)
            });
            tried.into_iter().map(|(c, _)| c).collect()
        }
    };
    let finalists: Vec<usize> = ranked.iter().take(2).map(&index_of).collect();
    if finalists.is_empty() {
        return Err(RunError::Workload(format!(
            "tune: none of the {} probed treatment(s) was feasible: {}",
            probes.len(),
            probes
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
            .join(" and ")
    )));
    // The answer is computed from the final run's own results before it is sealed, so the run
    // carries it.
    let report_slot: std::sync::Arc<std::sync::Mutex<Option<TuneReport>>> = Default::default();
    let slot = report_slot.clone();
    let partial = TuneReport {
        settings: settings.clone(),
        space,
        probe_runs,
        probes,
        final_run: String::new(),
        finalists: Vec::new(),
        best: None,
        significantly_better: None,
        p_value: None,
        probe_seconds,
        final_seconds: 0.0,
    };
    let spec_for_hook = spec.clone();
    let full_for_hook = full.clone();
    let final_treatments = finalists.clone();
    let hook: crate::BeforeSeal = Box::new(move |summary: &RunSummary, dir: &Path| {
        let (report, best_yaml) = answer(
            partial,
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
    let (outcome, _, _) = run_round(
        spec,
        &full,
        &final_treatments,
        None,
        &settings,
        make_opts,
        Some(hook),
    )?;
    let report = report_slot
        .lock()
        .expect("not poisoned")
        .take()
        .ok_or_else(|| RunError::Internal("the final run ended before its answer".into()))?;
    Ok((outcome, report))
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
    v.sort_by(|a, b| {
        let (x, y) = (key(a), key(b));
        if s.better(x, y) {
            std::cmp::Ordering::Less
        } else if s.better(y, x) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
}

/// One round: a run of `treatments` (probe fidelity, one replicate, `<name>.probe`; or the
/// spec as it is, for the final run), and what each treatment measured. Seconds are the sum of
/// the steps' durations.
fn run_round(
    spec: &BenchmarkRun,
    full: &Plan,
    treatments: &[usize],
    fidelity: Option<f64>,
    settings: &Settings,
    make_opts: &mut dyn FnMut() -> RunOptions,
    before_seal: Option<crate::BeforeSeal>,
) -> Result<(RunOutcome, Vec<Measured>, f64), RunError> {
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
    let outcome = execute(&text, &round, None, opts)?;
    if outcome.status != yardstick_store::RunStatus::Complete {
        return Err(RunError::Workload(format!(
            "tune: run {} was interrupted; the search stops (its finished rounds are stored)",
            outcome.run_id
        )));
    }
    let summary = outcome.summary.clone().unwrap_or_default();
    let measured = treatments
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
        .collect();
    let seconds = step_seconds(&outcome.dir);
    Ok((outcome, measured, seconds))
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
                    .map(|a| (p.id.clone(), a.clone()))
            })
    };
    match agg(&s.objective, &s.statistic) {
        Some((point, a)) if a.mean.is_finite() => {
            m.point = Some(point);
            m.objective = Some(a.mean);
            m.ci = a.ci;
        }
        _ => {
            m.reason = Some(format!(
                "it measured no {} {} (every replicate failed, or no point reports it)",
                s.objective, s.statistic
            ));
            return m;
        }
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
        "tune: {} {} ({}) over {space} treatment(s): {} probe(s) with {}, one replicate at {:.0} % of the requests each, then the best two in a final run of {} replicate(s); the points above are the space, not the steps",
        s.goal,
        s.objective,
        s.statistic,
        s.budget.min(space),
        s.strategy,
        s.probe * 100.0,
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

    #[test]
    fn shell_quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("--port"), "--port");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
