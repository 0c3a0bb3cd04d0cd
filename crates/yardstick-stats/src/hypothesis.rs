//! Significance tests and effect sizes, with the conventions of `scipy.stats` (two-sided):
//! Welch's t (`ttest_ind(equal_var=False)`), Mann–Whitney U (`mannwhitneyu`, method "auto"),
//! paired t (`ttest_rel`), Wilcoxon signed-rank (`wilcoxon`, defaults), McNemar, Cliff's delta,
//! Cohen's d and the Holm–Bonferroni adjustment.

use serde::Serialize;
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, DiscreteCDF, Normal, StudentsT};

use crate::descriptive::{mean, variance};
use crate::{StatsError, check_finite};

/// A test statistic and its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TestResult {
    /// The test statistic (see each test for which one).
    pub statistic: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// A t-test result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TTest {
    /// The t statistic.
    pub t: f64,
    /// Degrees of freedom (fractional for Welch).
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

fn need(data: &[f64], n: usize, what: &str) -> Result<(), StatsError> {
    check_finite(data)?;
    if data.len() < n {
        return Err(StatsError::NotEnoughSamples {
            what: what.into(),
            needed: n,
            have: data.len(),
        });
    }
    Ok(())
}

fn t_two_sided(t: f64, df: f64) -> Result<f64, StatsError> {
    if t.is_nan() {
        return Err(StatsError::Undefined(
            "t statistic is 0/0 (no variance)".into(),
        ));
    }
    let dist = StudentsT::new(0.0, 1.0, df)
        .map_err(|e| StatsError::Undefined(format!("t distribution: {e}")))?;
    Ok((2.0 * dist.cdf(-t.abs())).min(1.0))
}

/// Welch's unequal-variance t-test; `t` is for mean(a) − mean(b). Each sample needs n >= 2.
pub fn welch_t(a: &[f64], b: &[f64]) -> Result<TTest, StatsError> {
    need(a, 2, "Welch's t-test")?;
    need(b, 2, "Welch's t-test")?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (
        variance(a).unwrap_or(0.0) / na,
        variance(b).unwrap_or(0.0) / nb,
    );
    let t = (mean(a) - mean(b)) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Ok(TTest {
        t,
        df,
        p_value: t_two_sided(t, df)?,
    })
}

/// One-sided tests of "the candidate is not beyond a ratio bound", on the logarithms of
/// per-replicate values (see [`ratio_beyond`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RatioTest {
    /// Welch's t for mean(ln b − ln bound) − mean(ln a), signed so that larger is "more beyond";
    /// `None` when it is undefined (a side with no variance, n < 2).
    pub welch_t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub welch_df: Option<f64>,
    /// One-sided Welch p-value; no floor (its assumption: log replicate values roughly normal).
    pub welch_p: Option<f64>,
    /// One-sided exact permutation p-value over every relabelling of the pooled log values;
    /// `None` beyond [`PERMUTATION_LIMIT`] relabellings.
    pub permutation_p: Option<f64>,
    /// The smallest p the permutation test can give with these sample sizes: 1 / C(na+nb, na).
    pub permutation_min_p: f64,
    /// C(na + nb, na).
    pub relabelings: f64,
}

/// Relabellings an exact permutation test enumerates at most (10 vs 10 is 184,756).
pub const PERMUTATION_LIMIT: f64 = 200_000.0;

