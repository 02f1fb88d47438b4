//! Horizontal bar charts, bars optionally stacked from several series, drawn with plotters'
//! primitives onto an SVG string and an RGB buffer encoded as PNG.
//!
//! ```text
//!  title
//!  ■ series 1  ■ series 2                 (legend, when there are several series)
//!        label 1 ███████▒▒▒▒ 120
//!        label 2 ████▒ 57
//!                |----|----|----|
//!                0   50   100  150        value label
//! ```

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{ReportError, Result};
use crate::font::{FAMILY, register};

/// Width of every chart, in pixels.
const WIDTH: u32 = 1000;
/// Height of one bar's row.
const ROW: i32 = 22;
/// Thickness of a bar.
const BAR: i32 = 15;
/// Room right of the longest bar for its value.
const VALUE_ROOM: i32 = 90;
/// The widest a category label may be before it is shortened.
const MAX_LABEL: u32 = 420;
/// Font sizes of the title and of every other text.
const TITLE_SIZE: f64 = 20.0;
const TEXT_SIZE: f64 = 13.0;

/// Tableau 10: distinguishable, also in grey scale print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// One bar: its label and one value per series, stacked left to right.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The category on the left.
    pub label: String,
    /// One value per series of the chart (missing ones count as 0).
    pub values: Vec<f64>,
}

impl Bar {
    /// A bar of `values`.
    pub fn new(label: impl Into<String>, values: Vec<f64>) -> Self {
        Self {
            label: label.into(),
            values,
        }
    }

    fn total(&self) -> f64 {
        self.values.iter().map(|v| v.max(0.0)).sum()
    }
}

/// A horizontal bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// The title above the chart.
    pub title: String,
    /// What the bars' length measures (below the axis).
    pub value_label: String,
    /// The names of the stacked series (a legend is drawn when there are several).
    pub series: Vec<String>,
    /// The bars, top to bottom.
    pub bars: Vec<Bar>,
}

impl BarChart {
    /// A chart with one series.
    pub fn new(title: impl Into<String>, value_label: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            value_label: value_label.into(),
            series: Vec::new(),
            bars: Vec::new(),
        }
    }

    /// Stacks these series in every bar.
    pub fn with_series(mut self, series: &[&str]) -> Self {
        self.series = series.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Adds the bars.
    pub fn with_bars(mut self, bars: impl IntoIterator<Item = Bar>) -> Self {
        self.bars.extend(bars);
        self
    }

    /// The chart as an SVG document.
    pub fn svg(&self, figure: &str) -> Result<String> {
        register()?;
        let layout = Layout::of(self);
        let mut text = String::new();
        {
            let root =
                SVGBackend::with_string(&mut text, (WIDTH, layout.height)).into_drawing_area();
            draw(self, &layout, &root).map_err(|e| chart_error(figure, e))?;
            root.present().map_err(|e| chart_error(figure, e))?;
        }
        Ok(text)
    }

    /// The chart as a PNG file's bytes (8-bit RGB).
    pub fn png(&self, figure: &str) -> Result<Vec<u8>> {
        register()?;
        let layout = Layout::of(self);
        let mut pixels = vec![255u8; WIDTH as usize * layout.height as usize * 3];
        {
            let root =
                BitMapBackend::with_buffer(&mut pixels, (WIDTH, layout.height)).into_drawing_area();
            draw(self, &layout, &root).map_err(|e| chart_error(figure, e))?;
            root.present().map_err(|e| chart_error(figure, e))?;
        }
        encode_png(&pixels, layout.height).map_err(|e| chart_error(figure, e))
    }
}

fn chart_error(figure: &str, error: impl std::fmt::Display) -> ReportError {
    ReportError::Chart {
        figure: figure.to_string(),
        reason: error.to_string(),
    }
}

fn encode_png(pixels: &[u8], height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, WIDTH, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(bytes)
}

/// Text of `size` in the chart font.
fn text_style(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&BLACK)
}

/// Width of `text` in pixels (an estimate of 7 px a character if the font cannot say).
fn text_width(text: &str, size: f64) -> u32 {
    (FAMILY, size)
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * 7, |(w, _)| w)
}

