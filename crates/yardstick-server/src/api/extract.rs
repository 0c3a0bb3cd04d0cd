//! Extractors whose rejections are JSON errors ([`ApiError`]) instead of axum's plain text, and
//! which document themselves in the OpenAPI document like the axum extractors they wrap.

use aide::OperationInput;
use aide::openapi::{MediaType, Operation, RequestBody, SchemaObject};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use bytes::Bytes;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::ApiError;

/// Query parameters (`axum::extract::Query`); a bad one is a 400 with a JSON body.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| {
                ApiError::bad_request(
                    e.body_text(),
                    Some("see /api/openapi.json for this route's parameters"),
                )
            })
    }
}

impl<T: JsonSchema> OperationInput for ApiQuery<T> {
    fn operation_input(ctx: &mut aide::generate::GenContext, operation: &mut Operation) {
        axum::extract::Query::<T>::operation_input(ctx, operation);
    }
}

/// Path parameters (`axum::extract::Path`); a bad one is a 400 with a JSON body.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| ApiError::bad_request(e.body_text(), None))
    }
}

impl<T: JsonSchema> OperationInput for ApiPath<T> {
    fn operation_input(ctx: &mut aide::generate::GenContext, operation: &mut Operation) {
        axum::extract::Path::<T>::operation_input(ctx, operation);
    }
}

/// A request body of text (a spec's YAML), bounded by the route's body limit: too large is a
/// 413 with a JSON body.
pub struct TextBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for TextBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, state)
            .await
            .map(TextBody)
            .map_err(|e| {
                ApiError::new(
                    e.status(),
                    format!("cannot read the request body: {}", e.body_text()),
                    Some("send the spec's YAML text as the body, at most 1 MiB"),
                )
            })
    }
}

impl OperationInput for TextBody {
    fn operation_input(ctx: &mut aide::generate::GenContext, operation: &mut Operation) {
        let media = |json_schema| MediaType {
            schema: Some(SchemaObject {
                json_schema,
                example: None,
                external_docs: None,
            }),
            ..Default::default()
        };
        // Any text is answered (an empty or non-mapping document with its diagnostic, as
        // `yardstick validate` does), so any YAML document and any string is a valid body, and
        // an absent body is an empty spec.
        let text = media(ctx.schema.subschema_for::<String>());
        let yaml = media(schemars::Schema::default());
        aide::operation::set_body(
            ctx,
            operation,
            RequestBody {
                description: Some("A BenchmarkRun spec, as YAML text (at most 1 MiB).".into()),
                content: [
                    ("application/yaml".to_string(), yaml),
                    ("text/plain".to_string(), text),
                ]
                .into_iter()
                .collect(),
                required: false,
                extensions: Default::default(),
            },
        );
    }
}

/// A JSON request body (`axum::Json`), bounded by the route's body limit; one that does not
/// read is a 400 (413 when too large) with a JSON body.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            ApiError::new(
                e.status(),
                format!("cannot read the request body: {}", e.body_text()),
                None,
            )
        })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::bad_request(
                format!("the body is not the JSON this route takes: {e}"),
                Some("see /api/openapi.json for this route's request body"),
            )
        })
    }
}

impl<T: JsonSchema> OperationInput for JsonBody<T> {
    fn operation_input(ctx: &mut aide::generate::GenContext, operation: &mut Operation) {
        axum::Json::<T>::operation_input(ctx, operation);
    }
}

/// A request body of raw bytes, streamed by the handler (which bounds it).
pub struct RawBody(pub axum::body::Body);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        Ok(RawBody(req.into_body()))
    }
}

impl OperationInput for RawBody {
    fn operation_input(ctx: &mut aide::generate::GenContext, operation: &mut Operation) {
        let schema = ctx.schema.subschema_for::<Vec<u8>>();
        aide::operation::set_body(
            ctx,
            operation,
            RequestBody {
                description: Some("The bytes of one artifact, exactly as stored.".into()),
                content: [(
                    "application/octet-stream".to_string(),
                    MediaType {
                        schema: Some(SchemaObject {
                            json_schema: schema,
                            example: None,
                            external_docs: None,
                        }),
                        ..Default::default()
                    },
                )]
                .into_iter()
                .collect(),
                required: true,
                extensions: Default::default(),
            },
        );
    }
}