/// C(n, k) as a float (exact for the sizes a permutation test enumerates).
pub fn binomial_coefficient(n: usize, k: usize) -> f64 {
    let k = k.min(n - k.min(n));
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// Tests H0 "candidate/baseline is not beyond `bound`" against H1 "it is beyond": beyond means
/// above the bound when `higher_is_worse` (latency, step time, memory), below it otherwise
/// (throughput). Both tests work on logarithms, where a ratio is a difference:
///
/// * Welch's t on ln(candidate) − ln(bound) against ln(baseline), one-sided. Assumptions:
///   replicates are independent, and their log values are roughly normal within each run
///   (replicate values are means or medians of many samples, so this is usually mild); the
///   variances may differ. It has no floor: with 3 vs 3 it can reach any p.
/// * The exact permutation test of the same difference of means: distribution-free under
///   exchangeability at the bound, but it cannot go below 1 / C(na+nb, na) (0.05 for 3 vs 3).
///
/// Values must be finite and > 0; each side needs 2 or more.
pub fn ratio_beyond(
    baseline: &[f64],
    candidate: &[f64],
    bound: f64,
    higher_is_worse: bool,
) -> Result<RatioTest, StatsError> {
    need(baseline, 2, "a ratio test")?;
    need(candidate, 2, "a ratio test")?;
    if !(bound > 0.0 && bound.is_finite()) || baseline.iter().chain(candidate).any(|v| *v <= 0.0) {
        return Err(StatsError::InvalidParameter(
            "a log-ratio test needs positive values and a positive bound".into(),
        ));
    }
    let sign = if higher_is_worse { 1.0 } else { -1.0 };
    let x: Vec<f64> = baseline.iter().map(|v| v.ln()).collect();
    let y: Vec<f64> = candidate.iter().map(|v| v.ln() - bound.ln()).collect();
    let welch = welch_t(&y, &x)
        .ok()
        .filter(|w| w.t.is_finite() && w.df.is_finite());
    let (welch_t_signed, welch_df, welch_p) = match welch {
        Some(w) => {
            let t = sign * w.t;
            let dist = StudentsT::new(0.0, 1.0, w.df)
                .map_err(|e| StatsError::Undefined(format!("t distribution: {e}")))?;
            (Some(t), Some(w.df), Some(dist.cdf(-t)))
        }
        None => (None, None, None),
    };
    let relabelings = binomial_coefficient(x.len() + y.len(), y.len());
    let permutation_p = (relabelings <= PERMUTATION_LIMIT).then(|| permutation_p(&x, &y, sign));
    Ok(RatioTest {
        welch_t: welch_t_signed,
        welch_df,
        welch_p,
        permutation_p,
        permutation_min_p: 1.0 / relabelings,
        relabelings,
    })
}

/// One-sided Welch test of H0 "mean(candidate) is not beyond bound · mean(baseline)" on the raw
/// scale (Welch's t of the candidate against the baseline scaled by the bound): for values that
/// may be 0 or negative, where logarithms do not apply. Returns (t signed so that larger is
/// "more beyond", df, p); `None` when undefined (no variance on either side).
pub fn ratio_beyond_linear(
    baseline: &[f64],
    candidate: &[f64],
    bound: f64,
    higher_is_worse: bool,
) -> Option<(f64, f64, f64)> {
    let scaled: Vec<f64> = baseline.iter().map(|v| v * bound).collect();
    let w = welch_t(candidate, &scaled).ok()?;
    if !(w.t.is_finite() && w.df.is_finite()) {
        return None;
    }
    let t = if higher_is_worse { w.t } else { -w.t };
    let dist = StudentsT::new(0.0, 1.0, w.df).ok()?;
    Some((t, w.df, dist.cdf(-t)))
}

/// Share of relabellings of x ∪ y whose sign·(mean(y') − mean(x')) is at least the observed one.
fn permutation_p(x: &[f64], y: &[f64], sign: f64) -> f64 {
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let (n, k) = (pooled.len(), y.len());
    let total: f64 = pooled.iter().sum();
    let stat = |sum_y: f64| sign * (sum_y / k as f64 - (total - sum_y) / (n - k) as f64);
    let observed = stat(y.iter().sum());
    // Ties within rounding count as "at least as extreme".
    let tol = 1e-12 * (1.0 + observed.abs());
    let mut idx: Vec<usize> = (0..k).collect();
    let (mut hits, mut count) = (0u64, 0u64);
    loop {
        count += 1;
        if stat(idx.iter().map(|&i| pooled[i]).sum()) >= observed - tol {
            hits += 1;
        }
        // Next k-combination of 0..n in lexicographic order.
        let mut i = k;
        while i > 0 && idx[i - 1] == n - k + i - 1 {
            i -= 1;
        }
        if i == 0 {
            break;
        }
        idx[i - 1] += 1;
        for j in i..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
    hits as f64 / count as f64
}

/// Paired t-test on the differences a − b (equal lengths, n >= 2).
pub fn paired_t(a: &[f64], b: &[f64]) -> Result<TTest, StatsError> {
    let d = differences(a, b)?;
    need(&d, 2, "a paired t-test")?;
    let n = d.len() as f64;
    let t = mean(&d) / (variance(&d).unwrap_or(0.0) / n).sqrt();
    Ok(TTest {
        t,
        df: n - 1.0,
        p_value: t_two_sided(t, n - 1.0)?,
    })
}

fn differences(a: &[f64], b: &[f64]) -> Result<Vec<f64>, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::InvalidParameter(format!(
            "paired samples differ in length ({} vs {})",
            a.len(),
            b.len()
        )));
    }
    check_finite(a)?;
    check_finite(b)?;
    Ok(a.iter().zip(b).map(|(x, y)| x - y).collect())
}

