//! Change points in a metric's history: E-divisive means (Matteson & James, 2014) with a
//! permutation significance test, as Hunter/Otava run it over MongoDB's and DataStax's CI.
//!
//! The history is split where the energy distance between the runs before and after is largest;
//! the split counts only when a permutation test says such a split is unlikely without a change
//! (the largest statistic over `permutations` shuffles of the segment reaches the observed one
//! in at most `alpha` of them), and only when the segments' means differ by at least the
//! minimum effect and the step's Welch interval excludes zero. Each accepted split divides its segment, and the search goes on in the parts
//! until no segment has a significant split. The first test is at level `alpha`, and the search
//! stops at the first split that is not significant, so a history without a change flags one
//! with probability about `alpha`.
//!
//! Each change is reported with the first run after it, the means before and after (over the
//! segments it separates), the difference with its Welch interval, and the p-value.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::StatsError;
use crate::descriptive::{mean, variance};

/// How changes are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Significance level of each permutation test.
    pub alpha: f64,
    /// Shuffles per test.
    pub permutations: usize,
    /// Runs on each side of a split, at least.
    pub min_size: usize,
    /// The smallest difference of means that counts (absolute, in the metric's unit).
    pub min_effect: f64,
    /// Level of the reported intervals.
    pub confidence: f64,
    /// Seed of the shuffles (the result is a function of the data and the settings).
    pub seed: u64,
    /// The energy distance's exponent, in (0, 2): distances are `|x - y|^exponent`. Near 2 the
    /// test is most powerful for a shift of the mean; 1 also sees changes of spread and is
    /// robust to a stray outlier.
    pub exponent: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            permutations: 199,
            min_size: 3,
            min_effect: 0.0,
            confidence: 0.95,
            seed: 0,
            exponent: 1.0,
        }
    }
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    /// Index of the first value after the change.
    pub index: usize,
    /// Mean of the segment before it.
    pub before: f64,
    /// Mean of the segment after it.
    pub after: f64,
    /// `after - before`.
    pub difference: f64,
    /// Its Welch interval (absent when a segment has one value or no spread).
    pub ci: Option<[f64; 2]>,
    /// `difference` relative to `before`, percent (absent when `before` is 0).
    pub relative_pct: Option<f64>,
    /// The permutation test's p-value.
    pub p_value: f64,
}

