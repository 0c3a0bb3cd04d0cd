//! Command benchmarks as people read them (`yardstick bench exec` without `--json`). ANSI
//! styles mark headers and warnings; the caller strips them when the output is not a terminal.

use std::fmt::Write;

use yardstick_analysis::training::TrainingReport;

use crate::command::{BenchmarkResult, ExecReport, QuantitySummary, fmt_s};

use yardstick_stats::text::style::{BOLD, DIM, RESET, WARN};

/// A command benchmark as `yardstick bench exec` prints it: per benchmark its times, training
/// analysis and warnings; the relative speed of several benchmarks; scaling; where the logs are.
pub fn report(report: &ExecReport) -> String {
    let mut out = String::new();
    let out = &mut out;
    let (b, r, d, w) = (BOLD, RESET, DIM, WARN);
    for (i, bench) in report.benchmarks.iter().enumerate() {
        let _ = writeln!(out, "{b}Benchmark {}{r}: {}", i + 1, bench.command);
        print_times(out, bench);
        if let Some(t) = bench.runs.iter().rev().find_map(|x| x.training.as_ref()) {
            print_training(out, t, bench);
        }
        for warning in &bench.warnings {
            let _ = writeln!(out, "  {w}warning{r}: {warning}");
        }
        let _ = writeln!(out);
    }
    print_relative(out, report);
    if let Some(s) = &report.scaling {
        let _ = writeln!(
            out,
            "{b}Scaling{r} ({}, relative to world size {}):",
            s.metric, s.base_world_size
        );
        for p in &s.points {
            let _ = writeln!(
                out,
                "  N={:<4} {:>12.3}  speedup {:>6.2}x  efficiency {:>6.1} %  {d}{}{r}",
                p.world_size,
                p.throughput,
                p.speedup,
                p.efficiency * 100.0,
                p.band
            );
        }
        if let Some(a) = &s.amdahl {
            let limit = a
                .max_speedup
                .map_or("none".to_string(), |m| format!("{m:.1}x"));
            let _ = writeln!(
                out,
                "  Amdahl: serial fraction {:.2} % (speedup limit {limit}, rms error {:.3})",
                a.serial_fraction * 100.0,
                a.rms_error
            );
        }
        for warning in &s.warnings {
            let _ = writeln!(out, "  {w}warning{r}: {warning}");
        }
        let _ = writeln!(out);
    }
    if report.logs_dir.as_os_str().is_empty() {
        let _ = writeln!(
            out,
            "{d}logs: not kept (every run succeeded; --logs DIR keeps them){r}"
        );
    } else {
        let _ = writeln!(out, "{d}logs: {}{r}", report.logs_dir.display());
    }
    std::mem::take(out)
}

fn print_times(out: &mut String, bench: &BenchmarkResult) {
    let Some(wall) = &bench.wall_s else {
        let _ = writeln!(out, "  no successful run to summarise");
        return;
    };
    let mean = |s: &Option<QuantitySummary>| s.as_ref().map_or(0.0, |x| x.mean);
    let _ = writeln!(
        out,
        "  Time (mean ± σ):   {:>10} ± {:>9}    [User: {}, System: {}]",
        fmt_s(wall.mean),
        fmt_s(wall.stddev.unwrap_or(0.0)),
        fmt_s(mean(&bench.user_s)),
        fmt_s(mean(&bench.sys_s))
    );
    let _ = writeln!(
        out,
        "  Range (min … max): {:>10} … {:>9}    {} runs",
        fmt_s(wall.min),
        fmt_s(wall.max),
        wall.n
    );
    let ci = wall.ci.map_or("n/a".into(), |c| {
        format!("[{}, {}]", fmt_s(c[0]), fmt_s(c[1]))
    });
    let rss = bench
        .max_rss_bytes
        .as_ref()
        .map_or(0.0, |x| x.max / (1024.0 * 1024.0));
    let _ = writeln!(
        out,
        "  {:.0}% CI of mean:   {ci}    median {}    max RSS {rss:.1} MiB",
        wall.ci_level * 100.0,
        fmt_s(wall.median)
    );
}

fn print_training(out: &mut String, t: &TrainingReport, bench: &BenchmarkResult) {
    let _ = writeln!(
        out,
        "  Training (last run): {} steps, {} measured; step time p50 {} p90 {}",
        t.steps,
        t.measured_steps,
        fmt_s(t.step_time_s.p50),
        fmt_s(t.step_time_s.p90)
    );
    if let Some(tp) = &t.tokens_per_s {
        let _ = writeln!(
            out,
            "    tokens/s p50 {:.1}  p10 {:.1}  aggregate {:.1}",
            tp.p50, tp.p10, tp.aggregate
        );
    }
    if let Some(sp) = &t.samples_per_s {
        let _ = writeln!(
            out,
            "    samples/s p50 {:.2}  p10 {:.2}  aggregate {:.2}",
            sp.p50, sp.p10, sp.aggregate
        );
    }
    if let Some(m) = &t.mfu {
        let _ = writeln!(
            out,
            "    MFU p50 {:.2} % ({}; {} device(s) × {:.3e} FLOP/s)",
            m.p50 * 100.0,
            m.estimator,
            m.devices,
            m.peak_flops_per_device
        );
    }
    if let Some(l) = &t.loss {
        let _ = writeln!(
            out,
            "    loss {:.4} → {:.4} (slope {:+.3e}/step)",
            l.first, l.last, l.slope
        );
    }
    if let Some(c) = &t.cost {
        if let Some(k) = c.per_1k_samples {
            let _ = writeln!(out, "    cost ${k:.4} per 1K samples");
        }
        if let Some(m) = c.per_1m_tokens {
            let _ = writeln!(out, "    cost ${m:.4} per 1M tokens");
        }
    }
    if let Some(rk) = &t.ranks {
        let _ = writeln!(
            out,
            "    ranks: slowest {} (median spread {:.1} %), waiting share {:.1} %, outliers {:?}",
            rk.slowest_rank,
            rk.median_spread * 100.0,
            rk.waiting_share * 100.0,
            rk.outlier_ranks
        );
    }
    if let Some(bn) = &bench.bottleneck {
        out.push_str(&bn.text("    "));
    }
    if let Some(across) = &bench.training
        && across.replicates > 1
        && let Some(tp) = &across.tokens_per_s
    {
        let _ = writeln!(
            out,
            "    across {} runs: tokens/s mean {:.1}{}",
            across.replicates,
            tp.mean,
            tp.ci
                .map_or(String::new(), |c| format!(" [{:.1}, {:.1}]", c[0], c[1]))
        );
    }
}

fn print_relative(out: &mut String, report: &ExecReport) {
    let means: Vec<(usize, f64)> = report
        .benchmarks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, b.wall_s.as_ref()?.mean)))
        .collect();
    if means.len() < 2 {
        return;
    }
    let &(fastest, fmean) = means
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("two or more means");
    let _ = writeln!(
        out,
        "{}Summary{}\n  {} ran",
        BOLD, RESET, report.benchmarks[fastest].command
    );
    for &(i, m) in &means {
        if i != fastest {
            let _ = writeln!(
                out,
                "    {:>8.2} times faster than {}",
                m / fmean,
                report.benchmarks[i].command
            );
        }
    }
    let _ = writeln!(out);
}
