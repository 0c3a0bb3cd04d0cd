//! The normal-assumption tail next to the empirical one ("p99 = mu + 2.33 sigma" against the
//! data; docs/methodology.md#percentile-claims). Latency distributions are skewed; this shows by
//! how much the normal assumption misjudges the tail.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

use crate::descriptive::Descriptive;
use crate::percentile::percentile_sorted;
use crate::{StatsError, check_finite, sorted};

/// A quantile estimated twice: assuming normality, and from the data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NormalTail {
    /// The quantile, in (0, 1).
    pub q: f64,
    /// The standard normal quantile z_q (2.326 for q = 0.99).
    pub z: f64,
    /// mean + z * stddev.
    pub normal: f64,
    /// The empirical (type-7) quantile.
    pub empirical: f64,
    /// (normal − empirical) / empirical; negative when the normal assumption understates the
    /// tail. `None` when the empirical quantile is 0.
    pub relative_error: Option<f64>,
}

/// Compares `mean + z_q * stddev` with the empirical `q`-quantile. Needs n >= 2.
pub fn normal_tail(data: &[f64], q: f64) -> Result<NormalTail, StatsError> {
    check_finite(data)?;
    if !(q > 0.0 && q < 1.0) {
        return Err(StatsError::InvalidParameter(format!(
            "quantile {q} is outside (0, 1)"
        )));
    }
    let s = sorted(data);
    normal_tail_of(&Descriptive::of_sorted(&s), &s, q)
}

/// [`normal_tail`] from the descriptive statistics of the sorted data `s` (`q` in (0, 1)).
pub(crate) fn normal_tail_of(d: &Descriptive, s: &[f64], q: f64) -> Result<NormalTail, StatsError> {
    let sd = d.stddev.ok_or(StatsError::NotEnoughSamples {
        what: "a standard deviation".into(),
        needed: 2,
        have: d.n,
    })?;
    let z = Normal::standard().inverse_cdf(q);
    let normal = d.mean + z * sd;
    let empirical = percentile_sorted(s, q);
    let relative_error = (empirical != 0.0).then(|| (normal - empirical) / empirical);
    Ok(NormalTail {
        q,
        z,
        normal,
        empirical,
        relative_error,
    })
}
