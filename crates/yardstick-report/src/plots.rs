//! The report's plots as inline SVG (plotters' SVG backend; text is SVG `<text>` in a generic
//! sans-serif family, so no font files are read or referenced). A plot whose data the run does
//! not have is left out with a one-line note; nothing is drawn from invented data.

use plotters::prelude::*;

use crate::ReportError;
use crate::format::num;
use crate::gate::GateView;
use crate::model::{PointReport, RunReport, StepSeries};
use yardstick_spec::metrics::id;

/// One figure: a title and its SVG.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Title shown above the plot.
    pub title: String,
    /// `<svg …>…</svg>`.
    pub svg: String,
}

/// A group of figures with the notes of those left out.
#[derive(Debug, Clone)]
pub struct Section {
    /// Anchor id.
    pub id: &'static str,
    /// Heading.
    pub title: String,
    /// A sentence on how to read the plots.
    pub caption: String,
    /// The figures.
    pub figures: Vec<Figure>,
    /// Why something is not plotted.
    pub notes: Vec<String>,
    /// A table under the figures (headers, rows), e.g. the frontier's Pareto points.
    pub table: Option<(Vec<String>, Vec<Vec<String>>)>,
}

impl Section {
    fn new(id: &'static str, title: &str, caption: &str) -> Section {
        Section {
            id,
            title: title.into(),
            caption: caption.into(),
            figures: Vec::new(),
            notes: Vec::new(),
            table: None,
        }
    }
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;
/// (x, y, CI of y).
type Dot = (f64, f64, Option<(f64, f64)>);

const W: u32 = 880;
const H: u32 = 380;
const FONT: &str = "sans-serif";
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];
const GREY: RGBColor = RGBColor(120, 120, 120);

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Renders one SVG of `size` with `draw`.
fn svg(
    what: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult,
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| ReportError::render(what, e))?;
        draw(&root).map_err(|e| ReportError::render(what, e))?;
        root.present().map_err(|e| ReportError::render(what, e))?;
    }
    Ok(buf)
}

fn sorted(data: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = data.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_unstable_by(f64::total_cmp);
    s
}

fn q(s: &[f64], p: f64) -> f64 {
    yardstick_stats::percentile::percentile_sorted(s, p)
}

/// The category index at axis value `v` when `v` is on a category's tick (a whole, non-negative
/// number): bars and boxes of a categorical axis sit at 0, 1, 2, …
fn tick(v: f64) -> Option<usize> {
    let i = v.round();
    ((v - i).abs() < 1e-6 && i >= 0.0).then_some(i as usize)
}

/// A range that is never empty.
fn padded(lo: f64, hi: f64, frac: f64) -> (f64, f64) {
    if hi > lo {
        let pad = (hi - lo) * frac;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - pad, hi + pad)
    }
}

/// A chart's coordinates: two linear f64 axes.
type XY =
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>;

/// A chart of two linear axes starting at `x` and `y`, captioned `title`, its mesh drawn with
/// the axes' descriptions and no minor grid lines, x labels as [`num`].
fn xy_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &str,
    y_desc: &str,
) -> Result<ChartContext<'a, SVGBackend<'b>, XY>, Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| num(*v))
        .draw()?;
    Ok(chart)
}

/// The legend of a chart's labelled series at `pos`, on a translucent white box.
fn legend<'a, 'b: 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    pos: SeriesLabelPosition,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()?;
    Ok(())
}

fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
}

/// Latency metrics a serving point has samples for, with a label.
const LATENCIES: [(&str, &str); 4] = [
    (id::TTFT_MS, "TTFT"),
    (id::TPOT_MS, "TPOT"),
    (id::ITL_MS, "ITL"),
    (id::E2E_MS, "E2E latency"),
];

