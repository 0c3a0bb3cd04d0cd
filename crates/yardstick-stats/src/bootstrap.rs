//! Bootstrap confidence intervals: percentile and BCa (bias-corrected and accelerated, Efron &
//! Tibshirani 1993, ch. 14), for the mean, the median, any quantile and the ratio of two
//! medians; and the cluster bootstrap, which resamples replicates first and then the samples
//! within them, so run-to-run variance is not mistaken for precision.
//!
//! Every function takes a seed and draws from ChaCha8 (`rand_chacha`): identical inputs and seed
//! give identical intervals on every platform.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

use crate::cluster::Clusters;
use crate::descriptive::mean;
use crate::percentile::{lerp, median_sorted, percentile_sorted, virtual_index};
use crate::statistic::Statistic;
use crate::{StatsError, check_finite, resample, sorted};

/// How the interval is read off the bootstrap distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The plain percentile interval.
    Percentile,
    /// Bias-corrected and accelerated (second-order accurate; the default).
    Bca,
    /// ABC, the approximate bootstrap confidence interval (DiCiccio & Efron 1992): BCa's
    /// analytic approximation, no resampling. Smooth statistics only: the mean.
    Abc,
}

/// Settings shared by every bootstrap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BootstrapConfig {
    /// Number of resamples (e.g. 10,000).
    pub resamples: usize,
    /// Confidence level in (0, 1).
    pub level: f64,
    /// PRNG seed.
    pub seed: u64,
    /// Interval method.
    pub method: Method,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            level: 0.95,
            seed: 0,
            method: Method::Bca,
        }
    }
}

impl BootstrapConfig {
    fn validate(&self) -> Result<(), StatsError> {
        if self.method == Method::Abc {
            return Err(abc_needs_the_mean());
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(StatsError::InvalidParameter(format!(
                "confidence level {} is outside (0, 1)",
                self.level
            )));
        }
        if self.resamples < 2 {
            return Err(StatsError::InvalidParameter(
                "bootstrap needs >= 2 resamples".into(),
            ));
        }
        Ok(())
    }
}

/// A bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BootstrapCi {
    /// The statistic of the original data.
    pub estimate: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// Bootstrap CI for `stat` of one sample. With [`Method::Abc`] (the mean only) this is the
/// analytic [`abc_mean_ci`]: no resamples, and `resamples` and `seed` are ignored.
pub fn bootstrap_ci(
    data: &[f64],
    stat: Statistic,
    cfg: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    check_finite(data)?;
    if cfg.method == Method::Abc && stat == Statistic::Mean {
        return abc_mean_ci(data, cfg.level);
    }
    bootstrap_ci_sorted(&sorted(data), stat, cfg)
}

/// Like [`bootstrap_ci`] for data already sorted ascending (non-empty and finite; not checked
/// beyond that). Resample r draws from ChaCha8 stream r of `cfg.seed`: quantiles of a resample
/// are drawn exactly from the law of its order statistics in O(1), the mean from block counts
/// (see `docs/stats.md`), and long bootstraps of the mean run on all cores with identical results.
pub fn bootstrap_ci_sorted(
    sorted_data: &[f64],
    stat: Statistic,
    cfg: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    if cfg.method == Method::Abc {
        return match stat {
            Statistic::Mean => abc_mean_ci(sorted_data, cfg.level),
            _ => Err(abc_needs_the_mean()),
        };
    }
    cfg.validate()?;
    check_stat(stat)?;
    if sorted_data.is_empty() {
        return Err(StatsError::Empty);
    }
    let s = sorted_data;
    let n = s.len();
    let estimate = stat_of_sorted(s, stat);
    let mut replicates = match stat.quantile() {
        None => {
            let blocks = resample::blocks(n);
            let threads = resample::threads_for(n.saturating_mul(cfg.resamples));
            resample::replicates(
                cfg.resamples,
                cfg.seed,
                threads,
                resample::MeanScratch::new,
                |scratch, rng| resample::resample_mean(rng, s, &blocks, scratch),
            )
        }
        Some(q) => resample::replicates(
            cfg.resamples,
            cfg.seed,
            1,
            || (),
            |_, rng| resample_quantile(rng, s, stat, q),
        ),
    };
    finish(estimate, &mut replicates, || vec![jackknife(s, stat)], cfg)
}

