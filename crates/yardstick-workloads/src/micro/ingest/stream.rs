//! McCalpin's STREAM (`stream.c` 5.10) output: the `Function Best Rate MB/s Avg time Min time
//! Max time` table and the validation line.
//!
//! STREAM reports the best rate; yardstick reports a central value, so `value` is the rate at
//! the *average* time (bytes moved / avg time), `max` the best rate (at the min time) and `min`
//! the rate at the max time. A run without "Solution Validates" is refused.

use std::collections::BTreeMap;

use super::{IngestError, single};
use crate::micro::MicroResult;

const TOOL: &str = "STREAM";

/// One kernel's line.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamKernel {
    /// `copy`, `scale`, `add` or `triad`.
    pub name: String,
    /// Best rate, MB/s (10⁶ bytes).
    pub best_mb_s: f64,
    /// Average, minimum and maximum time, s.
    pub times_s: [f64; 3],
}

/// One STREAM run.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRun {
    /// `Array size = N (elements)`, when printed.
    pub array_elements: Option<u64>,
    /// `Number of Threads counted = N`, when printed (OpenMP builds).
    pub threads: Option<u64>,
    /// The four kernels.
    pub kernels: Vec<StreamKernel>,
}

fn after_eq(line: &str) -> Option<u64> {
    line.split('=')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Parses STREAM output.
pub fn parse(text: &str) -> Result<StreamRun, IngestError> {
    let mut run = StreamRun {
        array_elements: None,
        threads: None,
        kernels: Vec::new(),
    };
    let mut validated = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("Array size") {
            run.array_elements = after_eq(t);
        } else if t.starts_with("Number of Threads counted") {
            run.threads = after_eq(t);
        } else if t.starts_with("Solution Validates") {
            validated = true;
        } else if t.starts_with("Failed Validation") || t.contains("ERROR") {
            return Err(IngestError::FailedRun {
                tool: TOOL,
                reason: t.to_owned(),
            });
        } else if let Some((name, rest)) = t.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if !["copy", "scale", "add", "triad"].contains(&name.as_str()) {
                continue;
            }
            let nums: Vec<f64> = rest
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| IngestError::BadLine {
                    tool: TOOL,
                    line: i + 1,
                    reason: format!("expected 4 numbers after `{name}:`"),
                })?;
            if nums.len() != 4 || nums.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
                return Err(IngestError::BadLine {
                    tool: TOOL,
                    line: i + 1,
                    reason: format!("expected 4 positive numbers after `{name}:`"),
                });
            }
            // The rates derived in `results` (bytes moved / time) must be finite too.
            let mb = nums[0] * nums[2];
            if !(mb.is_finite() && (mb / nums[1]).is_finite() && (mb / nums[3]).is_finite()) {
                return Err(IngestError::BadLine {
                    tool: TOOL,
                    line: i + 1,
                    reason: format!("the numbers after `{name}:` are out of range"),
                });
            }
            run.kernels.push(StreamKernel {
                name,
                best_mb_s: nums[0],
                times_s: [nums[1], nums[2], nums[3]],
            });
        }
    }
    if run.kernels.is_empty() {
        return Err(IngestError::NotRecognised {
            tool: TOOL,
            reason: "no Copy/Scale/Add/Triad lines".into(),
        });
    }
    if !validated {
        return Err(IngestError::FailedRun {
            tool: TOOL,
            reason: "no \"Solution Validates\" line".into(),
        });
    }
    Ok(run)
}

impl StreamRun {
    /// Results `memory.copy|scale|add|triad` in GB/s, comparable to `yardstick bench micro
    /// memory`.
    pub fn results(&self) -> Vec<MicroResult> {
        self.kernels
            .iter()
            .map(|k| {
                // Bytes moved per iteration, from the best rate at the minimum time.
                let mb = k.best_mb_s * k.times_s[1];
                let mut p = BTreeMap::new();
                p.insert("source".to_owned(), "STREAM".into());
                p.insert("statistic".to_owned(), "rate at the average time".into());
                if let Some(n) = self.array_elements {
                    p.insert("array_elements".to_owned(), n.into());
                }
                if let Some(n) = self.threads {
                    p.insert("threads".to_owned(), n.into());
                }
                let mut r = single(
                    format!("memory.{}", k.name),
                    mb / k.times_s[0] / 1e3,
                    "GB/s",
                    true,
                    p,
                );
                r.max = k.best_mb_s / 1e3;
                r.min = mb / k.times_s[2] / 1e3;
                r
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the importer property test: a huge rate times a huge time gave an infinite
    /// figure.
    #[test]
    fn rates_that_overflow_are_a_bad_line() {
        let text = "Triad: 1e300 1e10 1e10 1e10\nSolution Validates\n";
        let e = parse(text).unwrap_err();
        assert!(matches!(e, IngestError::BadLine { line: 1, .. }), "{e}");
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}
