//! The cluster bootstrap without materialising resamples.
//!
//! One resample draws k of the k replicates with replacement, then, for every drawn replicate,
//! as many samples with replacement from it as it holds. A replicate r drawn m_r times thus
//! contributes m_r·n_r uniform draws from its own values, so the resample is described by the
//! multiplicities alone, and a statistic needs only:
//!
//! * **the mean**: per replicate, the sum of m_r·n_r draws, by the blocked multinomial sampler
//!   of `resample` (exact, ~1–2 ns per draw, no buffer);
//! * **a quantile**: one or two order statistics of the pooled draws, found by descending on
//!   value: split every replicate's sorted range at a pivot value, draw how many of its draws
//!   fall below the pivot (Binomial(c, share below), exact because each draw is uniform over
//!   the range), keep the side holding the wanted rank, repeat. Once one replicate's range is
//!   left, the order statistic of its c draws is drawn directly (Beta law of uniform order
//!   statistics). The pivot is the size-weighted median of the ranges' middle values, so each
//!   step keeps at most about 3/4 of the values: O(k log² n) per resample, whatever n.
//!
//! Memory per thread is O(k), allocated once.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::percentile::{lerp, virtual_index};
use crate::resample::{self, MeanScratch, binomial, blocked_sum, order_statistic_indices_of};
use crate::statistic::Statistic;

/// Replicates prepared for resampling: each sorted, with its block layout for the mean.
pub(crate) struct Clusters {
    sorted: Vec<Vec<f64>>,
    blocks: Vec<Vec<(usize, u32)>>,
}

/// A range `[lo, hi)` of replicate `r`'s sorted values that `c` draws fell into.
#[derive(Debug, Clone, Copy)]
struct Part {
    r: usize,
    lo: usize,
    hi: usize,
    c: u64,
}

/// Per-thread scratch space, O(k).
pub(crate) struct Scratch {
    mult: Vec<u64>,
    parts: Vec<Part>,
    spare: Vec<Part>,
    mids: Vec<(f64, u64)>,
    bounds: Vec<[usize; 4]>,
    counts: Vec<[u64; 3]>,
    mean: MeanScratch,
}

impl Clusters {
    /// Prepares finite, non-empty replicates.
    pub(crate) fn new(replicates: &[Vec<f64>]) -> Self {
        let sorted: Vec<Vec<f64>> = replicates.iter().map(|r| crate::sorted(r)).collect();
        let blocks = sorted.iter().map(|r| resample::blocks(r.len())).collect();
        Self { sorted, blocks }
    }

    /// Total number of samples.
    pub(crate) fn total(&self) -> usize {
        self.sorted.iter().map(Vec::len).sum()
    }

    /// Scratch space for one thread.
    pub(crate) fn scratch(&self) -> Scratch {
        let k = self.sorted.len();
        Scratch {
            mult: vec![0; k],
            parts: Vec::with_capacity(k),
            spare: Vec::with_capacity(k),
            mids: Vec::with_capacity(k),
            bounds: Vec::with_capacity(k),
            counts: Vec::with_capacity(k),
            mean: MeanScratch::new(),
        }
    }

    /// `stat` of one cluster-bootstrap resample, exact in distribution.
    pub(crate) fn draw(&self, rng: &mut ChaCha8Rng, stat: Statistic, sc: &mut Scratch) -> f64 {
        let k = self.sorted.len();
        sc.mult.fill(0);
        for _ in 0..k {
            sc.mult[rng.random_range(0..k)] += 1;
        }
        let total: u64 = self
            .sorted
            .iter()
            .zip(&sc.mult)
            .map(|(r, &m)| m * r.len() as u64)
            .sum();
        match stat {
            Statistic::Mean => {
                let mut sum = 0.0;
                for (r, &m) in sc.mult.iter().enumerate() {
                    if m > 0 {
                        let draws = m * self.sorted[r].len() as u64;
                        sum +=
                            blocked_sum(rng, &self.sorted[r], &self.blocks[r], draws, &mut sc.mean);
                    }
                }
                sum / total as f64
            }
            Statistic::Median => {
                let even = total.is_multiple_of(2);
                let (a, b) = self.order_pair(rng, sc, (total - 1) / 2, even);
                if even { (a + b) / 2.0 } else { a }
            }
            Statistic::Quantile(q) => {
                let (lo, t) = virtual_index(total as usize, q);
                let (a, b) = self.order_pair(rng, sc, lo as u64, t > 0.0);
                lerp(a, b, t)
            }
        }
    }

    /// The pooled resample's order statistics at 0-based ranks `k` and (when `pair`) `k + 1`.
    fn order_pair(&self, rng: &mut ChaCha8Rng, sc: &mut Scratch, k: u64, pair: bool) -> (f64, f64) {
        sc.parts.clear();
        for (r, &m) in sc.mult.iter().enumerate() {
            if m > 0 {
                let n = self.sorted[r].len();
                sc.parts.push(Part {
                    r,
                    lo: 0,
                    hi: n,
                    c: m * n as u64,
                });
            }
        }
        let mut parts = std::mem::take(&mut sc.parts);
        let out = self.descend(rng, &mut parts, sc, k, pair);
        sc.parts = parts;
        out
    }