/// Bootstrap CI for median(b) / median(a): `a` is the baseline, `b` the candidate. The two
/// samples are resampled independently.
pub fn ratio_of_medians_ci(
    a: &[f64],
    b: &[f64],
    cfg: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    cfg.validate()?;
    check_finite(a)?;
    check_finite(b)?;
    let (sa, sb) = (sorted(a), sorted(b));
    let (ma, mb) = (median_sorted(&sa), median_sorted(&sb));
    if ma == 0.0 {
        return Err(StatsError::Undefined(
            "ratio of medians: the baseline median is 0".into(),
        ));
    }
    let estimate = mb / ma;
    let mut replicates = resample::replicates(
        cfg.resamples,
        cfg.seed,
        1,
        || (),
        |_, rng| {
            let ma_star = resample_quantile(rng, &sa, Statistic::Median, 0.5);
            let mb_star = resample_quantile(rng, &sb, Statistic::Median, 0.5);
            mb_star / ma_star
        },
    );
    if replicates.iter().any(|r| !r.is_finite()) {
        return Err(StatsError::Undefined(
            "ratio of medians: a resampled baseline median is 0".into(),
        ));
    }
    finish(
        estimate,
        &mut replicates,
        || ratio_of_medians_jackknife(&sa, &sb),
        cfg,
    )
}

/// A paired bootstrap of mean(b) / mean(a): `a[i]` and `b[i]` are one unit (an eval item)
/// measured under the baseline and the candidate, so pairs are resampled together and the
/// correlation between the two runs (most items answered alike) narrows the interval.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRatio {
    /// The interval (percentile or BCa per `cfg.method`).
    pub ci: BootstrapCi,
    /// The sorted bootstrap replicates of the ratio, for one-sided tail shares.
    pub replicates: Vec<f64>,
}

/// Paired bootstrap CI of mean(b) / mean(a) (see [`PairedRatio`]). Errors when the slices
/// differ in length, are empty, or the baseline's mean is 0.
pub fn paired_ratio_of_means_ci(
    a: &[f64],
    b: &[f64],
    cfg: &BootstrapConfig,
) -> Result<PairedRatio, StatsError> {
    paired_ratio_of_sums_ci(a, b, 1, |s| s[0], cfg).map_err(|e| match e {
        StatsError::Undefined(_) => {
            StatsError::Undefined("ratio of means: the baseline mean is 0".into())
        }
        other => other,
    })
}

