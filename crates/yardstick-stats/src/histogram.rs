//! HDR histograms for latency streams: bounded memory, fixed relative precision, and exact
//! merging across workers (counts add). Use raw samples with [`crate::percentile`] when they are
//! kept; use a histogram when they are not.

use hdrhistogram::Histogram;

use crate::StatsError;

/// A latency histogram over integer values (choose the unit: e.g. microseconds) with
/// `significant_digits` of relative precision.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl LatencyHistogram {
    /// A histogram that auto-resizes, with 1..=5 significant decimal digits of precision.
    pub fn new(significant_digits: u8) -> Result<Self, StatsError> {
        let mut inner = Histogram::new(significant_digits)
            .map_err(|e| StatsError::InvalidParameter(format!("histogram: {e:?}")))?;
        inner.auto(true);
        Ok(Self { inner })
    }

    /// Records one value.
    pub fn record(&mut self, value: u64) -> Result<(), StatsError> {
        self.inner
            .record(value)
            .map_err(|e| StatsError::InvalidParameter(format!("histogram record {value}: {e:?}")))
    }

    /// Records `count` occurrences of one value.
    pub fn record_n(&mut self, value: u64, count: u64) -> Result<(), StatsError> {
        self.inner.record_n(value, count).map_err(|e| {
            StatsError::InvalidParameter(format!("histogram record {value} x{count}: {e:?}"))
        })
    }

    /// Significant decimal digits of precision.
    pub fn significant_digits(&self) -> u8 {
        self.inner.sigfig()
    }

    /// Every non-empty bucket as `(highest equivalent value, count)`, ascending: a lossless
    /// description of the histogram ([`LatencyHistogram::from_buckets`] rebuilds it exactly).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.inner
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// Rebuilds a histogram from [`LatencyHistogram::buckets`] (e.g. read back from a file).
    pub fn from_buckets(
        significant_digits: u8,
        buckets: &[(u64, u64)],
    ) -> Result<Self, StatsError> {
        let mut h = LatencyHistogram::new(significant_digits)?;
        for &(v, n) in buckets {
            h.record_n(v, n)?;
        }
        Ok(h)
    }

    /// Adds every count of `other` into `self` (merging worker shards).
    pub fn merge(&mut self, other: &LatencyHistogram) -> Result<(), StatsError> {
        self.inner
            .add(&other.inner)
            .map_err(|e| StatsError::InvalidParameter(format!("histogram merge: {e:?}")))
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The value at quantile `q` in [0, 1] (within the histogram's precision).
    pub fn quantile(&self, q: f64) -> u64 {
        self.inner.value_at_quantile(q)
    }

    /// Mean of the recorded values (within the histogram's precision).
    pub fn mean(&self) -> f64 {
        self.inner.mean()
    }

    /// Smallest recorded value (within precision).
    pub fn min(&self) -> u64 {
        self.inner.min()
    }

    /// Largest recorded value (within precision).
    pub fn max(&self) -> u64 {
        self.inner.max()
    }

    /// The underlying `hdrhistogram` histogram, e.g. for serialisation.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_precision() {
        let mut h = LatencyHistogram::new(3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        assert_eq!(h.len(), 10_000);
        let p99 = h.quantile(0.99) as f64;
        assert!((p99 - 9900.0).abs() / 9900.0 < 1e-3, "{p99}");
        assert!(LatencyHistogram::new(9).is_err());
    }

    #[test]
    fn buckets_round_trip_and_merges_equal_the_union() {
        let xs: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 100_003 + 1).collect();
        let mut a = LatencyHistogram::new(3).unwrap();
        let mut b = LatencyHistogram::new(3).unwrap();
        let mut all = LatencyHistogram::new(3).unwrap();
        for (k, &x) in xs.iter().enumerate() {
            if k % 3 == 0 {
                a.record(x).unwrap()
            } else {
                b.record(x).unwrap()
            }
            all.record(x).unwrap();
        }
        let back = LatencyHistogram::from_buckets(3, &a.buckets()).unwrap();
        assert_eq!(back.buckets(), a.buckets());
        a.merge(&b).unwrap();
        assert_eq!(a.buckets(), all.buckets());
        for q in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(a.quantile(q), all.quantile(q));
        }
        assert_eq!(a.significant_digits(), 3);
    }
}