    /// The value at within-part fraction `f` of each part, weighted by its draws: their
    /// weighted median, a cheap guess of the pooled draws' `f`-quantile.
    fn guess(&self, parts: &[Part], mids: &mut Vec<(f64, u64)>, f: f64) -> f64 {
        mids.clear();
        mids.extend(parts.iter().map(|p| {
            let size = p.hi - p.lo;
            let i = ((f * size as f64) as usize).min(size - 1);
            (self.sorted[p.r][p.lo + i], p.c)
        }));
        mids.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let total: u64 = mids.iter().map(|m| m.1).sum();
        let mut acc = 0;
        mids.iter()
            .find(|m| {
                acc += m.1;
                2 * acc >= total
            })
            .map_or(mids[0].0, |m| m.0)
    }

    /// Order statistics at ranks `k` and (when `pair`) `k + 1` of the draws described by
    /// `parts` (every part's draws uniform over its range, independently).
    ///
    /// Each step cuts every range at up to two values into three segments and draws how the
    /// part's draws fall into them (multinomial, as two binomials). With many draws the cuts
    /// bracket the wanted ranks (about ±4 standard deviations of a rank, guessed from the
    /// parts' own quantiles), so one step shrinks the draws from D to about 8√D; with few, or
    /// when the bracket would not shrink anything, one cut at the size-weighted median halves
    /// the values. Correctness does not depend on the cuts, only speed does.
    fn descend(
        &self,
        rng: &mut ChaCha8Rng,
        parts: &mut Vec<Part>,
        sc: &mut Scratch,
        mut k: u64,
        pair: bool,
    ) -> (f64, f64) {
        loop {
            parts.retain(|p| p.c > 0);
            let drawn: u64 = parts.iter().map(|p| p.c).sum();
            debug_assert!(k < drawn);
            let pair = pair && k + 1 < drawn;
            if let [p] = parts.as_slice() {
                let s = &self.sorted[p.r][p.lo..p.hi];
                let (i, j) = order_statistic_indices_of(rng, s.len(), p.c, k, pair);
                return (s[i], s[j]);
            }
            let size: usize = parts.iter().map(|p| p.hi - p.lo).sum();
            let cut = |v: f64, strict: bool, p: &Part| {
                let s = &self.sorted[p.r][p.lo..p.hi];
                p.lo + if strict {
                    s.partition_point(|x| *x < v)
                } else {
                    s.partition_point(|x| *x <= v)
                }
            };
            // Bracketing cuts, when they leave every segment smaller than the whole.
            sc.bounds.clear();
            let mut bracketed = false;
            if drawn >= 64 {
                let d = drawn as f64;
                let spread = 4.0 * ((k as f64 + 1.0) * (d - k as f64) / d).sqrt() + 1.0;
                let lo_f = ((k as f64 - spread) / d).max(0.0);
                let hi_f = ((k as f64 + 2.0 + spread) / d).min(1.0);
                let v1 = if lo_f > 0.0 {
                    self.guess(parts, &mut sc.mids, lo_f)
                } else {
                    f64::NEG_INFINITY
                };
                let v2 = if hi_f < 1.0 {
                    self.guess(parts, &mut sc.mids, hi_f)
                } else {
                    f64::INFINITY
                };
                let v2 = v2.max(v1);
                sc.bounds.extend(
                    parts
                        .iter()
                        .map(|p| [p.lo, cut(v1, true, p), cut(v2, false, p), p.hi]),
                );
                bracketed =
                    (0..3).all(|j| sc.bounds.iter().map(|b| b[j + 1] - b[j]).sum::<usize>() < size);
            }
            if !bracketed {
                // One cut below the size-weighted median of the ranges' middle values; if
                // nothing lies below it, at or below it; if nothing lies above either, every
                // remaining value is the pivot.
                sc.mids.clear();
                sc.mids.extend(parts.iter().map(|p| {
                    (
                        self.sorted[p.r][p.lo + (p.hi - p.lo) / 2],
                        (p.hi - p.lo) as u64,
                    )
                }));
                sc.mids.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                let mut acc = 0;
                let pivot = sc
                    .mids
                    .iter()
                    .find(|m| {
                        acc += m.1 as usize;
                        2 * acc >= size
                    })
                    .map_or(sc.mids[0].0, |m| m.0);
                let below = |strict| {
                    parts
                        .iter()
                        .map(|p| cut(pivot, strict, p) - p.lo)
                        .sum::<usize>()
                };
                let strict = below(true) > 0;
                if !strict && below(false) == size {
                    return (pivot, pivot);
                }
                sc.bounds.clear();
                sc.bounds.extend(parts.iter().map(|p| {
                    let m = cut(pivot, strict, p);
                    [p.lo, m, p.hi, p.hi]
                }));
            }
            // Multinomial split of every part's draws over its three segments.
            sc.counts.clear();
            let mut seg_drawn = [0u64; 3];
            for (p, b) in parts.iter().zip(&sc.bounds) {
                let (mut left, mut left_size) = (p.c, (p.hi - p.lo) as u64);
                let mut cnt = [0u64; 3];
                for j in 0..3 {
                    let seg = (b[j + 1] - b[j]) as u64;
                    let c = if seg == left_size {
                        left
                    } else {
                        binomial(rng, left, seg as f64 / left_size as f64)
                    };
                    cnt[j] = c;
                    seg_drawn[j] += c;
                    left -= c;
                    left_size -= seg;
                }
                sc.counts.push(cnt);
            }
            // The segment holding rank k, and the one holding k + 1.
            let seg_of = |rank: u64| {
                let mut before = 0;
                for (j, &d) in seg_drawn.iter().enumerate() {
                    if rank < before + d {
                        return (j, before);
                    }
                    before += d;
                }
                unreachable!("rank {rank} beyond {drawn} draws")
            };
            let (j, before) = seg_of(k);
            let restrict =
                |parts: &mut Vec<Part>, j: usize, bounds: &[[usize; 4]], counts: &[[u64; 3]]| {
                    for ((p, b), c) in parts.iter_mut().zip(bounds).zip(counts) {
                        p.lo = b[j];
                        p.hi = b[j + 1];
                        p.c = c[j];
                    }
                };
            let j2 = if pair { seg_of(k + 1).0 } else { j };
            if j2 == j {
                restrict(parts, j, &sc.bounds, &sc.counts);
                k -= before;
                continue;
            }
            // Rank k is the largest of segment j, k + 1 the smallest of a later segment; the
            // segments are independent given their counts.
            let mut right = std::mem::take(&mut sc.spare);
            right.clear();
            right.extend_from_slice(parts);
            restrict(&mut right, j2, &sc.bounds, &sc.counts);
            restrict(parts, j, &sc.bounds, &sc.counts);
            let a = self.descend(rng, parts, sc, k - before, false).0;
            let b = self.descend(rng, &mut right, sc, 0, false).0;
            sc.spare = right;
            return (a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resample::tests::ks;
    use rand::SeedableRng;

    /// One materialised cluster resample's statistic: the definition the fast path must match.
    fn brute(rng: &mut ChaCha8Rng, reps: &[Vec<f64>], stat: Statistic) -> f64 {
        let k = reps.len();
        let mut buf = Vec::new();
        for _ in 0..k {
            let r = &reps[rng.random_range(0..k)];
            buf.extend((0..r.len()).map(|_| r[rng.random_range(0..r.len())]));
        }
        stat.compute(&mut buf)
    }

    fn replicates() -> Vec<Vec<f64>> {
        // Uneven sizes and shifted levels, so replicate choice matters; one with heavy ties.
        let mut reps: Vec<Vec<f64>> = [37usize, 120, 1500, 64, 9]
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                (0..n)
                    .map(|i| (1.0 + ((i * 7919 + j * 31) % n) as f64).ln().powi(2) + j as f64)
                    .collect()
            })
            .collect();
        reps.push((0..200).map(|i| (i % 3) as f64 + 2.0).collect());
        reps
    }

    #[test]
    fn matches_materialised_resamples_in_distribution() {
        // Two-sample KS at α = 1e-4 against the materialising definition (fixed seeds).
        let reps = replicates();
        let c = Clusters::new(&reps);
        let mut sc = c.scratch();
        let draws = 2000;
        let crit = 2.146 * (2.0 / draws as f64).sqrt();
        for stat in [
            Statistic::Mean,
            Statistic::Median,
            Statistic::Quantile(0.9),
            Statistic::Quantile(0.013),
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(41);
            let fast: Vec<f64> = (0..draws)
                .map(|_| c.draw(&mut rng, stat, &mut sc))
                .collect();
            let slow: Vec<f64> = (0..draws).map(|_| brute(&mut rng, &reps, stat)).collect();
            let d = ks(fast, slow);
            assert!(d < crit, "{stat:?}: D = {d}");
        }
    }

    #[test]
    fn ties_and_tiny_replicates() {
        // Every value equal: the descent must stop, not loop.
        let flat = vec![vec![3.0; 10], vec![3.0; 4], vec![3.0]];
        let c = Clusters::new(&flat);
        let mut sc = c.scratch();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for stat in [Statistic::Median, Statistic::Quantile(0.3), Statistic::Mean] {
            for _ in 0..100 {
                assert_eq!(c.draw(&mut rng, stat, &mut sc), 3.0);
            }
        }
        // Two values across single-sample replicates: the median's law is exact to count.
        let two = vec![vec![1.0], vec![2.0]];
        let c = Clusters::new(&two);
        let mut sc = c.scratch();
        let mut seen = [0u32; 3];
        for _ in 0..4000 {
            let m = c.draw(&mut rng, Statistic::Median, &mut sc);
            seen[((m - 1.0) * 2.0) as usize] += 1;
        }
        // Replicates {1,1}, {1,2}, {2,1}, {2,2}: medians 1, 1.5, 1.5, 2.
        for (got, p) in seen.iter().zip([0.25, 0.5, 0.25]) {
            assert!((*got as f64 / 4000.0 - p).abs() < 0.035, "{seen:?}");
        }
    }
}
