//! `cargo bench -p yardstick-stats`: the three workloads the issue sets a 1 s target for.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use yardstick_stats::bootstrap::{BootstrapConfig, Method, Statistic, bootstrap_ci};
use yardstick_stats::descriptive::Descriptive;
use yardstick_stats::hypothesis::mann_whitney;
use yardstick_stats::percentile::{percentile_sorted, quantile_ci_sorted};
use yardstick_stats::{outliers, report, steady_state, tail};

/// Log-normal-ish latencies (ms): a skewed body with a tail, like real serving data.
fn latencies(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(1e-12..1.0);
            let v: f64 = rng.random_range(0.0..1.0);
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            50.0 * (0.4 * z).exp()
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("stats");
    g.sample_size(10);

    // The whole of `summarize` (what `yardstick stats summarize` computes after parsing): at
    // 1e6 samples the median's BCa interval uses 10,000 resamples, the mean's 1,000.
    let big = latencies(1_000_000, 1);
    g.bench_function("summarize 1e6 with bootstrap CIs", |b| {
        b.iter(|| report::summarize(black_box(&big), &report::Options::default()).unwrap())
    });

    // Everything `summarize` reports except the bootstrap intervals of mean and median.
    g.bench_function("summarize 1e6 without bootstrap", |b| {
        b.iter(|| {
            let d = Descriptive::of(black_box(&big)).unwrap();
            let s = {
                let mut s = big.clone();
                s.sort_unstable_by(f64::total_cmp);
                s
            };
            let p: Vec<f64> = [0.5, 0.9, 0.95, 0.99]
                .iter()
                .map(|&q| percentile_sorted(&s, q))
                .collect();
            let cis: Vec<_> = [0.5, 0.9, 0.95, 0.99]
                .iter()
                .map(|&q| quantile_ci_sorted(&s, q, 0.95).ok())
                .collect();
            let o = (
                outliers::tukey(&big).unwrap(),
                outliers::mad_z(&big).unwrap(),
            );
            let m = steady_state::mser5(&big).ok();
            let t = tail::normal_tail(&big, 0.99).ok();
            black_box((d, p, cis, o, m, t))
        })
    });

    let mid = latencies(10_000, 2);
    let cfg = BootstrapConfig {
        resamples: 10_000,
        level: 0.95,
        seed: 7,
        method: Method::Bca,
    };
    g.bench_function("BCa bootstrap of the median, 10k resamples of 1e4", |b| {
        b.iter(|| bootstrap_ci(black_box(&mid), Statistic::Median, &cfg).unwrap())
    });

    let (x, y) = (latencies(100_000, 3), latencies(100_000, 4));
    g.bench_function("Mann-Whitney U 1e5 x 1e5", |b| {
        b.iter(|| mann_whitney(black_box(&x), black_box(&y)).unwrap())
    });
    let mean_cfg = BootstrapConfig {
        resamples: 1_000,
        ..cfg
    };
    g.bench_function("BCa bootstrap of the mean, 1k resamples of 1e6", |b| {
        b.iter(|| bootstrap_ci(black_box(&big), Statistic::Mean, &mean_cfg).unwrap())
    });
    g.finish();
}

criterion_group!(stats, benches);
criterion_main!(stats);