/// `label` shortened with "…" to at most [`MAX_LABEL`] pixels.
fn fit_label(label: &str) -> String {
    if text_width(label, TEXT_SIZE) <= MAX_LABEL {
        return label.to_string();
    }
    let mut chars: Vec<char> = label.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let short: String = chars.iter().collect::<String>() + "…";
        if text_width(&short, TEXT_SIZE) <= MAX_LABEL {
            return short;
        }
    }
    "…".into()
}

/// A value as text: whole numbers without decimals, others with at most two.
pub fn format_value(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The axis: a "nice" tick step (1, 2 or 5 × 10ⁿ) and the axis maximum, a multiple of it.
fn axis(max: f64) -> (f64, f64) {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude);
    (step, (max / step).ceil() * step)
}

/// Positions computed once for both backends.
#[derive(Debug)]
struct Layout {
    height: u32,
    labels: Vec<String>,
    /// Left end of the bars.
    left: i32,
    /// Right end of the axis.
    right: i32,
    /// Top of the first bar's row.
    top: i32,
    /// Each legend entry's position.
    legend: Vec<(i32, i32)>,
    step: f64,
    axis_max: f64,
}

impl Layout {
    fn of(chart: &BarChart) -> Self {
        let labels: Vec<String> = chart.bars.iter().map(|b| fit_label(&b.label)).collect();
        let widest = labels
            .iter()
            .map(|l| text_width(l, TEXT_SIZE))
            .max()
            .unwrap_or(0);
        let left = (widest + 24).max(80) as i32;
        let right = WIDTH as i32 - VALUE_ROOM;
        let legend = legend_positions(chart, left);
        let legend_bottom = legend.last().map_or(40, |(_, y)| y + 20);
        let top = legend_bottom + 8;
        let rows = chart.bars.len().max(1) as i32;
        let height = (top + rows * ROW + 56) as u32;
        let max = chart.bars.iter().map(Bar::total).fold(0.0, f64::max);
        let (step, axis_max) = axis(max);
        Self {
            height,
            labels,
            left,
            right,
            top,
            legend,
            step,
            axis_max,
        }
    }

    fn x(&self, value: f64) -> i32 {
        self.left + ((value / self.axis_max) * f64::from(self.right - self.left)).round() as i32
    }

    fn bottom(&self, chart: &BarChart) -> i32 {
        self.top + chart.bars.len().max(1) as i32 * ROW
    }
}

/// Where each legend entry goes (none for a chart of one series), wrapping at the right edge.
fn legend_positions(chart: &BarChart, left: i32) -> Vec<(i32, i32)> {
    if chart.series.len() < 2 {
        return Vec::new();
    }
    let (mut x, mut y) = (left, 44);
    let mut positions = Vec::new();
    for name in &chart.series {
        let width = 18 + text_width(name, TEXT_SIZE) as i32 + 20;
        if x + width > WIDTH as i32 - 10 && x > left {
            x = left;
            y += 20;
        }
        positions.push((x, y));
        x += width;
    }
    positions
}