/// Paired bootstrap CI of `stat(Σ b) / stat(Σ a)` (see [`PairedRatio`]) for a statistic of
/// summed per-unit sufficient statistics: unit i contributes the `width` values
/// `a[i*width..(i+1)*width]` under the baseline and the same slice of `b` under the candidate;
/// a resample draws units with replacement (the same units for both), sums their vectors and
/// applies `stat` to each sum. With `width` 1 and `stat` the identity this is the ratio of
/// means; with n-gram match and total counts it is the ratio of corpus BLEU scores, as
/// sacreBLEU's paired bootstrap recomputes it. Errors when the slices differ in length, are
/// empty or not a multiple of `width`, or `stat` of the baseline's full sum is 0.
pub fn paired_ratio_of_sums_ci<F>(
    a: &[f64],
    b: &[f64],
    width: usize,
    stat: F,
    cfg: &BootstrapConfig,
) -> Result<PairedRatio, StatsError>
where
    F: Fn(&[f64]) -> f64 + Sync,
{
    let n = paired_units(a, b, width, cfg)?;
    let (sa, sb) = (unit_sums(a, width), unit_sums(b, width));
    let (fa, fb) = (stat(&sa), stat(&sb));
    if fa == 0.0 || !fa.is_finite() {
        return Err(StatsError::Undefined(
            "paired ratio: the baseline's statistic is 0".into(),
        ));
    }
    let estimate = fb / fa;
    let mut replicates = resample::replicates(
        cfg.resamples,
        cfg.seed,
        1,
        || (vec![0.0; width], vec![0.0; width]),
        |(xa, xb), rng| {
            resample_unit_sums(rng, a, b, width, xa, xb);
            let (ra, rb) = (stat(xa), stat(xb));
            // A resample with a zero baseline: the candidate cannot be worse than it
            // (`f64::MAX` stands for +∞ and keeps percentile interpolation finite).
            if ra == 0.0 {
                if rb == 0.0 { 1.0 } else { f64::MAX }
            } else {
                rb / ra
            }
        },
    );
    let ci = finish(
        estimate,
        &mut replicates,
        || {
            let loo = (0..n)
                .map(|i| {
                    let minus = |s: &[f64], x: &[f64]| -> Vec<f64> {
                        s.iter()
                            .zip(&x[i * width..(i + 1) * width])
                            .map(|(t, v)| t - v)
                            .collect()
                    };
                    let d = stat(&minus(&sa, a));
                    if d == 0.0 {
                        1.0
                    } else {
                        stat(&minus(&sb, b)) / d
                    }
                })
                .collect();
            vec![loo]
        },
        cfg,
    )?;
    replicates.sort_by(f64::total_cmp);
    Ok(PairedRatio { ci, replicates })
}

/// Checks paired unit data (see [`paired_ratio_of_sums_ci`]) and returns the number of units.
fn paired_units(
    a: &[f64],
    b: &[f64],
    width: usize,
    cfg: &BootstrapConfig,
) -> Result<usize, StatsError> {
    cfg.validate()?;
    check_finite(a)?;
    check_finite(b)?;
    if a.len() != b.len() {
        return Err(StatsError::InvalidParameter(format!(
            "paired samples differ in length ({} vs {})",
            a.len(),
            b.len()
        )));
    }
    if width == 0 || !a.len().is_multiple_of(width) {
        return Err(StatsError::InvalidParameter(format!(
            "{} values are not units of {width}",
            a.len()
        )));
    }
    Ok(a.len() / width)
}

/// The element-wise sum of `x`'s units of `width` values (what the paired bootstraps apply their
/// statistic to).
pub fn unit_sums(x: &[f64], width: usize) -> Vec<f64> {
    let mut s = vec![0.0; width];
    for u in x.chunks_exact(width) {
        for (t, v) in s.iter_mut().zip(u) {
            *t += v;
        }
    }
    s
}

/// One paired resample: draws n units with replacement (the same for both sides) into the
/// sums `xa` and `xb`.
fn resample_unit_sums(
    rng: &mut ChaCha8Rng,
    a: &[f64],
    b: &[f64],
    width: usize,
    xa: &mut [f64],
    xb: &mut [f64],
) {
    let n = a.len() / width;
    xa.iter_mut().for_each(|x| *x = 0.0);
    xb.iter_mut().for_each(|x| *x = 0.0);
    for _ in 0..n {
        let i = rng.random_range(0..n);
        for j in 0..width {
            xa[j] += a[i * width + j];
            xb[j] += b[i * width + j];
        }
    }
}

/// A paired bootstrap of a difference (see [`paired_difference_of_sums`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PairedDifference {
    /// `stat(Σ b) − stat(Σ a)` over all units.
    pub estimate: f64,
    /// The percentile interval at the configured level.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
    /// The sorted bootstrap replicates of the difference, for one-sided tail shares.
    pub replicates: Vec<f64>,
}

impl PairedDifference {
    /// Two-sided bootstrap p-value of "no difference": twice the smaller share of replicates
    /// on either side of 0, at most 1.
    pub fn p_value(&self) -> f64 {
        if self.replicates.is_empty() {
            return 1.0;
        }
        let le = self.replicates.iter().filter(|d| **d <= 0.0).count() as f64;
        let ge = self.replicates.iter().filter(|d| **d >= 0.0).count() as f64;
        (2.0 * le.min(ge) / self.replicates.len() as f64).min(1.0)
    }
}

