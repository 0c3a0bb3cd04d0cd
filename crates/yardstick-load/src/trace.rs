//! Request traces to replay on their own clock: when each request arrived, how long its prompt
//! and answer were, and which prompt blocks it shared with earlier requests.
//!
//! Four formats are read:
//! - **mooncake** — JSON lines `{"timestamp": ms, "input_length": n, "output_length": n,
//!   "hash_ids": [..]}`, one hash id per 512-token block of the prompt (the id of a block stands
//!   for the block and everything before it, so two prompts that share leading ids share a
//!   prefix);
//! - **azure** — the Azure LLM inference traces' CSV: `TIMESTAMP` (`2023-11-16 18:15:46.6805900`),
//!   `ContextTokens`, `GeneratedTokens`;
//! - **burstgpt** — BurstGPT's CSV: `Timestamp` (seconds), `Model`, `Request tokens`,
//!   `Response tokens` (other columns ignored);
//! - **jsonl** — yardstick's own JSON lines: `at_ms`, `input_tokens`, `output_tokens`, optional
//!   `hash_ids` (512-token blocks, as mooncake's) or `prefix_id` (a shared prefix named once),
//!   `model`, `session_id`.
//!
//! A trace is checked whole before any request is sent: a line that does not parse, a missing
//! column, a negative or non-numeric length, a time earlier than the line before it — each is
//! an error naming the file, line and column.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Prompt tokens per hash block (Mooncake's block size).
pub const BLOCK_TOKENS: u64 = 512;

/// Most requests a trace may hold (about a day of a busy service).
pub const MAX_REQUESTS: usize = 10_000_000;

/// The format of a trace file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Mooncake's JSON lines.
    Mooncake,
    /// The Azure LLM inference traces' CSV.
    Azure,
    /// BurstGPT's CSV.
    Burstgpt,
    /// yardstick's own JSON lines.
    Jsonl,
}

impl TraceFormat {
    /// Every format, as named on the command line.
    pub const NAMES: &[&str] = &["mooncake", "azure", "burstgpt", "jsonl"];

    /// The format named `s` (`mooncake`, `azure`, `burstgpt`, `jsonl`).
    pub fn parse(s: &str) -> Option<TraceFormat> {
        Some(match s {
            "mooncake" => TraceFormat::Mooncake,
            "azure" => TraceFormat::Azure,
            "burstgpt" => TraceFormat::Burstgpt,
            "jsonl" => TraceFormat::Jsonl,
            _ => return None,
        })
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Azure => "azure",
            TraceFormat::Burstgpt => "burstgpt",
            TraceFormat::Jsonl => "jsonl",
        }
    }
}

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TraceRequest {
    /// When it arrived, milliseconds after the trace's first request.
    pub at_ms: f64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// One id per [`BLOCK_TOKENS`]-token block of the prompt, each standing for the block and
    /// every block before it (empty when the trace does not say).
    pub hash_ids: Vec<u64>,
    /// The model the request named, when the trace says.
    pub model: Option<String>,
    /// The session the request belongs to, when the trace says.
    pub session_id: Option<String>,
}

/// A trace read whole and checked.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Trace {
    /// The file it was read from.
    pub file: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// Its requests, in arrival order.
    pub requests: Vec<TraceRequest>,
    /// Send each request to the model its line names ([`Trace::send_models`]) instead of the
    /// run's model.
    pub models: bool,
}

