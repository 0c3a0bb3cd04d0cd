//! The gate's plot: each metric's ratio candidate/baseline against its tolerance band.

use super::*;
use crate::gate::GateView;

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