/// Paired bootstrap of `stat(Σ b) − stat(Σ a)`, with units as in [`paired_ratio_of_sums_ci`]
/// (unit i contributes `a[i*width..(i+1)*width]` and the same slice of `b`; a resample draws
/// units with replacement, the same ones for both). The interval is the percentile interval
/// (`cfg.method` is not consulted: a difference of two corpus-level scores has no cheap
/// jackknife). Used for eval comparisons (mean score, corpus BLEU) where the question is "by how
/// many points", not "by what factor". Errors when the slices differ in length, are empty or
/// are not a multiple of `width`.
pub fn paired_difference_of_sums<F>(
    a: &[f64],
    b: &[f64],
    width: usize,
    stat: F,
    cfg: &BootstrapConfig,
) -> Result<PairedDifference, StatsError>
where
    F: Fn(&[f64]) -> f64 + Sync,
{
    if paired_units(a, b, width, cfg)? == 0 {
        return Err(StatsError::InvalidParameter("no paired units".into()));
    }
    let estimate = stat(&unit_sums(b, width)) - stat(&unit_sums(a, width));
    let mut replicates = resample::replicates(
        cfg.resamples,
        cfg.seed,
        1,
        || (vec![0.0; width], vec![0.0; width]),
        |(xa, xb), rng| {
            resample_unit_sums(rng, a, b, width, xa, xb);
            stat(xb) - stat(xa)
        },
    );
    let (lower, upper) = percentile_interval(&mut replicates, cfg.level);
    Ok(PairedDifference {
        estimate,
        lower,
        upper,
        replicates,
    })
}

/// The quantile statistic (`stat` with quantile `q`) of one bootstrap resample of sorted data,
/// from the exactly drawn order statistics it needs: numpy's median (the mean of the middle two
/// for even n) or type-7 interpolation.
fn resample_quantile(rng: &mut ChaCha8Rng, s: &[f64], stat: Statistic, q: f64) -> f64 {
    let n = s.len();
    if stat == Statistic::Median {
        let even = n.is_multiple_of(2);
        let (i, j) = resample::order_statistic_indices(rng, n, (n - 1) / 2, even);
        if even { (s[i] + s[j]) / 2.0 } else { s[i] }
    } else {
        let (lo, t) = virtual_index(n, q);
        let (i, j) = resample::order_statistic_indices(rng, n, lo, t > 0.0);
        lerp(s[i], s[j], t)
    }
}

/// Cluster bootstrap CI for `stat` of the pooled samples of several replicates: each resample
/// draws replicates with replacement, then samples with replacement within each drawn
/// replicate. BCa's acceleration comes from leaving one replicate out at a time.
///
/// No resample is materialised (see `cluster.rs`): the mean costs one blocked draw per pooled
/// sample, a quantile O(k log² n) per resample; memory is O(k) per thread beyond one sorted
/// copy of the data. Resample r draws from ChaCha8 stream r of `cfg.seed`, so the interval does
/// not depend on the thread count.
pub fn cluster_bootstrap_ci(
    replicates: &[Vec<f64>],
    stat: Statistic,
    cfg: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    cfg.validate()?;
    check_stat(stat)?;
    if replicates.len() < 2 {
        return Err(StatsError::NotEnoughSamples {
            what: "a cluster bootstrap".into(),
            needed: 2,
            have: replicates.len(),
        });
    }
    for r in replicates {
        check_finite(r)?;
    }
    let mut pooled: Vec<f64> = replicates.concat();
    let estimate = stat.compute(&mut pooled);
    drop(pooled);
    let k = replicates.len();
    let clusters = Clusters::new(replicates);
    let threads = match stat {
        Statistic::Mean => resample::threads_for(clusters.total().saturating_mul(cfg.resamples)),
        _ => 1,
    };
    let mut stats = resample::replicates(
        cfg.resamples,
        cfg.seed,
        threads,
        || clusters.scratch(),
        |scratch, rng| clusters.draw(rng, stat, scratch),
    );
    finish(
        estimate,
        &mut stats,
        || {
            let loo = (0..k)
                .map(|i| {
                    let mut rest: Vec<f64> = replicates
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .flat_map(|(_, r)| r.iter().copied())
                        .collect();
                    stat.compute(&mut rest)
                })
                .collect();
            vec![loo]
        },
        cfg,
    )
}

