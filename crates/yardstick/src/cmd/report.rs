//! `yardstick report RUN`: a stored run (and optionally a saved gate or comparison result) as
//! a terminal table, HTML with SVG plots, Excel, Markdown, JUnit XML or CSV. Rendering lives in
//! `yardstick-report`, whose exporter registry gives this command one flag per format; this
//! module resolves the destinations and lists what was written.

use std::path::{Path, PathBuf};

use serde::Serialize;
use yardstick_report::{Dest, Exporter, GateView, Report, ReportError};

use crate::cli::GlobalOpts;
use crate::cmd::runs::StoreOpt;
use crate::exit::{self, Status};
use crate::output;

/// Report a stored run, optionally with a gate or comparison result.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without an output flag the report prints as a table. Outputs combine; `-` \
as the FILE of --markdown or --junit writes to stdout.\n\nExamples:\n  \
yardstick report 01JD8Y… --store DIR\n  \
yardstick report 01JD8Y… --html report.html --xlsx report.xlsx --csv report-csv/\n  \
yardstick gate 01JD8Y… --baseline auto --json > gate.json; \
yardstick report 01JD8Y… --gate gate.json --junit junit.xml --markdown - >> \"$GITHUB_STEP_SUMMARY\"\n  \
yardstick compare 01JD7X… 01JD8Y… --json > cmp.json; yardstick report 01JD8Y… --gate cmp.json --html cmp.html\n  \
yardstick report 01JDVLLM… --compare 01JDSGLANG… 01JDTGI… --html engines.html --svg plots/\n  \
yardstick report 01JD8Y… --gate gate.json --markdown pr.md --compact --link \"$URL\""
)]
pub struct ReportArgs {
    /// The run (id or unique prefix).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Cover a gate or comparison result: a file saved from `yardstick gate RUN --json` or
    /// `yardstick compare A B --json`.
    #[arg(long, value_name = "FILE.json")]
    pub gate: Option<PathBuf>,
    /// Overlay these runs' serving points on RUN's throughput–interactivity frontier (N
    /// engines, N settings): one curve per run and scenario, the Pareto points of them all
    /// marked and listed.
    #[arg(long, value_name = "RUN", num_args = 1..)]
    pub compare: Vec<String>,
    /// Make --markdown the short comment a pull request wants: the verdict, only the metrics
    /// that moved (a verdict other than PASS, or an interval of the change that excludes none)
    /// with their intervals, failed replicates, and a link to the full report (--link).
    #[arg(long)]
    pub compact: bool,
    /// The full report's address, linked from the compact comment (in GitHub Actions:
    /// "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID").
    #[arg(long, value_name = "URL", requires = "compact")]
    pub link: Option<String>,
    /// The outputs: one `--NAME FILE|DIR` per exporter of `yardstick_report::exporters()`
    /// (`--html --xlsx --markdown --junit --csv`).
    #[command(flatten)]
    pub outputs: Outputs,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// The outputs asked for: a `--NAME` flag per exporter of the registry, in its order, so a new
/// format needs no change here.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// (exporter, destination) in the registry's order.
    pub chosen: Vec<(&'static dyn Exporter, PathBuf)>,
}

impl clap::FromArgMatches for Outputs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut o = Outputs::default();
        o.update_from_arg_matches(m)?;
        Ok(o)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for e in yardstick_report::exporters() {
            if let Some(p) = m.get_one::<PathBuf>(e.name()) {
                self.chosen.retain(|(x, _)| x.name() != e.name());
                self.chosen.push((*e, p.clone()));
            }
        }
        let order = |name: &str| {
            yardstick_report::exporters()
                .iter()
                .position(|e| e.name() == name)
        };
        self.chosen.sort_by_key(|(e, _)| order(e.name()));
        Ok(())
    }
}

impl clap::Args for Outputs {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for e in yardstick_report::exporters() {
            cmd = cmd.arg(
                clap::Arg::new(e.name())
                    .long(e.name())
                    .value_name(e.value_name())
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(e.help()),
            );
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// One file `yardstick report` wrote.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Written {
    /// `html`, `xlsx`, `markdown`, `junit`, `csv`...
    pub format: &'static str,
    /// Where.
    pub path: String,
    /// Its size.
    pub bytes: u64,
}

/// What `yardstick report RUN --json` prints: the files written and the report's data.
#[derive(Serialize, schemars::JsonSchema)]
pub struct JsonOut<'a> {
    /// The files written.
    pub written: &'a [Written],
    /// Everything the report shows.
    pub report: &'a Report,
}

/// Runs `yardstick report`.
pub fn run(args: ReportArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let store_dir = Path::new(&args.store.store);
    let store_dir = store_dir.is_dir().then_some(store_dir);
    let run =
        yardstick_report::load_run(w.as_mut(), &args.run, store_dir).map_err(exit::lib_error)?;
    // An empty gate file is what `gate ... --json > gate.json` leaves when the gate could not
    // compare (no baseline, another profile): report the run alone and say so, so a CI step
    // that always reports still shows the run.
    let mut empty_gate = None;
    let gate = match args.gate.as_deref() {
        Some(p) if std::fs::metadata(p).is_ok_and(|m| m.len() == 0) => {
            empty_gate = Some(format!(
                "{} is empty (the gate produced no result); reporting the run alone",
                p.display()
            ));
            None
        }
        Some(p) => Some(GateView::read(p).map_err(exit::lib_error)?),
        None => None,
    };
    let mut report = Report::new(run, gate);
    if args.compact {
        if !args
            .outputs
            .chosen
            .iter()
            .any(|(e, _)| e.name() == "markdown")
        {
            return Err(exit::invalid(
                "--compact shapes the Markdown output; no --markdown was given",
                Some("add --markdown FILE (or --markdown - for stdout)"),
            ));
        }
        report.compact = Some(yardstick_report::Compact {
            link: args.link.clone(),
        });
    }
    for other in &args.compare {
        report.others.push(
            yardstick_report::load_run(w.as_mut(), other, store_dir).map_err(exit::lib_error)?,
        );
    }
    report.warnings.extend(empty_gate);
    for warning in &report.warnings {
        output::warn(warning);
    }
    let mut written = Vec::new();
    let mut to_stdout = false;
    for (exporter, arg) in &args.outputs.chosen {
        let mut stdout = std::io::stdout().lock();
        let dest = Dest::from_arg(arg, exporter.shape(), &mut stdout);
        let stream = dest.is_stream();
        to_stdout |= stream;
        let files = exporter.write(&report, dest).map_err(|e| match e {
            // Standard output going away (`| head`) stays an I/O error, which is not a
            // failure; a destination that cannot be written is the user's to fix.
            ReportError::Io { path, source } if !stream => {
                exit::invalid(format!("cannot write {path}: {source}"), None)
            }
            e => exit::lib_error(e),
        })?;
        for f in files {
            output::info(&format!(
                "wrote {} {} ({:.1} KiB)",
                f.format,
                f.path.display(),
                f.bytes as f64 / 1024.0
            ));
            written.push(Written {
                format: f.format,
                path: f.path.display().to_string(),
                bytes: f.bytes,
            });
        }
    }
    if g.json && !to_stdout {
        output::json(&JsonOut {
            written: &written,
            report: &report,
        })?;
    } else if args.outputs.chosen.is_empty() {
        output::text(&yardstick_report::terminal::render(&report))?;
    }
    Ok(Status::Ok)
}
