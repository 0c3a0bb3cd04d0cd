//! nccl-tests output (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
//! `alltoall_perf`, `broadcast_perf`, ...), as printed by NVIDIA/nccl-tests: `#` comment lines
//! with the settings and devices, a two-line column header, one row per message size with an
//! out-of-place and an in-place block of `time algbw busbw #wrong`, and `# Avg bus bandwidth`.
//!
//! Columns are located from the header, so both layouts are read: the current one
//! (`size count type redop root time algbw busbw #wrong ...`) and the older one without `root`
//! and with `error` instead of `#wrong`. `#wrong` of `N/A` (validation off, `-c 0`) is kept as
//! unknown. A non-zero `#wrong` or "Out of bounds values : N FAILED" makes the run a failure:
//! wrong collectives must not report a bandwidth.

use std::collections::BTreeMap;

use super::{IngestError, single};
use crate::micro::MicroResult;

const TOOL: &str = "nccl-tests";

/// One direction (out-of-place or in-place) of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perf {
    /// Time per operation, µs.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s.
    pub algbw: f64,
    /// Bus bandwidth, GB/s (comparable across collectives and rank counts).
    pub busbw: f64,
    /// Wrong elements; `None` when validation was off.
    pub wrong: Option<f64>,
}

/// One message size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Message size, bytes.
    pub size: u64,
    /// Elements.
    pub count: u64,
    /// Element type.
    pub dtype: String,
    /// Reduction (`sum`, `none`, ...), when the layout has it.
    pub redop: Option<String>,
    /// Out-of-place result.
    pub out_of_place: Perf,
    /// In-place result, when printed.
    pub in_place: Option<Perf>,
}

/// One nccl-tests run.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclRun {
    /// The collective, e.g. `all_reduce` (from `# Collective test starting:`), else `collective`.
    pub op: String,
    /// Settings from the first comment line (`nThread`, `nGpus`, `minBytes`, `iters`, ...).
    pub settings: BTreeMap<String, String>,
    /// Device lines (`#  Rank  0 Group  0 Pid ... device  0 [0x18] NVIDIA H100 80GB HBM3`).
    pub devices: Vec<String>,
    /// Rows in order of size.
    pub rows: Vec<Row>,
    /// `# Avg bus bandwidth`, GB/s.
    pub avg_busbw: Option<f64>,
}

fn num(tool_line: usize, s: &str) -> Result<f64, IngestError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(IngestError::BadLine {
            tool: TOOL,
            line: tool_line,
            reason: format!("`{s}` is not a finite number"),
        }),
    }
}

/// Parses nccl-tests output.
pub fn parse(text: &str) -> Result<NcclRun, IngestError> {
    match parse_checked(text)? {
        (run, None) => Ok(run),
        (_, Some(reason)) => Err(IngestError::FailedRun { tool: TOOL, reason }),
    }
}

/// Parses nccl-tests output whose collectives may have returned wrong data: the run as far as it
/// was printed, and the first sign of wrong data (a row's `#wrong` above 0, "Out of bounds
/// values : N FAILED") when there is one — what [`parse`] refuses as a failed run. Text that is
/// not nccl-tests output is an error.
pub fn parse_checked(text: &str) -> Result<(NcclRun, Option<String>), IngestError> {
    let mut run = NcclRun {
        op: "collective".into(),
        settings: BTreeMap::new(),
        devices: Vec::new(),
        rows: Vec::new(),
        avg_busbw: None,
    };
    let mut failed = None;
    let scanned = scan(text, &mut run, &mut failed);
    match (scanned, failed) {
        // Whatever follows wrong data, the wrong data is the answer.
        (_, Some(reason)) => Ok((run, Some(reason))),
        (Err(e), None) => Err(e),
        (Ok(()), None) => Ok((run, None)),
    }
}

