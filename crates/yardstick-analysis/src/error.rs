//! The crate's error type.

/// Why an analysis could not be carried out: its input cannot support it. Numbers that are
/// merely bad (a rising loss, a straggler rank, MFU above 100 %) are not errors: they are
/// findings, reported as warnings.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The input is unusable (no step times, a world size of 0, no throughput at all).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: Option<String>,
    },
    /// A statistic could not be computed.
    #[error(transparent)]
    Stats(#[from] yardstick_stats::StatsError),
}

impl AnalysisError {
    /// An [`AnalysisError::Invalid`] with a hint.
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Self {
        AnalysisError::Invalid {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl yardstick_error::UserFacing for AnalysisError {
    /// Whether the error is the user's input being wrong (exit 2) rather than a failure.
    fn is_invalid_input(&self) -> bool {
        matches!(self, AnalysisError::Invalid { .. })
    }

    /// A hint for the user, when there is one.
    fn hint(&self) -> Option<String> {
        match self {
            AnalysisError::Invalid { hint, .. } => hint.clone(),
            AnalysisError::Stats(_) => None,
        }
    }
}
