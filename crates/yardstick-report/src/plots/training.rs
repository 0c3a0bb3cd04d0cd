//! Training plots: step times, scaling efficiency, per-rank step-time boxes and where a
//! profiled step's time goes.

use super::*;
use crate::model::{PointReport, RunReport, StepSeries};

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
            let y_fmt = |v: &f64| num(*v);
            let mut chart = Axes::new(&title, x0..x1, 0.0..y1.max(1e-9))
                .desc("step", "step time (s)")
                .y_fmt(&y_fmt)
                .areas(40, 64)
                .draw(root)?;
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
        let title = format!("Step time per rank · {}", p.id);
        let svg = svg(&title, (W, H), |root| {
            let names: Vec<String> = data.iter().map(|d| format!("rank {}", d.0)).collect();
            let name = |v: &f64| category(&names, *v);
            let y_fmt = |v: &f64| num(*v);
            let mut chart = Axes::categories(&title, names.len(), &name, 0.0..y1.max(1e-9))
                .desc("", "step time (s)")
                .y_fmt(&y_fmt)
                .areas(40, 64)
                .draw(root)?;
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

/// Where the step time goes, from each profiled e2e point: a stacked bar of the step's phases
/// and one of its categories (compute, communication, copies, data, idle), the top operators by
/// self time in a table, and how to open the raw trace.
pub fn profiles(r: &RunReport) -> Result<Option<Section>, ReportError> {
    if r.profiles.is_empty() {
        return Ok(None);
    }
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
    for (id, p) in &r.profiles {
        let Some(a) = &p.analysis else {
            sec.notes.push(format!(
                "{id}: {}",
                p.error
                    .as_deref()
                    .unwrap_or("the profile could not be read")
            ));
            continue;
        };
        let tool = a.tool.as_str();
        let bars: Vec<(&str, Vec<(String, f64)>)> =
            [("phases", &a.phases), ("kinds", &a.categories)]
                .into_iter()
                .map(|(label, shares)| {
                    let v = shares
                        .iter()
                        .map(|x| (x.name.clone(), x.s_per_step))
                        .collect();
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
            let overhead = p
                .overhead
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
        for t in a.top.iter().take(10) {
            rows.push(vec![
                id.clone(),
                tool.to_string(),
                t.name.chars().take(80).collect(),
                format!("{:.4}", t.self_s),
                format!("{:.1} %", t.share * 100.0),
                t.calls.map_or("-".into(), |c| c.to_string()),
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
