//! `yardstick export --parquet DIR`: the warehouse's facts as a Hive-partitioned Parquet lake.

use std::path::PathBuf;

use crate::cli::GlobalOpts;
use crate::cmd::runs::{StoreOpt, print_table, store_error};
use crate::exit::Status;
use crate::output;

/// Export every fact to `DIR/facts/profile=<machine profile>/date=<YYYY-MM-DD>/part-0.parquet`
/// (zstd), readable as-is by DuckDB, Spark, Trino or ClickHouse. Each export replaces the
/// previous `DIR/facts` as a whole. Layout and columns: docs/warehouse.md.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  yardstick export --parquet lake/\n  \
duckdb -c \"SELECT profile, metric, median(value) FROM read_parquet('lake/facts/**/*.parquet', \
hive_partitioning = true) GROUP BY ALL\"")]
pub struct ExportArgs {
    /// Directory to write the Parquet lake into.
    #[arg(long, value_name = "DIR", required = true)]
    pub parquet: PathBuf,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick export`.
pub fn run(args: ExportArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let report =
        yardstick_store::export::export_parquet(w.as_mut(), &args.parquet).map_err(store_error)?;
    if g.json {
        output::json(&report)?;
        return Ok(Status::Ok);
    }
    let rows: Vec<Vec<String>> = report
        .files
        .iter()
        .map(|f| {
            vec![
                f.path.clone(),
                f.runs.to_string(),
                f.rows.to_string(),
                f.bytes.to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        print_table(&["FILE", "RUNS", "ROWS", "BYTES"], &rows)?;
    }
    output::info(&format!(
        "exported {} facts of {} runs into {} files under {}",
        report.facts,
        report.runs,
        report.files.len(),
        args.parquet
            .join(yardstick_store::export::FACTS_DIR)
            .display()
    ));
    Ok(Status::Ok)
}
