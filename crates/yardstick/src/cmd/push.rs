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

    /// A failed exchange with the server, in the command line's terms: a refused token (401,
    /// 403) says which variable the token came from and how to get one of the `scope` needed,
    /// not only the HTTP header the server asks for.
    pub fn error(&self, e: yardstick_server::client::ClientError, scope: &str) -> anyhow::Error {
        use yardstick_server::client::ClientError;
        let var = &self.token_env;
        let create = format!("`yardstick server token create --scope {scope}` on the server");
        let hint = match &e {
            ClientError::Status { status: 401, .. } if std::env::var_os(var).is_none() => format!(
                "the server wants a token and ${var} is not set: set it to a token ({create}), \
                 or name another variable with --token-env VAR"
            ),
            ClientError::Status { status: 401, .. } => {
                format!("the server does not know the token in ${var}: create one with {create}")
            }
            ClientError::Status { status: 403, .. } => {
                format!("the token in ${var} lacks the scope `{scope}`: create one with {create}")
            }
            _ => return lib_error(e),
        };
        invalid(e.to_string(), Some(&hint))
    }
}

/// Runs `yardstick push`.
pub fn run(args: PushArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let dir = yardstick_store::run::resolve_dir(&args.store, &args.run)
        .map_err(|e| invalid(e.with_hint(), None))?;
    let remote = args.remote.remote(&args.to)?;
    let out =
        yardstick_server::client::push(&remote, &dir).map_err(|e| args.remote.error(e, "push"))?;
    if g.json {
        output::json(&out)?;
    } else {
        crate::output::outln!("{}", out.text())?;
    }
    Ok(Status::Ok)
}
