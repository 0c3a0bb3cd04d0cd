//! Percentiles (numpy's default linear interpolation, Hyndman & Fan type 7) and
//! distribution-free confidence intervals for them from order statistics.

use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

use crate::{StatsError, check_finite, sorted};

/// The `q`-quantile (`q` in [0, 1]) of `data`, interpolating linearly between order statistics
/// exactly as `numpy.percentile(data, 100*q)` does.
pub fn percentile(data: &[f64], q: f64) -> Result<f64, StatsError> {
    check_finite(data)?;
    check_q(q)?;
    Ok(percentile_sorted(&sorted(data), q))
}

/// Like [`percentile`] for data already sorted ascending (non-empty, finite, `q` in [0, 1]).
pub fn percentile_sorted(sorted_data: &[f64], q: f64) -> f64 {
    let n = sorted_data.len();
    let (lo, t) = virtual_index(n, q);
    let hi = (lo + 1).min(n - 1);
    lerp(sorted_data[lo], sorted_data[hi], t)
}

/// numpy's type-7 position of quantile `q` among `n` sorted values, `(n - 1) q`: the 0-based
/// index below it and the fraction towards the next.
pub(crate) fn virtual_index(n: usize, q: f64) -> (usize, f64) {
    let h = (n - 1) as f64 * q;
    if h >= (n - 1) as f64 {
        return (n - 1, 0.0);
    }
    if h <= 0.0 {
        return (0, 0.0);
    }
    let lo = h.floor();
    (lo as usize, h - lo)
}

/// The median as numpy computes it: the middle value, or the mean of the two middle values.
pub(crate) fn median_sorted(sorted_data: &[f64]) -> f64 {
    let n = sorted_data.len();
    if n % 2 == 1 {
        sorted_data[n / 2]
    } else {
        (sorted_data[n / 2 - 1] + sorted_data[n / 2]) / 2.0
    }
}

/// numpy's `_lerp`: exact at both ends and monotone in `t`.
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

fn check_q(q: f64) -> Result<(), StatsError> {
    if (0.0..=1.0).contains(&q) {
        Ok(())
    } else {
        Err(StatsError::InvalidParameter(format!(
            "quantile {q} is outside [0, 1]"
        )))
    }
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

/// A distribution-free confidence interval for a quantile: two order statistics of the sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OrderStatisticCi {
    /// The lower bound, the `lower_rank`-th smallest sample.
    pub lower: f64,
    /// The upper bound, the `upper_rank`-th smallest sample.
    pub upper: f64,
    /// 1-based rank of the lower bound.
    pub lower_rank: usize,
    /// 1-based rank of the upper bound.
    pub upper_rank: usize,
    /// The exact coverage probability of the interval (>= the level asked for).
    pub coverage: f64,
}

/// The smallest sample size for which any pair of order statistics covers the `q`-quantile with
/// probability `level`: the least n with `1 - q^n - (1-q)^n >= level` (the coverage of
/// [min, max]). For q = 0.99 at 0.95 this is 299.
pub fn min_samples_for_quantile_ci(q: f64, level: f64) -> Result<usize, StatsError> {
    check_level(level)?;
    if !(q > 0.0 && q < 1.0) {
        return Err(StatsError::InvalidParameter(format!(
            "a distribution-free CI needs a quantile strictly inside (0, 1), got {q}"
        )));
    }
    let covers = |n: usize| 1.0 - q.powf(n as f64) - (1.0 - q).powf(n as f64) >= level;
    let mut hi = 2usize;
    while !covers(hi) {
        hi *= 2;
    }
    let mut lo = hi / 2; // does not cover (or is 1)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if covers(mid) { hi = mid } else { lo = mid }
    }
    Ok(hi)
}

/// A confidence interval at `level` for the `q`-quantile of the population `data` came from,
/// from order statistics: `[X(l), X(u)]` covers the quantile with probability
/// `P(l <= B < u)`, `B ~ Binomial(n, q)`.
///
/// The ranks are equal-tailed (at most (1-level)/2 on each side) when n allows; when one tail
/// cannot be made that small (the extreme sample is the only candidate) the other tail takes the
/// rest. The interval is widened if needed to contain the type-7 point estimate. When no pair of
/// order statistics reaches `level`, the answer is [`StatsError::NotEnoughSamples`]: never an
/// invented number.
pub fn quantile_ci(data: &[f64], q: f64, level: f64) -> Result<OrderStatisticCi, StatsError> {
    check_finite(data)?;
    quantile_ci_sorted(&sorted(data), q, level)
}

