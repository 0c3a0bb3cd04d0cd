//! Parsers of the standard tools' output, so their numbers land in the same results, store and
//! reports as ours: nccl-tests (`all_reduce_perf` and friends), fio (`--output-format=json`)
//! and McCalpin's STREAM.
//!
//! One file is one run of the tool: its figures come out as [`MicroResult`]s with `n = 1` and
//! no CI (the tools report no interval). Several files of the same job are replicates:
//! [`replicates`] pools them under a [`TrialPolicy`] into medians with cluster-bootstrap CIs.

pub mod fio;
pub mod nccl;
pub mod stream;

use std::collections::BTreeMap;

use super::trial::{MetricSamples, Stat, summarize};
use super::{MicroError, MicroResult, OutlierCounts, TrialPolicy};

/// Errors of the parsers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The text is not output of the tool.
    #[error("not {tool} output: {reason}")]
    NotRecognised {
        /// The tool expected.
        tool: &'static str,
        /// Why.
        reason: String,
    },
    /// A line could not be parsed.
    #[error("{tool} output, line {line}: {reason}")]
    BadLine {
        /// The tool.
        tool: &'static str,
        /// 1-based line number.
        line: usize,
        /// Why.
        reason: String,
    },
    /// The tool reported a failed run (validation errors, wrong results).
    #[error("{tool} reported a failed run: {reason}")]
    FailedRun {
        /// The tool.
        tool: &'static str,
        /// What it reported.
        reason: String,
    },
    /// A figure is out of range (not finite: `inf`, `NaN`, or an overflow of a unit
    /// conversion).
    #[error("{tool} output: {reason}")]
    BadValue {
        /// The tool.
        tool: &'static str,
        /// Which figure and why.
        reason: String,
    },
    /// JSON could not be decoded.
    #[error("fio JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Which tool produced a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// nccl-tests.
    Nccl,
    /// fio JSON.
    Fio,
    /// STREAM.
    Stream,
}

/// Guesses the tool from the text.
pub fn detect(text: &str) -> Option<Format> {
    if text.contains("\"fio version\"") {
        Some(Format::Fio)
    } else if text.contains("STREAM version") || text.contains("Function    Best Rate") {
        Some(Format::Stream)
    } else if text.contains("busbw") && text.contains("algbw") {
        Some(Format::Nccl)
    } else {
        None
    }
}

/// Parses any supported tool's output into results (format detected).
pub fn parse_any(text: &str) -> Result<Vec<MicroResult>, IngestError> {
    match detect(text) {
        Some(Format::Nccl) => Ok(nccl::parse(text)?.results()),
        Some(Format::Fio) => Ok(fio::parse(text)?.results()),
        Some(Format::Stream) => Ok(stream::parse(text)?.results()),
        None => Err(IngestError::NotRecognised {
            tool: "nccl-tests, fio JSON or STREAM",
            reason: "no header of any of them".into(),
        }),
    }
}

/// A result from one figure a tool reported.
pub(crate) fn single(
    name: String,
    value: f64,
    unit: &str,
    higher_is_better: bool,
    params: BTreeMap<String, serde_json::Value>,
) -> MicroResult {
    MicroResult {
        name,
        value,
        unit: unit.to_owned(),
        ci: None,
        n: 1,
        replicates: 1,
        level: 0.0,
        ci_method: "none".into(),
        higher_is_better,
        mean: value,
        cv: None,
        min: value,
        max: value,
        warmup_discarded: 0,
        outliers: OutlierCounts::default(),
        params,
        samples: vec![vec![value]],
    }
}

/// Pools several runs of the same job (one result list per file) into one result per name:
/// each run is a replicate, the value is the median with a cluster-bootstrap CI. Names that
/// are not in every run are pooled over the runs that have them.
pub fn replicates(
    runs: &[Vec<MicroResult>],
    policy: &TrialPolicy,
) -> Result<Vec<MicroResult>, MicroError> {
    let mut order: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, MetricSamples> = BTreeMap::new();
    for run in runs {
        for r in run {
            let m = by_name.entry(r.name.clone()).or_insert_with(|| {
                order.push(r.name.clone());
                let mut m = MetricSamples::new(&r.name, &r.unit, r.higher_is_better, Stat::Median);
                m.params = r.params.clone();
                m
            });
            m.push_replicate(r.samples.iter().flatten().copied().collect(), 0);
        }
    }
    let policy = TrialPolicy {
        warmup: super::Warmup::Iterations(0),
        ..policy.clone()
    };
    order
        .iter()
        .map(|name| summarize(&by_name[name], &policy))
        .collect()
}