/// Average ranks (1-based) of `values` and the sizes of tied groups (> 1 only).
pub fn rank_average(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_unstable_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let avg = (start + end + 1) as f64 / 2.0; // mean of ranks start+1 ..= end
        for &i in &order[start..end] {
            ranks[i] = avg;
        }
        if end - start > 1 {
            ties.push(end - start);
        }
        start = end;
    }
    (ranks, ties)
}

/// How a Mann–Whitney p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MwuMethod {
    /// The exact null distribution of U (no ties, a sample of at most 8).
    Exact,
    /// Normal approximation with tie and continuity correction.
    Asymptotic,
}

/// A Mann–Whitney U test result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U for the first sample: the number of pairs (a, b) with a > b, ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// How the p-value was computed.
    pub method: MwuMethod,
}

/// Mann–Whitney U test, two-sided, as `scipy.stats.mannwhitneyu(a, b, method="auto")`: exact when
/// one sample has at most 8 values and there are no ties, otherwise the normal approximation
/// with tie correction and continuity correction.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Result<MannWhitney, StatsError> {
    check_finite(a)?;
    check_finite(b)?;
    let (n1, n2) = (a.len(), b.len());
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, ties) = rank_average(&all);
    let r1: f64 = ranks[..n1].iter().sum();
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let u = u1.max(n1f * n2f - u1);
    let exact = (n1 <= 8 || n2 <= 8) && ties.is_empty();
    let p = if exact {
        2.0 * mwu_exact_sf(u.round() as u64, n1.min(n2), n1.max(n2))
    } else {
        let n = n1f + n2f;
        let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
        let s = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
        if s > 0.0 {
            let z = (u - n1f * n2f / 2.0 - 0.5) / s;
            2.0 * Normal::standard().cdf(-z)
        } else {
            1.0
        }
    };
    Ok(MannWhitney {
        u: u1,
        p_value: p.clamp(0.0, 1.0),
        method: if exact {
            MwuMethod::Exact
        } else {
            MwuMethod::Asymptotic
        },
    })
}

/// P(U >= u) under the null for samples of sizes m <= n, from the generating function of U, the
/// Gaussian binomial coefficient `[m+n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i)`.
/// Exact integer arithmetic while the counts fit in i128, floating point beyond.
fn mwu_exact_sf(u: u64, m: usize, n: usize) -> f64 {
    let ln_total = ln_choose(m + n, m);
    if ln_total < 120.0 * std::f64::consts::LN_2 {
        let counts = gaussian_binomial::<i128>(m, n);
        let total: i128 = counts.iter().sum();
        let tail: i128 = counts.iter().skip(u as usize).sum();
        tail as f64 / total as f64
    } else {
        let counts = gaussian_binomial::<f64>(m, n);
        let total: f64 = counts.iter().sum();
        counts.iter().skip(u as usize).sum::<f64>() / total
    }
}