fn abc_needs_the_mean() -> StatsError {
    StatsError::InvalidParameter(
        "the ABC interval is implemented for the mean of one sample only; use BCa".into(),
    )
}

/// The ABC interval (approximate bootstrap confidence; DiCiccio & Efron 1992, Efron &
/// Tibshirani 1993 §14.4) for the mean of `data` (any order): BCa's analytic approximation,
/// second-order accurate like BCa, with no resampling and so no Monte Carlo error and no seed.
///
/// For the mean, `abcnon`'s numerical derivatives are exact: the empirical influence values
/// are dᵢ = xᵢ − x̄, the second derivatives vanish, so the bias and curvature terms are 0,
/// ẑ₀ = â, and with σ̂ = √(Σd²)/n and â = Σd³ / (6 (Σd²)^{3/2}) (BCa's jackknife acceleration
/// for the mean) the endpoint for the normal quantile z is x̄ + σ̂ w / (1 − â w)², w = ẑ₀ + z.
/// O(n). Needs n ≥ 2; constant data give [x̄, x̄].
pub fn abc_mean_ci(data: &[f64], level: f64) -> Result<BootstrapCi, StatsError> {
    check_finite(data)?;
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::InvalidParameter(format!(
            "confidence level {level} is outside (0, 1)"
        )));
    }
    let n = data.len();
    if n < 2 {
        return Err(StatsError::NotEnoughSamples {
            what: "an ABC interval".into(),
            needed: 2,
            have: n,
        });
    }
    let estimate = mean(data);
    let (s2, s3) = data.iter().fold((0.0, 0.0), |(s2, s3), x| {
        let d = x - estimate;
        (s2 + d * d, s3 + d * d * d)
    });
    if s2 <= 0.0 {
        return Ok(BootstrapCi {
            estimate,
            lower: estimate,
            upper: estimate,
        });
    }
    let sigma = s2.sqrt() / n as f64;
    let accel = s3 / (6.0 * s2 * s2.sqrt());
    let z0 = accel;
    let z = Normal::standard().inverse_cdf((1.0 - level) / 2.0);
    let endpoint = |z: f64| {
        let w = z0 + z;
        // λ(w) = w / (1 − âw)² increases with w only while |âw| < 1 (beyond, the expansion
        // has no meaning). |â| < 1/6 always, so this holds up to |z| ≈ 5.8.
        if (accel * w).abs() < 1.0 {
            Ok(estimate + sigma * w / (1.0 - accel * w).powi(2))
        } else {
            Err(StatsError::Undefined(format!(
                "ABC: the level {level} is too extreme for acceleration {accel}"
            )))
        }
    };
    Ok(BootstrapCi {
        estimate,
        lower: endpoint(z)?,
        upper: endpoint(-z)?,
    })
}

fn check_stat(stat: Statistic) -> Result<(), StatsError> {
    match stat.quantile() {
        Some(q) if !(0.0..=1.0).contains(&q) => Err(StatsError::InvalidParameter(format!(
            "quantile {q} is outside [0, 1]"
        ))),
        _ => Ok(()),
    }
}

fn stat_of_sorted(s: &[f64], stat: Statistic) -> f64 {
    match stat {
        Statistic::Mean => mean(s),
        Statistic::Median => median_sorted(s),
        Statistic::Quantile(q) => percentile_sorted(s, q),
    }
}

fn finish(
    estimate: f64,
    replicates: &mut [f64],
    jackknife: impl FnOnce() -> Vec<Vec<f64>>,
    cfg: &BootstrapConfig,
) -> Result<BootstrapCi, StatsError> {
    let (lower, upper) = match cfg.method {
        Method::Percentile => percentile_interval(replicates, cfg.level),
        Method::Bca => bca_interval(estimate, replicates, &jackknife(), cfg.level)?,
        Method::Abc => return Err(abc_needs_the_mean()),
    };
    Ok(BootstrapCi {
        estimate,
        lower,
        upper,
    })
}

