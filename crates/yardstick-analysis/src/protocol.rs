//! The metric protocol's records: how a workload reports its own steps
//! (`docs/metric-protocol.md`), and the parse of the protocol's text.
//!
//! A workload appends one JSON object per line to the file yardstick names in
//! `$YARDSTICK_METRICS`, e.g. `{"step":12,"step_time_s":0.182,"tokens":4096,"samples":8,
//! "loss":2.31,"rank":0,"world_size":4,"mem_bytes":2.1e10,"phase":"train"}`. Every key is
//! optional except that a record without `step_time_s` contributes no timing. Unknown keys are
//! kept as custom metrics; a line `{"declare":"val_acc","unit":"%","direction":"higher_is_better"}`
//! gives one its unit and direction. A line that is not such an object is *malformed*: counted
//! and reported with its line number, never fatal, so one stray `print` cannot lose a run.
//!
//! This module is text in, records out: no files, no processes. Handing the workload its file or
//! FIFO and reading it as it runs is `yardstick_exec::protocol`'s job.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};
use yardstick_spec::metrics::Direction;

/// The keys the protocol defines; anything else is a custom metric.
pub const KNOWN_KEYS: [&str; 14] = [
    "step",
    "step_time_s",
    "tokens",
    "samples",
    "loss",
    "rank",
    "world_size",
    "mem_bytes",
    "phase",
    "flops",
    "bytes",
    "data_wait_s",
    "comm_s",
    "comm_busbw_gbps",
];

/// One step (or event) reported by a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Default, schemars::JsonSchema)]
pub struct MetricRecord {
    /// 1-based line number in the metrics file.
    pub line: usize,
    /// Step number (any monotone counter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// Duration of the step in seconds, synchronised (forward + backward + optimizer + comm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_time_s: Option<f64>,
    /// Tokens this rank processed in the step (the whole job's, when `rank` is absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    /// Samples (sequences) this rank processed in the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<f64>,
    /// Training loss after the step. `None` with `loss_non_finite` when it was NaN or infinite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// The loss was reported as NaN or ±Infinity (Python's `json.dumps` writes those).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub loss_non_finite: bool,
    /// Rank of the reporting process (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Number of ranks in the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// Peak device (or host) memory in bytes so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_bytes: Option<f64>,
    /// `train` (default), `eval`, `warmup`, or anything else; only `train` steps are analysed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// FLOPs this rank executed in the step, when the workload counts them itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    /// Memory bytes this rank moved in the step (for the roofline), when the workload knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// Seconds of the step spent waiting for input (data loader, storage, network).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_wait_s: Option<f64>,
    /// Seconds of the step spent in collectives not overlapped with compute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_s: Option<f64>,
    /// Bus bandwidth the step's collectives achieved, GB/s (10^9 bytes/s), computed as
    /// nccl-tests does (all-reduce: bytes / time · 2(n−1)/n), so it compares with the link's
    /// nccl-tests busbw peak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_busbw_gbps: Option<f64>,
    /// Every other key, kept as reported.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom: BTreeMap<String, Value>,
}

impl MetricRecord {
    /// Whether this is a training step (phase absent or `train`).
    pub fn is_train(&self) -> bool {
        self.phase.as_deref().is_none_or(|p| p == "train")
    }
}

/// What a workload says about one of its custom metrics: a line
/// `{"declare": NAME, "unit": UNIT, "direction": "higher_is_better" | "lower_is_better"}`
/// (`unit` and `direction` optional). An undeclared custom metric has no unit and an unknown
/// direction: it is reported, never gated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Declaration {
    /// 1-based line number of the declaration.
    pub line: usize,
    /// The unit its values are in (`%`, `tok/J`), if declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Which way is better; [`Direction::Unknown`] unless declared.
    pub direction: Direction,
}

/// A line that could not be read as a metric record.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MalformedLine {
    /// 1-based line number.
    pub line: usize,
    /// Why it was rejected.
    pub reason: String,
}

/// Everything read from a metrics file.
#[derive(Debug, Clone, PartialEq, Serialize, Default, schemars::JsonSchema)]
pub struct ParsedMetrics {
    /// Well-formed records, in file order.
    pub records: Vec<MetricRecord>,
    /// Rejected lines (all of them are counted; at most [`MAX_REPORTED_MALFORMED`] keep a reason).
    pub malformed: Vec<MalformedLine>,
    /// Total number of rejected lines.
    pub malformed_count: usize,
    /// Blank lines (ignored, not malformed).
    pub blank_lines: usize,
    /// Custom metrics the workload declared, by name (the last declaration of a name wins).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub declarations: BTreeMap<String, Declaration>,
}

/// How many malformed lines keep their reason (the count is always exact).
pub const MAX_REPORTED_MALFORMED: usize = 100;

