//! `yardstick stats summarize|compare`: a ministat for benchmark samples. Reading files and
//! printing only; the statistics live in `yardstick-stats` (`report::summarize` / `compare`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use yardstick_stats::report::{self, Comparison, Interval, Options, Summary, Verdict};
use yardstick_stats::samples::{self, ParseError};

use crate::cli::GlobalOpts;
use crate::exit::{self, Status};
use crate::output::{self, style};

const INPUT_HINT: &str = "give one number per line (blank lines and `#` comments are ignored) or a JSON array of numbers";

/// Summarise and compare samples of numbers (a ministat for benchmarks).
#[derive(Debug, clap::Args)]
#[command(after_help = "Methods and references: docs/stats.md. Example:\n  \
yardstick stats compare baseline.txt candidate.txt --json")]
pub struct StatsArgs {
    #[command(subcommand)]
    pub command: StatsCommand,
}

/// The `stats` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum StatsCommand {
    /// Describe one sample: percentiles, confidence intervals, outliers, steady state.
    Summarize(SummarizeArgs),
    /// Compare a baseline A with a candidate B: rank and t tests, ratio of medians, verdict.
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

#[derive(Serialize)]
struct SummaryOut<'a> {
    file: &'a str,
    #[serde(flatten)]
    summary: &'a Summary,
}

#[derive(Serialize)]
struct ComparisonOut<'a> {
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
        let mut out = anstream::stdout().lock();
        write_summary(&mut out, &name, &data, &summary)?;
        out.flush()?;
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
        let mut out = anstream::stdout().lock();
        write_comparison(&mut out, (&name_a, &a), (&name_b, &b), &cmp)?;
        out.flush()?;
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

// ---- human output -------------------------------------------------------------------------

/// Width of the distribution sketch, inside its frame.
const SKETCH_WIDTH: usize = 72;
/// Density glyphs from empty to fullest column.
const DENSITY: &[u8] = b" .:-=+*#%@";

/// Formats a number with about four significant digits, switching to exponent form for very
/// large or small magnitudes.
fn num(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        return format!("{x:.3e}");
    }
    let digits = if a == 0.0 {
        0
    } else {
        a.log10().floor() as i32
    };
    let decimals = (3 - digits).clamp(0, 6) as usize;
    format!("{x:.decimals$}")
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), num)
}

fn interval(ci: Option<Interval>) -> String {
    ci.map_or_else(
        || "-".to_string(),
        |[lo, hi]| format!("[{}, {}]", num(lo), num(hi)),
    )
}

/// The sketch's frame and rows: for each sample a density row, then for each a row with the
/// mean ± one standard deviation as `|___|`, `A` at the mean and `M` at the median.
fn sketch(samples: &[(&[f64], &Summary)]) -> Vec<String> {
    let lo = samples
        .iter()
        .map(|(_, s)| s.min)
        .fold(f64::INFINITY, f64::min);
    let hi = samples
        .iter()
        .map(|(_, s)| s.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let col = |x: f64| {
        (((x - lo) / span * (SKETCH_WIDTH - 1) as f64)
            .round()
            .max(0.0) as usize)
            .min(SKETCH_WIDTH - 1)
    };
    let frame = format!("+{}+", "-".repeat(SKETCH_WIDTH));
    let mut rows = vec![frame.clone()];
    for (data, _) in samples {
        let mut counts = vec![0usize; SKETCH_WIDTH];
        for &x in *data {
            counts[col(x)] += 1;
        }
        let max = counts.iter().copied().max().unwrap_or(1).max(1);
        let row: String = counts
            .iter()
            .map(|&c| {
                let level = if c == 0 {
                    0
                } else {
                    (c * (DENSITY.len() - 1)).div_ceil(max)
                };
                DENSITY[level] as char
            })
            .collect();
        rows.push(format!("|{row}|"));
    }
    for (_, s) in samples {
        let mut row = vec![b' '; SKETCH_WIDTH];
        if let Some(sd) = s.stddev {
            let (l, r) = (col(s.mean - sd), col(s.mean + sd));
            for c in row.iter_mut().take(r + 1).skip(l) {
                *c = b'_';
            }
            row[l] = b'|';
            row[r] = b'|';
        }
        row[col(s.mean)] = b'A';
        row[col(s.median)] = b'M';
        rows.push(format!("|{}|", String::from_utf8_lossy(&row)));
    }
    rows.push(frame);
    rows
}

fn table_header(w: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        w,
        "{}    {:>8} {:>11} {:>11} {:>11} {:>11} {:>11}{}",
        style::BOLD,
        "N",
        "Min",
        "Max",
        "Median",
        "Mean",
        "Stddev",
        style::RESET
    )
}

fn table_row(w: &mut impl Write, mark: char, s: &Summary) -> std::io::Result<()> {
    writeln!(
        w,
        "{mark}   {:>8} {:>11} {:>11} {:>11} {:>11} {:>11}",
        s.n,
        num(s.min),
        num(s.max),
        num(s.median),
        num(s.mean),
        opt(s.stddev)
    )
}

fn write_summary(w: &mut impl Write, name: &str, data: &[f64], s: &Summary) -> std::io::Result<()> {
    writeln!(w, "x {name}")?;
    for row in sketch(&[(data, s)]) {
        writeln!(w, "{row}")?;
    }
    table_header(w)?;
    table_row(w, 'x', s)?;
    writeln!(w)?;
    write_details(w, s)
}

