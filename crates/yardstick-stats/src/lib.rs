//! Statistics for benchmark samples: the numbers every yardstick verdict rests on.
//!
//! A leaf crate: no I/O, no async. Everything is a pure function of its inputs, and every
//! resampling method takes an explicit seed, so identical inputs give identical outputs.
//!
//! * [`descriptive`]: n, mean, standard deviation, CV, median, MAD, skewness (batch and
//!   streaming).
//! * [`percentile`]: numpy-compatible percentiles and distribution-free order-statistic CIs.
//! * [`histogram`]: mergeable HDR histograms for latency streams.
//! * [`bootstrap`]: percentile and BCa bootstrap CIs, cluster bootstrap, ratio of medians, for a
//!   [`statistic`] (mean, median or a quantile).
//! * [`outliers`]: Tukey fences and MAD modified z-scores (reported, trimmed only on request).
//! * [`steady_state`]: MSER-5 warm-up truncation.
//! * [`hypothesis`]: Welch's t, Mann–Whitney U, paired t, Wilcoxon signed-rank, McNemar,
//!   effect sizes and the Holm–Bonferroni adjustment.
//! * [`changepoint`]: E-divisive means change points with a permutation test.
//! * [`early_stopping`]: MLPerf LoadGen early stopping for percentile claims.
//! * [`tail`]: the normal-assumption tail (`mu + z*sigma`) next to the empirical one.
//! * [`samples`]: parsing sample files (one number per line, or a JSON array).
//! * [`report`]: the `summarize` and `compare` results the CLI prints, and [`text`]: the same
//!   results as people read them.
//!
//! `docs/stats.md` describes each method with references.
#![deny(missing_docs)]

pub mod bootstrap;
pub mod changepoint;
mod cluster;
pub mod descriptive;
pub mod early_stopping;
mod error;
pub mod histogram;
pub mod hypothesis;
pub mod outliers;
pub mod percentile;
pub mod proportion;
pub mod report;
mod resample;
pub mod samples;
pub mod statistic;
pub mod steady_state;
pub mod tail;
pub mod text;

pub use error::StatsError;

/// Checks that `data` is non-empty and holds only finite numbers.
pub(crate) fn check_finite(data: &[f64]) -> Result<(), StatsError> {
    if data.is_empty() {
        return Err(StatsError::Empty);
    }
    match data.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { index }),
        None => Ok(()),
    }
}

/// A sorted copy of finite data.
pub(crate) fn sorted(data: &[f64]) -> Vec<f64> {
    let mut v = data.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}
