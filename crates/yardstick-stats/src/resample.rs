//! Fast, exact bootstrap resampling of one sorted sample.
//!
//! A bootstrap resample is n indices drawn uniformly with replacement. Materialising it costs n
//! random draws; the statistics yardstick bootstraps need far less:
//!
//! * **Quantiles** use one or two order statistics of the resample. Draw index i as
//!   ⌈n·Uᵢ⌉ with Uᵢ uniform on (0, 1); ⌈n·u⌉ is monotone, so the resample's k-th smallest index
//!   is ⌈n·U₍ₖ₎⌉, and the k-th order statistic of n uniforms is Beta(k, n − k + 1). Given
//!   U₍ₖ₎ = u, the other n − k uniforms are uniform on (u, 1), so U₍ₖ₊₁₎ = u + (1 − u)·M with
//!   M ~ Beta(1, n − k), the least of n − k uniforms. That is the exact joint law of the two
//!   adjacent order statistics (hence of numpy's interpolated quantile) in O(1) per resample.
//!   Check: P(⌈n·U₍ₖ₎⌉ ≤ j) = P(U₍ₖ₎ ≤ j/n) = P(Binomial(n, j/n) ≥ k).
//! * **The mean** needs every draw, but not in random order: the counts falling into
//!   consecutive blocks of the data are multinomial (drawn as conditional binomials), and the
//!   draws inside a block are uniform over it. Blocks have power-of-two sizes (2,048 values,
//!   the remainder split by its binary digits), so an index within a block is a bit mask of the
//!   random stream, and the block stays in the L1 cache: about 1–2 ns per draw instead of ~15.
//!
//! Every resample r draws from its own ChaCha8 stream r of the seed's key, so the replicates are
//! the same whichever thread computes them, and resamples run on all available cores.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::descriptive::mean;

