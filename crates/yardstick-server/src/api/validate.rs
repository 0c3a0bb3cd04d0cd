//! `POST /api/v1/validate`: the diagnostics `yardstick validate --json` prints, for a spec sent
//! as the request body. Nothing is stored; an invalid spec is a 200 answer with `valid: false`.

use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yardstick_spec::Diagnostic;

use super::extract::{ApiQuery, TextBody};
use crate::ApiError;

/// Largest request body of `POST /api/v1/validate`.
pub const VALIDATE_BODY_LIMIT: usize = 1024 * 1024;

/// Options of a validation.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateQuery {
    /// Treat warnings as errors (`yardstick validate --deny-warnings`).
    #[serde(default)]
    pub deny_warnings: bool,
    /// The name the diagnostics give the spec (default `<request>`).
    pub name: Option<String>,
}

/// One spec's result, as in `yardstick validate --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileReport {
    /// The spec's name.
    pub file: String,
    /// Whether it is valid.
    pub valid: bool,
    /// Errors.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Every problem: severity, rule id, message, hint, field path, line and column.
    pub diagnostics: Vec<Diagnostic>,
}

/// What `yardstick validate --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ValidateOut {
    /// Whether every spec is valid.
    pub valid: bool,
    /// One entry per spec (here: the body).
    pub files: Vec<FileReport>,
}

/// Validates spec bytes the way the CLI does (`yardstick_spec::check_bytes`; files a spec
/// names relative to its directory are not checked, having no directory here).
pub fn check(bytes: &[u8], q: &ValidateQuery) -> ValidateOut {
    let c = yardstick_spec::check_bytes(bytes);
    let valid = c.is_valid() && !(q.deny_warnings && c.warnings() > 0);
    ValidateOut {
        valid,
        files: vec![FileReport {
            file: q.name.clone().unwrap_or_else(|| "<request>".to_string()),
            valid,
            errors: c.errors(),
            warnings: c.warnings(),
            diagnostics: c.diagnostics,
        }],
    }
}

pub(super) async fn validate(
    ApiQuery(q): ApiQuery<ValidateQuery>,
    TextBody(body): TextBody,
) -> Result<Json<ValidateOut>, ApiError> {
    // Validation is CPU work (a YAML parse of up to 1 MiB): off the async workers.
    tokio::task::spawn_blocking(move || Json(check(&body, &q)))
        .await
        .map_err(ApiError::internal)
}
