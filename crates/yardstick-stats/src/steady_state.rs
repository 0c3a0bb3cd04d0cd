//! Warm-up detection: MSER-5 (White 1997; White, Cobb & Spratt 2000) and fixed-count trimming.

use serde::Serialize;

use crate::{StatsError, check_finite};

/// Batch size of MSER-5.
pub const MSER_BATCH: usize = 5;

/// The result of MSER-5 on a time-ordered series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Mser {
    /// Samples to discard from the start (a multiple of 5).
    pub truncation: usize,
    /// Number of full batches of 5 (a trailing partial batch is ignored).
    pub batches: usize,
    /// The minimised statistic, Σ(Z̄ᵢ − Z̄(d))² / (b − d)².
    pub statistic: f64,
    /// False when the minimum lies in the second half of the batches: the series never settled,
    /// and no truncation point should be trusted ("no steady state").
    pub steady: bool,
}

/// MSER-5: average the series in batches of 5, then choose the number d of leading batches to
/// drop that minimises the squared standard error of the remaining batch means,
/// `Σ_{i>d} (Z_i − mean)² / (b − d)²`, over d in 0..b−1 (at least two batches kept).
/// Ties go to the smaller d. Needs at least 10 samples (two batches).
pub fn mser5(series: &[f64]) -> Result<Mser, StatsError> {
    check_finite(series)?;
    let b = series.len() / MSER_BATCH;
    if b < 2 {
        return Err(StatsError::NotEnoughSamples {
            what: "MSER-5".into(),
            needed: 2 * MSER_BATCH,
            have: series.len(),
        });
    }
    let z: Vec<f64> = series
        .chunks_exact(MSER_BATCH)
        .map(|c| c.iter().sum::<f64>() / MSER_BATCH as f64)
        .collect();
    // Walk d from the end, adding batch d to a running mean and sum of squared deviations
    // (Welford): O(b) and numerically stable, where recomputing each tail would be O(b²).
    let (mut best_d, mut best) = (0, f64::INFINITY);
    let (mut count, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    let mut stats = vec![0.0; b];
    for d in (0..b).rev() {
        count += 1.0;
        let delta = z[d] - mean;
        mean += delta / count;
        m2 += delta * (z[d] - mean);
        stats[d] = m2 / (count * count);
    }
    for (d, &stat) in stats.iter().enumerate().take(b - 1) {
        if stat < best {
            best = stat;
            best_d = d;
        }
    }
    Ok(Mser {
        truncation: best_d * MSER_BATCH,
        batches: b,
        statistic: best,
        steady: 2 * best_d < b,
    })
}

/// The series without its first `count` samples (fixed-count warm-up).
pub fn trim_warmup(series: &[f64], count: usize) -> &[f64] {
    &series[count.min(series.len())..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_a_warmup_ramp() {
        let mut s: Vec<f64> = (0..50).map(|i| 100.0 - 2.0 * i as f64).collect();
        s.extend((0..450).map(|i| 1.0 + (i % 3) as f64 * 0.01));
        let m = mser5(&s).unwrap();
        assert!(m.steady);
        assert!((45..=55).contains(&m.truncation), "{m:?}");
        assert_eq!(trim_warmup(&s, m.truncation).len(), 500 - m.truncation);
    }

    #[test]
    fn a_drifting_series_has_no_steady_state() {
        let s: Vec<f64> = (0..200).map(|i| (i as f64).powi(3)).collect();
        assert!(!mser5(&s).unwrap().steady);
        assert!(mser5(&[1.0; 9]).is_err());
    }
}
