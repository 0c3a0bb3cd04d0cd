//! The crate's error type.

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The sample is empty.
    #[error("no samples")]
    Empty,
    /// A sample is NaN or infinite.
    #[error("sample {index} is not a finite number")]
    NonFinite {
        /// Zero-based position of the offending sample.
        index: usize,
    },
    /// The sample is too small for what was asked (e.g. a p99 CI at 95 % needs n >= 299).
    #[error("not enough samples: {what} needs n >= {needed}, have {have}")]
    NotEnoughSamples {
        /// What was asked for.
        what: String,
        /// The smallest sample size that would do.
        needed: usize,
        /// The sample size given.
        have: usize,
    },
    /// A parameter is outside its domain (e.g. a quantile outside [0, 1]).
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The statistic is undefined for this data (e.g. a ratio with a zero denominator).
    #[error("undefined: {0}")]
    Undefined(String),
}
