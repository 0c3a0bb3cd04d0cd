//! Descriptive statistics: batch ([`Descriptive::of`]) and streaming ([`RunningStats`]).

use serde::Serialize;

use crate::percentile::median_sorted;
use crate::{StatsError, check_finite, sorted};

/// Descriptive statistics of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Descriptive {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 denominator); `None` when n < 2.
    pub stddev: Option<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Median (numpy's linear interpolation).
    pub median: f64,
    /// Coefficient of variation, stddev / mean; `None` when undefined (n < 2 or mean = 0).
    pub cv: Option<f64>,
    /// Median absolute deviation from the median, unscaled (scipy's `median_abs_deviation`).
    pub mad: f64,
    /// Adjusted Fisher–Pearson skewness G1 (scipy's `skew(bias=False)`); `None` when n < 3 or
    /// the data are constant.
    pub skewness: Option<f64>,
}

impl Descriptive {
    /// Computes the statistics of `data` (any order; finite values only).
    pub fn of(data: &[f64]) -> Result<Self, StatsError> {
        check_finite(data)?;
        Ok(Self::of_sorted(&sorted(data)))
    }

    /// Computes the statistics of already sorted, finite, non-empty data.
    pub fn of_sorted(sorted_data: &[f64]) -> Self {
        let n = sorted_data.len();
        let mean = mean(sorted_data);
        let (m2, m3) = central_moments(sorted_data, mean);
        let nf = n as f64;
        let stddev = (n >= 2).then(|| (m2 / (nf - 1.0)).sqrt());
        let cv = stddev.filter(|_| mean != 0.0).map(|s| s / mean);
        let median = median_sorted(sorted_data);
        Descriptive {
            n,
            mean,
            stddev,
            min: sorted_data[0],
            max: sorted_data[n - 1],
            median,
            cv,
            mad: mad_about(sorted_data, median),
            skewness: skewness_from_moments(n, m2, m3),
        }
    }
}

/// Arithmetic mean; NaN for an empty slice. Summed pairwise exactly as numpy does, so that a
/// bootstrap replicate that resamples the same multiset ties with the estimate, as in scipy.
pub fn mean(data: &[f64]) -> f64 {
    pairwise_sum(data) / data.len() as f64
}

/// Median (numpy's: the mean of the middle two for even n); NaN for an empty slice. NaNs sort
/// last (`f64::total_cmp`).
pub fn median(data: &[f64]) -> f64 {
    if data.is_empty() {
        return f64::NAN;
    }
    let mut s = data.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    crate::percentile::percentile_sorted(&s, 0.5)
}

/// Mean and two-sided Student-t confidence interval at `level` of independent values (the
/// replicates of a point); the interval is absent below 2 values. Assumes the values are roughly
/// normal, which a replicate's average over many samples is; with the methodology's 3 to 5
/// replicates a bootstrap over them has too few distinct resamples to be an interval at all.
pub fn mean_t_interval(values: &[f64], level: f64) -> (f64, Option<(f64, f64)>) {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let n = values.len() as f64;
    let m = mean(values);
    if values.len() < 2 {
        return (m, None);
    }
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    let Ok(t) = StudentsT::new(0.0, 1.0, n - 1.0) else {
        return (m, None);
    };
    let half = t.inverse_cdf(0.5 + level / 2.0) * (var / n).sqrt();
    (m, Some((m - half, m + half)))
}

/// The geometric mean of positive `values` with Student's t interval computed on their
/// logarithms and taken back: `exp(mean(ln x) ± t · sd(ln x) / √n)`. The interval is
/// multiplicative around the geometric mean and its bounds are positive. `None` when a value is
/// not a positive finite number; no interval for fewer than two values.
pub fn geometric_t_interval(values: &[f64], level: f64) -> Option<(f64, Option<(f64, f64)>)> {
    if values.is_empty() || values.iter().any(|&x| !(x.is_finite() && x > 0.0)) {
        return None;
    }
    // Equal values (one replicate, or identical ones) are their own mean, exactly: the round
    // trip through ln and exp would move the last digit.
    if values.iter().all(|&x| x == values[0]) {
        let ci = (values.len() >= 2).then_some((values[0], values[0]));
        return Some((values[0], ci));
    }
    let logs: Vec<f64> = values.iter().map(|x| x.ln()).collect();
    let (m, ci) = mean_t_interval(&logs, level);
    Some((m.exp(), ci.map(|(lo, hi)| (lo.exp(), hi.exp()))))
}

