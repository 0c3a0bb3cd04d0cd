//! `yardstick push RUN --to URL`: send a finished run to a team server (docs/server.md,
//! "Pushing runs").

use std::path::PathBuf;

use yardstick_server::client::{Remote, token_from_env};

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid, lib_error};
use crate::output;

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
        .map_err(lib_error)
    }
}

/// Runs `yardstick push`.
pub fn run(args: PushArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let dir = yardstick_store::run::resolve_dir(&args.store, &args.run)
        .map_err(|e| invalid(e.with_hint(), None))?;
    let remote = args.remote.remote(&args.to)?;
    let out = yardstick_server::client::push(&remote, &dir).map_err(lib_error)?;
    if g.json {
        output::json(&out)?;
    } else {
        crate::output::outln!("{}", out.text())?;
    }
    Ok(Status::Ok)
}