/// A trace that cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line or a field is wrong.
    #[error("{path}:{line}:{col}: {message}")]
    At {
        /// The file.
        path: String,
        /// 1-based line.
        line: u64,
        /// 1-based column (of the field, for CSV; of the error, for JSON).
        col: u64,
        /// What is wrong.
        message: String,
    },
    /// The trace as a whole is wrong (empty, too long, a window that keeps nothing).
    #[error("{path}: {message}")]
    Whole {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl yardstick_error::UserFacing for TraceError {
    fn is_invalid_input(&self) -> bool {
        !matches!(self, TraceError::Io { .. })
    }

    fn hint(&self) -> Option<String> {
        match self {
            TraceError::Io { .. } => None,
            _ => Some(
                "trace formats: mooncake (JSON lines: timestamp, input_length, output_length, \
                 hash_ids), azure (CSV: TIMESTAMP, ContextTokens, GeneratedTokens), burstgpt (CSV: \
                 Timestamp, Model, Request tokens, Response tokens), jsonl (at_ms, input_tokens, \
                 output_tokens); see docs/traces.md"
                    .into(),
            ),
        }
    }
}

impl Trace {
    /// Reads and checks the trace at `path` in `format`.
    pub fn load(path: &Path, format: TraceFormat) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Trace::parse(&text, path, format)
    }

    /// Reads and checks a trace's `text` (named `path` in errors).
    pub fn parse(text: &str, path: &Path, format: TraceFormat) -> Result<Trace, TraceError> {
        let name = path.display().to_string();
        let mut requests = match format {
            TraceFormat::Mooncake | TraceFormat::Jsonl => json_lines(text, &name, format)?,
            TraceFormat::Azure | TraceFormat::Burstgpt => csv_rows(text, &name, format)?,
        };
        if requests.is_empty() {
            return Err(TraceError::Whole {
                path: name,
                message: "the trace has no requests".into(),
            });
        }
        // Times from the first request.
        let t0 = requests[0].at_ms;
        for r in &mut requests {
            r.at_ms -= t0;
        }
        Ok(Trace {
            file: path.to_path_buf(),
            format,
            requests,
            models: false,
        })
    }

    /// Sends each request to the model its line names (the trace's `model` column as the run's
    /// model mix), renamed by `map` (`trace name → served name`); lines without a model go to
    /// the run's model. Refuses a trace that names no model, and a map entry the trace never
    /// names (a typo would otherwise send production's names to the server).
    pub fn send_models(
        mut self,
        map: &std::collections::BTreeMap<String, String>,
    ) -> Result<Trace, TraceError> {
        let named: std::collections::BTreeSet<&str> = self
            .requests
            .iter()
            .filter_map(|r| r.model.as_deref())
            .collect();
        let path = self.file.display().to_string();
        if named.is_empty() {
            return Err(TraceError::Whole {
                path,
                message: "no request names a model: there is no model column to send".into(),
            });
        }
        if let Some(k) = map.keys().find(|k| !named.contains(k.as_str())) {
            let shown: Vec<&str> = named.iter().take(8).copied().collect();
            return Err(TraceError::Whole {
                path,
                message: format!(
                    "the model map renames `{k}`, which no request names (the trace names: {})",
                    shown.join(", ")
                ),
            });
        }
        for r in &mut self.requests {
            if let Some(m) = &r.model
                && let Some(to) = map.get(m)
            {
                r.model = Some(to.clone());
            }
        }
        self.models = true;
        Ok(self)
    }

    /// `(model, share of requests)` of the models the trace names, most requests first.
    pub fn model_shares(&self) -> Vec<(String, f64)> {
        let mut counts: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for r in &self.requests {
            if let Some(m) = &r.model {
                *counts.entry(m).or_default() += 1;
            }
        }
        let n = self.requests.len().max(1) as f64;
        let mut out: Vec<(String, f64)> = counts
            .into_iter()
            .map(|(m, c)| (m.to_string(), c as f64 / n))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Keeps the requests that arrived in `[from_ms, to_ms)` after the trace's start (either
    /// bound open), times then counted from `from_ms`.
    pub fn window(mut self, from_ms: Option<f64>, to_ms: Option<f64>) -> Result<Trace, TraceError> {
        let (lo, hi) = (from_ms.unwrap_or(0.0), to_ms.unwrap_or(f64::INFINITY));
        let last = self.requests.last().map_or(0.0, |r| r.at_ms);
        self.requests.retain(|r| r.at_ms >= lo && r.at_ms < hi);
        if self.requests.is_empty() {
            return Err(TraceError::Whole {
                path: self.file.display().to_string(),
                message: format!(
                    "the window {lo} ms..{hi} ms keeps no request (the trace spans 0..{last} ms)"
                ),
            });
        }
        for r in &mut self.requests {
            r.at_ms -= lo;
        }
        Ok(self)
    }

    /// When each request is due, seconds after the start of the replay, at `speedup` times the
    /// trace's pace (2: twice as fast).
    pub fn schedule_s(&self, speedup: f64) -> Vec<f64> {
        self.requests
            .iter()
            .map(|r| r.at_ms / 1e3 / speedup)
            .collect()
    }

    /// The trace's span, seconds (first to last arrival).
    pub fn span_s(&self) -> f64 {
        self.requests.last().map_or(0.0, |r| r.at_ms / 1e3)
    }

    /// The share of prompt tokens a prefix cache would serve if it kept every block it ever saw
    /// (`cache_tokens: None`) or the `cache_tokens / BLOCK_TOKENS` most recently used blocks: a
    /// request hits on its leading blocks already in the cache (a prefix cache serves a prefix,
    /// so the first miss ends the hit). `None` when no request has hash ids.
    pub fn prefix_hit_rate(&self, cache_tokens: Option<u64>) -> Option<f64> {
        if self.requests.iter().all(|r| r.hash_ids.is_empty()) {
            return None;
        }
        let capacity = cache_tokens.map(|t| (t / BLOCK_TOKENS) as usize);
        let mut cache = BlockCache::new(capacity);
        let (mut hit, mut total) = (0u64, 0u64);
        for r in &self.requests {
            total += r.input_tokens;
            let mut leading = true;
            for (i, id) in r.hash_ids.iter().enumerate() {
                let present = cache.touch(*id);
                if leading && present {
                    let block_end = ((i as u64) + 1) * BLOCK_TOKENS;
                    hit += block_end.min(r.input_tokens)
                        - (i as u64 * BLOCK_TOKENS).min(r.input_tokens);
                } else {
                    leading = false;
                }
            }
        }
        (total > 0).then(|| hit as f64 / total as f64)
    }
}

/// Blocks a prefix cache holds: all of them, or the most recently used `capacity`.
struct BlockCache {
    capacity: Option<usize>,
    seen: HashSet<u64>,
    /// Use order (front: least recent); `stamp` says which entry of a block is its latest.
    order: VecDeque<(u64, u64)>,
    stamp: HashMap<u64, u64>,
    clock: u64,
}

impl BlockCache {
    fn new(capacity: Option<usize>) -> BlockCache {
        BlockCache {
            capacity,
            seen: HashSet::new(),
            order: VecDeque::new(),
            stamp: HashMap::new(),
            clock: 0,
        }
    }

    /// Whether `id` was cached, and caches it as the most recently used.
    fn touch(&mut self, id: u64) -> bool {
        let Some(cap) = self.capacity else {
            return !self.seen.insert(id);
        };
        if cap == 0 {
            return false;
        }
        let present = self.stamp.contains_key(&id);
        self.clock += 1;
        self.stamp.insert(id, self.clock);
        self.order.push_back((id, self.clock));
        while self.stamp.len() > cap {
            let Some((old, at)) = self.order.pop_front() else {
                break;
            };
            if self.stamp.get(&old) == Some(&at) {
                self.stamp.remove(&old);
            }
        }
        // Stale entries (blocks used again since) are dropped as they reach the front; keep
        // the queue from growing without bound when the same blocks are used over and over.
        if self.order.len() > 4 * cap.max(16) {
            let stamp = &self.stamp;
            self.order.retain(|(id, at)| stamp.get(id) == Some(at));
        }
        present
    }
}

fn at(path: &str, line: u64, col: u64, message: impl Into<String>) -> TraceError {
    TraceError::At {
        path: path.to_string(),
        line,
        col,
        message: message.into(),
    }
}

/// Arrival times never go back: a trace out of order is an error, not something to sort.
fn check_order(
    path: &str,
    line: u64,
    col: u64,
    prev: Option<f64>,
    t: f64,
) -> Result<(), TraceError> {
    match prev {
        Some(p) if t < p => Err(at(
            path,
            line,
            col,
            format!("the time goes back ({t} after {p}): a trace lists requests in arrival order"),
        )),
        _ => Ok(()),
    }
}

fn json_lines(
    text: &str,
    path: &str,
    format: TraceFormat,
) -> Result<Vec<TraceRequest>, TraceError> {
    let (time, input, output) = match format {
        TraceFormat::Mooncake => ("timestamp", "input_length", "output_length"),
        _ => ("at_ms", "input_tokens", "output_tokens"),
    };
    let mut out = Vec::new();
    let mut prefixes: HashMap<String, u64> = HashMap::new();
    let mut prev = None;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        if out.len() >= MAX_REQUESTS {
            return Err(TraceError::Whole {
                path: path.into(),
                message: format!("more than {MAX_REQUESTS} requests; cut it with --trace-window"),
            });
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| at(path, n, e.column() as u64, format!("not JSON: {e}")))?;
        let Some(obj) = v.as_object() else {
            return Err(at(path, n, 1, "a line must be a JSON object"));
        };
        let num = |key: &str| -> Result<f64, TraceError> {
            let x = obj
                .get(key)
                .ok_or_else(|| at(path, n, 1, format!("`{key}` is missing")))?;
            match x.as_f64() {
                Some(f) if f.is_finite() && f >= 0.0 => Ok(f),
                _ => Err(at(
                    path,
                    n,
                    column_of(line, key),
                    format!("`{key}` must be a number ≥ 0, not {x}"),
                )),
            }
        };
        let t = num(time)?;
        check_order(path, n, column_of(line, time), prev, t)?;
        prev = Some(t);
        let whole = |key: &str| -> Result<u64, TraceError> {
            let f = num(key)?;
            if f.fract() != 0.0 {
                return Err(at(
                    path,
                    n,
                    column_of(line, key),
                    format!("`{key}` must be a whole number of tokens, not {f}"),
                ));
            }
            Ok(f as u64)
        };
        let input_tokens = whole(input)?;
        let output_tokens = whole(output)?;
        let mut hash_ids = match obj.get("hash_ids") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| x.as_u64())
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| {
                    at(
                        path,
                        n,
                        column_of(line, "hash_ids"),
                        "`hash_ids` must be a list of whole numbers ≥ 0",
                    )
                })?,
            Some(_) => {
                return Err(at(
                    path,
                    n,
                    column_of(line, "hash_ids"),
                    "`hash_ids` must be a list",
                ));
            }
        };
        if hash_ids.is_empty()
            && format == TraceFormat::Jsonl
            && let Some(p) = obj.get("prefix_id").and_then(|p| {
                p.as_str()
                    .map(str::to_owned)
                    .or_else(|| p.as_u64().map(|u| u.to_string()))
            })
        {
            // A named shared prefix: its own block chain, as long as the prompt.
            let next = prefixes.len() as u64;
            let base = *prefixes.entry(p).or_insert(next);
            let blocks = input_tokens.div_ceil(BLOCK_TOKENS);
            hash_ids = (0..blocks).map(|b| (base << 32) | b).collect();
        }
        let text_of = |key: &str| {
            obj.get(key).and_then(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .or_else(|| x.as_u64().map(|u| u.to_string()))
            })
        };
        out.push(TraceRequest {
            at_ms: t,
            input_tokens,
            output_tokens,
            hash_ids,
            model: text_of("model"),
            session_id: text_of("session_id"),
        });
    }
    Ok(out)
}

