//! Scaling across world sizes: efficiency T(N) / (N · T(1)) and Amdahl's serial fraction.
//!
//! T is throughput (samples/s or tokens/s). When the smallest measured size b is not 1, both are
//! relative to it: efficiency = (T(N)/T(b)) / (N/b), and Amdahl's law is fitted to the speedup
//! over b as a function of N/b (say so when quoting the serial fraction).

use serde::{Deserialize, Serialize};

use crate::AnalysisError;

/// Scaling efficiency of `n` devices against one: `throughput_n / (n * throughput_1)`.
/// 100 → 650 samples/s at 8 GPUs is 0.8125 (docs/methodology.md#training).
pub fn scaling_efficiency(throughput_1: f64, throughput_n: f64, n: f64) -> f64 {
    throughput_n / (n * throughput_1)
}

/// Amdahl's law: the speedup on `n` devices when a fraction `serial` of the work cannot be
/// parallelised, `1 / (s + (1 - s) / n)`.
pub fn amdahl_speedup(serial: f64, n: f64) -> f64 {
    1.0 / (serial + (1.0 - serial) / n)
}

/// Amdahl's law fitted to measured speedups.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AmdahlFit {
    /// The serial fraction s in [0, 1] that best explains the speedups.
    pub serial_fraction: f64,
    /// The speedup limit 1/s as n → ∞ (`None` when s = 0: no limit seen).
    pub max_speedup: Option<f64>,
    /// Root-mean-square error of the fitted speedups against the measured ones.
    pub rms_error: f64,
    /// Points used (sizes above the base).
    pub points: usize,
}

/// Least-squares fit of Amdahl's serial fraction to `(n, speedup)` pairs (n relative to the base,
/// speedup over the base). Linearised: `1/S − 1/n = s · (1 − 1/n)`, a line through the origin
/// in x = 1 − 1/n, so s = Σxy / Σx², clamped to [0, 1]. `None` without a point above n = 1.
/// Super-linear speedups give s = 0.
pub fn fit_amdahl(points: &[(f64, f64)]) -> Option<AmdahlFit> {
    let usable: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, s)| n > 1.0 && s > 0.0 && n.is_finite() && s.is_finite())
        .collect();
    if usable.is_empty() {
        return None;
    }
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &(n, speedup) in &usable {
        let x = 1.0 - 1.0 / n;
        let y = 1.0 / speedup - 1.0 / n;
        sxy += x * y;
        sxx += x * x;
    }
    let serial = (sxy / sxx).clamp(0.0, 1.0);
    let mse = usable
        .iter()
        .map(|&(n, s)| (amdahl_speedup(serial, n) - s).powi(2))
        .sum::<f64>()
        / usable.len() as f64;
    Some(AmdahlFit {
        serial_fraction: serial,
        max_speedup: (serial > 0.0).then(|| 1.0 / serial),
        rms_error: mse.sqrt(),
        points: usable.len(),
    })
}

/// One world size and the throughput measured there (one value per replicate).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ScalingInput {
    /// Number of devices (ranks).
    pub world_size: u32,
    /// Throughput per replicate (same unit for every size); the median is used.
    pub throughputs: Vec<f64>,
}

/// Scaling of one world size against the base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScalingPoint {
    /// Number of devices.
    pub world_size: u32,
    /// Median throughput over replicates.
    pub throughput: f64,
    /// Throughput over the base's.
    pub speedup: f64,
    /// Speedup over the ideal (N/b); 1.0 is linear scaling.
    pub efficiency: f64,
    /// Qualitative band (docs/methodology.md#training): excellent > 90 %, good 70–90 %,
    /// moderate 50–70 %, poor.
    pub band: String,
}

/// Scaling across world sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScalingReport {
    /// What the throughput measures (e.g. `samples_per_s`).
    pub metric: String,
    /// The smallest world size, against which the others are compared.
    pub base_world_size: u32,
    /// One point per world size, ascending.
    pub points: Vec<ScalingPoint>,
    /// Amdahl fit over the sizes above the base (speedup relative to the base).
    pub amdahl: Option<AmdahlFit>,
    /// Things to know before quoting the numbers.
    pub warnings: Vec<String>,
}

fn band(efficiency: f64) -> &'static str {
    match efficiency {
        e if e > 0.9 => "excellent",
        e if e >= 0.7 => "good",
        e if e >= 0.5 => "moderate",
        _ => "poor",
    }
}