/// Energy statistic `Q` of splitting `x` at every `tau` in `[min, n - min]`: the best split and
/// its statistic (`None` when the segment is too short to split).
fn best_split(x: &[f64], min: usize, exponent: f64) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * min || min == 0 {
        return None;
    }
    // Sums of |xi - xj|, kept for a split at tau and moved one value at a time: O(n^2).
    let d = |v: f64, y: f64| {
        let a = (v - y).abs();
        if exponent == 1.0 { a } else { a.powf(exponent) }
    };
    let dist_to = |v: f64, s: &[f64]| s.iter().map(|&y| d(v, y)).sum::<f64>();
    let mut within_left = 0.0;
    let mut within_right: f64 = (0..n).map(|i| dist_to(x[i], &x[i + 1..])).sum();
    let mut between = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n {
        // x[tau - 1] moves from the right segment to the left one.
        let v = x[tau - 1];
        let to_left = dist_to(v, &x[..tau - 1]);
        let to_right = dist_to(v, &x[tau..]);
        within_left += to_left;
        within_right -= to_right;
        between += to_right - to_left;
        if tau < min || n - tau < min {
            continue;
        }
        let (m, k) = (tau as f64, (n - tau) as f64);
        let pairs = |c: f64| if c > 1.0 { c * (c - 1.0) / 2.0 } else { 1.0 };
        let e = 2.0 * between / (m * k) - within_left / pairs(m) - within_right / pairs(k);
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The change points of `x`, in order.
pub fn detect(x: &[f64], s: &Settings) -> Result<Vec<Change>, StatsError> {
    if x.is_empty() {
        return Ok(Vec::new());
    }
    crate::check_finite(x)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(s.seed);
    // Segment bounds; each split adds one.
    let mut cuts: Vec<usize> = vec![0, x.len()];
    let mut found: Vec<(usize, f64)> = Vec::new();
    // Segments that cannot hold a significant split any more.
    let mut settled: Vec<(usize, usize)> = Vec::new();
    loop {
        // The segment whose best split has the largest statistic.
        let candidate = cuts
            .windows(2)
            .filter(|w| !settled.contains(&(w[0], w[1])))
            .filter_map(|w| {
                best_split(&x[w[0]..w[1]], s.min_size, s.exponent)
                    .map(|(t, q)| (w[0], w[1], w[0] + t, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((lo, hi, at, q)) = candidate else {
            break;
        };
        let seg = &x[lo..hi];
        let mut shuffled = seg.to_vec();
        let mut reached = 0usize;
        for _ in 0..s.permutations {
            shuffled.shuffle(&mut rng);
            if best_split(&shuffled, s.min_size, s.exponent).is_some_and(|(_, qp)| qp >= q) {
                reached += 1;
            }
        }
        let p = (reached + 1) as f64 / (s.permutations + 1) as f64;
        if p > s.alpha {
            break;
        }
        let (left, right) = (&x[lo..at], &x[at..hi]);
        let step = mean(right) - mean(left);
        let interval_has_zero =
            welch_interval(left, right, s.confidence).is_some_and(|[a, b]| a <= 0.0 && 0.0 <= b);
        if step.abs() < s.min_effect || interval_has_zero {
            // A split of the distributions whose means do not differ beyond the noise floor,
            // or not surely at all (the step's interval holds 0): not a change of level worth a
            // name, and the segment is left whole (its parts are searched no further).
            settled.push((lo, hi));
            continue;
        }
        found.push((at, p));
        cuts.push(at);
        cuts.sort_unstable();
    }
    found.sort_by_key(|&(i, _)| i);
    let changes = found
        .iter()
        .map(|&(index, p_value)| {
            // The segments either side, between the neighbouring changes.
            let lo = cuts
                .iter()
                .rev()
                .find(|&&c| c < index)
                .copied()
                .unwrap_or(0);
            let hi = cuts
                .iter()
                .find(|&&c| c > index)
                .copied()
                .unwrap_or(x.len());
            let (a, b) = (&x[lo..index], &x[index..hi]);
            let (before, after) = (mean(a), mean(b));
            let difference = after - before;
            Change {
                index,
                before,
                after,
                difference,
                ci: welch_interval(a, b, s.confidence),
                relative_pct: (before != 0.0).then(|| difference / before.abs() * 100.0),
                p_value,
            }
        })
        .collect();
    Ok(changes)
}

/// Welch's interval for `mean(b) - mean(a)`.
fn welch_interval(a: &[f64], b: &[f64], level: f64) -> Option<[f64; 2]> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let va = variance(a)? / na;
    let vb = variance(b)? / nb;
    if va + vb <= 0.0 {
        return None;
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df)
        .ok()?
        .inverse_cdf(0.5 + level / 2.0);
    let d = mean(b) - mean(a);
    let half = t * (va + vb).sqrt();
    Some([d - half, d + half])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // Sum of uniforms: close enough to normal, unit variance.
        (0..n)
            .map(|_| (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0)
            .collect()
    }

    #[test]
    fn a_clear_step_is_found_at_its_run_with_its_size() {
        let mut x = noise(30, 1);
        for v in &mut x[18..] {
            *v += 5.0;
        }
        let c = detect(&x, &Settings::default()).unwrap();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].index, 18);
        let [lo, hi] = c[0].ci.unwrap();
        assert!(lo < 5.0 && 5.0 < hi, "{c:?}");
        assert!(c[0].p_value <= 0.05);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut x = noise(45, 2);
        for v in &mut x[15..] {
            *v += 6.0;
        }
        for v in &mut x[30..] {
            *v -= 12.0;
        }
        let c = detect(&x, &Settings::default()).unwrap();
        let at: Vec<usize> = c.iter().map(|c| c.index).collect();
        assert_eq!(at, [15, 30], "{c:?}");
        assert!(c[0].difference > 0.0 && c[1].difference < 0.0);
    }

    #[test]
    fn a_flat_history_has_no_change_and_a_small_effect_is_filtered() {
        assert!(
            detect(&noise(30, 3), &Settings::default())
                .unwrap()
                .is_empty()
        );
        let mut x = noise(30, 4);
        for v in &mut x[15..] {
            *v += 5.0;
        }
        let floor = Settings {
            min_effect: 10.0,
            ..Settings::default()
        };
        assert!(detect(&x, &floor).unwrap().is_empty());
    }

    #[test]
    fn short_and_bad_histories() {
        assert!(detect(&[], &Settings::default()).unwrap().is_empty());
        assert!(
            detect(&[1.0, 2.0, 3.0], &Settings::default())
                .unwrap()
                .is_empty()
        );
        assert!(detect(&[1.0, f64::NAN, 3.0], &Settings::default()).is_err());
    }

    #[test]
    fn the_incremental_statistic_matches_the_definition() {
        let x = noise(12, 5);
        let direct = |tau: usize| {
            let (a, b) = (&x[..tau], &x[tau..]);
            let (m, k) = (a.len() as f64, b.len() as f64);
            let cross: f64 = a
                .iter()
                .flat_map(|p| b.iter().map(move |q| (p - q).abs()))
                .sum();
            let within = |s: &[f64]| {
                let mut t = 0.0;
                for i in 0..s.len() {
                    for j in i + 1..s.len() {
                        t += (s[i] - s[j]).abs();
                    }
                }
                t / (s.len() as f64 * (s.len() as f64 - 1.0) / 2.0)
            };
            m * k / (m + k) * (2.0 * cross / (m * k) - within(a) - within(b))
        };
        let (tau, q) = best_split(&x, 3, 1.0).unwrap();
        let best = (3..=9)
            .map(|t| (t, direct(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(tau, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} vs {}", best.1);
    }
}
