//! `yardstick keygen PATH`: create an ed25519 signing key pair for signed provenance.

use std::path::PathBuf;

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};

/// Create an ed25519 key pair: the secret key at PATH (mode 0600) and the public key at PATH.pub.
/// Name the secret key in a spec's `provenance.key`; give the public key to `verify --key`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  yardstick keygen ~/.config/yardstick/signing.key")]
pub struct KeygenArgs {
    /// Where to write the secret key (never overwritten).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}

pub fn run(args: KeygenArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let path = yardstick_store::sign::expand_home(&args.path.to_string_lossy());
    let (public, keyid) = yardstick_store::sign::keygen(&path).map_err(|e| {
        invalid(
            e.to_string(),
            Some("choose another path, or delete the old key deliberately"),
        )
    })?;
    if g.json {
        crate::output::json(&KeygenOutput {
            secret_key: &path,
            public_key: &public,
            keyid: &keyid,
        })?;
    } else {
        crate::output::outln!(
            "secret key: {} (mode 0600)\npublic key: {}\nkey id:     {keyid}",
            path.display(),
            public.display()
        )?;
    }
    Ok(Status::Ok)
}

/// What `yardstick keygen PATH --json` prints (never the key itself).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct KeygenOutput<'a> {
    /// Where the secret key was written (mode 0600).
    pub secret_key: &'a std::path::Path,
    /// Where its public key was written (`.pub`).
    pub public_key: &'a std::path::Path,
    /// The key id manifests and attestations name.
    pub keyid: &'a str,
}

/// Loads the secret key a `--key KEY` flag names (`~` expands), or `None` without the flag; an
/// unreadable or malformed key is invalid input (exit 2).
pub fn secret_key_arg(
    path: Option<&std::path::Path>,
) -> anyhow::Result<Option<yardstick_store::sign::SigningKey>> {
    let Some(p) = path else { return Ok(None) };
    yardstick_store::sign::load_signing_key(&yardstick_store::sign::expand_home(
        &p.to_string_lossy(),
    ))
    .map(Some)
    .map_err(|e| {
        invalid(
            e.to_string(),
            Some("--key takes a secret key file written by `yardstick keygen`"),
        )
    })
}
