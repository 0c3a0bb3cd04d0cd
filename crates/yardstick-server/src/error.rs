//! Errors: [`ServerError`] when the server cannot start, [`ApiError`] for one request (always a
//! JSON body `{"error": …, "hint": …}` with a 4xx status for anything the client can fix).

use aide::OperationOutput;
use aide::openapi::{MediaType, Operation, Response, SchemaObject, StatusCode as ApiStatus};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use schemars::JsonSchema;
use serde::Serialize;
use yardstick_store::StoreError;
use yardstick_store::run::FindRunError;

/// Why the server could not start (or a token could not be created).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration cannot work (a missing store directory, an unreadable token file...).
    #[error("{message}")]
    Config {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// The store or warehouse failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An I/O error while serving.
    #[error(transparent)]
    Io(std::io::Error),
}

impl ServerError {
    pub(crate) fn config(message: impl Into<String>, hint: Option<&str>) -> ServerError {
        ServerError::Config {
            message: message.into(),
            hint: hint.map(str::to_owned),
        }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
    /// What to do about it, when there is something to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// An error answer to one request.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status (4xx for the client's mistakes, 5xx only for the server's own failures).
    pub status: StatusCode,
    /// The JSON body.
    pub body: ErrorBody,
}

impl ApiError {
    /// An error with a status, a message and an optional hint.
    pub fn new(status: StatusCode, error: impl Into<String>, hint: Option<&str>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                error: error.into(),
                hint: hint.map(str::to_owned),
            },
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(error: impl Into<String>, hint: Option<&str>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, error, hint)
    }

    /// 404: no such thing.
    pub fn not_found(error: impl Into<String>, hint: Option<&str>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, error, hint)
    }

    /// 503: the server cannot answer now (its warehouse does not).
    pub fn unavailable(error: impl Into<String>, hint: Option<&str>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, error, hint)
    }

    /// 500: the server failed (the warehouse, the disk); never for bad input.
    pub fn internal(error: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string(), None)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Invalid(_) => ApiError::bad_request(e.to_string(), None),
            StoreError::NotFound(_) => ApiError::not_found(e.to_string(), None),
            StoreError::Refused(_) => ApiError::new(StatusCode::FORBIDDEN, e.to_string(), None),
            StoreError::Conflict(_) => ApiError::new(
                StatusCode::CONFLICT,
                e.to_string(),
                Some("set `force: true` to replace it"),
            ),
            e => ApiError::internal(e),
        }
    }
}

impl From<FindRunError> for ApiError {
    fn from(e: FindRunError) -> ApiError {
        match e {
            FindRunError::Store(e) => e.into(),
            FindRunError::Ambiguous { .. } => ApiError::bad_request(e.to_string(), e.hint()),
            e => ApiError::not_found(
                e.to_string(),
                Some("GET /api/v1/runs lists the stored runs"),
            ),
        }
    }
}

impl From<yardstick_gate::GateError> for ApiError {
    fn from(e: yardstick_gate::GateError) -> ApiError {
        use yardstick_gate::GateError as G;
        match e {
            G::Store(e) => e.into(),
            G::Invalid(m) if m.starts_with("no run") => ApiError::not_found(m, None),
            G::Invalid(m) => ApiError::bad_request(m, None),
            e @ (G::Io { .. } | G::Malformed { .. }) => ApiError::internal(e),
            e => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string(), None),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

/// The documented error statuses of every operation.
const ERROR_STATUSES: &[(u16, &str)] = &[
    (
        400,
        "The request is malformed (a bad parameter, body or path).",
    ),
    (401, "A token is required, or the token given is unknown."),
    (403, "The token's scope does not allow this."),
    (404, "No such run, artifact, push or route."),
    (
        409,
        "The request conflicts with what is stored (a different run under the same id).",
    ),
    (413, "The request body is too large."),
    (
        429,
        "Too many pushes are open on the server at once (its --max-open-pushes).",
    ),
    (
        422,
        "The request is well formed but cannot be answered (e.g. runs that cannot be compared).",
    ),
    (500, "The server failed (its warehouse or disk)."),
    (
        503,
        "The warehouse does not answer (or no connection to it came free in time).",
    ),
    (
        507,
        "The server has no room to stage the push (its --max-staged-bytes, or a full disk).",
    ),
];

impl OperationOutput for ApiError {
    type Inner = ErrorBody;

    fn operation_response(
        ctx: &mut aide::generate::GenContext,
        _operation: &mut Operation,
    ) -> Option<Response> {
        let json_schema = ctx.schema.subschema_for::<ErrorBody>();
        Some(Response {
            description: "An error: what went wrong and, when there is one, a hint.".into(),
            content: [(
                "application/json".to_string(),
                MediaType {
                    schema: Some(SchemaObject {
                        json_schema,
                        example: None,
                        external_docs: None,
                    }),
                    ..Default::default()
                },
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        })
    }

    fn inferred_responses(
        ctx: &mut aide::generate::GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<ApiStatus>, Response)> {
        let Some(base) = Self::operation_response(ctx, operation) else {
            return Vec::new();
        };
        ERROR_STATUSES
            .iter()
            .map(|(code, what)| {
                let mut r = base.clone();
                r.description = (*what).to_string();
                (Some(ApiStatus::Code(*code)), r)
            })
            .collect()
    }
}