/// numpy's pairwise summation (`pairwise_sum` in `loops_utils.h`): eight interleaved
/// accumulators over blocks of up to 128 values, halving larger ranges. Error grows as O(log n).
pub fn pairwise_sum(data: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = data.len();
    if n < 8 {
        return data.iter().fold(-0.0, |acc, x| acc + x);
    }
    if n <= BLOCK {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&data[..8]);
        let mut i = 8;
        while i + 8 <= n {
            for (k, acc) in r.iter_mut().enumerate() {
                *acc += data[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &data[i..] {
            res += x;
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    pairwise_sum(&data[..half]) + pairwise_sum(&data[half..])
}

/// Sample variance (n - 1 denominator); `None` when n < 2.
pub fn variance(data: &[f64]) -> Option<f64> {
    (data.len() >= 2).then(|| central_moments(data, mean(data)).0 / (data.len() as f64 - 1.0))
}

/// Sums of squared and cubed deviations from `mean`.
fn central_moments(data: &[f64], mean: f64) -> (f64, f64) {
    data.iter().fold((0.0, 0.0), |(m2, m3), x| {
        let d = x - mean;
        (m2 + d * d, m3 + d * d * d)
    })
}

fn skewness_from_moments(n: usize, m2: f64, m3: f64) -> Option<f64> {
    if n < 3 || m2 <= 0.0 {
        return None;
    }
    let nf = n as f64;
    let g1 = (m3 / nf) / (m2 / nf).powf(1.5);
    if !g1.is_finite() {
        return None;
    }
    Some(g1 * (nf * (nf - 1.0)).sqrt() / (nf - 2.0))
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(data: &[f64]) -> Result<f64, StatsError> {
    check_finite(data)?;
    let s = sorted(data);
    Ok(mad_about(&s, median_sorted(&s)))
}

/// The MAD of sorted data about `median`, in O(n) without sorting the deviations: they are
/// [`sorted_deviations`], and only the middle one or two are needed.
pub(crate) fn mad_about(sorted_data: &[f64], median: f64) -> f64 {
    let n = sorted_data.len();
    let mut dev = sorted_deviations(sorted_data, median).skip((n - 1) / 2);
    let a = dev.next().unwrap_or(f64::NAN);
    if n % 2 == 1 {
        a
    } else {
        // As `median_sorted`: the mean of the two middle values.
        (a + dev.next().unwrap_or(a)) / 2.0
    }
}

/// `|x - center|` for every x of sorted data, in ascending order, by merging the two runs that
/// are already sorted (below `center`, read backwards, and from `center` on). The values are the
/// same floats as sorting the deviations (rounding is symmetric and monotone), in O(n).
pub(crate) fn sorted_deviations(
    sorted_data: &[f64],
    center: f64,
) -> impl Iterator<Item = f64> + '_ {
    let split = sorted_data.partition_point(|x| *x < center);
    let (mut below, mut above) = (split, split);
    std::iter::from_fn(move || {
        let lo = (below > 0).then(|| (sorted_data[below - 1] - center).abs());
        let hi = sorted_data.get(above).map(|x| (x - center).abs());
        match (lo, hi) {
            (Some(l), Some(h)) if l < h => {
                below -= 1;
                Some(l)
            }
            (_, Some(h)) => {
                above += 1;
                Some(h)
            }
            (Some(l), None) => {
                below -= 1;
                Some(l)
            }
            (None, None) => None,
        }
    })
}

/// Streaming mean, variance, skewness, min and max (Welford's update, extended to the third
/// moment by Terriberry; merged with the pairwise formulas of Chan et al. and Pébay), so workers
/// can summarise shards and combine them exactly enough.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunningStats {
    n: u64,
    mean: f64,
    m2: f64,
    m3: f64,
    min: f64,
    max: f64,
}

impl RunningStats {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one finite sample (non-finite samples are ignored and reported as an error).
    pub fn push(&mut self, x: f64) -> Result<(), StatsError> {
        if !x.is_finite() {
            return Err(StatsError::NonFinite {
                index: self.n as usize,
            });
        }
        let n1 = self.n as f64;
        self.n += 1;
        let n = self.n as f64;
        let delta = x - self.mean;
        let delta_n = delta / n;
        let term1 = delta * delta_n * n1;
        self.mean += delta_n;
        self.m3 += term1 * delta_n * (n - 2.0) - 3.0 * delta_n * self.m2;
        self.m2 += term1;
        if self.n == 1 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        Ok(())
    }

    /// Combines two accumulators as if every sample had been pushed into one.
    pub fn merge(&self, other: &RunningStats) -> RunningStats {
        if self.n == 0 {
            return *other;
        }
        if other.n == 0 {
            return *self;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        let m2 = self.m2 + other.m2 + delta * delta * na * nb / n;
        let m3 = self.m3
            + other.m3
            + delta.powi(3) * na * nb * (na - nb) / (n * n)
            + 3.0 * delta * (na * other.m2 - nb * self.m2) / n;
        RunningStats {
            n: self.n + other.n,
            mean: self.mean + delta * nb / n,
            m2,
            m3,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean; `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// Sample variance (n - 1); `None` when n < 2.
    pub fn variance(&self) -> Option<f64> {
        (self.n >= 2).then(|| self.m2 / (self.n as f64 - 1.0))
    }

    /// Sample standard deviation (n - 1); `None` when n < 2.
    pub fn stddev(&self) -> Option<f64> {
        self.variance().map(f64::sqrt)
    }

    /// Adjusted Fisher–Pearson skewness, as [`Descriptive::skewness`].
    pub fn skewness(&self) -> Option<f64> {
        skewness_from_moments(self.n as usize, self.m2, self.m3)
    }

    /// Smallest sample; `None` when empty.
    pub fn min(&self) -> Option<f64> {
        (self.n > 0).then_some(self.min)
    }

    /// Largest sample; `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }
}

impl Extend<f64> for RunningStats {
    /// Pushes every finite sample (non-finite ones are skipped).
    fn extend<I: IntoIterator<Item = f64>>(&mut self, iter: I) {
        for x in iter {
            let _ = self.push(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_matches_batch_and_merge_matches_whole() {
        let data: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 / 7.0 + (i as f64).sqrt())
            .collect();
        let batch = Descriptive::of(&data).unwrap();
        let mut whole = RunningStats::new();
        whole.extend(data.iter().copied());
        let (mut a, mut b) = (RunningStats::new(), RunningStats::new());
        a.extend(data[..300].iter().copied());
        b.extend(data[300..].iter().copied());
        let merged = a.merge(&b);
        for r in [whole, merged] {
            assert!((r.mean().unwrap() - batch.mean).abs() < 1e-9 * batch.mean.abs());
            assert!(
                (r.stddev().unwrap() - batch.stddev.unwrap()).abs() < 1e-9 * batch.stddev.unwrap()
            );
            assert!((r.skewness().unwrap() - batch.skewness.unwrap()).abs() < 1e-7);
            assert_eq!(r.min(), Some(batch.min));
            assert_eq!(r.max(), Some(batch.max));
            assert_eq!(r.count(), 1000);
        }
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        assert_eq!(Descriptive::of(&[]), Err(StatsError::Empty));
        assert_eq!(
            Descriptive::of(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1 })
        );
        assert!(RunningStats::new().push(f64::INFINITY).is_err());
    }

    #[test]
    fn single_sample_has_no_spread() {
        let d = Descriptive::of(&[3.0]).unwrap();
        assert_eq!((d.n, d.mean, d.median, d.mad), (1, 3.0, 3.0, 0.0));
        assert_eq!((d.stddev, d.cv, d.skewness), (None, None, None));
    }
}
