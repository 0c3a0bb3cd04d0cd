//! Why a plan cannot be made: the error of the request plan and of the datasets it reads
//! (prompts, conversations).

/// Why a plan cannot be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// A dataset file could not be read or understood.
    #[error("dataset {path}: {why}")]
    Dataset {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// An embeddings scenario with a generation API, or the reverse.
    #[error("scenario `{scenario}` does not fit the `{api}` API: {why}")]
    Mismatch {
        /// The scenario as written.
        scenario: String,
        /// The API name.
        api: &'static str,
        /// What to change.
        why: &'static str,
    },
}
