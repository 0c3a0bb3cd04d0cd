//! The results behind `yardstick stats summarize` and `yardstick stats compare`: one typed value
//! each, serialised as the CLI's JSON and rendered for people from the same fields.

use serde::Serialize;

use crate::bootstrap::{self, BootstrapConfig, Method};
use crate::descriptive::Descriptive;
use crate::hypothesis::{self, MwuMethod};
use crate::outliers;
use crate::percentile::{min_samples_for_quantile_ci, percentile_sorted, quantile_ci_sorted};
use crate::statistic::Statistic;
use crate::steady_state::{self, Mser};
use crate::tail::{self, NormalTail};
use crate::{StatsError, check_finite, sorted};

/// The percentiles every summary reports.
pub const REPORTED_QUANTILES: [(&str, f64); 4] =
    [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

/// Settings of a summary or comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Confidence level in (0, 1).
    pub level: f64,
    /// Bootstrap seed.
    pub seed: u64,
    /// Bootstrap resamples of the median's and the ratio of medians' BCa intervals; `None`
    /// picks [`DEFAULT_RESAMPLES`]. (The mean's interval is ABC: analytic, no resamples.)
    pub resamples: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            level: 0.95,
            seed: 0,
            resamples: None,
        }
    }
}

/// The number of bootstrap resamples for `n` samples when every resample costs O(n) draws (a
/// bootstrap of the mean): 10,000, reduced for large samples so a bootstrap stays near 10⁸
/// draws (never below 200). `summarize` and `compare` use [`DEFAULT_RESAMPLES`] for the median
/// and the ABC interval for the mean instead; quantile and cluster bootstraps cost O(1) and
/// O(k log² n) per resample, so 10,000 is affordable for them at any n.
pub fn default_resamples(n: usize) -> usize {
    (100_000_000 / n.max(1)).clamp(200, 10_000)
}

/// The default number of bootstrap resamples for quantiles (the median) and the ratio of
/// medians, at any n: a resample's quantile is drawn exactly in O(1), whatever n.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// A `[lower, upper]` pair.
pub type Interval = [f64; 2];

/// Confidence intervals of a summary. Percentile intervals that n cannot support are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SummaryCi {
    /// Confidence level.
    pub level: f64,
    /// How the mean's interval was computed: "abc", BCa's analytic approximation (no
    /// resampling, no Monte Carlo error; see docs/stats.md).
    pub mean_method: Method,
    /// How the median's interval was computed: "bca" (bootstrap).
    pub median_method: Method,
    /// Bootstrap resamples drawn for the median.
    pub resamples: usize,
    /// Bootstrap seed (the median's interval; the mean's does not depend on it).
    pub seed: u64,
    /// ABC interval of the mean; `None` when n < 2.
    pub mean: Option<Interval>,
    /// BCa interval of the median; `None` when n < 2 or the bootstrap is degenerate.
    pub median: Option<Interval>,
    /// Order-statistic interval of the 50th percentile.
    pub p50: Option<Interval>,
    /// Order-statistic interval of the 90th percentile.
    pub p90: Option<Interval>,
    /// Order-statistic interval of the 95th percentile.
    pub p95: Option<Interval>,
    /// Order-statistic interval of the 99th percentile (needs n >= 299 at 95 %).
    pub p99: Option<Interval>,
    /// The smallest n for which each percentile interval exists at this level.
    pub min_n: MinN,
}

/// Smallest sample sizes for the percentile intervals.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MinN {
    /// For p50.
    pub p50: usize,
    /// For p90.
    pub p90: usize,
    /// For p95.
    pub p95: usize,
    /// For p99.
    pub p99: usize,
}

/// Outliers found (reported, not removed). Indices are 0-based positions in the input.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OutlierReport {
    /// Count beyond 1.5 IQR but within 3 IQR.
    pub tukey_mild: usize,
    /// Count beyond 3 IQR.
    pub tukey_severe: usize,
    /// Count with MAD modified z-score > 3.5.
    pub mad: usize,
    /// Indices of the mild Tukey outliers.
    pub tukey_mild_indices: Vec<usize>,
    /// Indices of the severe Tukey outliers.
    pub tukey_severe_indices: Vec<usize>,
    /// Indices of the MAD outliers.
    pub mad_indices: Vec<usize>,
}

