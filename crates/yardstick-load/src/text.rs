//! Serving results as people read them (`yardstick bench serve` without `--json`). ANSI styles
//! mark headers; the caller strips them when the output is not a terminal.

use std::fmt::Write;

use crate::{MlperfResult, PointResult};

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// MLPerf scenario results: the run, the latency claim with its interval and early-stopping
/// estimate, the Server scenario's bounds, and the validity verdict with its reasons.
pub fn mlperf(results: &[MlperfResult]) -> String {
    let mut out = String::new();
    write_mlperf(&mut out, results).expect("writing to a String");
    out
}

/// A capacity search: one line per probe, then the answer.
pub fn capacity(r: &crate::capacity::CapacityResult) -> String {
    let mut out = String::new();
    write_capacity(&mut out, r).expect("writing to a String");
    out
}

/// The tail the probe table shows: the smallest of p90, p95 and p99 at or above the share of
/// requests the SLO is judged at (a p90 SLO shows p90, not p99), p99 beyond.
fn tail_of(share: f64) -> (&'static str, fn(&crate::Distribution) -> f64) {
    if share <= 0.90 + 1e-9 {
        ("p90", |d| d.p90)
    } else if share <= 0.95 + 1e-9 {
        ("p95", |d| d.p95)
    } else {
        ("p99", |d| d.p99)
    }
}

fn write_capacity(out: &mut String, r: &crate::capacity::CapacityResult) -> std::fmt::Result {
    let share = match r.criterion {
        crate::capacity::Criterion::Percentile(p) | crate::capacity::Criterion::Attainment(p) => p,
    };
    let (tail, at) = tail_of(share);
    writeln!(
        out,
        "{BOLD}{:>10}  {:>8}  {:>5}  {:>10}  {:>10}  {:>10}  {:<10}  missed{RESET}",
        r.axis,
        "requests",
        "parts",
        "p50 TTFT",
        format!("{tail} TTFT"),
        format!("{tail} TPOT"),
        "SLO"
    )?;
    let ms = |d: &Option<crate::Distribution>, q: Option<fn(&crate::Distribution) -> f64>| {
        d.as_ref()
            .map(|d| format!("{:.1} ms", q.map_or(d.p50, |q| q(d))))
            .unwrap_or_else(|| "-".into())
    };
    for p in &r.probes {
        let missed: Vec<String> = p
            .objectives
            .iter()
            .map(|o| format!("{} {}", o.objective, o.missed))
            .collect();
        writeln!(
            out,
            "{:>10}  {:>8}  {:>5}  {:>10}  {:>10}  {:>10}  {:<10}  {}",
            format!("{}", (p.load * 100.0).round() / 100.0),
            p.requests,
            p.parts,
            ms(&p.summary.ttft_ms, None),
            ms(&p.summary.ttft_ms, Some(at)),
            ms(&p.summary.tpot_ms, Some(at)),
            match p.outcome {
                yardstick_stats::early_stopping::ShareTest::Holds => "holds",
                yardstick_stats::early_stopping::ShareTest::Breaks => "breaks",
                yardstick_stats::early_stopping::ShareTest::Undecided => "undecided",
            },
            missed.join(", ")
        )?;
    }
    writeln!(out)?;
    writeln!(out, "{BOLD}capacity{RESET}: {}", r.statement)?;
    if let (Some(o), Some(q)) = (r.output_token_throughput, r.request_throughput) {
        writeln!(
            out,
            "  at the capacity: {q:.2} requests/s completed, {o:.1} output tokens/s{}",
            r.cost_per_1m_output_tokens
                .map(|c| format!(", ${c:.3} per million output tokens"))
                .unwrap_or_default()
        )?;
    }
    if r.undecided_probes > 0 {
        writeln!(
            out,
            "  {} probe(s) stayed undecided after the most requests allowed and count as breaking \
             (--max-probe-requests measures longer)",
            r.undecided_probes
        )?;
    }
    Ok(())
}

