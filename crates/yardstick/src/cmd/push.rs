//! `yardstick push RUN --to URL`: send a finished run to a team server (docs/server.md,
//! "Pushing runs").

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use yardstick_server::api::push::{BlobStored, PushStart, PushState, PushStatus};
use yardstick_store::run::{ATTESTATION, MANIFEST};

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};
use crate::output;
use crate::remote::{Remote, RemoteError, token_from_env};

/// Push a finished run to a `yardstick server`: its manifest first (the server checks the
/// paths, the size, the signature against its trusted keys and the run id before anything is
/// uploaded), then every artifact the server does not have yet, each checked against its sha256,
/// then a commit that verifies, stores and indexes the run.
///
/// Pushing a run the server already has is answered `already stored` (exit 0). A push cut off
/// midway leaves nothing on the server; run the same command again and only what is missing is
/// sent. The token (scope push) is read from the variable --token-env names, never from the
/// command line. See docs/server.md, "Pushing runs".
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
export YARDSTICK_TOKEN=ysk_…        # from `yardstick server token create --scope push`\n  \
yardstick push 01JD8Y --to https://yardstick.internal:8686\n  \
yardstick push yardstick-store/runs/01JD8Y… --to http://127.0.0.1:8686 --json\n  \
yardstick push 01JD8Y --to https://ys.internal --ca-cert ca.pem --token-env CI_YARDSTICK_TOKEN\n  \
yardstick run bench.yaml --push https://yardstick.internal:8686   # run, then push\n\n\
Exit status: 0 stored (or already stored); 2 refused by the server (bad or missing token, a \
file that no longer matches its hash, an unsigned or untrusted run, too large, another run \
under the same id) or invalid input; 1 the server could not be reached or failed.")]
pub struct PushArgs {
    /// The run: an id (or unique prefix) in --store, or the path of a run directory.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The server's URL (`http://HOST:PORT` or `https://HOST:PORT`).
    #[arg(long, value_name = "URL")]
    pub to: String,
    #[command(flatten)]
    pub remote: RemoteOpts,
    /// Store directory the run id is looked up in.
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
}

/// How to reach a server: token and TLS.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteOpts {
    /// The variable holding the server's bearer token (`server token create`).
    #[arg(long, default_value = "YARDSTICK_TOKEN", value_name = "VAR")]
    pub token_env: String,
    /// Also trust this CA certificate (PEM) for an https:// server.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

impl RemoteOpts {
    /// A client of `url` with the token from the variable (none when it is unset).
    pub fn remote(&self, url: &str) -> anyhow::Result<Remote> {
        Remote::new(
            url,
            token_from_env(&self.token_env),
            self.ca_cert.as_deref(),
        )
        .map_err(RemoteError::into_cli)
    }
}

/// What `yardstick push --json` prints.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PushOutput {
    /// The run's id.
    pub run_id: String,
    /// The server.
    pub url: String,
    /// The push's id on the server.
    pub push_id: String,
    /// `stored`.
    pub state: PushState,
    /// The server had this run already: nothing was sent but the manifest.
    pub already_stored: bool,
    /// Artifacts of the run.
    pub artifacts: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Contents uploaded by this push (the server had the others).
    pub uploaded: usize,
    /// Bytes uploaded by this push.
    pub uploaded_bytes: u64,
    /// Wall time of the push, in seconds.
    pub seconds: f64,
    /// The signature, as the server checked it.
    pub signature: String,
    /// Whether a key the server trusts signed the run.
    pub verified: bool,
    /// The server's gating of the run against its baseline (null when none is set there).
    pub gate: Option<yardstick_server::api::push::PushGate>,
}