fn ln_choose(n: usize, k: usize) -> f64 {
    use statrs::function::gamma::ln_gamma;
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

fn gaussian_binomial<T>(m: usize, n: usize) -> Vec<T>
where
    T: Copy + Default + From<u8> + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
{
    let mut poly = vec![T::default(); m * n + 1];
    poly[0] = T::from(1);
    let mut deg = 0;
    for i in 1..=m {
        // Multiply by (1 − q^{n+i}).
        let shift = n + i;
        for k in (shift..=deg + shift).rev() {
            if k < poly.len() {
                poly[k] = poly[k] - poly[k - shift];
            }
        }
        // Divide by (1 − q^i): p[k] += p[k − i], ascending. The quotient is a polynomial.
        for k in i..poly.len() {
            poly[k] = poly[k] + poly[k - i];
        }
        deg += n;
    }
    poly
}

/// A Wilcoxon signed-rank test result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wilcoxon {
    /// min(R+, R−): the smaller signed-rank sum (scipy's two-sided statistic).
    pub statistic: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Wilcoxon signed-rank test on the differences a − b, as `scipy.stats.wilcoxon(a, b)` with its
/// defaults: zero differences dropped ("wilcox"), no continuity correction; exact null
/// distribution for n <= 50 without ties or zeros; an exact sign-flip permutation distribution
/// for n <= 13 with ties or zeros; otherwise the normal approximation with tie correction.
pub fn wilcoxon(a: &[f64], b: &[f64]) -> Result<Wilcoxon, StatsError> {
    let d = differences(a, b)?;
    if d.is_empty() {
        return Err(StatsError::Empty);
    }
    let n_total = d.len();
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let n_zero = n_total - nonzero.len();
    if nonzero.is_empty() {
        return Err(StatsError::Undefined(
            "every paired difference is zero".into(),
        ));
    }
    let abs: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, ties) = rank_average(&abs);
    let r_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let r_minus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x < 0.0)
        .map(|(_, r)| r)
        .sum();
    let count = nonzero.len() as f64;
    let p = if n_total <= 50 && ties.is_empty() && n_zero == 0 {
        let dist = signed_rank_counts(&ranks);
        let tot: f64 = dist.iter().sum();
        let k = (2.0 * r_plus).round() as usize;
        let cdf: f64 = dist[..=k].iter().sum::<f64>() / tot;
        let sf: f64 = dist[k..].iter().sum::<f64>() / tot;
        (2.0 * cdf.min(sf)).min(1.0)
    } else if n_total <= 13 {
        // scipy switches to an exact permutation test here (2^n sign flips).
        let dist = signed_rank_counts(&ranks);
        let tot: f64 = dist.iter().sum();
        let k = (2.0 * r_plus).round() as usize;
        let less = dist[..=k].iter().sum::<f64>() / tot;
        let greater = dist[k..].iter().sum::<f64>() / tot;
        (2.0 * less.min(greater)).min(1.0)
    } else {
        let mn = count * (count + 1.0) / 4.0;
        let tie_correct: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
        let se = ((count * (count + 1.0) * (2.0 * count + 1.0) - tie_correct / 2.0) / 24.0).sqrt();
        let z = (r_plus - mn) / se;
        2.0 * Normal::standard().cdf(-z.abs())
    };
    Ok(Wilcoxon {
        statistic: r_plus.min(r_minus),
        p_value: p,
    })
}

/// Null distribution of R+ in half-rank units: entry k counts the sign assignments with
/// 2·R+ = k, for the given (possibly tied, so half-integer) ranks.
fn signed_rank_counts(ranks: &[f64]) -> Vec<f64> {
    let doubled: Vec<usize> = ranks.iter().map(|r| (2.0 * r).round() as usize).collect();
    let max: usize = doubled.iter().sum();
    let mut dist = vec![0.0; max + 1];
    dist[0] = 1.0;
    let mut reach = 0;
    for &w in &doubled {
        for k in (0..=reach).rev() {
            if dist[k] != 0.0 {
                dist[k + w] += dist[k];
            }
        }
        reach += w;
    }
    dist
}

/// How a McNemar p-value is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McNemarMethod {
    /// Exact binomial test on the discordant pairs.
    Exact,
    /// Chi-square (1 df) with Edwards' continuity correction.
    ChiSquare,
    /// Exact when fewer than 25 discordant pairs, chi-square otherwise.
    Auto,
}

