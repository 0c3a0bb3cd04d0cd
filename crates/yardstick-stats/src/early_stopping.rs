//! MLPerf LoadGen early stopping (`loadgen/early_stopping.cc` and `results.cc` in
//! mlcommons/inference): may a run with `n` queries, `t` of them over the latency bound, claim
//! that its true `p`-percentile latency meets the bound?
//!
//! If the true percentile were exactly at the bound, each query would be over it with
//! probability `1 − p`; the chance of seeing `t` or fewer over-latency queries among `h + t` is
//! the binomial CDF `P(Binom(h+t, 1−p) <= t) = I_p(h, t+1)` (regularised incomplete beta). The
//! run may claim the percentile when that chance is below `1 − confidence` (LoadGen: 0.99,
//! tolerance 0).

use serde::Serialize;
use statrs::function::beta::beta_reg;

use crate::{StatsError, check_finite, sorted};

/// LoadGen's confidence for early stopping.
pub const LOADGEN_CONFIDENCE: f64 = 0.99;

/// The probability of `t` or fewer over-latency queries among `h + t` when each is over with
/// probability `1 − (p − d)`: `I_{p−d}(h, t+1)`.
pub fn odds(h: u64, t: u64, p: f64, d: f64) -> f64 {
    if h == 0 {
        return 1.0;
    }
    beta_reg(h as f64, t as f64 + 1.0, p - d)
}

fn check(p: f64, d: f64, c: f64) -> Result<(), StatsError> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !in_unit(p) || !in_unit(c) || !(0.0..p).contains(&d) {
        return Err(StatsError::InvalidParameter(format!(
            "early stopping needs 0 < p < 1, 0 < confidence < 1, 0 <= tolerance < p \
             (got p = {p}, confidence = {c}, tolerance = {d})"
        )));
    }
    Ok(())
}

/// LoadGen's `MinPassingQueriesFinder`: the least number `h` of under-latency queries that,
/// with `t` over-latency ones, makes `odds(h, t, p, d) < 1 − c`.
pub fn min_passing_queries(t: u64, p: f64, d: f64, c: f64) -> Result<u64, StatsError> {
    check(p, d, c)?;
    let passes = |h: u64| odds(h, t, p, d) < 1.0 - c;
    let mut hi = 1u64;
    while !passes(hi) {
        hi = hi.checked_mul(2).ok_or_else(|| {
            StatsError::InvalidParameter("early stopping: no finite query count passes".into())
        })?;
    }
    let mut lo = hi / 2; // fails (or is 0)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) { hi = mid } else { lo = mid }
    }
    Ok(hi)
}

/// The verdict for a run with a known latency bound (LoadGen's Server scenario).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EarlyStoppingVerdict {
    /// Queries processed.
    pub queries: u64,
    /// Queries over the latency bound.
    pub overlatency: u64,
    /// The target percentile, e.g. 0.99.
    pub percentile: f64,
    /// Queries the run needed: `min_passing_queries(t) + t`.
    pub required: u64,
    /// Whether the run may claim the percentile meets the bound.
    pub passed: bool,
    /// The largest percentile this run may claim at the confidence (the `p` solving
    /// `I_p(n − t, t + 1) = 1 − c`); `None` when every query was over the bound.
    pub max_claimable_percentile: Option<f64>,
}

/// Early stopping for `n` queries of which `t` exceeded the latency bound, at target percentile
/// `p`, confidence `c` (LoadGen uses 0.99) and tolerance 0.
pub fn early_stopping(n: u64, t: u64, p: f64, c: f64) -> Result<EarlyStoppingVerdict, StatsError> {
    if t > n {
        return Err(StatsError::InvalidParameter(format!(
            "{t} over-latency queries out of {n}"
        )));
    }
    let h = min_passing_queries(t, p, 0.0, c)?;
    Ok(EarlyStoppingVerdict {
        queries: n,
        overlatency: t,
        percentile: p,
        required: h + t,
        passed: n >= h + t,
        max_claimable_percentile: max_claimable_percentile(n, t, c),
    })
}

/// What `n` requests, `t` of which missed an objective, say of whether at least a share `p` of
/// all requests meets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShareTest {
    /// Shown at the confidence: so few missed that a true share below `p` would rarely give
    /// them (LoadGen's early-stopping claim).
    Holds,
    /// Shown at the confidence: so many missed that a true share of `p` or more would rarely
    /// give them.
    Breaks,
    /// Too few requests to tell either way: measure longer.
    Undecided,
}

