//! The output directory of `bench serve --output DIR` (and of each `--shard i/N`), read back
//! and merged (`--merge DIR...`).
//!
//! A directory holds:
//!
//! * `summary.json` ([`summary_doc`]): the run's flags (`url`, `model`, `api`, `stream`, `seed`,
//!   `slo`), `shard` (`{"index", "count"}`, only when sharded) and one [`PointSummary`] per
//!   point;
//! * `requests.jsonl`: every raw record ([`RequestRecord::to_json`]) with its `point` index,
//!   `scenario`, `load_mode` and `load_value`;
//! * `requests.parquet`: the same records in the form `yardstick run` stores, encoded and
//!   decoded by a [`RecordsFormat`] (the Parquet writer lives above this crate);
//! * `histograms.json`: per point, the HDR histograms of [`PointHistograms::to_json`] with its
//!   `scenario` and `load`; they add across shards.
//!
//! [`merge_dirs`] reads N shard directories of one run and merges each point exactly
//! ([`crate::merge::merge_point`]).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::PointResult;
use crate::merge::{MergeError, PointHistograms, ShardPart, merge_point};
use crate::record::RequestRecord;
use crate::summary::{LoadLevel, PointSummary, Slo, StopReason};
use yardstick_spec::metrics::id;

/// The summary document.
pub const SUMMARY: &str = "summary.json";
/// Raw records as JSON lines.
pub const REQUESTS_JSONL: &str = "requests.jsonl";
/// Raw records as Parquet.
pub const REQUESTS_PARQUET: &str = "requests.parquet";
/// HDR histograms per point.
pub const HISTOGRAMS: &str = "histograms.json";

/// The hint for shards that are not of one run.
const SAME_RUN_HINT: &str = "merge the shards of one run: same flags and seed";

/// Records, each with the index of its point (`None` when the file does not say).
pub type PointRecords = Vec<(Option<u64>, RequestRecord)>;

/// Why a [`RecordsFormat`] could not encode or decode records: the format's own error (the
/// format lives above this crate, so its error type is not known here).
pub type RecordsFormatError = Box<dyn std::error::Error + Send + Sync>;

/// How `requests.parquet` is written and read: every point's records in one table, each row
/// tagged with its point index (`point`), scenario and load.
pub trait RecordsFormat {
    /// Encodes the records of every point (in point order) as the file's bytes.
    fn encode(&self, points: &[PointResult]) -> Result<Vec<u8>, RecordsFormatError>;
    /// Decodes the file: each record with its point index (`None` when the row has none).
    fn decode(&self, bytes: Vec<u8>) -> Result<PointRecords, RecordsFormatError>;
    /// The scrapes of the server's metrics a shard kept for point `k` in `dir`
    /// (`server-metrics-p<k>.parquet`), when it kept any.
    fn server_series(
        &self,
        _dir: &std::path::Path,
        _k: usize,
    ) -> Option<Vec<crate::scrape::Reading>> {
        None
    }
}

/// Why an output directory could not be written, read or merged.
#[derive(Debug, thiserror::Error)]
pub enum ShardFileError {
    /// The output directory could not be created.
    #[error("cannot create output directory {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing failed part way.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A value could not be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The records could not be encoded.
    #[error("{0}")]
    Encode(RecordsFormatError),
    /// A file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// A file is not JSON.
    #[error("{}: not JSON: {error}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The cause.
        error: serde_json::Error,
    },
    /// A directory's files are not what `bench serve --output` writes.
    #[error("{}: {message}", dir.display())]
    Malformed {
        /// The directory.
        dir: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Two shards were run with different flags.
    #[error("{}: {key} is {value}, but {} has {first_value}", dir.display(), first_dir.display())]
    NotOneRun {
        /// The shard that differs.
        dir: PathBuf,
        /// The field that differs.
        key: &'static str,
        /// Its value there (JSON).
        value: String,
        /// The first shard.
        first_dir: PathBuf,
        /// Its value in the first shard (JSON).
        first_value: String,
    },
    /// No directory was given.
    #[error("no shard directories given")]
    NoShards,
    /// A point's shards do not merge.
    #[error("point {point}: {error}")]
    Merge {
        /// The point index.
        point: usize,
        /// Why.
        error: MergeError,
    },
}

