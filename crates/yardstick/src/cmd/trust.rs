//! `yardstick trust add|list|remove|require`: the public keys a store trusts and whether it
//! refuses runs no trusted key signed.

use std::path::PathBuf;

use yardstick_store::trust;

use crate::cli::GlobalOpts;
use crate::cmd::runs::store_error;
use crate::exit::{self, Status};
use crate::output;

/// Pin the public keys a store trusts (for example those of your CI signers) and make the store
/// refuse runs they did not sign. With `require on`, `yardstick run` into the store must sign
/// with a trusted key (checked before any work), `baseline save` refuses an unverified run, and
/// `yardstick verify` of a run in the store uses these keys.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick trust add ci-signing.key.pub --store yardstick-store\n  \
yardstick trust require on\n  yardstick trust list --json\n  yardstick trust remove 3f2a9c0d1e7b4a61"
)]
pub struct TrustArgs {
    #[command(subcommand)]
    pub command: TrustCommand,
    /// Store directory.
    #[arg(
        long,
        global = true,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
}

/// The `trust` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TrustCommand {
    /// Trust a public key (`.pub`, as `yardstick keygen` writes it).
    #[command(after_help = "Examples:\n  yardstick trust add ci-signing.key.pub\n  \
yardstick trust add ci-signing.key.pub --store /srv/ys --json")]
    Add {
        /// The public key file.
        #[arg(value_name = "PUB")]
        public: PathBuf,
    },
    /// The trusted keys and the policy.
    #[command(after_help = "Examples:\n  yardstick trust list\n  \
yardstick trust list --json")]
    List,
    /// Stop trusting a key.
    #[command(after_help = "Examples:\n  yardstick trust remove 3f2a9c0d1e7b4a61")]
    Remove {
        /// Its key id (`yardstick trust list` shows them).
        #[arg(value_name = "KEYID")]
        keyid: String,
    },
    /// Refuse (`on`) or accept (`off`) runs that no trusted key signed.
    #[command(
        after_help = "Examples:\n  yardstick trust require on      # refuse runs no trusted key signed\n  \
yardstick trust require off"
    )]
    Require {
        /// `on` or `off`.
        #[arg(value_name = "on|off", value_parser = ["on", "off"])]
        state: String,
    },
}

/// What `yardstick trust ... --json` prints, by subcommand.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum TrustOutput {
    /// `list`: the policy and every trusted key.
    List {
        /// Runs no trusted key signed are refused.
        require_signature: bool,
        /// The trusted keys.
        keys: Vec<TrustedKeyOut>,
    },
    /// `add`: the key now trusted.
    Added(TrustedKeyOut),
    /// `remove`: the key id no longer trusted.
    Removed {
        /// Its key id.
        removed: String,
    },
    /// `require on|off`: the policy now in force.
    Policy {
        /// Runs no trusted key signed are refused.
        require_signature: bool,
    },
}

/// One trusted key.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct TrustedKeyOut {
    /// Its yardstick key id.
    pub keyid: String,
    /// The file it was read from.
    pub file: String,
}

impl From<&yardstick_store::sign::TrustedKey> for TrustedKeyOut {
    fn from(k: &yardstick_store::sign::TrustedKey) -> Self {
        TrustedKeyOut {
            keyid: k.keyid.clone(),
            file: k.source.clone(),
        }
    }
}

/// Runs `yardstick trust`.
pub fn run(args: TrustArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let store = &args.store;
    if !store.is_dir() {
        return Err(exit::invalid(
            format!("no store directory at {}", store.display()),
            Some("pass --store DIR (a store made by `yardstick run`)"),
        ));
    }
    match args.command {
        TrustCommand::Add { public } => {
            let public = yardstick_store::sign::expand_home(&public.to_string_lossy());
            let k = trust::add_key(store, &public).map_err(|e| {
                exit::invalid(
                    e.to_string(),
                    Some("pass a public key (`.pub`, 64 hex digits), never the secret key"),
                )
            })?;
            if g.json {
                output::json(&TrustOutput::Added((&k).into()))?;
            } else {
                crate::output::outln!("trusting key {} ({})", k.keyid, k.source)?;
            }
        }
        TrustCommand::Remove { keyid } => {
            if !trust::remove_key(store, &keyid).map_err(store_error)? {
                return Err(exit::invalid(
                    format!("the store does not trust a key with id {keyid}"),
                    Some("`yardstick trust list` shows the key ids"),
                ));
            }
            if g.json {
                output::json(&TrustOutput::Removed { removed: keyid })?;
            } else {
                crate::output::outln!("no longer trusting key {keyid}")?;
            }
        }
        TrustCommand::Require { state } => {
            trust::set_required(store, state == "on").map_err(store_error)?;
            if !g.json {
                crate::output::outln!(
                    "{}",
                    if state == "on" {
                        "the store now refuses runs no trusted key signed"
                    } else {
                        "the store accepts unsigned runs again"
                    }
                )?;
            }
            if g.json {
                output::json(&TrustOutput::Policy {
                    require_signature: state == "on",
                })?;
            }
        }
        TrustCommand::List => {
            let t = trust::load(store).map_err(store_error)?;
            if g.json {
                output::json(&TrustOutput::List {
                    require_signature: t.require_signature,
                    keys: t.keys.keys().iter().map(TrustedKeyOut::from).collect(),
                })?;
            } else {
                crate::output::outln!(
                    "require signature: {}",
                    if t.require_signature { "on" } else { "off" }
                )?;
                for k in t.keys.keys() {
                    crate::output::outln!("  {}  {}", k.keyid, k.source)?;
                }
                if t.keys.is_empty() {
                    crate::output::outln!("  (no trusted keys)")?;
                }
            }
        }
    }
    Ok(Status::Ok)
}
