//! Capacity under an SLO: the highest load (open-loop request rate, or closed-loop concurrency)
//! at which a server still meets its latency objectives, found by measuring.
//!
//! The search brackets the capacity first (doubling the load from `start` while the SLO holds,
//! halving it while it breaks), then bisects the bracket until it is narrower than `precision`
//! (rates) or one stream (concurrency). Every probe is a measured point like any other. Whether
//! the SLO holds at a probe is a test, not a reading of one percentile: with `n` measured
//! requests of which `t` missed an objective (or failed), the objective holds when so few missed
//! that a true share below the target would rarely give them, and breaks when so many missed
//! that a true share at the target would rarely give them
//! ([`yardstick_stats::early_stopping::share_test`]). When neither can be said the probe is
//! measured again, as long as `max_probe_requests` allows, and the counts are pooled; a probe
//! that is still undecided then is counted against the load (the search does not claim what it
//! could not show) and flagged.
//!
//! The answer is the bracket: the highest load shown to hold and the lowest shown to break
//! ("sustains 152–160 req/s at p90 TTFT ≤ 25 ms").

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use yardstick_spec::metrics::id;
use yardstick_stats::early_stopping::{ShareTest, share_test};

use crate::runner::{Arrival, LoadModel, Progress, StopReason};
use crate::summary::{PointSummary, Slo};
use crate::{LoadError, ServeBench};

/// What the search varies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    /// Open-loop request rate (req/s) with this arrival process.
    Rate {
        /// Inter-arrival distribution.
        arrival: Arrival,
        /// Cap on requests in flight.
        max_in_flight: Option<usize>,
    },
    /// Closed-loop concurrency (whole streams).
    Concurrency,
}

impl Axis {
    /// `rate` or `concurrency`.
    pub fn name(&self) -> &'static str {
        match self {
            Axis::Rate { .. } => "rate",
            Axis::Concurrency => "concurrency",
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Axis::Rate { .. } => "req/s",
            Axis::Concurrency => "concurrent requests",
        }
    }

    fn model(&self, load: f64) -> LoadModel {
        match *self {
            Axis::Rate {
                arrival,
                max_in_flight,
            } => LoadModel::Rate {
                rate: load,
                arrival,
                max_in_flight,
            },
            Axis::Concurrency => LoadModel::Concurrency(load.round().max(1.0) as usize),
        }
    }
}

/// How the objectives are judged over a probe's requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", tag = "kind", content = "share")]
pub enum Criterion {
    /// Each objective on its own at this percentile (0.99: p99 TTFT ≤ the TTFT bound, and p99
    /// TPOT ≤ the TPOT bound).
    Percentile(f64),
    /// This share of requests meets every objective at once (goodput's definition).
    Attainment(f64),
}

impl Criterion {
    fn share(&self) -> f64 {
        match *self {
            Criterion::Percentile(p) | Criterion::Attainment(p) => p,
        }
    }
}

/// The search's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityConfig {
    /// What is varied.
    pub axis: Axis,
    /// The objectives (at least one).
    pub slo: Slo,
    /// How they are judged.
    pub criterion: Criterion,
    /// Confidence of each probe's test, e.g. 0.95.
    pub confidence: f64,
    /// The first load probed.
    pub start: f64,
    /// The highest load probed: at or above it, the answer is "at least".
    pub max: f64,
    /// The lowest rate probed (concurrency stops at 1).
    pub min: f64,
    /// Rates: stop when the bracket is narrower than this share of its top (0.05 = 5 %).
    pub precision: f64,
    /// Measured requests of a probe (after its warm-up).
    pub probe_requests: u64,
    /// Most measured requests one probe may pool before it is called undecided.
    pub max_probe_requests: u64,
    /// Time limit of each part of a probe.
    pub probe_duration: Option<Duration>,
    /// Most probes in all.
    pub max_probes: usize,
}