/// McNemar's test for paired binary outcomes (e.g. per-item correctness of two models): `b` items
/// right under A only, `c` right under B only. The statistic is min(b, c) for the exact test and
/// (|b − c| − 1)² / (b + c) for the chi-square test — both as statsmodels'
/// `contingency_tables.mcnemar` computes them. No discordant pair at all (b = c = 0) is p = 1.
pub fn mcnemar(b: u64, c: u64, method: McNemarMethod) -> Result<TestResult, StatsError> {
    let n = b + c;
    if n == 0 {
        return Ok(TestResult {
            statistic: 0.0,
            p_value: 1.0,
        });
    }
    let exact = match method {
        McNemarMethod::Exact => true,
        McNemarMethod::ChiSquare => false,
        McNemarMethod::Auto => n < 25,
    };
    if exact {
        let k = b.min(c);
        let binom = Binomial::new(0.5, n).map_err(|e| StatsError::Undefined(e.to_string()))?;
        Ok(TestResult {
            statistic: k as f64,
            p_value: (2.0 * binom.cdf(k)).min(1.0),
        })
    } else {
        // Edwards' correction exactly as statsmodels applies it: (|b − c| − 1)² / (b + c). With
        // b = c the statistic is 1/(b + c), not 0 (clamping |b − c| − 1 at zero, as an earlier
        // version did, turned every tie into p = 1).
        let diff = (b as f64 - c as f64).abs() - 1.0;
        let stat = diff.powi(2) / n as f64;
        let chi = ChiSquared::new(1.0).map_err(|e| StatsError::Undefined(e.to_string()))?;
        Ok(TestResult {
            statistic: stat,
            p_value: 1.0 - chi.cdf(stat),
        })
    }
}

/// Cliff's delta, P(B > A) − P(B < A) over all pairs, in [−1, 1]: positive when the candidate
/// `b` tends to be larger than the baseline `a`. O((n+m) log(n+m)) via ranks.
pub fn cliffs_delta(a: &[f64], b: &[f64]) -> Result<f64, StatsError> {
    check_finite(a)?;
    check_finite(b)?;
    let all: Vec<f64> = b.iter().chain(a).copied().collect();
    let (ranks, _) = rank_average(&all);
    let (nb, na) = (b.len() as f64, a.len() as f64);
    let r_b: f64 = ranks[..b.len()].iter().sum();
    let u_b = r_b - nb * (nb + 1.0) / 2.0; // pairs with b > a, ties ½
    Ok(2.0 * u_b / (na * nb) - 1.0)
}

/// Cohen's d, (mean(b) − mean(a)) / pooled standard deviation; each sample needs n >= 2.
pub fn cohens_d(a: &[f64], b: &[f64]) -> Result<f64, StatsError> {
    need(a, 2, "Cohen's d")?;
    need(b, 2, "Cohen's d")?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let pooled = (((na - 1.0) * variance(a).unwrap_or(0.0)
        + (nb - 1.0) * variance(b).unwrap_or(0.0))
        / (na + nb - 2.0))
        .sqrt();
    if pooled == 0.0 {
        return Err(StatsError::Undefined(
            "Cohen's d: both samples are constant".into(),
        ));
    }
    Ok((mean(b) - mean(a)) / pooled)
}

