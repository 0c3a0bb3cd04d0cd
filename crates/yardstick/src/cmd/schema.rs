//! `yardstick schema` (being written).
use crate::cli::GlobalOpts;
use crate::exit::Status;

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {}

pub fn run(_args: SchemaArgs, _g: &GlobalOpts) -> anyhow::Result<Status> {
    anyhow::bail!("not yet implemented")
}