/// Like [`quantile_ci`] for data already sorted ascending.
pub fn quantile_ci_sorted(
    sorted_data: &[f64],
    q: f64,
    level: f64,
) -> Result<OrderStatisticCi, StatsError> {
    let (l, u, coverage) = quantile_ci_ranks(sorted_data.len(), q, level)?;
    Ok(OrderStatisticCi {
        lower: sorted_data[l - 1],
        upper: sorted_data[u - 1],
        lower_rank: l,
        upper_rank: u,
        coverage,
    })
}

/// The 1-based ranks `(l, u)` of the order-statistic CI and its exact coverage, for sample size
/// `n` (see [`quantile_ci`]).
pub fn quantile_ci_ranks(n: usize, q: f64, level: f64) -> Result<(usize, usize, f64), StatsError> {
    let needed = min_samples_for_quantile_ci(q, level)?;
    if n < needed {
        return Err(StatsError::NotEnoughSamples {
            what: format!("a {level} CI for the {q}-quantile"),
            needed,
            have: n,
        });
    }
    let binom =
        Binomial::new(q, n as u64).map_err(|e| StatsError::InvalidParameter(e.to_string()))?;
    // F(k) = P(B <= k); F(-1) = 0.
    let cdf = |k: usize| -> f64 { if k == 0 { 0.0 } else { binom.cdf(k as u64 - 1) } };
    // cdf(r) = F(r - 1) = P(X(r) > quantile) for the lower bound of rank r.
    let alpha = 1.0 - level;
    // Largest l in [1, n] with F(l-1) <= alpha/2 (cdf is non-decreasing in l).
    let mut l = largest_at_most(1, n, |r| cdf(r) <= alpha / 2.0).unwrap_or(1);
    // The upper tail may be forced to the maximum; give the lower tail less room then.
    while l > 1 && cdf(n) - cdf(l) < level {
        l -= 1;
    }
    // Smallest u in [l+1, n] with F(u-1) - F(l-1) >= level.
    let base = cdf(l);
    let mut u = smallest_at_least(l + 1, n, |r| cdf(r) - base >= level).unwrap_or(n);
    // Contain the point estimate, which lies between the 1-based ranks lo+1 and lo+2.
    let (lo, t) = virtual_index(n, q);
    l = l.min(lo + 1);
    u = u.max(if t > 0.0 { (lo + 2).min(n) } else { lo + 1 });
    Ok((l, u, cdf(u) - cdf(l)))
}

/// Largest r in [lo, hi] with `pred(r)`, for a predicate true on a prefix.
fn largest_at_most(lo: usize, hi: usize, pred: impl Fn(usize) -> bool) -> Option<usize> {
    if !pred(lo) {
        return None;
    }
    let (mut a, mut b) = (lo, hi + 1); // pred(a) true, pred(b) false (b may be out of range)
    while b - a > 1 {
        let mid = a + (b - a) / 2;
        if pred(mid) { a = mid } else { b = mid }
    }
    Some(a)
}

/// Smallest r in [lo, hi] with `pred(r)`, for a predicate true on a suffix.
fn smallest_at_least(lo: usize, hi: usize, pred: impl Fn(usize) -> bool) -> Option<usize> {
    if lo > hi || !pred(hi) {
        return None;
    }
    let (mut a, mut b) = (lo, hi); // answer in [a, b], pred(b) true
    while a < b {
        let mid = a + (b - a) / 2;
        if pred(mid) { b = mid } else { a = mid + 1 }
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_at_95_needs_299_samples() {
        assert_eq!(min_samples_for_quantile_ci(0.99, 0.95), Ok(299));
        let data: Vec<f64> = (0..298).map(f64::from).collect();
        assert!(matches!(
            quantile_ci(&data, 0.99, 0.95),
            Err(StatsError::NotEnoughSamples {
                needed: 299,
                have: 298,
                ..
            })
        ));
        let data: Vec<f64> = (0..299).map(f64::from).collect();
        let ci = quantile_ci(&data, 0.99, 0.95).unwrap();
        assert!(ci.coverage >= 0.95);
        assert_eq!(ci.upper_rank, 299);
    }

    #[test]
    fn interpolates_like_numpy() {
        let d = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&d, 0.0), Ok(1.0));
        assert_eq!(percentile(&d, 1.0), Ok(4.0));
        assert_eq!(percentile(&d, 0.5), Ok(2.5));
        assert!(percentile(&d, 1.5).is_err());
    }
}