/// Histogram of one latency sample, linear or log-spaced bins on a log axis, with mean, p95 and
/// p99 marked and the normal-assumption p99 (mean + 2.326 sd) beside the empirical p99.
pub fn histogram(title: &str, data: &[f64], log: bool) -> Result<Option<String>, ReportError> {
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
    let marks: Vec<(String, f64, RGBColor, bool)> = [
        Some((format!("mean {}", num(mean)), mean, color(2), false)),
        Some((format!("p95 {}", num(p95)), p95, color(1), false)),
        Some((format!("p99 {}", num(p99)), p99, color(3), false)),
        normal.map(|x| (format!("p99 if normal {}", num(x)), x, color(4), true)),
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
    let label = |v: &f64| {
        if log {
            let x = 10f64.powf(*v);
            // Three significant digits.
            let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
            num(format!("{x:.digits$}").parse().unwrap_or(x))
        } else {
            num(*v)
        }
    };
    svg(title, (W, H), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&caption, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, 0.0..ymax)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc(if log { "ms (log scale)" } else { "ms" })
            .y_desc("requests")
            .x_labels(10)
            .x_label_formatter(&label)
            .draw()?;
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

/// Latency histograms (linear and log) of TTFT and E2E per serving point.
pub fn latency_histograms(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "latency-histograms",
        "Latency histograms",
        "Measured requests pooled over replicates. Solid lines: empirical mean, p95 and p99; \
         dashed: the p99 a normal distribution with the same mean and standard deviation \
         would have (mean + 2.326 sd). The gap between them is how much the normal assumption \
         misjudges the tail.",
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
            for log in [false, true] {
                let title = format!("{label} · {}", p.id);
                match histogram(&title, l.get(metric), log)? {
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
        let n = serve.len() as f64;
        let title = format!("{label} percentiles");
        let svg = svg(&title, (W, H), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(-0.5..n - 0.5, 0.0..y1.max(1e-9))?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .disable_x_mesh()
                .x_labels(serve.len().clamp(2, 12))
                .x_label_formatter(&|v| {
                    tick(*v)
                        .and_then(|i| labels.get(i).cloned())
                        .unwrap_or_default()
                })
                .y_desc("ms")
                .draw()?;
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

/// One series per replicate: a single rank's steps as reported, several ranks' folded into the
/// slowest rank's time per step (`rank: None`).
fn slowest_rank_per_replicate(steps: &[StepSeries]) -> Vec<StepSeries> {
    let mut reps: Vec<u32> = steps.iter().map(|s| s.replicate).collect();
    reps.sort_unstable();
    reps.dedup();
    reps.into_iter()
        .map(|k| {
            let of: Vec<&StepSeries> = steps.iter().filter(|s| s.replicate == k).collect();
            if of.len() == 1 {
                return of[0].clone();
            }
            let mut by_step: std::collections::BTreeMap<i64, (f64, f64)> = Default::default();
            for s in &of {
                for &(step, t) in &s.steps {
                    let e = by_step.entry(step.round() as i64).or_insert((step, t));
                    e.1 = e.1.max(t);
                }
            }
            StepSeries {
                replicate: k,
                rank: None,
                steps: by_step.into_values().collect(),
                warmup_steps: of.iter().map(|s| s.warmup_steps).max().unwrap_or(0),
            }
        })
        .collect()
}

/// Step time over steps per training point, the trimmed warm-up shaded.
pub fn step_times(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "step-time",
        "Step time over steps",
        "Every reported step of every replicate; with several ranks, the slowest rank's time \
         per step (it decides the step; each rank is in the per-rank plot). The shaded region \
         is the warm-up the analysis trimmed before computing step-time statistics.",
    );
    let pts: Vec<&PointReport> = r.points.iter().filter(|p| !p.steps.is_empty()).collect();
    if pts.is_empty() {
        sec.notes.push(
            "no point reported per-step times (metric protocol `step_time_s`): no step-time plot"
                .into(),
        );
    }
    for p in pts {
        let series = slowest_rank_per_replicate(&p.steps);
        let folded = p.steps.len() > series.len();
        if series.len() > 8 {
            sec.notes.push(format!(
                "{}: {} replicates; the first 8 are drawn",
                p.id,
                series.len()
            ));
        }
        let series: Vec<&StepSeries> = series.iter().take(8).collect();
        let all = || series.iter().flat_map(|s| s.steps.iter());
        let (x0, x1) = padded(
            all().map(|s| s.0).fold(f64::INFINITY, f64::min),
            all().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max),
            0.02,
        );
        let y1 = all().map(|s| s.1).fold(0.0, f64::max) * 1.15;
        let warm = series
            .iter()
            .filter(|s| s.warmup_steps > 0)
            .filter_map(|s| {
                s.steps
                    .get(s.warmup_steps.min(s.steps.len()) - 1)
                    .map(|x| x.0)
            })
            .fold(f64::NEG_INFINITY, f64::max);
        let title = format!("Step time · {}", p.id);
        let svg = svg(&title, (W, H), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d(x0..x1, 0.0..y1.max(1e-9))?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .x_desc("step")
                .y_desc("step time (s)")
                .y_label_formatter(&|v| num(*v))
                .draw()?;
            if warm.is_finite() {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (warm + 0.5, y1)],
                        GREY.mix(0.18).filled(),
                    )))?
                    .label("warm-up (trimmed)")
                    .legend(|(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 18, y + 5)], GREY.mix(0.3).filled())
                    });
            }
            for (i, s) in series.iter().enumerate() {
                let c = color(i);
                let name = match (s.rank, folded) {
                    (_, true) => format!("replicate {} (slowest rank)", s.replicate),
                    (Some(k), false) => format!("replicate {} rank {k}", s.replicate),
                    (None, false) => format!("replicate {}", s.replicate),
                };
                chart
                    .draw_series(LineSeries::new(s.steps.clone(), c.stroke_width(1)))?
                    .label(name)
                    .legend(legend_line(c));
            }
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(sec)
}

