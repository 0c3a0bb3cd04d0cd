//! The regression gate: a verdict per metric from the ratio's CI against the tolerance, Holm
//! correction across metrics, overall verdict = the worst.

use std::collections::BTreeMap;

use serde::Serialize;
use yardstick_spec::{Mode, TailPercentile, Tolerances};
use yardstick_stats::hypothesis::{binomial_coefficient, holm, ratio_beyond, ratio_beyond_linear};
use yardstick_stats::percentile::min_samples_for_quantile_ci;

use crate::compare::{Comparison, compare};
use crate::error::GateError;
use crate::load::RunData;

pub use yardstick_spec::metrics::MetricClass;
use yardstick_spec::metrics::MetricDef;

/// Which way is a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// A lower ratio is worse.
    HigherIsBetter,
    /// A higher ratio is worse.
    LowerIsBetter,
}

impl Direction {
    /// The gate's side of a catalogue direction; `None` for one that is never compared.
    pub fn of(d: yardstick_spec::metrics::Direction) -> Option<Direction> {
        match d {
            yardstick_spec::metrics::Direction::HigherIsBetter => Some(Direction::HigherIsBetter),
            yardstick_spec::metrics::Direction::LowerIsBetter => Some(Direction::LowerIsBetter),
            _ => None,
        }
    }
}

/// Which way is a regression of `metric`: its catalogue entry's direction (`yardstick
/// metrics`), whatever its class; the class's usual direction only for a metric the catalogue
/// does not know or gives no direction.
pub fn direction_of(metric: &str, class: MetricClass) -> Direction {
    direction_in(yardstick_spec::metrics::lookup(metric), class)
}

/// [`direction_of`] with the catalogue entry already looked up.
fn direction_in(def: Option<&MetricDef>, class: MetricClass) -> Direction {
    def.and_then(|d| Direction::of(d.direction))
        .or_else(|| Direction::of(class.usual_direction()))
        .unwrap_or(Direction::LowerIsBetter)
}

/// The tolerance of one metric: the spec's per-metric override (`metric/statistic`, then
/// `metric`), else its class's ([`tolerance_pct`]).
pub fn metric_tolerance(
    metric: &str,
    statistic: &str,
    class: MetricClass,
    t: Option<&Tolerances>,
) -> f64 {
    t.and_then(|t| t.metrics.as_ref())
        .and_then(|m| {
            m.get(&format!("{metric}/{statistic}"))
                .or_else(|| m.get(metric))
        })
        .copied()
        .unwrap_or_else(|| tolerance_pct(class, t))
}

/// The tolerance of a class — percent, points for accuracy and quality scores, none for the
/// loss slope — from the spec's `gates.tolerances`, else the defaults of
/// docs/methodology.md#baselines-and-regression-gates: throughput drop 5 %, step-time increase
/// 5 %, latency increase 5 %, tail increase 10 %, memory increase 10 %, perplexity +1.5 %
/// relative, accuracy and quality scores −2 points (on the 0–100 scale).
pub fn tolerance_pct(class: MetricClass, t: Option<&Tolerances>) -> f64 {
    let t = t.cloned().unwrap_or_default();
    match class {
        MetricClass::Throughput => t.throughput_drop_pct.unwrap_or(5.0),
        MetricClass::Latency => t.latency_increase_pct.unwrap_or(5.0),
        MetricClass::Tail => t.tail_increase_pct.unwrap_or(10.0),
        MetricClass::StepTime => t.step_time_increase_pct.unwrap_or(5.0),
        MetricClass::Memory => t.memory_increase_pct.unwrap_or(10.0),
        MetricClass::Accuracy => t.accuracy_drop_points.unwrap_or(2.0),
        MetricClass::Perplexity => t.perplexity_increase_pct.unwrap_or(1.5),
        MetricClass::Quality => t.quality_drop_points.unwrap_or(2.0),
        MetricClass::LossSlope | MetricClass::Descriptive => 0.0,
        MetricClass::Cost => t.cost_increase_pct.unwrap_or(5.0),
    }
}

/// A verdict; ordered from best to worst.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Within tolerance, shown by the CI.
    Pass,
    /// A warn-only metric beyond its tolerance.
    Warn,
    /// Not enough evidence either way.
    Inconclusive,
    /// Beyond tolerance, shown by the CI and significant after Holm correction.
    Fail,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Fail => "FAIL",
        })
    }
}

/// The verdict of one point × metric.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct MetricVerdict {
    /// Point id.
    pub point: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// Class (tolerance and direction).
    pub class: MetricClass,
    /// Tolerance: percent, or points for accuracy and quality scores (`class`).
    pub tolerance_pct: f64,
    /// The profile's noise floor for this metric, percent (from `gate --calibrate`), when known.
    pub noise_floor_pct: Option<f64>,
    /// The ratio beyond which the metric regressed: the farther of the tolerance's and the
    /// noise floor's bounds. `None` for the loss slope (checked by sign).
    pub bound: Option<f64>,
    /// Baseline aggregate value.
    pub baseline: f64,
    /// Candidate aggregate value.
    pub candidate: f64,
    /// Ratio candidate / baseline (medians of replicate values).
    pub ratio: Option<f64>,
    /// CI of the ratio: over replicates, or over paired items for an eval accuracy whose
    /// items both runs kept (`paired`).
    pub ci_lo: Option<f64>,
    /// CI of the ratio.
    pub ci_hi: Option<f64>,
    /// Eval metrics (accuracy, quality scores): the item-level evidence the CI and p-value
    /// come from, when both runs kept their items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<crate::paired::PairedItems>,
    /// Replicates (baseline, candidate).
    pub n: (usize, usize),
    /// Fewest samples behind one replicate's value (both runs).
    pub min_samples: Option<u64>,
    /// Samples per replicate a tail percentile needs for a distribution-free CI at the level.
    pub required_samples: Option<u64>,
    /// One-sided p-value of H0 "not beyond the bound" from the test named in `p_test`.
    pub p_value: Option<f64>,
    /// Which test gave `p_value`: `welch_t_log` (Welch's t on log replicate values, the
    /// default), `welch_t_linear` (the same on the raw scale, candidate against bound × baseline,
    /// when a value is 0 or below), `paired_items_bootstrap` (eval metrics paired by item), or
    /// `exact_values` (no p-value: every replicate gave the same value on both sides, so the
    /// ratio is exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_test: Option<String>,
    /// The replicate-level tests, both reported: Welch's t (statistic, df, p) and the exact
    /// permutation p with the smallest p it can reach for these replicate counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_test: Option<yardstick_stats::hypothesis::RatioTest>,
    /// Holm-adjusted p-value across the gated metrics.
    pub p_holm: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
    /// For an INCONCLUSIVE verdict, what would decide it: how many replicates per side would
    /// narrow the interval enough if the ratio holds, or that the ratio sits on the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_decide: Option<String>,
}

/// How to gate.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Compare runs of different machine profiles (exploratory, never enforced).
    pub cross_profile: bool,
    /// Override the spec's tolerances.
    pub tolerances: Option<Tolerances>,
    /// Noise floors of the machine profile in percent, by (point, metric, statistic), from
    /// recorded A/A comparisons ([`crate::calibrate::noise_floors`]).
    pub noise_floors: BTreeMap<(String, String, String), f64>,
}

