//! `yardstick metrics`: the metric catalogue — every metric's unit, direction, gate class,
//! statistics and definition.

use std::io::Write;

use yardstick_spec::metrics::{CATALOGUE, MetricDef};

use crate::cli::GlobalOpts;
use crate::exit::Status;

/// List the metrics yardstick measures: id (a `<placeholder>` stands for a family, e.g.
/// `gemm.<dtype>.<n>`), unit, which way is better, gate class, the statistics stored, the one
/// the gate compares by default, and a one-sentence definition. Metrics not listed (a workload's
/// own keys) are reported with the unit their producer declares and never gated unless it
/// declares a direction.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick metrics\n  yardstick metrics ttft\n  \
                        yardstick --json metrics | jq '.[] | select(.gated != null) | .id'"
)]
pub struct MetricsArgs {
    /// Only metrics whose id contains this text.
    pub filter: Option<String>,
}

pub fn run(args: MetricsArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let rows: Vec<&MetricDef> = CATALOGUE
        .iter()
        .filter(|d| args.filter.as_deref().is_none_or(|f| d.id.contains(f)))
        .collect();
    if g.json {
        crate::output::json(&rows)?;
        return Ok(Status::Ok);
    }
    if rows.is_empty() {
        crate::output::warn("no metric matches; `yardstick metrics` lists them all");
        return Ok(Status::Ok);
    }
    let w = rows.iter().map(|d| d.id.len()).max().unwrap_or(6).max(6);
    let mut table = format!(
        "{:w$}  {:9}  {:7}  {:11}  {:5}  definition\n",
        "metric", "unit", "better", "class", "gated"
    );
    for d in rows {
        table += &format!(
            "{:w$}  {:9}  {:7}  {:11}  {:5}  {}\n",
            d.id,
            if d.unit.is_empty() { "-" } else { d.unit },
            d.direction.as_str(),
            d.class.as_str(),
            d.gated.unwrap_or("-"),
            d.definition
        );
    }
    // A closed pipe (`yardstick metrics | head`) is not an error.
    let _ = std::io::stdout().lock().write_all(table.as_bytes());
    Ok(Status::Ok)
}
