//! From raw per-replicate samples to a [`MicroResult`]: warm-up removal, outliers, estimate and
//! confidence interval. All statistics come from `yardstick-stats`.

use std::collections::BTreeMap;

use yardstick_spec::model::OutlierPolicy;
use yardstick_stats::bootstrap::{BootstrapConfig, Method, bootstrap_ci, cluster_bootstrap_ci};
use yardstick_stats::descriptive::Descriptive;
use yardstick_stats::outliers;
use yardstick_stats::percentile::{percentile, quantile_ci};
use yardstick_stats::report::default_resamples;
use yardstick_stats::statistic::Statistic;
use yardstick_stats::steady_state::mser5;

use super::{MicroError, MicroResult, OutlierCounts, TrialPolicy, Warmup};

/// How a metric's value is read off its samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// The median of all measured samples, with a (cluster) bootstrap CI.
    Median,
    /// A quantile of the pooled samples (tail latency), with an order-statistic CI.
    Quantile(f64),
}

/// The raw samples of one metric over all replicates.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSamples {
    /// Result name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// How the value is read.
    pub stat: Stat,
    /// Samples of each replicate in time order, warm-up included.
    pub replicates: Vec<Vec<f64>>,
    /// Leading warm-up samples of each replicate (same length as `replicates`).
    pub warmup: Vec<usize>,
    /// Settings that produced the samples.
    pub params: BTreeMap<String, serde_json::Value>,
}

impl MetricSamples {
    /// An empty metric.
    pub fn new(name: impl Into<String>, unit: &str, higher_is_better: bool, stat: Stat) -> Self {
        Self {
            name: name.into(),
            unit: unit.to_owned(),
            higher_is_better,
            stat,
            replicates: Vec::new(),
            warmup: Vec::new(),
            params: BTreeMap::new(),
        }
    }

    /// Adds one replicate's samples, the first `warmup` of which are warm-up.
    pub fn push_replicate(&mut self, samples: Vec<f64>, warmup: usize) {
        self.warmup.push(warmup.min(samples.len()));
        self.replicates.push(samples);
    }

    /// Records a parameter.
    pub fn param(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.params.insert(key.to_owned(), value.into());
    }
}

/// Summarises one metric under the policy.
pub fn summarize(m: &MetricSamples, policy: &TrialPolicy) -> Result<MicroResult, MicroError> {
    let mut discarded = 0;
    let mut reps: Vec<Vec<f64>> = Vec::new();
    for (samples, &w) in m.replicates.iter().zip(&m.warmup) {
        let cut = match (policy.warmup, m.stat) {
            (Warmup::Mser5, Stat::Median) if samples.len() - w >= 10 => {
                w + mser5(&samples[w..])?.truncation
            }
            _ => w,
        };
        discarded += cut;
        if cut < samples.len() {
            reps.push(samples[cut..].to_vec());
        }
    }
    let pooled: Vec<f64> = reps.iter().flatten().copied().collect();
    if pooled.is_empty() {
        return Err(MicroError::InvalidConfig(format!(
            "{}: no measured samples (every iteration was warm-up)",
            m.name
        )));
    }

    let mut counts = OutlierCounts::default();
    let tukey = outliers::tukey(&pooled)?;
    let mad = outliers::mad_z(&pooled)?;
    counts.tukey_mild = tukey.mild.len();
    counts.tukey_severe = tukey.severe.len();
    counts.mad = mad.indices.len();
    let trim: Option<Vec<usize>> = match policy.outliers {
        OutlierPolicy::TrimTukey => Some(tukey.mild.iter().chain(&tukey.severe).copied().collect()),
        OutlierPolicy::TrimMad => Some(mad.indices.clone()),
        _ => None,
    };
    let (reps, pooled) = match trim {
        Some(indices) if !indices.is_empty() && indices.len() < pooled.len() => {
            counts.trimmed = indices.len();
            let mut kept = Vec::new();
            let mut offset = 0;
            for r in &reps {
                let keep: Vec<f64> = r
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !indices.contains(&(offset + i)))
                    .map(|(_, v)| *v)
                    .collect();
                offset += r.len();
                if !keep.is_empty() {
                    kept.push(keep);
                }
            }
            let pooled = kept.iter().flatten().copied().collect();
            (kept, pooled)
        }
        _ => (reps, pooled),
    };

    let d = Descriptive::of(&pooled)?;
    let level = policy.confidence;
    let cfg = BootstrapConfig {
        resamples: default_resamples(pooled.len()),
        level,
        seed: policy.seed,
        method: Method::Bca,
    };
    let (value, ci, method) = match m.stat {
        Stat::Median => {
            let value = d.median;
            if d.min == d.max {
                (value, Some([value, value]), "degenerate")
            } else if reps.len() >= 2 {
                match cluster_bootstrap_ci(&reps, Statistic::Median, &cfg) {
                    Ok(ci) => (value, Some([ci.lower, ci.upper]), "cluster-bca"),
                    Err(_) => match bootstrap_ci(&pooled, Statistic::Median, &cfg) {
                        Ok(ci) => (value, Some([ci.lower, ci.upper]), "bca"),
                        Err(_) => (value, None, "none"),
                    },
                }
            } else {
                match bootstrap_ci(&pooled, Statistic::Median, &cfg) {
                    Ok(ci) => (value, Some([ci.lower, ci.upper]), "bca"),
                    Err(_) => (value, None, "none"),
                }
            }
        }
        Stat::Quantile(q) => {
            let value = percentile(&pooled, q)?;
            match quantile_ci(&pooled, q, level) {
                Ok(ci) => (value, Some([ci.lower, ci.upper]), "order-statistic"),
                Err(_) => (value, None, "none"),
            }
        }
    };
    let cv = d.cv;
    Ok(MicroResult {
        name: m.name.clone(),
        value,
        unit: m.unit.clone(),
        ci,
        n: pooled.len(),
        replicates: reps.len(),
        level,
        ci_method: method.to_owned(),
        higher_is_better: m.higher_is_better,
        mean: d.mean,
        cv,
        min: d.min,
        max: d.max,
        warmup_discarded: discarded,
        outliers: counts,
        params: m.params.clone(),
        samples: reps,
    })
}