impl yardstick_error::UserFacing for ShardFileError {
    /// True when the error is the user's input (the directories given), not a failure to write.
    fn is_invalid_input(&self) -> bool {
        !matches!(
            self,
            ShardFileError::CreateDir { .. }
                | ShardFileError::Write { .. }
                | ShardFileError::Io(_)
                | ShardFileError::Json(_)
                | ShardFileError::Encode(_)
        )
    }

    /// What to do about it, when there is something to say.
    fn hint(&self) -> Option<String> {
        match self {
            ShardFileError::NotOneRun { .. } => Some(SAME_RUN_HINT.to_string()),
            _ => None,
        }
    }
}

/// Creates the output directory (and its parents).
pub fn create_output_dir(dir: &Path) -> Result<(), ShardFileError> {
    fs::create_dir_all(dir).map_err(|source| ShardFileError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// The flags of a run that every shard of it shares (`summary.json`).
#[derive(Debug, Clone)]
pub struct RunFlags<'a> {
    /// Base URL as given.
    pub url: &'a str,
    /// Model name.
    pub model: &'a str,
    /// API as given.
    pub api: &'a str,
    /// Streamed responses.
    pub stream: bool,
    /// Seed of plans and arrivals.
    pub seed: u64,
    /// SLOs for goodput.
    pub slo: &'a Slo,
}

/// `summary.json` of a `bench serve` run and what `bench serve --json` prints: the run's
/// settings and one summary per point; a shard's records which shard it is, a merge which
/// directories it merged, an MLPerf run its scenario's result.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ServeOutput<'a> {
    /// Base URL as given.
    pub url: &'a str,
    /// Model name.
    pub model: &'a str,
    /// API as given.
    pub api: &'a str,
    /// Streamed responses.
    pub stream: bool,
    /// Seed of plans and arrivals.
    pub seed: u64,
    /// SLOs for goodput.
    pub slo: &'a Slo,
    /// `--shard i/N` of this run, when N > 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardOf>,
    /// The shard directories a `--merge` read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
    /// One summary per point, in plan order.
    pub points: Vec<&'a PointSummary>,
    /// The MLPerf scenario's result (`--mlperf`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mlperf: Option<&'a [crate::MlperfResult]>,
}

/// Which shard of how many.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
pub struct ShardOf {
    /// 0-based shard index.
    pub index: u64,
    /// Shards in the run.
    pub count: u64,
}

/// The `summary.json` document of a run ([`ServeOutput`]); `shard` `(i, N)` is recorded when
/// `N > 1`.
pub fn summary_doc(flags: &RunFlags<'_>, shard: (u64, u64), points: &[PointResult]) -> Value {
    serde_json::to_value(ServeOutput {
        url: flags.url,
        model: flags.model,
        api: flags.api,
        stream: flags.stream,
        seed: flags.seed,
        slo: flags.slo,
        shard: (shard.1 > 1).then_some(ShardOf {
            index: shard.0,
            count: shard.1,
        }),
        merged_from: None,
        points: points.iter().map(|r| &r.summary).collect(),
        mlperf: None,
    })
    .expect("a summary serializes")
}

