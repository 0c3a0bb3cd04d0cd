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

/// The schema of what `T` serializes to (the serialize contract: a field skipped when empty is
/// optional; an input schema would require it).
fn output<T: schemars::JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.contract = schemars::generate::Contract::Serialize)
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
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
            output::<super::run::RunOut>()
        }),
        ("env", "yardstick env --json", || {
            output::<yardstick_env::Capture>()
        }),
        ("metrics", "yardstick metrics --json", || {
            output::<Vec<yardstick_spec::metrics::MetricDef>>()
        }),
        (
            "nodes-check",
            "yardstick nodes check FILE... --json",
            || output::<yardstick_analysis::nodes::NodesReport>(),
        ),
        (
            "stats-summarize",
            "yardstick stats summarize --json",
            || output::<super::stats::SummaryOut<'static>>(),
        ),
        ("stats-compare", "yardstick stats compare --json", || {
            output::<super::stats::ComparisonOut<'static>>()
        }),
        ("compare", "yardstick compare A B --json", || {
            output::<yardstick_gate::Comparison>()
        }),
        ("validate", "yardstick validate SPEC... --json", || {
            output::<yardstick_spec::ValidateOutput>()
        }),
        ("verify", "yardstick verify RUN --json", || {
            output::<yardstick_store::VerifyOutput>()
        }),
        (
            "bench-serve",
            "yardstick bench serve --json (and its summary.json)",
            || output::<yardstick_load::shard_files::ServeOutput<'static>>(),
        ),
        (
            "bench-serve-capacity",
            "yardstick bench serve --find-capacity --json (and its capacity.json)",
            || output::<yardstick_load::capacity::CapacityOutput>(),
        ),
        ("bench-exec", "yardstick bench exec --json", || {
            output::<yardstick_exec::command::ExecOutput<'static>>()
        }),
        #[cfg(feature = "train")]
        ("bench-train", "yardstick bench train --json", || {
            output::<super::bench::train::TrainOutput<'static>>()
        }),
        ("bench-micro", "yardstick bench micro --json", || {
            output::<super::bench::micro::MicroOutput<'static>>()
        }),
        ("bench-eval", "yardstick bench eval --json", || {
            output::<yardstick_eval::EvalReport>()
        }),
        (
            "bench-eval-compare",
            "yardstick bench eval --compare A.json B.json --json",
            || output::<yardstick_gate::eval::EvalComparison>(),
        ),
        ("gc", "yardstick gc --json", || {
            output::<yardstick_store::gc::GcReport>()
        }),
        ("export", "yardstick export --json", || {
            output::<yardstick_store::export::ExportReport>()
        }),
        ("import", "yardstick import --json", || {
            output::<yardstick_run::import::ImportOutcome>()
        }),
        (
            "trust",
            "yardstick trust add|list|remove|require --json",
            || output::<super::trust::TrustOutput>(),
        ),
        ("keygen", "yardstick keygen PATH --json", || {
            output::<super::keygen::KeygenOutput<'static>>()
        }),
        ("init", "yardstick init --json", || {
            output::<super::init::InitOutput>()
        }),
        ("runs-list", "yardstick runs list --json", || {
            output::<super::runs::ListOut<'static>>()
        }),
        ("runs-show", "yardstick runs show RUN --json", || {
            output::<super::runs::ShowOut>()
        }),
        ("query", "yardstick query SQL --json", || {
            output::<yardstick_store::warehouse::QueryResult>()
        }),
        (
            "baseline",
            "yardstick baseline list|show|save|import|export --json",
            || output::<super::baseline::BaselineOutput<'static>>(),
        ),
        ("report", "yardstick report RUN --json", || {
            output::<super::report::JsonOut<'static>>()
        }),
        ("gate", "yardstick gate RUN --json", || {
            output::<super::gate::GateOut<'static>>()
        }),
        (
            "gate-calibrate",
            "yardstick gate RUN --baseline A --calibrate --json",
            || output::<yardstick_gate::calibrate::Calibration>(),
        ),
        ("env-compare", "yardstick env compare A B --json", || {
            output::<super::env::CompareOutput>()
        }),
        (
            "server-token-create",
            "yardstick server token create --json",
            || output::<super::server::TokenCreated>(),
        ),
        (
            "server-token-list",
            "yardstick server token list --json",
            || output::<Vec<yardstick_server::auth::TokenRecord>>(),
        ),
        ("push", "yardstick push RUN --to URL --json", || {
            output::<yardstick_server::client::PushOutput>()
        }),
        (
            "run-member",
            "yardstick run SPEC --shard I/N --json, process I > 0",
            || output::<yardstick_run::pods::MemberOutcome>(),
        ),
        ("k8s-render", "yardstick k8s render SPEC --json", || {
            output::<super::k8s::RenderOut>()
        }),
        #[cfg(feature = "kubernetes-client")]
        ("k8s-submit", "yardstick k8s submit SPEC --json", || {
            output::<yardstick_cluster::client::SubmitOut>()
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