/// One block per point: counts and throughputs, then mean/p50/p99 of every latency, errors and
/// token-count warnings.
pub fn points(points: &[PointResult]) -> String {
    let mut out = String::new();
    write_points(&mut out, points).expect("writing to a String");
    out
}

fn write_mlperf(out: &mut String, results: &[MlperfResult]) -> std::fmt::Result {
    for r in results {
        writeln!(
            out,
            "{}MLPerf {}{} on {}: {} queries ({} completed, {} samples failed) in {:.2}s; {:.1} samples/s",
            BOLD,
            r.scenario,
            RESET,
            r.traffic,
            r.queries,
            r.queries_completed,
            r.samples_failed,
            r.duration_s,
            r.samples_per_s
        )?;
        if let Some(l) = &r.latency {
            let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
            writeln!(
                out,
                "  p{} {} latency: {} ms; {:.0}% CI [{}, {}] ms; early-stopping estimate {} ms",
                (l.percentile * 100.0).round(),
                l.metric,
                v(l.value_ms),
                l.ci_level * 100.0,
                v(l.ci.map(|c| c.lower)),
                v(l.ci.map(|c| c.upper)),
                v(l.early_stopping.map(|e| e.estimate)),
            )?;
        }
        if let Some(s) = &r.server {
            writeln!(
                out,
                "  target {:.2} QPS, achieved {:.2} QPS",
                s.target_qps, s.achieved_qps
            )?;
            for b in &s.bounds {
                writeln!(
                    out,
                    "  p99 {}: {} ms (bound {} ms, {} over) {}",
                    b.metric,
                    b.p99_ms.map_or("-".to_string(), |x| format!("{x:.2}")),
                    b.bound_ms,
                    b.over_bound,
                    if b.within { "within" } else { "OVER" }
                )?;
            }
        }
        if let Some(res) = r.result {
            writeln!(out, "  result: {res}")?;
        }
        writeln!(out, "  {}", r.validity)?;
        for why in &r.reasons {
            writeln!(out, "    {why}")?;
        }
    }
    Ok(())
}

fn fmt_dist(d: &Option<crate::Distribution>) -> String {
    match d {
        Some(d) => format!("{:>9.2} {:>9.2} {:>9.2}", d.mean, d.p50, d.p99),
        None => format!("{:>9} {:>9} {:>9}", "-", "-", "-"),
    }
}

/// The short per-model table under a point that mixed models.
fn write_per_model(out: &mut String, s: &crate::PointSummary) -> std::fmt::Result {
    let width = s
        .per_model
        .keys()
        .map(|k| k.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let slo = s.per_model.values().any(|m| m.slo_attainment.is_some());
    writeln!(
        out,
        "  {:<width$} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
        "model",
        "requests",
        "ttft p50",
        "ttft p99",
        "itl p50",
        "e2e p50",
        "out tok/s",
        if slo { "       slo" } else { "" }
    )?;
    let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    for (name, m) in &s.per_model {
        writeln!(
            out,
            "  {:<width$} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9.1}{}",
            name,
            m.requests,
            ms(m.ttft_ms.map(|t| t.p50)),
            ms(m.ttft_ms.map(|t| t.p99)),
            ms(m.itl_ms_p50),
            ms(m.e2e_ms_p50),
            m.output_token_throughput,
            match m.slo_attainment {
                Some(a) => format!(" {:>7.1} %", a * 100.0),
                None if slo => format!(" {:>9}", "-"),
                None => String::new(),
            }
        )?;
    }
    // Models held to objectives of their own.
    for (name, m) in &s.per_model {
        if let Some(b) = &m.slo {
            let parts: Vec<String> = [("ttft", b.ttft_ms), ("tpot", b.tpot_ms), ("e2e", b.e2e_ms)]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| format!("{k} ≤ {v} ms")))
                .collect();
            writeln!(out, "  slo of {name}: {}", parts.join(", "))?;
        }
    }
    Ok(())
}