/// Scaling efficiency against world size.
pub fn scaling(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "scaling",
        "Scaling efficiency",
        "Efficiency = T(N) / (N/N0 · T(N0)) from the aggregate throughput of each world size; \
         1.0 (dashed) is linear scaling.",
    );
    let pts = crate::tables::scaling_points(r);
    if pts.is_empty() {
        sec.notes.push(
            "fewer than two world sizes with a throughput (tokens/s or samples/s): no scaling plot"
                .into(),
        );
        return Ok(sec);
    }
    let (x0, x1) = padded(f64::from(pts[0].0), f64::from(pts[pts.len() - 1].0), 0.08);
    let y1 = pts.iter().map(|p| p.2).fold(1.0, f64::max) * 1.15;
    let title = format!("Scaling efficiency ({})", pts[0].3);
    let svg = svg(&title, (W, H), |root| {
        let mut chart = xy_chart(root, &title, x0..x1, 0.0..y1, "world size", "efficiency")?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, 1.0), (x1, 1.0)],
                6,
                4,
                GREY.stroke_width(1),
            ))?
            .label("linear")
            .legend(legend_line(GREY));
        let line: Vec<(f64, f64)> = pts.iter().map(|p| (f64::from(p.0), p.2)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color(0).stroke_width(2)))?
            .label("measured")
            .legend(legend_line(color(0)));
        chart.draw_series(line.iter().map(|p| Circle::new(*p, 4, color(0).filled())))?;
        legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
        Ok(())
    })?;
    sec.figures.push(Figure { title, svg });
    Ok(sec)
}

/// The component layers measured as one figure per point (start-up times, data-loader
/// supply): a bar per point at the mean over replicates, its confidence interval as a whisker
/// and every replicate as a dot. `None` when the run has no such layer.
pub fn components(r: &RunReport) -> Result<Option<Section>, ReportError> {
    const FIGURES: &[(&str, &str)] = &[
        (id::LOADER_SAMPLES_PER_S, "Data loader supply"),
        (id::LOADER_FIRST_BATCH_S, "Data loader first batch"),
        (id::TIME_TO_READY_S, "Start-up: time to ready"),
    ];
    let mut sec = Section::new(
        "components",
        "Component layers",
        "One bar per point: the mean over replicates, the confidence interval as a whisker, each \
         replicate as a dot. Cold points started from an empty page cache, warm ones after a \
         discarded pass or start.",
    );
    for (metric, what) in FIGURES {
        let pts: Vec<(&PointReport, &crate::model::MetricStat)> = r
            .points
            .iter()
            .filter_map(|p| Some((p, p.metric(metric, "value")?)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let unit = pts[0].1.unit.clone();
        let top = pts
            .iter()
            .flat_map(|(_, m)| {
                let hi = m.ci.map_or(m.mean, |c| c.1);
                m.replicates.iter().map(|r| r.1).chain([hi, m.mean])
            })
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max)
            * 1.15;
        let labels: Vec<String> = pts
            .iter()
            .map(|(p, _)| {
                p.id.split_once('.')
                    .map_or(p.id.as_str(), |x| x.1)
                    .to_string()
            })
            .collect();
        let title = format!("{what} ({metric}, {unit})");
        let n = pts.len();
        let svg = svg(&title, (W, H), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top.max(f64::MIN_POSITIVE))?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .x_labels(n)
                .x_label_formatter(&|v| {
                    tick(*v)
                        .and_then(|i| labels.get(i).cloned())
                        .unwrap_or_default()
                })
                .y_desc(unit.as_str())
                .y_label_formatter(&|v| num(*v))
                .draw()?;
            for (i, (_, m)) in pts.iter().enumerate() {
                let x = i as f64;
                chart.draw_series([Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, m.mean)],
                    color(i).mix(0.6).filled(),
                )])?;
                if let Some((lo, hi)) = m.ci {
                    let w = 0.08;
                    chart.draw_series(
                        [
                            vec![(x, lo), (x, hi)],
                            vec![(x - w, lo), (x + w, lo)],
                            vec![(x - w, hi), (x + w, hi)],
                        ]
                        .into_iter()
                        .map(|l| PathElement::new(l, BLACK.stroke_width(1))),
                    )?;
                }
                chart.draw_series(
                    m.replicates
                        .iter()
                        .map(|(_, v)| Circle::new((x, *v), 3, BLACK.filled())),
                )?;
            }
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok((!sec.figures.is_empty()).then_some(sec))
}

