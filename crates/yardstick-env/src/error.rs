use std::path::PathBuf;

/// Errors of environment capture and telemetry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing the Parquet telemetry file failed.
    #[error("writing Parquet {}: {message}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What the Parquet writer reported.
        message: String,
    },
    /// A setting is out of range (e.g. a zero sampling interval).
    #[error("{0}")]
    InvalidParameter(String),
    /// A capture (JSON) could not be decoded.
    #[error("decoding a capture: {0}")]
    Decode(#[from] serde_json::Error),
    /// The telemetry thread panicked or could not be started.
    #[error("telemetry sampler: {0}")]
    Sampler(String),
}
