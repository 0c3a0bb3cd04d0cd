//! Every output format behind one trait, [`Exporter`], and one list of them, [`exporters`]:
//! `yardstick report` offers a `--NAME` flag per exporter and writes them in this order, so a
//! new format is one `impl Exporter` plus one line in [`exporters`].
//!
//! An exporter renders the report in memory ([`Exporter::render`], pure: no clock, no file
//! system) into an [`Artifact`]: a text document, a binary file or a set of named files. The
//! provided [`Exporter::write`] puts it at a [`Dest`]: a file, a directory (for formats of
//! several files) or a stream such as standard output (for formats that allow it, [`Shape`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::model::Report;
use crate::{ReportError, csv, html, junit, markdown, tables, xlsx};

/// What an exporter writes to, which decides what its destination argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One file; `stdout` when `-` (standard output) may stand for it.
    File {
        /// Whether the document may go to standard output.
        stdout: bool,
    },
    /// A directory of files (created if missing).
    Directory,
}

/// A rendered report.
#[derive(Debug, Clone, PartialEq)]
pub enum Artifact {
    /// A text document (HTML, Markdown, XML).
    Text(String),
    /// A binary file (a workbook).
    Binary(Vec<u8>),
    /// Named files, written into a directory in this order.
    Files(Vec<(String, Vec<u8>)>),
}

/// Where [`Exporter::write`] puts a rendered report.
pub enum Dest<'a> {
    /// A file, or the directory of a [`Shape::Directory`] format.
    Path(&'a Path),
    /// A stream (standard output): only for [`Shape::File`] formats with `stdout`.
    Stream(&'a mut dyn Write),
}

impl<'a> Dest<'a> {
    /// The destination a command-line argument names: `-` is `stdout` when `shape` allows a
    /// stream, any other argument (and `-` otherwise) a path.
    pub fn from_arg(arg: &'a Path, shape: Shape, stdout: &'a mut dyn Write) -> Dest<'a> {
        if arg == Path::new("-") && shape == (Shape::File { stdout: true }) {
            Dest::Stream(stdout)
        } else {
            Dest::Path(arg)
        }
    }

    /// True for a stream.
    pub fn is_stream(&self) -> bool {
        matches!(self, Dest::Stream(_))
    }
}

/// A file an exporter wrote (nothing is listed for a stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The exporter's [`Exporter::name`].
    pub format: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
}

/// One output format of a report.
pub trait Exporter: Sync {
    /// The format's name: `yardstick report`'s flag (`--html`) and the `format` of the files it
    /// writes.
    fn name(&self) -> &'static str;

    /// One sentence for `--help`: what it writes.
    fn help(&self) -> &'static str;

    /// A file (perhaps standard output) or a directory.
    fn shape(&self) -> Shape;

    /// The value name of the destination in `--help`: `FILE` or `DIR`.
    fn value_name(&self) -> &'static str {
        match self.shape() {
            Shape::File { .. } => "FILE",
            Shape::Directory => "DIR",
        }
    }

    /// Renders the report in memory.
    fn render(&self, report: &Report) -> Result<Artifact, ReportError>;

    /// Renders the report and writes it to `dest`; returns the files written (none for a
    /// stream). A directory is created if missing. A stream that is not allowed, or a set of
    /// files for a file destination, is a [`ReportError::Render`].
    fn write(&self, report: &Report, dest: Dest<'_>) -> Result<Vec<Written>, ReportError> {
        let artifact = self.render(report)?;
        let file = |path: &Path, bytes: &[u8]| {
            std::fs::write(path, bytes).map_err(|e| ReportError::io(path, e))?;
            Ok(Written {
                format: self.name(),
                path: path.to_path_buf(),
                bytes: bytes.len() as u64,
            })
        };
        match (artifact, dest) {
            (Artifact::Text(_) | Artifact::Binary(_), Dest::Stream(_))
                if self.shape() != (Shape::File { stdout: true }) =>
            {
                Err(ReportError::render(
                    self.name(),
                    "this format cannot be written to standard output",
                ))
            }
            (Artifact::Text(text), Dest::Stream(w)) => {
                let io = |e| ReportError::io(Path::new("-"), e);
                w.write_all(text.as_bytes()).map_err(io)?;
                w.flush().map_err(io)?;
                Ok(Vec::new())
            }
            (Artifact::Binary(bytes), Dest::Stream(w)) => {
                let io = |e| ReportError::io(Path::new("-"), e);
                w.write_all(&bytes).map_err(io)?;
                w.flush().map_err(io)?;
                Ok(Vec::new())
            }
            (Artifact::Text(text), Dest::Path(p)) => Ok(vec![file(p, text.as_bytes())?]),
            (Artifact::Binary(bytes), Dest::Path(p)) => Ok(vec![file(p, &bytes)?]),
            (Artifact::Files(files), Dest::Path(dir)) => {
                std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
                files
                    .iter()
                    .map(|(name, bytes)| file(&dir.join(name), bytes))
                    .collect()
            }
            (Artifact::Files(_), Dest::Stream(_)) => Err(ReportError::render(
                self.name(),
                "a set of files needs a directory, not a stream",
            )),
        }
    }
}

