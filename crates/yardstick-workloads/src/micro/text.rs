//! Micro-benchmark results as people read them. ANSI styles mark the header and secondary
//! lines; the caller strips them when the output is not a terminal.

use std::fmt::Write;

use super::{MicroReport, TrialPolicy};

use yardstick_stats::text::style::{BOLD, DIM, RESET};

/// About four significant figures, fixed-point.
fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The micro results as `yardstick bench micro` prints them: one row per benchmark with its
/// interval, sample count and CV, then the skipped benchmarks with their reasons.
pub fn table(profile: &str, policy: &TrialPolicy, r: &MicroReport) -> String {
    let mut out = String::new();
    write_table(&mut out, profile, policy, r).expect("writing to a String");
    out
}

fn write_table(
    out: &mut String,
    profile: &str,
    policy: &TrialPolicy,
    r: &MicroReport,
) -> std::fmt::Result {
    let (b, d, x) = (BOLD, DIM, RESET);
    writeln!(
        out,
        "{d}machine profile {profile} · {} replicates · {:.0}% CI{x}",
        policy.replicates,
        policy.confidence * 100.0
    )?;
    writeln!(
        out,
        "{b}{:<28} {:>10} {:<8} {:>23} {:>6} {:>7}{x}",
        "benchmark", "value", "unit", "CI", "n", "cv"
    )?;
    for res in &r.results {
        let ci = res.ci.map_or("-".to_owned(), |[lo, hi]| {
            format!("[{}, {}]", fmt_num(lo), fmt_num(hi))
        });
        let cv = res
            .cv
            .map_or("-".to_owned(), |c| format!("{:.1}%", c * 100.0));
        writeln!(
            out,
            "{:<28} {:>10} {:<8} {:>23} {:>6} {:>7}",
            res.name,
            fmt_num(res.value),
            res.unit,
            ci,
            res.n,
            cv
        )?;
    }
    for s in &r.skipped {
        writeln!(out, "{d}{:<28} {}{x}", s.name, s.reason)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::micro::{MicroResult, OutlierCounts, Skipped};

    #[test]
    fn rows_carry_value_unit_interval_n_and_cv_then_the_skipped() {
        let result = MicroResult {
            name: "memory.triad".into(),
            value: 12345.678,
            unit: "MB/s".into(),
            ci: Some([12000.0, 12500.5]),
            n: 30,
            replicates: 3,
            level: 0.95,
            ci_method: "cluster bootstrap".into(),
            higher_is_better: true,
            mean: 12340.0,
            cv: Some(0.0123),
            min: 11000.0,
            max: 13000.0,
            warmup_discarded: 1,
            outliers: OutlierCounts::default(),
            params: Default::default(),
            samples: vec![],
        };
        let report = MicroReport {
            results: vec![result],
            skipped: vec![Skipped {
                name: "gemm.bf16".into(),
                reason: "skipped: no bf16 kernel".into(),
            }],
            warnings: vec![],
        };
        let text = table("cpu-X", &TrialPolicy::default(), &report)
            .replace(BOLD, "")
            .replace(DIM, "")
            .replace(RESET, "");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "machine profile cpu-X · 3 replicates · 95% CI");
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            row,
            [
                "memory.triad",
                "12346",
                "MB/s",
                "[12000,",
                "12500]",
                "30",
                "1.2%"
            ]
        );
        assert!(lines[3].starts_with("gemm.bf16") && lines[3].ends_with("skipped: no bf16 kernel"));
        assert_eq!(fmt_num(0.12345), "0.123");
        assert_eq!(fmt_num(123.45), "123.5");
    }
}
