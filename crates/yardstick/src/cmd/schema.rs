//! `yardstick schema`: the JSON Schema of BenchmarkRun (for editors and other tools) and of the
//! `--json` outputs that have one (contracts for scripts that read them).

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};

/// Print a JSON Schema (draft 2020-12): by default the BenchmarkRun spec's — point an editor's
/// YAML language server at it for completion and inline checks — or, with --output NAME, the
/// schema of that command's `--json` output.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick schema > benchmarkrun.schema.json\n  \
yardstick schema --list\n  yardstick schema --output stats-compare > stats-compare.schema.json"
)]
pub struct SchemaArgs {
    /// The `--json` output whose schema to print (see --list); default: the BenchmarkRun spec.
    #[arg(long, value_name = "NAME")]
    pub output: Option<String>,
    /// List the outputs that have a schema.
    #[arg(long, conflicts_with = "output")]
    pub list: bool,
}

/// An output with a schema: its name, the command whose `--json` it describes, the schema.
type Output = (&'static str, &'static str, fn() -> serde_json::Value);

fn value(schema: schemars::Schema) -> serde_json::Value {
    serde_json::to_value(schema).unwrap_or_default()
}

/// Every output with a schema, in the order `--list` shows them.
pub fn outputs() -> Vec<Output> {
    vec![
        (
            "benchmark-run",
            "a BenchmarkRun spec (the default)",
            yardstick_spec::json_schema,
        ),
        ("run", "yardstick run SPEC --json", || {
            value(schemars::schema_for!(yardstick_run::RunOutcome))
        }),
        ("env", "yardstick env --json", || {
            value(schemars::schema_for!(yardstick_env::Capture))
        }),
        ("metrics", "yardstick metrics --json", || {
            value(schemars::schema_for!(
                Vec<yardstick_spec::metrics::MetricDef>
            ))
        }),
        (
            "stats-summarize",
            "yardstick stats summarize --json",
            || value(schemars::schema_for!(super::stats::SummaryOut<'static>)),
        ),
        ("stats-compare", "yardstick stats compare --json", || {
            value(schemars::schema_for!(super::stats::ComparisonOut<'static>))
        }),
        ("compare", "yardstick compare A B --json", || {
            value(schemars::schema_for!(yardstick_gate::Comparison))
        }),
        ("validate", "yardstick validate SPEC... --json", || {
            value(schemars::schema_for!(yardstick_spec::ValidateOutput))
        }),
        ("verify", "yardstick verify RUN --json", || {
            value(schemars::schema_for!(yardstick_store::VerifyOutput))
        }),
        ("gate", "yardstick gate RUN --json", || {
            value(schemars::schema_for!(super::gate::GateOut<'static>))
        }),
    ]
}

pub fn run(args: SchemaArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let all = outputs();
    if args.list {
        if g.json {
            let names: Vec<serde_json::Value> = all
                .iter()
                .map(|(name, of, _)| serde_json::json!({"name": name, "describes": of}))
                .collect();
            crate::output::json(&names)?;
        } else {
            for (name, of, _) in &all {
                crate::output::outln!("{name:<16} {of}")?;
            }
        }
        return Ok(Status::Ok);
    }
    let name = args.output.as_deref().unwrap_or("benchmark-run");
    let Some((_, _, schema)) = all.iter().find(|(n, _, _)| *n == name) else {
        let names: Vec<&str> = all.iter().map(|(n, _, _)| *n).collect();
        return Err(exit::invalid(
            format!("no schema for output `{name}`"),
            Some(&format!("one of: {}", names.join(", "))),
        ));
    };
    crate::output::json(&schema())?;
    Ok(Status::Ok)
}
