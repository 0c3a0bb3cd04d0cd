//! Columnar export: the warehouse's facts as Hive-partitioned Parquet that DuckDB, Spark, Trino
//! or ClickHouse read as they are:
//!
//! ```text
//! <out>/facts/profile=<machine profile>/date=<YYYY-MM-DD>/part-0.parquet
//! ```
//!
//! One row per fact, denormalised with its run and point (benchmark name, status, mode, spec
//! hash, start time, layer, kind, params as JSON text). `profile` and `date` (the run's UTC start
//! date) live only in the path, as Hive expects. A run without a machine profile goes to
//! `profile=__HIVE_DEFAULT_PARTITION__` (Hive's and Spark's spelling of NULL). Partition values
//! are escaped like Hive does (`%2F` for `/`, `%3D` for `=`, …).
//!
//! Files are written with the low-level `SerializedFileWriter` of the `parquet` crate (through
//! [`crate::samples::Table`]), zstd-compressed, without Arrow. Each export is a complete
//! snapshot: it is written beside the old `facts/` and swapped in, so readers never see half an
//! export and partitions of facts that no longer exist do not linger.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::StoreError;
use crate::fsutil::write_atomic;
use crate::samples::{Column, Table};
use crate::warehouse::{RunFilter, RunRow, Warehouse};

/// The directory under the export root holding the fact partitions.
pub const FACTS_DIR: &str = "facts";
/// Value of the `yardstick.schema` key in every file's metadata.
pub const FACTS_SCHEMA: &str = "yardstick.facts/v1";
/// Partition value of a run without a machine profile.
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// One file written.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExportedFile {
    /// Path relative to the export root, `/`-separated.
    pub path: String,
    /// Machine profile (`None` for the NULL partition).
    pub profile: Option<String>,
    /// UTC date, `YYYY-MM-DD`.
    pub date: String,
    /// Runs in the partition.
    pub runs: usize,
    /// Fact rows in the file.
    pub rows: usize,
    /// File size in bytes.
    pub bytes: u64,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExportReport {
    /// The export root.
    pub out_dir: PathBuf,
    /// Every file, by partition.
    pub files: Vec<ExportedFile>,
    /// Runs exported.
    pub runs: usize,
    /// Fact rows exported.
    pub facts: usize,
}

