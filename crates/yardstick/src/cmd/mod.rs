//! One module per command. Each exposes an `Args` struct (clap) and a `run` function.

pub mod baseline;
pub mod bench;
pub mod compare;
pub mod env;
pub mod export;
pub mod gate;
pub mod gc;
pub mod import;
pub mod init;
pub mod keygen;
pub mod metrics;
pub mod query;
pub mod report;
pub mod run;
pub mod runs;
pub mod schema;
pub mod server;
pub mod sim;
pub mod stats;
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
        Command::Export(args) => export::run(args, g),
        Command::Gc(args) => gc::run(args, g),
        Command::Baseline(args) => baseline::run(args, g),
        Command::Compare(args) => compare::run(args, g),
        Command::Gate(args) => gate::run(args, g),
        Command::Report(args) => report::run(args, g),
        Command::Server(args) => server::run(args, g),
    }
}

/// Parses a duration flag: `500ms`, `30s`, `2m` (or `2min`), `1h`, or plain seconds (`1.5`).
/// Anything else, zero, negative or beyond a century is exit 2 naming `--flag`.
pub fn parse_duration(flag: &str, s: &str) -> anyhow::Result<std::time::Duration> {
    let bad = || {
        crate::exit::invalid(
            format!("--{flag}: `{s}` is not a positive duration"),
            Some("write e.g. 500ms, 30s, 2m, 1h (plain numbers are seconds)"),
        )
    };
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(bad()),
    };
    if !(secs.is_finite() && secs > 0.0 && secs < 100.0 * 365.25 * 86_400.0) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("x", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_duration("x", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            parse_duration("x", "2min").unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(
            parse_duration("x", " 1h ").unwrap(),
            Duration::from_secs(3600)
        );
        assert_eq!(
            parse_duration("x", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
        for bad in [
            "-1s",
            "0",
            "10 parsecs",
            "",
            "s",
            "1e30s",
            "1000000000000000000000000000000",
            "NaN",
            "inf",
        ] {
            let e = parse_duration("max-duration", bad).unwrap_err().to_string();
            assert!(e.contains("--max-duration"), "{bad}: {e}");
        }
    }
}
