//! The statistic a bootstrap interval is for (mean, median or any quantile), shared by the
//! bootstrap and the cluster bootstrap's resampler.

use serde::Serialize;

use crate::descriptive::mean;
use crate::percentile::{lerp, virtual_index};

/// The statistic a bootstrap interval is for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// Arithmetic mean.
    Mean,
    /// Median (type-7 interpolation, as numpy).
    Median,
    /// Any quantile in [0, 1] (type-7 interpolation, as numpy).
    Quantile(f64),
}

impl Statistic {
    /// The statistic of `data` (finite, non-empty; reordered in place).
    pub fn compute(self, data: &mut [f64]) -> f64 {
        match self {
            Statistic::Mean => mean(data),
            Statistic::Median => {
                let (a, b) = order_pair(data, (data.len() - 1) / 2);
                if data.len() % 2 == 1 {
                    a
                } else {
                    (a + b) / 2.0
                }
            }
            Statistic::Quantile(q) => {
                let (lo, t) = virtual_index(data.len(), q);
                let (a, b) = order_pair(data, lo);
                lerp(a, b, t)
            }
        }
    }

    /// The quantile it is, if any (the median is 0.5; the mean none).
    pub(crate) fn quantile(self) -> Option<f64> {
        match self {
            Statistic::Mean => None,
            Statistic::Median => Some(0.5),
            Statistic::Quantile(q) => Some(q),
        }
    }
}

/// The order statistics at 0-based ranks `k` and `k + 1` (clamped) by selection, O(n).
fn order_pair(data: &mut [f64], k: usize) -> (f64, f64) {
    let (_, a, rest) = data.select_nth_unstable_by(k, f64::total_cmp);
    let a = *a;
    let b = rest.iter().copied().fold(f64::INFINITY, f64::min);
    (a, if b.is_finite() { b } else { a })
}