/// Leave-one-out values of `stat` over sorted data, each in O(1) (mean and quantiles).
pub fn jackknife(sorted_data: &[f64], stat: Statistic) -> Vec<f64> {
    let n = sorted_data.len();
    if n < 2 {
        return vec![stat_of_sorted(sorted_data, stat); n];
    }
    match stat.quantile() {
        None => {
            let total: f64 = sorted_data.iter().sum();
            sorted_data
                .iter()
                .map(|x| (total - x) / (n - 1) as f64)
                .collect()
        }
        Some(q) => {
            let h = (n - 2) as f64 * q;
            let lo = (h.floor() as usize).min(n - 2);
            let hi = (lo + 1).min(n - 2);
            let t = h - lo as f64;
            // With sorted position i removed, the j-th remaining value is s[j] or s[j + 1].
            let at = |j: usize, i: usize| {
                if j < i {
                    sorted_data[j]
                } else {
                    sorted_data[j + 1]
                }
            };
            (0..n).map(|i| lerp(at(lo, i), at(hi, i), t)).collect()
        }
    }
}

/// Jackknife values of median(b) / median(a) for BCa: leaving out each value of `a` (b whole),
/// then each value of `b` (a whole). Both inputs sorted.
pub fn ratio_of_medians_jackknife(a_sorted: &[f64], b_sorted: &[f64]) -> Vec<Vec<f64>> {
    let ma = median_sorted(a_sorted);
    let mb = median_sorted(b_sorted);
    let ja = jackknife(a_sorted, Statistic::Median)
        .into_iter()
        .map(|m| mb / m)
        .collect();
    let jb = jackknife(b_sorted, Statistic::Median)
        .into_iter()
        .map(|m| m / ma)
        .collect();
    vec![ja, jb]
}

/// The plain percentile interval of bootstrap replicates (sorted in place).
pub fn percentile_interval(replicates: &mut [f64], level: f64) -> (f64, f64) {
    replicates.sort_unstable_by(f64::total_cmp);
    let lower = (1.0 - level) / 2.0 * 100.0 / 100.0;
    let upper = (1.0 + level) / 2.0 * 100.0 / 100.0;
    (
        percentile_sorted(replicates, lower),
        percentile_sorted(replicates, upper),
    )
}

