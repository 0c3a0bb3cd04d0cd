//! Serving plots: latency histograms and CDFs, throughput against latency, percentiles, the
//! serving frontier, capacity probes and multi-turn sessions.

use super::*;
use crate::format::human;
use crate::model::{PointReport, RunReport};
use yardstick_spec::metrics::id;

/// Latency metrics a serving point has samples for, with a label.
const LATENCIES: [(&str, &str); 4] = [
    (id::TTFT_MS, "TTFT"),
    (id::TPOT_MS, "TPOT"),
    (id::ITL_MS, "ITL"),
    (id::E2E_MS, "E2E latency"),
];

/// Histogram of one latency sample in `unit` (`ms`), linear or log-spaced bins on a log axis,
/// with mean, p95 and p99 marked (in human units, [`crate::format::human`]) and the
/// normal-assumption p99 (mean + 2.326 sd) beside the empirical p99.
pub fn histogram(
    title: &str,
    data: &[f64],
    unit: &str,
    log: bool,
) -> Result<Option<String>, ReportError> {
    let s = sorted(data);
    let s: Vec<f64> = if log {
        s.into_iter().filter(|x| *x > 0.0).collect()
    } else {
        s
    };
    if s.len() < 2 {
        return Ok(None);
    }
    let n = s.len();
    let mean = s.iter().sum::<f64>() / n as f64;
    let (p95, p99) = (q(&s, 0.95), q(&s, 0.99));
    let normal = yardstick_stats::tail::normal_tail(&s, 0.99)
        .ok()
        .map(|t| t.normal);
    // A log axis is drawn as a linear axis over log10(x), labelled with x: plotters' log
    // coordinates put no tick inside a range narrower than a decade, which latencies often are.
    let t = |x: f64| if log { x.log10() } else { x };
    let (min, max) = (t(s[0]), t(s[n - 1]));
    let hi = normal
        .filter(|x| *x > 0.0 || !log)
        .map_or(max, |x| t(x).max(max));
    let bins = ((n as f64).sqrt().ceil() as usize).clamp(10, 60);
    let (a, b) = if hi > min {
        (min, hi)
    } else {
        padded(min, min, 0.0)
    };
    let edges: Vec<f64> = (0..=bins)
        .map(|i| a + (b - a) * i as f64 / bins as f64)
        .collect();
    let mut counts = vec![0usize; bins];
    for x in &s {
        let x = t(*x);
        let i = edges
            .partition_point(|e| *e <= x)
            .saturating_sub(1)
            .min(bins - 1);
        counts[i] += 1;
    }
    let ymax = *counts.iter().max().unwrap_or(&1) as f64 * 1.15;
    let (x0, x1) = (edges[0], edges[bins]);
    let h = |x: f64| crate::format::human(x, unit);
    let marks: Vec<(String, f64, RGBColor, bool)> = [
        Some((format!("mean {}", h(mean)), mean, color(2), false)),
        Some((format!("p95 {}", h(p95)), p95, color(1), false)),
        Some((format!("p99 {}", h(p99)), p99, color(3), false)),
        normal.map(|x| (format!("p99 if normal {}", h(x)), x, color(4), true)),
    ]
    .into_iter()
    .flatten()
    .filter(|m| !log || m.1 > 0.0)
    .map(|(l, x, c, d)| (l, t(x), c, d))
    .collect();
    let caption = format!(
        "{title} ({} axis, n = {n})",
        if log { "log" } else { "linear" }
    );
    // On a log axis, as many ticks (up to 10) as have distinct labels at 3 significant
    // digits, more digits only when even 4 ticks would repeat one.
    let at = |v: f64, digits: usize| significant(10f64.powf(v), digits);
    let (ticks, digits) = if log {
        distinct_ticks(x0..x1, 10, &at)
    } else {
        (10, 0)
    };
    let label = |v: &f64| if log { at(*v, digits) } else { num(*v) };
    let x_desc = if log {
        format!("{unit} (log scale)")
    } else {
        unit.to_string()
    };
    svg(title, (W, H), |root| {
        let mut axes = Axes::new(&caption, x0..x1, 0.0..ymax).desc(&x_desc, "requests");
        axes.x_fmt = Some(&label);
        axes.x_labels = Some(ticks);
        let mut chart = axes.draw(root)?;
        chart.draw_series(edges.windows(2).zip(&counts).map(|(e, c)| {
            Rectangle::new(
                [(e[0], 0.0), (e[1], *c as f64)],
                color(0).mix(0.55).filled(),
            )
        }))?;
        for (label, x, c, dashed) in &marks {
            let (x, c) = (*x, *c);
            let pts = vec![(x, 0.0), (x, ymax)];
            if *dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, c.stroke_width(2)))?
                    .label(label.as_str())
                    .legend(legend_line(c));
            } else {
                chart
                    .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
                    .label(label.as_str())
                    .legend(legend_line(c));
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
    .map(Some)
}

/// Whether a sample spans at least a decade (largest / smallest positive value ≥ 10): only
/// then does a log axis show something the linear one does not.
fn spans_a_decade(data: &[f64]) -> bool {
    let (lo, hi) = data
        .iter()
        .filter(|x| x.is_finite() && **x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
    lo.is_finite() && hi / lo >= 10.0
}

/// Latency histograms of TTFT and E2E per serving point: linear, and log too where the sample
/// spans a decade or more.
pub fn latency_histograms(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "latency-histograms",
        "Latency histograms",
        "Measured requests pooled over replicates. Solid lines: empirical mean, p95 and p99; \
         dashed: the p99 a normal distribution with the same mean and standard deviation \
         would have (mean + 2.326 sd). The gap between them is how much the normal assumption \
         misjudges the tail. A log-axis version is drawn only for a sample that spans a decade \
         or more.",
    );
    let serve: Vec<&PointReport> = r.points.iter().filter(|p| p.kind == "serve").collect();
    if serve.is_empty() {
        sec.notes
            .push("no serving points in this run: no request latencies to plot".into());
    }
    for p in serve {
        let Some(l) = &p.latency else {
            sec.notes
                .push(format!("{}: raw samples not stored (or collected)", p.id));
            continue;
        };
        for (metric, label) in [LATENCIES[0], LATENCIES[3]] {
            let data = l.get(metric);
            for log in [false, true] {
                if log && !spans_a_decade(data) {
                    continue;
                }
                let title = format!("{label} · {}", p.id);
                match histogram(&title, data, "ms", log)? {
                    Some(svg) => sec.figures.push(Figure {
                        title: format!("{title} ({})", if log { "log" } else { "linear" }),
                        svg,
                    }),
                    None if !log => sec
                        .notes
                        .push(format!("{}: fewer than 2 {label} samples", p.id)),
                    None => {}
                }
            }
        }
    }
    Ok(sec)
}

/// Empirical CDFs of TTFT and E2E latency, one line per serving point.
pub fn latency_cdf(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "latency-cdf",
        "Latency CDF",
        "Share of measured requests at or below a latency, one line per point.",
    );
    let serve: Vec<(&PointReport, &crate::model::LatencySamples)> = r
        .points
        .iter()
        .filter_map(|p| p.latency.as_ref().map(|l| (p, l)))
        .collect();
    if serve.is_empty() {
        sec.notes
            .push("no request latency samples in this run: no CDF".into());
        return Ok(sec);
    }
    for (metric, label) in [LATENCIES[0], LATENCIES[3]] {
        let lines: Vec<(String, Vec<(f64, f64)>)> = serve
            .iter()
            .filter_map(|(p, l)| {
                let s = sorted(l.get(metric));
                if s.is_empty() {
                    return None;
                }
                // At most 400 steps of the CDF: plenty for the eye, small in the file.
                let k = s.len().min(400);
                let pts = (0..=k)
                    .map(|i| {
                        let f = i as f64 / k as f64;
                        (q(&s, f), f)
                    })
                    .collect();
                Some((p.id.clone(), pts))
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        let lo = lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.0))
            .fold(f64::INFINITY, f64::min);
        let hi = lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.0))
            .fold(f64::NEG_INFINITY, f64::max);
        let (x0, x1) = padded(lo, hi, 0.02);
        let title = format!("{label} CDF");
        let svg = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(root, &title, x0..x1, 0.0..1.0, "ms", "fraction of requests")?;
            for (i, (name, pts)) in lines.iter().enumerate() {
                let c = color(i);
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(legend_line(c));
            }
            legend(&mut chart, SeriesLabelPosition::LowerRight)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(sec)
}