/// Holm–Bonferroni step-down adjusted p-values, in the input order (as statsmodels'
/// `multipletests(method="holm")`): reject hypothesis i at α when its adjusted p <= α.
pub fn holm(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    if let Some(p) = p_values.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(StatsError::InvalidParameter(format!(
            "p-value {p} is outside [0, 1]"
        )));
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((m - rank) as f64 * p_values[i]);
        adjusted[i] = running.min(1.0);
    }
    Ok(adjusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: scipy 1.17.1, `ttest_ind(ln(b) - ln(bound), ln(a), equal_var=False,
    /// alternative="greater"|"less")` and `permutation_test((y, x), mean difference,
    /// permutation_type="independent", alternative=..., n_resamples=inf)` (exact).
    #[test]
    fn ratio_beyond_matches_scipy_welch_and_exact_permutation() {
        // (baseline, candidate, bound, higher is worse, t, df, Welch p, permutation p)
        type Case<'a> = (&'a [f64], &'a [f64], f64, bool, f64, f64, f64, f64);
        let cases: [Case; 5] = [
            (
                &[100.0, 101.0, 99.0],
                &[120.0, 121.0, 119.0],
                1.05,
                true,
                17.768436684942422,
                3.874008943375131,
                3.704214032353226e-05,
                0.05,
            ),
            (
                &[100.0, 101.0, 99.0],
                &[100.5, 99.5, 101.0],
                1.05,
                true,
                -6.26068002010078,
                3.737225072900829,
                0.9979228223363633,
                1.0,
            ),
            (
                &[50.1, 49.8, 50.3, 50.0],
                &[60.2, 59.7, 61.0],
                1.05,
                true,
                20.809310438988703,
                2.444352875664294,
                0.0004104631037378939,
                0.02857142857142857,
            ),
            (
                &[200.0, 204.0, 198.0],
                &[150.0, 152.0, 149.0],
                0.95,
                false,
                22.516160214578107,
                3.48822049189595,
                3.335712424322872e-05,
                0.05,
            ),
            (
                &[40.0, 40.5, 39.8, 40.2, 40.1],
                &[80.0, 80.4, 79.9, 80.2, 80.1],
                1.05,
                true,
                209.00429138544533,
                5.088036864657353,
                1.6548502439522485e-11,
                0.003968253968253968,
            ),
        ];
        for (a, b, bound, hiw, t, df, p, perm) in cases {
            let r = ratio_beyond(a, b, bound, hiw).unwrap();
            let rel = |x: f64, y: f64| ((x - y) / y).abs();
            assert!(rel(r.welch_t.unwrap(), t) < 1e-9, "t {r:?}");
            assert!(rel(r.welch_df.unwrap(), df) < 1e-9, "df {r:?}");
            assert!(rel(r.welch_p.unwrap(), p) < 1e-6, "p {r:?} vs {p}");
            assert!(rel(r.permutation_p.unwrap(), perm) < 1e-12, "perm {r:?}");
        }
        // 3 vs 3: the permutation test's floor is 1/20.
        let r = ratio_beyond(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 1.0, true).unwrap();
        assert_eq!((r.relabelings, r.permutation_min_p), (20.0, 0.05));
        // No variance on either side: Welch is undefined, the permutation test still answers.
        let r = ratio_beyond(&[10.0, 10.0, 10.0], &[20.0, 20.0, 20.0], 1.05, true).unwrap();
        assert_eq!(r.welch_p, None);
        assert_eq!(r.permutation_p, Some(0.05));
        assert!(ratio_beyond(&[0.0, 1.0], &[1.0, 2.0], 1.0, true).is_err());
        // The raw-scale variant for values that may be 0: scipy `ttest_ind(b, 0.98 * a,
        // equal_var=False, alternative="less")` = (-28.61632495658272, 2.1534375585303422,
        // 0.00040407008200489953); t is signed so that larger is "more beyond".
        let (t, df, p) =
            ratio_beyond_linear(&[0.9, 0.92, 0.91], &[0.0, 0.1, 0.05], 0.98, false).unwrap();
        assert!((t - 28.61632495658272).abs() < 1e-9 && (df - 2.1534375585303422).abs() < 1e-9);
        assert!((p - 0.00040407008200489953).abs() < 1e-9, "{p}");
        assert_eq!(binomial_coefficient(20, 10), 184_756.0);
    }

    #[test]
    fn exact_u_distribution_sums_to_choose() {
        let c = gaussian_binomial::<i128>(3, 4);
        assert_eq!(c.iter().sum::<i128>(), 35);
        assert_eq!(c, vec![1, 1, 2, 3, 4, 4, 5, 4, 4, 3, 2, 1, 1]);
        let f = gaussian_binomial::<f64>(3, 4);
        assert_eq!(f.iter().sum::<f64>(), 35.0);
    }

    #[test]
    fn holm_is_monotone_and_capped() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]).unwrap();
        for (got, want) in adj.iter().zip([0.04, 0.09, 0.09, 0.5]) {
            assert!((got - want).abs() < 1e-15, "{adj:?}");
        }
        assert!(holm(&[1.5]).is_err());
    }

    #[test]
    fn cliffs_delta_extremes() {
        assert_eq!(cliffs_delta(&[1.0, 2.0], &[3.0, 4.0]), Ok(1.0));
        assert_eq!(cliffs_delta(&[3.0, 4.0], &[1.0, 2.0]), Ok(-1.0));
        assert_eq!(cliffs_delta(&[1.0, 2.0], &[1.0, 2.0]), Ok(0.0));
    }
}
