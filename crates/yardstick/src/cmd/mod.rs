//! One module per command. Each exposes an `Args` struct (clap) and a `run` function.

pub mod baseline;
pub mod bench;
pub mod compare;
pub mod env;
pub mod export;
pub mod gate;
pub mod gc;
pub mod hot;
pub mod import;
pub mod init;
pub mod k8s;
pub mod keygen;
pub mod mcp;
pub mod metrics;
pub mod nodes;
pub mod playbook;
pub mod push;
pub mod query;
pub mod report;
pub mod run;
pub mod runs;
pub mod schema;
pub mod server;
pub mod shell;
pub mod sim;
pub mod slurm;
pub mod stats;
pub mod trend;
pub mod trust;
pub mod validate;
pub mod verify;

use crate::cli::{Cli, Command};
use crate::exit::Status;

/// Runs the selected command.
pub fn dispatch(cli: Cli) -> anyhow::Result<Status> {
    let g = &cli.global;
    match cli.command {
        Command::Validate(args) => validate::run(args, g),
        Command::Init(args) => init::run(args, g),
        Command::Run(args) => run::run(args, g),
        Command::Verify(args) => verify::run(args, g),
        Command::Keygen(args) => keygen::run(args, g),
        Command::Trust(args) => trust::run(args, g),
        Command::Schema(args) => schema::run(args, g),
        Command::Metrics(args) => metrics::run(args, g),
        Command::Sim(args) => sim::run(args, g),
        Command::Bench(args) => bench::run(args, g),
        Command::Stats(args) => stats::run(args, g),
        Command::Env(args) => env::run(args, g),
        Command::Import(args) => import::run(args, g),
        Command::Runs(args) => runs::run(args, g),
        Command::Query(args) => query::run(args, g),
        Command::Trend(args) => trend::run(args, g),
        Command::Playbook(args) => playbook::run(args, g),
        Command::Export(args) => export::run(args, g),
        Command::Gc(args) => gc::run(args, g),
        Command::Baseline(args) => baseline::run(args, g),
        Command::Compare(args) => compare::run(args, g),
        Command::Gate(args) => gate::run(args, g),
        Command::Report(args) => report::run(args, g),
        Command::Server(args) => server::run(*args, g),
        Command::Push(args) => push::run(args, g),
        Command::Nodes(args) => nodes::run(args, g),
        Command::K8s(args) => k8s::run(args, g),
        Command::Mcp(args) => mcp::run(args, g),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args, g),
    }
}

/// Parses a duration flag (`yardstick_spec::units::parse_duration`: `500ms`, `30s`, `2m`, `1h`,
/// plain seconds); anything else is exit 2 naming `--flag`.
pub fn parse_duration(flag: &str, s: &str) -> anyhow::Result<std::time::Duration> {
    yardstick_spec::units::parse_duration(s).map_err(|e| flag_error(flag, e))
}

/// A flag's value that does not read: exit 2 naming `--flag`, with the quantity's hint.
pub fn flag_error(flag: &str, e: yardstick_spec::units::UnitError) -> anyhow::Error {
    crate::exit::invalid(format!("--{flag}: {e}"), Some(&e.hint()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bad_duration_names_its_flag() {
        let e = super::parse_duration("max-duration", "10 parsecs").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--max-duration: `10 parsecs` is not a positive duration\n  \
             hint: write e.g. 500ms, 30s, 2m, 1h (plain numbers are seconds)"
        );
        assert!(super::parse_duration("x", "2m").is_ok());
    }
}
