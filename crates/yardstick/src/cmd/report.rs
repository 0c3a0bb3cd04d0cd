//! `yardstick report RUN`: a stored run (and optionally a saved gate or comparison result) as
//! a terminal table, HTML with SVG plots, Excel, Markdown, JUnit XML or CSV. Rendering lives in
//! `yardstick-report`; this module picks outputs and writes files.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use yardstick_report::{GateView, Report, ReportError};

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
yardstick compare 01JD7X… 01JD8Y… --json > cmp.json; yardstick report 01JD8Y… --gate cmp.json --html cmp.html"
)]
pub struct ReportArgs {
    /// The run (id or unique prefix).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Cover a gate or comparison result: a file saved from `yardstick gate RUN --json` or
    /// `yardstick compare A B --json`.
    #[arg(long, value_name = "FILE.json")]
    pub gate: Option<PathBuf>,
    /// Write one self-contained HTML file (inline SVG plots, no network references).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write an Excel workbook: a summary sheet and one sheet per point.
    #[arg(long, value_name = "FILE")]
    pub xlsx: Option<PathBuf>,
    /// Write Markdown (for $GITHUB_STEP_SUMMARY or a PR comment); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write JUnit XML, one test case per (point, metric); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write one CSV file per table into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOpt,
}

fn report_error(e: ReportError) -> anyhow::Error {
    if e.is_invalid_input() {
        exit::invalid(e.to_string(), None)
    } else {
        anyhow::Error::new(e)
    }
}

#[derive(Serialize)]
struct Written {
    format: &'static str,
    path: String,
    bytes: u64,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    written: &'a [Written],
    report: &'a Report,
}

/// Writes `text` to `path`, or to stdout for `-`.
fn write_text(path: &Path, text: &str) -> anyhow::Result<Option<u64>> {
    if path == Path::new("-") {
        let mut so = std::io::stdout().lock();
        so.write_all(text.as_bytes())?;
        so.flush()?;
        return Ok(None);
    }
    std::fs::write(path, text)
        .map_err(|e| exit::invalid(format!("cannot write {}: {e}", path.display()), None))?;
    Ok(Some(text.len() as u64))
}

/// Runs `yardstick report`.
pub fn run(args: ReportArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let store_dir = Path::new(&args.store.store);
    let store_dir = store_dir.is_dir().then_some(store_dir);
    let run = yardstick_report::load_run(w.as_mut(), &args.run, store_dir).map_err(report_error)?;
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
        Some(p) => Some(GateView::read(p).map_err(report_error)?),
        None => None,
    };
    let mut report = Report::new(run, gate);
    report.warnings.extend(empty_gate);
    for warning in &report.warnings {
        output::warn(warning);
    }
    let mut written = Vec::new();
    let mut record = |format: &'static str, path: &Path, bytes: Option<u64>| {
        if let Some(bytes) = bytes {
            output::info(&format!(
                "wrote {format} {} ({:.1} KiB)",
                path.display(),
                bytes as f64 / 1024.0
            ));
            written.push(Written {
                format,
                path: path.display().to_string(),
                bytes,
            });
        }
    };
    if let Some(path) = &args.html {
        let html = yardstick_report::html::render(&report).map_err(report_error)?;
        let n = write_text(path, &html)?;
        record("html", path, n);
    }
    if let Some(path) = &args.xlsx {
        yardstick_report::xlsx::write(&report, path).map_err(report_error)?;
        let n = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        record("xlsx", path, Some(n));
    }
    if let Some(path) = &args.markdown {
        let n = write_text(path, &yardstick_report::markdown::render(&report))?;
        record("markdown", path, n);
    }
    if let Some(path) = &args.junit {
        let n = write_text(path, &yardstick_report::junit::render(&report))?;
        record("junit", path, n);
    }
    if let Some(dir) = &args.csv {
        let tables = yardstick_report::tables::all(&report);
        let files = yardstick_report::csv::write_dir(&tables, dir).map_err(report_error)?;
        for f in files {
            let n = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
            record("csv", &f, Some(n));
        }
    }
    let any_output = args.html.is_some()
        || args.xlsx.is_some()
        || args.markdown.is_some()
        || args.junit.is_some()
        || args.csv.is_some();
    let to_stdout = [&args.markdown, &args.junit]
        .iter()
        .any(|p| p.as_deref() == Some(Path::new("-")));
    if g.json && !to_stdout {
        output::json(&JsonOut {
            written: &written,
            report: &report,
        })?;
    } else if !any_output {
        let mut so = anstream::stdout().lock();
        so.write_all(yardstick_report::terminal::render(&report).as_bytes())?;
        so.flush()?;
    }
    Ok(Status::Ok)
}