/// The 1-based column where `"key"` starts in a JSON line (1 when it is not there).
fn column_of(line: &str, key: &str) -> u64 {
    line.find(&format!("\"{key}\""))
        .map_or(1, |b| line[..b].chars().count() as u64 + 1)
}

fn csv_rows(text: &str, path: &str, format: TraceFormat) -> Result<Vec<TraceRequest>, TraceError> {
    let (time, input, output, model) = match format {
        TraceFormat::Azure => ("TIMESTAMP", "ContextTokens", "GeneratedTokens", None),
        _ => (
            "Timestamp",
            "Request tokens",
            "Response tokens",
            Some("Model"),
        ),
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| at(path, 1, 1, format!("no CSV header: {e}")))?
        .clone();
    let column = |name: &str| -> Result<usize, TraceError> {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            at(
                path,
                1,
                1,
                format!(
                    "no `{name}` column (the header has: {})",
                    headers.iter().collect::<Vec<_>>().join(", ")
                ),
            )
        })
    };
    let (ct, ci, co) = (column(time)?, column(input)?, column(output)?);
    let cm = model.map(column).transpose()?;
    // The 1-based column of field `k` of a record (by its byte offset in the line).
    let col_of = |line: &str, k: usize| -> u64 {
        let mut col = 1u64;
        for (i, field) in line.split(',').enumerate() {
            if i == k {
                return col;
            }
            col += field.chars().count() as u64 + 1;
        }
        col
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut prev = None;
    for rec in reader.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            at(path, line, 1, format!("not a CSV record: {e}"))
        })?;
        let n = rec.position().map_or(0, |p| p.line());
        let raw = lines
            .get(n.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("");
        if out.len() >= MAX_REQUESTS {
            return Err(TraceError::Whole {
                path: path.into(),
                message: format!("more than {MAX_REQUESTS} requests; cut it with --trace-window"),
            });
        }
        let field = |k: usize| rec.get(k).unwrap_or("");
        let t = match format {
            TraceFormat::Azure => datetime_ms(field(ct)),
            _ => field(ct)
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| s * 1e3),
        }
        .ok_or_else(|| {
            at(
                path,
                n,
                col_of(raw, ct),
                format!(
                    "`{time}` {:?} is not {}",
                    field(ct),
                    if format == TraceFormat::Azure {
                        "a time like 2023-11-16 18:15:46.6805900"
                    } else {
                        "a number of seconds ≥ 0"
                    }
                ),
            )
        })?;
        check_order(path, n, col_of(raw, ct), prev, t)?;
        prev = Some(t);
        let count = |k: usize, name: &str| -> Result<u64, TraceError> {
            field(k).parse::<u64>().map_err(|_| {
                at(
                    path,
                    n,
                    col_of(raw, k),
                    format!(
                        "`{name}` {:?} is not a whole number of tokens ≥ 0",
                        field(k)
                    ),
                )
            })
        };
        out.push(TraceRequest {
            at_ms: t,
            input_tokens: count(ci, input)?,
            output_tokens: count(co, output)?,
            hash_ids: Vec::new(),
            model: cm.map(|k| field(k).to_string()).filter(|m| !m.is_empty()),
            session_id: None,
        });
    }
    Ok(out)
}