/// A uniform draw from the open interval (0, 1), 53 bits.
fn open01(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal draw (Box–Muller; one of the pair is used).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v) = (open01(rng), open01(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Gamma(shape, 1) draw for shape >= 1 (Marsaglia & Tsang 2000; exact rejection sampler).
pub(crate) fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    debug_assert!(shape >= 1.0);
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = open01(rng);
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A Beta(a, b) draw for a, b >= 1, as G_a / (G_a + G_b).
pub(crate) fn beta(rng: &mut ChaCha8Rng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    x / (x + y)
}

/// A Binomial(n, p) draw, exact: inversion when n·p is small, otherwise Devroye's (1986, §X.4)
/// order-statistic split — with X the i-th smallest of n uniforms (Beta(i, n − i + 1)) and
/// i ≈ n·p, the count below p is i + Binomial(n − i, (p − X)/(1 − X)) when X <= p, else
/// Binomial(i − 1, p / X) — which shrinks n·p to about √(n·p) per step.
pub(crate) fn binomial(rng: &mut ChaCha8Rng, n: u64, p: f64) -> u64 {
    let (mut n, mut p) = (n, p);
    let mut base = 0u64;
    // The result is base + sign * Binomial(n, p); sign flips when p > 1/2 is mirrored.
    let mut negate = false;
    loop {
        if n == 0 || p <= 0.0 {
            return base;
        }
        if p >= 1.0 {
            return if negate { base - n } else { base + n };
        }
        if p > 0.5 {
            // Binomial(n, p) = n − Binomial(n, 1 − p).
            base = if negate { base - n } else { base + n };
            negate = !negate;
            p = 1.0 - p;
        }
        if n as f64 * p < 16.0 {
            let k = binomial_inversion(rng, n, p);
            return if negate { base - k } else { base + k };
        }
        let i = ((n as f64 * p) as u64).clamp(1, n);
        let x = beta(rng, i as f64, (n - i + 1) as f64);
        if x <= p {
            base = if negate { base - i } else { base + i };
            p = (p - x) / (1.0 - x);
            n -= i;
        } else {
            p /= x;
            n = i - 1;
        }
    }
}

/// Binomial(n, p) by sequential inversion from 0 (p <= 1/2, n·p small: few steps).
fn binomial_inversion(rng: &mut ChaCha8Rng, n: u64, p: f64) -> u64 {
    let q = 1.0 - p;
    let s = p / q;
    let a = (n as f64 + 1.0) * s;
    let r0 = (n as f64 * (-p).ln_1p()).exp();
    loop {
        let mut u = open01(rng);
        let mut r = r0;
        let mut k = 0u64;
        loop {
            if u < r {
                return k;
            }
            u -= r;
            k += 1;
            r *= a / k as f64 - s;
            if k > n || r <= 0.0 {
                break; // rounding left some mass unassigned: draw again (rare)
            }
        }
    }
}

/// Draws the 0-based indices of the order statistics at 0-based ranks `k` and, when `pair`,
/// `k + 1` (clamped to `k` at the top) of a resample of size `n` of a sorted sample.
pub(crate) fn order_statistic_indices(
    rng: &mut ChaCha8Rng,
    n: usize,
    k: usize,
    pair: bool,
) -> (usize, usize) {
    order_statistic_indices_of(rng, n, n as u64, k as u64, pair)
}

/// Like [`order_statistic_indices`] for `draws` uniform draws (with replacement) from `n`
/// sorted values: the 0-based indices of the draws' order statistics at 0-based ranks `k` and,
/// when `pair`, `k + 1` (clamped to `k` at the top).
pub(crate) fn order_statistic_indices_of(
    rng: &mut ChaCha8Rng,
    n: usize,
    draws: u64,
    k: u64,
    pair: bool,
) -> (usize, usize) {
    debug_assert!(k < draws && n > 0);
    let nf = n as f64;
    // 1-based rank k + 1 of `draws` uniforms: Beta(k + 1, draws − k).
    let u = beta(rng, (k + 1) as f64, (draws - k) as f64);
    let to_index = |u: f64| ((nf * u).ceil() as usize).clamp(1, n) - 1;
    let first = to_index(u);
    if !pair || k + 1 >= draws {
        return (first, first);
    }
    // The least of the draws − k − 1 uniforms above u: 1 − V^(1/(draws−k−1)).
    let m = -(open01(rng).ln() / (draws - k - 1) as f64).exp_m1();
    let u2 = u + (1.0 - u) * m;
    (first, to_index(u2).max(first))
}

/// Log2 of the block size for the mean: 2,048 values (16 KiB) stay in L1 with room to spare.
const BLOCK_LOG2: u32 = 11;

/// Block layout of a sample for the blocked multinomial mean: (start, log2 of size).
pub(crate) fn blocks(n: usize) -> Vec<(usize, u32)> {
    let full = n >> BLOCK_LOG2;
    let mut out: Vec<(usize, u32)> = (0..full).map(|b| (b << BLOCK_LOG2, BLOCK_LOG2)).collect();
    let mut start = full << BLOCK_LOG2;
    for bit in (0..BLOCK_LOG2).rev() {
        if n & (1 << bit) != 0 {
            out.push((start, bit));
            start += 1 << bit;
        }
    }
    out
}

/// Scratch space for resampling the mean.
pub(crate) struct MeanScratch {
    words: Vec<u64>,
    gathered: Vec<f64>,
}

impl MeanScratch {
    pub(crate) fn new() -> Self {
        Self {
            words: vec![0; 256],
            gathered: Vec::new(),
        }
    }
}

/// Below this size the mean of a resample gathers its values and sums them pairwise like the
/// estimate (so a resample of the same multiset ties with it exactly).
pub(crate) const GATHER_THRESHOLD: usize = 4096;

/// The mean of one bootstrap resample of `data` (any order), exact in distribution.
pub(crate) fn resample_mean(
    rng: &mut ChaCha8Rng,
    data: &[f64],
    blocks: &[(usize, u32)],
    scratch: &mut MeanScratch,
) -> f64 {
    let n = data.len();
    if n <= GATHER_THRESHOLD {
        scratch.gathered.clear();
        scratch
            .gathered
            .extend((0..n).map(|_| data[rng.random_range(0..n)]));
        return mean(&scratch.gathered);
    }
    blocked_sum(rng, data, blocks, n as u64, scratch) / n as f64
}

/// The sum of `draws` uniform draws with replacement from `data` (laid out in `blocks`), exact
/// in distribution: multinomial block counts as conditional binomials, then bit-field indices.
pub(crate) fn blocked_sum(
    rng: &mut ChaCha8Rng,
    data: &[f64],
    blocks: &[(usize, u32)],
    draws: u64,
    scratch: &mut MeanScratch,
) -> f64 {
    let mut left_draws = draws;
    let mut left_size = data.len() as u64;
    let mut total = 0.0;
    for (i, &(start, lg)) in blocks.iter().enumerate() {
        let size = 1u64 << lg;
        let c = if i + 1 == blocks.len() {
            left_draws
        } else {
            binomial(rng, left_draws, size as f64 / left_size as f64)
        };
        left_draws -= c;
        left_size -= size;
        if c > 0 {
            total += block_sum(rng, &data[start..start + size as usize], lg, c, scratch);
        }
        if left_draws == 0 {
            break;
        }
    }
    total
}

/// The sum of `c` uniform draws from `block` (2^lg values), indices taken as lg-bit fields.
fn block_sum(
    rng: &mut ChaCha8Rng,
    block: &[f64],
    lg: u32,
    c: u64,
    scratch: &mut MeanScratch,
) -> f64 {
    match lg {
        0 => c as f64 * block[0],
        1 => fields::<1>(rng, block, c, scratch),
        2 => fields::<2>(rng, block, c, scratch),
        3 => fields::<3>(rng, block, c, scratch),
        4 => fields::<4>(rng, block, c, scratch),
        5 => fields::<5>(rng, block, c, scratch),
        6 => fields::<6>(rng, block, c, scratch),
        7 => fields::<7>(rng, block, c, scratch),
        8 => fields::<8>(rng, block, c, scratch),
        9 => fields::<9>(rng, block, c, scratch),
        10 => fields::<10>(rng, block, c, scratch),
        _ => fields::<BLOCK_LOG2>(rng, block, c, scratch),
    }
}

/// [`block_sum`] for a block of 2^LG values: each random u64 yields ⌊64/LG⌋ indices, summed
/// into independent accumulators (the loop over one word is unrolled).
fn fields<const LG: u32>(
    rng: &mut ChaCha8Rng,
    block: &[f64],
    c: u64,
    scratch: &mut MeanScratch,
) -> f64 {
    let block = &block[..1 << LG];
    let mask = (1u64 << LG) - 1;
    let per_word = (64 / LG) as u64;
    let mut acc = [0.0f64; 8];
    let mut left = c;
    while left > 0 {
        let full = (left / per_word).min(scratch.words.len() as u64) as usize;
        let words = if full == 0 { 1 } else { full };
        let buf = &mut scratch.words[..words];
        rng.fill(buf);
        if full == 0 {
            // The last, partial word.
            let mut w = buf[0];
            for _ in 0..left {
                acc[0] += block[(w & mask) as usize];
                w >>= LG;
            }
            break;
        }
        for &w in buf.iter() {
            for k in 0..(64 / LG) {
                acc[k as usize % 8] += block[((w >> (k * LG)) & mask) as usize];
            }
        }
        left -= full as u64 * per_word;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Computes `resamples` replicates in parallel: replicate r is `draw(scratch, rng)` with `rng`
/// on ChaCha8 stream r of `seed`, so the result does not depend on `threads`.
pub(crate) fn replicates<S, I, F>(
    resamples: usize,
    seed: u64,
    threads: usize,
    init: I,
    draw: F,
) -> Vec<f64>
where
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &mut ChaCha8Rng) -> f64 + Sync,
{
    let base = ChaCha8Rng::seed_from_u64(seed);
    let mut out = vec![0.0; resamples];
    let threads = threads.clamp(1, resamples.max(1));
    let chunk = resamples.div_ceil(threads).max(1);
    let work = |first: usize, slots: &mut [f64]| {
        let mut scratch = init();
        for (j, slot) in slots.iter_mut().enumerate() {
            let mut rng = base.clone();
            rng.set_stream((first + j) as u64);
            *slot = draw(&mut scratch, &mut rng);
        }
    };
    if threads == 1 {
        work(0, &mut out);
    } else {
        std::thread::scope(|scope| {
            for (i, slots) in out.chunks_mut(chunk).enumerate() {
                let work = &work;
                scope.spawn(move || work(i * chunk, slots));
            }
        });
    }
    out
}

/// Threads for a bootstrap of `draws` random draws in all: all cores when it is worth it.
pub(crate) fn threads_for(draws: usize) -> usize {
    if draws < 4_000_000 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_sample() {
        for n in [1, 2, 3, 4095, 4096, 4097, 10_000, 1 << 20, 1_000_003] {
            let b = blocks(n);
            let mut next = 0;
            for &(start, lg) in &b {
                assert_eq!(start, next);
                next += 1 << lg;
            }
            assert_eq!(next, n);
        }
    }

    /// Pearson's χ² of observed counts against expected probabilities (cells with expectation
    /// below 5 pooled), and its degrees of freedom.
    fn chi2(observed: &[u64], probs: &[f64]) -> (f64, usize) {
        let total: u64 = observed.iter().sum();
        let (mut stat, mut df) = (0.0, 0usize);
        let (mut po, mut pe) = (0.0, 0.0);
        for (&o, &p) in observed.iter().zip(probs) {
            po += o as f64;
            pe += p * total as f64;
            if pe >= 5.0 {
                stat += (po - pe).powi(2) / pe;
                df += 1;
                po = 0.0;
                pe = 0.0;
            }
        }
        if pe > 0.0 {
            stat += (po - pe).powi(2) / pe;
            df += 1;
        }
        (stat, df.saturating_sub(1))
    }

    /// Upper 1e-4 tail critical value of χ²(df), Wilson–Hilferty.
    fn chi2_crit(df: usize) -> f64 {
        let z = 3.719; // Φ⁻¹(1 − 1e-4)
        let d = df as f64;
        d * (1.0 - 2.0 / (9.0 * d) + z * (2.0 / (9.0 * d)).sqrt()).powi(3)
    }

    #[test]
    fn binomial_matches_its_pmf() {
        use statrs::distribution::{Binomial, Discrete};
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for &(n, p) in &[
            (10u64, 0.3),
            (40, 0.5),
            (200, 0.02),
            (1000, 0.37),
            (1000, 0.9),
            (100_000, 0.5),
            (1_000_000, 0.004),
        ] {
            let dist = Binomial::new(p, n).unwrap();
            let draws = 100_000;
            let mean = n as f64 * p;
            let sd = (mean * (1.0 - p)).sqrt();
            let lo = (mean - 6.0 * sd).floor().max(0.0) as u64;
            let hi = ((mean + 6.0 * sd).ceil() as u64).min(n);
            let mut counts = vec![0u64; (hi - lo + 1) as usize];
            for _ in 0..draws {
                let k = binomial(&mut rng, n, p);
                assert!(k <= n);
                counts[(k.clamp(lo, hi) - lo) as usize] += 1;
            }
            let probs: Vec<f64> = (lo..=hi).map(|k| dist.pmf(k)).collect();
            let (stat, df) = chi2(&counts, &probs);
            assert!(stat < chi2_crit(df), "Bin({n}, {p}): χ² {stat} on {df} df");
        }
    }

    #[test]
    fn order_statistics_match_exact_enumeration() {
        // For tiny n, enumerate all n^n resamples: the exact joint law of the index pair at
        // ranks (k, k + 1), against 200,000 fast draws.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in 1..=6usize {
            let total = n.pow(n as u32);
            for k in 0..n {
                let mut exact = vec![0u64; n * n];
                for code in 0..total {
                    let mut idx: Vec<usize> = (0..n).map(|d| code / n.pow(d as u32) % n).collect();
                    idx.sort_unstable();
                    let second = idx[(k + 1).min(n - 1)];
                    exact[idx[k] * n + second] += 1;
                }
                let probs: Vec<f64> = exact.iter().map(|&c| c as f64 / total as f64).collect();
                let mut seen = vec![0u64; n * n];
                for _ in 0..200_000 {
                    let (a, b) = order_statistic_indices(&mut rng, n, k, true);
                    seen[a * n + b] += 1;
                }
                for (cell, (&s, &e)) in seen.iter().zip(&exact).enumerate() {
                    assert!(e > 0 || s == 0, "n {n} k {k}: impossible cell {cell} drawn");
                }
                let (stat, df) = chi2(&seen, &probs);
                assert!(
                    stat < chi2_crit(df.max(1)),
                    "n {n} k {k}: χ² {stat} on {df} df"
                );
            }
        }
    }

    /// Two-sample Kolmogorov–Smirnov statistic.
    pub(crate) fn ks(mut a: Vec<f64>, mut b: Vec<f64>) -> f64 {
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let (mut i, mut j, mut d) = (0, 0, 0.0f64);
        while i < a.len() && j < b.len() {
            let x = a[i].min(b[j]);
            while i < a.len() && a[i] <= x {
                i += 1;
            }
            while j < b.len() && b[j] <= x {
                j += 1;
            }
            d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
        }
        d
    }

    #[test]
    fn order_statistic_follows_the_binomial_cdf() {
        // P(J <= j) = P(Binomial(n, j/n) >= k) for the k-th (1-based) smallest index J:
        // one-sample KS of 20,000 draws against that exact CDF (α = 1e-4).
        use statrs::distribution::{Binomial, DiscreteCDF};
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        for (n, k0) in [(1000usize, 499usize), (1001, 500), (999, 989), (500, 3)] {
            let draws = 20_000;
            let mut seen = vec![0u64; n];
            for _ in 0..draws {
                seen[order_statistic_indices(&mut rng, n, k0, false).0] += 1;
            }
            let mut cum = 0u64;
            let mut d = 0.0f64;
            for (j0, &c) in seen.iter().enumerate() {
                cum += c;
                let j = (j0 + 1) as f64;
                let exact = if j0 + 1 == n {
                    1.0
                } else {
                    // P(Bin(n, j/n) >= k0 + 1) = 1 − P(Bin <= k0)
                    1.0 - Binomial::new(j / n as f64, n as u64)
                        .unwrap()
                        .cdf(k0 as u64)
                };
                d = d.max((cum as f64 / draws as f64 - exact).abs());
            }
            assert!(d < 2.226 / (draws as f64).sqrt(), "n {n} k {k0}: D = {d}");
        }
    }

    #[test]
    fn fast_resamples_match_brute_force_in_distribution() {
        // The replicates of the fast samplers against materialised resamples (two-sample KS,
        // α = 1e-4 per case; fixed seeds, so the outcome is deterministic).
        let ks_crit = |reps: usize| 2.146 * (2.0 / reps as f64).sqrt();
        let n = 300;
        let data: Vec<f64> = (0..n).map(|i| (1.0 + i as f64).ln().powi(3)).collect();
        for (what, k) in [("median", (n - 1) / 2), ("p90", 269)] {
            for seed in 0..2u64 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let reps = 3000;
                let fast: Vec<f64> = (0..reps)
                    .map(|_| {
                        let (i, j) = order_statistic_indices(&mut rng, n, k, true);
                        data[i] + 0.3 * (data[j] - data[i])
                    })
                    .collect();
                let slow: Vec<f64> = (0..reps)
                    .map(|_| {
                        let mut r: Vec<f64> =
                            (0..n).map(|_| data[rng.random_range(0..n)]).collect();
                        r.sort_by(f64::total_cmp);
                        r[k] + 0.3 * (r[k + 1] - r[k])
                    })
                    .collect();
                let d = ks(fast, slow);
                assert!(d < ks_crit(reps), "{what} seed {seed}: D = {d}");
            }
        }
        // The blocked mean: blocks of 2048, 2048, 1024, 2 and 1 values.
        let n = 4096 + 1024 + 3;
        let data: Vec<f64> = (0..n).map(|i| (1.0 + i as f64).ln().powi(3)).collect();
        let b = blocks(n);
        let mut scratch = MeanScratch::new();
        for seed in 0..2u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
            let reps = 1000;
            let fast: Vec<f64> = (0..reps)
                .map(|_| resample_mean(&mut rng, &data, &b, &mut scratch))
                .collect();
            let slow: Vec<f64> = (0..reps)
                .map(|_| (0..n).map(|_| data[rng.random_range(0..n)]).sum::<f64>() / n as f64)
                .collect();
            let d = ks(fast, slow);
            assert!(d < ks_crit(reps), "mean seed {seed}: D = {d}");
        }
    }

    #[test]
    fn blocked_mean_has_the_bootstrap_moments() {
        // E[mean*] = x̄ and Var[mean*] = σ²/n (σ² with divisor n), checked with 4,000
        // replicates on an uneven block layout (n = 4096 + 2048 + 5).
        let n = 4096 + 2048 + 5;
        let data: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64 / 100.0).collect();
        let m = data.iter().sum::<f64>() / n as f64;
        let var = data.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64 / n as f64;
        let b = blocks(n);
        let reps = replicates(4000, 9, 2, MeanScratch::new, |s, rng| {
            resample_mean(rng, &data, &b, s)
        });
        let rm = reps.iter().sum::<f64>() / reps.len() as f64;
        let rv = reps.iter().map(|x| (x - rm).powi(2)).sum::<f64>() / (reps.len() - 1) as f64;
        let se = (var / reps.len() as f64).sqrt();
        assert!((rm - m).abs() < 4.5 * se, "mean {rm} vs {m}");
        // The variance estimate's relative sd is √(2/(R−1)) ≈ 2.2 %.
        assert!((rv / var - 1.0).abs() < 0.1, "variance {rv} vs {var}");
    }

    #[test]
    fn replicates_do_not_depend_on_threads() {
        let data: Vec<f64> = (0..9000).map(|i| (i as f64).sqrt()).collect();
        let b = blocks(data.len());
        let run = |threads| {
            replicates(37, 3, threads, MeanScratch::new, |s, rng| {
                resample_mean(rng, &data, &b, s)
            })
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(5));
        assert_ne!(one[0], one[1]);
    }
}
