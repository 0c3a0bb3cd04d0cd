//! Diagnostics: what is wrong, where (line:col), which rule, and how to fix it.

use std::fmt::Write as _;

use serde::Serialize;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The spec is invalid.
    Error,
    /// The spec is valid but something deserves attention.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One finding about a spec.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable rule id (e.g. `trials-replicates`); see docs/spec.md.
    pub rule: &'static str,
    /// What is wrong, citing the methodology where a rule comes from it.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// Dotted path of the field (`spec.trials.replicates`); empty for the whole document.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl Diagnostic {
    /// Renders `file:line:col: error[rule]: message` and an indented hint line.
    pub fn render(&self, file: &str) -> String {
        let mut s = format!(
            "{file}:{}:{}: {}[{}]: {}",
            self.line,
            self.col,
            self.severity.as_str(),
            self.rule,
            self.message
        );
        if let Some(h) = &self.hint {
            let _ = write!(s, "\n  hint: {h}");
        }
        s
    }
}

/// Converts a JSON pointer (`/spec/layers/component/0/kind`) to the dotted form people read
/// (`spec.layers.component[0].kind`).
pub fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            let _ = write!(out, "[{seg}]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// The closest candidate to `word` by Jaro–Winkler similarity, when it is close enough to be a
/// plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_code() {
        assert_eq!(display_path(""), "");
        assert_eq!(
            display_path("/spec/layers/component/0/kind"),
            "spec.layers.component[0].kind"
        );
        assert_eq!(display_path("/metadata/labels/a~1b"), "metadata.labels.a/b");
    }

    #[test]
    fn suggests_close_names_only() {
        let known = ["replicates", "warmup", "confidenceLevel", "outlierPolicy"];
        assert_eq!(did_you_mean("replicate", known), Some("replicates"));
        assert_eq!(
            did_you_mean("confidencelevel", known),
            Some("confidenceLevel")
        );
        assert_eq!(did_you_mean("zzz", known), None);
    }
}
