//! Plots of a run as a whole and of runs over time: component layers, node-to-node
//! consistency, telemetry, and trends.

use super::*;
use crate::model::{PointReport, RunReport};
use yardstick_spec::metrics::id;

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
            let name = |v: &f64| category(&labels, *v);
            let y_fmt = |v: &f64| axis_label(*v, &unit);
            let mut chart = Axes::categories(&title, n, &name, 0.0..top.max(f64::MIN_POSITIVE))
                .desc("", unit.as_str())
                .y_fmt(&y_fmt)
                .areas(40, 64)
                .draw(root)?;
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
    let Some(report) = &r.nodes else {
        return Ok(None);
    };
    let mut sec = Section::new(
        "nodes",
        "Nodes",
        "Each node's figure against the fleet reference (median; the better of two), in percent; \
         the dashed lines are the tolerance band. Red: flagged (the node's whole interval is \
         outside the band). The slowest node sets the speed of every synchronised job on it.",
    );
    for (node, evidence) in &report.flagged {
        for e in evidence {
            sec.notes.push(format!("{node}: {e}"));
        }
    }
    sec.notes.extend(report.warnings.iter().cloned());
    for m in report.metrics.iter().take(8) {
        let metric = m.metric.clone();
        let tol = m.tolerance_pct;
        let cells: Vec<(String, f64, bool)> = m
            .nodes
            .iter()
            .map(|c| (c.node.clone(), c.deviation_pct, c.flagged))
            .collect();
        if cells.is_empty() {
            continue;
        }
        let span = cells.iter().map(|c| c.1.abs()).fold(tol, f64::max) * 1.2;
        let n = cells.len();
        let title = format!("{metric}: deviation from the fleet, %");
        let svg = svg(&title, (W, H), |root| {
            let names: Vec<String> = cells.iter().map(|c| c.0.clone()).collect();
            let name = |v: &f64| category(&names, *v);
            let mut chart = Axes::categories(&title, n, &name, -span..span)
                .desc("", "%")
                .draw(root)?;
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
        let unit = telemetry_unit(metric);
        let y_fmt = |v: &f64| axis_label(*v, unit);
        let svg = svg(&title, (W, 300), |root| {
            let mut chart = Axes::new(&title, x0..x1, y0.max(0.0)..y1)
                .desc("seconds since start", metric)
                .y_fmt(&y_fmt)
                .areas(36, 72)
                .draw(root)?;
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
        let x_fmt = |v: &f64| x_label(*v);
        let y_fmt = |v: &f64| num(*v);
        let mut axes = Axes::new("", x0..x1, y0..y1)
            .desc("", y_label)
            .y_fmt(&y_fmt)
            .areas(40, 64);
        axes.title = None;
        axes.x_fmt = Some(&x_fmt);
        axes.x_labels = Some(6);
        axes.label_size = Some(12);
        let mut chart = axes.draw(root)?;
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