impl CapacityConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), LoadError> {
        let bad = |m: String| Err(LoadError::Config(m));
        if !self.slo.is_set() {
            return bad("a capacity search needs an objective: --slo-ttft-ms, --slo-tpot-ms or --slo-e2e-ms".into());
        }
        let p = self.criterion.share();
        if !(p > 0.0 && p < 1.0) {
            return bad(format!(
                "the SLO's share must be between 0 and 1 (exclusive), got {p}"
            ));
        }
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return bad(format!(
                "confidence must be in (0.5, 1), got {}",
                self.confidence
            ));
        }
        if !(self.start.is_finite() && self.start > 0.0 && self.max >= self.start) {
            return bad(format!(
                "the search starts at {} and may go up to {}: need 0 < start <= max",
                self.start, self.max
            ));
        }
        if !(self.min > 0.0 && self.min <= self.start) {
            return bad(format!(
                "the lowest rate probed ({}) must be in (0, start]",
                self.min
            ));
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return bad(format!(
                "precision must be in (0, 1), got {}",
                self.precision
            ));
        }
        if self.probe_requests == 0 || self.max_probe_requests < self.probe_requests {
            return bad(format!(
                "a probe measures {} requests and pools at most {}: need 1 <= probe <= max",
                self.probe_requests, self.max_probe_requests
            ));
        }
        if self.max_probes < 2 {
            return bad("a search needs at least 2 probes".into());
        }
        Ok(())
    }
}

/// One objective at one probe.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ObjectiveCheck {
    /// `ttft_ms`, `tpot_ms`, `e2e_ms`, or `all` (attainment: every objective at once).
    pub objective: String,
    /// Its bound, ms (`all`: none).
    pub bound_ms: Option<f64>,
    /// Measured requests that missed it (failed requests miss every objective).
    pub missed: u64,
    /// The test's answer.
    pub test: ShareTest,
}

/// One probe: a load, measured once or more (parts pooled).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Probe {
    /// The load (req/s, or concurrent requests).
    pub load: f64,
    /// Measured requests, pooled over the parts.
    pub requests: u64,
    /// Parts measured (more than one when the first left the test undecided).
    pub parts: usize,
    /// Each objective's count and test.
    pub objectives: Vec<ObjectiveCheck>,
    /// Holds, breaks, or undecided (after the most requests allowed).
    pub outcome: ShareTest,
    /// The last part's point summary (latencies, throughput, goodput).
    pub summary: PointSummary,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchEnd {
    /// The bracket is as narrow as asked.
    Converged,
    /// The SLO held at the highest load allowed: the capacity is at least that.
    AtMaximum,
    /// The SLO broke at the lowest load allowed: no capacity above the floor.
    AtMinimum,
    /// The probe budget ran out.
    ProbeLimit,
    /// Interrupted (Ctrl-C) or the target went away.
    Interrupted,
}

/// The answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CapacityResult {
    /// `rate` or `concurrency`.
    pub axis: &'static str,
    /// Unit of the loads.
    pub unit: &'static str,
    /// The scenario.
    pub scenario: String,
    /// The objectives.
    pub slo: Slo,
    /// How they were judged.
    pub criterion: Criterion,
    /// Confidence of each probe's test.
    pub confidence: f64,
    /// The highest load at which the SLO was shown to hold: the capacity (null: not even the
    /// lowest load probed).
    pub capacity: Option<f64>,
    /// The lowest load at which it was shown to break (or left undecided): the capacity is
    /// below it (null: it held up to the maximum).
    pub breaks_at: Option<f64>,
    /// Output tokens per second measured at the capacity.
    pub output_token_throughput: Option<f64>,
    /// Requests per second completed at the capacity.
    pub request_throughput: Option<f64>,
    /// Dollars per million output tokens at the capacity (with a cost model).
    pub cost_per_1m_output_tokens: Option<f64>,
    /// Why the search ended.
    pub end: SearchEnd,
    /// Probes whose test stayed undecided (counted as breaking).
    pub undecided_probes: usize,
    /// Every probe, in the order measured.
    pub probes: Vec<Probe>,
    /// One sentence for people.
    pub statement: String,
}

/// What `yardstick bench serve --find-capacity --json` prints (and `capacity.json` under
/// `--output`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CapacityOutput {
    /// The search and its answer.
    pub capacity: CapacityResult,
    /// Wall time of the whole search, seconds.
    pub wall_s: f64,
}

/// The bracketing-then-bisection search, without any measuring: which load to probe next,
/// given what the probes so far showed.
#[derive(Debug, Clone)]
pub struct Search {
    integer: bool,
    start: f64,
    min: f64,
    max: f64,
    precision: f64,
    held: Option<f64>,
    broke: Option<f64>,
}