impl std::fmt::Debug for dyn Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every exporter, in the order `yardstick report` writes them (and lists them in `--help`).
pub fn exporters() -> &'static [&'static dyn Exporter] {
    &[&Html, &Xlsx, &Markdown, &Junit, &Csv, &Svg]
}

/// The exporter called `name`.
pub fn exporter(name: &str) -> Option<&'static dyn Exporter> {
    exporters().iter().copied().find(|e| e.name() == name)
}

/// One self-contained HTML file ([`html::render`]).
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn help(&self) -> &'static str {
        "Write one self-contained HTML file (inline SVG plots, no network references)"
    }
    fn shape(&self) -> Shape {
        Shape::File { stdout: true }
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        html::render(report).map(Artifact::Text)
    }
}

/// An Excel workbook ([`xlsx::workbook`]).
pub struct Xlsx;

impl Exporter for Xlsx {
    fn name(&self) -> &'static str {
        "xlsx"
    }
    fn help(&self) -> &'static str {
        "Write an Excel workbook: a summary sheet and one sheet per point"
    }
    fn shape(&self) -> Shape {
        Shape::File { stdout: false }
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        xlsx::to_bytes(report).map(Artifact::Binary)
    }
}

/// Markdown ([`markdown::render`]).
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn help(&self) -> &'static str {
        "Write Markdown (for $GITHUB_STEP_SUMMARY or a PR comment); `-` for stdout"
    }
    fn shape(&self) -> Shape {
        Shape::File { stdout: true }
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        Ok(Artifact::Text(markdown::render(report)))
    }
}

/// JUnit XML ([`junit::render`]).
pub struct Junit;

impl Exporter for Junit {
    fn name(&self) -> &'static str {
        "junit"
    }
    fn help(&self) -> &'static str {
        "Write JUnit XML, one test case per (point, metric); `-` for stdout"
    }
    fn shape(&self) -> Shape {
        Shape::File { stdout: true }
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        Ok(Artifact::Text(junit::render(report)))
    }
}

/// One CSV file per table ([`tables::all`], [`csv::table_csv`]).
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn help(&self) -> &'static str {
        "Write one CSV file per table into DIR (created if missing)"
    }
    fn shape(&self) -> Shape {
        Shape::Directory
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        Ok(Artifact::Files(
            tables::all(report)
                .iter()
                .map(|t| (csv::file_name(t), csv::table_csv(t).into_bytes()))
                .collect(),
        ))
    }
}

/// Every plot of the HTML report as its own SVG file (`<section>-<n>.svg`), for slides and
/// documents ([`crate::html::sections`]).
pub struct Svg;

impl Exporter for Svg {
    fn name(&self) -> &'static str {
        "svg"
    }
    fn help(&self) -> &'static str {
        "Write every plot as an SVG file into DIR (created if missing): frontier-1.svg, …"
    }
    fn shape(&self) -> Shape {
        Shape::Directory
    }
    fn render(&self, report: &Report) -> Result<Artifact, ReportError> {
        let mut files = Vec::new();
        for s in crate::html::sections(report)? {
            for (k, f) in s.figures.iter().enumerate() {
                files.push((
                    format!("{}-{}.svg", s.id, k + 1),
                    f.svg.clone().into_bytes(),
                ));
            }
        }
        Ok(Artifact::Files(files))
    }
}
