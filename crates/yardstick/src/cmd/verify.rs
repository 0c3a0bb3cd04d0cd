//! `yardstick verify RUN`: check every hash and the signature of a stored run.

use std::path::PathBuf;

use yardstick_store::verify::VerifyOptions;

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};

/// Verify a stored run: recompute every artifact's sha256 against the manifest, list missing and
/// unlisted files, and check the attestation (DSSE, ed25519).
///
/// A signature counts only when a trusted public key verifies it: give keys with --key
/// (repeatable) or --trusted DIR (every *.pub in it), or trust them in the store with
/// `yardstick trust add`. Once any key is trusted (or with --require-signature), an unsigned run,
/// a run signed by another key and a run whose signature does not cover the current manifest
/// all fail. Without a trusted key a signed run is reported as "signed by an untrusted key",
/// never as verified. A run in a store that pins keys (`yardstick trust`) is verified under the
/// store's keys and policy as well. Exit 0 when everything checks out, 1 when anything differs.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick verify 01JD... --store yardstick-store\n  \
yardstick verify 01JD... --key ~/.config/yardstick/signing.key.pub\n  \
yardstick verify path/to/runs/01JD... --trusted ~/.config/yardstick/trusted/\n  \
YARDSTICK_TRUSTED_KEYS=ci-keys/ yardstick verify 01JD... --json"
)]
pub struct VerifyArgs {
    /// Run id (looked up in the store) or a run directory.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Store directory.
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
    /// A trusted public key (`.pub`, as `yardstick keygen` writes); repeat for several.
    #[arg(long, value_name = "PUB")]
    pub key: Vec<PathBuf>,
    /// A directory of trusted public keys (every `*.pub` in it); repeat for several.
    #[arg(long, value_name = "DIR", env = "YARDSTICK_TRUSTED_KEYS")]
    pub trusted: Vec<PathBuf>,
    /// Fail unless a trusted key signed the run (implied by --key and --trusted).
    #[arg(long)]
    pub require_signature: bool,
}

pub fn run(args: VerifyArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let dir = yardstick_store::run::resolve_dir(&args.store, &args.run)
        .map_err(crate::cmd::runs::find_error)?;
    // A run in a store that pins keys (`yardstick trust`) is verified under that policy too.
    let store_of_run = dir
        .parent()
        .and_then(|p| p.parent())
        .and_then(|p| p.canonicalize().ok());
    let mut opts = if store_of_run.is_some() && store_of_run == args.store.canonicalize().ok() {
        yardstick_store::trust::load(&args.store)
            .map_err(|e| invalid(e.to_string(), None))?
            .verify_options()
    } else {
        VerifyOptions::default()
    };
    opts.require_signature |= args.require_signature;
    for p in &args.key {
        let p = yardstick_store::sign::expand_home(&p.to_string_lossy());
        opts.trust.add_file(&p).map_err(|e| {
            invalid(
                e.to_string(),
                Some("--key takes a public key file (`.pub`, 64 hex digits)"),
            )
        })?;
    }
    for d in &args.trusted {
        let d = yardstick_store::sign::expand_home(&d.to_string_lossy());
        opts.trust
            .add_dir(&d)
            .map_err(|e| invalid(e.to_string(), None))?;
    }
    let report = match yardstick_store::verify_run(&dir, &opts) {
        Ok(r) => r,
        // A manifest that names paths outside the run, or is not a manifest: a failed
        // verification that says why, not a crash.
        Err(e @ yardstick_store::StoreError::Integrity(_)) => {
            if g.json {
                crate::output::json(&yardstick_store::VerifyOutput::Unreadable {
                    run: args.run.clone(),
                    ok: false,
                    error: e.to_string(),
                })?;
            } else {
                crate::output::outln!("run {}: {e}\nFAILED", args.run)?;
            }
            return Ok(Status::Failure);
        }
        Err(e) => return Err(e.into()),
    };
    if g.json {
        crate::output::json(&yardstick_store::VerifyOutput::checked(report.clone()))?;
    } else {
        crate::output::outln!("{}", report.text().trim_end())?;
    }
    Ok(if report.ok() {
        Status::Ok
    } else {
        Status::Failure
    })
}
