//! fio `--output-format=json` (fio 3.x): per job and direction (`read`, `write`, `trim`) with
//! I/O, bandwidth (`bw_bytes`), IOPS and completion latency percentiles (`clat_ns`, or `clat`
//! in µs from fio 2.x).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{IngestError, single};
use crate::micro::MicroResult;

const TOOL: &str = "fio";

/// One direction of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct FioDirection {
    /// Job name.
    pub job: String,
    /// `read`, `write` or `trim`.
    pub direction: String,
    /// The job's `rw` option (`read`, `randread`, `write`, `randwrite`, `randrw`, ...).
    pub rw: Option<String>,
    /// Block size option, as given (`4k`, `1M`).
    pub bs: Option<String>,
    /// Queue depth option.
    pub iodepth: Option<String>,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// I/O operations per second.
    pub iops: f64,
    /// Completion latency p50, µs.
    pub clat_p50_us: Option<f64>,
    /// Completion latency p99, µs.
    pub clat_p99_us: Option<f64>,
    /// Completion latency mean, µs.
    pub clat_mean_us: Option<f64>,
}

/// One fio run.
#[derive(Debug, Clone, PartialEq)]
pub struct FioRun {
    /// `fio version`.
    pub version: String,
    /// Directions with I/O, in job order.
    pub directions: Vec<FioDirection>,
}

fn opt(job: &Value, global: &Value, key: &str) -> Option<String> {
    job["job options"][key]
        .as_str()
        .or_else(|| global[key].as_str())
        .map(str::to_owned)
}

fn percentile(clat: &Value, q: &str) -> Option<f64> {
    clat["percentile"][q].as_f64()
}

/// Parses fio JSON output. Text before the JSON object (fio prints warnings there) is skipped.
pub fn parse(text: &str) -> Result<FioRun, IngestError> {
    let start = text.find('{').ok_or_else(|| IngestError::NotRecognised {
        tool: TOOL,
        reason: "no JSON object".into(),
    })?;
    let v: Value = serde_json::from_str(&text[start..])?;
    let version = v["fio version"]
        .as_str()
        .ok_or_else(|| IngestError::NotRecognised {
            tool: TOOL,
            reason: "no \"fio version\" field".into(),
        })?
        .to_owned();
    let jobs = v["jobs"]
        .as_array()
        .ok_or_else(|| IngestError::NotRecognised {
            tool: TOOL,
            reason: "no \"jobs\" array".into(),
        })?;
    let global = &v["global options"];
    let mut run = FioRun {
        version,
        directions: Vec::new(),
    };
    for job in jobs {
        let name = job["jobname"].as_str().unwrap_or("job").to_owned();
        if let Some(err) = job["error"].as_i64().filter(|e| *e != 0) {
            return Err(IngestError::FailedRun {
                tool: TOOL,
                reason: format!("job {name} ended with error {err}"),
            });
        }
        for dir in ["read", "write", "trim"] {
            let d = &job[dir];
            let io = d["io_bytes"].as_f64().unwrap_or(0.0);
            if io <= 0.0 {
                continue;
            }
            // fio 3.x: clat_ns in ns; fio 2.x: clat in µs.
            let (clat, scale) = if d["clat_ns"].is_object() {
                (&d["clat_ns"], 1e-3)
            } else {
                (&d["clat"], 1.0)
            };
            let bw_bytes = d["bw_bytes"]
                .as_f64()
                .or_else(|| d["bw"].as_f64().map(|kib| kib * 1024.0))
                .unwrap_or(0.0);
            run.directions.push(FioDirection {
                job: name.clone(),
                direction: dir.to_owned(),
                rw: opt(job, global, "rw").or_else(|| opt(job, global, "readwrite")),
                bs: opt(job, global, "bs"),
                iodepth: opt(job, global, "iodepth"),
                bw_bytes,
                iops: d["iops"].as_f64().unwrap_or(0.0),
                clat_p50_us: percentile(clat, "50.000000").map(|x| x * scale),
                clat_p99_us: percentile(clat, "99.000000").map(|x| x * scale),
                clat_mean_us: clat["mean"].as_f64().map(|x| x * scale),
            });
        }
    }
    if run.directions.is_empty() {
        return Err(IngestError::NotRecognised {
            tool: TOOL,
            reason: "no job did any I/O".into(),
        });
    }
    // JSON numbers are finite, but `bw` (KiB/s) times 1024 or a `clat` scale can overflow.
    for d in &run.directions {
        let figures = [
            ("bw_bytes", Some(d.bw_bytes)),
            ("iops", Some(d.iops)),
            ("clat p50", d.clat_p50_us),
            ("clat p99", d.clat_p99_us),
            ("clat mean", d.clat_mean_us),
        ];
        if let Some((what, v)) = figures
            .iter()
            .find_map(|(w, v)| v.filter(|x| !x.is_finite()).map(|x| (w, x)))
        {
            return Err(IngestError::BadValue {
                tool: TOOL,
                reason: format!("job {} {}: {what} is {v}", d.job, d.direction),
            });
        }
    }
    Ok(run)
}