impl Search {
    /// A search over `cfg`'s axis and bounds.
    pub fn new(cfg: &CapacityConfig) -> Search {
        let integer = cfg.axis == Axis::Concurrency;
        let round = |x: f64| if integer { x.round().max(1.0) } else { x };
        Search {
            integer,
            start: round(cfg.start),
            min: if integer { 1.0 } else { cfg.min },
            max: if integer {
                cfg.max.floor().max(1.0)
            } else {
                cfg.max
            },
            precision: cfg.precision,
            held: None,
            broke: None,
        }
    }

    /// Records a probe's outcome (undecided counts as broken).
    pub fn record(&mut self, load: f64, holds: bool) {
        if holds {
            self.held = Some(self.held.map_or(load, |h| h.max(load)));
        } else {
            self.broke = Some(self.broke.map_or(load, |b| b.min(load)));
        }
    }

    /// The highest load shown to hold and the lowest shown to break.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.held, self.broke)
    }

    /// The next load to probe, or why the search is over.
    pub fn next(&self) -> Result<f64, SearchEnd> {
        match (self.held, self.broke) {
            (None, None) => Ok(self.start),
            (Some(h), None) => {
                if h >= self.max {
                    return Err(SearchEnd::AtMaximum);
                }
                Ok((h * 2.0).min(self.max))
            }
            (None, Some(b)) => {
                if b <= self.min {
                    return Err(SearchEnd::AtMinimum);
                }
                let next = if self.integer {
                    (b / 2.0).floor()
                } else {
                    b / 2.0
                };
                Ok(next.max(self.min))
            }
            (Some(h), Some(b)) => {
                let done = if self.integer {
                    b - h <= 1.0
                } else {
                    (b - h) / b <= self.precision
                };
                if done || h >= b {
                    return Err(SearchEnd::Converged);
                }
                Ok(if self.integer {
                    ((h + b) / 2.0).floor()
                } else {
                    (h + b) / 2.0
                })
            }
        }
    }
}

/// The objectives' tests over measured requests.
fn judge(
    records: &[&crate::RequestRecord],
    slo: &Slo,
    criterion: Criterion,
    confidence: f64,
) -> Result<(Vec<ObjectiveCheck>, ShareTest), LoadError> {
    let n = records.len() as u64;
    let p = criterion.share();
    let test = |missed: u64| {
        share_test(n, missed, p, confidence).map_err(|e| LoadError::Config(e.to_string()))
    };
    let mut checks = Vec::new();
    match criterion {
        Criterion::Attainment(_) => {
            let missed = records.iter().filter(|r| !slo.met_by(r)).count() as u64;
            checks.push(ObjectiveCheck {
                objective: "all".into(),
                bound_ms: None,
                missed,
                test: test(missed)?,
            });
        }
        Criterion::Percentile(_) => {
            type Getter = fn(&crate::RequestRecord) -> Option<f64>;
            let objectives: [(&str, Option<f64>, Getter); 3] = [
                (id::TTFT_MS, slo.ttft_ms, |r| r.ttft_ms()),
                (id::TPOT_MS, slo.tpot_ms, |r| r.tpot_ms()),
                (id::E2E_MS, slo.e2e_ms, |r| r.e2e_ms()),
            ];
            for (name, bound, get) in objectives {
                let Some(bound) = bound else { continue };
                let missed = records
                    .iter()
                    .filter(|r| !r.ok() || get(r).is_some_and(|v| v > bound))
                    .count() as u64;
                checks.push(ObjectiveCheck {
                    objective: name.into(),
                    bound_ms: Some(bound),
                    missed,
                    test: test(missed)?,
                });
            }
        }
    }
    let outcome = if checks.iter().any(|c| c.test == ShareTest::Breaks) {
        ShareTest::Breaks
    } else if checks.iter().all(|c| c.test == ShareTest::Holds) {
        ShareTest::Holds
    } else {
        ShareTest::Undecided
    };
    Ok((checks, outcome))
}

