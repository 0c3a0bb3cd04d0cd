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

/// The name of the category at axis value `v` ([`tick`]), or nothing between categories.
fn category(names: &[String], v: f64) -> String {
    tick(v)
        .and_then(|i| names.get(i).cloned())
        .unwrap_or_default()
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

/// A tick label formatter.
type Fmt<'f> = &'f dyn Fn(&f64) -> String;

/// What every chart of the report shares, described once: a caption, two linear axes with
/// their descriptions, no minor grid lines. Defaults: x labels as [`num`], y labels as
/// plotters', label areas of 40 and 56 pixels. A categorical x axis ([`Axes::categories`])
/// puts category `i` at `i`, labelled with its name and no vertical grid lines.
struct Axes<'f> {
    title: Option<&'f str>,
    caption_size: u32,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &'f str,
    y_desc: &'f str,
    x_fmt: Option<Fmt<'f>>,
    y_fmt: Option<Fmt<'f>>,
    x_labels: Option<usize>,
    x_area: u32,
    y_area: u32,
    x_mesh: bool,
    label_size: Option<u32>,
}

impl<'f> Axes<'f> {
    fn new(title: &'f str, x: std::ops::Range<f64>, y: std::ops::Range<f64>) -> Axes<'f> {
        Axes {
            title: Some(title),
            caption_size: 16,
            x,
            y,
            x_desc: "",
            y_desc: "",
            x_fmt: None,
            y_fmt: None,
            x_labels: None,
            x_area: 40,
            y_area: 56,
            x_mesh: true,
            label_size: None,
        }
    }

    /// `n` categories along x (at 0, 1, …, labelled by `label`), `y` up.
    fn categories(title: &'f str, n: usize, label: Fmt<'f>, y: std::ops::Range<f64>) -> Axes<'f> {
        let mut a = Axes::new(title, -0.5..(n as f64 - 0.5), y);
        a.x_fmt = Some(label);
        a.x_labels = Some(n.clamp(2, 16));
        a.x_mesh = false;
        a
    }

    fn desc(mut self, x: &'f str, y: &'f str) -> Self {
        (self.x_desc, self.y_desc) = (x, y);
        self
    }

    fn y_fmt(mut self, f: Fmt<'f>) -> Self {
        self.y_fmt = Some(f);
        self
    }

    fn areas(mut self, x: u32, y: u32) -> Self {
        (self.x_area, self.y_area) = (x, y);
        self
    }

    /// Draws the axes on `root` and returns the chart to draw series on.
    fn draw<'a, 'b>(
        &self,
        root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    ) -> Result<ChartContext<'a, SVGBackend<'b>, XY>, Box<dyn std::error::Error>> {
        let mut builder = ChartBuilder::on(root);
        if let Some(t) = self.title {
            builder.caption(t, (FONT, self.caption_size));
        }
        let mut chart = builder
            .margin(12)
            .x_label_area_size(self.x_area)
            .y_label_area_size(self.y_area)
            .build_cartesian_2d(self.x.clone(), self.y.clone())?;
        let default_x = |v: &f64| num(*v);
        let mut mesh = chart.configure_mesh();
        mesh.light_line_style(TRANSPARENT)
            .x_label_formatter(self.x_fmt.unwrap_or(&default_x));
        if !self.x_desc.is_empty() {
            mesh.x_desc(self.x_desc);
        }
        if !self.y_desc.is_empty() {
            mesh.y_desc(self.y_desc);
        }
        if let Some(f) = self.y_fmt {
            mesh.y_label_formatter(f);
        }
        if let Some(n) = self.x_labels {
            mesh.x_labels(n);
        }
        if !self.x_mesh {
            mesh.disable_x_mesh();
        }
        if let Some(size) = self.label_size {
            mesh.label_style((FONT, size));
        }
        mesh.draw()?;
        Ok(chart)
    }
}

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
    Axes::new(title, x, y).desc(x_desc, y_desc).draw(root)
}

/// An axis tick in human units ([`crate::format::human`]) when `unit` is one it scales (bytes,
/// bandwidths, rates, durations), so one axis never mixes `2.000e9` with `500000000`; zero is
/// `0`. Other units (and none) are plain numbers ([`num`]).
fn axis_label(v: f64, unit: &str) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if unit.is_empty() || unit == "count" || unit == "%" {
        return num(v);
    }
    crate::format::human(v, unit)
}

/// The unit of a telemetry metric from its name's suffix (`memory_used_bytes` is bytes).
fn telemetry_unit(metric: &str) -> &'static str {
    match metric.rsplit('_').next() {
        Some("bytes") => "bytes",
        Some("pct") => "%",
        _ => "",
    }
}

/// Where the labels of an x axis over `range` go when `label` formats them: the most of
/// `wanted` (then fewer) whose labels all differ, so a narrow log axis never reads
/// `241, 242, 242, 243`. `label(v, digits)` formats `v` to `digits` significant digits; more
/// digits are used only when no count of four or more ticks has distinct labels at fewer.
/// Returns the count of ticks and the digits.
fn distinct_ticks(
    range: std::ops::Range<f64>,
    wanted: usize,
    label: &dyn Fn(f64, usize) -> String,
) -> (usize, usize) {
    use plotters::coord::ranged1d::{BoldPoints, Ranged};
    let coord = plotters::coord::types::RangedCoordf64::from(range);
    let distinct = |n: usize, digits: usize| {
        let labels: Vec<String> = coord
            .key_points(BoldPoints(n))
            .into_iter()
            .map(|v| label(v, digits))
            .collect();
        let mut sorted = labels.clone();
        sorted.sort();
        sorted.dedup();
        labels.len() >= 2 && sorted.len() == labels.len()
    };
    for digits in 3..=6 {
        for n in (4..=wanted.max(4)).rev() {
            if distinct(n, digits) {
                return (n, digits);
            }
        }
    }
    for n in (2..4).rev() {
        if distinct(n, 3) {
            return (n, 3);
        }
    }
    (2, 6)
}

/// `x` to `digits` significant digits, as [`num`] writes it.
fn significant(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return num(x);
    }
    let d = (digits as i32 - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    num(format!("{x:.d$}").parse().unwrap_or(x))
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