/// Node-to-node consistency of a run on several nodes (`RunReport::nodes`): per metric, each
/// node's deviation from the fleet reference as a bar, the tolerance band dashed, flagged nodes
/// in red; the evidence of every flagged node as notes. `None` when the run has no check.
pub fn nodes(r: &RunReport) -> Result<Option<Section>, ReportError> {
    let Some(metrics) = r.nodes["metrics"].as_array() else {
        return Ok(None);
    };
    let mut sec = Section::new(
        "nodes",
        "Nodes",
        "Each node's figure against the fleet reference (median; the better of two), in percent; \
         the dashed lines are the tolerance band. Red: flagged (the node's whole interval is \
         outside the band). The slowest node sets the speed of every synchronised job on it.",
    );
    for (node, evidence) in r.nodes["flagged"].as_object().into_iter().flatten() {
        for e in evidence.as_array().into_iter().flatten() {
            sec.notes
                .push(format!("{node}: {}", e.as_str().unwrap_or_default()));
        }
    }
    for w in r.nodes["warnings"].as_array().into_iter().flatten() {
        sec.notes.push(w.as_str().unwrap_or_default().to_string());
    }
    for m in metrics.iter().take(8) {
        let metric = m["metric"].as_str().unwrap_or_default().to_string();
        let tol = m["tolerance_pct"].as_f64().unwrap_or(5.0);
        let cells: Vec<(String, f64, bool)> = m["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["node"].as_str().unwrap_or_default().to_string(),
                    c["deviation_pct"].as_f64().unwrap_or(0.0),
                    c["flagged"].as_bool().unwrap_or(false),
                )
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let span = cells.iter().map(|c| c.1.abs()).fold(tol, f64::max) * 1.2;
        let n = cells.len();
        let title = format!("{metric}: deviation from the fleet, %");
        let svg = svg(&title, (W, H), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(-0.5..(n as f64 - 0.5), -span..span)?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .x_labels(n)
                .x_label_formatter(&|v| {
                    tick(*v)
                        .and_then(|i| cells.get(i).map(|c| c.0.clone()))
                        .unwrap_or_default()
                })
                .y_desc("%")
                .draw()?;
            for y in [-tol, tol] {
                chart.draw_series(DashedLineSeries::new(
                    vec![(-0.5, y), (n as f64 - 0.5, y)],
                    6,
                    4,
                    GREY.stroke_width(1),
                ))?;
            }
            for (i, (_, d, flagged)) in cells.iter().enumerate() {
                let x = i as f64;
                let c = if *flagged {
                    RGBColor(214, 39, 40)
                } else {
                    color(0)
                };
                chart.draw_series([Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, *d)],
                    c.mix(0.7).filled(),
                )])?;
            }
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(Some(sec))
}

/// Quartiles and Tukey whiskers (1.5 IQR) of sorted data.
fn box_stats(s: &[f64]) -> (f64, f64, f64, f64, f64) {
    let (q1, m, q3) = (q(s, 0.25), q(s, 0.5), q(s, 0.75));
    let iqr = q3 - q1;
    let lo = s
        .iter()
        .copied()
        .find(|x| *x >= q1 - 1.5 * iqr)
        .unwrap_or(q1);
    let hi = s
        .iter()
        .rev()
        .copied()
        .find(|x| *x <= q3 + 1.5 * iqr)
        .unwrap_or(q3);
    (lo, q1, m, q3, hi)
}