/// Writes `requests.jsonl`, `requests.parquet` (through `format`), `histograms.json` and
/// `summary.json` (`doc`) into `dir`, which must exist. `hist` holds one entry per point.
pub fn write_dir(
    dir: &Path,
    doc: &Value,
    results: &[PointResult],
    hist: &[PointHistograms],
    format: &dyn RecordsFormat,
) -> Result<(), ShardFileError> {
    let write = |path: &Path, bytes: &[u8]| {
        fs::write(path, bytes).map_err(|source| ShardFileError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    let path = dir.join(REQUESTS_JSONL);
    let f = fs::File::create(&path).map_err(|source| ShardFileError::Write {
        path: path.clone(),
        source,
    })?;
    let mut w = BufWriter::new(f);
    for (k, r) in results.iter().enumerate() {
        for rec in &r.records {
            let mut v = rec.to_json();
            if let Some(o) = v.as_object_mut() {
                o.insert("point".into(), k.into());
                o.insert("scenario".into(), r.summary.scenario.clone().into());
                o.insert("load_mode".into(), r.summary.load.mode.to_string().into());
                o.insert("load_value".into(), r.summary.load.value.into());
            }
            serde_json::to_writer(&mut w, &v)?;
            w.write_all(b"\n")?;
        }
    }
    w.flush()?;
    // The same records as Parquet (one row per request, inter-token gaps as a list column),
    // the format `yardstick run` stores.
    let bytes = format.encode(results).map_err(ShardFileError::Encode)?;
    write(&dir.join(REQUESTS_PARQUET), &bytes)?;
    // HDR histograms per point (nanoseconds, lossless buckets): they add across shards.
    let points: Vec<Value> = results
        .iter()
        .zip(hist)
        .map(|(r, h)| {
            let mut v = h.to_json();
            v["scenario"] = r.summary.scenario.clone().into();
            v["load"] = serde_json::to_value(&r.summary.load).unwrap_or_default();
            v
        })
        .collect();
    let mut s = serde_json::to_string(&serde_json::json!({ "points": points }))?;
    s.push('\n');
    write(&dir.join(HISTOGRAMS), s.as_bytes())?;
    let mut s = serde_json::to_string_pretty(doc)?;
    s.push('\n');
    write(&dir.join(SUMMARY), s.as_bytes())
}

fn read_json(path: &Path) -> Result<Value, ShardFileError> {
    let text = fs::read_to_string(path).map_err(|error| ShardFileError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    serde_json::from_str(&text).map_err(|error| ShardFileError::NotJson {
        path: path.to_path_buf(),
        error,
    })
}

/// One output directory, read back.
#[derive(Debug, Clone)]
pub struct ShardDir {
    /// `summary.json`.
    pub doc: Value,
    /// `(i, N)` of its `--shard i/N`; `(0, 1)` when it was not sharded.
    pub shard: (u64, u64),
    /// Its records, by point.
    pub records: Vec<Vec<RequestRecord>>,
    /// Its histograms by point, when it has `histograms.json`.
    pub histograms: Option<Vec<PointHistograms>>,
}

/// Reads an output directory: `summary.json`, `requests.parquet` (through `format`) and, when
/// present, `histograms.json`.
pub fn read_dir(dir: &Path, format: &dyn RecordsFormat) -> Result<ShardDir, ShardFileError> {
    let doc = read_json(&dir.join(SUMMARY))?;
    let bad = |message: String| ShardFileError::Malformed {
        dir: dir.to_path_buf(),
        message,
    };
    let shard = match doc.get("shard") {
        Some(s) => (
            s["index"]
                .as_u64()
                .ok_or_else(|| bad("bad shard index".into()))?,
            s["count"]
                .as_u64()
                .ok_or_else(|| bad("bad shard count".into()))?,
        ),
        None => (0, 1),
    };
    let npoints = doc["points"].as_array().map_or(0, Vec::len);
    let bytes = fs::read(dir.join(REQUESTS_PARQUET))
        .map_err(|e| bad(format!("cannot read {REQUESTS_PARQUET}: {e}")))?;
    let recs = format
        .decode(bytes)
        .map_err(|e| bad(format!("{REQUESTS_PARQUET}: {e}")))?;
    let mut records = vec![Vec::new(); npoints];
    for (point, rec) in recs {
        let k = point.unwrap_or(u64::MAX) as usize;
        records
            .get_mut(k)
            .ok_or_else(|| bad(format!("a record of point {k}, which {SUMMARY} lacks")))?
            .push(rec);
    }
    let hpath = dir.join(HISTOGRAMS);
    let histograms = if hpath.exists() {
        let h = read_json(&hpath)?;
        let pts = h["points"].as_array().cloned().unwrap_or_default();
        if pts.len() != npoints {
            return Err(bad(format!("{HISTOGRAMS} and {SUMMARY} differ in points")));
        }
        Some(
            pts.iter()
                .map(PointHistograms::from_json)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(e.to_string()))?,
        )
    } else {
        None
    };
    Ok(ShardDir {
        doc,
        shard,
        records,
        histograms,
    })
}

/// A point's load level as `summary.json` records it.
fn load_level_of(v: &Value) -> Option<LoadLevel> {
    let mode = match v["mode"].as_str()? {
        "concurrency" => "concurrency",
        "rate" => "rate",
        "trace" => "trace",
        _ => return None,
    };
    Some(LoadLevel {
        mode: mode.into(),
        value: v["value"].as_f64()?,
        arrival: v["arrival"].as_str().map(str::to_owned),
    })
}

/// The flags every shard of one run shares.
const RUN_KEYS: [&str; 6] = ["url", "model", "api", "stream", "seed", "slo"];

/// N shards merged: the union of their records, summarized as one machine would.
#[derive(Debug)]
pub struct Merged {
    /// The merged `summary.json` (the first shard's flags, `merged_from`, the points).
    pub doc: Value,
    /// Per point: the recomputed summary and the union of the records.
    pub results: Vec<PointResult>,
    /// Per point: the shards' histograms added.
    pub histograms: Vec<PointHistograms>,
}

/// Reads the output directories of the N shards of one run and merges every point.
pub fn merge_dirs(dirs: &[PathBuf], format: &dyn RecordsFormat) -> Result<Merged, ShardFileError> {
    let shards: Vec<ShardDir> = dirs
        .iter()
        .map(|d| read_dir(d, format))
        .collect::<Result<_, _>>()?;
    let Some(first) = shards.first().map(|s| &s.doc) else {
        return Err(ShardFileError::NoShards);
    };
    for (s, dir) in shards.iter().zip(dirs).skip(1) {
        for key in RUN_KEYS {
            if s.doc[key] != first[key] {
                return Err(ShardFileError::NotOneRun {
                    dir: dir.clone(),
                    key,
                    value: s.doc[key].to_string(),
                    first_dir: dirs[0].clone(),
                    first_value: first[key].to_string(),
                });
            }
        }
    }
    // The objectives as the shards wrote them (models' own included).
    let slo: Slo = serde_json::from_value(first["slo"].clone()).unwrap_or_default();
    let npoints = first["points"].as_array().map_or(0, Vec::len);
    if let Some((_, dir)) = shards
        .iter()
        .zip(dirs)
        .find(|(s, _)| s.records.len() != npoints)
    {
        return Err(ShardFileError::Malformed {
            dir: dir.clone(),
            message: "a different number of points".into(),
        });
    }
    let mut results = Vec::new();
    let mut histograms = Vec::new();
    for k in 0..npoints {
        let mut parts = Vec::new();
        for (s, dir) in shards.iter().zip(dirs) {
            let p = &s.doc["points"][k];
            let load = load_level_of(&p["load"]).ok_or_else(|| ShardFileError::Malformed {
                dir: dir.clone(),
                message: format!("point {k} has no load"),
            })?;
            parts.push(ShardPart {
                shard: s.shard,
                scenario: p["scenario"].as_str().unwrap_or_default().to_string(),
                load,
                stop_reason: stop_reason_of(&p["stop_reason"]).map_err(
                    |message: StopReasonError| ShardFileError::Malformed {
                        dir: dir.clone(),
                        message: format!("point {k}: {message}"),
                    },
                )?,
                schedule_origin_ns: p["schedule_origin_ns"].as_u64(),
                records: s.records[k].clone(),
                histograms: s.histograms.as_ref().map(|h| h[k].clone()),
            });
        }
        let mut m =
            merge_point(parts, &slo).map_err(|error| ShardFileError::Merge { point: k, error })?;
        // Every shard scraped the same server over the same window: the merged point takes the
        // longest series (the shard that scraped most), with the merged client TTFT beside it.
        if let Some((readings, failures)) = shards
            .iter()
            .zip(dirs)
            .filter_map(|(s, dir)| {
                let r = format.server_series(dir, k)?;
                let failures = s.doc["points"][k][id::SERVER_SCRAPE_FAILURES]
                    .as_u64()
                    .unwrap_or(0);
                Some((r, failures))
            })
            .max_by_key(|(r, _)| r.len())
        {
            m.summary.server = Some(crate::scrape::ServerMetrics::of(
                &readings,
                failures,
                m.summary.ttft_ms.as_ref().map(|d| d.mean),
            ));
            m.summary.server_series = readings;
        }
        // A replayed trace describes the input every shard split: the first shard's says it.
        if let Some(t) = shards
            .first()
            .map(|s| &s.doc["points"][k]["trace"])
            .filter(|t| !t.is_null())
        {
            m.summary.trace = serde_json::from_value(t.clone()).ok();
        }
        histograms.push(m.histograms);
        results.push(PointResult {
            summary: m.summary,
            records: m.records,
        });
    }
    // The shards agree on these (checked above): the merged run's settings are theirs.
    let doc = serde_json::to_value(ServeOutput {
        url: first["url"].as_str().unwrap_or_default(),
        model: first["model"].as_str().unwrap_or_default(),
        api: first["api"].as_str().unwrap_or_default(),
        stream: first["stream"].as_bool().unwrap_or_default(),
        seed: first["seed"].as_u64().unwrap_or_default(),
        slo: &slo,
        shard: None,
        merged_from: Some(dirs.iter().map(|d| d.display().to_string()).collect()),
        points: results.iter().map(|r| &r.summary).collect(),
        mlperf: None,
    })
    .expect("a summary serializes");
    Ok(Merged {
        doc,
        results,
        histograms,
    })
}

/// Why a point's `stop_reason` could not be read.
#[derive(Debug, thiserror::Error)]
enum StopReasonError {
    /// The point has none.
    #[error("no stop_reason")]
    Missing,
    /// The point has one that is not a stop reason.
    #[error(transparent)]
    Unknown(#[from] crate::summary::UnknownStopReason),
}

/// A point's `stop_reason` as a shard wrote it.
fn stop_reason_of(v: &Value) -> Result<StopReason, StopReasonError> {
    let s = v.as_str().ok_or(StopReasonError::Missing)?;
    Ok(s.parse()?)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::record::TokenSource;
    use crate::summary::summarize;
    use yardstick_error::UserFacing;

    /// Records kept in memory; the "file" holds the key.
    #[derive(Default)]
    struct MemRecords(Mutex<Vec<PointRecords>>);

    impl RecordsFormat for MemRecords {
        fn encode(&self, points: &[PointResult]) -> Result<Vec<u8>, RecordsFormatError> {
            let mut all = self.0.lock().unwrap();
            all.push(
                points
                    .iter()
                    .enumerate()
                    .flat_map(|(k, p)| p.records.iter().map(move |r| (Some(k as u64), r.clone())))
                    .collect(),
            );
            Ok((all.len() - 1).to_string().into_bytes())
        }
        fn decode(&self, bytes: Vec<u8>) -> Result<PointRecords, RecordsFormatError> {
            let k: usize = String::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or("not a key")?;
            Ok(self.0.lock().unwrap()[k].clone())
        }
    }

    fn rec(i: u64) -> RequestRecord {
        let ms = 1_000_000;
        let mut r = RequestRecord::new(i, format!("r{i}"), false, 4, Some(2), i * ms);
        r.sent_ns = Some(i * ms + 1000);
        r.content_event_ns = vec![i * ms + (5 + i % 7) * ms, i * ms + (9 + i % 5) * ms];
        r.first_content_ns = r.content_event_ns.first().copied();
        r.last_content_ns = r.content_event_ns.last().copied();
        r.done_ns = r.last_content_ns;
        r.content_events = 2;
        r.output_tokens = Some(2);
        r.output_tokens_source = Some(TokenSource::ServerUsage);
        r
    }

    fn level() -> LoadLevel {
        LoadLevel {
            mode: "concurrency".into(),
            value: 3.0,
            arrival: None,
        }
    }

    /// Writes shard `i` of `n` of two points over `all` into `root/s<i>`.
    fn write_shard(
        root: &Path,
        fmt: &MemRecords,
        all: &[RequestRecord],
        (i, n): (u64, u64),
        seed: u64,
    ) -> PathBuf {
        let slo = Slo::default();
        let results: Vec<PointResult> = ["D(4,2)", "D(8,2)"]
            .iter()
            .map(|sc| {
                let records: Vec<RequestRecord> =
                    all.iter().filter(|r| r.index % n == i).cloned().collect();
                let mut summary = summarize(sc, level(), &records, &slo, StopReason::MaxRequests);
                summary.schedule_origin_ns = Some(i);
                PointResult { summary, records }
            })
            .collect();
        let flags = RunFlags {
            url: "http://127.0.0.1:9",
            model: "m",
            api: "chat",
            stream: true,
            seed,
            slo: &slo,
        };
        let doc = summary_doc(&flags, (i, n), &results);
        let hist: Vec<PointHistograms> = results
            .iter()
            .map(|r| PointHistograms::of(&r.records))
            .collect();
        let dir = root.join(format!("s{i}"));
        create_output_dir(&dir).unwrap();
        write_dir(&dir, &doc, &results, &hist, fmt).unwrap();
        dir
    }

    #[test]
    fn written_directories_read_back() {
        let root = tempfile::tempdir().unwrap();
        let fmt = MemRecords::default();
        let all: Vec<RequestRecord> = (0..12).map(rec).collect();
        let dir = write_shard(root.path(), &fmt, &all, (1, 3), 0);
        let back = read_dir(&dir, &fmt).unwrap();
        assert_eq!(back.shard, (1, 3));
        assert_eq!(
            back.doc["shard"],
            serde_json::json!({"index": 1, "count": 3})
        );
        assert_eq!(back.records.len(), 2);
        assert_eq!(
            back.records[1].iter().map(|r| r.index).collect::<Vec<_>>(),
            [1, 4, 7, 10]
        );
        let h = back.histograms.unwrap();
        assert_eq!(h[0], PointHistograms::of(&back.records[0]));
        let lines = fs::read_to_string(dir.join(REQUESTS_JSONL)).unwrap();
        assert_eq!(lines.lines().count(), 8);
        let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(first["point"], 0);
        assert_eq!(first["load_mode"], "concurrency");
        // Unsharded runs record no shard and read back as 0/1.
        let slo = Slo::default();
        let flags = RunFlags {
            url: "u",
            model: "m",
            api: "chat",
            stream: false,
            seed: 1,
            slo: &slo,
        };
        assert!(summary_doc(&flags, (0, 1), &[]).get("shard").is_none());
    }

    #[test]
    fn shard_directories_merge_into_the_whole() {
        let root = tempfile::tempdir().unwrap();
        let fmt = MemRecords::default();
        let all: Vec<RequestRecord> = (0..30).map(rec).collect();
        let dirs: Vec<PathBuf> = (0..3)
            .map(|i| write_shard(root.path(), &fmt, &all, (i, 3), 0))
            .collect();
        let m = merge_dirs(&dirs, &fmt).unwrap();
        assert_eq!(m.results.len(), 2);
        let whole = summarize(
            "D(8,2)",
            level(),
            &all,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        let mut got = serde_json::to_value(&m.results[1].summary).unwrap();
        assert_eq!(got["schedule_origin_ns"], 0);
        got.as_object_mut().unwrap().remove("schedule_origin_ns");
        let mut want = serde_json::to_value(&whole).unwrap();
        want.as_object_mut().unwrap().remove("schedule_origin_ns");
        assert_eq!(got, want);
        assert_eq!(m.histograms[0], PointHistograms::of(&all));
        assert_eq!(m.doc["merged_from"].as_array().unwrap().len(), 3);
        assert_eq!(m.doc["points"].as_array().unwrap().len(), 2);
        assert!(m.doc.get("shard").is_none());
    }

    #[test]
    fn merging_refuses_what_is_not_one_run() {
        let root = tempfile::tempdir().unwrap();
        let fmt = MemRecords::default();
        let all: Vec<RequestRecord> = (0..9).map(rec).collect();
        let a = write_shard(root.path(), &fmt, &all, (0, 2), 0);
        let other = tempfile::tempdir().unwrap();
        let b = write_shard(other.path(), &fmt, &all, (1, 2), 7);
        let e = merge_dirs(&[a.clone(), b.clone()], &fmt).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: seed is 7, but {} has 0", b.display(), a.display())
        );
        assert!(e.is_invalid_input());
        assert_eq!(e.hint().as_deref(), Some(SAME_RUN_HINT));
        // A missing shard.
        let e = merge_dirs(std::slice::from_ref(&a), &fmt).unwrap_err();
        assert_eq!(e.to_string(), "point 0: cannot merge: shards missing: 1/2");
        // Not an output directory.
        let e = merge_dirs(&[root.path().to_path_buf()], &fmt).unwrap_err();
        assert!(e.to_string().starts_with("cannot read "), "{e}");
        assert!(e.is_invalid_input() && e.hint().is_none());
        assert!(matches!(
            merge_dirs(&[], &fmt).unwrap_err(),
            ShardFileError::NoShards
        ));
        // Histograms that do not match the summary's points.
        fs::write(a.join(HISTOGRAMS), r#"{"points": []}"#).unwrap();
        let e = read_dir(&a, &fmt).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: histograms.json and summary.json differ in points",
                a.display()
            )
        );
        // A record of a point the summary lacks.
        fs::remove_file(a.join(HISTOGRAMS)).unwrap();
        let mut doc: Value =
            serde_json::from_str(&fs::read_to_string(a.join(SUMMARY)).unwrap()).unwrap();
        doc["points"].as_array_mut().unwrap().pop();
        fs::write(a.join(SUMMARY), doc.to_string()).unwrap();
        let e = read_dir(&a, &fmt).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("a record of point 1, which summary.json lacks"),
            "{e}"
        );
        // A write failure is not the user's input.
        let e = create_output_dir(&a.join(SUMMARY).join("x")).unwrap_err();
        assert!(!e.is_invalid_input());
    }

    #[test]
    fn load_levels_read_back() {
        assert!(load_level_of(&serde_json::json!({"mode": "bogus", "value": 1})).is_none());
        assert!(load_level_of(&serde_json::json!({"mode": "rate"})).is_none());
        assert_eq!(
            load_level_of(&serde_json::json!({"mode": "rate", "value": 2.5, "arrival": "gamma"})),
            Some(LoadLevel {
                mode: "rate".into(),
                value: 2.5,
                arrival: Some("gamma".into()),
            })
        );
    }
}