impl PushOutput {
    /// One line for people.
    pub fn text(&self) -> String {
        let line = if self.already_stored {
            format!(
                "run {}: already stored on {} (nothing to send)",
                self.run_id, self.url
            )
        } else {
            format!(
                "run {}: pushed to {} ({} artifact(s), {} of {} byte(s) sent in {:.2} s); {}",
                self.run_id,
                self.url,
                self.artifacts,
                self.uploaded_bytes,
                self.bytes,
                self.seconds,
                self.signature
            )
        };
        match &self.gate {
            Some(g) => format!(
                "{line}\nthe server gated it against baseline {}: {}",
                g.baseline_run, g.verdict
            ),
            None => line,
        }
    }
}

/// Pushes the run in `dir` to `remote`.
pub fn push_dir(remote: &Remote, dir: &Path) -> anyhow::Result<PushOutput> {
    let manifest_bytes = std::fs::read(dir.join(MANIFEST)).map_err(|e| {
        invalid(
            format!("{}: {e}", dir.join(MANIFEST).display()),
            Some("name a run directory or a run id in --store"),
        )
    })?;
    let manifest = yardstick_store::read_manifest(dir).map_err(|e| invalid(e.to_string(), None))?;
    let attestation = match std::fs::read(dir.join(ATTESTATION)) {
        Ok(b) => Some(
            String::from_utf8(b)
                .map_err(|_| invalid(format!("{}: not UTF-8", ATTESTATION), None))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(invalid(format!("{ATTESTATION}: {e}"), None)),
    };
    let start = PushStart {
        manifest: String::from_utf8(manifest_bytes)
            .map_err(|_| invalid("manifest.json is not UTF-8", None))?,
        attestation,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let t0 = Instant::now();
    rt.block_on(async {
        let status: PushStatus = remote
            .post("/api/v1/pushes", &start)
            .await
            .map_err(RemoteError::into_cli)?;
        let mut uploaded = 0;
        let mut uploaded_bytes = 0;
        let mut last = status.clone();
        if status.state == PushState::Uploading {
            for sha in &status.missing {
                // Any artifact with this content: the server stores it once.
                let Some(a) = manifest.artifacts.iter().find(|a| &a.sha256 == sha) else {
                    continue;
                };
                let file = yardstick_store::fsutil::open_in(dir, &a.path)
                    .map_err(|e| invalid(format!("{}: {e}", a.path), None))?
                    .ok_or_else(|| {
                        invalid(
                            format!("{} is listed in the manifest but missing", a.path),
                            Some("`yardstick verify RUN` shows what is missing"),
                        )
                    })?;
                let size = file.metadata().map(|m| m.len()).unwrap_or(a.size);
                let _: BlobStored = remote
                    .put_file(
                        &format!("/api/v1/pushes/{}/blobs/{sha}", status.push_id),
                        file,
                        size,
                    )
                    .await
                    .map_err(|e| {
                        let what = format!("uploading {}", a.path);
                        e.into_cli().context(what)
                    })?;
                uploaded += 1;
                uploaded_bytes += size;
            }
            last = remote
                .post(
                    &format!("/api/v1/pushes/{}/commit", status.push_id),
                    &serde_json::json!({}),
                )
                .await
                .map_err(RemoteError::into_cli)?;
        }
        Ok(PushOutput {
            run_id: last.run_id,
            url: remote.url().to_string(),
            push_id: last.push_id,
            state: last.state,
            already_stored: last.already_stored,
            artifacts: last.artifacts,
            bytes: last.bytes,
            uploaded,
            uploaded_bytes,
            seconds: t0.elapsed().as_secs_f64(),
            signature: last.signature,
            verified: last.verified,
            gate: last.gate,
        })
    })
}

/// Runs `yardstick push`.
pub fn run(args: PushArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let dir = yardstick_store::run::resolve_dir(&args.store, &args.run)
        .map_err(|e| invalid(e.with_hint(), None))?;
    let remote = args.remote.remote(&args.to)?;
    let out = push_dir(&remote, &dir)?;
    if g.json {
        output::json(&out)?;
    } else {
        crate::output::outln!("{}", out.text())?;
    }
    Ok(Status::Ok)
}