/// Per-rank step-time box plots (warm-up excluded), for points with more than one rank.
pub fn rank_boxes(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "ranks",
        "Per-rank step time",
        "Box: quartiles; line: median; whiskers: 1.5 IQR (Tukey); warm-up steps excluded. The \
         slowest rank decides the step.",
    );
    let mut any = false;
    for p in &r.points {
        let mut ranks: Vec<u32> = p.steps.iter().filter_map(|s| s.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        if ranks.len() < 2 {
            continue;
        }
        any = true;
        let data: Vec<(u32, Vec<f64>)> = ranks
            .iter()
            .map(|k| {
                let v: Vec<f64> = p
                    .steps
                    .iter()
                    .filter(|s| s.rank == Some(*k))
                    .flat_map(|s| s.steps.iter().skip(s.warmup_steps).map(|x| x.1))
                    .collect();
                (*k, sorted(&v))
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        if data.is_empty() {
            sec.notes
                .push(format!("{}: no measured steps after warm-up", p.id));
            continue;
        }
        let y1 = data.iter().map(|d| d.1[d.1.len() - 1]).fold(0.0, f64::max) * 1.15;
        let n = data.len() as f64;
        let title = format!("Step time per rank · {}", p.id);
        let svg = svg(&title, (W, H), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d(-0.5..n - 0.5, 0.0..y1.max(1e-9))?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .disable_x_mesh()
                .x_labels(data.len().clamp(2, 16))
                .x_label_formatter(&|v| {
                    tick(*v)
                        .and_then(|i| data.get(i).map(|d| format!("rank {}", d.0)))
                        .unwrap_or_default()
                })
                .y_desc("step time (s)")
                .y_label_formatter(&|v| num(*v))
                .draw()?;
            for (i, (_, v)) in data.iter().enumerate() {
                let x = i as f64;
                let (lo, q1, m, q3, hi) = box_stats(v);
                let c = color(0);
                chart.draw_series([
                    Rectangle::new([(x - 0.25, q1), (x + 0.25, q3)], c.mix(0.35).filled()),
                    Rectangle::new([(x - 0.25, q1), (x + 0.25, q3)], c.stroke_width(1)),
                ])?;
                chart.draw_series([
                    PathElement::new(vec![(x - 0.25, m), (x + 0.25, m)], BLACK.stroke_width(2)),
                    PathElement::new(vec![(x, q3), (x, hi)], c.stroke_width(1)),
                    PathElement::new(vec![(x, q1), (x, lo)], c.stroke_width(1)),
                    PathElement::new(vec![(x - 0.1, hi), (x + 0.1, hi)], c.stroke_width(1)),
                    PathElement::new(vec![(x - 0.1, lo), (x + 0.1, lo)], c.stroke_width(1)),
                ])?;
            }
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    if !any {
        sec.notes
            .push("no point reported steps from more than one rank: no per-rank plot".into());
    }
    Ok(sec)
}

/// Telemetry over time: one plot per metric (clocks, temperature, utilisation, power,
/// memory), one line per device.
pub fn telemetry(r: &RunReport) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "telemetry",
        "Telemetry over time",
        "Sampled once a second for the whole run. A falling clock under load is throttling.",
    );
    if r.telemetry.is_empty() {
        sec.notes
            .push("no telemetry stored for this run: no telemetry plots".into());
        return Ok(sec);
    }
    let mut metrics: Vec<&str> = r.telemetry.iter().map(|t| t.metric.as_str()).collect();
    metrics.sort_unstable_by_key(|m| {
        let order = [
            "cpu_util_pct",
            "cpu_clock_mhz",
            "sm_clock_mhz",
            "temperature_c",
            "power_w",
            "util_pct",
            "memory_util_pct",
            "memory_used_bytes",
        ];
        (order.iter().position(|o| o == m).unwrap_or(order.len()), *m)
    });
    metrics.dedup();
    for metric in metrics {
        let mut devices: Vec<&str> = r
            .telemetry
            .iter()
            .filter(|t| t.metric == metric)
            .map(|t| t.device.as_str())
            .collect();
        devices.sort_unstable();
        devices.dedup();
        let lines: Vec<(&str, Vec<(f64, f64)>)> = devices
            .iter()
            .map(|d| {
                let mut v: Vec<(f64, f64)> = r
                    .telemetry
                    .iter()
                    .filter(|t| t.metric == metric && t.device == *d)
                    .map(|t| (t.elapsed_s, t.value))
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                (*d, v)
            })
            .collect();
        let all = || lines.iter().flat_map(|l| l.1.iter());
        let (x0, x1) = padded(
            all().map(|p| p.0).fold(f64::INFINITY, f64::min),
            all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
            0.01,
        );
        let (y0, y1) = padded(
            all().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0),
            all().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
            0.1,
        );
        let title = format!("Telemetry · {metric}");
        let svg = svg(&title, (W, 300), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, (FONT, 16))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(72)
                .build_cartesian_2d(x0..x1, y0.max(0.0)..y1)?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .x_desc("seconds since start")
                .y_desc(metric)
                .y_label_formatter(&|v| num(*v))
                .draw()?;
            for (i, (d, pts)) in lines.iter().enumerate() {
                let c = color(i);
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                    .label(*d)
                    .legend(legend_line(c));
            }
            legend(&mut chart, SeriesLabelPosition::LowerRight)?;
            Ok(())
        })?;
        sec.figures.push(Figure { title, svg });
    }
    Ok(sec)
}

fn verdict_color(v: Option<&str>) -> RGBColor {
    match v {
        Some("PASS") => RGBColor(44, 160, 44),
        Some("FAIL") => RGBColor(214, 39, 40),
        Some("WARN") | Some("INCONCLUSIVE") => RGBColor(230, 145, 0),
        _ => RGBColor(31, 119, 180),
    }
}