/// Tests whether at least a share `p` of requests meets an objective, from `n` requests of
/// which `t` missed it, at confidence `c`: [`ShareTest::Holds`] when `P(Binom(n, 1 − p) ≤ t)
/// < 1 − c` (early stopping's claim), [`ShareTest::Breaks`] when `P(Binom(n, 1 − p) ≥ t) <
/// 1 − c`, else [`ShareTest::Undecided`]. Requests are taken as independent, which load tests
/// only approximate (latencies of neighbouring requests are correlated), so the confidence is
/// nominal.
pub fn share_test(n: u64, t: u64, p: f64, c: f64) -> Result<ShareTest, StatsError> {
    check(p, 0.0, c)?;
    if t > n {
        return Err(StatsError::InvalidParameter(format!(
            "{t} missed out of {n} requests"
        )));
    }
    if n == 0 {
        return Ok(ShareTest::Undecided);
    }
    if odds(n - t, t, p, 0.0) < 1.0 - c {
        return Ok(ShareTest::Holds);
    }
    // P(X ≥ t) for X ~ Binom(n, q) is I_q(t, n − t + 1).
    let breaks = t > 0 && beta_reg(t as f64, (n - t) as f64 + 1.0, 1.0 - p) < 1.0 - c;
    Ok(if breaks {
        ShareTest::Breaks
    } else {
        ShareTest::Undecided
    })
}

/// The supremum of the percentiles `p` a run with `n` queries and `t` over the bound may claim
/// at confidence `c`: the root of `I_p(n − t, t + 1) = 1 − c` (found by bisection; `I_p` rises
/// with `p`). `None` when `t == n`.
pub fn max_claimable_percentile(n: u64, t: u64, c: f64) -> Option<f64> {
    if t >= n || !(c > 0.0 && c < 1.0) {
        return None;
    }
    let (a, b) = ((n - t) as f64, t as f64 + 1.0);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if beta_reg(a, b, mid) < 1.0 - c {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some(0.5 * (lo + hi))
}

/// The early-stopping percentile estimate of LoadGen's SingleStream scenario.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EarlyStoppingEstimate {
    /// The target percentile.
    pub percentile: f64,
    /// The largest `t` with `min_passing_queries(t) + t <= n`.
    pub t: u64,
    /// The `t`-th largest sample: the latency the run may claim for the percentile.
    pub estimate: f64,
}

/// LoadGen's SingleStream early-stopping estimate: the `t`-th largest latency for the largest
/// `t` the run could have tolerated over the bound. Needs `min_passing_queries(1) + 1` samples
/// (at confidence 0.99: 64 for p90, 662 for p99).
pub fn early_stopping_estimate(
    latencies: &[f64],
    p: f64,
    c: f64,
) -> Result<EarlyStoppingEstimate, StatsError> {
    check_finite(latencies)?;
    let n = latencies.len() as u64;
    let fits =
        |t: u64| -> Result<bool, StatsError> { Ok(min_passing_queries(t, p, 0.0, c)? + t <= n) };
    if !fits(1)? {
        return Err(StatsError::NotEnoughSamples {
            what: format!("an early-stopping estimate of the {p}-percentile"),
            needed: (min_passing_queries(1, p, 0.0, c)? + 1) as usize,
            have: n as usize,
        });
    }
    // h(t) + t grows with t, so the largest t that fits is found by bisection.
    let (mut lo, mut hi) = (1u64, n); // fits(lo), and fits(n) is false since h >= 1
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? { lo = mid } else { hi = mid }
    }
    let s = sorted(latencies);
    Ok(EarlyStoppingEstimate {
        percentile: p,
        t: lo,
        estimate: s[(n - lo) as usize],
    })
}

#[test]
fn share_tests_decide_only_with_enough_requests() {
    // p90 at 95 %: nothing missed among 10 is not enough, among 30 it is (0.9^29 < 0.05).
    assert_eq!(share_test(10, 0, 0.9, 0.95).unwrap(), ShareTest::Undecided);
    assert_eq!(share_test(30, 0, 0.9, 0.95).unwrap(), ShareTest::Holds);
    // Half missing breaks a 90 % objective quickly; 12 of 100 is within chance of 10 %.
    assert_eq!(share_test(20, 10, 0.9, 0.95).unwrap(), ShareTest::Breaks);
    assert_eq!(
        share_test(100, 12, 0.9, 0.95).unwrap(),
        ShareTest::Undecided
    );
    assert_eq!(share_test(1000, 150, 0.9, 0.95).unwrap(), ShareTest::Breaks);
    assert_eq!(share_test(1000, 80, 0.9, 0.95).unwrap(), ShareTest::Holds);
    // The claim agrees with LoadGen's early stopping.
    for (n, t) in [(459u64, 0u64), (458, 0), (700, 2), (2000, 10)] {
        let es = early_stopping(n, t, 0.99, 0.99).unwrap();
        let st = share_test(n, t, 0.99, 0.99).unwrap();
        assert_eq!(es.passed, st == ShareTest::Holds, "{n} {t}");
    }
    assert_eq!(share_test(0, 0, 0.9, 0.95).unwrap(), ShareTest::Undecided);
    assert!(share_test(3, 4, 0.9, 0.95).is_err());
    assert!(share_test(3, 1, 1.0, 0.95).is_err());
}
