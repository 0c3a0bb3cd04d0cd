//! A replicate's sealed result record (`results/<point>/rN.json`): what one replicate of one
//! point measured, as `yardstick run` and `yardstick import` write it and as the warehouse
//! index, the facts and the reports read it back.
//!
//! The record keeps the runner's summary (its shape is the point kind's: latency quantiles of a
//! serve point, the step statistics of a command) and the typed [`Figures`] the facts are made
//! from. Records written before records carried figures (yardstick 0.1) are read from their
//! summary's numbers ([`legacy_figures`]); unknown fields of a newer record are ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use yardstick_spec::metrics::{Measurement, id};

/// What one replicate measured: its figures and how many samples stand behind them. A
/// replicate's record keeps them (`figures`), so a stored run is re-indexed from these typed
/// rows, not from the shape of its summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The samples behind the figures: a serving point's completed requests, an eval's items
    /// (or a perplexity's tokens), else 1 (one run, one pass, one trial).
    pub n: u64,
    /// Every figure (non-finite values are left out: they have no fact).
    pub measurements: Vec<Measurement>,
}

impl Figures {
    /// Figures whose sample count is their completed requests (`requests/completed`), else 1.
    pub fn new(measurements: Vec<Measurement>) -> Figures {
        let n = measurements
            .iter()
            .find(|m| m.metric == id::REQUESTS && m.statistic == "completed")
            .map_or(1, |m| m.value as u64);
        Figures::with_n(measurements, n)
    }

    /// Figures from `n` samples. A figure given twice keeps its last value.
    pub fn with_n(mut measurements: Vec<Measurement>, n: u64) -> Figures {
        measurements.retain(|m| m.value.is_finite());
        let mut seen = std::collections::HashSet::new();
        let mut kept: Vec<Measurement> = measurements
            .into_iter()
            .rev()
            .filter(|m| seen.insert((m.metric.clone(), m.statistic.clone())))
            .collect();
        kept.reverse();
        Figures {
            n,
            measurements: kept,
        }
    }

    /// The value of `(metric, statistic)`, if measured.
    pub fn get(&self, metric: &str, statistic: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.metric == metric && m.statistic == statistic)
            .map(|m| m.value)
    }
}

/// The figures of a summary stored by a version that did not record them: every number at the
/// top of the summary (`{"request_throughput": 238}` → `value`) or one level down
/// (`{"ttft_ms": {"p50": 51}}` → `p50`), in the unit of its `units` map or the catalogue's.
/// Only for reading old records; runners produce [`Figures`] from their typed results.
pub fn legacy_figures(summary: &Value) -> Figures {
    let mut out = Vec::new();
    let Some(obj) = summary.as_object() else {
        return Figures::with_n(out, 1);
    };
    let unit = |metric: &str| summary["units"][metric].as_str().map(str::to_owned);
    for (k, v) in obj {
        // These describe the point, not a measurement.
        if [
            "load",
            "units",
            "eval",
            "eval_mix",
            "hot_metrics",
            "custom_metrics",
            "pass",
            "capacity",
            "trace",
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        match v {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.push(Measurement::value(k, x).in_unit(unit(k)));
                }
            }
            Value::Object(inner) => {
                for (st, x) in inner {
                    if let Some(x) = x.as_f64() {
                        out.push(Measurement::stat(k, st, x).in_unit(unit(k)));
                    }
                }
            }
            _ => {}
        }
    }
    let n = summary[id::REQUESTS]["completed"]
        .as_u64()
        .or_else(|| summary["eval"]["n"].as_u64())
        .unwrap_or(1);
    Figures::with_n(out, n)
}

/// One replicate's sealed result record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicateRecord {
    /// The point's id.
    pub point: String,
    /// The replicate's index within the point (0-based).
    pub replicate: u32,
    /// When the replicate started (RFC 3339); absent in an import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it ended (RFC 3339); absent in an import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The run file of its raw samples (`samples/<point>/rN.parquet`), when it kept any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<String>,
    /// The imported file it came from (`imports/...`), for an import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The runner's summary, whose shape is the point kind's; `error` names why the replicate
    /// failed.
    #[serde(default)]
    pub summary: Value,
    /// The figures its facts are made from; absent in a record of yardstick 0.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// An import's per-file results as the tool reported them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Value>,
}

/// A record that does not read: what of it, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(String);

impl ReplicateRecord {
    /// Reads a record from its file's bytes. The error names the field that does not read
    /// (`` `figures`: measurements[0]: missing field `value` ``).
    pub fn read(bytes: &[u8]) -> Result<ReplicateRecord, RecordError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| RecordError(format!("not JSON: {e}")))?;
        let missing = |field: &str| value.get(field).is_none_or(Value::is_null);
        for field in ["point", "replicate"] {
            if missing(field) {
                return Err(RecordError(format!("no `{field}`")));
            }
        }
        serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = e.path().to_string();
            let (field, rest) = path.split_once(['.', '[']).unwrap_or((&path, ""));
            let at = if rest.is_empty() {
                String::new()
            } else {
                format!("{}: ", &path[field.len()..].trim_start_matches('.'))
            };
            RecordError(format!("`{field}`: {at}{}", e.into_inner()))
        })
    }

    /// The record as its file holds it (pretty JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a record is JSON")
    }

    /// Why the replicate failed, when it did (the summary's `error`).
    pub fn error(&self) -> Option<&str> {
        self.summary
            .get("error")
            .map(|e| e.as_str().unwrap_or("failed"))
    }

    /// Whether the replicate failed.
    pub fn failed(&self) -> bool {
        self.error().is_some()
    }

    /// The file its facts point at: its raw samples, or the imported file.
    pub fn artifact(&self) -> Option<&str> {
        self.samples.as_deref().or(self.source.as_deref())
    }

    /// What it measured: its figures, or for a record of yardstick 0.1 the numbers of its
    /// summary ([`legacy_figures`]).
    pub fn figures(&self) -> Figures {
        self.figures
            .clone()
            .unwrap_or_else(|| legacy_figures(&self.summary))
    }

    /// The warm-up requests or steps the runner dropped before measuring, when it says.
    pub fn warmup_trimmed(&self) -> Option<u64> {
        self.summary[id::WARMUP]["trimmed"].as_u64()
    }
}