/// Per-metric ratio candidate/baseline with its CI against the tolerance band.
pub fn gate_ratios(g: &GateView) -> Result<Section, ReportError> {
    let mut sec = Section::new(
        "gate-plot",
        "Ratio to baseline with CI against the tolerance",
        "Each row: candidate / baseline (dot) with its bootstrap CI (bar). Green: within \
         tolerance; red: beyond it (a regression). A metric FAILs only when its whole CI is in \
         the red.",
    );
    let rows: Vec<&crate::gate::GateRow> = g.rows.iter().filter(|r| r.ratio.is_some()).collect();
    if rows.is_empty() {
        sec.notes
            .push("the result has no metric with a ratio: nothing to plot".into());
        return Ok(sec);
    }
    const MAX: usize = 60;
    if rows.len() > MAX {
        sec.notes.push(format!(
            "{} metrics; the first {MAX} are drawn (all are in the table)",
            rows.len()
        ));
    }
    let rows: Vec<_> = rows.into_iter().take(MAX).collect();
    let vals: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            [
                r.ratio,
                r.ci.map(|c| c.0),
                r.ci.map(|c| c.1),
                r.bound(),
                Some(1.0),
            ]
        })
        .flatten()
        .filter(|x| x.is_finite())
        .collect();
    let (x0, x1) = padded(
        vals.iter().copied().fold(f64::INFINITY, f64::min),
        vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        0.1,
    );
    let n = rows.len();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| {
            let point = r.point.rsplit('/').next().unwrap_or(&r.point);
            let s = format!("{point} · {}", r.label());
            if s.chars().count() > 44 {
                format!("{}…", s.chars().take(43).collect::<String>())
            } else {
                s
            }
        })
        .collect();
    let height = (90 + 26 * n as u32).max(200);
    let title = match &g.verdict {
        Some(v) => format!("Gate {v}: ratio to baseline"),
        None => "Comparison: ratio B/A".to_string(),
    };
    let svg = svg(&title, (W, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (FONT, 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(300)
            .build_cartesian_2d(x0..x1, -0.5..n as f64 - 0.5)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .disable_y_mesh()
            .y_labels(n.max(2))
            .y_label_formatter(&|v| {
                tick(*v)
                    .filter(|i| *i < n)
                    .map(|i| labels[n - 1 - i].clone())
                    .unwrap_or_default()
            })
            .x_desc("candidate / baseline")
            .x_label_formatter(&|v| format!("{v:.3}"))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            if let Some(b) = r.bound() {
                let (ok, bad) = if r.higher_is_better() {
                    ((b, x1), (x0, b))
                } else {
                    ((x0, b), (b, x1))
                };
                chart.draw_series([
                    Rectangle::new(
                        [(ok.0, y - 0.4), (ok.1, y + 0.4)],
                        RGBColor(44, 160, 44).mix(0.15).filled(),
                    ),
                    Rectangle::new(
                        [(bad.0, y - 0.4), (bad.1, y + 0.4)],
                        RGBColor(214, 39, 40).mix(0.15).filled(),
                    ),
                ])?;
            }
            let c = verdict_color(r.verdict.as_deref());
            if let Some((lo, hi)) = r.ci {
                chart.draw_series([
                    PathElement::new(vec![(lo, y), (hi, y)], c.stroke_width(3)),
                    PathElement::new(vec![(lo, y - 0.15), (lo, y + 0.15)], c.stroke_width(2)),
                    PathElement::new(vec![(hi, y - 0.15), (hi, y + 0.15)], c.stroke_width(2)),
                ])?;
            }
            if let Some(x) = r.ratio {
                chart.draw_series(std::iter::once(Circle::new((x, y), 5, c.filled())))?;
            }
        }
        chart.draw_series(DashedLineSeries::new(
            vec![(1.0, -0.5), (1.0, n as f64 - 0.5)],
            5,
            4,
            BLACK.stroke_width(1),
        ))?;
        Ok(())
    })?;
    sec.figures.push(Figure { title, svg });
    Ok(sec)
}

/// One series of a trend plot ([`trend`]): a value per run, oldest first.
#[derive(Debug, Clone, Default)]
pub struct TrendLine {
    /// Where each run sits on the time axis (seconds since the Unix epoch).
    pub x: Vec<f64>,
    /// Each run's value.
    pub y: Vec<f64>,
    /// Each run's confidence interval, when it has one.
    pub ci: Vec<Option<(f64, f64)>>,
    /// The baseline's value, drawn as a dashed horizontal line.
    pub baseline: Option<f64>,
}

/// A trend plot: the SVG, and the position (in the SVG's pixels) of each value.
pub type TrendSvg = (String, Vec<(i32, i32)>);

