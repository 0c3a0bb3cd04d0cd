//! Outlier detection, reported by default and trimmed only on request: Tukey's fences
//! (1.5 and 3 IQR) and the MAD modified z-score of Iglewicz & Hoaglin (|M| > 3.5).

use serde::Serialize;

use crate::descriptive::{mad_about, sorted_deviations};
use crate::percentile::{median_sorted, percentile_sorted};
use crate::{StatsError, check_finite, sorted};

/// Samples outside Tukey's fences, by 0-based index into the input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TukeyOutliers {
    /// First quartile (type 7).
    pub q1: f64,
    /// Third quartile (type 7).
    pub q3: f64,
    /// Beyond 1.5 IQR but within 3 IQR of the quartiles.
    pub mild: Vec<usize>,
    /// Beyond 3 IQR of the quartiles.
    pub severe: Vec<usize>,
}

/// Classifies each sample against the fences `Q1 - k*IQR` and `Q3 + k*IQR` for k = 1.5 (mild)
/// and k = 3 (severe). A sample exactly on a fence is not an outlier.
pub fn tukey(data: &[f64]) -> Result<TukeyOutliers, StatsError> {
    check_finite(data)?;
    Ok(tukey_sorted(data, &sorted(data)))
}

/// Like [`tukey`], given a sorted copy of `data` (finite, non-empty; not checked).
pub fn tukey_sorted(data: &[f64], s: &[f64]) -> TukeyOutliers {
    let (q1, q3) = (percentile_sorted(s, 0.25), percentile_sorted(s, 0.75));
    let iqr = q3 - q1;
    let (mut mild, mut severe) = (Vec::new(), Vec::new());
    for (i, &x) in data.iter().enumerate() {
        if x < q1 - 3.0 * iqr || x > q3 + 3.0 * iqr {
            severe.push(i);
        } else if x < q1 - 1.5 * iqr || x > q3 + 1.5 * iqr {
            mild.push(i);
        }
    }
    TukeyOutliers {
        q1,
        q3,
        mild,
        severe,
    }
}

/// The constant 0.6745 ≈ Φ⁻¹(0.75) makes the MAD a consistent estimator of σ for normal data.
pub const MAD_Z_CONSTANT: f64 = 0.6745;
/// Iglewicz & Hoaglin's recommended cut-off for the modified z-score.
pub const MAD_Z_THRESHOLD: f64 = 3.5;

/// Samples whose modified z-score exceeds the threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MadOutliers {
    /// Median of the data.
    pub median: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// Indices with |0.6745 (x - median) / MAD| > 3.5.
    pub indices: Vec<usize>,
}

/// MAD-based outliers. When more than half the samples are equal the MAD is 0 and the score is
/// undefined; then the mean absolute deviation scaled by √(π/2) stands in for it (as IBM SPSS
/// does), and if that is 0 too, every sample equals the median and none is an outlier.
pub fn mad_z(data: &[f64]) -> Result<MadOutliers, StatsError> {
    check_finite(data)?;
    Ok(mad_z_sorted(data, &sorted(data)))
}

/// Like [`mad_z`], given a sorted copy of `data` (finite, non-empty; not checked). O(n): the
/// deviations are merged from the sorted data, not sorted again.
pub fn mad_z_sorted(data: &[f64], s: &[f64]) -> MadOutliers {
    let median = median_sorted(s);
    let mad = mad_about(s, median);
    let scale = if mad > 0.0 {
        mad / MAD_Z_CONSTANT
    } else {
        // Summed in ascending order of deviation, as before the merge replaced the sort.
        let mean_ad = sorted_deviations(s, median).fold(0.0, |acc, x| acc + x) / s.len() as f64;
        mean_ad * (std::f64::consts::PI / 2.0).sqrt()
    };
    let indices = if scale > 0.0 {
        data.iter()
            .enumerate()
            .filter(|(_, x)| ((*x - median) / scale).abs() > MAD_Z_THRESHOLD)
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    MadOutliers {
        median,
        mad,
        indices,
    }
}

/// A copy of `data` without the samples at `indices` (trimming, when the policy asks for it).
pub fn trim(data: &[f64], indices: &[usize]) -> Vec<f64> {
    let mut drop = vec![false; data.len()];
    for &i in indices {
        if let Some(d) = drop.get_mut(i) {
            *d = true;
        }
    }
    data.iter()
        .zip(drop)
        .filter(|(_, d)| !d)
        .map(|(x, _)| *x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_planted_outliers() {
        let mut data: Vec<f64> = (0..100).map(|i| 10.0 + (i % 10) as f64 * 0.1).collect();
        data[17] = 12.1; // Q1 = 10.2, Q3 = 10.7: beyond 1.5 IQR, within 3 IQR; MAD z = 3.6
        data[42] = 100.0;
        let t = tukey(&data).unwrap();
        assert_eq!((t.mild.clone(), t.severe.clone()), (vec![17], vec![42]));
        let m = mad_z(&data).unwrap();
        assert_eq!(m.indices, vec![17, 42]);
        assert_eq!(trim(&data, &t.severe).len(), 99);
    }

    #[test]
    fn zero_mad_falls_back_to_mean_deviation() {
        let mut data = vec![5.0; 20];
        data[3] = 6.0;
        assert_eq!(mad_z(&data).unwrap().indices, vec![3]);
        assert!(mad_z(&[2.0; 9]).unwrap().indices.is_empty());
    }
}