/// The per-kind table under a point that mixed request kinds: validity with its interval.
fn write_per_kind(out: &mut String, s: &crate::PointSummary) -> std::fmt::Result {
    writeln!(
        out,
        "  {:<9} {:>8} {:>9} {:>9} {:>9} {:>8} {:>17}",
        "kind", "requests", "ttft p50", "ttft p99", "e2e p50", "valid", "95 % interval"
    )?;
    let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    for (kind, k) in &s.per_kind {
        writeln!(
            out,
            "  {:<9} {:>8} {:>9} {:>9} {:>9} {:>8} {:>17}",
            kind.name(),
            k.requests,
            ms(k.ttft_ms.map(|t| t.p50)),
            ms(k.ttft_ms.map(|t| t.p99)),
            ms(k.e2e_ms_p50),
            k.valid_rate
                .map_or("-".to_string(), |r| format!("{:.1} %", r * 100.0)),
            k.valid_rate_ci95
                .map_or("-".to_string(), |[lo, hi]| format!(
                    "[{:.1}, {:.1}] %",
                    lo * 100.0,
                    hi * 100.0
                )),
        )?;
    }
    for (kind, k) in &s.per_kind {
        if let Some(why) = &k.first_invalid
            && *kind != crate::kinds::Kind::Eval
        {
            writeln!(out, "  first invalid {}: {why}", kind.name())?;
        }
    }
    if let Some(a) = &s.eval_mix {
        let pct = |x: f64| x * 100.0;
        writeln!(
            out,
            "  accuracy under load: {:.1} % [{:.1}, {:.1}] of {} eval items{}",
            pct(a.accuracy),
            pct(a.ci95[0]),
            pct(a.ci95[1]),
            a.completed,
            if a.failed > 0 {
                format!(" ({} more failed)", a.failed)
            } else {
                String::new()
            }
        )?;
        if a.per_task.len() > 1 {
            for (task, t) in &a.per_task {
                writeln!(
                    out,
                    "    {task:<12} {:>5.1} % [{:.1}, {:.1}] of {}",
                    pct(t.accuracy),
                    pct(t.ci95[0]),
                    pct(t.ci95[1]),
                    t.completed
                )?;
            }
        }
        for (task, t) in &a.per_task {
            if let Some(why) = &t.first_wrong {
                writeln!(out, "  first wrong {task}: {why}")?;
            }
        }
    }
    if let Some(q) = s.quality_goodput {
        writeln!(
            out,
            "  quality goodput: {q:.2} req/s met every SLO with a valid, correct answer"
        )?;
    }
    Ok(())
}

