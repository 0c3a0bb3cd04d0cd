//! `yardstick` as a library: the command-line surface ([`cli::Cli`]) and [`run`], which executes
//! one parsed command line in this process and returns its exit status. The binary
//! (`src/main.rs`) is `main` below; tests that want a command without a child process call
//! [`run`]. Argument parsing, wiring and printing only: every capability lives in a library
//! crate under `crates/` (docs/architecture.md).

pub mod cli;
mod cmd;
pub mod exit;
mod interrupt;
mod output;

use std::process::ExitCode;

use clap::Parser;

pub use cli::Cli;
pub use exit::Status;

/// Runs one parsed command line: applies the global options (colour, verbosity), dispatches,
/// and returns the command's status. Errors are returned, not printed: [`exit::report`] prints
/// one and maps it to its exit code (2 for invalid input, 1 otherwise, 0 for a closed pipe).
pub fn run(cli: Cli) -> anyhow::Result<Status> {
    cli.global.apply();
    cmd::dispatch(cli)
}

/// The program: parses `std::env::args`, runs, reports an error and exits with its code.
pub fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(status) => status.into(),
        Err(err) => exit::report(&err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(args: &[&str]) -> anyhow::Result<Status> {
        run(Cli::try_parse_from(args).expect("the arguments parse"))
    }

    /// Commands run in-process: a valid template validates (exit 0), a spec that breaks a rule
    /// is invalid input (exit 2), an unreadable file too.
    #[test]
    fn commands_run_in_process_with_their_exit_status() {
        let dir = std::env::temp_dir().join(format!("ys-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.yaml");
        std::fs::write(
            &good,
            yardstick_spec::template(yardstick_spec::Template::Serve),
        )
        .unwrap();
        let path = good.to_str().unwrap();
        assert_eq!(
            run_args(&["yardstick", "-q", "validate", path]).unwrap(),
            Status::Ok
        );
        let bad = dir.join("bad.yaml");
        let text = yardstick_spec::template(yardstick_spec::Template::Serve)
            .replace("replicates: 3", "replicates: 2");
        assert_ne!(
            text,
            yardstick_spec::template(yardstick_spec::Template::Serve)
        );
        std::fs::write(&bad, text).unwrap();
        let got = run_args(&["yardstick", "-q", "validate", bad.to_str().unwrap()]);
        let status = got.unwrap_or_else(|e| {
            assert!(e.chain().any(|c| c.is::<exit::InvalidInput>()), "{e:#}");
            Status::Invalid
        });
        assert_eq!(status, Status::Invalid);
        let missing = dir.join("missing.yaml");
        let e = run_args(&["yardstick", "validate", missing.to_str().unwrap()]);
        assert!(
            e.as_ref().map_or_else(
                |e| e.chain().any(|c| c.is::<exit::InvalidInput>()),
                |s| *s == Status::Invalid
            ),
            "{e:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
