//! `yardstick schema`: the JSON Schema of BenchmarkRun, for editors and other tools.

use crate::cli::GlobalOpts;
use crate::exit::Status;

/// Print the JSON Schema (draft 2020-12) of the BenchmarkRun spec. Point an editor's YAML
/// language server at it for completion and inline checks.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  yardstick schema > benchmarkrun.schema.json")]
pub struct SchemaArgs {}

pub fn run(_args: SchemaArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    crate::output::json(&yardstick_spec::json_schema())?;
    Ok(Status::Ok)
}