/// A metric over time: the runs' values joined by a line, their confidence intervals as a
/// shaded band and the baseline's value as a dashed line (no legend: the caller says so next
/// to the plot, where it covers no value). Returns the SVG and the position (in
/// the SVG's own pixels) of every value, so that the caller can draw a marker per run (a link,
/// a verdict colour) on top. `x_label` formats a time-axis tick. `None` without values.
pub fn trend(
    y_label: &str,
    line: &TrendLine,
    x_label: &dyn Fn(f64) -> String,
) -> Result<Option<TrendSvg>, ReportError> {
    let pts: Vec<(f64, f64)> = line
        .x
        .iter()
        .zip(&line.y)
        .map(|(x, y)| (*x, *y))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if pts.is_empty() {
        return Ok(None);
    }
    let fold = |it: &mut dyn Iterator<Item = f64>| {
        it.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
    };
    let (x0, x1) = fold(&mut pts.iter().map(|p| p.0));
    let (x0, x1) = padded(x0, x1, 0.03);
    let cis = line.ci.iter().flatten().flat_map(|(a, b)| [*a, *b]);
    let (y0, y1) = fold(
        &mut pts
            .iter()
            .map(|p| p.1)
            .chain(cis)
            .chain(line.baseline)
            .filter(|v| v.is_finite()),
    );
    let (y0, y1) = padded(y0, y1, 0.08);
    // The band: each value's CI (the value itself where it has none), along x and back.
    let lo_hi: Vec<(f64, f64, f64)> = line
        .x
        .iter()
        .zip(&line.y)
        .enumerate()
        .filter(|(_, (x, y))| x.is_finite() && y.is_finite())
        .map(|(i, (x, y))| {
            let (lo, hi) = line.ci.get(i).copied().flatten().unwrap_or((*y, *y));
            (*x, lo, hi)
        })
        .collect();
    let mut positions = Vec::new();
    let out = svg("trend", (W, H), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(6)
            .y_desc(y_label)
            .x_label_formatter(&|v| x_label(*v))
            .y_label_formatter(&|v| num(*v))
            .label_style((FONT, 12))
            .draw()?;
        let c = color(0);
        if line.ci.iter().any(Option::is_some) {
            let band: Vec<(f64, f64)> = lo_hi
                .iter()
                .map(|(x, _, hi)| (*x, *hi))
                .chain(lo_hi.iter().rev().map(|(x, lo, _)| (*x, *lo)))
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.18).filled())))?;
        }
        chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(1)))?;
        if let Some(b) = line.baseline.filter(|b| b.is_finite()) {
            chart.draw_series(DashedLineSeries::new(
                vec![(x0, b), (x1, b)],
                6,
                4,
                GREY.stroke_width(2),
            ))?;
        }
        positions = pts.iter().map(|p| chart.backend_coord(p)).collect();
        Ok(())
    })?;
    Ok(Some((out, positions)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_places_every_finite_value_inside_its_svg() {
        let line = TrendLine {
            x: vec![0.0, 3600.0, 7200.0, f64::NAN, 10800.0],
            y: vec![10.0, 11.0, 9.5, 12.0, 10.5],
            ci: vec![
                Some((9.0, 11.0)),
                None,
                Some((9.0, 10.0)),
                None,
                Some((10.0, 11.0)),
            ],
            baseline: Some(10.0),
        };
        let (svg, pos) = trend("ms", &line, &|x| format!("t{x}")).unwrap().unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(pos.len(), 4, "the NaN time is left out");
        assert!(
            pos.iter()
                .all(|(x, y)| (0..W as i32).contains(x) && (0..H as i32).contains(y))
        );
        // Later runs are further right; a higher value is higher up (smaller y).
        assert!(pos.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(pos[1].1 < pos[0].1 && pos[2].1 > pos[0].1);
        assert!(
            svg.lines().any(|l| l
                .trim()
                .strip_prefix('t')
                .is_some_and(|n| n.parse::<f64>().is_ok())),
            "the time axis uses the caller's labels"
        );
        assert!(
            trend("ms", &TrendLine::default(), &|_| String::new())
                .unwrap()
                .is_none()
        );
    }
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
            num(p.throughput),
            num(p.per_user),
            p.ttft.0.map(num).unwrap_or_else(|| "-".into()),
            p.ttft.1.map(num).unwrap_or_else(|| "-".into()),
        ]);
    }
    sec.table = Some((
        vec![
            "configuration".into(),
            "load".into(),
            format!("output tok/s {per}"),
            "tok/s per user".into(),
            "TTFT p50 ms".into(),
            "TTFT p99 ms".into(),
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
            rows.push(vec![
                p.id.clone(),
                (t + 1).to_string(),
                f(s[2], 0),
                f(s[0], 1),
                f(s[1], 1),
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
            "p50 TTFT ms",
            "p99 TTFT ms",
            "cached",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    ));
    Ok(Some(sec))
}

/// Where the step time goes, from each profiled e2e point: a stacked bar of the step's phases
/// and one of its categories (compute, communication, copies, data, idle), the top operators by
/// self time in a table, and how to open the raw trace.
pub fn profiles(r: &RunReport) -> Result<Option<Section>, ReportError> {
    let Some(map) = r.profiles.as_object().filter(|m| !m.is_empty()) else {
        return Ok(None);
    };
    let mut sec = Section::new(
        "profiles",
        "Where the step time goes (profiles)",
        "Each profiled point ran one extra replicate under a profiler (never part of the \
         statistics or the gate). Bars: seconds per profiled step in each phase the loop marked \
         and by kind of work. Open the raw traces stored under profile/<point>/ in the run \
         directory: a PyTorch `.pt.trace.json` in https://ui.perfetto.dev or chrome://tracing \
         (tb mode: `tensorboard --logdir` on the directory), py-spy's speedscope JSON in \
         https://www.speedscope.app, `perf report -i perf.data`, and Nsight Systems' `.nsys-rep` \
         in the Nsight Systems GUI.",
    );
    let mut rows = Vec::new();
    for (id, p) in map {
        let a = &p["analysis"];
        if a.is_null() {
            sec.notes.push(format!(
                "{id}: {}",
                p["error"]
                    .as_str()
                    .unwrap_or("the profile could not be read")
            ));
            continue;
        }
        let tool = a["tool"].as_str().unwrap_or("?");
        let bars: Vec<(&str, Vec<(String, f64)>)> = [("phases", "phases"), ("kinds", "categories")]
            .into_iter()
            .map(|(label, key)| {
                let v = a[key]
                    .as_array()
                    .map(|xs| {
                        xs.iter()
                            .filter_map(|x| {
                                Some((x["name"].as_str()?.to_string(), x["s_per_step"].as_f64()?))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (label, v)
            })
            .filter(|(_, v): &(&str, Vec<(String, f64)>)| !v.is_empty())
            .collect();
        if !bars.is_empty() {
            let total = bars
                .iter()
                .map(|(_, v)| v.iter().map(|x| x.1).sum::<f64>())
                .fold(0.0, f64::max)
                * 1.05
                + 1e-12;
            let overhead = p["overhead"]
                .as_f64()
                .map(|o| format!(" (profiled step ×{o:.2} of unprofiled)"))
                .unwrap_or_default();
            let title = format!("{id} · {tool} · time per step{overhead}");
            let svg = svg(&title, (W, 140 + 70 * bars.len() as u32), |root| {
                // Room on the right for the legend.
                let xmax = total * 1000.0 * 1.3;
                let mut chart = ChartBuilder::on(root)
                    .caption(&title, (FONT, 15))
                    .margin(12)
                    .x_label_area_size(36)
                    .y_label_area_size(10)
                    .build_cartesian_2d(0.0..xmax, 0.0..bars.len() as f64)?;
                chart
                    .configure_mesh()
                    .light_line_style(TRANSPARENT)
                    .disable_y_mesh()
                    .y_labels(0)
                    .x_desc("ms per step")
                    .draw()?;
                let mut names: Vec<String> = Vec::new();
                for (k, (label, parts)) in bars.iter().enumerate() {
                    // The first bar on top.
                    let row = (bars.len() - 1 - k) as f64;
                    chart.draw_series(std::iter::once(Text::new(
                        label.to_string(),
                        (0.0, row + 0.95),
                        (FONT, 12).into_font(),
                    )))?;
                    let mut x = 0.0;
                    for (name, s) in parts {
                        let (idx, first) = match names.iter().position(|n| n == name) {
                            Some(i) => (i, false),
                            None => {
                                names.push(name.clone());
                                (names.len() - 1, true)
                            }
                        };
                        // Time nothing accounts for is grey; the rest take the palette in order.
                        let c = match name.as_str() {
                            "idle" => GREY,
                            "unattributed" => RGBColor(190, 190, 190),
                            _ => {
                                let k = names[..idx]
                                    .iter()
                                    .filter(|n| !matches!(n.as_str(), "idle" | "unattributed"))
                                    .count();
                                COLORS[k % COLORS.len()]
                            }
                        };
                        let (x0, x1) = (x * 1000.0, (x + s) * 1000.0);
                        let y0 = row + 0.1;
                        let drawn = chart.draw_series(std::iter::once(Rectangle::new(
                            [(x0, y0), (x1, y0 + 0.6)],
                            c.filled(),
                        )))?;
                        if first {
                            drawn.label(name.clone()).legend(move |(lx, ly)| {
                                Rectangle::new([(lx, ly - 5), (lx + 12, ly + 5)], c.filled())
                            });
                        }
                        x += s;
                    }
                }
                legend(&mut chart, SeriesLabelPosition::UpperRight)?;
                Ok(())
            })?;
            sec.figures.push(Figure { title, svg });
        }
        for t in a["top"].as_array().into_iter().flatten().take(10) {
            rows.push(vec![
                id.clone(),
                tool.to_string(),
                t["name"].as_str().unwrap_or("").chars().take(80).collect(),
                format!("{:.4}", t["self_s"].as_f64().unwrap_or(0.0)),
                format!("{:.1} %", t["share"].as_f64().unwrap_or(0.0) * 100.0),
                t["calls"].as_u64().map_or("-".into(), |c| c.to_string()),
            ]);
        }
    }
    if !rows.is_empty() {
        sec.table = Some((
            [
                "point",
                "tool",
                "top by self time",
                "self s",
                "share",
                "calls",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
        ));
    }
    Ok(Some(sec))
}