impl ParsedMetrics {
    /// Whether nothing usable was written.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A one-line description of the malformed lines, e.g. `3 malformed lines (2, 7, 9): ...`.
    pub fn malformed_summary(&self) -> Option<String> {
        let first = self.malformed.first()?;
        let lines: Vec<String> = self
            .malformed
            .iter()
            .take(10)
            .map(|m| m.line.to_string())
            .collect();
        let more = if self.malformed_count > 10 {
            ", ..."
        } else {
            ""
        };
        Some(format!(
            "{} malformed metric line{} (line {}{more}); first: line {}: {}",
            self.malformed_count,
            if self.malformed_count == 1 { "" } else { "s" },
            lines.join(", "),
            first.line,
            first.reason
        ))
    }
}

/// Parses the text of a metrics file. Never fails: bad lines are collected in `malformed`.
pub fn parse_metrics(text: &str) -> ParsedMetrics {
    let mut out = ParsedMetrics::default();
    let mut lines = text.split('\n').peekable();
    let mut number = 0;
    while let Some(raw) = lines.next() {
        number += 1;
        let line = raw.trim();
        if line.is_empty() {
            // A trailing newline is not a blank line.
            if lines.peek().is_some() {
                out.blank_lines += 1;
            }
            continue;
        }
        match parse_line(line, number) {
            Ok(Line::Record(record)) => out.records.push(record),
            Ok(Line::Declare(name, d)) => {
                out.declarations.insert(name, d);
            }
            Err(reason) => {
                out.malformed_count += 1;
                if out.malformed.len() < MAX_REPORTED_MALFORMED {
                    out.malformed.push(MalformedLine {
                        line: number,
                        reason: reason.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// One well-formed line: a step's record or a declaration.
enum Line {
    Record(MetricRecord),
    Declare(String, Declaration),
}

/// Why one line of a metrics file was rejected.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("not a JSON object: {0}")]
    NotObject(&'static str),
    #[error("`direction` must be \"higher_is_better\" or \"lower_is_better\", got \"{0}\"")]
    Direction(String),
    #[error("`{key}` of a declaration must be a non-empty string, got {got}")]
    DeclarationValue { key: String, got: &'static str },
    #[error("a declaration has `declare`, `unit` and `direction` only, not `{0}`")]
    DeclarationKey(String),
    #[error("`{0}` is a key of the protocol itself, not a custom metric to declare")]
    DeclaresProtocolKey(String),
    #[error("`step_time_s` is 0")]
    ZeroStepTime,
    #[error("`world_size` is 0")]
    ZeroWorldSize,
    #[error("`phase` must be a string, got {0}")]
    PhaseNotString(&'static str),
    #[error("`rank` {rank} is not below `world_size` {world_size}")]
    RankOutOfWorld { rank: u32, world_size: u32 },
    #[error("`{key}` must be a finite number, got {got}")]
    NotFinite { key: String, got: &'static str },
    #[error("`{key}` is negative ({value})")]
    Negative { key: String, value: f64 },
    #[error("`{key}` must be a non-negative integer, got {got}")]
    NotUnsigned { key: String, got: String },
    #[error("`{key}` {value} is too large")]
    TooLarge { key: String, value: u64 },
}

fn parse_line(line: &str, number: usize) -> Result<Line, LineError> {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(first) => {
            // Python's json.dumps writes NaN and Infinity, which JSON does not allow: read them
            // as strings so a diverging loss is reported as such instead of as a bad line.
            match quote_non_finite(line).map(|patched| serde_json::from_str(&patched)) {
                Some(Ok(v)) => v,
                _ => return Err(LineError::Json(first)),
            }
        }
    };
    let Value::Object(map) = value else {
        return Err(LineError::NotObject(kind_of(&value)));
    };
    if map.contains_key("declare") {
        return declaration_from_map(map, number).map(|(n, d)| Line::Declare(n, d));
    }
    record_from_map(map, number).map(Line::Record)
}

fn declaration_from_map(
    map: Map<String, Value>,
    line: usize,
) -> Result<(String, Declaration), LineError> {
    let mut name = None;
    let mut d = Declaration {
        line,
        unit: None,
        direction: Direction::Unknown,
    };
    for (key, value) in map {
        match (key.as_str(), value) {
            ("declare", Value::String(s)) if !s.trim().is_empty() => name = Some(s),
            ("unit", Value::String(s)) => d.unit = Some(s),
            ("direction", Value::String(s)) => {
                d.direction = match s.as_str() {
                    "higher_is_better" => Direction::HigherIsBetter,
                    "lower_is_better" => Direction::LowerIsBetter,
                    other => return Err(LineError::Direction(other.to_string())),
                }
            }
            ("declare" | "unit" | "direction", other) => {
                return Err(LineError::DeclarationValue {
                    got: match &other {
                        Value::String(_) => "an empty string",
                        v => kind_of(v),
                    },
                    key,
                });
            }
            (other, _) => {
                return Err(LineError::DeclarationKey(other.to_string()));
            }
        }
    }
    let name = name.expect("the caller saw `declare`");
    if KNOWN_KEYS.contains(&name.as_str()) {
        return Err(LineError::DeclaresProtocolKey(name));
    }
    Ok((name, d))
}

fn record_from_map(map: Map<String, Value>, line: usize) -> Result<MetricRecord, LineError> {
    let mut r = MetricRecord {
        line,
        ..MetricRecord::default()
    };
    for (key, value) in map {
        match key.as_str() {
            "step" => r.step = Some(uint(&key, &value)?),
            "step_time_s" => {
                let t = non_negative(&key, &value)?;
                if t == 0.0 {
                    return Err(LineError::ZeroStepTime);
                }
                r.step_time_s = Some(t);
            }
            "tokens" => r.tokens = Some(non_negative(&key, &value)?),
            "samples" => r.samples = Some(non_negative(&key, &value)?),
            "mem_bytes" => r.mem_bytes = Some(non_negative(&key, &value)?),
            "flops" => r.flops = Some(non_negative(&key, &value)?),
            "bytes" => r.bytes = Some(non_negative(&key, &value)?),
            "data_wait_s" => r.data_wait_s = Some(non_negative(&key, &value)?),
            "comm_s" => r.comm_s = Some(non_negative(&key, &value)?),
            "comm_busbw_gbps" => r.comm_busbw_gbps = Some(non_negative(&key, &value)?),
            "loss" => match &value {
                Value::String(s) if is_non_finite_word(s) => r.loss_non_finite = true,
                _ => r.loss = Some(finite(&key, &value)?),
            },
            "rank" => r.rank = Some(u32_of(&key, &value)?),
            "world_size" => {
                let w = u32_of(&key, &value)?;
                if w == 0 {
                    return Err(LineError::ZeroWorldSize);
                }
                r.world_size = Some(w);
            }
            "phase" => match value {
                Value::String(s) => r.phase = Some(s),
                other => return Err(LineError::PhaseNotString(kind_of(&other))),
            },
            _ => {
                r.custom.insert(key, value);
            }
        }
    }
    if let (Some(rank), Some(w)) = (r.rank, r.world_size)
        && rank >= w
    {
        return Err(LineError::RankOutOfWorld {
            rank,
            world_size: w,
        });
    }
    Ok(r)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_non_finite_word(s: &str) -> bool {
    matches!(s, "NaN" | "Infinity" | "-Infinity" | "nan" | "inf" | "-inf")
}

fn finite(key: &str, v: &Value) -> Result<f64, LineError> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(LineError::NotFinite {
            key: key.to_string(),
            got: kind_of(v),
        }),
    }
}

fn non_negative(key: &str, v: &Value) -> Result<f64, LineError> {
    let x = finite(key, v)?;
    if x < 0.0 {
        return Err(LineError::Negative {
            key: key.to_string(),
            value: x,
        });
    }
    Ok(x)
}

fn uint(key: &str, v: &Value) -> Result<u64, LineError> {
    if let Some(u) = v.as_u64() {
        return Ok(u);
    }
    // Accept integral floats (2.0) that some JSON writers emit.
    match v.as_f64() {
        Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(x as u64),
        _ => Err(LineError::NotUnsigned {
            key: key.to_string(),
            got: match v {
                Value::Number(n) => n.to_string(),
                other => kind_of(other).to_string(),
            },
        }),
    }
}

fn u32_of(key: &str, v: &Value) -> Result<u32, LineError> {
    let u = uint(key, v)?;
    u32::try_from(u).map_err(|_| LineError::TooLarge {
        key: key.to_string(),
        value: u,
    })
}

/// Puts quotes around bare `NaN`, `Infinity` and `-Infinity` tokens outside strings; `None` when
/// there are none (so the original parse error stands).
fn quote_non_finite(line: &str) -> Option<String> {
    let mut out = String::with_capacity(line.len() + 8);
    let mut changed = false;
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            rest = &rest[1..];
            continue;
        }
        let word = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w));
        if let Some(w) = word {
            out.push('"');
            out.push_str(w);
            out.push('"');
            rest = &rest[w.len()..];
            changed = true;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_give_custom_metrics_a_unit_and_direction() {
        let p = parse_metrics(concat!(
            r#"{"declare":"val_acc","unit":"%","direction":"higher_is_better"}"#,
            "\n",
            r#"{"declare":"gap"}"#,
            "\n",
            r#"{"step":0,"step_time_s":0.1,"val_acc":71}"#,
            "\n",
            r#"{"declare":"x","direction":"sideways"}"#,
            "\n",
            r#"{"declare":"loss","unit":"nats"}"#,
            "\n",
            r#"{"declare":"y","colour":"red"}"#,
            "\n",
            r#"{"declare":""}"#,
            "\n",
        ));
        // Declarations are not steps.
        assert_eq!(p.records.len(), 1);
        let acc = &p.declarations["val_acc"];
        assert_eq!((acc.line, acc.unit.as_deref()), (1, Some("%")));
        assert_eq!(acc.direction, Direction::HigherIsBetter);
        assert_eq!(p.declarations["gap"].direction, Direction::Unknown);
        assert_eq!(p.declarations["gap"].unit, None);
        let why: Vec<(usize, &str)> = p
            .malformed
            .iter()
            .map(|m| (m.line, m.reason.as_str()))
            .collect();
        assert_eq!(p.malformed_count, 4, "{why:?}");
        assert!(why[0].1.contains("\"sideways\""), "{why:?}");
        assert!(why[1].1.contains("key of the protocol itself"), "{why:?}");
        assert!(why[2].1.contains("not `colour`"), "{why:?}");
        assert!(why[3].1.contains("an empty string"), "{why:?}");
        assert_eq!(p.declarations.len(), 2);
    }

    #[test]
    fn reads_the_documented_example() {
        let p = parse_metrics(
            r#"{"step":12,"step_time_s":0.182,"tokens":4096,"samples":8,"loss":2.31,"rank":0,"world_size":4,"mem_bytes":2.1e10,"phase":"train","lr":0.0003}"#,
        );
        assert_eq!(p.malformed_count, 0);
        let r = &p.records[0];
        assert_eq!(r.step, Some(12));
        assert_eq!(r.step_time_s, Some(0.182));
        assert_eq!(r.tokens, Some(4096.0));
        assert_eq!(r.rank, Some(0));
        assert_eq!(r.world_size, Some(4));
        assert_eq!(r.mem_bytes, Some(2.1e10));
        assert_eq!(r.custom["lr"], serde_json::json!(0.0003));
        assert!(r.is_train());
    }

    #[test]
    fn malformed_lines_are_counted_with_line_numbers() {
        let text = "{\"step\":1,\"step_time_s\":0.1}\n\
                    Epoch 1 done\n\
                    \n\
                    [1,2]\n\
                    {\"step\":-1}\n\
                    {\"step_time_s\":\"fast\"}\n\
                    {\"rank\":4,\"world_size\":4}\n\
                    {\"step\":2,\"step_time_s\":0.1\n\
                    {\"step\":3,\"step_time_s\":0.1}\n";
        let p = parse_metrics(text);
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1].line, 9);
        assert_eq!(p.blank_lines, 1);
        let lines: Vec<usize> = p.malformed.iter().map(|m| m.line).collect();
        assert_eq!(lines, vec![2, 4, 5, 6, 7, 8]);
        assert_eq!(p.malformed_count, 6);
        assert!(p.malformed[1].reason.contains("not a JSON object"));
        assert!(p.malformed[2].reason.contains("non-negative integer"));
        let summary = p.malformed_summary().unwrap();
        assert!(
            summary.starts_with("6 malformed metric lines (line 2, 4, 5, 6, 7, 8)"),
            "{summary}"
        );
    }

    #[test]
    fn python_nan_loss_is_a_diverged_loss_not_a_bad_line() {
        let p = parse_metrics("{\"step\": 5, \"loss\": NaN, \"note\": \"NaN stays\"}\n");
        assert_eq!(p.malformed_count, 0);
        assert!(p.records[0].loss_non_finite);
        assert_eq!(p.records[0].loss, None);
        assert_eq!(p.records[0].custom["note"], "NaN stays");
    }

    #[test]
    fn collective_bus_bandwidth_is_a_known_key() {
        let p = parse_metrics(
            "{\"step\":1,\"step_time_s\":0.5,\"comm_s\":0.1,\"comm_busbw_gbps\":182.5}\n\
             {\"step\":2,\"comm_busbw_gbps\":-1}\n\
             {\"step\":3,\"comm_busbw_gbps\":\"fast\"}\n",
        );
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.records[0].comm_busbw_gbps, Some(182.5));
        assert!(p.records[0].custom.is_empty());
        assert_eq!(p.malformed_count, 2);
        assert!(p.malformed[0].reason.contains("negative"));
    }

    #[test]
    fn nothing_written_is_empty() {
        assert!(parse_metrics("").is_empty());
        assert!(parse_metrics("\n\n").is_empty());
    }

    #[test]
    fn caps_kept_reasons_but_counts_everything() {
        let text = "garbage\n".repeat(MAX_REPORTED_MALFORMED + 5);
        let p = parse_metrics(&text);
        assert_eq!(p.malformed_count, MAX_REPORTED_MALFORMED + 5);
        assert_eq!(p.malformed.len(), MAX_REPORTED_MALFORMED);
    }
}
