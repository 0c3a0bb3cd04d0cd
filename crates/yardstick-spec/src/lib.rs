//! The BenchmarkRun contract: typed spec, YAML reading with positions, methodology validation,
//! JSON Schema, traffic-scenario grammar and `init` templates.
//!
//! ```
//! let text = yardstick_spec::template(yardstick_spec::Template::Serve);
//! let checked = yardstick_spec::check_str(text);
//! assert!(checked.is_valid(), "{:?}", checked.diagnostics);
//! ```
#![deny(missing_docs)]

mod decode;
pub mod diag;
pub mod human;
pub mod images;
mod locate;
pub mod metrics;
pub mod model;
pub mod rules;
pub mod scenario;
mod schema;
pub mod session;
pub mod sweep;
mod templates;
pub mod units;
pub mod yaml;

pub use diag::{Diagnostic, FileReport, Severity, ValidateOutput};
pub use model::*;
pub use schema::{description_at, fields_at, json_schema};
pub use templates::{PRESETS, Preset, Template, github_workflow, preset, template};

/// The largest spec file accepted (specs are small; this guards against pointing the validator
/// at the wrong file).
pub const MAX_SPEC_BYTES: usize = 8 * 1024 * 1024;

/// The outcome of checking one spec: the decoded spec (as far as it could be decoded) and every
/// diagnostic, sorted by position.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The decoded spec; `None` when the YAML itself could not be read.
    pub spec: Option<BenchmarkRun>,
    /// Errors and warnings, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// True when no diagnostic is an error.
    pub fn is_valid(&self) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The number of errors.
    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    /// The number of warnings.
    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, s: Severity) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == s).count()
    }

    /// The spec, when valid.
    pub fn valid_spec(&self) -> Option<&BenchmarkRun> {
        if self.is_valid() {
            self.spec.as_ref()
        } else {
            None
        }
    }
}

fn input_error(message: String, hint: &str) -> Checked {
    Checked {
        spec: None,
        diagnostics: vec![Diagnostic {
            severity: Severity::Error,
            rule: "input",
            message,
            hint: Some(hint.to_string()),
            path: String::new(),
            line: 1,
            col: 1,
        }],
    }
}

/// Checks raw bytes: size, text encoding, emptiness, then [`check_str`].
pub fn check_bytes(bytes: &[u8]) -> Checked {
    check_bytes_in(bytes, None)
}

/// [`check_bytes`] for a spec read from a file in `base` (its directory): also checks that the
/// files the spec names relative to it exist (rule `eval-files`).
pub fn check_bytes_in(bytes: &[u8], base: Option<&std::path::Path>) -> Checked {
    if bytes.len() > MAX_SPEC_BYTES {
        return input_error(
            format!(
                "the file is {} bytes; a spec is at most {} bytes",
                bytes.len(),
                MAX_SPEC_BYTES
            ),
            "is this the right file? specs are short YAML documents",
        );
    }
    if bytes.contains(&0) {
        return input_error(
            "the file is binary (it contains NUL bytes), not a YAML spec".into(),
            "pass the spec's .yaml file",
        );
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => check_str_in(text, base),
        Err(e) => {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            let mut c = input_error(
                format!(
                    "the file is not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                ),
                "save the spec as UTF-8",
            );
            c.diagnostics[0].line = line as u32;
            c
        }
    }
}

/// Reads, decodes and validates a spec, returning every problem at once.
pub fn check_str(text: &str) -> Checked {
    check_str_in(text, None)
}

/// [`check_str`] for a spec whose directory is `base` (see [`check_bytes_in`]).
pub fn check_str_in(text: &str, base: Option<&std::path::Path>) -> Checked {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return input_error(
            "the spec is empty".into(),
            "start from `yardstick init --template serve` (or train, micro, full)",
        );
    }
    let (root, issues) = yaml::parse(text);
    let mut diagnostics: Vec<Diagnostic> = issues
        .iter()
        .map(|i| Diagnostic {
            severity: Severity::Error,
            rule: i.rule,
            message: i.message.clone(),
            hint: match i.rule {
                "yaml-limits" => {
                    Some("specs are small documents; check for runaway anchors or nesting".into())
                }
                "duplicate-key" => Some("remove one of the two entries".into()),
                _ => Some("check indentation and quoting near this position".into()),
            },
            path: String::new(),
            line: i.pos.line,
            col: i.pos.col,
        })
        .collect();
    let Some(root) = root else {
        if diagnostics.is_empty() {
            return input_error(
                "the spec holds no YAML document".into(),
                "start from `yardstick init`",
            );
        }
        return Checked {
            spec: None,
            diagnostics,
        };
    };
    if !matches!(root.value, yaml::Value::Map(_)) {
        diagnostics.push(Diagnostic {
            severity: Severity::Error,
            rule: "invalid-value",
            message:
                "a spec is a mapping (apiVersion, kind, metadata, spec), not a scalar or a list"
                    .into(),
            hint: Some("start from `yardstick init`".into()),
            path: String::new(),
            line: root.pos.line,
            col: root.pos.col,
        });
        return Checked {
            spec: None,
            diagnostics,
        };
    }
    let (json, positions) = yaml::to_json(&root);
    let loc = locate::Locator::new(&positions);
    let schema = json_schema();
    let run = decode::decode(json, &loc, &schema, &mut diagnostics);
    rules::check(&run, &loc, base, &mut diagnostics);
    diagnostics.sort_by_key(|d| (d.line, d.col, d.severity));
    diagnostics.dedup();
    Checked {
        spec: Some(run),
        diagnostics,
    }
}
