//! `yardstick`: the command-line entry point. Argument parsing and wiring only; every capability
//! lives in a library crate under `crates/`.

mod cli;
mod cmd;
mod exit;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    cli.global.apply();
    match cmd::dispatch(cli) {
        Ok(code) => code.into(),
        Err(err) => exit::report(&err),
    }
}
