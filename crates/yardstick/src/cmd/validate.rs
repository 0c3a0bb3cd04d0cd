//! `yardstick validate` (being written).
use crate::cli::GlobalOpts;
use crate::exit::Status;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {}

pub fn run(_args: ValidateArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    anyhow::bail!("not yet implemented")
}