type Drawn<DB> = std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    chart: &BarChart,
    layout: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Drawn<DB> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        chart.title.clone(),
        (16, 12),
        text_style(TITLE_SIZE),
    ))?;
    draw_legend(chart, layout, root)?;
    draw_axis(chart, layout, root)?;
    if chart.bars.is_empty() {
        let centre = Pos::new(HPos::Center, VPos::Center);
        return root.draw(&Text::new(
            "no data in the lake",
            ((layout.left + layout.right) / 2, layout.top + ROW / 2),
            text_style(TEXT_SIZE).pos(centre),
        ));
    }
    for (row, bar) in chart.bars.iter().enumerate() {
        draw_bar(bar, &layout.labels[row], row as i32, layout, root)?;
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    chart: &BarChart,
    layout: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Drawn<DB> {
    for (index, (name, (x, y))) in chart.series.iter().zip(&layout.legend).enumerate() {
        let colour = PALETTE[index % PALETTE.len()];
        root.draw(&Rectangle::new(
            [(*x, y + 2), (x + 12, y + 14)],
            colour.filled(),
        ))?;
        root.draw(&Text::new(
            name.clone(),
            (x + 18, y + 8),
            text_style(TEXT_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

fn draw_axis<DB: DrawingBackend>(
    chart: &BarChart,
    layout: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Drawn<DB> {
    let bottom = layout.bottom(chart);
    let grid = RGBColor(0xdd, 0xdd, 0xdd);
    let ticks = (layout.axis_max / layout.step).round() as i32;
    for tick in 0..=ticks {
        let value = f64::from(tick) * layout.step;
        let x = layout.x(value);
        root.draw(&PathElement::new(vec![(x, layout.top), (x, bottom)], grid))?;
        root.draw(&PathElement::new(vec![(x, bottom), (x, bottom + 4)], BLACK))?;
        root.draw(&Text::new(
            format_value(value),
            (x, bottom + 7),
            text_style(TEXT_SIZE - 1.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    root.draw(&PathElement::new(
        vec![(layout.left, bottom), (layout.right, bottom)],
        BLACK,
    ))?;
    root.draw(&Text::new(
        chart.value_label.clone(),
        ((layout.left + layout.right) / 2, bottom + 28),
        text_style(TEXT_SIZE).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
}

fn draw_bar<DB: DrawingBackend>(
    bar: &Bar,
    label: &str,
    row: i32,
    layout: &Layout,
    root: &DrawingArea<DB, Shift>,
) -> Drawn<DB> {
    let y0 = layout.top + row * ROW + (ROW - BAR) / 2;
    let centre = y0 + BAR / 2;
    root.draw(&Text::new(
        label.to_string(),
        (layout.left - 8, centre),
        text_style(TEXT_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
    ))?;
    let mut start = 0.0;
    for (index, value) in bar.values.iter().enumerate() {
        let end = start + value.max(0.0);
        let (x0, x1) = (layout.x(start), layout.x(end));
        if x1 > x0 {
            let colour = PALETTE[index % PALETTE.len()];
            root.draw(&Rectangle::new([(x0, y0), (x1, y0 + BAR)], colour.filled()))?;
        }
        start = end;
    }
    root.draw(&Text::new(
        format_value(bar.total()),
        (layout.x(start) + 5, centre),
        text_style(TEXT_SIZE - 1.0).pos(Pos::new(HPos::Left, VPos::Center)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> BarChart {
        BarChart::new("Questions per strategy", "questions")
            .with_series(&["positive", "negative"])
            .with_bars([
                Bar::new("finding", vec![30.0, 12.0]),
                Bar::new("region_abnormal", vec![5.0, 0.0]),
            ])
    }

    #[test]
    fn axis_steps_are_nice_and_cover_the_maximum() {
        assert_eq!(axis(42.0), (10.0, 50.0));
        assert_eq!(axis(12601.0), (5000.0, 15000.0));
        assert_eq!(axis(0.3), (0.1, 0.30000000000000004));
        assert_eq!(axis(0.0), (0.2, 1.0));
        assert_eq!(format_value(1500.0), "1500");
        assert_eq!(format_value(0.1668), "0.17");
        assert_eq!(format_value(2.5), "2.5");
    }

    #[test]
    fn svg_and_png_show_the_bars_and_their_text() {
        let svg = chart().svg("test").expect("svg");
        assert!(svg.starts_with("<svg"), "{svg}");
        for text in [
            "Questions per strategy",
            "region_abnormal",
            "positive",
            "42",
        ] {
            assert!(svg.contains(text), "{text} in {svg}");
        }
        let png = chart().png("test").expect("png");
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().expect("png header");
        let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut pixels).expect("png frame");
        assert_eq!(info.width, WIDTH);
        let dark = pixels
            .chunks(3)
            .filter(|p| p.iter().all(|c| *c < 60))
            .count();
        assert!(dark > 200, "text is drawn: {dark} dark pixels");
    }

    #[test]
    fn an_empty_chart_says_so_and_long_labels_are_shortened() {
        let svg = BarChart::new("Nothing", "n").svg("empty").expect("svg");
        assert!(svg.contains("no data in the lake"));
        let long = "x".repeat(400);
        assert!(fit_label(&long).ends_with('…'));
        assert!(text_width(&fit_label(&long), TEXT_SIZE) <= MAX_LABEL);
    }
}
