//! `yardstick-eval`: a small deterministic accuracy eval over an OpenAI-compatible server.
//!
//! * [`task`]: tasks as data (JSONL items) and the bundled probe sets `arith`, `format`,
//!   `extract` and `code`.
//! * [`score`]: scorers `exact`, `contains`, `regex`, `choice`, `numeric`, `f1`, `rouge-l`, `bleu`,
//!   `json_keys`,
//!   with normalisation options.
//! * [`decoding`]: deterministic decoding (temperature 0, fixed seed, max tokens, stop sequences).
//! * [`run`]: running tasks under it, `repeat` runs and the determinism rate.
//! * [`report`]: per-task accuracy with a Wilson score interval, mean F1, latency; McNemar
//!   comparisons of two runs.
//!
//! See docs/eval.md.

#![deny(missing_docs)]

pub mod backend;
pub mod bleu;
pub mod decoding;
pub mod mix;
pub mod perplexity;
pub mod report;
pub mod run;
pub mod score;
pub mod task;

pub use decoding::Decoding;
pub use mix::load_mix;
pub use perplexity::{Perplexity, Shard};
pub use report::{Comparison, Difference, EvalReport, TaskComparison, TaskResult, compare, wilson};
pub use run::{RunOptions, run_eval};
pub use score::{Normalize, Score, Scorer};
pub use task::{Item, Message, Task};

/// Why an eval could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A task file is invalid (`line` 0: the file as a whole).
    #[error("{file}:{line}: {why}")]
    Task {
        /// The file (or `builtin:NAME`).
        file: String,
        /// 1-based line number, 0 for the whole file.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A task name is neither a bundled probe nor a file.
    #[error("unknown task `{name}` (bundled: {known}; or a path to a .jsonl file)")]
    UnknownTask {
        /// The name given.
        name: String,
        /// The bundled names.
        known: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        why: String,
    },
    /// Bad options (URL, confidence, ...).
    #[error("{0}")]
    Config(String),
    /// A result file is not an eval report.
    #[error("{path}: not an eval result file: {why}")]
    BadResult {
        /// The file.
        path: String,
        /// The cause.
        why: String,
    },
    /// A statistic could not be computed.
    #[error(transparent)]
    Stats(#[from] yardstick_stats::StatsError),
}
