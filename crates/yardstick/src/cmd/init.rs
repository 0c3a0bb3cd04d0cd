//! `yardstick init` (being written).
use crate::cli::GlobalOpts;
use crate::exit::Status;

#[derive(Debug, clap::Args)]
pub struct InitArgs {}

pub fn run(_args: InitArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    anyhow::bail!("not yet implemented")
}
