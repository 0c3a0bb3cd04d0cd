//! A run's artifacts: the list from its manifest, and one artifact streamed.
//!
//! Only a path the manifest lists is served, read through `yardstick_store::fsutil::open_in`
//! (no `..`, no symbolic link, regular files only). The file is hashed while it streams; when
//! the bytes do not match the manifest's sha256 the response is cut off with an error, so a
//! client never receives a complete-looking copy of a corrupted file.

use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use yardstick_store::Artifact;
use yardstick_store::warehouse::find_run;

use super::extract::ApiPath;
use super::runs::RunPath;
use crate::ApiError;
use crate::state::AppState;

/// The artifacts of one run.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactsOut {
    /// The run's full id.
    pub run_id: String,
    /// Every artifact the manifest lists: path, size, sha256, kind.
    pub artifacts: Vec<Artifact>,
}

fn manifest_of(
    st: &AppState,
    w: &mut dyn yardstick_store::warehouse::Warehouse,
    id: &str,
) -> Result<(std::path::PathBuf, yardstick_store::Manifest), ApiError> {
    let run = find_run(w, id)?;
    let dir = st.run_dir(&run).ok_or_else(|| {
        ApiError::not_found(
            format!("run {} has no run directory on this server", run.run_id),
            Some("the warehouse knows the run, but its files are in another store"),
        )
    })?;
    let manifest = yardstick_store::read_manifest(&dir)?;
    Ok((dir, manifest))
}

pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    ApiPath(p): ApiPath<RunPath>,
) -> Result<Json<ArtifactsOut>, ApiError> {
    state
        .blocking(move |st, w| {
            let (_, m) = manifest_of(st, w, &p.id)?;
            Ok(Json(ArtifactsOut {
                run_id: m.run_id,
                artifacts: m.artifacts,
            }))
        })
        .await
}

/// The artifact named in the path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ArtifactPath {
    /// Run id (ULID), or a unique prefix of one.
    pub id: String,
    /// The artifact's path inside the run directory, as the manifest lists it.
    pub path: String,
}

/// The response body: chunks read on a blocking thread.
struct ChannelBody(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(http_body::Frame::data)))
    }
}

/// Every content type an artifact is served with ([`content_type`]), for the OpenAPI document.
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/jsonl",
    "text/plain; charset=utf-8",
    "text/csv",
    "application/octet-stream",
];

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, e)| e) {
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("jsonl") => "application/jsonl",
        Some("txt" | "log") => "text/plain; charset=utf-8",
        Some("csv") => "text/csv",
        _ => "application/octet-stream",
    }
}

/// An artifact's bytes (`application/octet-stream` or its own type), with its sha256 in
/// `X-Yardstick-Sha256`.
pub struct ArtifactResponse(Response);

impl IntoResponse for ArtifactResponse {
    fn into_response(self) -> Response {
        self.0
    }
}

impl aide::OperationOutput for ArtifactResponse {
    type Inner = Vec<u8>;

    fn operation_response(
        ctx: &mut aide::generate::GenContext,
        operation: &mut aide::openapi::Operation,
    ) -> Option<aide::openapi::Response> {
        let mut r = Vec::<u8>::operation_response(ctx, operation)?;
        r.description = "The artifact's bytes; its sha256 (hex) is in X-Yardstick-Sha256.".into();
        // The same bytes schema under each type an artifact is served with.
        let media = r.content.values().next().cloned().unwrap_or_default();
        r.content = CONTENT_TYPES
            .iter()
            .map(|t| (t.to_string(), media.clone()))
            .collect();
        Some(r)
    }

    fn inferred_responses(
        ctx: &mut aide::generate::GenContext,
        operation: &mut aide::openapi::Operation,
    ) -> Vec<(Option<aide::openapi::StatusCode>, aide::openapi::Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| vec![(Some(aide::openapi::StatusCode::Code(200)), r)])
            .unwrap_or_default()
    }
}

pub(super) async fn download(
    State(state): State<Arc<AppState>>,
    ApiPath(p): ApiPath<ArtifactPath>,
) -> Result<ArtifactResponse, ApiError> {
    // Not an artifact of any run (a traversal, an absolute path, a control character): the same
    // answer as any other path the manifest does not list, saying why.
    if let Some(why) = yardstick_store::fsutil::unsafe_relative(&p.path) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("artifact path {:?} is refused: {why}", p.path),
            Some("use a path GET /api/v1/runs/{id}/artifacts lists"),
        ));
    }
    let (file, artifact) = state
        .blocking(move |st, w| {
            let (dir, m) = manifest_of(st, w, &p.id)?;
            let Some(a) = m.artifact(&p.path).cloned() else {
                return Err(ApiError::not_found(
                    format!("run {} has no artifact {:?}", m.run_id, p.path),
                    Some("GET /api/v1/runs/{id}/artifacts lists them"),
                ));
            };
            let f = yardstick_store::fsutil::open_in(&dir, &a.path)?.ok_or_else(|| {
                ApiError::not_found(
                    format!(
                        "artifact {:?} of run {} is no longer stored (`yardstick gc` drops raw samples and logs of old runs)",
                        a.path, m.run_id
                    ),
                    None,
                )
            })?;
            let size = f.metadata().map(|m| m.len()).map_err(ApiError::internal)?;
            if size != a.size {
                return Err(ApiError::internal(format!(
                    "artifact {:?} of run {} has {size} bytes, its manifest says {}: the store is damaged (`yardstick verify`)",
                    a.path, m.run_id, a.size
                )));
            }
            Ok((f, a))
        })
        .await?;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let expected = artifact.sha256.clone();
    tokio::task::spawn_blocking(move || {
        let mut f = file;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    h.update(&buf[..n]);
                    if tx
                        .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                        .is_err()
                    {
                        return; // The client went away.
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
        if hex::encode(h.finalize()) != expected {
            let _ = tx.blocking_send(Err(std::io::Error::other(
                "the artifact does not match its manifest's sha256",
            )));
        }
    });
    let mut resp = Response::new(Body::new(ChannelBody(rx)));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(&artifact.path)),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(artifact.size));
    if let Ok(v) = HeaderValue::from_str(&artifact.sha256) {
        h.insert("x-yardstick-sha256", v.clone());
        if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", artifact.sha256)) {
            h.insert(header::ETAG, etag);
        }
    }
    Ok(ArtifactResponse(resp))
}