/// Finds the capacity of `bench`'s target for its first scenario: probes loads as [`Search`]
/// says, each a point of `bench` (its stop rule's warm-up, `cfg.probe_requests` measured
/// requests), until the bracket is narrow enough. `on_probe` hears of each probe as it is
/// decided (and before it starts: `None`, with its load).
pub async fn find_capacity(
    bench: &ServeBench,
    cfg: &CapacityConfig,
    progress: Arc<Progress>,
    mut on_probe: impl FnMut(f64, Option<&Probe>),
) -> Result<CapacityResult, LoadError> {
    cfg.validate()?;
    let scenarios = bench.validate()?;
    let scenario = scenarios
        .first()
        .map(|(s, _)| s.clone())
        .ok_or_else(|| LoadError::Config("a capacity search needs a scenario".into()))?;
    let mut search = Search::new(cfg);
    let mut probes: Vec<Probe> = Vec::new();
    let end = loop {
        if probes.len() >= cfg.max_probes {
            break SearchEnd::ProbeLimit;
        }
        let load = match search.next() {
            Ok(l) => l,
            Err(end) => break end,
        };
        on_probe(load, None);
        let mut pooled: Vec<crate::RequestRecord> = Vec::new();
        let mut parts = 0;
        let mut interrupted = false;
        let (probe, holds) = loop {
            let mut b = bench.clone();
            b.scenarios = vec![scenario.clone()];
            b.loads = vec![cfg.axis.model(load)];
            b.stop.max_requests = Some(cfg.probe_requests);
            b.stop.max_duration = cfg.probe_duration;
            // Each part its own requests (the same plan again would repeat its prompts).
            b.seed = bench.seed ^ ((probes.len() as u64) << 32 | parts as u64);
            b.start_at = None;
            // The server's token counts once, before the first probe: every probe plans
            // prompts the same way, and the search should not wait on the check each time.
            b.token_check = bench.token_check && probes.is_empty() && parts == 0;
            let mut results = b.run(progress.clone(), |_, _, _| {}).await?;
            parts += 1;
            let Some(point) = results.pop() else {
                return Err(LoadError::Config("the probe measured no point".into()));
            };
            if matches!(
                point.summary.stop_reason,
                StopReason::Interrupted | StopReason::TargetUnreachable(_)
            ) {
                interrupted = true;
            }
            pooled.extend(point.records.into_iter().filter(|r| !r.warmup));
            let measured: Vec<&crate::RequestRecord> = pooled.iter().collect();
            let (objectives, outcome) = judge(&measured, &cfg.slo, cfg.criterion, cfg.confidence)?;
            let more = outcome == ShareTest::Undecided
                && (pooled.len() as u64) + cfg.probe_requests <= cfg.max_probe_requests
                && !interrupted;
            if !more {
                let holds = outcome == ShareTest::Holds;
                break (
                    Probe {
                        load,
                        requests: pooled.len() as u64,
                        parts,
                        objectives,
                        outcome,
                        summary: point.summary,
                    },
                    holds,
                );
            }
        };
        on_probe(load, Some(&probe));
        if interrupted {
            probes.push(probe);
            break SearchEnd::Interrupted;
        }
        search.record(load, holds);
        probes.push(probe);
    };
    let (held, broke) = search.bracket();
    let at = held.and_then(|h| probes.iter().find(|p| p.load == h));
    let undecided = probes
        .iter()
        .filter(|p| p.outcome == ShareTest::Undecided)
        .count();
    let statement = statement(cfg, &scenario, held, broke, end);
    Ok(CapacityResult {
        axis: cfg.axis.name(),
        unit: cfg.axis.unit(),
        scenario,
        slo: cfg.slo.clone(),
        criterion: cfg.criterion,
        confidence: cfg.confidence,
        capacity: held,
        breaks_at: broke,
        output_token_throughput: at.map(|p| p.summary.output_token_throughput),
        request_throughput: at.map(|p| p.summary.request_throughput),
        cost_per_1m_output_tokens: at.and_then(|p| p.summary.cost_per_1m_output_tokens),
        end,
        undecided_probes: undecided,
        probes,
        statement,
    })
}