/// The gate's result.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct GateReport {
    /// The overall verdict: the worst per-metric verdict.
    pub verdict: Verdict,
    /// True when the verdict is not enforced (cross-profile, or an exploratory spec).
    pub exploratory: bool,
    /// Why it is exploratory, when it is.
    pub exploratory_reason: Option<String>,
    /// Per metric.
    pub metrics: Vec<MetricVerdict>,
    /// The underlying comparison (field diffs, warnings).
    pub comparison: Comparison,
}

impl GateReport {
    /// Point ids with a FAIL (what `--confirm` re-runs).
    pub fn failing_points(&self) -> Vec<String> {
        self.points_with(Verdict::Fail)
    }

    /// Point ids with a row of `verdict`, sorted, each once.
    fn points_with(&self, verdict: Verdict) -> Vec<String> {
        let mut v: Vec<String> = self
            .metrics
            .iter()
            .filter(|m| m.verdict == verdict)
            .map(|m| m.point.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Point ids with an INCONCLUSIVE row (what `--confirm` pools more replicates for).
    pub fn inconclusive_points(&self) -> Vec<String> {
        self.points_with(Verdict::Inconclusive)
    }

    /// What to record of this gating in the warehouse (a row per point × metric, for trends);
    /// nothing for a cross-profile comparison, whose baseline is not of the candidate's
    /// machine profile (an exploratory spec's verdicts are recorded: they are what the gate
    /// said, though it did not enforce them).
    pub fn verdict_rows(&self, recorded_at: &str) -> Vec<yardstick_store::warehouse::VerdictRow> {
        if self.comparison.baseline_profile != self.comparison.candidate_profile {
            return Vec::new();
        }
        self.metrics
            .iter()
            .map(|m| yardstick_store::warehouse::VerdictRow {
                run_id: self.comparison.candidate_run.clone(),
                point_id: m.point.clone(),
                metric: m.metric.clone(),
                statistic: m.statistic.clone(),
                baseline_run: self.comparison.baseline_run.clone(),
                verdict: m.verdict.to_string(),
                ratio: m.ratio.filter(|r| r.is_finite()),
                recorded_at: recorded_at.to_string(),
            })
            .collect()
    }

    /// Records this gating's verdicts in `w` (replacing an earlier gating's of the same run),
    /// so trends show what the gate said of each run.
    pub fn record(
        &self,
        w: &mut dyn yardstick_store::warehouse::Warehouse,
    ) -> Result<(), GateError> {
        Ok(w.record_verdicts(&self.verdict_rows(&yardstick_env::now_rfc3339()))?)
    }

    /// Recomputes the overall verdict from the per-metric ones.
    pub fn recompute_verdict(&mut self) {
        self.verdict = overall(&self.metrics);
    }
}

fn overall(metrics: &[MetricVerdict]) -> Verdict {
    if metrics.is_empty() {
        Verdict::Inconclusive
    } else {
        metrics
            .iter()
            .map(|m| m.verdict)
            .max()
            .unwrap_or(Verdict::Pass)
    }
}

/// Replicates each side needs before a metric can PASS or FAIL (the methodology floor).
pub const MIN_REPLICATES: usize = 3;

/// Refuses different machine profiles unless `cross_profile`; returns whether the comparison is
/// cross-profile (exploratory).
pub fn check_profiles(
    baseline: Option<&str>,
    candidate: Option<&str>,
    cross_profile: bool,
) -> Result<bool, GateError> {
    let (a, b) = (
        baseline.unwrap_or("unknown"),
        candidate.unwrap_or("unknown"),
    );
    if baseline.is_some() && a == b {
        return Ok(false);
    }
    if cross_profile {
        Ok(true)
    } else {
        Err(GateError::ProfileMismatch {
            baseline: a.to_string(),
            candidate: b.to_string(),
        })
    }
}

/// The scale that puts a points-gated metric on 0–100: 100 for fractions (accuracy, mean
/// ROUGE-L, mean F1), 1 for BLEU (already 0–100).
pub fn points_scale(metric: &str) -> f64 {
    if metric == yardstick_spec::metrics::id::BLEU {
        1.0
    } else {
        100.0
    }
}

/// The ratio candidate/baseline beyond which a metric regressed: the tolerance's bound (for
/// accuracy and quality scores, `points` below the baseline's value, as a ratio; `baseline` in
/// the metric's own unit, `metric` picks its [`points_scale`]) or the noise floor's, whichever
/// is farther from 1. `None` when no ratio bound applies (loss slope, a points-gated metric
/// whose baseline is 0).
pub fn ratio_bound(
    class: MetricClass,
    direction: Direction,
    metric: &str,
    tolerance: f64,
    baseline: f64,
    noise_floor_pct: Option<f64>,
) -> Option<f64> {
    let tol_frac = match class {
        MetricClass::LossSlope => return None,
        MetricClass::Accuracy | MetricClass::Quality
            if baseline <= 0.0 || !baseline.is_finite() =>
        {
            return None;
        }
        MetricClass::Accuracy | MetricClass::Quality => {
            // The baseline as a fraction of the 0–100 scale.
            let base = if points_scale(metric) == 100.0 {
                baseline
            } else {
                baseline / 100.0
            };
            (tolerance / 100.0) / base
        }
        _ => tolerance / 100.0,
    };
    let frac = tol_frac.max(noise_floor_pct.unwrap_or(0.0) / 100.0);
    Some(match direction {
        Direction::HigherIsBetter => 1.0 - frac,
        Direction::LowerIsBetter => 1.0 + frac,
    })
}

/// Replicates per side with which the exact permutation test can reach `alpha` (one-sided):
/// the smallest k with 1 / C(2k, k) < alpha.
pub fn replicates_for(alpha: f64) -> usize {
    (MIN_REPLICATES..64)
        .find(|k| 1.0 / binomial_coefficient(2 * k, *k) < alpha)
        .unwrap_or(64)
}

/// The verdict of a loss slope: FAIL when every candidate replicate's loss rose (at least
/// [`MIN_REPLICATES`] of them), PASS when the median slope is not positive.
fn loss_slope_verdict(candidate: &[f64]) -> (Verdict, String) {
    if candidate.len() < MIN_REPLICATES {
        return (
            Verdict::Inconclusive,
            format!(
                "{} replicate(s) of the loss slope; a verdict needs at least {MIN_REPLICATES}",
                candidate.len()
            ),
        );
    }
    let rising = candidate.iter().filter(|s| **s > 0.0).count();
    let shown: Vec<String> = candidate.iter().map(|s| format!("{s:.3e}")).collect();
    if rising == candidate.len() {
        (
            Verdict::Fail,
            format!(
                "the loss rose in every replicate (slopes {}): training diverges",
                shown.join(", ")
            ),
        )
    } else if rising * 2 > candidate.len() {
        (
            Verdict::Inconclusive,
            format!(
                "the loss rose in {rising} of {} replicates (slopes {})",
                candidate.len(),
                shown.join(", ")
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!("the loss falls (slopes {})", shown.join(", ")),
        )
    }
}

/// Gates `candidate` against `baseline`.
///
/// Per metric, with the ratio r = candidate / baseline of replicate medians and its percentile
/// bootstrap CI at the spec's confidence level (replicates resampled): PASS when the CI lies on
/// the acceptable side of the bound (the tolerance, widened to the profile's noise floor when
/// that is larger); FAIL (WARN for memory) when the whole CI lies beyond it AND the one-sided
/// p-value of "not beyond the bound" — Welch's t on log replicate values, or the exact
/// permutation test when a side has no variance ([`ratio_beyond`]) — Holm-adjusted across the
/// gated metrics, is below (1 − level) / 2; INCONCLUSIVE "too few replicates" when only the
/// permutation test applies and it cannot reach that level with these replicate counts;
/// INCONCLUSIVE otherwise, with fewer than [`MIN_REPLICATES`] replicates on a side, or for a
/// tail percentile whose replicates have too few samples for a distribution-free CI of it.
/// A warn-only metric that is not shown beyond its tolerance PASSes. The loss slope is checked
/// on the candidate alone: a loss rising in every replicate FAILs.
pub fn gate(
    baseline: &RunData,
    candidate: &RunData,
    opts: &GateOptions,
) -> Result<GateReport, GateError> {
    let cross = check_profiles(
        baseline.run.machine_profile.as_deref(),
        candidate.run.machine_profile.as_deref(),
        opts.cross_profile,
    )?;
    let comparison = compare(baseline, candidate)?;
    let cand_spec = candidate.spec.as_ref().and_then(|s| s.spec.as_ref());
    let tolerances = opts.tolerances.clone().or_else(|| {
        cand_spec
            .and_then(|s| s.gates.as_ref())
            .and_then(|g| g.tolerances.clone())
    });
    let exploratory_mode = cand_spec.and_then(|s| s.mode) == Some(Mode::Exploratory);
    let level = comparison.level;

    let mut metrics = Vec::new();
    for m in &comparison.metrics {
        let tol = metric_tolerance(&m.metric, &m.statistic, m.class, tolerances.as_ref());
        let floor = opts
            .noise_floors
            .get(&(m.point.clone(), m.metric.clone(), m.statistic.clone()))
            .copied();
        let base_median = if m.baseline_replicates.is_empty() {
            m.baseline
        } else {
            yardstick_stats::descriptive::median(&m.baseline_replicates)
        };
        let direction = direction_of(&m.metric, m.class);
        let bnd = ratio_bound(m.class, direction, &m.metric, tol, base_median, floor);
        let n = (m.baseline_replicates.len(), m.candidate_replicates.len());
        let required_samples = match TailPercentile::from_statistic(&m.statistic) {
            Some(t) if m.class == MetricClass::Tail => {
                Some(min_samples_for_quantile_ci(t.quantile(), level)? as u64)
            }
            _ => None,
        };
        let enough_samples = match (required_samples, m.min_samples) {
            (Some(req), Some(have)) => have >= req,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let paired = match crate::paired::ItemStatistic::of_metric(&m.metric) {
            Some(stat) if matches!(m.class, MetricClass::Accuracy | MetricClass::Quality) => {
                crate::paired::from_runs(
                    &baseline.dir,
                    &candidate.dir,
                    &m.point,
                    stat,
                    level,
                    crate::compare::SEED,
                    crate::compare::RESAMPLES,
                )?
            }
            _ => None,
        };
        let eligible = bnd.is_some()
            && paired.is_none()
            && n.0 >= MIN_REPLICATES
            && n.1 >= MIN_REPLICATES
            && m.ci_lo.is_some()
            && enough_samples;
        let higher_is_worse = direction == Direction::LowerIsBetter;
        let (a, b) = (&m.baseline_replicates, &m.candidate_replicates);
        let ratio_test = match bnd {
            Some(bnd) if eligible => ratio_beyond(a, b, bnd, higher_is_worse).ok(),
            _ => None,
        };
        // Every replicate the same on both sides (a deterministic measurement, e.g. an eval
        // against a deterministic server): there is no replicate noise to test, the ratio is
        // exact.
        let constant = |v: &[f64]| v.windows(2).all(|w| w[0] == w[1]);
        let (p_value, p_test) = match (bnd, &paired) {
            (Some(bnd), Some(items)) => (Some(items.p_below(bnd)), Some("paired_items_bootstrap")),
            (Some(bnd), None) if eligible => {
                match ratio_test.and_then(|t| t.welch_p) {
                    Some(p) => (Some(p), Some("welch_t_log")),
                    None if constant(a) && constant(b) => (None, Some("exact_values")),
                    // Values of 0 or below (an accuracy of 0): Welch on the raw scale.
                    None => match ratio_beyond_linear(a, b, bnd, higher_is_worse) {
                        Some((_, _, p)) => (Some(p), Some("welch_t_linear")),
                        None => (None, None),
                    },
                }
            }
            _ => (None, None),
        };
        metrics.push(MetricVerdict {
            point: m.point.clone(),
            metric: m.metric.clone(),
            statistic: m.statistic.clone(),
            class: m.class,
            tolerance_pct: tol,
            noise_floor_pct: floor,
            bound: bnd,
            baseline: m.baseline,
            candidate: m.candidate,
            ratio: m.ratio,
            ci_lo: paired.as_ref().map_or(m.ci_lo, |p| Some(p.ci_lo)),
            ci_hi: paired.as_ref().map_or(m.ci_hi, |p| Some(p.ci_hi)),
            paired,
            n,
            min_samples: m.min_samples,
            required_samples,
            p_value,
            p_test: p_test.map(str::to_string),
            ratio_test,
            p_holm: None,
            verdict: Verdict::Inconclusive,
            reason: String::new(),
            to_decide: None,
        });
    }
    let candidates: Vec<&[f64]> = comparison
        .metrics
        .iter()
        .map(|m| m.candidate_replicates.as_slice())
        .collect();
    decide(&mut metrics, &candidates, level)?;
    let verdict = overall(&metrics);
    let exploratory_reason = if cross {
        Some("the runs have different machine profiles (--cross-profile)".to_string())
    } else if exploratory_mode {
        Some("the candidate's spec is `mode: exploratory`, which never gates".to_string())
    } else {
        None
    };
    Ok(GateReport {
        verdict,
        exploratory: exploratory_reason.is_some(),
        exploratory_reason,
        metrics,
        comparison,
    })
}

/// Holm-adjusts the p-values of `metrics` (those that have one) as one family, then gives
/// every metric its verdict and reason ([`judge`]; `candidates[i]` are metric i's candidate
/// replicate values, for the loss slope). Shared by [`gate`] and
/// [`crate::eval::compare_eval`], so both decide alike.
pub(crate) fn decide(
    metrics: &mut [MetricVerdict],
    candidates: &[&[f64]],
    level: f64,
) -> Result<(), GateError> {
    let alpha_one_sided = (1.0 - level) / 2.0;
    let p_index: Vec<usize> = (0..metrics.len())
        .filter(|i| metrics[*i].p_value.is_some())
        .collect();
    let p_values: Vec<f64> = p_index.iter().filter_map(|i| metrics[*i].p_value).collect();
    let adjusted = holm(&p_values)?;
    for (i, p) in p_index.iter().zip(adjusted) {
        metrics[*i].p_holm = Some(p);
    }
    for (i, v) in metrics.iter_mut().enumerate() {
        let direction = direction_of(&v.metric, v.class);
        let (verdict, mut reason) = judge(
            v,
            direction,
            candidates.get(i).copied().unwrap_or(&[]),
            alpha_one_sided,
        );
        if let Some(p) = &v.paired {
            reason.push_str("; ");
            reason.push_str(&p.describe());
        }
        v.verdict = verdict;
        v.reason = reason;
        v.to_decide = (verdict == Verdict::Inconclusive)
            .then(|| to_decide(v))
            .flatten();
    }
    Ok(())
}

/// Most replicates per side [`to_decide`] suggests; beyond it the ratio sits on the bound.
const MOST_REPLICATES: usize = 30;

/// What would turn an INCONCLUSIVE metric into a verdict, for people: the replicates per side
/// that would narrow its interval enough to clear the bound if the ratio holds (an interval's
/// width shrinks as one over the square root of the replicates), or, when the ratio sits so
/// near the bound that no reasonable count would do, that the tolerance is what to revisit.
fn to_decide(v: &MetricVerdict) -> Option<String> {
    let have = v.n.0.min(v.n.1);
    if let Some(p) = &v.paired {
        // Paired eval items: the interval narrows with the items both runs answered.
        let (r, lo, hi, bnd) = (v.ratio?, v.ci_lo?, v.ci_hi?, v.bound?);
        let gap = (r - bnd).abs();
        let factor = ((hi - lo) / 2.0 / gap).powi(2);
        return Some(if gap > 0.0 && factor.is_finite() && factor <= 10.0 {
            format!(
                "about {:.0} items answered by both runs (now {}) would narrow the interval \
                 enough if the ratio holds at {r:.3}",
                (p.items as f64 * factor.max(1.0)).ceil(),
                p.items
            )
        } else {
            format!(
                "the ratio {r:.3} sits too near the bound {bnd:.3} for a larger task to settle \
                 it: decide whether a change this size matters and set the tolerance \
                 (`gates.tolerances`) accordingly"
            )
        });
    }
    if have < MIN_REPLICATES {
        return Some(format!(
            "run at least {MIN_REPLICATES} replicates per side (`trials.replicates` in the spec)"
        ));
    }
    if let (Some(req), Some(min)) = (v.required_samples, v.min_samples)
        && min < req
    {
        return Some(format!(
            "run at least {req} requests per replicate (`load.requests`) for a {} with an interval",
            v.statistic
        ));
    }
    let (r, lo, hi, bnd) = (v.ratio?, v.ci_lo?, v.ci_hi?, v.bound?);
    if r <= 0.0 || lo <= 0.0 || hi <= lo || bnd <= 0.0 {
        return None;
    }
    let half = (hi.ln() - lo.ln()) / 2.0;
    let gap = (r.ln() - bnd.ln()).abs();
    let floor = if v.noise_floor_pct.is_none() {
        "; or record this machine's noise with A/A runs (`yardstick gate --calibrate`)"
    } else {
        ""
    };
    let need = (gap > 0.0)
        .then(|| (have as f64 * (half / gap).powi(2)).ceil() as usize)
        .filter(|n| *n <= MOST_REPLICATES)
        .map(|n| n.max(have + 1));
    Some(match need {
        Some(n) => format!(
            "about {n} replicates per side (now {have}) would narrow the interval enough if the \
             ratio holds at {r:.3} (`trials.replicates: {n}`){floor}"
        ),
        None => format!(
            "the ratio {r:.3} sits too near the bound {bnd:.3} for more replicates to settle it \
             (over {MOST_REPLICATES} per side): decide whether a change this size matters and set \
             the tolerance (`gates.tolerances`) accordingly{floor}"
        ),
    })
}

/// The verdict of one metric whose bound, CI and Holm p-value are known.
fn judge(
    v: &MetricVerdict,
    direction: Direction,
    candidate: &[f64],
    alpha_one_sided: f64,
) -> (Verdict, String) {
    if v.class == MetricClass::LossSlope {
        return loss_slope_verdict(candidate);
    }
    let side = match direction {
        Direction::HigherIsBetter => "drop",
        Direction::LowerIsBetter => "increase",
    };
    let points = matches!(v.class, MetricClass::Accuracy | MetricClass::Quality);
    let unit = if points { "point" } else { "%" };
    let what = match v.noise_floor_pct {
        Some(f) if f > v.tolerance_pct && !points => format!(
            "the profile's {f:.1} % noise floor (wider than the {:.1} % {side} tolerance)",
            v.tolerance_pct
        ),
        _ => format!("the {:.1} {unit} {side} tolerance", v.tolerance_pct),
    };
    if let (Some(req), Some(have)) = (v.required_samples, v.min_samples)
        && have < req
    {
        return (
            Verdict::Inconclusive,
            format!(
                "{} from {have} samples per replicate: a distribution-free CI of it needs at \
                 least {req}; run more requests per replicate to claim it",
                v.statistic
            ),
        );
    }
    let Some(bnd) = v.bound else {
        return (
            Verdict::Pass,
            format!("the baseline's {} is 0: nothing to lose", v.metric),
        );
    };
    if v.p_test.as_deref() == Some("exact_values")
        && let Some(r) = v.ratio
    {
        let beyond = match direction {
            Direction::LowerIsBetter => r > bnd,
            Direction::HigherIsBetter => r < bnd,
        };
        let how = format!(
            "every replicate gave the same value on both sides ({} and {}): no replicate noise, \
             the ratio {r:.4} is exact",
            v.baseline, v.candidate
        );
        return match (beyond, v.class.warn_only()) {
            (false, _) => (
                Verdict::Pass,
                format!("{how}, within {what} (bound {bnd:.3})"),
            ),
            (true, true) => (
                Verdict::Warn,
                format!("{how}, beyond {what} (bound {bnd:.3})"),
            ),
            (true, false) => (
                Verdict::Fail,
                format!("{how}, beyond {what} (bound {bnd:.3})"),
            ),
        };
    }
    let (Some(lo), Some(hi), Some(ph)) = (v.ci_lo, v.ci_hi, v.p_holm) else {
        let level = (1.0 - 2.0 * alpha_one_sided) * 100.0;
        return (
            Verdict::Inconclusive,
            format!(
                "too few replicates for confidence {level:.0} %: {} and {} replicates; a verdict \
                 needs at least {MIN_REPLICATES} on each side",
                v.n.0, v.n.1
            ),
        );
    };
    let (ok, bad) = match direction {
        Direction::LowerIsBetter => (hi <= bnd, lo > bnd),
        Direction::HigherIsBetter => (lo >= bnd, hi < bnd),
    };
    let test = match v.p_test.as_deref() {
        Some("welch_t_log") => "Welch t on log replicates, ",
        Some("welch_t_linear") => "Welch t on replicate values, ",
        _ => "",
    };
    let beside = match &v.ratio_test {
        Some(t) if v.p_test.as_deref() == Some("welch_t_log") => match t.permutation_p {
            Some(pp) => format!(
                "; exact permutation p = {pp:.3} (its floor with {} vs {} is {:.3}; {} per side \
                 would let it confirm alone)",
                v.n.0,
                v.n.1,
                t.permutation_min_p,
                replicates_for(alpha_one_sided)
            ),
            None => String::new(),
        },
        _ => String::new(),
    };
    if ok {
        (
            Verdict::Pass,
            format!("CI [{lo:.3}, {hi:.3}] within {what} (bound {bnd:.3})"),
        )
    } else if bad && ph < alpha_one_sided {
        let verdict = if v.class.warn_only() {
            Verdict::Warn
        } else {
            Verdict::Fail
        };
        (
            verdict,
            format!(
                "CI [{lo:.3}, {hi:.3}] entirely beyond {what} (bound {bnd:.3}, {test}Holm p = \
                 {ph:.2e}{beside})"
            ),
        )
    } else if v.class.warn_only() {
        (
            Verdict::Pass,
            format!("CI [{lo:.3}, {hi:.3}] not shown beyond {what} (warning only)"),
        )
    } else if bad {
        (
            Verdict::Inconclusive,
            format!(
                "CI [{lo:.3}, {hi:.3}] beyond {what} but not significant after Holm correction \
                 ({test}p = {ph:.2e}{beside})"
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!("CI [{lo:.3}, {hi:.3}] straddles the bound {bnd:.3} of {what}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::headline;
    use yardstick_error::UserFacing;
    use yardstick_store::warehouse::FactRow;

    /// A run with one point and the given replicate values of `ttft_ms p50` and
    /// `max_rss_bytes value` (no spec: realism defaults apply; profile `cpu-test`).
    fn run_data(id: &str, ttft: &[f64], rss: &[f64]) -> RunData {
        let fact = |metric: &str, statistic: &str, k: usize, v: f64| FactRow {
            run_id: id.into(),
            point_id: "p".into(),
            replicate: Some(k as u32),
            metric: metric.into(),
            statistic: statistic.into(),
            value: v,
            ci_lo: None,
            ci_hi: None,
            unit: "ms".into(),
            n: 1,
            artifact: None,
            row_group: None,
        };
        let mut facts: Vec<FactRow> = ttft
            .iter()
            .enumerate()
            .map(|(k, v)| fact("ttft_ms", "p50", k, *v))
            .collect();
        facts.extend(
            rss.iter()
                .enumerate()
                .map(|(k, v)| fact("max_rss_bytes", "value", k, *v)),
        );
        RunData {
            run: crate::testutil::run_row(id, "/nonexistent"),
            dir: "/nonexistent".into(),
            spec: None,
            spec_value: serde_json::Value::Null,
            env: serde_json::Value::Null,
            facts,
        }
    }

    fn verdict_of(report: &GateReport, metric: &str) -> Verdict {
        report
            .metrics
            .iter()
            .find(|m| m.metric == metric)
            .map(|m| m.verdict)
            .unwrap()
    }

    #[test]
    fn clear_regression_fails_and_stable_passes() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[100.0, 101.0, 99.0]);
        let same = run_data("b", &[40.1, 40.0, 40.2, 39.8, 40.3], &[100.0, 100.5, 99.5]);
        let r = gate(&base, &same, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{r:#?}");
        let slow = run_data("c", &[80.0, 80.3, 79.9, 80.1, 80.2], &[100.0, 101.0, 99.0]);
        let r = gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(verdict_of(&r, "ttft_ms"), Verdict::Fail);
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.metrics[1].p_holm.unwrap() >= r.metrics[1].p_value.unwrap());
    }

    /// A gate report reads back from its JSON (`gate --json`, what a server records) as the
    /// same report: verdicts, classes, tests, the comparison and its warnings.
    #[test]
    fn a_gate_report_reads_back_from_its_json() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[100.0, 101.0, 99.0]);
        let slow = run_data("b", &[48.0, 48.4, 47.9, 48.1, 48.3], &[100.0, 100.5, 99.5]);
        let r = gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Fail);
        let json = serde_json::to_value(&r).unwrap();
        let back: GateReport = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        assert_eq!(back.verdict, Verdict::Fail);
        assert_eq!(back.metrics.len(), r.metrics.len());
        assert_eq!(back.failing_points(), r.failing_points());
    }

    #[test]
    fn straddling_the_bound_or_too_few_replicates_is_inconclusive() {
        let base = run_data("a", &[40.0, 40.0, 40.0], &[]);
        // +3 % .. +8 %: the CI straddles 1.05.
        let mid = run_data("b", &[41.2, 42.0, 43.2], &[]);
        let r = gate(&base, &mid, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:#?}");
        assert!(r.metrics[0].reason.contains("straddles"));
        let two = run_data("c", &[40.0, 40.1], &[]);
        let r = gate(&base, &two, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Inconclusive);
        let why = &r.metrics[0].reason;
        assert!(
            why.contains("too few replicates for confidence 95 %"),
            "{why}"
        );
        assert!(why.contains("3 and 2 replicates"), "{why}");
        assert!(why.contains("at least 3 on each side"), "{why}");
    }

    #[test]
    fn memory_beyond_tolerance_only_warns() {
        let base = run_data("a", &[40.0, 40.1, 39.9], &[100.0, 101.0, 99.0]);
        let fat = run_data("b", &[40.0, 40.1, 39.9], &[130.0, 131.0, 129.0]);
        let r = gate(&base, &fat, &GateOptions::default()).unwrap();
        assert_eq!(verdict_of(&r, "max_rss_bytes"), Verdict::Warn);
        assert_eq!(r.verdict, Verdict::Warn);
    }

    #[test]
    fn spec_tolerances_override_the_defaults() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[]);
        let slower = run_data("b", &[44.0, 44.3, 43.9, 44.1, 44.2], &[]);
        let r = gate(&base, &slower, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Fail);
        let loose = GateOptions {
            tolerances: Some(Tolerances {
                latency_increase_pct: Some(20.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(gate(&base, &slower, &loose).unwrap().verdict, Verdict::Pass);
    }

    #[test]
    fn compare_warns_when_more_than_one_field_moved() {
        let mut a = run_data("a", &[40.0, 40.1, 39.9], &[]);
        let mut b = run_data("b", &[40.0, 40.1, 39.9], &[]);
        a.spec_value = serde_json::json!({"spec": {"trials": {"replicates": 3}, "x": 1}});
        a.env =
            serde_json::json!({"machine_profile": "cpu-test", "cpu": {"governor": "performance"}});
        b.spec_value = serde_json::json!({"spec": {"trials": {"replicates": 5}, "x": 1}});
        b.env =
            serde_json::json!({"machine_profile": "cpu-test", "cpu": {"governor": "powersave"}});
        let c = crate::compare::compare(&a, &b).unwrap();
        assert_eq!(c.spec_diffs[0].path, "spec.trials.replicates");
        assert_eq!(c.env_diffs[0].path, "env.cpu.governor");
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("more than one variable")),
            "{:?}",
            c.warnings
        );
        // One moved field: no such warning.
        b.env = a.env.clone();
        let c = crate::compare::compare(&a, &b).unwrap();
        assert!(
            !c.warnings
                .iter()
                .any(|w| w.contains("more than one variable"))
        );
    }

    #[test]
    fn gate_refuses_another_machine_profile() {
        let base = run_data("a", &[40.0, 40.1, 39.9], &[]);
        let mut other = run_data("b", &[40.0, 40.1, 39.9], &[]);
        other.run.machine_profile = Some("gpu-H100x8".into());
        let e = gate(&base, &other, &GateOptions::default()).unwrap_err();
        assert!(matches!(e, GateError::ProfileMismatch { .. }));
        let opts = GateOptions {
            cross_profile: true,
            ..Default::default()
        };
        let r = gate(&base, &other, &opts).unwrap();
        assert!(r.exploratory);
    }

    #[test]
    fn same_profile_passes_the_check() {
        assert_eq!(
            check_profiles(Some("cpu-a"), Some("cpu-a"), false).ok(),
            Some(false)
        );
    }

    #[test]
    fn different_profiles_are_refused_unless_cross_profile() {
        let e = check_profiles(Some("cpu-a"), Some("gpu-H100x8"), false).unwrap_err();
        assert!(matches!(e, GateError::ProfileMismatch { .. }));
        assert!(e.is_invalid_input());
        assert!(e.to_string().contains("cpu-a") && e.to_string().contains("gpu-H100x8"));
        assert_eq!(
            check_profiles(Some("cpu-a"), Some("gpu-H100x8"), true).ok(),
            Some(true)
        );
        assert!(check_profiles(None, None, false).is_err());
    }

    #[test]
    fn defaults_are_the_methodology_defaults() {
        assert_eq!(tolerance_pct(MetricClass::Throughput, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::Latency, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::StepTime, None), 5.0);
        assert_eq!(tolerance_pct(MetricClass::Memory, None), 10.0);
        let t = Tolerances {
            latency_increase_pct: Some(20.0),
            ..Default::default()
        };
        assert_eq!(tolerance_pct(MetricClass::Latency, Some(&t)), 20.0);
    }

    /// The review's case: with 3 replicates per side the old bootstrap over 3 medians reported
    /// p = 1e-4 (its floor), which no exact test of 3 vs 3 can support. Now the p-value is
    /// Welch's t on logs (assumption stated), the permutation p sits beside it with its floor.
    #[test]
    fn a_clear_regression_with_three_replicates_fails_on_welch_with_the_permutation_beside() {
        let base = run_data("a", &[50.0, 50.4, 49.7], &[]);
        let slow = run_data("b", &[60.1, 59.8, 60.5], &[]); // +20 %
        let r = gate(&base, &slow, &GateOptions::default()).unwrap();
        let m = &r.metrics[0];
        assert_eq!(m.verdict, Verdict::Fail, "{m:#?}");
        assert_eq!(m.p_test.as_deref(), Some("welch_t_log"));
        let t = m.ratio_test.unwrap();
        assert!(m.p_value.unwrap() < 1e-3 && m.p_value == t.welch_p, "{t:?}");
        assert_eq!((t.permutation_p, t.permutation_min_p), (Some(0.05), 0.05));
        assert!(
            m.reason.contains("Welch t on log replicates"),
            "{}",
            m.reason
        );
        assert!(
            m.reason.contains("floor with 3 vs 3 is 0.050"),
            "{}",
            m.reason
        );
        // Throughput halving, higher is better.
        let (a, b) = ([200.0, 204.0, 198.0], [150.0, 152.0, 149.0]);
        let t = ratio_beyond(&a, &b, 0.95, false).unwrap();
        assert!(t.welch_p.unwrap() < 1e-3);
    }

    /// A/A: the same distribution on both sides never FAILs, over many seeded draws.
    #[test]
    fn a_over_a_never_fails() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut draw = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| 50.0 * (1.0 + 0.02 * (rng.random::<f64>() - 0.5)))
                .collect()
        };
        for i in 0..200 {
            let n = 3 + i % 4;
            let (a, b) = (draw(n), draw(n));
            let r = gate(
                &run_data("a", &a, &[]),
                &run_data("b", &b, &[]),
                &GateOptions::default(),
            )
            .unwrap();
            assert_ne!(
                r.verdict,
                Verdict::Fail,
                "{a:?} vs {b:?}: {:#?}",
                r.metrics[0]
            );
        }
    }

    /// No spread within either run (a deterministic measurement): the ratio is exact and
    /// decides; no p-value is claimed.
    #[test]
    fn identical_replicates_are_an_exact_ratio_without_a_p_value() {
        let base = run_data("a", &[50.0, 50.0, 50.0], &[]);
        let slow = run_data("b", &[60.0, 60.0, 60.0], &[]);
        let r = gate(&base, &slow, &GateOptions::default()).unwrap();
        let m = &r.metrics[0];
        assert_eq!(m.verdict, Verdict::Fail, "{m:#?}");
        assert_eq!(m.p_test.as_deref(), Some("exact_values"));
        assert_eq!(m.p_value, None);
        assert!(
            m.reason.contains("the ratio 1.2000 is exact"),
            "{}",
            m.reason
        );
        let same = run_data("b", &[50.0, 50.0, 50.0], &[]);
        let r = gate(&base, &same, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].verdict, Verdict::Pass, "{:#?}", r.metrics[0]);
        assert_eq!(replicates_for(0.025), 4);
        assert_eq!(replicates_for(0.005), 5);
    }

    #[test]
    fn headline_metrics_are_medians_and_rates() {
        assert_eq!(headline("ttft_ms", "p50"), Some(MetricClass::Latency));
        assert_eq!(headline("ttft_ms", "p99"), None);
        assert_eq!(
            headline("gemm.f32.256", "value"),
            Some(MetricClass::Throughput)
        );
        assert_eq!(headline("step_time_s", "p50"), Some(MetricClass::StepTime));
        assert_eq!(
            headline("peak_mem_bytes", "value"),
            Some(MetricClass::Memory)
        );
        assert_eq!(
            direction_of("request_throughput", MetricClass::Throughput),
            Direction::HigherIsBetter
        );
    }

    #[test]
    fn verdicts_order_worst_last() {
        assert!(Verdict::Fail > Verdict::Inconclusive);
        assert!(Verdict::Inconclusive > Verdict::Warn);
        assert!(Verdict::Warn > Verdict::Pass);
    }

    /// A run with one point and, per (metric, statistic), replicate values with `n` samples each.
    fn run_with(id: &str, series: &[(&str, &str, &[f64], u64)], tails: &[&str]) -> RunData {
        let mut r = run_data(id, &[], &[]);
        for (metric, statistic, values, n) in series {
            for (k, v) in values.iter().enumerate() {
                r.facts.push(FactRow {
                    run_id: id.into(),
                    point_id: "p".into(),
                    replicate: Some(k as u32),
                    metric: (*metric).into(),
                    statistic: (*statistic).into(),
                    value: *v,
                    ci_lo: None,
                    ci_hi: None,
                    unit: String::new(),
                    n: *n,
                    artifact: None,
                    row_group: None,
                });
            }
        }
        if !tails.is_empty() {
            let yaml = format!("gates: {{tails: [{}]}}", tails.join(", "));
            let gates: yardstick_spec::Gates =
                serde_json::from_value(serde_json::json!({"tails": tails}))
                    .unwrap_or_else(|e| panic!("{yaml}: {e}"));
            r.spec = Some(yardstick_spec::BenchmarkRun {
                spec: Some(yardstick_spec::Spec {
                    gates: Some(gates),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        r
    }

    #[test]
    fn a_tail_claim_from_too_few_requests_is_inconclusive() {
        let p99 = [60.0, 61.0, 60.5];
        let base = run_with("a", &[("ttft_ms", "p99", &p99, 20)], &["p99"]);
        let cand = run_with("b", &[("ttft_ms", "p99", &p99, 20)], &["p99"]);
        let r = gate(&base, &cand, &GateOptions::default()).unwrap();
        let m = &r.metrics[0];
        assert_eq!(m.class, MetricClass::Tail);
        assert_eq!(m.verdict, Verdict::Inconclusive, "{m:#?}");
        assert_eq!(m.required_samples, Some(299));
        assert!(m.reason.contains("20 samples"), "{}", m.reason);
        // Enough requests: the same values now PASS (10 % tail tolerance).
        let base = run_with("a", &[("ttft_ms", "p99", &p99, 400)], &["p99"]);
        let cand = run_with("b", &[("ttft_ms", "p99", &p99, 400)], &["p99"]);
        let r = gate(&base, &cand, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].verdict, Verdict::Pass, "{:#?}", r.metrics[0]);
        // Without `gates.tails` the p99 is not gated at all.
        let base = run_with("a", &[("ttft_ms", "p99", &p99, 400)], &[]);
        let cand = run_with("b", &[("ttft_ms", "p99", &p99, 400)], &[]);
        assert!(
            gate(&base, &cand, &GateOptions::default())
                .unwrap()
                .metrics
                .is_empty()
        );
    }

    #[test]
    fn accuracy_tolerance_is_in_points() {
        let base = run_with("a", &[("accuracy", "value", &[0.80, 0.80, 0.80], 50)], &[]);
        // 1 point lower: within the 2-point tolerance.
        let ok = run_with("b", &[("accuracy", "value", &[0.79, 0.79, 0.79], 50)], &[]);
        let r = gate(&base, &ok, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].class, MetricClass::Accuracy);
        assert_eq!(r.metrics[0].verdict, Verdict::Pass, "{:#?}", r.metrics[0]);
        // The bound is 0.78 / 0.80 as a ratio.
        assert!((r.metrics[0].bound.unwrap() - 0.975).abs() < 1e-12);
        // 4 points lower: FAIL.
        let bad = run_with("c", &[("accuracy", "value", &[0.76, 0.76, 0.76], 50)], &[]);
        let r = gate(&base, &bad, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].verdict, Verdict::Fail, "{:#?}", r.metrics[0]);
    }

    #[test]
    fn quality_scores_are_gated_in_points_on_the_0_100_scale() {
        let o = GateOptions::default();
        let verdict = |metric: &str, base: f64, cand: f64, o: &GateOptions| {
            let a = run_with("a", &[(metric, "value", &[base, base, base], 20)], &[]);
            let b = run_with("b", &[(metric, "value", &[cand, cand, cand], 20)], &[]);
            let r = gate(&a, &b, o).unwrap();
            assert_eq!(r.metrics.len(), 1, "{metric} is gated");
            r.metrics[0].clone()
        };
        // BLEU is 0-100 already: 2 points below 30 is the ratio bound 28/30.
        let m = verdict("bleu", 30.0, 29.0, &o);
        assert_eq!(m.class, MetricClass::Quality);
        assert_eq!(m.tolerance_pct, 2.0);
        assert!((m.bound.unwrap() - 28.0 / 30.0).abs() < 1e-12, "{m:#?}");
        assert_eq!(m.verdict, Verdict::Pass, "{m:#?}");
        assert_eq!(verdict("bleu", 30.0, 27.0, &o).verdict, Verdict::Fail);
        // An improvement of any size passes.
        assert_eq!(verdict("bleu", 30.0, 45.0, &o).verdict, Verdict::Pass);
        // ROUGE-L and F1 are fractions: 2 points is 0.02.
        let m = verdict("mean_rouge_l", 0.50, 0.49, &o);
        assert!((m.bound.unwrap() - 0.96).abs() < 1e-12, "{m:#?}");
        assert_eq!(m.verdict, Verdict::Pass);
        assert_eq!(
            verdict("mean_rouge_l", 0.50, 0.47, &o).verdict,
            Verdict::Fail
        );
        let m = verdict("mean_f1", 0.80, 0.75, &o);
        assert_eq!(m.verdict, Verdict::Fail, "{m:#?}");
        assert!(
            m.reason.contains("2.0 point drop tolerance"),
            "{}",
            m.reason
        );
        // `gates.tolerances.qualityDropPoints` and per-metric overrides loosen it.
        let loose = GateOptions {
            tolerances: Some(Tolerances {
                quality_drop_points: Some(6.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            verdict("mean_f1", 0.80, 0.75, &loose).verdict,
            Verdict::Pass
        );
        assert_eq!(verdict("bleu", 30.0, 27.0, &loose).verdict, Verdict::Pass);
        let bleu_only = GateOptions {
            tolerances: Some(Tolerances {
                metrics: Some([("bleu".to_string(), 5.0)].into_iter().collect()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            verdict("bleu", 30.0, 27.0, &bleu_only).verdict,
            Verdict::Pass
        );
        assert_eq!(
            verdict("mean_f1", 0.80, 0.75, &bleu_only).verdict,
            Verdict::Fail
        );
        // A zero baseline has nothing to lose.
        assert_eq!(verdict("bleu", 0.0, 0.0, &o).verdict, Verdict::Pass);
        assert_eq!(tolerance_pct(MetricClass::Quality, None), 2.0);
        assert_eq!(
            direction_of("bleu", MetricClass::Quality),
            Direction::HigherIsBetter
        );
    }

    #[test]
    fn quality_scores_are_gated_on_paired_items_when_both_runs_kept_them() {
        let tmp = std::env::temp_dir().join(format!("ys-gate-quality-{}", std::process::id()));
        let point = "component.0.eval/sum";
        // 40 items; the candidate scores 0.1 lower on 4 of them: the mean drops 0.01
        // (1 point) while every replicate value is identical.
        let base: Vec<f64> = (0..40).map(|i| 0.4 + 0.01 * (i % 10) as f64).collect();
        let mut cand = base.clone();
        for x in cand.iter_mut().take(4) {
            *x -= 0.1;
        }
        let write = |dir: &std::path::Path, scores: &[f64]| {
            for k in 0..3 {
                let d = dir
                    .join("eval")
                    .join(yardstick_store::run::slug(point))
                    .join(format!("r{k}"));
                std::fs::create_dir_all(&d).unwrap();
                let lines: String = scores
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        format!(
                            "{{\"task\":\"sum\",\"id\":\"s{i}\",\"repeat\":0,\"correct\":{},\
                             \"score\":{s}}}\n",
                            *s >= 0.5
                        )
                    })
                    .collect();
                std::fs::write(d.join("items.jsonl"), lines).unwrap();
            }
        };
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let data = |id: &str, dir: &std::path::Path, scores: &[f64]| {
            write(dir, scores);
            let mut r = run_with(id, &[], &[]);
            for k in 0..3u32 {
                r.facts.push(FactRow {
                    run_id: id.into(),
                    point_id: point.into(),
                    replicate: Some(k),
                    metric: "mean_rouge_l".into(),
                    statistic: "value".into(),
                    value: mean(scores),
                    ci_lo: None,
                    ci_hi: None,
                    unit: String::new(),
                    n: 40,
                    artifact: None,
                    row_group: None,
                });
            }
            r.dir = dir.to_path_buf();
            r
        };
        let a = data("a", &tmp.join("a"), &base);
        let b = data("b", &tmp.join("b"), &cand);
        let r = gate(&a, &b, &GateOptions::default()).unwrap();
        let m = &r.metrics[0];
        assert_eq!(m.class, MetricClass::Quality);
        let p = m.paired.as_ref().expect("paired on items");
        assert_eq!(p.statistic, crate::paired::ItemStatistic::MeanScore);
        assert_eq!(p.items, 40);
        // A replicate bootstrap would be a zero-width interval at the ratio (every replicate
        // has the same mean); the paired one spans the item-to-item variation around it.
        let ratio = m.ratio.unwrap();
        assert!(
            m.ci_lo.unwrap() < ratio && m.ci_hi.unwrap() > ratio,
            "{m:#?}"
        );
        // 1 point lost of a 2-point tolerance: the CI reaches into the bound (or not), never FAIL.
        assert_ne!(m.verdict, Verdict::Fail, "{m:#?}");
        assert!(
            m.reason.contains("paired on 40 items (mean score"),
            "{}",
            m.reason
        );
        // Every item 0.1 lower (10 points): FAIL on the paired evidence.
        let worse: Vec<f64> = base.iter().map(|x| x - 0.1).collect();
        let c = data("c", &tmp.join("c"), &worse);
        let r = gate(&a, &c, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].verdict, Verdict::Fail, "{:#?}", r.metrics[0]);
        assert!(r.metrics[0].paired.is_some());
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn perplexity_fails_beyond_one_and_a_half_percent() {
        let base = run_with("a", &[("perplexity", "value", &[12.0, 12.0, 12.0], 1)], &[]);
        let ok = run_with("b", &[("perplexity", "value", &[12.1, 12.1, 12.1], 1)], &[]);
        let bad = run_with("c", &[("perplexity", "value", &[12.3, 12.3, 12.3], 1)], &[]);
        let o = GateOptions::default();
        assert_eq!(gate(&base, &ok, &o).unwrap().verdict, Verdict::Pass);
        assert_eq!(gate(&base, &bad, &o).unwrap().verdict, Verdict::Fail);
    }

    #[test]
    fn a_rising_loss_fails_whatever_the_baseline() {
        let base = run_with("a", &[("loss", "slope", &[-0.01, -0.012, -0.011], 50)], &[]);
        let up = run_with("b", &[("loss", "slope", &[0.002, 0.003, 0.001], 50)], &[]);
        let r = gate(&base, &up, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].class, MetricClass::LossSlope);
        assert_eq!(r.metrics[0].verdict, Verdict::Fail, "{:#?}", r.metrics[0]);
        assert!(r.metrics[0].reason.contains("rose in every replicate"));
        let down = run_with("c", &[("loss", "slope", &[-0.02, -0.01, 0.001], 50)], &[]);
        let r = gate(&base, &down, &GateOptions::default()).unwrap();
        assert_eq!(r.metrics[0].verdict, Verdict::Pass, "{:#?}", r.metrics[0]);
    }

    #[test]
    fn per_metric_tolerances_override_the_class() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[]);
        let slower = run_data("b", &[44.0, 44.3, 43.9, 44.1, 44.2], &[]);
        let with = |key: &str| GateOptions {
            tolerances: Some(Tolerances {
                metrics: Some([(key.to_string(), 15.0)].into_iter().collect()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            gate(&base, &slower, &with("ttft_ms/p50")).unwrap().verdict,
            Verdict::Pass
        );
        assert_eq!(
            gate(&base, &slower, &with("ttft_ms")).unwrap().verdict,
            Verdict::Pass
        );
        let r = gate(&base, &slower, &with("e2e_ms")).unwrap();
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.metrics[0].tolerance_pct, 5.0);
    }

    /// Issue 39: an INCONCLUSIVE verdict says what would decide it. A ratio near 1.03 whose
    /// interval straddles the 1.05 bound with 3 replicates: more replicates (a count that would
    /// narrow the interval to clear the bound if the ratio holds, above 3), or the noise floor
    /// when none is recorded. A PASS carries no such advice; a ratio on the bound gets the
    /// tolerance, not a replicate count.
    #[test]
    fn an_inconclusive_verdict_says_what_would_decide_it() {
        let base = run_data("a", &[40.0, 41.5, 39.0], &[]);
        let near = run_data("b", &[39.5, 41.8, 40.6], &[]);
        let r = gate(&base, &near, &GateOptions::default()).unwrap();
        let m = &r.metrics[0];
        assert_eq!(m.verdict, Verdict::Inconclusive, "{m:#?}");
        let advice = m.to_decide.as_deref().unwrap();
        let n: usize = advice
            .strip_prefix("about ")
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{advice}"));
        assert!(n > 3 && n <= MOST_REPLICATES, "{advice}");
        assert!(
            advice.contains(&format!("trials.replicates: {n}")),
            "{advice}"
        );
        assert!(advice.contains("gate --calibrate"), "{advice}");
        // The JSON carries it too.
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["metrics"][0]["to_decide"], advice);

        let quiet = run_data("c", &[40.0, 40.1, 39.9], &[]);
        let same = run_data("d", &[40.05, 40.0, 39.95], &[]);
        let r = gate(&quiet, &same, &GateOptions::default()).unwrap();
        assert_ne!(
            r.metrics[0].verdict,
            Verdict::Inconclusive,
            "{:#?}",
            r.metrics[0]
        );
        assert!(r.metrics[0].to_decide.is_none());

        // A ratio on the bound itself: no replicate count settles it.
        let mut v = m.clone();
        v.ratio = Some(m.bound.unwrap());
        let advice = to_decide(&v).unwrap();
        assert!(advice.contains("sits too near the bound"), "{advice}");
        // Too few replicates: the floor of three.
        v.n = (2, 3);
        assert!(to_decide(&v).unwrap().contains("at least 3 replicates"));
    }

    #[test]
    fn a_noise_floor_wider_than_the_tolerance_widens_the_bound() {
        let base = run_data("a", &[40.0, 40.3, 39.9, 40.1, 40.2], &[]);
        let slower = run_data("b", &[42.8, 43.1, 42.7, 42.9, 43.0], &[]);
        // +7 %: FAIL against the 5 % tolerance ...
        let r = gate(&base, &slower, &GateOptions::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Fail);
        // ... but within a profile whose A/A runs wander by 10 %.
        let mut floors = BTreeMap::new();
        floors.insert(("p".into(), "ttft_ms".into(), "p50".into()), 10.0);
        let o = GateOptions {
            noise_floors: floors,
            ..Default::default()
        };
        let r = gate(&base, &slower, &o).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.metrics);
        assert!((r.metrics[0].bound.unwrap() - 1.10).abs() < 1e-12);
        assert!(
            r.metrics[0].reason.contains("noise floor"),
            "{}",
            r.metrics[0].reason
        );
    }

    /// Issue 32: the direction comes from the metric's catalogue entry, not from its class. A
    /// throughput-class metric whose entry says lower is better (a time per unit of work filed
    /// under throughput) regresses when it rises: +20 % FAILs and −20 % PASSes. Taken from the
    /// class, the gate had it the wrong way round (the rise passed, the fall failed).
    #[test]
    fn a_metric_whose_class_and_direction_disagree_is_gated_by_its_direction() {
        let def = MetricDef {
            id: "seconds_per_batch",
            unit: "s",
            direction: yardstick_spec::metrics::Direction::LowerIsBetter,
            class: MetricClass::Throughput,
            statistics: &["value"],
            gated: Some("value"),
            definition: "Seconds per batch, filed under throughput.",
            headline: &[],
            interval: yardstick_spec::metrics::IntervalMethod::LogT,
        };
        let direction = direction_in(Some(&def), def.class);
        let tol = tolerance_pct(def.class, None);
        let bound = ratio_bound(def.class, direction, def.id, tol, 10.0, None).unwrap();
        let judged = |ratio: f64| {
            let v = MetricVerdict {
                point: "p".into(),
                metric: def.id.into(),
                statistic: "value".into(),
                class: def.class,
                tolerance_pct: tol,
                noise_floor_pct: None,
                bound: Some(bound),
                baseline: 10.0,
                candidate: 10.0 * ratio,
                ratio: Some(ratio),
                ci_lo: Some(ratio - 0.02),
                ci_hi: Some(ratio + 0.02),
                paired: None,
                n: (5, 5),
                min_samples: None,
                required_samples: None,
                p_value: Some(1e-4),
                p_test: Some("welch_t_log".into()),
                ratio_test: None,
                p_holm: Some(1e-4),
                verdict: Verdict::Inconclusive,
                reason: String::new(),
                to_decide: None,
            };
            judge(&v, direction, &[], 0.025)
        };
        let (verdict, reason) = judged(1.2);
        assert_eq!(verdict, Verdict::Fail, "{reason}");
        assert!(reason.contains("increase tolerance"), "{reason}");
        assert_eq!(judged(0.8).0, Verdict::Pass);
        assert!((bound - 1.05).abs() < 1e-12, "{bound}");
        assert_eq!(direction, Direction::LowerIsBetter);
    }
}
