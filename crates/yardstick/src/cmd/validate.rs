//! `yardstick validate SPEC...`: check specs against the schema and the methodology rules.

use std::io::Read;
use std::path::PathBuf;

use yardstick_spec::{Checked, Diagnostic, Severity};

use crate::cli::GlobalOpts;
use crate::exit::Status;
use crate::output::style;

/// Check BenchmarkRun specs. Prints every problem at once as `file:line:col: error[rule]:
/// message` with a hint; exits 0 when all specs are valid, 2 otherwise.
#[derive(Debug, clap::Args)]
#[command(after_help = "Rules and fields: docs/spec.md.\n\nExamples:\n  \
yardstick validate bench.yaml\n  \
yardstick validate specs/*.yaml --deny-warnings --json\n  \
yardstick init --template serve | yardstick validate -")]
pub struct ValidateArgs {
    /// Spec files to check; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Treat warnings as errors.
    #[arg(long)]
    pub deny_warnings: bool,
}

/// Reads a spec from a path or stdin, as bytes: decoding and size checks belong to the spec crate
/// so every entry point reports them alike.
pub fn read_spec(path: &PathBuf) -> Result<(String, Vec<u8>), (String, String)> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    // Read at most one byte past the limit: enough to know the file is too large.
    let limit = yardstick_spec::MAX_SPEC_BYTES as u64 + 1;
    let mut buf = Vec::new();
    let result = if path.as_os_str() == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if f.metadata().is_ok_and(|m| m.is_dir()) {
                return Err(std::io::Error::other("is a directory"));
            }
            if len > limit {
                buf = vec![b' '; limit as usize];
                return Ok(buf.len());
            }
            f.take(limit).read_to_end(&mut buf)
        })
    };
    match result {
        Ok(_) => Ok((name, buf)),
        Err(e) => Err((name, e.to_string())),
    }
}

/// A spec read and checked for a command that acts on it: its display name, its exact text and
/// the decoded spec. A spec that cannot be read, or breaks a rule, is invalid input with every
/// diagnostic printed at file:line:col and "nothing was {done}". Files the spec names are
/// checked relative to `files_base` (none: not checked, as for a resumed run).
pub fn checked_spec(
    path: &PathBuf,
    files_base: Option<&std::path::Path>,
    done: &str,
) -> anyhow::Result<(String, String, yardstick_spec::BenchmarkRun)> {
    let (name, bytes) = read_spec(path).map_err(|(name, e)| {
        crate::exit::invalid(
            format!("cannot read the spec {name}: {e}"),
            Some("check the path; `-` reads standard input"),
        )
    })?;
    let checked = yardstick_spec::check_bytes_in(&bytes, files_base);
    if !checked.is_valid() {
        for d in &checked.diagnostics {
            eprintln!("{}", d.render(&name));
        }
        return Err(crate::exit::invalid(
            format!("{name} is not a valid BenchmarkRun; nothing was {done}"),
            Some("fix the errors above (`yardstick validate` checks a spec)"),
        ));
    }
    let spec = checked.spec.expect("valid specs decode");
    // Valid specs are UTF-8 (check_bytes refuses anything else).
    let text = String::from_utf8(bytes)?;
    Ok((name, text, spec))
}

/// Checks one spec source, turning read failures into an `input` diagnostic.
pub fn check_path(path: &PathBuf) -> (String, Checked) {
    match read_spec(path) {
        Ok((name, bytes)) => (
            name,
            yardstick_spec::check_bytes_in(&bytes, Some(&super::run::spec_dir(path))),
        ),
        Err((name, err)) => (
            name,
            Checked {
                spec: None,
                diagnostics: vec![Diagnostic {
                    severity: Severity::Error,
                    rule: "input",
                    message: format!("cannot read the spec: {err}"),
                    hint: Some("check the path; `-` reads standard input".into()),
                    path: String::new(),
                    line: 1,
                    col: 1,
                }],
            },
        ),
    }
}

pub fn run(args: ValidateArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let results: Vec<(String, Checked)> = args.specs.iter().map(check_path).collect();
    let fails = |c: &Checked| !c.is_valid() || (args.deny_warnings && c.warnings() > 0);
    let all_valid = !results.iter().any(|(_, c)| fails(c));

    if g.json {
        let files = results
            .iter()
            .map(|(name, c)| yardstick_spec::FileReport {
                file: name.clone(),
                valid: !fails(c),
                errors: c.errors(),
                warnings: c.warnings(),
                diagnostics: c.diagnostics.clone(),
            })
            .collect();
        crate::output::json(&yardstick_spec::ValidateOutput {
            valid: all_valid,
            files,
        })?;
    } else {
        use std::io::Write;
        let mut err = anstream::stderr().lock();
        for (name, c) in &results {
            for d in &c.diagnostics {
                if d.severity == Severity::Warning && crate::cli::verbosity() < 0 {
                    continue;
                }
                let colour = match d.severity {
                    Severity::Error => style::ERROR,
                    Severity::Warning => style::WARN,
                };
                let text = d.render(name);
                let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
                // Colour the severity word only; the rest stays plain for grep.
                let sev = d.severity.as_str();
                let first = first.replacen(
                    &format!(": {sev}["),
                    &format!(": {colour}{sev}{}[", style::RESET),
                    1,
                );
                writeln!(err, "{first}")?;
                if !rest.is_empty() {
                    writeln!(err, "{}{rest}{}", style::DIM, style::RESET)?;
                }
            }
            if crate::cli::verbosity() >= 0 {
                let summary = if fails(c) {
                    format!(
                        "{}{name}: invalid{} ({} error(s), {} warning(s))",
                        style::ERROR,
                        style::RESET,
                        c.errors(),
                        c.warnings()
                    )
                } else if c.warnings() > 0 {
                    format!(
                        "{}{name}: valid{} ({} warning(s))",
                        style::OK,
                        style::RESET,
                        c.warnings()
                    )
                } else {
                    format!("{}{name}: valid{}", style::OK, style::RESET)
                };
                writeln!(err, "{summary}")?;
            }
        }
    }
    Ok(if all_valid {
        Status::Ok
    } else {
        Status::Invalid
    })
}
