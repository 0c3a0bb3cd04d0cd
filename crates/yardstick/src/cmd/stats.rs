//! `yardstick stats summarize|compare`: a ministat for benchmark samples. Reading files and
//! printing only; the statistics live in `yardstick-stats` (`report::summarize` / `compare`).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use yardstick_stats::report::{self, Comparison, Options, Summary};
use yardstick_stats::samples::{self, ParseError};

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output;

const INPUT_HINT: &str = "give one number per line (blank lines and `#` comments are ignored) or a JSON array of numbers";

/// Summarise and compare samples of numbers (a ministat for benchmarks).
#[derive(Debug, clap::Args)]
#[command(after_help = "Methods and references: docs/stats.md.\n\nExamples:\n  \
yardstick stats summarize latencies.txt\n  \
yardstick stats compare baseline.txt candidate.txt --json")]
pub struct StatsArgs {
    #[command(subcommand)]
    pub command: StatsCommand,
}

/// The `stats` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum StatsCommand {
    /// Describe one sample: percentiles, confidence intervals, outliers, steady state.
    #[command(
        after_help = "Examples:\n  yardstick stats summarize latencies.txt\n  \
yardstick stats summarize samples.csv --json\n  \
seq 1 100 | yardstick stats summarize"
    )]
    Summarize(SummarizeArgs),
    /// Compare a baseline A with a candidate B: rank and t tests, ratio of medians, verdict.
    #[command(
        after_help = "Examples:\n  yardstick stats compare baseline.txt candidate.txt\n  \
yardstick stats compare a.csv b.csv --json"
    )]
    Compare(CompareArgs),
}

/// Settings shared by both subcommands.
#[derive(Debug, clap::Args)]
pub struct StatOpts {
    /// Confidence level of the intervals and the verdict, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_parser = parse_level, value_name = "LEVEL")]
    pub confidence: f64,
    /// Seed of the bootstrap PRNG (ChaCha8): the same seed gives the same intervals.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
    /// Bootstrap resamples of the median's (and the ratio of medians') BCa interval [default:
    /// 10000]. The mean's interval is ABC, BCa's analytic approximation: no resamples.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=10_000_000))]
    pub resamples: Option<u64>,
}

impl StatOpts {
    fn options(&self) -> Options {
        Options {
            level: self.confidence,
            seed: self.seed,
            resamples: self.resamples.map(|r| r as usize),
        }
    }
}

/// Arguments of `yardstick stats summarize`.
#[derive(Debug, clap::Args)]
pub struct SummarizeArgs {
    /// File of samples (one number per line, or a JSON array); `-` reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub file: PathBuf,
    #[command(flatten)]
    pub opts: StatOpts,
}

/// Arguments of `yardstick stats compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline (reference) samples; `-` reads standard input.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The candidate samples; `-` reads standard input.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    #[command(flatten)]
    pub opts: StatOpts,
}

fn parse_level(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("{v} is outside (0, 1); e.g. 0.95"))
    }
}

/// Runs `yardstick stats`.
pub fn run(args: StatsArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        StatsCommand::Summarize(a) => summarize(a, g),
        StatsCommand::Compare(a) => compare(a, g),
    }
}

/// `yardstick stats summarize --json`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct SummaryOut<'a> {
    file: &'a str,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// `yardstick stats compare --json`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ComparisonOut<'a> {
    a_file: &'a str,
    b_file: &'a str,
    #[serde(flatten)]
    comparison: &'a Comparison,
}

fn summarize(args: SummarizeArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let (name, data) = read_samples(&args.file)?;
    let summary = report::summarize(&data, &args.opts.options())
        .map_err(|e| exit::invalid(format!("{name}: {e}"), None))?;
    if g.json {
        output::json(&SummaryOut {
            file: &name,
            summary: &summary,
        })?;
    } else {
        output::text(&yardstick_stats::text::summary(&name, &data, &summary))?;
    }
    Ok(Status::Ok)
}

fn compare(args: CompareArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if args.a.as_os_str() == "-" && args.b.as_os_str() == "-" {
        return Err(exit::invalid(
            "A and B cannot both be `-`: standard input can be read only once",
            Some("put one of the samples in a file"),
        ));
    }
    let (name_a, a) = read_samples(&args.a)?;
    let (name_b, b) = read_samples(&args.b)?;
    let cmp = report::compare(&a, &b, &args.opts.options())
        .map_err(|e| exit::invalid(format!("{name_a} vs {name_b}: {e}"), None))?;
    if g.json {
        output::json(&ComparisonOut {
            a_file: &name_a,
            b_file: &name_b,
            comparison: &cmp,
        })?;
    } else {
        output::text(&yardstick_stats::text::comparison(
            (&name_a, &a),
            (&name_b, &b),
            &cmp,
        ))?;
    }
    Ok(Status::Ok)
}

/// Reads and parses a sample file (or stdin for `-`); every problem is invalid input (exit 2).
fn read_samples(path: &Path) -> anyhow::Result<(String, Vec<f64>)> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let mut bytes = Vec::new();
    let read = if stdin {
        std::io::stdin().lock().read_to_end(&mut bytes).map(|_| ())
    } else if path.is_dir() {
        Err(std::io::Error::other("is a directory"))
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map(|_| ())
    };
    read.map_err(|e| exit::invalid(format!("{name}: cannot read: {e}"), None))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| exit::invalid(format!("{name}: not UTF-8 text ({e})"), Some(INPUT_HINT)))?;
    let values = samples::parse(&text).map_err(|e| match e {
        ParseError::Empty => exit::invalid(format!("{name}: no samples"), Some(INPUT_HINT)),
        ParseError::Invalid {
            line,
            column,
            reason,
        } => {
            let at = column.map_or(format!("{line}"), |c| format!("{line}:{c}"));
            exit::invalid(format!("{name}:{at}: {reason}"), Some(INPUT_HINT))
        }
    })?;
    Ok((name, values))
}