/// Serving points grouped by scenario, each group ordered by load.
fn by_scenario(r: &RunReport) -> Vec<(String, Vec<&PointReport>)> {
    let mut groups: Vec<(String, Vec<&PointReport>)> = Vec::new();
    for p in r.points.iter().filter(|p| p.kind == "serve") {
        let key = format!(
            "{} ({})",
            p.scenario().unwrap_or("?"),
            p.work["load_mode"].as_str().unwrap_or("load")
        );
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(p),
            None => groups.push((key, vec![p])),
        }
    }
    for g in &mut groups {
        g.1.sort_by(|a, b| {
            a.work["load_value"]
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.work["load_value"].as_f64().unwrap_or(0.0))
        });
    }
    groups
}

/// Throughput against latency across the load points of each scenario (the Offline-vs-Server
/// picture): where adding load stops adding throughput and only adds latency.
pub fn throughput_latency(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "throughput-latency",
        "Throughput vs latency",
        "One curve per scenario across its load points (labelled). The knee is where more \
         load stops buying throughput and only adds latency.",
    );
    let groups = by_scenario(r);
    if groups.is_empty() {
        sec.notes
            .push("no serving points in this run: no throughput-latency curve".into());
    }
    for (scenario, points) in groups {
        let rows: Vec<(String, f64, [Option<f64>; 3])> = points
            .iter()
            .filter_map(|p| {
                let x = p
                    .metric(
                        yardstick_spec::metrics::id::OUTPUT_TOKEN_THROUGHPUT,
                        "value",
                    )
                    .or_else(|| p.metric(id::REQUEST_THROUGHPUT, "value"))?
                    .mean;
                let y = |m: &str, s: &str| p.metric(m, s).map(|m| m.mean);
                Some((
                    p.load_label(),
                    x,
                    [
                        y(id::TTFT_MS, "p50"),
                        y(id::TTFT_MS, "p99"),
                        y(id::E2E_MS, "p50"),
                    ],
                ))
            })
            .collect();
        if rows.len() < 2 {
            sec.notes.push(format!(
                "{scenario}: {} load point(s) with throughput; a curve needs two or more",
                rows.len()
            ));
            continue;
        }
        let x_unit = if points[0]
            .metric(
                yardstick_spec::metrics::id::OUTPUT_TOKEN_THROUGHPUT,
                "value",
            )
            .is_some()
        {
            "output tokens/s"
        } else {
            "requests/s"
        };
        let xs: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let ys: Vec<f64> = rows
            .iter()
            .flat_map(|r| r.2.iter().flatten())
            .copied()
            .collect();
        if ys.is_empty() {
            sec.notes
                .push(format!("{scenario}: no latency percentiles"));
            continue;
        }
        let (x0, x1) = padded(
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            0.08,
        );
        let y1 = ys.iter().copied().fold(0.0, f64::max) * 1.15;
        let title = format!("Throughput vs latency · {scenario}");
        let svg = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(root, &title, x0..x1, 0.0..y1, x_unit, "ms")?;
            for (k, name) in ["TTFT p50", "TTFT p99", "E2E p50"].iter().enumerate() {
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter_map(|r| r.2[k].map(|y| (r.1, y)))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let c = color(k);
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                    .label(*name)
                    .legend(legend_line(c));
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
            }
            chart.draw_series(rows.iter().filter_map(|r| {
                r.2[0].map(|y| Text::new(r.0.clone(), (r.1, y), (FONT, 11).into_font()))
            }))?;
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(sec)
}