/// Scaling efficiency at every size and the Amdahl fit.
pub fn analyze_scaling(
    metric: &str,
    inputs: &[ScalingInput],
) -> Result<ScalingReport, AnalysisError> {
    let mut pts: Vec<(u32, f64)> = Vec::new();
    let mut warnings = Vec::new();
    for input in inputs {
        if input.world_size == 0 {
            return Err(AnalysisError::invalid(
                "world size 0",
                "world sizes are at least 1",
            ));
        }
        let finite: Vec<f64> = input
            .throughputs
            .iter()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        if finite.is_empty() {
            warnings.push(format!(
                "world size {}: no throughput measured; left out",
                input.world_size
            ));
            continue;
        }
        let median = yardstick_stats::percentile::percentile(&finite, 0.5)?;
        pts.push((input.world_size, median));
    }
    pts.sort_by_key(|p| p.0);
    pts.dedup_by_key(|p| p.0);
    let Some(&(base, base_t)) = pts.first() else {
        return Err(AnalysisError::invalid(
            "no world size has a throughput",
            "scaling needs throughput (samples or tokens per second) at two or more world sizes",
        ));
    };
    if pts.len() < 2 {
        warnings.push("only one world size measured: no scaling to report".into());
    }
    if base != 1 {
        warnings.push(format!(
            "no world size 1 measured: efficiency and Amdahl's fit are relative to {base}"
        ));
    }
    let points: Vec<ScalingPoint> = pts
        .iter()
        .map(|&(n, t)| {
            let ratio = f64::from(n) / f64::from(base);
            let efficiency = scaling_efficiency(base_t, t, ratio);
            ScalingPoint {
                world_size: n,
                throughput: t,
                speedup: t / base_t,
                efficiency,
                band: band(efficiency).to_string(),
            }
        })
        .collect();
    for p in &points {
        if p.efficiency > 1.05 {
            warnings.push(format!(
                "world size {}: super-linear efficiency {:.1} % (cache effects, or the work per \
                 device changed with the size)",
                p.world_size,
                p.efficiency * 100.0
            ));
        }
    }
    let pairs: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (f64::from(p.world_size) / f64::from(base), p.speedup))
        .collect();
    Ok(ScalingReport {
        metric: metric.to_string(),
        base_world_size: base,
        amdahl: fit_amdahl(&pairs),
        points,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_gpus_at_650_of_800_samples_per_second() {
        // 100 samples/s on 1 GPU, 650 on 8: 650 / 800 = 0.8125.
        assert_eq!(scaling_efficiency(100.0, 650.0, 8.0), 0.8125);
        // Amdahl with 10 % serial work on 8 GPUs: 1 / (0.1 + 0.9/8) = 1/0.2125 = 4.70588...
        assert!((amdahl_speedup(0.10, 8.0) - 1.0 / 0.2125).abs() < 1e-12);
    }

    #[test]
    fn amdahl_fit_recovers_the_serial_fraction() {
        // One point: speedup 6.5 at 8 → s = (1/6.5 − 1/8) / (1 − 1/8) = 1.5 / 45.5 = 3/91.
        let fit = fit_amdahl(&[(1.0, 1.0), (8.0, 6.5)]).unwrap();
        assert!((fit.serial_fraction - 3.0 / 91.0).abs() < 1e-12, "{fit:?}");
        assert!((fit.max_speedup.unwrap() - 91.0 / 3.0).abs() < 1e-9);
        assert!(fit.rms_error < 1e-9);
        // Exact Amdahl data with s = 0.05 at 2, 4, 8, 16 is recovered exactly.
        let data: Vec<(f64, f64)> = [2.0, 4.0, 8.0, 16.0]
            .iter()
            .map(|&n| (n, amdahl_speedup(0.05, n)))
            .collect();
        let fit = fit_amdahl(&data).unwrap();
        assert!((fit.serial_fraction - 0.05).abs() < 1e-12);
        // Super-linear speedup clamps to s = 0.
        assert_eq!(fit_amdahl(&[(2.0, 2.2)]).unwrap().serial_fraction, 0.0);
        assert!(fit_amdahl(&[(1.0, 1.0)]).is_none());
    }

    #[test]
    fn report_across_sizes() {
        let inputs = vec![
            ScalingInput {
                world_size: 8,
                throughputs: vec![640.0, 650.0, 660.0],
            },
            ScalingInput {
                world_size: 1,
                throughputs: vec![99.0, 100.0, 101.0],
            },
            ScalingInput {
                world_size: 2,
                throughputs: vec![190.0],
            },
        ];
        let r = analyze_scaling("samples_per_s", &inputs).unwrap();
        assert_eq!(r.base_world_size, 1);
        let sizes: Vec<u32> = r.points.iter().map(|p| p.world_size).collect();
        assert_eq!(sizes, vec![1, 2, 8]);
        assert_eq!(r.points[2].efficiency, 0.8125);
        assert_eq!(r.points[2].band, "good");
        assert_eq!(r.points[1].efficiency, 0.95);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.amdahl.unwrap().points, 2);
    }

    #[test]
    fn base_other_than_one_is_said() {
        let inputs = vec![
            ScalingInput {
                world_size: 2,
                throughputs: vec![200.0],
            },
            ScalingInput {
                world_size: 4,
                throughputs: vec![300.0],
            },
        ];
        let r = analyze_scaling("tokens_per_s", &inputs).unwrap();
        assert_eq!(r.points[1].efficiency, 0.75);
        assert!(r.warnings[0].contains("relative to 2"));
        assert!(analyze_scaling("x", &[]).is_err());
    }
}