/// Everything `yardstick stats summarize` reports about one sample.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); `None` when n < 2.
    pub stddev: Option<f64>,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Median.
    pub median: f64,
    /// 50th percentile (type 7, as numpy).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Coefficient of variation; `None` when undefined.
    pub cv: Option<f64>,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// Adjusted skewness; `None` when n < 3 or constant data.
    pub skewness: Option<f64>,
    /// Confidence intervals.
    pub ci: SummaryCi,
    /// Outliers.
    pub outliers: OutlierReport,
    /// The normal-assumption p99 (mean + 2.326 σ) next to the empirical one; `None` when n < 2.
    pub normal_tail: Option<NormalTail>,
    /// MSER-5 over the input order (a time series); `None` when n < 10.
    pub steady_state: Option<Mser>,
}

fn check_level(level: f64) -> Result<(), StatsError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidParameter(format!(
            "confidence level {level} is outside (0, 1)"
        )))
    }
}

/// Summarises `data` (in input order, which MSER-5 treats as time order).
pub fn summarize(data: &[f64], opts: &Options) -> Result<Summary, StatsError> {
    check_finite(data)?;
    check_level(opts.level)?;
    // One sorted copy serves every order statistic below (percentiles, their intervals, the
    // median's bootstrap, the MAD, Tukey's quartiles, the tail).
    let s = sorted(data);
    let d = Descriptive::of_sorted(&s);
    let n = d.n;
    let resamples = opts.resamples.unwrap_or(DEFAULT_RESAMPLES);
    let boot = |stat, method| {
        if n < 2 {
            return None;
        }
        let cfg = BootstrapConfig {
            resamples,
            level: opts.level,
            seed: opts.seed,
            method,
        };
        bootstrap::bootstrap_ci_sorted(&s, stat, &cfg)
            .ok()
            .map(|ci| [ci.lower, ci.upper])
    };
    let pci = |q| {
        quantile_ci_sorted(&s, q, opts.level)
            .ok()
            .map(|ci| [ci.lower, ci.upper])
    };
    let min_n = |q| min_samples_for_quantile_ci(q, opts.level);
    let tukey = outliers::tukey_sorted(data, &s);
    let mad = outliers::mad_z_sorted(data, &s);
    Ok(Summary {
        n,
        mean: d.mean,
        stddev: d.stddev,
        min: d.min,
        max: d.max,
        median: d.median,
        p50: percentile_sorted(&s, 0.5),
        p90: percentile_sorted(&s, 0.9),
        p95: percentile_sorted(&s, 0.95),
        p99: percentile_sorted(&s, 0.99),
        cv: d.cv,
        mad: d.mad,
        skewness: d.skewness,
        ci: SummaryCi {
            level: opts.level,
            mean_method: Method::Abc,
            median_method: Method::Bca,
            resamples,
            seed: opts.seed,
            mean: boot(Statistic::Mean, Method::Abc),
            median: boot(Statistic::Median, Method::Bca),
            p50: pci(0.5),
            p90: pci(0.9),
            p95: pci(0.95),
            p99: pci(0.99),
            min_n: MinN {
                p50: min_n(0.5)?,
                p90: min_n(0.9)?,
                p95: min_n(0.95)?,
                p99: min_n(0.99)?,
            },
        },
        outliers: OutlierReport {
            tukey_mild: tukey.mild.len(),
            tukey_severe: tukey.severe.len(),
            mad: mad.indices.len(),
            tukey_mild_indices: tukey.mild,
            tukey_severe_indices: tukey.severe,
            mad_indices: mad.indices,
        },
        normal_tail: tail::normal_tail_of(&d, &s, 0.99).ok(),
        steady_state: steady_state::mser5(data).ok(),
    })
}

