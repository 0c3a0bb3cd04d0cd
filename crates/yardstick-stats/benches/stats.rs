//! `cargo bench -p yardstick-stats`: the workloads issue 3 sets a 1 s target for, plus parsing
//! and the cluster bootstrap.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use yardstick_stats::bootstrap::{
    BootstrapConfig, Method, abc_mean_ci, bootstrap_ci, cluster_bootstrap_ci,
};
use yardstick_stats::hypothesis::mann_whitney;
use yardstick_stats::statistic::Statistic;
use yardstick_stats::{report, samples};

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

    // The CLI's input: one number per line, 4 decimals, as `yardstick stats summarize` reads.
    let big = latencies(1_000_000, 1);
    let text: String = big.iter().map(|x| format!("{x:.4}\n")).collect();
    g.bench_function("parse 1e6 lines", |b| {
        b.iter(|| samples::parse(black_box(&text)).unwrap())
    });

    // Everything `yardstick stats summarize --json` computes after parsing: descriptive stats,
    // percentiles and their order-statistic CIs, the mean's ABC interval, the median's BCa
    // interval (10,000 resamples), Tukey and MAD outliers, normal tail, MSER-5.
    let parsed = samples::parse(&text).unwrap();
    g.bench_function("summarize 1e6 (as the CLI)", |b| {
        b.iter(|| report::summarize(black_box(&parsed), &report::Options::default()).unwrap())
    });
    g.bench_function("ABC interval of the mean, 1e6", |b| {
        b.iter(|| abc_mean_ci(black_box(&big), 0.95).unwrap())
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

    // Cluster bootstrap over 10 replicates of 10,000 samples (10^5 pooled), each replicate
    // with its own level so that between-run variance matters.
    let reps: Vec<Vec<f64>> = (0..10)
        .map(|r| {
            let shift = 1.0 + 0.02 * r as f64;
            latencies(10_000, 10 + r)
                .iter()
                .map(|v| v * shift)
                .collect()
        })
        .collect();
    g.bench_function("cluster BCa of the median, 10k resamples, 10 x 1e4", |b| {
        b.iter(|| cluster_bootstrap_ci(black_box(&reps), Statistic::Median, &cfg).unwrap())
    });
    let mean_cfg = BootstrapConfig {
        resamples: 1_000,
        ..cfg
    };
    g.bench_function("cluster BCa of the mean, 1k resamples, 10 x 1e4", |b| {
        b.iter(|| cluster_bootstrap_ci(black_box(&reps), Statistic::Mean, &mean_cfg).unwrap())
    });
    g.finish();
}

criterion_group!(stats, benches);
criterion_main!(stats);
