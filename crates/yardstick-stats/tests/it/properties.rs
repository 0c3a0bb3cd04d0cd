//! Property tests: invariants that must hold for any input.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use yardstick_stats::bootstrap::{BootstrapConfig, Method, bootstrap_ci, ratio_of_medians_ci};
use yardstick_stats::descriptive::{Descriptive, RunningStats};
use yardstick_stats::histogram::LatencyHistogram;
use yardstick_stats::percentile::{percentile, quantile_ci};
use yardstick_stats::statistic::Statistic;

fn samples(max: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-1e6f64..1e6, 1..max)
}

fn positive_samples(max: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.5f64..1e4, 2..max)
}

// Failing cases are kept in `properties.proptest-regressions` beside this file, and its seeds
// run first. Said explicitly: proptest's default (`SourceParallel`) would look in
// `tests/proptest-regressions/` instead, because `tests/it/` holds a `main.rs`.
proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions"
        ))),
        ..ProptestConfig::with_cases(64)
    })]

    #[test]
    fn percentile_is_monotone_in_q(data in samples(200), mut qs in prop::collection::vec(0.0f64..=1.0, 2..20)) {
        qs.sort_by(f64::total_cmp);
        let values: Vec<f64> = qs.iter().map(|&q| percentile(&data, q).unwrap()).collect();
        for w in values.windows(2) {
            prop_assert!(w[0] <= w[1], "{values:?} for {qs:?}");
        }
        let d = Descriptive::of(&data).unwrap();
        prop_assert_eq!(values[0].min(d.min), d.min);
        prop_assert!(values[values.len() - 1] <= d.max);
    }

    #[test]
    fn order_statistic_ci_contains_the_estimate(data in samples(700), q in 0.01f64..0.99, level in 0.5f64..0.99) {
        let p = percentile(&data, q).unwrap();
        if let Ok(ci) = quantile_ci(&data, q, level) {
            prop_assert!(ci.lower <= p && p <= ci.upper, "{ci:?} vs {p}");
            prop_assert!(ci.coverage >= level - 1e-9, "{ci:?}");
        }
    }

    #[test]
    fn bootstrap_ci_contains_the_estimate_and_is_reproducible(
        data in positive_samples(60),
        seed in any::<u64>(),
        stat in prop_oneof![Just(Statistic::Mean), Just(Statistic::Median), (0.05f64..0.95).prop_map(Statistic::Quantile)],
        method in prop_oneof![Just(Method::Percentile), Just(Method::Bca)],
    ) {
        let cfg = BootstrapConfig { resamples: 200, level: 0.95, seed, method };
        let first = bootstrap_ci(&data, stat, &cfg);
        let again = bootstrap_ci(&data, stat, &cfg);
        prop_assert_eq!(&first, &again);
        if let Ok(ci) = first {
            prop_assert!(ci.lower <= ci.upper);
            // Any interval stays within the data's range; the mean's interval (a smooth statistic)
            // also contains the estimate. Quantiles of small resamples are discrete and may put the
            // estimate in a tail, so that is not an invariant for them.
            let lo = data.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            // Up to rounding: the mean of a resample of n copies of the maximum is sum/n, which
            // can land one ulp past it (CI found 7474.366779588049 over 7474.366779588048).
            let ulps = 4.0 * f64::EPSILON * lo.abs().max(hi.abs());
            prop_assert!(lo - ulps <= ci.lower && ci.upper <= hi + ulps, "{ci:?}");
            if stat == Statistic::Mean {
                let tol = 1e-9 * ci.estimate.abs();
                prop_assert!(ci.lower - tol <= ci.estimate && ci.estimate <= ci.upper + tol, "{ci:?}");
            }
        }
    }

    #[test]
    fn ratio_of_medians_is_reproducible(a in positive_samples(40), b in positive_samples(40), seed in any::<u64>()) {
        let cfg = BootstrapConfig { resamples: 200, level: 0.9, seed, method: Method::Bca };
        prop_assert_eq!(ratio_of_medians_ci(&a, &b, &cfg), ratio_of_medians_ci(&a, &b, &cfg));
    }

    #[test]
    fn histogram_merge_equals_histogram_of_union(
        a in prop::collection::vec(1u64..10_000_000, 0..300),
        b in prop::collection::vec(1u64..10_000_000, 0..300),
    ) {
        let (mut ha, mut hb, mut hu) = (
            LatencyHistogram::new(3).unwrap(),
            LatencyHistogram::new(3).unwrap(),
            LatencyHistogram::new(3).unwrap(),
        );
        for &v in &a { ha.record(v).unwrap(); hu.record(v).unwrap(); }
        for &v in &b { hb.record(v).unwrap(); hu.record(v).unwrap(); }
        ha.merge(&hb).unwrap();
        prop_assert_eq!(ha.len(), hu.len());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            prop_assert_eq!(ha.quantile(q), hu.quantile(q));
        }
        prop_assert!(ha == hu);
    }

    #[test]
    fn running_stats_merge_matches_batch(data in samples(300), split in 0usize..300) {
        let split = split.min(data.len());
        let (mut a, mut b) = (RunningStats::new(), RunningStats::new());
        a.extend(data[..split].iter().copied());
        b.extend(data[split..].iter().copied());
        let m = a.merge(&b);
        let d = Descriptive::of(&data).unwrap();
        prop_assert_eq!(m.count() as usize, d.n);
        prop_assert!((m.mean().unwrap() - d.mean).abs() <= 1e-9 * (1.0 + d.mean.abs().max(d.max.abs())));
    }
}
