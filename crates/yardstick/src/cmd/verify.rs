//! `yardstick verify RUN`: check every hash and the signature of a stored run.

use std::path::PathBuf;

use yardstick_store::sign::SignatureCheck;
use yardstick_store::verify::SignatureState;

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};

/// Verify a stored run: recompute every artifact's sha256 against the manifest, list missing and
/// unlisted files, and check the attestation (DSSE, ed25519). Exit 0 when everything matches,
/// 1 when anything differs.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick verify 01JD... --store yardstick-store\n  \
yardstick verify path/to/runs/01JD... --key ~/.config/yardstick/signing.key.pub"
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
    /// Trusted public key (`.pub`): the signature must be by this key.
    #[arg(long, value_name = "PUB")]
    pub key: Option<PathBuf>,
}

pub fn run(args: VerifyArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let as_dir = PathBuf::from(&args.run);
    let dir = if as_dir.join("manifest.json").exists() {
        as_dir
    } else {
        args.store.join("runs").join(&args.run)
    };
    if !dir.join("manifest.json").exists() {
        return Err(invalid(
            format!("no run `{}` (looked in {})", args.run, dir.display()),
            Some(
                "pass a run id with --store, or the run directory itself; `yardstick runs list` shows runs",
            ),
        ));
    }
    let trusted = match &args.key {
        Some(p) => Some(
            yardstick_store::sign::load_verifying_key(p)
                .map_err(|e| invalid(e.to_string(), None))?,
        ),
        None => None,
    };
    let mut report = yardstick_store::verify_run(&dir, trusted.as_ref())?;
    // Raw files dropped by the retention policy (`yardstick gc`) are recorded in gc.json with
    // their hashes: they are explained, not missing.
    let dropped = yardstick_store::gc::explain_missing(&mut report, &dir)?;
    if g.json {
        let mut v = serde_json::to_value(&report)?;
        v["ok"] = report.ok().into();
        v["dropped_by_retention"] = serde_json::to_value(&dropped)?;
        crate::output::json(&v)?;
    } else {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "run {} ({}): {} artifact(s)",
            report.run_id,
            report.status.as_str(),
            report.artifacts
        )?;
        for p in &report.problems {
            match p.problem {
                "modified" => writeln!(
                    out,
                    "  MODIFIED  {} (manifest sha256 {}, now {})",
                    p.path,
                    p.expected.as_deref().unwrap_or("?"),
                    p.actual.as_deref().unwrap_or("?")
                )?,
                "missing" => writeln!(out, "  MISSING   {}", p.path)?,
                _ => writeln!(out, "  UNLISTED  {} (not in the manifest)", p.path)?,
            }
        }
        if !dropped.is_empty() {
            writeln!(
                out,
                "  {} raw file(s) dropped by the retention policy (gc.json); their hashes are kept",
                dropped.len()
            )?;
        }
        match &report.signature {
            SignatureState::Unsigned => {
                writeln!(out, "  signature: unsigned (no attestation.dsse.json)")?
            }
            SignatureState::Signed {
                check: SignatureCheck::Valid { keyid, trusted },
            } => writeln!(
                out,
                "  signature: valid, key {keyid}{}",
                match trusted {
                    Some(true) => " (the trusted key)",
                    Some(false) => " — NOT the trusted key",
                    None => " (pass --key to check it is yours)",
                }
            )?,
            SignatureState::Signed {
                check: SignatureCheck::Invalid { reason },
            } => writeln!(out, "  signature: INVALID: {reason}")?,
        }
        writeln!(out, "{}", if report.ok() { "OK" } else { "FAILED" })?;
    }
    Ok(if report.ok() {
        Status::Ok
    } else {
        Status::Failure
    })
}