fn fmt_load(x: f64) -> String {
    if x >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// "sustains 152–160 req/s at p90 TTFT ≤ 25 ms and p90 TPOT ≤ 50 ms".
fn statement(
    cfg: &CapacityConfig,
    scenario: &str,
    held: Option<f64>,
    broke: Option<f64>,
    end: SearchEnd,
) -> String {
    let mut objectives = Vec::new();
    for (name, bound) in [
        ("TTFT", cfg.slo.ttft_ms),
        ("TPOT", cfg.slo.tpot_ms),
        ("E2E", cfg.slo.e2e_ms),
    ] {
        if let Some(b) = bound {
            objectives.push(format!("{name} ≤ {} ms", fmt_load(b)));
        }
    }
    let slo = match cfg.criterion {
        Criterion::Percentile(p) => objectives
            .iter()
            .map(|o| format!("p{} {o}", fmt_load(p * 100.0)))
            .collect::<Vec<_>>()
            .join(" and "),
        Criterion::Attainment(a) => format!(
            "{} % of requests meeting {}",
            fmt_load(a * 100.0),
            objectives.join(" and ")
        ),
    };
    let unit = cfg.axis.unit();
    let what = match (held, broke) {
        (Some(h), Some(b)) => format!("sustains {}–{} {unit}", fmt_load(h), fmt_load(b)),
        (Some(h), None) => format!("sustains at least {} {unit} (the most probed)", fmt_load(h)),
        (None, Some(b)) => format!("does not sustain even {} {unit}", fmt_load(b)),
        (None, None) => "was not measured".to_string(),
    };
    let tail = match end {
        SearchEnd::ProbeLimit => " (probe limit reached before the bracket narrowed)",
        SearchEnd::Interrupted => " (interrupted)",
        _ => "",
    };
    format!(
        "{scenario}: {what} at {slo}, {} % confidence per probe{tail}",
        fmt_load(cfg.confidence * 100.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(axis: Axis) -> CapacityConfig {
        CapacityConfig {
            axis,
            slo: Slo {
                ttft_ms: Some(200.0),
                ..Slo::default()
            },
            criterion: Criterion::Percentile(0.9),
            confidence: 0.95,
            start: 4.0,
            max: 10_000.0,
            min: 0.05,
            precision: 0.02,
            probe_requests: 100,
            max_probe_requests: 400,
            probe_duration: None,
            max_probes: 40,
        }
    }

    /// Runs the search against an oracle whose capacity is `truth`.
    fn search(c: &CapacityConfig, truth: f64) -> (Option<f64>, Option<f64>, SearchEnd, usize) {
        let mut s = Search::new(c);
        let mut probes = 0;
        loop {
            match s.next() {
                Ok(load) => {
                    probes += 1;
                    assert!(probes < 100, "the search does not end");
                    s.record(load, load <= truth);
                }
                Err(end) => {
                    let (h, b) = s.bracket();
                    return (h, b, end, probes);
                }
            }
        }
    }

    #[test]
    fn rate_searches_bracket_then_bisect_to_the_precision() {
        let c = cfg(Axis::Rate {
            arrival: Arrival::Poisson,
            max_in_flight: None,
        });
        for truth in [0.3, 3.9, 4.0, 41.3, 160.0, 777.7, 9_000.0] {
            let (h, b, end, probes) = search(&c, truth);
            let (h, b) = (h.unwrap(), b.unwrap());
            assert_eq!(end, SearchEnd::Converged, "{truth}");
            assert!(h <= truth && truth < b, "{truth}: [{h}, {b})");
            assert!((b - h) / b <= 0.02, "{truth}: [{h}, {b})");
            assert!(probes <= 20, "{truth}: {probes} probes");
        }
        // Beyond the maximum, and below the minimum.
        let (h, b, end, _) = search(&c, 1e9);
        assert_eq!((h, b, end), (Some(10_000.0), None, SearchEnd::AtMaximum));
        let (h, b, end, _) = search(&c, 0.01);
        assert_eq!((h, b, end), (None, Some(0.05), SearchEnd::AtMinimum));
    }

    #[test]
    fn concurrency_searches_end_on_adjacent_whole_streams() {
        let c = cfg(Axis::Concurrency);
        for truth in [1.0, 2.0, 7.0, 8.0, 20.0, 63.0, 64.0, 1000.0] {
            let (h, b, end, _) = search(&c, truth);
            assert_eq!(end, SearchEnd::Converged, "{truth}");
            assert_eq!((h, b), (Some(truth), Some(truth + 1.0)), "{truth}");
        }
        let (h, b, end, _) = search(&c, 0.5);
        assert_eq!((h, b, end), (None, Some(1.0), SearchEnd::AtMinimum));
    }

    #[test]
    fn bad_settings_are_refused() {
        let ok = cfg(Axis::Concurrency);
        assert!(ok.validate().is_ok());
        for bad in [
            CapacityConfig {
                slo: Slo::default(),
                ..ok.clone()
            },
            CapacityConfig {
                criterion: Criterion::Percentile(1.0),
                ..ok.clone()
            },
            CapacityConfig {
                start: 0.0,
                ..ok.clone()
            },
            CapacityConfig {
                max: 1.0,
                ..ok.clone()
            },
            CapacityConfig {
                probe_requests: 500,
                ..ok.clone()
            },
            CapacityConfig {
                confidence: 1.0,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
