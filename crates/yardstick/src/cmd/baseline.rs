//! `yardstick baseline save|list|show`: the reference run of each (machine profile, benchmark).
//! Saving is explicit; replacing another run's baseline needs `--force`.

use serde::Serialize;
use yardstick_gate::{GateError, baseline};
use yardstick_store::warehouse::BaselineRow;

use crate::cli::GlobalOpts;
use crate::cmd::runs::{StoreOpt, print_table, store_error};
use crate::exit::{self, Status};
use crate::output;

/// Manage baselines.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick baseline save 01JD7X… --store DIR\n  \
yardstick baseline list\n  yardstick baseline show --name quickstart\n  \
yardstick baseline export --dir baselines\n  yardstick baseline import baselines/cpu-EPYC-f25m17x2c_linux6.18.json"
)]
pub struct BaselineArgs {
    #[command(subcommand)]
    pub command: BaselineCommand,
}

/// The `baseline` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BaselineCommand {
    /// Make a complete run the baseline of its machine profile and benchmark name.
    #[command(after_help = "Examples:\n  yardstick baseline save 01JD7X…\n  \
yardstick baseline save 01JD7X… --force   # replace the baseline in force")]
    Save(SaveArgs),
    /// Every stored baseline.
    #[command(after_help = "Examples:\n  yardstick baseline list\n  \
yardstick baseline list --json")]
    List(ListArgs),
    /// The baseline of one benchmark (and profile), with the run it points at.
    #[command(
        after_help = "Examples:\n  yardstick baseline show --name quickstart\n  \
yardstick baseline show --name quickstart --profile cpu-EPYC-7B13x2c_linux6.1 --json"
    )]
    Show(ShowArgs),
    /// Write `<DIR>/<profile>.json` per machine profile (for repos that keep baselines in git;
    /// `gate --baseline FILE` reads them).
    #[command(after_help = "Examples:\n  yardstick baseline export --dir baselines")]
    Export(ExportArgs),
    /// Read a baseline file (from `baseline export`) into this warehouse, so that
    /// `gate --baseline auto` finds its baselines. Replacing another run's baseline needs
    /// `--force`.
    #[command(
        after_help = "Examples:\n  yardstick baseline import baselines/cpu-EPYC-7B13x2c_linux6.1.json"
    )]
    Import(ImportArgs),
}

/// Arguments of `baseline import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The baseline file (`baselines/<profile>.json`).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Replace existing baselines of other runs.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Arguments of `baseline export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Directory to write the baseline files into (created).
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub dir: std::path::PathBuf,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// What `yardstick baseline ... --json` prints, by subcommand.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BaselineOutput<'a> {
    /// `list`, `show`: the baselines in force.
    List {
        /// One per benchmark and machine profile.
        baselines: &'a [BaselineRow],
    },
    /// `save`: the baseline now in force.
    Saved(&'a BaselineRow),
    /// `import`: what the file set.
    Imported {
        /// One entry per baseline in the file.
        imported: &'a [yardstick_gate::file::Imported],
    },
    /// `export`: the files written.
    Exported {
        /// Their paths.
        files: Vec<String>,
    },
}

/// Arguments of `baseline save`.
#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// Run id (ULID), or a unique prefix of one.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Replace an existing baseline of another run.
    #[arg(long)]
    pub force: bool,
    /// Why this run is the baseline.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Arguments of `baseline list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Arguments of `baseline show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Benchmark name (the spec's metadata.name).
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// Machine profile (default: every profile with a baseline of NAME).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Like [`exit::lib_error`], with the `--force` hint when a different baseline would be replaced,
/// and the trust hint when the store's policy refuses the run.
fn replace_error(e: GateError) -> anyhow::Error {
    match e {
        GateError::Store(e @ yardstick_store::StoreError::Conflict(_)) => {
            exit::invalid(e.to_string(), Some("pass --force to replace it"))
        }
        GateError::Store(e @ yardstick_store::StoreError::Refused(_)) => store_error(e),
        e => exit::lib_error(e),
    }
}

/// Runs `yardstick baseline`.
pub fn run(args: BaselineArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        BaselineCommand::Import(a) => {
            let mut w = a.store.open()?;
            let done = yardstick_gate::file::import(w.as_mut(), &a.file, a.force)
                .map_err(replace_error)?;
            if g.json {
                output::json(&BaselineOutput::Imported { imported: &done })?;
            } else {
                for i in &done {
                    crate::output::outln!(
                        "baseline of {} on {} is now run {}{}",
                        i.benchmark,
                        i.machine_profile,
                        i.run_id,
                        if i.run_added {
                            " (imported with its facts)"
                        } else {
                            " (the run was already here)"
                        }
                    )?;
                }
            }
            Ok(Status::Ok)
        }
        BaselineCommand::Save(a) => {
            let mut w = a.store.open()?;
            let store = std::path::Path::new(&a.store.store);
            let row = baseline::save_admitted(w.as_mut(), Some(store), &a.run, a.force, a.note)
                .map_err(replace_error)?;
            if g.json {
                output::json(&BaselineOutput::Saved(&row))?;
            } else {
                crate::output::outln!(
                    "baseline of {} on {} is now run {}",
                    row.benchmark,
                    row.machine_profile,
                    row.run_id
                )?;
            }
            Ok(Status::Ok)
        }
        BaselineCommand::Export(a) => {
            let mut w = a.store.open()?;
            let files =
                yardstick_gate::file::export(w.as_mut(), &a.dir).map_err(exit::lib_error)?;
            let files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
            if g.json {
                output::json(&BaselineOutput::Exported { files })?;
            } else if files.is_empty() {
                output::info("no baselines stored; nothing written");
            } else {
                for f in &files {
                    crate::output::outln!("wrote {f}")?;
                }
            }
            Ok(Status::Ok)
        }
        BaselineCommand::List(a) => {
            let mut w = a.store.open()?;
            let rows = baseline::list(w.as_mut()).map_err(exit::lib_error)?;
            print_rows(&rows, g)
        }
        BaselineCommand::Show(a) => {
            let mut w = a.store.open()?;
            let rows: Vec<BaselineRow> = baseline::list(w.as_mut())
                .map_err(exit::lib_error)?
                .into_iter()
                .filter(|b| {
                    b.benchmark == a.name
                        && a.profile.as_ref().is_none_or(|p| *p == b.machine_profile)
                })
                .collect();
            if rows.is_empty() {
                return Err(exit::invalid(
                    format!("no baseline stored for `{}`", a.name),
                    Some("`yardstick baseline list` shows the stored baselines"),
                ));
            }
            print_rows(&rows, g)
        }
    }
}

fn print_rows(rows: &[BaselineRow], g: &GlobalOpts) -> anyhow::Result<Status> {
    if g.json {
        output::json(&BaselineOutput::List { baselines: rows })?;
        return Ok(Status::Ok);
    }
    if rows.is_empty() {
        output::info("no baselines stored; save one with `yardstick baseline save RUN`");
        return Ok(Status::Ok);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|b| {
            vec![
                b.benchmark.clone(),
                b.machine_profile.clone(),
                b.run_id.clone(),
                b.created_at.clone(),
                b.note.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    print_table(
        &["BENCHMARK", "PROFILE", "RUN", "SAVED (UTC)", "NOTE"],
        &table,
    )?;
    Ok(Status::Ok)
}