fn write_points(out: &mut String, points: &[PointResult]) -> std::fmt::Result {
    for PointResult {
        summary: s,
        records,
    } in points
    {
        writeln!(
            out,
            "{}{}{} at {} {}: {} completed, {} failed in {:.2}s; {:.1} req/s, {:.1} output tok/s{}",
            BOLD,
            s.scenario,
            RESET,
            s.load.mode,
            s.load.value,
            s.requests.completed,
            s.requests.failed,
            s.duration_s,
            s.request_throughput,
            s.output_token_throughput,
            match s.goodput {
                Some(g) => format!(", goodput {g:.1} req/s"),
                None => String::new(),
            }
        )?;
        writeln!(
            out,
            "  {:<16} {:>9} {:>9} {:>9}",
            "ms", "mean", "p50", "p99"
        )?;
        for (name, d) in [
            ("ttft", &s.ttft_ms),
            ("tpot", &s.tpot_ms),
            ("itl", &s.itl_ms),
            ("e2e", &s.e2e_ms),
            ("client queue", &s.client_queue_ms),
        ] {
            writeln!(out, "  {:<16} {}", name, fmt_dist(d))?;
        }
        for (name, d) in [
            ("answer ttft", &s.answer_ttft_ms),
            ("ttft, 1st turn", &s.first_turn_ttft_ms),
            ("ttft, later", &s.later_turn_ttft_ms),
        ] {
            if d.is_some() {
                writeln!(out, "  {:<16} {}", name, fmt_dist(d))?;
            }
        }
        if let Some(r) = &s.reasoning_tokens {
            writeln!(
                out,
                "  reasoning: {:.1} tokens per request (p50 {:.0}, max {:.0}), counted apart from the answer",
                r.mean, r.p50, r.max
            )?;
        }
        if let Some(c) = &s.sessions {
            writeln!(
                out,
                "  sessions: {} completed, {} failed, {} cut short; {} turns; {:.2} sessions/s{}",
                c.completed,
                c.failed,
                c.cut,
                c.turns,
                s.session_throughput.unwrap_or(0.0),
                s.session_duration_s
                    .as_ref()
                    .map(|d| format!(", duration p50 {:.2} s, p99 {:.2} s", d.p50, d.p99))
                    .unwrap_or_default()
            )?;
            writeln!(
                out,
                "  {:>6} {:>8} {:>10} {:>10} {:>10} {:>8}",
                "turn", "requests", "prompt tok", "p50 TTFT", "p99 TTFT", "cached"
            )?;
            for t in &s.turns {
                let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
                writeln!(
                    out,
                    "  {:>6} {:>8} {:>10.0} {:>10} {:>10} {:>8}",
                    t.turn,
                    t.requests,
                    t.prompt_tokens_mean,
                    ms(t.ttft_ms_p50),
                    ms(t.ttft_ms_p99),
                    t.prompt_cache_hit_rate
                        .map_or("-".to_string(), |r| format!("{:.0} %", r * 100.0))
                )?;
            }
        }
        if !s.per_model.is_empty() {
            write_per_model(out, s)?;
        }
        if !s.per_kind.is_empty() {
            write_per_kind(out, s)?;
        }
        if let Some(c) = &s.prompt_token_check {
            match &c.warning {
                Some(w) => writeln!(out, "  {BOLD}warning{RESET}: {w}")?,
                None => writeln!(
                    out,
                    "  prompt tokens: the server counts {} in {} prompts planned as {} ({:+.1} %)",
                    c.server_tokens, c.prompts, c.planned_tokens, c.gap_pct
                )?,
            }
        }
        if let Some(b) = s.image_bytes_per_request {
            writeln!(
                out,
                "  images: {:.1} KiB per request (PNG; base64 on the wire adds a third)",
                b / 1024.0
            )?;
        }
        if let Some(r) = s.prompt_cache_hit_rate {
            writeln!(
                out,
                "  prompt cache: {:.1} % of prompt tokens served from the server's prefix cache",
                r * 100.0
            )?;
        }
        if !s.requests.errors.is_empty() {
            let errs: Vec<String> = s
                .requests
                .errors
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            writeln!(out, "  errors: {}", errs.join(", "))?;
        }
        if let Some(e) = &s.first_error {
            writeln!(out, "  first error: {e}")?;
        }
        if s.token_count_disagreements > 0 {
            let local = if records.iter().any(|r| r.local_output_tokens.is_some()) {
                "the local tokenizer"
            } else {
                "content events (pass --tokenizer for a real count)"
            };
            writeln!(
                out,
                "  {}warning{}: {} of {} completed request(s) report output tokens (server usage) more than 10 % away from {local}; TPOT and token throughput use the server's count",
                BOLD, RESET, s.token_count_disagreements, s.requests.completed,
            )?;
        }
        if let (Some(t), Some(r)) = (s.cost_per_1m_output_tokens, s.cost_per_1k_requests) {
            writeln!(
                out,
                "  cost: ${t:.3} per million output tokens, ${r:.3} per thousand requests"
            )?;
        }
        match (s.energy_j_per_output_token, &s.energy_unavailable) {
            (Some(j), _) => writeln!(out, "  energy: {j:.3} J per output token (RAPL)")?,
            (None, Some(why)) => writeln!(out, "  energy: unavailable ({why})")?,
            _ => {}
        }
        if let Some(t) = &s.trace {
            writeln!(
                out,
                "  trace: {} ({}), {} requests over {:.2} s at x{}{}",
                t.file,
                t.format,
                t.requests,
                t.span_s,
                t.speedup,
                t.theoretical_prefix_hit_rate
                    .map(|h| format!(", prefix-cache hit rate at most {:.1} %", h * 100.0))
                    .unwrap_or_default()
            )?;
        }
        if let Some(l) = &s.schedule_lateness_ms {
            writeln!(
                out,
                "  schedule: sent late by p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {} of {} more than {} ms late",
                l.p50,
                l.p99,
                l.max,
                l.late,
                l.count,
                crate::summary::LATE_MS
            )?;
        }
        for w in [&s.client_bottleneck, &s.schedule_warning, &s.short_point]
            .into_iter()
            .flatten()
        {
            writeln!(out, "  {BOLD}warning{RESET}: {w}")?;
        }
        if let Some(m) = &s.server {
            let g = |x: &Option<crate::scrape::GaugeStat>| {
                x.map_or("-".to_string(), |g| {
                    format!("{:.0} (max {:.0})", g.p50, g.max)
                })
            };
            let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2} ms"));
            writeln!(
                out,
                "  server: running {}, waiting {}, queue {}, TTFT {} (client − server {})",
                g(&m.server_running),
                g(&m.server_waiting),
                ms(m.server_queue_ms),
                ms(m.server_ttft_ms),
                ms(m.ttft_client_minus_server_ms)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Slo;
    use crate::record::ErrorClass;
    use crate::summary::tests::rec;
    use crate::summary::{LoadLevel, StopReason, summarize};

    /// Issue 39: the capacity probe table shows the tail the SLO is judged at (a p90 SLO's
    /// table showed p99): the smallest of p90/p95/p99 at or above the share.
    #[test]
    fn the_capacity_table_shows_the_slo_s_own_tail() {
        let d = crate::Distribution {
            count: 100,
            mean: 1.0,
            p50: 1.0,
            p90: 9.0,
            p95: 9.5,
            p99: 9.9,
            min: 0.0,
            max: 10.0,
        };
        let shown = |share: f64| {
            let (name, at) = tail_of(share);
            (name, at(&d))
        };
        assert_eq!(shown(0.90), ("p90", 9.0));
        assert_eq!(shown(0.95), ("p95", 9.5));
        assert_eq!(shown(0.99), ("p99", 9.9));
        // Between two: the stricter one, never a tail looser than the SLO's.
        assert_eq!(shown(0.97), ("p99", 9.9));
        assert_eq!(shown(0.5), ("p90", 9.0));
    }

    #[test]
    fn a_point_reads_as_counts_then_one_row_per_latency() {
        let a = rec(1, 100, &[150, 160, 170], 3); // ttft 50, e2e 70
        let b = rec(2, 200, &[280, 300, 320], 3); // ttft 80, e2e 120
        let mut c = rec(3, 300, &[], 3);
        c.error = Some(ErrorClass::Http5xx);
        c.done_ns = Some(310_000_000);
        let records = vec![a, b, c];
        let summary = summarize(
            "D(10,3)",
            LoadLevel {
                mode: "concurrency".into(),
                value: 2.0,
                arrival: None,
            },
            &records,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        let text = points(&[PointResult { summary, records }])
            .replace(BOLD, "")
            .replace(RESET, "");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("D(10,3) at concurrency 2: 2 completed, 1 failed in "),
            "{text}"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["ms", "mean", "p50", "p99"]
        );
        // TTFT mean of 50 and 80 ms is 65; p50 (numpy linear) is 65 too.
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>()[..3],
            ["ttft", "65.00", "65.00"]
        );
        assert!(text.contains("errors: http_5xx 1"), "{text}");
    }
}