/// Escapes a Hive partition value (the characters Hive's `FileUtils.escapePathName` escapes).
pub fn escape_partition_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        let escape = c.is_control()
            || matches!(
                c,
                '"' | '#' | '%' | '\'' | '*' | '/' | ':' | '=' | '?' | '\\' | '{' | '[' | ']' | '^'
            );
        if escape {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes every fact of `warehouse` under `out_dir/facts/`, one Parquet file per (machine
/// profile, UTC date) partition, replacing a previous export there.
pub fn export_parquet(
    warehouse: &mut dyn Warehouse,
    out_dir: &Path,
) -> Result<ExportReport, StoreError> {
    let runs = warehouse.runs(&RunFilter::default())?;
    let mut partitions: BTreeMap<(Option<String>, String), Vec<RunRow>> = BTreeMap::new();
    for r in runs {
        let date = r.started_at.get(..10).unwrap_or("unknown").to_string();
        partitions
            .entry((r.machine_profile.clone(), date))
            .or_default()
            .push(r);
    }
    std::fs::create_dir_all(out_dir)?;
    let staging = out_dir.join(format!(".{FACTS_DIR}.tmp-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    let mut report = ExportReport {
        out_dir: out_dir.to_path_buf(),
        files: Vec::new(),
        runs: 0,
        facts: 0,
    };
    let result = (|| {
        for ((profile, date), mut runs) in partitions {
            runs.sort_by(|a, b| (&a.started_at, &a.run_id).cmp(&(&b.started_at, &b.run_id)));
            let table = partition_table(warehouse, &runs)?;
            let rows = table.rows();
            report.runs += runs.len();
            if rows == 0 {
                continue;
            }
            let pvalue = profile
                .as_deref()
                .map_or(NULL_PARTITION.to_string(), escape_partition_value);
            let rel = format!(
                "profile={pvalue}/date={}/part-0.parquet",
                escape_partition_value(&date)
            );
            let bytes = table.to_parquet(&[
                ("yardstick.schema", FACTS_SCHEMA),
                ("yardstick.tool_version", env!("CARGO_PKG_VERSION")),
            ])?;
            write_atomic(&staging.join(&rel), &bytes)?;
            report.facts += rows;
            report.files.push(ExportedFile {
                path: format!("{FACTS_DIR}/{rel}"),
                profile,
                date,
                runs: runs.len(),
                rows,
                bytes: bytes.len() as u64,
            });
        }
        Ok::<_, StoreError>(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    swap_in(out_dir, &staging)?;
    Ok(report)
}

/// Replaces `out_dir/facts` with the staging directory (created empty when nothing was written,
/// so an empty warehouse exports an empty `facts/`).
fn swap_in(out_dir: &Path, staging: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(staging)?;
    let target = out_dir.join(FACTS_DIR);
    if target.exists() {
        // Only a directory that looks like a previous export is replaced.
        for entry in std::fs::read_dir(&target)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if !name.starts_with("profile=") && !name.starts_with('.') {
                let _ = std::fs::remove_dir_all(staging);
                return Err(StoreError::Invalid(format!(
                    "{} holds `{name}`, which is not a yardstick export; choose another \
                     directory",
                    target.display()
                )));
            }
        }
        let old = out_dir.join(format!(".{FACTS_DIR}.old-{}", std::process::id()));
        std::fs::rename(&target, &old)?;
        std::fs::rename(staging, &target)?;
        std::fs::remove_dir_all(&old)?;
    } else {
        std::fs::rename(staging, &target)?;
    }
    crate::fsutil::sync_dir(out_dir)?;
    Ok(())
}

/// The facts of `runs` as one table.
fn partition_table(w: &mut dyn Warehouse, runs: &[RunRow]) -> Result<Table, StoreError> {
    let mut c = FactColumns::default();
    for r in runs {
        let points: BTreeMap<String, (String, String, String)> = w
            .points(&r.run_id)?
            .into_iter()
            .map(|p| (p.point_id, (p.layer, p.kind, p.params.to_string())))
            .collect();
        for f in w.facts(&r.run_id)? {
            let (layer, kind, params) = points.get(&f.point_id).cloned().unwrap_or_default();
            c.run_id.push(r.run_id.clone());
            c.benchmark.push(r.name.clone());
            c.run_status.push(r.status.to_string());
            c.mode.push(r.mode.clone());
            c.spec_sha256.push(r.spec_sha256.clone());
            c.started_at.push(r.started_at.clone());
            c.point_id.push(f.point_id);
            c.layer.push(layer);
            c.kind.push(kind);
            c.params.push(params);
            c.replicate.push(f.replicate.map(i64::from));
            c.metric.push(f.metric);
            c.statistic.push(f.statistic);
            c.value.push(f.value);
            c.ci_lo.push(f.ci_lo);
            c.ci_hi.push(f.ci_hi);
            c.unit.push(f.unit);
            c.n.push(i64::try_from(f.n).unwrap_or(i64::MAX));
            c.artifact.push(f.artifact);
            c.row_group.push(f.row_group.map(i64::from));
        }
    }
    Ok(Table::new()
        .with("run_id", Column::Str(c.run_id))
        .with("benchmark", Column::Str(c.benchmark))
        .with("run_status", Column::Str(c.run_status))
        .with("mode", Column::OptStr(c.mode))
        .with("spec_sha256", Column::Str(c.spec_sha256))
        .with("started_at", Column::Str(c.started_at))
        .with("point_id", Column::Str(c.point_id))
        .with("layer", Column::Str(c.layer))
        .with("kind", Column::Str(c.kind))
        .with("params", Column::Str(c.params))
        .with("replicate", Column::OptI64(c.replicate))
        .with("metric", Column::Str(c.metric))
        .with("statistic", Column::Str(c.statistic))
        .with("value", Column::F64(c.value))
        .with("ci_lo", Column::OptF64(c.ci_lo))
        .with("ci_hi", Column::OptF64(c.ci_hi))
        .with("unit", Column::Str(c.unit))
        .with("n", Column::I64(c.n))
        .with("artifact", Column::OptStr(c.artifact))
        .with("row_group", Column::OptI64(c.row_group)))
}

#[derive(Default)]
struct FactColumns {
    run_id: Vec<String>,
    benchmark: Vec<String>,
    run_status: Vec<String>,
    mode: Vec<Option<String>>,
    spec_sha256: Vec<String>,
    started_at: Vec<String>,
    point_id: Vec<String>,
    layer: Vec<String>,
    kind: Vec<String>,
    params: Vec<String>,
    replicate: Vec<Option<i64>>,
    metric: Vec<String>,
    statistic: Vec<String>,
    value: Vec<f64>,
    ci_lo: Vec<Option<f64>>,
    ci_hi: Vec<Option<f64>>,
    unit: Vec<String>,
    n: Vec<i64>,
    artifact: Vec<Option<String>>,
    row_group: Vec<Option<i64>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_escaped_like_hive() {
        assert_eq!(
            escape_partition_value("H100x8_drv580_cuda13.0_torch2.11_sm90"),
            "H100x8_drv580_cuda13.0_torch2.11_sm90"
        );
        assert_eq!(escape_partition_value("a/b=c%"), "a%2Fb%3Dc%25");
        assert_eq!(escape_partition_value("x\ny"), "x%0Ay");
    }
}
