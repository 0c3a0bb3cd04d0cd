//! Intervals for a proportion: `k` successes in `n` trials (accuracy, validity, attainment).

use statrs::distribution::{ContinuousCDF, Normal};

/// The Wilson score interval for `k` successes in `n` trials at `confidence` (two-sided).
/// `n = 0` gives [0, 1]. Unlike the normal ("Wald") interval it never leaves [0, 1] and keeps
/// its coverage near 0 and 1, where validity and accuracy rates live.
pub fn wilson(k: u64, n: u64, confidence: f64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let z = Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let n_f = n as f64;
    let p = k.min(n) as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let center = (p + z2 / (2.0 * n_f)) / denom;
    let half = z / denom * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
    // At the ends the bound is exact (rounding would leave 0.9999999999999999).
    let lo = if k == 0 {
        0.0
    } else {
        (center - half).max(0.0)
    };
    let hi = if k >= n {
        1.0
    } else {
        (center + half).min(1.0)
    };
    [lo, hi]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_known_values_and_edges() {
        // statsmodels.stats.proportion.proportion_confint(45, 50, method="wilson")
        let [lo, hi] = wilson(45, 50, 0.95);
        assert!(
            (lo - 0.7864).abs() < 1e-4 && (hi - 0.9565).abs() < 1e-4,
            "{lo} {hi}"
        );
        let [lo, hi] = wilson(50, 50, 0.95);
        assert!(lo > 0.92 && hi == 1.0, "{lo} {hi}");
        assert_eq!(wilson(0, 0, 0.95), [0.0, 1.0]);
        let [lo, hi] = wilson(0, 10, 0.95);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-4, "{lo} {hi}");
    }
}
