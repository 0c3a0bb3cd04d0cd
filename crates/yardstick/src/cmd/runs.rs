//! `yardstick runs list|show`: the runs in the warehouse. Reading and printing only; the
//! warehouse lives in `yardstick-store`.

use serde::Serialize;
use yardstick_store::StoreError;
use yardstick_store::run::FindRunError;
use yardstick_store::warehouse::{
    FactRow, PointRow, ReplicateRow, RunFilter, RunRow, Warehouse, find_run,
    open_existing_warehouse, resolve_since,
};

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output;

const STORE_HINT: &str = "pass --store DIR (a store directory) or --store postgres://… (or set \
                          YARDSTICK_STORE); `yardstick run SPEC --store DIR` creates one";

/// Where the warehouse is (shared by `runs`, `query`, `export`, `gc`).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreOpt {
    /// Store directory (its SQLite warehouse, `<DIR>/yardstick.db`) or a PostgreSQL URL
    /// (`postgres://user@host:port/db`, no TLS: loopback or a trusted network).
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR|URL"
    )]
    pub store: String,
}

impl StoreOpt {
    /// Opens the warehouse; a missing one is invalid input (exit 2).
    pub fn open(&self) -> anyhow::Result<Box<dyn Warehouse>> {
        open_existing_warehouse(&self.store).map_err(store_error)
    }
}

/// Maps store errors to exit codes: the user's input (bad SQL, unknown store, bad age) is exit 2,
/// everything else (I/O, database failures) exit 1.
/// A run that could not be found: the user's input (exit 2) unless the store itself failed.
pub fn find_error(e: FindRunError) -> anyhow::Error {
    match e {
        FindRunError::Store(e) => store_error(e),
        e => exit::invalid(e.to_string(), e.hint()),
    }
}

pub fn store_error(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::NotFound(_) => exit::invalid(e.to_string(), Some(STORE_HINT)),
        StoreError::Invalid(_) => exit::invalid(e.to_string(), None),
        StoreError::Refused(_) => exit::invalid(
            e.to_string(),
            Some(
                "this store admits only runs signed by a key it trusts: sign with provenance.key, and see `yardstick trust list`",
            ),
        ),
        e => anyhow::Error::new(e),
    }
}

/// List and inspect stored runs.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick runs list --since 7d --profile cpu-EPYC-7B13x2c_linux6.1\n  \
yardstick runs show 01JD7X… --json"
)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCommand,
}

/// The `runs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// Runs, newest first.
    #[command(after_help = "Examples:\n  yardstick runs list\n  \
yardstick runs list --since 7d --name quickstart --json")]
    List(ListArgs),
    /// One run: its points, replicates and facts.
    #[command(after_help = "Examples:\n  yardstick runs show 01JD7X…\n  \
yardstick runs show 01JD7X --json")]
    Show(ShowArgs),
}

/// Arguments of `yardstick runs list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only runs of this machine profile.
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Only runs of this benchmark (the spec's metadata.name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Only runs started since: an age (7d, 12h), a date (2026-05-01) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Arguments of `yardstick runs show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Run id (ULID), or a unique prefix of one.
    #[arg(value_name = "RUN_ID")]
    pub run: String,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick runs`.
pub fn run(args: RunsArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        RunsCommand::List(a) => list(a, g),
        RunsCommand::Show(a) => show(a, g),
    }
}

/// What `yardstick runs list --json` prints.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ListOut<'a> {
    /// The runs, newest first.
    pub runs: &'a [RunRow],
}

fn list(args: ListArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let since = args
        .since
        .as_deref()
        .map(resolve_since)
        .transpose()
        .map_err(store_error)?;
    let mut w = args.store.open()?;
    let runs = w
        .runs(&RunFilter {
            machine_profile: args.profile,
            name: args.name,
            since,
            limit: Some(args.limit),
            ..Default::default()
        })
        .map_err(store_error)?;
    if g.json {
        output::json(&ListOut { runs: &runs })?;
        return Ok(Status::Ok);
    }
    if runs.is_empty() {
        output::info("no runs match");
        return Ok(Status::Ok);
    }
    output::text(&yardstick_report::text::runs(&runs))?;
    Ok(Status::Ok)
}

/// What `yardstick runs show RUN --json` prints: the run as the warehouse has it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ShowOut {
    /// The run.
    pub run: RunRow,
    /// Its points.
    pub points: Vec<PointRow>,
    /// Every replicate.
    pub replicates: Vec<ReplicateRow>,
    /// Every fact, per replicate and aggregated.
    pub facts: Vec<FactRow>,
}

fn show(args: ShowArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let run = find_run(w.as_mut(), &args.run).map_err(find_error)?;
    let out = ShowOut {
        points: w.points(&run.run_id).map_err(store_error)?,
        replicates: w.replicates(&run.run_id).map_err(store_error)?,
        facts: w.facts(&run.run_id).map_err(store_error)?,
        run,
    };
    if g.json {
        output::json(&out)?;
        return Ok(Status::Ok);
    }
    let (text, hidden) =
        yardstick_report::text::run(&out.run, &out.points, &out.replicates, &out.facts);
    output::text(&text)?;
    if out.facts.is_empty() {
        output::info("no facts stored for this run");
    } else if hidden > 0 {
        output::info(&format!(
            "{hidden} per-replicate facts not shown (--json lists every fact)"
        ));
    }
    Ok(Status::Ok)
}

/// A number for people: up to 4 significant decimals, no trailing zeros (NaN spelled out).
pub use yardstick_report::format::num_keep_nan as num;

/// Prints an aligned table on stdout: bold headers, columns separated by two spaces, numbers
/// right-aligned ([`yardstick_report::terminal::plain_table`]).
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) -> anyhow::Result<()> {
    output::text(&yardstick_report::terminal::plain_table(headers, rows))?;
    Ok(())
}