/// Runs warm-up then measured iterations of `once`, returning all samples and the warm-up
/// count. `once` returns one sample.
pub(crate) fn iterate<F>(
    policy: &TrialPolicy,
    measured: usize,
    mut once: F,
) -> Result<(Vec<f64>, usize), MicroError>
where
    F: FnMut() -> Result<f64, MicroError>,
{
    let mut samples = Vec::with_capacity(measured + 4);
    let start = std::time::Instant::now();
    let warm = match policy.warmup {
        Warmup::Iterations(n) => {
            for _ in 0..n {
                samples.push(once()?);
            }
            n
        }
        Warmup::Duration(d) => {
            let mut n = 0;
            while n == 0 || start.elapsed() < d {
                samples.push(once()?);
                n += 1;
            }
            n
        }
        Warmup::Mser5 => 0,
    };
    for _ in 0..measured {
        samples.push(once()?);
    }
    Ok((samples, warm))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(reps: Vec<Vec<f64>>, warm: usize) -> MetricSamples {
        let mut m = MetricSamples::new("x", "GB/s", true, Stat::Median);
        for r in reps {
            m.push_replicate(r, warm);
        }
        m
    }

    #[test]
    fn drops_warmup_and_brackets_the_median() {
        let m = metric(
            vec![
                vec![1.0, 10.0, 11.0, 12.0, 10.5],
                vec![2.0, 10.2, 11.1, 11.9, 10.4],
                vec![3.0, 10.1, 10.9, 12.1, 10.6],
            ],
            1,
        );
        let r = summarize(&m, &TrialPolicy::default()).unwrap();
        assert_eq!(r.n, 12);
        assert_eq!(r.warmup_discarded, 3);
        assert_eq!(r.replicates, 3);
        let [lo, hi] = r.ci.unwrap();
        assert!(lo <= r.value && r.value <= hi, "{lo} {} {hi}", r.value);
        assert!(r.min >= 10.0);
        assert_eq!(r.ci_method, "cluster-bca");
    }

    #[test]
    fn trims_only_when_asked() {
        let reps = vec![
            vec![10.0, 10.1, 9.9, 10.0, 10.2, 100.0],
            vec![10.0, 10.1, 9.9, 10.0, 10.2, 10.1],
        ];
        let report = summarize(&metric(reps.clone(), 0), &TrialPolicy::default()).unwrap();
        assert_eq!(report.outliers.tukey_severe, 1);
        assert_eq!(report.outliers.trimmed, 0);
        assert_eq!(report.max, 100.0);
        let policy = TrialPolicy {
            outliers: OutlierPolicy::TrimTukey,
            ..TrialPolicy::default()
        };
        let trimmed = summarize(&metric(reps, 0), &policy).unwrap();
        assert_eq!(trimmed.outliers.trimmed, 1);
        // The 100 is gone and the largest ordinary value (10.2) is the max.
        assert!(trimmed.max >= 10.2 && trimmed.max < 11.0, "{}", trimmed.max);
    }

    #[test]
    fn tail_quantile_refuses_a_ci_on_few_samples() {
        let mut m = MetricSamples::new("lat", "us", false, Stat::Quantile(0.99));
        m.push_replicate((1..=50).map(f64::from).collect(), 0);
        let r = summarize(&m, &TrialPolicy::default()).unwrap();
        assert!(r.ci.is_none());
        let mut m = MetricSamples::new("lat", "us", false, Stat::Quantile(0.99));
        m.push_replicate((1..=1000).map(f64::from).collect(), 0);
        let r = summarize(&m, &TrialPolicy::default()).unwrap();
        let [lo, hi] = r.ci.unwrap();
        assert!(lo <= r.value && r.value <= hi);
    }

    #[test]
    fn all_warmup_is_an_error() {
        let m = metric(vec![vec![1.0, 2.0]], 2);
        assert!(summarize(&m, &TrialPolicy::default()).is_err());
    }
}