/// The BCa interval from the estimate, the bootstrap replicates (sorted in place) and, per
/// sample, that sample's jackknife (leave-one-out) values of the statistic. Follows Efron &
/// Tibshirani eq. 14.14–14.15, summing the acceleration over samples as `scipy.stats.bootstrap`.
pub fn bca_interval(
    estimate: f64,
    replicates: &mut [f64],
    jackknife: &[Vec<f64>],
    level: f64,
) -> Result<(f64, f64), StatsError> {
    replicates.sort_unstable_by(f64::total_cmp);
    let b = replicates.len() as f64;
    let below = replicates.partition_point(|x| *x < estimate) as f64;
    let at_or_below = replicates.partition_point(|x| *x <= estimate) as f64;
    let p0 = (below + at_or_below) / (2.0 * b);
    if p0 <= 0.0 || p0 >= 1.0 {
        return Err(StatsError::Undefined(
            "BCa: every bootstrap replicate lies on one side of the estimate".into(),
        ));
    }
    let std_normal = Normal::standard();
    let z0 = std_normal.inverse_cdf(p0);
    let (mut num, mut den) = (0.0, 0.0);
    for jk in jackknife {
        let n = jk.len() as f64;
        let m = jk.iter().sum::<f64>() / n;
        let (s2, s3) = jk.iter().fold((0.0, 0.0), |(s2, s3), x| {
            let u = (n - 1.0) * (m - x);
            (s2 + u * u, s3 + u * u * u)
        });
        num += s3 / n.powi(3);
        den += s2 / n.powi(2);
    }
    let accel = if den > 0.0 {
        num / (6.0 * den.powf(1.5))
    } else {
        0.0
    };
    let z_alpha = std_normal.inverse_cdf((1.0 - level) / 2.0);
    let adjust = |z: f64| {
        let s = z0 + z;
        std_normal.cdf(z0 + s / (1.0 - accel * s))
    };
    let (a1, a2) = (adjust(z_alpha), adjust(-z_alpha));
    if !(a1.is_finite() && a2.is_finite()) {
        return Err(StatsError::Undefined(
            "BCa: adjusted levels are not finite".into(),
        ));
    }
    Ok((
        // numpy.percentile(replicates, 100 * a) divides by 100 again: do the same, bit for bit.
        percentile_sorted(replicates, a1 * 100.0 / 100.0),
        percentile_sorted(replicates, a2 * 100.0 / 100.0),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn paired_ratio_of_means() {
        let cfg = BootstrapConfig {
            resamples: 4000,
            level: 0.95,
            seed: 7,
            method: Method::Percentile,
        };
        // Identical pairs: every resample's ratio is exactly 1.
        let a: Vec<f64> = (0..25).map(|i| f64::from(u8::from(i % 5 != 0))).collect();
        let r = paired_ratio_of_means_ci(&a, &a, &cfg).unwrap();
        assert_eq!((r.ci.estimate, r.ci.lower, r.ci.upper), (1.0, 1.0, 1.0));
        // One item lost out of 20 right: estimate 19/20; a resample without that item has
        // ratio 1, so the upper end is 1 and the lower end below the estimate.
        let mut b = a.clone();
        b[1] = 0.0;
        let r = paired_ratio_of_means_ci(&a, &b, &cfg).unwrap();
        assert_eq!(r.ci.estimate, 0.95);
        assert_eq!(r.ci.upper, 1.0);
        assert!(r.ci.lower < 0.95 && r.ci.lower > 0.8, "{:?}", r.ci);
        assert!(r.replicates.windows(2).all(|w| w[0] <= w[1]));
        // Pairing matters: the same marginal accuracies with every item flipped one way are
        // a certain loss, its whole interval below 1.
        let b: Vec<f64> = a.iter().map(|x| x * 0.5).collect();
        let r = paired_ratio_of_means_ci(&a, &b, &cfg).unwrap();
        assert!((r.ci.lower - 0.5).abs() < 1e-12 && (r.ci.upper - 0.5).abs() < 1e-12);
        // Bad input.
        assert!(paired_ratio_of_means_ci(&a, &a[1..], &cfg).is_err());
        assert!(paired_ratio_of_means_ci(&[0.0, 0.0], &[1.0, 0.0], &cfg).is_err());
    }

    #[test]
    fn paired_ratio_of_sums_generalises_the_means() {
        let cfg = BootstrapConfig {
            resamples: 2000,
            level: 0.9,
            seed: 11,
            method: Method::Percentile,
        };
        let a: Vec<f64> = (0..30).map(|i| f64::from(i % 7) + 0.5).collect();
        let b: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| x * (0.8 + 0.01 * (i % 5) as f64))
            .collect();
        // Width 1 with the identity is the ratio of means, replicate for replicate.
        let means = paired_ratio_of_means_ci(&a, &b, &cfg).unwrap();
        let sums = paired_ratio_of_sums_ci(&a, &b, 1, |s| s[0], &cfg).unwrap();
        assert_eq!(means, sums);
        // A ratio statistic of two summed columns (hits / trials per unit, like n-gram
        // precision): identical runs give exactly 1, halving every hit gives exactly 0.5.
        let unit = |hits: f64, trials: f64| [hits, trials];
        let xa: Vec<f64> = (0..20).flat_map(|i| unit(f64::from(i % 4), 4.0)).collect();
        let half: Vec<f64> = xa.chunks(2).flat_map(|u| unit(u[0] / 2.0, u[1])).collect();
        let prec = |s: &[f64]| s[0] / s[1];
        let same = paired_ratio_of_sums_ci(&xa, &xa, 2, prec, &cfg).unwrap();
        assert_eq!((same.ci.lower, same.ci.upper), (1.0, 1.0));
        let r = paired_ratio_of_sums_ci(&xa, &half, 2, prec, &cfg).unwrap();
        assert!((r.ci.estimate - 0.5).abs() < 1e-12);
        assert!(
            (r.ci.lower - 0.5).abs() < 1e-12 && (r.ci.upper - 0.5).abs() < 1e-12,
            "{r:?}"
        );
        // Ragged input and a zero baseline statistic are errors.
        assert!(paired_ratio_of_sums_ci(&xa[1..], &xa[1..], 2, prec, &cfg).is_err());
        let zero: Vec<f64> = (0..20).flat_map(|_| unit(0.0, 4.0)).collect();
        assert!(paired_ratio_of_sums_ci(&zero, &xa, 2, prec, &cfg).is_err());
    }

    use super::*;

    #[test]
    fn jackknife_matches_brute_force() {
        let data: Vec<f64> = (0..23)
            .map(|i| ((i * 37) % 23) as f64 * 1.5 + 0.25)
            .collect();
        let s = sorted(&data);
        for stat in [Statistic::Mean, Statistic::Median, Statistic::Quantile(0.9)] {
            let fast = jackknife(&s, stat);
            for (i, f) in fast.iter().enumerate() {
                let mut rest: Vec<f64> = s
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, x)| *x)
                    .collect();
                let slow = stat.compute(&mut rest);
                assert!((f - slow).abs() < 1e-12, "{stat:?} {i}: {f} vs {slow}");
            }
        }
    }

    #[test]
    fn cluster_bootstrap_is_reproducible_and_covers() {
        let reps: Vec<Vec<f64>> = (0..5)
            .map(|r| {
                (0..40)
                    .map(|i| 10.0 + r as f64 + (i % 7) as f64 * 0.1)
                    .collect()
            })
            .collect();
        let cfg = BootstrapConfig {
            resamples: 400,
            seed: 3,
            ..Default::default()
        };
        let a = cluster_bootstrap_ci(&reps, Statistic::Mean, &cfg).unwrap();
        let b = cluster_bootstrap_ci(&reps, Statistic::Mean, &cfg).unwrap();
        assert_eq!(a, b);
        assert!(a.lower <= a.estimate && a.estimate <= a.upper);
        // Replicate means differ by whole units: the interval must reflect that spread.
        assert!(a.upper - a.lower > 0.5, "{a:?}");
    }

    #[test]
    fn a_paired_difference_is_reproducible_and_brackets_a_clear_shift() {
        // Items right under A: 1 in 4; under B: 3 in 4, B right wherever A is.
        let a: Vec<f64> = (0..40).map(|i| f64::from(i % 4 == 0)).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i % 4 != 3)).collect();
        let cfg = BootstrapConfig {
            resamples: 2000,
            level: 0.95,
            seed: 7,
            method: Method::Percentile,
        };
        let mean = |s: &[f64]| s[0] / 40.0;
        let d = paired_difference_of_sums(&a, &b, 1, mean, &cfg).unwrap();
        assert!((d.estimate - 0.5).abs() < 1e-12, "{}", d.estimate);
        let (lo, hi) = (d.lower, d.upper);
        assert!(
            lo > 0.25 && lo < 0.5 && 0.5 < hi && hi < 0.75,
            "[{lo}, {hi}]"
        );
        assert!(d.p_value() < 0.05, "{}", d.p_value());
        assert_eq!(d, paired_difference_of_sums(&a, &b, 1, mean, &cfg).unwrap());
        // The same data on both sides: no difference in any resample.
        let same = paired_difference_of_sums(&a, &a, 1, mean, &cfg).unwrap();
        assert_eq!((same.lower, same.upper, same.p_value()), (0.0, 0.0, 1.0));
        assert!(paired_difference_of_sums(&a, &b[..39], 1, mean, &cfg).is_err());
        assert!(paired_difference_of_sums(&[], &[], 1, mean, &cfg).is_err());
    }
}