fn write_details(w: &mut impl Write, s: &Summary) -> std::io::Result<()> {
    let pct = percent(s.ci.level);
    writeln!(
        w,
        "{}{:<10} {:>11}   {pct}% CI{}",
        style::BOLD,
        "",
        "value",
        style::RESET
    )?;
    writeln!(
        w,
        "{:<10} {:>11}   {}  ABC (analytic BCa)",
        "mean",
        num(s.mean),
        interval(s.ci.mean)
    )?;
    writeln!(
        w,
        "{:<10} {:>11}   {}  BCa bootstrap, {} resamples, seed {}",
        "median",
        num(s.median),
        interval(s.ci.median),
        s.ci.resamples,
        s.ci.seed
    )?;
    let min_n = [
        s.ci.min_n.p50,
        s.ci.min_n.p90,
        s.ci.min_n.p95,
        s.ci.min_n.p99,
    ];
    let cis = [s.ci.p50, s.ci.p90, s.ci.p95, s.ci.p99];
    let values = [s.p50, s.p90, s.p95, s.p99];
    for (i, (label, _)) in report::REPORTED_QUANTILES.iter().enumerate() {
        let ci = match cis[i] {
            Some(_) => format!("{}  order statistics", interval(cis[i])),
            None => format!("none: needs n >= {}", min_n[i]),
        };
        writeln!(w, "{label:<10} {:>11}   {ci}", num(values[i]))?;
    }
    writeln!(w, "{:<10} {:>11}", "cv", opt(s.cv))?;
    writeln!(w, "{:<10} {:>11}", "mad", num(s.mad))?;
    writeln!(w, "{:<10} {:>11}", "skewness", opt(s.skewness))?;
    let o = &s.outliers;
    writeln!(
        w,
        "outliers   Tukey {} mild, {} severe; MAD |z| > 3.5: {} (reported, not removed)",
        o.tukey_mild, o.tukey_severe, o.mad
    )?;
    if let Some(t) = &s.normal_tail {
        let err = t
            .relative_error
            .map_or(String::new(), |e| format!(" ({:+.1}%)", e * 100.0));
        writeln!(
            w,
            "tail       p99 if normal (mean + {:.3} sd) = {} vs empirical {}{err}",
            t.z,
            num(t.normal),
            num(t.empirical)
        )?;
    }
    match &s.steady_state {
        Some(m) if m.steady && m.truncation == 0 => {
            writeln!(w, "warm-up    MSER-5 finds no warm-up to discard")?
        }
        Some(m) if m.steady => writeln!(
            w,
            "warm-up    MSER-5 would discard the first {} samples",
            m.truncation
        )?,
        Some(m) => writeln!(
            w,
            "warm-up    {}no steady state{}: MSER-5 minimum at sample {} of {}",
            style::WARN,
            style::RESET,
            m.truncation,
            s.n
        )?,
        None => {}
    }
    Ok(())
}

fn write_comparison(
    w: &mut impl Write,
    (name_a, a): (&str, &[f64]),
    (name_b, b): (&str, &[f64]),
    c: &Comparison,
) -> std::io::Result<()> {
    writeln!(w, "x {name_a} (A, baseline)")?;
    writeln!(w, "+ {name_b} (B, candidate)")?;
    for row in sketch(&[(a, &c.a), (b, &c.b)]) {
        writeln!(w, "{row}")?;
    }
    table_header(w)?;
    table_row(w, 'x', &c.a)?;
    table_row(w, '+', &c.b)?;
    writeln!(w)?;
    let pct = percent(c.level);
    writeln!(
        w,
        "ratio of medians B/A  {}   {pct}% CI {}",
        opt(c.ratio_of_medians),
        interval(c.ratio_ci)
    )?;
    let method = match c.mann_whitney_method {
        yardstick_stats::hypothesis::MwuMethod::Exact => "exact",
        yardstick_stats::hypothesis::MwuMethod::Asymptotic => "normal approximation",
    };
    writeln!(
        w,
        "Mann-Whitney U        p = {} ({method})",
        pvalue(c.mann_whitney_p)
    )?;
    writeln!(
        w,
        "Welch's t             p = {}",
        c.welch_p.map_or("-".into(), pvalue)
    )?;
    writeln!(
        w,
        "effect size           Cliff's delta = {:.3}, Cohen's d = {}",
        c.cliffs_delta,
        c.cohens_d.map_or("-".into(), |d| format!("{d:.3}"))
    )?;
    let (colour, text) = match c.verdict {
        Verdict::Same => (
            style::BOLD,
            "same: no difference at this confidence".to_string(),
        ),
        Verdict::AGreater => (style::WARN, "a_greater: A (baseline) is larger".to_string()),
        Verdict::BGreater => (
            style::WARN,
            "b_greater: B (candidate) is larger".to_string(),
        ),
    };
    writeln!(w, "verdict ({pct}%)        {colour}{text}{}", style::RESET)
}

/// A confidence level as a percentage without float noise: 0.9 → "90", 0.995 → "99.5".
fn percent(level: f64) -> String {
    let s = format!("{:.3}", level * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn pvalue(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.2e}")
    } else {
        format!("{p:.4}")
    }
}
