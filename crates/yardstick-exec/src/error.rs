//! The crate's error type.

use std::path::PathBuf;

/// Why a benchmark could not be carried out. A workload that fails, times out or
/// writes malformed metrics is *not* an error: it is measured and reported.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The configuration is unusable (empty command, zero runs, a bad parameter).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: Option<String>,
    },
    /// The command could not be started at all (not found, not executable).
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program that was asked for.
        program: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A file or directory the benchmark needs could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A system call failed while supervising a child.
    #[error("{call} failed: {source}")]
    Sys {
        /// The call, e.g. `wait4`.
        call: &'static str,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The workload wrote no metric records where some were required.
    #[error("the workload wrote no metric records to {path} (it was given as $YARDSTICK_METRICS)")]
    NoMetrics {
        /// The metrics file that stayed empty.
        path: PathBuf,
    },
    /// A statistic could not be computed.
    #[error(transparent)]
    Stats(#[from] yardstick_stats::StatsError),
}

impl ExecError {
    /// An [`ExecError::Invalid`] with a hint.
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Self {
        ExecError::Invalid {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl yardstick_error::UserFacing for ExecError {
    /// A hint for the user, when there is one.
    fn hint(&self) -> Option<String> {
        match self {
            ExecError::Invalid { hint, .. } => hint.clone(),
            ExecError::Spawn { .. } => {
                Some("check the program name and PATH; use `sh -c '...'` for shell syntax".into())
            }
            ExecError::NoMetrics { .. } => Some(
                "append one JSON object per step to the file named by $YARDSTICK_METRICS, e.g. \
                 {\"step\":1,\"step_time_s\":0.18,\"tokens\":4096}; see docs/metric-protocol.md"
                    .into(),
            ),
            _ => None,
        }
    }

    /// Whether the error is the user's input being wrong (exit 2) rather than a runtime failure.
    fn is_invalid_input(&self) -> bool {
        matches!(self, ExecError::Invalid { .. } | ExecError::Spawn { .. })
    }
}