/// The yardstick storage result a fio job is comparable to, from its `rw` and direction.
pub fn comparable_to(rw: Option<&str>, direction: &str) -> Option<&'static str> {
    let random = rw.is_some_and(|r| r.starts_with("rand"));
    match (random, direction) {
        (false, "read") => Some("storage.seq_read"),
        (false, "write") => Some("storage.seq_write"),
        (true, "read") => Some("storage.rand_read"),
        (true, "write") => Some("storage.rand_write"),
        _ => None,
    }
}

impl FioRun {
    /// Results per job and direction: `fio.<job>.<dir>` (MB/s), `.iops`, `.clat_p50_us`,
    /// `.clat_p99_us`; `params.comparable_to` names our storage result of the same access
    /// pattern.
    pub fn results(&self) -> Vec<MicroResult> {
        let mut out = Vec::new();
        for d in &self.directions {
            let mut p = BTreeMap::new();
            p.insert("source".to_owned(), format!("fio {}", self.version).into());
            for (k, v) in [("rw", &d.rw), ("bs", &d.bs), ("iodepth", &d.iodepth)] {
                if let Some(v) = v {
                    p.insert(k.to_owned(), v.clone().into());
                }
            }
            if let Some(c) = comparable_to(d.rw.as_deref(), &d.direction) {
                p.insert("comparable_to".to_owned(), c.into());
            }
            let base = format!("fio.{}.{}", d.job, d.direction);
            out.push(single(
                base.clone(),
                d.bw_bytes / 1e6,
                "MB/s",
                true,
                p.clone(),
            ));
            out.push(single(
                format!("{base}.iops"),
                d.iops,
                "IOPS",
                true,
                p.clone(),
            ));
            if let Some(v) = d.clat_p50_us {
                out.push(single(
                    format!("{base}.clat_p50_us"),
                    v,
                    "us",
                    false,
                    p.clone(),
                ));
            }
            if let Some(v) = d.clat_p99_us {
                out.push(single(
                    format!("{base}.clat_p99_us"),
                    v,
                    "us",
                    false,
                    p.clone(),
                ));
            }
        }
        // Under our own storage names too (MB/s, as `bench micro storage` reports), when
        // exactly one job and direction has that access pattern: two sequential-read jobs with
        // different block sizes are not one figure.
        for name in [
            "storage.seq_read",
            "storage.seq_write",
            "storage.rand_read",
            "storage.rand_write",
        ] {
            let matching: Vec<&FioDirection> = self
                .directions
                .iter()
                .filter(|d| comparable_to(d.rw.as_deref(), &d.direction) == Some(name))
                .collect();
            if let [d] = matching.as_slice() {
                let mut p = BTreeMap::new();
                p.insert("source".to_owned(), format!("fio {}", self.version).into());
                p.insert("job".to_owned(), d.job.clone().into());
                for (k, v) in [("rw", &d.rw), ("bs", &d.bs), ("iodepth", &d.iodepth)] {
                    if let Some(v) = v {
                        p.insert(k.to_owned(), v.clone().into());
                    }
                }
                out.push(single(
                    name.to_owned(),
                    d.bw_bytes / 1e6,
                    "MB/s",
                    true,
                    p.clone(),
                ));
                for (suffix, v) in [("p50_us", d.clat_p50_us), ("p99_us", d.clat_p99_us)] {
                    if let Some(v) = v {
                        out.push(single(
                            format!("{name}.{suffix}"),
                            v,
                            "us",
                            false,
                            p.clone(),
                        ));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the importer property test: `bw` in KiB/s near f64::MAX overflowed to an
    /// infinite bandwidth figure.
    #[test]
    fn an_overflowing_bandwidth_is_a_clear_error() {
        let text = r#"{"fio version": "fio-3.36", "jobs": [{"jobname": "j",
            "read": {"io_bytes": 1, "bw": 1e308, "iops": 1}}]}"#;
        let e = parse(text).unwrap_err();
        assert!(matches!(e, IngestError::BadValue { .. }), "{e}");
        assert!(e.to_string().contains("job j read: bw_bytes is inf"), "{e}");
    }
}
