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

/// Why a `yardstick bench micro --json` document (or a `yardstick import --json` one) gives no
/// figures: it is not JSON, or it lacks the results asked for.
#[derive(Debug, thiserror::Error)]
pub enum MicroDocError {
    /// The text is not JSON.
    #[error("{0}")]
    Json(serde_json::Error),
    /// There is no `results` list to read ceilings from.
    #[error("no `results` list")]
    NoResultsList,
    /// There is no `results` list to read a node's figures from.
    #[error("no micro results (`results`)")]
    NoMicroResults,
    /// A result lacks its name or value.
    #[error("results[{0}] has no `name` and `value`")]
    Unnamed(usize),
    /// The workload's dtype has no GEMM element type.
    #[error("no GEMM element type for dtype `{0}`")]
    NoGemmType(String),
    /// The document lacks the GEMM or the memory result the ceilings need.
    #[error("needs a gemm.{0}.N and a memory.triad result (`bench micro memory gemm`)")]
    NoCeilings(String),
    /// The document holds GPU figures but lacks the GPU GEMM or HBM result the ceilings need.
    #[error(
        "holds GPU results but needs a gpu.gemm.{0}.peak (or gpu.gemm.{0}.N) and a gpu.hbm.copy \
         result (the GPU micro layer)"
    )]
    NoGpuCeilings(String),
}
