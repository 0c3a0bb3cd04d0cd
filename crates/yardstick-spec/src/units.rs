//! Quantities and names as people type them on a command line: durations (`500ms`, `2m`), byte
//! sizes (`64KiB`, `1GB`) and the spec's enums with their short aliases (`mem`, `f32`). The CLI
//! adds the flag's name to an error; the quantity's own rules live here, once.

use std::str::FromStr;
use std::time::Duration;

use crate::model::{MicroKind, OutlierPolicy, Precision};

/// A quantity or name that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a duration, or zero, negative or beyond a century.
    #[error("`{0}` is not a positive duration")]
    Duration(String),
    /// Not a byte size between 1 byte and 1 PB.
    #[error("`{0}` is not a size")]
    Size(String),
    /// Not one of a fixed set of names.
    #[error("unknown {what} `{got}`")]
    Name {
        /// What was asked for (`micro benchmark`, `outlier policy`).
        what: &'static str,
        /// What was given.
        got: String,
        /// The accepted names, for the hint.
        choices: &'static str,
    },
}

impl UnitError {
    /// How to write it instead.
    pub fn hint(&self) -> String {
        match self {
            UnitError::Duration(_) => {
                "write e.g. 500ms, 30s, 2m, 1h (plain numbers are seconds)".into()
            }
            UnitError::Size(_) => "write e.g. 4096, 64KiB, 128MiB, 1GiB".into(),
            UnitError::Name { choices, .. } => format!("choose from {choices}"),
        }
    }
}

/// `500ms`, `30s`, `2m` (or `2min`), `1h`, or plain seconds (`1.5`); positive and below a
/// century.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let bad = || UnitError::Duration(s.to_string());
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(bad()),
    };
    if !(secs.is_finite() && secs > 0.0 && secs < 100.0 * 365.25 * 86_400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Bytes: a plain count, or with `K`/`KiB`, `M`/`MiB`, `G`/`GiB` (powers of 1024) or `KB`, `MB`,
/// `GB` (powers of 1000); between 1 byte and 1 PB.
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => 0,
    };
    let v: f64 = num.parse().unwrap_or(f64::NAN);
    let bytes = v * mult as f64;
    if mult == 0 || !(1.0..=1e15).contains(&bytes) {
        return Err(UnitError::Size(s.to_string()));
    }
    Ok(bytes as u64)
}

fn name_error(what: &'static str, got: &str, choices: &'static str) -> UnitError {
    UnitError::Name {
        what,
        got: got.to_string(),
        choices,
    }
}

impl FromStr for MicroKind {
    type Err = UnitError;
    /// `memory` (`mem`, `stream`), `gemm` (`matmul`), `storage` (`disk`, `io`), `network`
    /// (`net`), `gpu-memory` (`hbm`), `gpu-pcie` (`pcie`), `gpu-gemm` (`gpu-matmul`); any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "memory" | "mem" | "stream" => Ok(MicroKind::Memory),
            "gemm" | "matmul" => Ok(MicroKind::Gemm),
            "storage" | "disk" | "io" => Ok(MicroKind::Storage),
            "network" | "net" => Ok(MicroKind::Network),
            "gpu-memory" | "gpu-mem" | "hbm" => Ok(MicroKind::GpuMemory),
            "gpu-pcie" | "pcie" => Ok(MicroKind::GpuPcie),
            "gpu-gemm" | "gpu-matmul" => Ok(MicroKind::GpuGemm),
            _ => Err(name_error(
                "micro benchmark",
                s,
                "memory, gemm, storage, network, gpu-memory, gpu-pcie, gpu-gemm",
            )),
        }
    }
}

impl FromStr for OutlierPolicy {
    type Err = UnitError;
    /// The spec's names: `report-tukey`, `trim-tukey`, `report-mad`, `trim-mad`, `none`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "report-tukey" => Ok(OutlierPolicy::ReportTukey),
            "trim-tukey" => Ok(OutlierPolicy::TrimTukey),
            "report-mad" => Ok(OutlierPolicy::ReportMad),
            "trim-mad" => Ok(OutlierPolicy::TrimMad),
            "none" => Ok(OutlierPolicy::None),
            _ => Err(name_error(
                "outlier policy",
                s,
                "report-tukey, trim-tukey, report-mad, trim-mad, none",
            )),
        }
    }
}

impl FromStr for Precision {
    type Err = UnitError;
    /// The spec's names (`fp32`, `bf16`, ...) and the usual aliases (`f32`, `float32`,
    /// `bfloat16`, `f16`, `f64`); any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "fp64" | "f64" | "float64" => Precision::Fp64,
            "fp32" | "f32" | "float32" => Precision::Fp32,
            "tf32" => Precision::Tf32,
            "bf16" | "bfloat16" => Precision::Bf16,
            "fp16" | "f16" | "float16" => Precision::Fp16,
            "fp8" => Precision::Fp8,
            "fp6" => Precision::Fp6,
            "fp4" => Precision::Fp4,
            "int8" => Precision::Int8,
            "int4" => Precision::Int4,
            "nf4" => Precision::Nf4,
            "mixed" => Precision::Mixed,
            _ => {
                return Err(name_error(
                    "precision",
                    s,
                    "fp64, fp32, tf32, bf16, fp16, fp8, fp6, fp4, int8, int4, nf4, mixed",
                ));
            }
        })
    }
}

/// A duration in seconds as people read it: `12.3 µs`, `4.56 ms`, `7.890 s`.
pub fn format_seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration(" 1h ").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        for bad in [
            "-1s",
            "0",
            "10 parsecs",
            "",
            "s",
            "1e30s",
            "1000000000000000000000000000000",
            "NaN",
            "inf",
        ] {
            assert_eq!(
                parse_duration(bad),
                Err(UnitError::Duration(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("1.5 GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("2MB").unwrap(), 2_000_000);
        assert_eq!(parse_bytes("1k").unwrap(), 1024);
        for bad in ["", "0", "-1", "1 parsec", "0.5", "2PB", "NaN"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_and_their_aliases() {
        assert_eq!("STREAM".parse::<MicroKind>(), Ok(MicroKind::Memory));
        assert_eq!("io".parse::<MicroKind>(), Ok(MicroKind::Storage));
        assert_eq!("float32".parse::<Precision>(), Ok(Precision::Fp32));
        assert_eq!("BF16".parse::<Precision>(), Ok(Precision::Bf16));
        assert_eq!(
            "trim-mad".parse::<OutlierPolicy>(),
            Ok(OutlierPolicy::TrimMad)
        );
        let e = "gpu".parse::<MicroKind>().unwrap_err();
        assert_eq!(e.to_string(), "unknown micro benchmark `gpu`");
        assert!(e.hint().contains("memory, gemm"), "{}", e.hint());
        assert!("Report-Tukey".parse::<OutlierPolicy>().is_err());
    }
}