/// Reads `text` into `run` up to its first error; the first sign of wrong data goes to `failed`.
fn scan(text: &str, run: &mut NcclRun, failed: &mut Option<String>) -> Result<(), IngestError> {
    let mut header: Option<Vec<String>> = None;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = line.trim();
        if let Some(comment) = t.strip_prefix('#') {
            let c = comment.trim();
            if let Some(op) = c.strip_prefix("Collective test starting:") {
                let op = op.trim();
                run.op = op.strip_suffix("_perf").unwrap_or(op).to_owned();
            } else if c.starts_with("nThread") {
                // `nThread 1 nGpus 8 ... step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1`:
                // words up to a value form its key (`warmup_iters`).
                let mut key: Vec<&str> = Vec::new();
                for tok in c.split_whitespace() {
                    if tok.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-') {
                        if !key.is_empty() {
                            run.settings.insert(key.join("_"), tok.to_owned());
                            key.clear();
                        }
                    } else {
                        key.push(tok.trim_end_matches(':'));
                    }
                }
            } else if c.starts_with("Rank") && c.contains("device") {
                run.devices.push(c.to_owned());
            } else if c.contains("size") && c.contains("count") && c.contains("busbw") {
                header = Some(c.split_whitespace().map(str::to_owned).collect());
            } else if let Some(v) = c.strip_prefix("Avg bus bandwidth") {
                let v = v.trim_start_matches([' ', ':']).trim();
                run.avg_busbw = Some(num(lineno, v)?);
            } else if c.starts_with("Out of bounds values") && c.contains("FAILED") {
                failed.get_or_insert_with(|| c.to_owned());
            }
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        if toks.is_empty() || !toks[0].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Some(h) = &header else {
            return Err(IngestError::BadLine {
                tool: TOOL,
                line: lineno,
                reason: "a result row before the column header".into(),
            });
        };
        let col = |name: &str| h.iter().position(|x| x == name);
        let (Some(size_i), Some(count_i), Some(type_i), Some(time_i)) =
            (col("size"), col("count"), col("type"), col("time"))
        else {
            return Err(IngestError::NotRecognised {
                tool: TOOL,
                reason: format!("column header without size/count/type/time: {h:?}"),
            });
        };
        // Every column read unconditionally must be there (the header may put `size`, `count`
        // or `type` after `time`).
        let need = (time_i + 3).max(size_i.max(count_i).max(type_i) + 1);
        if toks.len() < need {
            return Err(IngestError::BadLine {
                tool: TOOL,
                line: lineno,
                reason: format!("{} columns, expected at least {need}", toks.len()),
            });
        }
        let wrong = |s: Option<&&str>| -> Result<Option<f64>, IngestError> {
            match s {
                None => Ok(None),
                Some(&"N/A") => Ok(None),
                Some(v) => num(lineno, v).map(Some),
            }
        };
        let block = |at: usize| -> Result<Perf, IngestError> {
            Ok(Perf {
                time_us: num(lineno, toks[at])?,
                algbw: num(lineno, toks[at + 1])?,
                busbw: num(lineno, toks[at + 2])?,
                wrong: wrong(toks.get(at + 3))?,
            })
        };
        let out_of_place = block(time_i)?;
        let in_place = if toks.len() >= time_i + 7 {
            Some(block(time_i + 4)?)
        } else {
            None
        };
        for p in std::iter::once(&out_of_place).chain(in_place.as_ref()) {
            if let Some(w) = p.wrong.filter(|w| *w > 0.0) {
                failed.get_or_insert_with(|| format!("line {lineno}: {w} wrong elements"));
            }
        }
        run.rows.push(Row {
            size: num(lineno, toks[size_i])? as u64,
            count: num(lineno, toks[count_i])? as u64,
            dtype: toks[type_i].to_owned(),
            redop: col("redop")
                .and_then(|r| toks.get(r))
                .map(|s| (*s).to_owned()),
            out_of_place,
            in_place,
        });
    }
    if run.rows.is_empty() {
        return Err(IngestError::NotRecognised {
            tool: TOOL,
            reason: "no result rows".into(),
        });
    }
    Ok(())
}

impl NcclRun {
    /// Results: `nccl.<op>.busbw.<size>` and `nccl.<op>.algbw.<size>` (out-of-place, GB/s),
    /// `nccl.<op>.time_us.<size>`, and `nccl.<op>.busbw.avg` when printed.
    pub fn results(&self) -> Vec<MicroResult> {
        let mut out = Vec::new();
        let base = |size: u64| {
            let mut p = BTreeMap::new();
            p.insert("source".to_owned(), "nccl-tests".into());
            p.insert("op".to_owned(), self.op.clone().into());
            p.insert("size_bytes".to_owned(), size.into());
            for key in ["nGpus", "nThread", "iters"] {
                if let Some(v) = self.settings.get(key) {
                    p.insert(key.to_owned(), v.clone().into());
                }
            }
            p.insert("ranks".to_owned(), self.devices.len().into());
            p
        };
        for r in &self.rows {
            let op = &self.op;
            let p = &r.out_of_place;
            out.push(single(
                format!("nccl.{op}.busbw.{}", r.size),
                p.busbw,
                "GB/s",
                true,
                base(r.size),
            ));
            out.push(single(
                format!("nccl.{op}.algbw.{}", r.size),
                p.algbw,
                "GB/s",
                true,
                base(r.size),
            ));
            out.push(single(
                format!("nccl.{op}.time_us.{}", r.size),
                p.time_us,
                "us",
                false,
                base(r.size),
            ));
        }
        if let Some(avg) = self.avg_busbw {
            let mut p = base(0);
            p.remove("size_bytes");
            out.push(single(
                format!("nccl.{}.busbw.avg", self.op),
                avg,
                "GB/s",
                true,
                p,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the importer property test: a header with `size` after `time` and a row with
    /// only the time columns indexed past the row (a panic).
    #[test]
    fn a_row_shorter_than_a_reordered_header_is_a_bad_line() {
        let e = parse("# time algbw busbw size count type\n1 2 3\n").unwrap_err();
        assert!(matches!(e, IngestError::BadLine { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("expected at least 6"), "{e}");
    }

    /// Found by the importer property test: `inf`/`nan` bandwidths were imported as figures.
    #[test]
    fn non_finite_figures_are_bad_lines() {
        for v in ["inf", "nan", "-inf", "1e999"] {
            let text = format!("# size count type time algbw busbw\n8 2 float 1.0 {v} 1.0\n");
            let e = parse(&text).unwrap_err();
            assert!(
                matches!(e, IngestError::BadLine { line: 2, .. }),
                "{v}: {e}"
            );
            assert!(e.to_string().contains("not a finite number"), "{e}");
        }
    }
}
