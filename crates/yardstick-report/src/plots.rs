//! The report's plots as inline SVG (plotters' SVG backend; text is SVG `<text>` in a generic
//! sans-serif family, so no font files are read or referenced). A plot whose data the run does
//! not have is left out with a one-line note; nothing is drawn from invented data.
//!
//! This module holds what every plot shares (sections, figures, the SVG canvas, axes and
//! legends); the plots themselves are by subject: `serving`, `training`, `run` (a run as a
//! whole and runs over time) and `gate`.

use plotters::prelude::*;

use crate::ReportError;
use crate::format::num;

mod gate;
mod run;
mod serving;
mod training;

pub use gate::gate_ratios;
pub use run::{TrendLine, components, nodes, telemetry, trend};
pub use serving::{
    FrontierPoint, capacity, frontier, frontier_points, histogram, latency_cdf, latency_histograms,
    percentiles, throughput_latency, turns,
};
pub use training::{profiles, rank_boxes, scaling, step_times};

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