/// Which sample is larger, at the confidence level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No difference established.
    Same,
    /// The baseline A is larger.
    AGreater,
    /// The candidate B is larger.
    BGreater,
}

/// Everything `yardstick stats compare A B` reports. A is the baseline, B the candidate.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// Summary of the baseline.
    pub a: Summary,
    /// Summary of the candidate.
    pub b: Summary,
    /// Confidence level of the verdict and intervals.
    pub level: f64,
    /// Two-sided Mann–Whitney U p-value.
    pub mann_whitney_p: f64,
    /// U of sample A (pairs with a > b, ties ½).
    pub mann_whitney_u: f64,
    /// Exact or asymptotic.
    pub mann_whitney_method: MwuMethod,
    /// Two-sided Welch's t p-value; `None` when a sample has n < 2 or no variance.
    pub welch_p: Option<f64>,
    /// Welch's t for mean(B) − mean(A).
    pub welch_t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub welch_df: Option<f64>,
    /// median(B) / median(A); `None` when median(A) = 0.
    pub ratio_of_medians: Option<f64>,
    /// BCa bootstrap interval of the ratio of medians; `None` when undefined or degenerate.
    pub ratio_ci: Option<Interval>,
    /// Cliff's delta, P(B > A) − P(B < A).
    pub cliffs_delta: f64,
    /// Cohen's d, (mean(B) − mean(A)) / pooled σ; `None` when undefined.
    pub cohens_d: Option<f64>,
    /// The verdict: a difference needs the rank test to reject at 1 − level *and* the ratio CI
    /// (when it exists) to exclude 1 in the same direction as Cliff's delta.
    pub verdict: Verdict,
}

/// Compares baseline `a` with candidate `b`.
pub fn compare(a: &[f64], b: &[f64], opts: &Options) -> Result<Comparison, StatsError> {
    let sa = summarize(a, opts)?;
    let sb = summarize(b, opts)?;
    let mwu = hypothesis::mann_whitney(a, b)?;
    let welch = hypothesis::welch_t(b, a).ok();
    let delta = hypothesis::cliffs_delta(a, b)?;
    let resamples = opts.resamples.unwrap_or(DEFAULT_RESAMPLES);
    let cfg = BootstrapConfig {
        resamples,
        level: opts.level,
        seed: opts.seed,
        method: Method::Bca,
    };
    let ratio = (sa.median != 0.0).then(|| sb.median / sa.median);
    let ratio_ci = bootstrap::ratio_of_medians_ci(a, b, &cfg)
        .ok()
        .map(|ci| [ci.lower, ci.upper]);
    let alpha = 1.0 - opts.level;
    // For a negative baseline median a larger B gives a ratio below 1.
    let b_up = |ci: Interval| {
        if sa.median > 0.0 {
            ci[0] > 1.0
        } else {
            ci[1] < 1.0
        }
    };
    let b_down = |ci: Interval| {
        if sa.median > 0.0 {
            ci[1] < 1.0
        } else {
            ci[0] > 1.0
        }
    };
    let verdict = if mwu.p_value >= alpha || delta == 0.0 {
        Verdict::Same
    } else if delta > 0.0 {
        if ratio_ci.is_none_or(b_up) {
            Verdict::BGreater
        } else {
            Verdict::Same
        }
    } else if ratio_ci.is_none_or(b_down) {
        Verdict::AGreater
    } else {
        Verdict::Same
    };
    Ok(Comparison {
        level: opts.level,
        mann_whitney_p: mwu.p_value,
        mann_whitney_u: mwu.u,
        mann_whitney_method: mwu.method,
        welch_p: welch.map(|w| w.p_value),
        welch_t: welch.map(|w| w.t),
        welch_df: welch.map(|w| w.df),
        ratio_of_medians: ratio,
        ratio_ci,
        cliffs_delta: delta,
        cohens_d: hypothesis::cohens_d(a, b).ok(),
        verdict,
        a: sa,
        b: sb,
    })
}