/// TTFT, TPOT and ITL percentiles (p50, p90, p99) per serving point, with the CI over
/// replicates as error bars.
pub fn percentiles(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "percentiles",
        "TTFT, TPOT and ITL percentiles per point",
        "Mean over replicates of each replicate's percentile; bars are the confidence interval \
         over replicates.",
    );
    let serve: Vec<&PointReport> = r.points.iter().filter(|p| p.kind == "serve").collect();
    if serve.is_empty() {
        sec.notes
            .push("no serving points in this run: no token-latency percentiles".into());
        return Ok(sec);
    }
    let multi = by_scenario(r).len() > 1;
    let labels: Vec<String> = serve
        .iter()
        .map(|p| {
            if multi {
                format!("{} {}", p.scenario().unwrap_or(""), p.load_label())
            } else {
                p.load_label()
            }
        })
        .collect();
    for (metric, label) in &LATENCIES[..3] {
        let stats = ["p50", "p90", "p99"];
        let series: Vec<Vec<Dot>> = stats
            .iter()
            .map(|s| {
                serve
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| p.metric(metric, s).map(|m| (i as f64, m.mean, m.ci)))
                    .collect()
            })
            .collect();
        let ys: Vec<f64> = series
            .iter()
            .flatten()
            .flat_map(|(_, y, ci)| [Some(*y), ci.map(|c| c.1)])
            .flatten()
            .collect();
        if ys.is_empty() {
            sec.notes.push(format!("{label}: not measured"));
            continue;
        }
        let y1 = ys.iter().copied().fold(0.0, f64::max) * 1.15;
        let title = format!("{label} percentiles");
        let svg = svg(&title, (W, H), |root| {
            let name = |v: &f64| category(&labels, *v);
            let mut chart = Axes::categories(&title, serve.len(), &name, 0.0..y1.max(1e-9))
                .desc("", "ms")
                .draw(root)?;
            for (k, pts) in series.iter().enumerate() {
                let c = color(k);
                let off = (k as f64 - 1.0) * 0.12;
                chart
                    .draw_series(
                        pts.iter()
                            .map(|(x, y, _)| Circle::new((x + off, *y), 4, c.filled())),
                    )?
                    .label(stats[k])
                    .legend(legend_line(c));
                chart.draw_series(pts.iter().filter_map(|(x, _, ci)| {
                    ci.map(|(lo, hi)| {
                        PathElement::new(vec![(x + off, lo), (x + off, hi)], c.stroke_width(2))
                    })
                }))?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(sec)
}

/// One point of a serving frontier: a load level of one configuration (a run and a scenario).
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierPoint {
    /// The curve: the run (when several are overlaid) and the scenario.
    pub curve: String,
    /// The run.
    pub run_id: String,
    /// The load level (`concurrency=16`, `rate=40`).
    pub load: String,
    /// Offered load: concurrency, or requests per second.
    pub offered: Option<f64>,
    /// Output tokens per second per accelerator (per replica when the run saw none).
    pub throughput: f64,
    /// Output tokens per second of one stream: 1000 / TPOT p50.
    pub per_user: f64,
    /// TTFT p50 and p99, ms.
    pub ttft: (Option<f64>, Option<f64>),
    /// Requests per second meeting every SLO.
    pub goodput: Option<f64>,
    /// On the Pareto frontier of all the points: no other point has both more throughput and
    /// more per-user speed.
    pub pareto: bool,
}

/// Accelerators a run's machine had (`env.json`'s GPUs), or none.
fn accelerators(r: &RunReport) -> usize {
    r.env["gpus"].as_array().map_or(0, Vec::len)
}

/// The frontier points of `runs` (their serving points with throughput and TPOT), the Pareto
/// ones marked.
pub fn frontier_points(runs: &[&RunReport]) -> Vec<FrontierPoint> {
    let mut out = Vec::new();
    for r in runs {
        let per = accelerators(r).max(1) as f64;
        for p in &r.points {
            let Some(scenario) = p.scenario() else {
                continue;
            };
            let (Some(tput), Some(tpot)) = (
                p.metric(id::OUTPUT_TOKEN_THROUGHPUT, "value"),
                p.metric(id::TPOT_MS, "p50"),
            ) else {
                continue;
            };
            if !(tpot.mean > 0.0 && tput.mean.is_finite()) {
                continue;
            }
            let curve = if runs.len() > 1 {
                format!(
                    "{} {} · {scenario}",
                    r.run.name,
                    r.run.run_id.get(..10).unwrap_or(&r.run.run_id)
                )
            } else {
                scenario.to_string()
            };
            out.push(FrontierPoint {
                curve,
                run_id: r.run.run_id.clone(),
                load: p.load_label(),
                offered: p.work["load_value"].as_f64(),
                throughput: tput.mean / per,
                per_user: 1000.0 / tpot.mean,
                ttft: (
                    p.metric(id::TTFT_MS, "p50").map(|m| m.mean),
                    p.metric(id::TTFT_MS, "p99").map(|m| m.mean),
                ),
                goodput: p.metric("goodput", "value").map(|m| m.mean),
                pareto: false,
            });
        }
    }
    let dominated: Vec<bool> = out
        .iter()
        .map(|a| {
            out.iter().any(|b| {
                b.throughput >= a.throughput
                    && b.per_user >= a.per_user
                    && (b.throughput > a.throughput || b.per_user > a.per_user)
            })
        })
        .collect();
    for (p, d) in out.iter_mut().zip(dominated) {
        p.pareto = !d;
    }
    out
}

/// The serving frontier: per-user output speed against output throughput per accelerator, one
/// curve per configuration across its load sweep, the Pareto-optimal points ringed; TTFT
/// against the same throughput; goodput against offered load. `None` without serving points
/// that have both throughput and TPOT.
pub fn frontier(runs: &[&RunReport]) -> Result<Option<Section>, ReportError> {
    let pts = frontier_points(runs);
    if pts.is_empty() {
        return Ok(None);
    }
    let per = if runs.iter().all(|r| accelerators(r) > 0) {
        "per GPU"
    } else {
        "per replica"
    };
    let mut sec = Section::new(
        "frontier",
        "Throughput–interactivity frontier",
        "Each curve is one configuration across its load sweep (labelled by load). Up is faster \
         for each user (output tokens/s of one stream, 1000 / TPOT p50); right is more total \
         output per accelerator. Ringed points are Pareto-optimal: no other point is better on \
         both. Below: TTFT at the same throughput, and goodput against the offered load.",
    );
    let mut curves: Vec<&str> = Vec::new();
    for p in &pts {
        if !curves.contains(&p.curve.as_str()) {
            curves.push(&p.curve);
        }
    }
    let of = |c: &str| -> Vec<&FrontierPoint> {
        let mut v: Vec<&FrontierPoint> = pts.iter().filter(|p| p.curve == c).collect();
        v.sort_by(|a, b| a.throughput.total_cmp(&b.throughput));
        v
    };
    let xmax = pts.iter().map(|p| p.throughput).fold(0.0, f64::max);
    let x_desc = format!("output tokens/s {per}");
    // Panel 1: the frontier.
    let ymax = pts.iter().map(|p| p.per_user).fold(0.0, f64::max);
    let title = format!("Per-user speed vs throughput {per}");
    let svg1 = svg(&title, (W, H + 60), |root| {
        let mut chart = xy_chart(
            root,
            &title,
            0.0..xmax * 1.12 + 1e-9,
            0.0..ymax * 1.15 + 1e-9,
            x_desc.as_str(),
            "output tokens/s per user",
        )?;
        for (k, c) in curves.iter().enumerate() {
            let line: Vec<(f64, f64)> = of(c).iter().map(|p| (p.throughput, p.per_user)).collect();
            let col = color(k);
            chart
                .draw_series(LineSeries::new(line.clone(), col.stroke_width(2)))?
                .label(*c)
                .legend(legend_line(col));
            chart.draw_series(line.iter().map(|p| Circle::new(*p, 4, col.filled())))?;
        }
        chart.draw_series(
            pts.iter()
                .filter(|p| p.pareto)
                .map(|p| Circle::new((p.throughput, p.per_user), 8, BLACK.stroke_width(2))),
        )?;
        chart.draw_series(pts.iter().map(|p| {
            Text::new(
                p.load.clone(),
                (p.throughput, p.per_user),
                (FONT, 11).into_font(),
            )
        }))?;
        // A frontier falls from the top left to the bottom right: the corner below it is
        // empty.
        legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
        Ok(())
    })?;
    sec.figures.push(Figure { title, svg: svg1 });
    // Panel 2: TTFT at the same throughput.
    let tmax = pts
        .iter()
        .filter_map(|p| p.ttft.1.or(p.ttft.0))
        .fold(0.0, f64::max);
    if tmax > 0.0 {
        let title = format!("TTFT vs throughput {per}");
        let svg2 = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(
                root,
                &title,
                0.0..xmax * 1.12 + 1e-9,
                0.0..tmax * 1.15,
                x_desc.as_str(),
                "TTFT ms (solid p50, dashed p99)",
            )?;
            for (k, c) in curves.iter().enumerate() {
                let col = color(k);
                let p50: Vec<(f64, f64)> = of(c)
                    .iter()
                    .filter_map(|p| p.ttft.0.map(|t| (p.throughput, t)))
                    .collect();
                let p99: Vec<(f64, f64)> = of(c)
                    .iter()
                    .filter_map(|p| p.ttft.1.map(|t| (p.throughput, t)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(p50.clone(), col.stroke_width(2)))?
                    .label(*c)
                    .legend(legend_line(col));
                chart.draw_series(DashedLineSeries::new(p99, 6, 4, col.stroke_width(1)))?;
                chart.draw_series(p50.iter().map(|p| Circle::new(*p, 3, col.filled())))?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg: svg2 });
    }
    // Panel 3: goodput against offered load, per curve with both.
    let good: Vec<&FrontierPoint> = pts
        .iter()
        .filter(|p| p.goodput.is_some() && p.offered.is_some())
        .collect();
    if good.len() >= 2 {
        let omax = good.iter().filter_map(|p| p.offered).fold(0.0, f64::max);
        let gmax = good.iter().filter_map(|p| p.goodput).fold(0.0, f64::max);
        let title = "Goodput vs offered load".to_string();
        let svg3 = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(
                root,
                &title,
                0.0..omax * 1.12 + 1e-9,
                0.0..gmax * 1.15 + 1e-9,
                "offered load (concurrency, or requests/s)",
                "goodput, requests/s meeting the SLO",
            )?;
            for (k, c) in curves.iter().enumerate() {
                let mut line: Vec<(f64, f64)> = good
                    .iter()
                    .filter(|p| p.curve == *c)
                    .filter_map(|p| Some((p.offered?, p.goodput?)))
                    .collect();
                if line.is_empty() {
                    continue;
                }
                line.sort_by(|a, b| a.0.total_cmp(&b.0));
                let col = color(k);
                chart
                    .draw_series(LineSeries::new(line.clone(), col.stroke_width(2)))?
                    .label(*c)
                    .legend(legend_line(col));
                chart.draw_series(line.iter().map(|p| Circle::new(*p, 3, col.filled())))?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg: svg3 });
    } else {
        sec.notes
            .push("goodput against offered load needs an SLO (`slo:`) and two load points".into());
    }
    let mut rows = Vec::new();
    for p in pts.iter().filter(|p| p.pareto) {
        rows.push(vec![
            p.curve.clone(),
            p.load.clone(),
            human(p.throughput, "tok/s"),
            human(p.per_user, "tok/s"),
            p.ttft.0.map_or_else(|| "-".into(), |t| human(t, "ms")),
            p.ttft.1.map_or_else(|| "-".into(), |t| human(t, "ms")),
        ]);
    }
    sec.table = Some((
        vec![
            "configuration".into(),
            "load".into(),
            format!("output tok/s {per}"),
            "tok/s per user".into(),
            "TTFT p50".into(),
            "TTFT p99".into(),
        ],
        rows,
    ));
    Ok(Some(sec))
}

/// The probes of every capacity point: each probe's p99 latency of the first objective against
/// its load, green where the SLO held, red where it broke, orange where the test stayed
/// undecided, the SLO's bound dashed; one marker shape per replicate (search).
pub fn capacity(r: &RunReport) -> Result<Option<Section>, ReportError> {
    let points: Vec<&PointReport> = r.points.iter().filter(|p| !p.probes.is_empty()).collect();
    if points.is_empty() {
        return Ok(None);
    }
    let mut sec = Section::new(
        "capacity",
        "Capacity searches",
        "Every probe of each search (a replicate): its p99 latency against the load it offered, \
         green where the SLO held at the test's confidence, red where it broke, orange where too \
         few requests decided it (counted as breaking). The dashed line is the SLO's bound; the \
         capacity is the highest green load below the lowest red.",
    );
    for p in points {
        // The first objective the SLO bounds: TTFT, else TPOT, else E2E.
        let Some(k) = (0..3).find(|&k| p.probes[0].slo_ms[k].is_some()) else {
            sec.notes
                .push(format!("{}: the search had no SLO bound", p.id));
            continue;
        };
        let name = ["TTFT", "TPOT", "E2E"][k];
        let bound = p.probes[0].slo_ms[k].unwrap_or(0.0);
        let pts: Vec<(f64, f64, &str, u32)> = p
            .probes
            .iter()
            .filter_map(|q| Some((q.load, q.p99_ms[k]?, q.outcome.as_str(), q.replicate)))
            .collect();
        if pts.is_empty() {
            sec.notes
                .push(format!("{}: no probe measured {name}", p.id));
            continue;
        }
        let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max) * 1.1 + 1e-9;
        // Latencies past a broken SLO grow without bound: show up to 4× the bound.
        let ymax = pts
            .iter()
            .map(|p| p.1)
            .fold(bound * 1.5, f64::max)
            .min(bound.max(1e-9) * 4.0);
        let unit = p.probes[0].unit.clone();
        let title = format!("{} · p99 {name} per probe", p.id);
        let svg = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(
                root,
                &title,
                0.0..xmax,
                0.0..ymax,
                &format!("load ({unit})"),
                &format!("p99 {name} ms"),
            )?;
            chart.draw_series(DashedLineSeries::new(
                vec![(0.0, bound), (xmax, bound)],
                6,
                4,
                GREY.stroke_width(2),
            ))?;
            chart.draw_series(pts.iter().map(|(x, y, outcome, rep)| {
                let c = match *outcome {
                    "holds" => RGBColor(44, 160, 44),
                    "breaks" => RGBColor(214, 39, 40),
                    _ => RGBColor(230, 145, 0),
                };
                let y = y.min(ymax * 0.98);
                let size = 4 + (*rep % 3) as i32;
                Circle::new((*x, y), size, c.filled())
            }))?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(Some(sec))
}

/// TTFT by turn index of every session point: p50 and p99 (means over replicates) against the
/// turn, with each turn's mean prompt tokens and prefix-cache hit rate in a table. A prefix
/// cache keeps later turns near the first although their prompts grow.
pub fn turns(r: &RunReport) -> Result<Option<Section>, ReportError> {
    let points: Vec<&PointReport> = r.points.iter().filter(|p| !p.turns.is_empty()).collect();
    if points.is_empty() {
        return Ok(None);
    }
    let mut sec = Section::new(
        "turns",
        "Sessions: TTFT by turn",
        "Each turn of a session sends the whole conversation so far, so prompts grow turn by \
         turn; a server that caches prefixes answers later turns about as fast as first ones. \
         Lines: p50 and p99 time to first token at each turn index (means over replicates).",
    );
    let mut rows = Vec::new();
    for p in points {
        let max_turn = p.turns.iter().map(|t| t.turn).max().unwrap_or(1);
        let mean = |f: &dyn Fn(&crate::model::TurnPoint) -> Option<f64>, turn: u32| {
            let v: Vec<f64> = p
                .turns
                .iter()
                .filter(|t| t.turn == turn)
                .filter_map(f)
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let series: Vec<[Option<f64>; 4]> = (1..=max_turn)
            .map(|t| {
                [
                    mean(&|x| x.ttft_ms[0], t),
                    mean(&|x| x.ttft_ms[1], t),
                    mean(&|x| Some(x.prompt_tokens), t),
                    mean(&|x| x.cache_hit_rate, t),
                ]
            })
            .collect();
        for (t, s) in series.iter().enumerate() {
            let f = |x: Option<f64>, d: usize| {
                x.map_or("-".to_string(), |x| format!("{x:.prec$}", prec = d))
            };
            let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| human(x, "ms"));
            rows.push(vec![
                p.id.clone(),
                (t + 1).to_string(),
                f(s[2], 0),
                ms(s[0]),
                ms(s[1]),
                s[3].map_or("-".to_string(), |r| format!("{:.0} %", r * 100.0)),
            ]);
        }
        let ymax = series
            .iter()
            .filter_map(|s| s[1].or(s[0]))
            .fold(0.0, f64::max)
            * 1.15
            + 1e-9;
        let title = format!("{} · TTFT by turn", p.id);
        let svg = svg(&title, (W, H), |root| {
            let mut chart = xy_chart(
                root,
                &title,
                0.5..(max_turn as f64 + 0.5),
                0.0..ymax,
                "turn",
                "TTFT ms",
            )?;
            for (k, (label, color)) in [("p50", COLORS[0]), ("p99", COLORS[1])]
                .into_iter()
                .enumerate()
            {
                let pts: Vec<(f64, f64)> = series
                    .iter()
                    .enumerate()
                    .filter_map(|(t, s)| Some(((t + 1) as f64, s[k]?)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                    .label(label)
                    .legend(legend_line(color));
                chart.draw_series(
                    pts.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    sec.table = Some((
        [
            "point",
            "turn",
            "prompt tokens",
            "p50 TTFT",
            "p99 TTFT",
            "cached",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    ));
    Ok(Some(sec))
}