/// Milliseconds since 1970 of `YYYY-MM-DD HH:MM:SS[.fraction]` (UTC; a `T` may stand for the
/// space, a `Z` may end it); `None` when it is not such a time.
fn datetime_ms(s: &str) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    let since = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(since.as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, format: TraceFormat) -> Result<Trace, TraceError> {
        Trace::parse(text, Path::new("t.trace"), format)
    }

    #[test]
    fn mooncake_lines_read_with_their_blocks() {
        let t = parse(
            "{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, 47, 48]}\n\
             {\"timestamp\": 30535, \"input_length\": 1200, \"output_length\": 10, \"hash_ids\": [46, 49, 50]}\n",
            TraceFormat::Mooncake,
        )
        .unwrap();
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[0].at_ms, 0.0);
        assert_eq!(t.requests[1].at_ms, 3053.0);
        assert_eq!(t.requests[1].hash_ids, [46, 49, 50]);
        assert_eq!(t.schedule_s(2.0), [0.0, 1.5265]);
    }

    #[test]
    fn azure_and_burstgpt_csv_read_with_their_times() {
        let t = parse(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n\
             2023-11-16 18:15:46.6805900,374,44\n\
             2023-11-16 18:15:50.9951690,396,109\n\
             2023-11-16 18:16:00,879,31\n",
            TraceFormat::Azure,
        )
        .unwrap();
        let at: Vec<f64> = t
            .requests
            .iter()
            .map(|r| (r.at_ms * 1e3).round() / 1e3)
            .collect();
        assert_eq!(at, [0.0, 4314.579, 13319.41]);
        assert_eq!(t.requests[2].input_tokens, 879);
        let b = parse(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
             5,ChatGPT,472,18,490,Conversation log\n\
             45,GPT-4,1087,0,1087,API log\n",
            TraceFormat::Burstgpt,
        )
        .unwrap();
        assert_eq!(b.requests[1].at_ms, 40_000.0);
        assert_eq!(b.requests[1].model.as_deref(), Some("GPT-4"));
        assert_eq!(b.requests[1].output_tokens, 0);
    }

    #[test]
    fn our_jsonl_names_a_shared_prefix() {
        let t = parse(
            "{\"at_ms\": 0, \"input_tokens\": 1024, \"output_tokens\": 8, \"prefix_id\": \"sys\", \"model\": \"lora-a\", \"session_id\": 7}\n\
             {\"at_ms\": 10, \"input_tokens\": 1024, \"output_tokens\": 8, \"prefix_id\": \"sys\"}\n\
             {\"at_ms\": 20, \"input_tokens\": 600, \"output_tokens\": 8, \"prefix_id\": \"other\"}\n",
            TraceFormat::Jsonl,
        )
        .unwrap();
        assert_eq!(t.requests[0].hash_ids, t.requests[1].hash_ids);
        assert_eq!(t.requests[0].hash_ids.len(), 2);
        assert_ne!(t.requests[2].hash_ids[0], t.requests[0].hash_ids[0]);
        assert_eq!(t.requests[0].model.as_deref(), Some("lora-a"));
        assert_eq!(t.requests[0].session_id.as_deref(), Some("7"));
        // The second request's whole prompt is cached, the others' not at all: 1024 of 2648.
        let rate = t.prefix_hit_rate(None).unwrap();
        assert!((rate - 1024.0 / 2648.0).abs() < 1e-12, "{rate}");
    }

    /// Issue 33: a bad trace is refused before any request is sent, naming the file, line and
    /// column.
    #[test]
    fn bad_traces_name_the_file_line_and_column() {
        let e = |text: &str, f| parse(text, f).unwrap_err().to_string();
        assert_eq!(
            e(
                "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1}\n",
                TraceFormat::Mooncake
            ),
            "t.trace:2:2: the time goes back (4 after 5): a trace lists requests in arrival order"
        );
        assert_eq!(
            e(
                "{\"timestamp\": 5, \"input_length\": -3, \"output_length\": 1}\n",
                TraceFormat::Mooncake
            ),
            "t.trace:1:18: `input_length` must be a number ≥ 0, not -3"
        );
        assert!(e("{\"timestamp\": 5,\n", TraceFormat::Mooncake).starts_with("t.trace:1:"));
        assert_eq!(
            e(
                "{\"timestamp\": 5, \"input_length\": 3}\n",
                TraceFormat::Mooncake
            ),
            "t.trace:1:1: `output_length` is missing"
        );
        assert_eq!(
            e(
                "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46,3\n",
                TraceFormat::Azure
            ),
            "t.trace:1:1: no `GeneratedTokens` column (the header has: TIMESTAMP, ContextTokens)"
        );
        assert_eq!(
            e(
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,3,x\n",
                TraceFormat::Azure
            ),
            "t.trace:2:23: `GeneratedTokens` \"x\" is not a whole number of tokens ≥ 0"
        );
        assert_eq!(
            e(
                "Timestamp,Model,Request tokens,Response tokens\nsoon,m,1,1\n",
                TraceFormat::Burstgpt
            ),
            "t.trace:2:1: `Timestamp` \"soon\" is not a number of seconds ≥ 0"
        );
        assert_eq!(
            e("\n\n", TraceFormat::Jsonl),
            "t.trace: the trace has no requests"
        );
    }

    #[test]
    fn a_window_keeps_its_requests_and_counts_from_its_start() {
        let t = parse(
            "{\"at_ms\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n\
             {\"at_ms\": 1000, \"input_tokens\": 2, \"output_tokens\": 1}\n\
             {\"at_ms\": 2000, \"input_tokens\": 3, \"output_tokens\": 1}\n",
            TraceFormat::Jsonl,
        )
        .unwrap();
        let w = t.clone().window(Some(500.0), Some(2000.0)).unwrap();
        assert_eq!(w.requests.len(), 1);
        assert_eq!(
            (w.requests[0].at_ms, w.requests[0].input_tokens),
            (500.0, 2)
        );
        assert!(
            t.window(Some(5000.0), None)
                .unwrap_err()
                .to_string()
                .contains("keeps no request")
        );
    }

    /// The theoretical prefix-cache hit rate: with every block kept, a request hits on its
    /// leading blocks seen before; a cache of one block keeps only the last one used.
    #[test]
    fn prefix_hit_rates_with_and_without_a_cache_limit() {
        let t = parse(
            "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 1, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 2, \"input_length\": 700, \"output_length\": 1, \"hash_ids\": [1, 3]}\n\
             {\"timestamp\": 3, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [4, 2]}\n",
            TraceFormat::Mooncake,
        )
        .unwrap();
        // Infinite: request 2 hits 1024, request 3 hits its first block (512); request 4's
        // first block misses, so its second (seen) does not count: 1536 of 3772.
        let inf = t.prefix_hit_rate(None).unwrap();
        assert!((inf - 1536.0 / 3772.0).abs() < 1e-12, "{inf}");
        // One block of cache: request 2 finds block 1 evicted by block 2: nothing hits.
        assert_eq!(t.prefix_hit_rate(Some(512)).unwrap(), 0.0);
        // Two blocks: request 2 hits both; request 3 hits block 1; request 4 misses.
        let two = t.prefix_hit_rate(Some(1024)).unwrap();
        assert!((two - 1536.0 / 3772.0).abs() < 1e-12, "{two}");
        let none = parse(
            "{\"at_ms\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n",
            TraceFormat::Jsonl,
        )
        .unwrap();
        assert_eq!(none.prefix_hit_rate(None), None);
    }
}
