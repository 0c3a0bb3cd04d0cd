//! Typed errors of the gate.

use std::path::PathBuf;

use yardstick_store::StoreError;

/// What can go wrong while comparing or gating runs.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The warehouse or the run directory failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file of a run directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file of a run directory is not what it should be.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The user asked for something that does not exist or cannot be done (exit 2).
    #[error("{0}")]
    Invalid(String),
    /// No stored baseline for the run's machine profile and benchmark (exit 2).
    #[error(
        "no baseline stored for benchmark `{benchmark}` on machine profile `{profile}`; save one \
         with `yardstick baseline save RUN`"
    )]
    NoBaseline {
        /// Machine profile.
        profile: String,
        /// Benchmark name.
        benchmark: String,
    },
    /// The two runs were measured on different machine profiles (exit 2 unless cross-profile).
    #[error(
        "machine profiles differ: baseline `{baseline}`, candidate `{candidate}`; results from \
         different machines are not comparable (pass --cross-profile for an exploratory, \
         non-gating comparison)"
    )]
    ProfileMismatch {
        /// The baseline's profile.
        baseline: String,
        /// The candidate's profile.
        candidate: String,
    },
    /// `--baseline DIR` holds no baseline file of the candidate's machine profile (exit 2).
    #[error(
        "no baseline file for machine profile {profile} in {} (looked for {})",
        dir.display(),
        file.display()
    )]
    NoBaselineFile {
        /// The candidate's machine profile.
        profile: String,
        /// The directory given.
        dir: PathBuf,
        /// The file looked for.
        file: PathBuf,
    },
    /// `--confirm` could not read the candidate's spec (exit 2).
    #[error("--confirm re-runs the candidate's spec, but {}: {error}", path.display())]
    ConfirmSpecUnreadable {
        /// The run directory's `spec.yaml`.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// `--confirm`: the candidate's spec no longer validates (exit 2).
    #[error("--confirm: {} no longer validates", path.display())]
    ConfirmSpecInvalid {
        /// The run directory's `spec.yaml`.
        path: PathBuf,
    },
    /// An eval result file could not be compared.
    #[error(transparent)]
    Eval(#[from] yardstick_eval::EvalError),
    /// A statistics computation failed unexpectedly.
    #[error("statistics: {0}")]
    Stats(#[from] yardstick_stats::StatsError),
}

impl yardstick_error::UserFacing for GateError {
    /// True when the error is the user's input (exit code 2) rather than a runtime failure.
    fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            GateError::Invalid(_)
                | GateError::NoBaseline { .. }
                | GateError::ProfileMismatch { .. }
                | GateError::Store(
                    StoreError::Invalid(_)
                        | StoreError::NotFound(_)
                        | StoreError::Conflict(_)
                        | StoreError::Refused(_)
                )
                | GateError::Eval(yardstick_eval::EvalError::BadResult { .. })
                | GateError::NoBaselineFile { .. }
                | GateError::ConfirmSpecUnreadable { .. }
                | GateError::ConfirmSpecInvalid { .. }
        )
    }

    /// What to do about it, when there is something to say beyond the message.
    fn hint(&self) -> Option<String> {
        let hint = match self {
            GateError::NoBaselineFile { .. } => {
                Some("write one with `yardstick baseline export --dir DIR` on this machine profile")
            }
            GateError::ConfirmSpecUnreadable { .. } => {
                Some("the run directory must be reachable from this machine")
            }
            _ => None,
        };
        hint.map(str::to_string)
    }
}
