//! The errors of report building and writing.

/// Why a report could not be built or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The caller asked for something that does not exist (unknown run, ambiguous prefix).
    #[error("{0}")]
    NotFound(String),
    /// An input file is not what it should be (a gate file that is not `gate --json` output).
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The store or warehouse failed.
    #[error(transparent)]
    Store(#[from] yardstick_store::StoreError),
    /// Drawing a plot or writing a workbook failed.
    #[error("rendering {what}: {message}")]
    Render {
        /// The plot or file being rendered.
        what: String,
        /// The underlying error.
        message: String,
    },
}

impl yardstick_error::UserFacing for ReportError {
    /// True when the user's input is at fault (exit 2), not the machine (exit 1).
    fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            ReportError::NotFound(_) | ReportError::Malformed { .. }
        ) || matches!(
            self,
            ReportError::Store(
                yardstick_store::StoreError::NotFound(_) | yardstick_store::StoreError::Invalid(_)
            )
        )
    }
}

impl ReportError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn render(what: &str, e: impl std::fmt::Display) -> Self {
        ReportError::Render {
            what: what.to_string(),
            message: e.to_string(),
        }
    }
}
