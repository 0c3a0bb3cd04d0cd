//! The `yardstick stats summarize` and `stats compare` results as people read them: a
//! ministat-style distribution sketch, a table, and every interval with its method. ANSI styles
//! mark headers and warnings; the caller strips them when the output is not a terminal.

use std::fmt::Write;

use crate::report::{Comparison, Interval, Summary, Verdict};

/// The ANSI styles of text for people, shared by the crates that render it (the binary strips
/// them when standard output is not a terminal).
pub mod style {
    /// Warnings (bold yellow).
    pub const WARN: &str = "\x1b[1;33m";
    /// Headers.
    pub const BOLD: &str = "\x1b[1m";
    /// Asides.
    pub const DIM: &str = "\x1b[2m";
    /// Back to plain.
    pub const RESET: &str = "\x1b[0m";
}

/// One sample's summary: its sketch, table row and details.
pub fn summary(name: &str, data: &[f64], s: &Summary) -> String {
    let mut out = String::new();
    write_summary(&mut out, name, data, s).expect("writing to a String");
    out
}

/// A comparison of A (baseline) and B (candidate): both sketches and rows, the ratio of medians
/// with its interval, the tests, the effect sizes and the verdict.
pub fn comparison(a: (&str, &[f64]), b: (&str, &[f64]), c: &Comparison) -> String {
    let mut out = String::new();
    write_comparison(&mut out, a, b, c).expect("writing to a String");
    out
}

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

fn table_header(w: &mut impl Write) -> std::fmt::Result {
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

fn table_row(w: &mut impl Write, mark: char, s: &Summary) -> std::fmt::Result {
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

fn write_summary(w: &mut impl Write, name: &str, data: &[f64], s: &Summary) -> std::fmt::Result {
    writeln!(w, "x {name}")?;
    for row in sketch(&[(data, s)]) {
        writeln!(w, "{row}")?;
    }
    table_header(w)?;
    table_row(w, 'x', s)?;
    writeln!(w)?;
    write_details(w, s)
}

fn write_details(w: &mut impl Write, s: &Summary) -> std::fmt::Result {
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
    for (i, (label, _)) in crate::report::REPORTED_QUANTILES.iter().enumerate() {
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
) -> std::fmt::Result {
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
        crate::hypothesis::MwuMethod::Exact => "exact",
        crate::hypothesis::MwuMethod::Asymptotic => "normal approximation",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{self, Options};

    fn opts() -> Options {
        Options {
            level: 0.95,
            seed: 7,
            resamples: Some(200),
        }
    }

    #[test]
    fn a_summary_has_a_framed_sketch_with_mean_and_median_marks() {
        let data: Vec<f64> = (1..=40).map(f64::from).collect();
        let s = report::summarize(&data, &opts()).unwrap();
        let text = summary("lat.txt", &data, &s);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "x lat.txt");
        let frame = format!("+{}+", "-".repeat(SKETCH_WIDTH));
        assert_eq!(lines[1], frame);
        // Density row, then the mean ± sd row (`|___|`); the median's `M` is drawn over the
        // mean's `A` when they share a column, as here.
        assert!(
            lines[3].contains("|___") && lines[3].contains('M'),
            "{text}"
        );
        assert_eq!(lines[4], frame);
        assert!(text.contains("mean             20.50"), "{text}");
        assert!(text.contains("p99"), "{text}");
    }

    #[test]
    fn a_comparison_names_the_larger_side_and_the_interval_level() {
        let a: Vec<f64> = (0..30).map(|i| 100.0 + f64::from(i % 5)).collect();
        let b: Vec<f64> = (0..30).map(|i| 150.0 + f64::from(i % 5)).collect();
        let c = report::compare(&a, &b, &opts()).unwrap();
        let text = comparison(("a", &a), ("b", &b), &c);
        assert!(
            text.starts_with("x a (A, baseline)\n+ b (B, candidate)\n"),
            "{text}"
        );
        assert!(text.contains("95% CI"), "{text}");
        assert!(
            text.contains("b_greater: B (candidate) is larger"),
            "{text}"
        );
    }

    #[test]
    fn levels_and_p_values_print_without_float_noise() {
        assert_eq!(percent(0.9), "90");
        assert_eq!(percent(0.995), "99.5");
        assert_eq!(pvalue(0.5), "0.5000");
        assert_eq!(pvalue(1e-9), "1.00e-9");
        assert_eq!(num(1234.5678), "1235");
        assert_eq!(num(0.0), "0.000");
        assert_eq!(num(5e9), "5.000e9");
    }
}
