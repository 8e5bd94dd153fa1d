//! `cprace sweep --plot`: the sweep as a figure, drawn with plotters (its SVG
//! and bitmap backends; PNG encoded with the `png` crate).
//!
//! Two panels share the x axis, the window K on a log scale with `none` one
//! gap to the right of the largest K behind an axis break. The upper panel
//! counts racy events: CP per K (solid, circles), the exact HB and WCP rows as
//! horizontal lines with their own dash pattern and markers placed between
//! the windows, so two bounds that coincide both stay visible (the legend also
//! gives their values). Its y axis is logarithmic when the counts span two
//! decades or more; zeros then sit on a broken bottom labelled 0. The lower
//! panel is CP's time per K, the median of `--repeat` runs with min-max bars.
//! The recommended K is a dashed vertical line through both panels and a ring
//! around its point.
//!
//! Text is set in DejaVu Sans, compiled into the binary
//! (`assets/fonts/DejaVuSans.ttf`, Bitstream Vera licence), so a machine
//! without fonts renders the PNG the same; SVG viewers use their sans-serif.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result, anyhow, bail};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::relation::Relation;

/// An RGB colour.
pub type Rgb = (u8, u8, u8);

/// CP racy events.
pub const CP_COLOR: Rgb = (0x1f, 0x77, 0xb4);
/// CP time.
pub const TIME_COLOR: Rgb = (0xff, 0x7f, 0x0e);
/// The HB bound.
pub const HB_COLOR: Rgb = (0x2c, 0xa0, 0x2c);
/// The WCP bound.
pub const WCP_COLOR: Rgb = (0xd6, 0x27, 0x28);
/// The SHB bound.
pub(crate) const SHB_COLOR: Rgb = (0x8c, 0x56, 0x4b);
/// Any other bound row (syncp).
pub(crate) const OTHER_COLOR: Rgb = (0x94, 0x67, 0xbd);
/// The recommended-K marks.
pub const RECOMMENDED_COLOR: Rgb = (0x44, 0x44, 0x44);
const INK: Rgb = (0x22, 0x22, 0x22);
const GRID: Rgb = (0xdd, 0xdd, 0xdd);

/// Series names as the legend starts them.
pub const CP_SERIES: &str = "CP racy events";
/// The time series.
pub const TIME_SERIES: &str = "CP time";
/// The recommended window's legend entry starts so.
pub const RECOMMENDED_LABEL: &str = "recommended K";

/// The font every text is set in, registered with plotters as `sans-serif`.
pub(crate) const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Default width and height in CSS pixels (1/96 inch).
pub const DEFAULT_SIZE: (u32, u32) = (960, 720);
/// Default PNG resolution: one image pixel per CSS pixel.
pub(crate) const DEFAULT_DPI: u32 = 96;

/// The image formats `--plot` writes, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

impl PlotFormat {
    /// The format for `path`, or a usage error naming the accepted extensions
    /// (also when the directory it would go in does not exist, so a sweep
    /// never runs to have its figure refused at the end).
    pub fn from_path(path: &Path) -> Result<PlotFormat> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("svg") => PlotFormat::Svg,
            Some("png") => PlotFormat::Png,
            _ => bail!(crate::Error::Usage(format!(
                "--plot {}: unknown image type; expected a file name ending in .svg or .png",
                path.display()
            ))),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            bail!(crate::Error::Usage(format!(
                "--plot {}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
        Ok(format)
    }
}

/// Size and resolution of the figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotOptions {
    /// Width in CSS pixels (the SVG's width; the PNG's at 96 dpi).
    pub width: u32,
    /// Height in CSS pixels.
    pub height: u32,
    /// PNG resolution: the PNG has width·dpi/96 × height·dpi/96 pixels and
    /// records the dpi in its pHYs chunk. The SVG ignores it.
    pub dpi: u32,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: DEFAULT_SIZE.0,
            height: DEFAULT_SIZE.1,
            dpi: DEFAULT_DPI,
        }
    }
}

impl PlotOptions {
    /// Parse `--plot-size WIDTHxHEIGHT` (CSS pixels, 320..=8000 each).
    pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
        let bad = || {
            format!(
                "`{s}` is not a figure size; expected WIDTHxHEIGHT in pixels, each 320 to 8000, e.g. 960x720"
            )
        };
        let (w, h) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
        let w: u32 = w.trim().parse().map_err(|_| bad())?;
        let h: u32 = h.trim().parse().map_err(|_| bad())?;
        if !(320..=8000).contains(&w) || !(320..=8000).contains(&h) {
            return Err(bad());
        }
        Ok((w, h))
    }

    /// Parse `--plot-dpi` (48..=600).
    pub fn parse_dpi(s: &str) -> Result<u32, String> {
        match s.trim().parse::<u32>() {
            Ok(d) if (48..=600).contains(&d) => Ok(d),
            _ => Err(format!(
                "`{s}` is not a resolution; expected dots per inch from 48 to 600 (96: one pixel per CSS pixel)"
            )),
        }
    }

    /// Pixel size of the PNG.
    pub(crate) fn png_pixels(&self) -> (u32, u32) {
        let scale = |v: u32| ((u64::from(v) * u64::from(self.dpi) + 48) / 96).max(1) as u32;
        (scale(self.width), scale(self.height))
    }

    /// A usage error when the PNG would need more than 64 million pixels.
    pub fn check(&self, format: PlotFormat) -> Result<()> {
        let (w, h) = self.png_pixels();
        if format == PlotFormat::Png && u64::from(w) * u64::from(h) > 64_000_000 {
            bail!(crate::Error::Usage(format!(
                "--plot-size {}x{} at --plot-dpi {} makes a {w}x{h} PNG; at most 64 million pixels",
                self.width, self.height, self.dpi
            )));
        }
        Ok(())
    }
}

/// What the figure shows: windowed CP's racy events and time per window,
/// and the racy events of exact relations as bound lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// CP at each window K, ascending, `none` (None) last.
    pub windows: Vec<Point>,
    /// The bound lines: an exact relation and its racy events.
    pub bounds: Vec<(Relation, u64)>,
}

/// Windowed CP at one window K.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// K (None: `none`, exact CP).
    pub window: Option<u64>,
    /// Racy events.
    pub racy_events: u64,
    /// Seconds: the median of `seconds_runs`.
    pub seconds: f64,
    /// Seconds of each timed run (the bars go from the least to the most).
    pub seconds_runs: Vec<f64>,
    /// Whether this is the recommended window.
    pub recommended: bool,
}

/// Draw `series` and write it to `path` in `format`. The file is replaced
/// only once the whole image is rendered and written.
pub fn write(
    series: &Series,
    title: &str,
    path: &Path,
    format: PlotFormat,
    opts: &PlotOptions,
) -> Result<()> {
    opts.check(format)?;
    let bytes = match format {
        PlotFormat::Svg => render_svg(series, title, opts)?.into_bytes(),
        PlotFormat::Png => render_png(series, title, opts)?,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".cprace-tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The figure as an SVG document of `opts.width` × `opts.height` pixels.
pub(crate) fn render_svg(series: &Series, title: &str, opts: &PlotOptions) -> Result<String> {
    let fig = Figure::new(series, title);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (opts.width, opts.height)).into_drawing_area();
        fig.draw(&root, 1.0)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The figure as a PNG of [`PlotOptions::png_pixels`], its dpi recorded.
pub(crate) fn render_png(series: &Series, title: &str, opts: &PlotOptions) -> Result<Vec<u8>> {
    let fig = Figure::new(series, title);
    let (w, h) = opts.png_pixels();
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        fig.draw(&root, f64::from(w) / f64::from(opts.width))?;
        root.present().map_err(err)?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let ppm = (f64::from(opts.dpi) / 0.0254).round() as u32;
    enc.set_pixel_dims(Some(png::PixelDimensions {
        xppu: ppm,
        yppu: ppm,
        unit: png::Unit::Meter,
    }));
    let mut writer = enc.write_header().context("PNG encoder")?;
    writer.write_image_data(&rgb).context("PNG encoder")?;
    writer.finish().context("PNG encoder")?;
    Ok(out)
}

fn err(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow!("cannot draw the figure: {e:?}")
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font compiled in; failure is a build bug.
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            panic!("the built-in font does not parse");
        }
    });
}

/// `10`, `300`, `1k`, `30k`, `1M`, `12.5k`.
pub fn count_label(v: f64) -> String {
    for (div, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v.abs() >= div {
            return format!("{}{suffix}", trim_number(v / div, 2));
        }
    }
    trim_number(v, 2)
}

/// `v` with at most `decimals` decimals, trailing zeros removed.
fn trim_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A number with thousands separators: `23,765`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One axis: its range and labelled ticks in plot coordinates (log10 of the
/// value on a log axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Lowest coordinate shown.
    pub lo: f64,
    /// Highest coordinate shown.
    pub hi: f64,
    /// Ticks: coordinate and label.
    pub ticks: Vec<(f64, String)>,
    /// Logarithmic.
    pub log: bool,
    /// On a log axis with zeros: the coordinate zeros are drawn at.
    pub zero_at: Option<f64>,
}

impl Axis {
    /// A y axis for non-negative `values`: logarithmic when the positive ones
    /// span two decades or more, else linear from 0 with 1-2-5 steps.
    pub(crate) fn for_values(values: &[f64], label: fn(f64) -> String) -> Axis {
        Axis::build(values, label, false)
    }

    /// [`Axis::for_values`] for counts: linear steps are whole numbers.
    pub(crate) fn for_counts(values: &[f64]) -> Axis {
        Axis::build(values, count_label, true)
    }

    fn build(values: &[f64], label: fn(f64) -> String, integer: bool) -> Axis {
        let max = values.iter().copied().fold(0.0, f64::max);
        let min_pos = values
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if max > 0.0 && max / min_pos >= 100.0 {
            let lo_dec = min_pos.log10().floor();
            let top = max.log10();
            let hi = top + 0.12 * (top - lo_dec).max(1.0);
            let decades = (hi.floor() - lo_dec) as i32;
            let mut ticks = Vec::new();
            for d in 0..=decades {
                let c = lo_dec + f64::from(d);
                ticks.push((c, label(10f64.powf(c))));
                if decades <= 2 {
                    for m in [2.0f64, 5.0] {
                        let cm = c + m.log10();
                        if cm <= hi {
                            ticks.push((cm, label(m * 10f64.powf(c))));
                        }
                    }
                }
            }
            let zero_at = values.iter().any(|v| *v <= 0.0).then_some(lo_dec - 0.5);
            if let Some(z) = zero_at {
                ticks.insert(0, (z, "0".into()));
            }
            let lo = zero_at.unwrap_or(lo_dec) - 0.04 * (hi - lo_dec);
            Axis {
                lo,
                hi,
                ticks,
                log: true,
                zero_at,
            }
        } else {
            let (mut step, mut top) = nice_axis(max, 5.0);
            if integer && step < 1.0 {
                step = 1.0;
                top = max.ceil().max(1.0);
            }
            let n = (top / step).round() as i64;
            let ticks = (0..=n)
                .map(|i| {
                    let v = i as f64 * step;
                    (v, label(v))
                })
                .collect();
            Axis {
                lo: 0.0,
                hi: top * 1.04,
                ticks,
                log: false,
                zero_at: None,
            }
        }
    }

    /// The coordinate of `v`.
    pub fn map(&self, v: f64) -> f64 {
        if !self.log {
            v
        } else if v > 0.0 {
            v.log10()
        } else {
            self.zero_at.unwrap_or(self.lo)
        }
    }
}

/// A "nice" step (1, 2 or 5 times a power of ten) for about `n` intervals up
/// to `max`, and the axis top (a multiple of it).
fn nice_axis(max: f64, n: f64) -> (f64, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let raw = max / n;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag);
    let top = (max / step).ceil() * step;
    (step, top.max(step))
}

fn seconds_label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 1.0 {
        trim_number(v, 2)
    } else {
        // Enough decimals for the first two significant digits.
        let decimals = (-v.log10().floor()) as usize + 1;
        trim_number(v, decimals)
    }
}

/// How a series is stroked and marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Filled disc.
    Circle,
    /// Filled triangle.
    Triangle,
    /// Hollow square.
    Square,
    /// Filled square.
    FilledSquare,
}

/// A horizontal bound line (an exact relation without a window).
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// Legend text, e.g. `HB (exact): 10,740`.
    pub name: String,
    /// Racy events.
    pub value: u64,
    /// Colour.
    pub color: Rgb,
    /// Dash pattern in CSS pixels (on, off).
    pub dash: (f64, f64),
    /// Marker.
    pub marker: Marker,
    /// Where its markers go along the line, as a fraction of the gap between
    /// two windows (bounds get different ones, so equal lines stay apart).
    pub phase: f64,
}

/// The legend name of a bound row.
pub fn bound_series(label: &str) -> String {
    format!("{} (exact)", label.to_ascii_uppercase())
}

/// Everything the figure shows, in plot coordinates, before any drawing.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Title.
    pub title: String,
    /// The shared x axis (log10 K; `none` after a gap).
    pub x: Axis,
    /// Where the axis break sits, when `none` follows finite windows.
    pub x_break: Option<f64>,
    /// The racy-events axis.
    pub racy: Axis,
    /// The time axis.
    pub time: Axis,
    /// CP racy events per window: (x, count).
    pub cp: Vec<(f64, u64)>,
    /// CP time per window: (x, median, min, max) in [`Figure::time_unit`].
    pub times: Vec<(f64, f64, f64, f64)>,
    /// `s`, or `ms` when every run took under a second.
    pub time_unit: &'static str,
    /// How many runs each time is the median of.
    pub repeat: usize,
    /// The bound lines.
    pub bounds: Vec<Bound>,
    /// The recommended window: x and its label.
    pub recommended: Option<(f64, String)>,
}

fn x_of(r: &Point, none_x: f64) -> f64 {
    r.window.map_or(none_x, |k| (k as f64).log10())
}

impl Figure {
    /// Lay out `series`.
    pub fn new(series: &Series, title: &str) -> Figure {
        let rows: Vec<&Point> = series.windows.iter().collect();
        let finite: Vec<f64> = rows
            .iter()
            .filter_map(|r| r.window.map(|k| (k as f64).log10()))
            .collect();
        let max_k = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min_k = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let has_none = rows.iter().any(|r| r.window.is_none());
        // `none` sits one gap (0.8 decade) past the largest K.
        let none_x = if finite.is_empty() { 0.0 } else { max_k + 0.8 };
        let x_break = (has_none && !finite.is_empty()).then_some(max_k + 0.4);
        let (first, last) = match (finite.is_empty(), has_none) {
            (true, _) => (none_x, none_x),
            (false, true) => (min_k, none_x),
            (false, false) => (min_k, max_k),
        };
        let pad = ((last - first) * 0.06).max(0.35);
        // Tick labels, skipping ones that would crowd the previous one.
        let min_gap = (last - first + 2.0 * pad) / 14.0;
        let mut ticks: Vec<(f64, String)> = Vec::new();
        for r in &rows {
            let x = x_of(r, none_x);
            let label = r
                .window
                .map_or_else(|| "none".to_string(), |k| count_label(k as f64));
            let crowded = ticks.last().is_some_and(|(px, _)| x - px < min_gap);
            if crowded && r.window.is_none() {
                ticks.pop();
            } else if crowded {
                continue;
            }
            ticks.push((x, label));
        }
        let x = Axis {
            lo: first - pad,
            hi: last + pad,
            ticks,
            log: true,
            zero_at: None,
        };

        let bound_rows = &series.bounds;
        let mut counts: Vec<f64> = rows.iter().map(|r| r.racy_events as f64).collect();
        counts.extend(bound_rows.iter().map(|(_, n)| *n as f64));
        let racy = Axis::for_counts(&counts);

        let times: Vec<(f64, f64, f64, f64)> = rows
            .iter()
            .map(|r| {
                let (lo, hi) = r
                    .seconds_runs
                    .iter()
                    .fold((r.seconds, r.seconds), |(a, b), s| (a.min(*s), b.max(*s)));
                (x_of(r, none_x), r.seconds, lo, hi)
            })
            .collect();
        // Milliseconds when every run took under a second.
        let slowest = times.iter().map(|t| t.3).fold(0.0, f64::max);
        let (time_unit, factor) = if slowest < 1.0 {
            ("ms", 1e3)
        } else {
            ("s", 1.0)
        };
        let times: Vec<(f64, f64, f64, f64)> = times
            .into_iter()
            .map(|(x, m, lo, hi)| (x, m * factor, lo * factor, hi * factor))
            .collect();
        let tvals: Vec<f64> = times.iter().flat_map(|t| [t.1, t.3]).collect();
        let time = Axis::for_values(&tvals, seconds_label);
        let repeat = rows
            .iter()
            .map(|r| r.seconds_runs.len().max(1))
            .max()
            .unwrap_or(1);

        let bounds = bound_rows
            .iter()
            .enumerate()
            .map(|(i, (relation, racy_events))| {
                let (color, dash, marker) = match relation {
                    Relation::Hb => (HB_COLOR, (10.0, 5.0), Marker::Triangle),
                    Relation::Wcp => (WCP_COLOR, (3.0, 4.0), Marker::Square),
                    Relation::Shb => (SHB_COLOR, (1.5, 3.0), Marker::FilledSquare),
                    _ => (OTHER_COLOR, (12.0, 4.0), Marker::Circle),
                };
                Bound {
                    name: format!(
                        "{}: {}",
                        bound_series(relation.name()),
                        thousands(*racy_events)
                    ),
                    value: *racy_events,
                    color,
                    dash,
                    marker,
                    phase: (i as f64 + 1.0) / (bound_rows.len() as f64 + 1.0),
                }
            })
            .collect();
        let recommended = rows.iter().find(|r| r.recommended).map(|r| {
            let k = r
                .window
                .map_or_else(|| "none".to_string(), |k| count_label(k as f64));
            (x_of(r, none_x), format!("{RECOMMENDED_LABEL} = {k}"))
        });
        Figure {
            title: title.to_string(),
            x,
            x_break,
            racy,
            time,
            cp: rows
                .iter()
                .map(|r| (x_of(r, none_x), r.racy_events))
                .collect(),
            times,
            time_unit,
            repeat,
            bounds,
            recommended,
        }
    }

    /// The legend entries: (text, colour).
    pub fn legend(&self) -> Vec<(String, Rgb)> {
        let mut v = vec![(format!("{CP_SERIES} (window K)"), CP_COLOR)];
        v.extend(self.bounds.iter().map(|b| (b.name.clone(), b.color)));
        let runs = if self.repeat > 1 {
            format!("median of {} runs, bars from min to max", self.repeat)
        } else {
            "1 run".to_string()
        };
        v.push((format!("{TIME_SERIES} ({runs})"), TIME_COLOR));
        if let Some((_, label)) = &self.recommended {
            v.push((label.clone(), RECOMMENDED_COLOR));
        }
        v
    }

    /// Draw on `root`; `s` scales every length (pixels per CSS pixel).
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, s: f64) -> Result<()> {
        register_font();
        let px = |v: f64| (v * s).round() as i32;
        let font = |size: f64| ("sans-serif", size * s).into_font();
        let (w, h) = root.dim_in_pixel();
        root.fill(&WHITE).map_err(err)?;
        let ink = rgb(INK);

        // Title.
        root.draw(&Text::new(
            self.title.clone(),
            (w as i32 / 2, px(14.0)),
            font(20.0)
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;

        // Legend: rows of (sample, text) items under the title.
        let legend_top = px(46.0);
        let legend_rows = self.draw_legend(root, legend_top, s)?;
        let top = legend_top + legend_rows * px(22.0) + px(6.0);

        let body = root
            .clone()
            .shrink((0, top), (w, (h as i32 - top).max(1) as u32));
        let (upper, lower) = body.split_vertically((f64::from(body.dim_in_pixel().1) * 0.6) as u32);
        let y_area = px(76.0) as u32;
        let margin_right = px(24.0) as u32;

        let x_range = || Keyed::of(&self.x);
        let label_of = |ticks: &[(f64, String)], v: f64| {
            ticks
                .iter()
                .find(|t| (t.0 - v).abs() < 1e-9)
                .map_or_else(String::new, |t| t.1.clone())
        };
        let grid = rgb(GRID);

        // Upper panel: racy events.
        let mut chart = ChartBuilder::on(&upper)
            .margin_right(margin_right)
            .margin_left(px(14.0) as u32)
            .margin_top(px(20.0) as u32)
            .x_label_area_size(px(22.0) as u32)
            .y_label_area_size(y_area)
            .build_cartesian_2d(x_range(), Keyed::of(&self.racy))
            .map_err(err)?;
        let scale = if self.racy.log { " (log scale)" } else { "" };
        chart
            .configure_mesh()
            .bold_line_style(grid.stroke_width(px(1.0).max(1) as u32))
            .axis_style(ink.stroke_width(px(1.0).max(1) as u32))
            .x_label_formatter(&|v| label_of(&self.x.ticks, *v))
            .y_label_formatter(&|v| label_of(&self.racy.ticks, *v))
            .label_style(font(13.0).color(&ink))
            .axis_desc_style(font(14.0).color(&ink))
            .y_desc(format!("racy events{scale}"))
            .draw()
            .map_err(err)?;
        let to_px = |c: &(f64, f64)| chart.backend_coord(c);
        let upper_px: Vec<(i32, i32)> = self
            .cp
            .iter()
            .map(|(x, n)| to_px(&(*x, self.racy.map(*n as f64))))
            .collect();
        // The bounds first, so CP's line stays on top.
        let spacing = self.marker_spacing();
        for b in &self.bounds {
            let y = self.racy.map(b.value as f64);
            let (l, r) = (to_px(&(self.x.lo, y)), to_px(&(self.x.hi, y)));
            let style = rgb(b.color).stroke_width(px(2.0).max(1) as u32);
            for seg in dashes(l, r, b.dash.0 * s, b.dash.1 * s) {
                root.draw(&PathElement::new(seg, style)).map_err(err)?;
            }
            let mut mx = self.x.lo + spacing * b.phase;
            while mx < self.x.hi {
                marker(root, b.marker, to_px(&(mx, y)), 5.0 * s, b.color)?;
                mx += spacing;
            }
        }
        self.draw_break(root, &chart.plotting_area().get_pixel_range(), s)?;
        let cp_style = rgb(CP_COLOR).stroke_width(px(2.5).max(1) as u32);
        root.draw(&PathElement::new(upper_px.clone(), cp_style))
            .map_err(err)?;
        for p in &upper_px {
            marker(root, Marker::Circle, *p, 4.5 * s, CP_COLOR)?;
        }
        let upper_area = chart.plotting_area().get_pixel_range();
        let rec_px = self.recommended.as_ref().and_then(|(x, _)| {
            self.cp
                .iter()
                .position(|(cx, _)| cx == x)
                .map(|i| (*x, upper_px[i]))
        });

        // Lower panel: time.
        let mut chart = ChartBuilder::on(&lower)
            .margin_right(margin_right)
            .margin_left(px(14.0) as u32)
            .margin_top(px(10.0) as u32)
            .margin_bottom(px(6.0) as u32)
            .x_label_area_size(px(48.0) as u32)
            .y_label_area_size(y_area)
            .build_cartesian_2d(x_range(), Keyed::of(&self.time))
            .map_err(err)?;
        let tscale = if self.time.log { ", log scale" } else { "" };
        chart
            .configure_mesh()
            .bold_line_style(grid.stroke_width(px(1.0).max(1) as u32))
            .axis_style(ink.stroke_width(px(1.0).max(1) as u32))
            .x_label_formatter(&|v| label_of(&self.x.ticks, *v))
            .y_label_formatter(&|v| label_of(&self.time.ticks, *v))
            .label_style(font(13.0).color(&ink))
            .axis_desc_style(font(14.0).color(&ink))
            .x_desc("window K (events, log scale)")
            .y_desc(format!("CP time ({}{tscale})", self.time_unit))
            .draw()
            .map_err(err)?;
        let to_px = |c: &(f64, f64)| chart.backend_coord(c);
        let time_style = rgb(TIME_COLOR).stroke_width(px(2.0).max(1) as u32);
        let time_px: Vec<(i32, i32)> = self
            .times
            .iter()
            .map(|t| to_px(&(t.0, self.time.map(t.1))))
            .collect();
        if self.repeat > 1 {
            let bar = rgb(TIME_COLOR).stroke_width(px(1.0).max(1) as u32);
            for t in &self.times {
                let (lo, hi) = (
                    to_px(&(t.0, self.time.map(t.2))),
                    to_px(&(t.0, self.time.map(t.3))),
                );
                let cap = px(4.0);
                for seg in [
                    vec![lo, hi],
                    vec![(lo.0 - cap, lo.1), (lo.0 + cap, lo.1)],
                    vec![(hi.0 - cap, hi.1), (hi.0 + cap, hi.1)],
                ] {
                    root.draw(&PathElement::new(seg, bar)).map_err(err)?;
                }
            }
        }
        self.draw_break(root, &chart.plotting_area().get_pixel_range(), s)?;
        root.draw(&PathElement::new(time_px.clone(), time_style))
            .map_err(err)?;
        for p in &time_px {
            marker(root, Marker::FilledSquare, *p, 4.0 * s, TIME_COLOR)?;
        }

        // The recommended K: a dashed line through both panels, a ring, a label.
        if let (Some((x, label)), Some((_, ring))) = (&self.recommended, rec_px) {
            let lower_area = chart.plotting_area().get_pixel_range();
            let xp = to_px(&(*x, self.time.lo)).0;
            let style = rgb(RECOMMENDED_COLOR).stroke_width(px(1.5).max(1) as u32);
            for range in [&upper_area, &lower_area] {
                let (a, b) = ((xp, range.1.start), (xp, range.1.end));
                for seg in dashes(a, b, 5.0 * s, 4.0 * s) {
                    root.draw(&PathElement::new(seg, style)).map_err(err)?;
                }
            }
            root.draw(&Circle::new(
                ring,
                px(9.0),
                rgb(RECOMMENDED_COLOR).stroke_width(px(2.0).max(1) as u32),
            ))
            .map_err(err)?;
            // The label above the upper panel, centred on the line, kept
            // inside the panel's width.
            let (tw, _) = root
                .estimate_text_size(label, &font(13.0).into())
                .map_err(err)?;
            let half = tw as i32 / 2 + px(4.0);
            let tx = xp.clamp(
                upper_area.0.start + half,
                (upper_area.0.end - half).max(upper_area.0.start + half),
            );
            root.draw(&Text::new(
                label.clone(),
                (tx, upper_area.1.start - px(3.0)),
                font(13.0)
                    .color(&rgb(RECOMMENDED_COLOR))
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))
            .map_err(err)?;
        }
        Ok(())
    }

    /// The distance between two bound markers along x: the median gap
    /// between windows, so one marker falls between two windows.
    fn marker_spacing(&self) -> f64 {
        let mut gaps: Vec<f64> = self.cp.windows(2).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort_by(f64::total_cmp);
        gaps.get(gaps.len() / 2)
            .copied()
            .filter(|g| *g > 0.0)
            .unwrap_or((self.x.hi - self.x.lo) / 4.0)
    }

    /// Two slanted strokes on the x axis where `none` is split off.
    fn draw_break<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &(std::ops::Range<i32>, std::ops::Range<i32>),
        s: f64,
    ) -> Result<()> {
        let Some(bx) = self.x_break else {
            return Ok(());
        };
        let (xs, ys) = area;
        let span = self.x.hi - self.x.lo;
        let xp = xs.start + ((bx - self.x.lo) / span * f64::from(xs.end - xs.start)) as i32;
        let y = ys.end;
        let (d, hgt) = ((4.0 * s) as i32, (7.0 * s) as i32);
        root.draw(&Rectangle::new(
            [(xp - 2 * d, y - hgt), (xp + 2 * d, y + hgt)],
            WHITE.filled(),
        ))
        .map_err(err)?;
        let style = rgb(INK).stroke_width(((1.2 * s).round() as u32).max(1));
        for dx in [-d, d] {
            root.draw(&PathElement::new(
                vec![(xp + dx - d, y + hgt), (xp + dx + d, y - hgt)],
                style,
            ))
            .map_err(err)?;
        }
        Ok(())
    }

    /// Draw the legend from `top`; returns how many rows it took.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        top: i32,
        s: f64,
    ) -> Result<i32> {
        let px = |v: f64| (v * s).round() as i32;
        let style = ("sans-serif", 13.0 * s).into_font();
        let (w, _) = root.dim_in_pixel();
        let sample = px(34.0);
        let gap = px(22.0);
        let entries = self.legend();
        let widths: Vec<i32> = entries
            .iter()
            .map(|(t, _)| {
                root.estimate_text_size(t, &style.clone().into())
                    .map(|(tw, _)| sample + px(6.0) + tw as i32)
                    .map_err(err)
            })
            .collect::<Result<_>>()?;
        // Greedy rows, each centred.
        let avail = w as i32 - px(32.0);
        let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
        let mut used = 0;
        for (i, wd) in widths.iter().enumerate() {
            let row = rows.last_mut().expect("one row");
            if !row.is_empty() && used + gap + wd > avail {
                rows.push(vec![i]);
                used = *wd;
            } else {
                used += if row.is_empty() { *wd } else { gap + wd };
                row.push(i);
            }
        }
        for (r, row) in rows.iter().enumerate() {
            let total: i32 =
                row.iter().map(|&i| widths[i]).sum::<i32>() + gap * (row.len() as i32 - 1);
            let mut x = (w as i32 - total) / 2;
            let y = top + r as i32 * px(22.0) + px(8.0);
            for &i in row {
                let (text, _) = &entries[i];
                self.legend_sample(root, i, (x, y), sample, s)?;
                root.draw(&Text::new(
                    text.clone(),
                    (x + sample + px(6.0), y),
                    style
                        .clone()
                        .color(&rgb(INK))
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(err)?;
                x += widths[i] + gap;
            }
        }
        Ok(rows.len() as i32)
    }

    /// The line-and-marker sample of legend entry `i` at `(x, y)` (left, middle).
    fn legend_sample<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        i: usize,
        (x, y): (i32, i32),
        len: i32,
        s: f64,
    ) -> Result<()> {
        let px = |v: f64| (v * s).round() as i32;
        let mid = (x + len / 2, y);
        let n_bounds = self.bounds.len();
        if i == 0 {
            let st = rgb(CP_COLOR).stroke_width(px(2.5).max(1) as u32);
            root.draw(&PathElement::new(vec![(x, y), (x + len, y)], st))
                .map_err(err)?;
            marker(root, Marker::Circle, mid, 4.5 * s, CP_COLOR)
        } else if i <= n_bounds {
            let b = &self.bounds[i - 1];
            let st = rgb(b.color).stroke_width(px(2.0).max(1) as u32);
            for seg in dashes((x, y), (x + len, y), b.dash.0 * s, b.dash.1 * s) {
                root.draw(&PathElement::new(seg, st)).map_err(err)?;
            }
            marker(root, b.marker, mid, 5.0 * s, b.color)
        } else if i == n_bounds + 1 {
            let st = rgb(TIME_COLOR).stroke_width(px(2.0).max(1) as u32);
            root.draw(&PathElement::new(vec![(x, y), (x + len, y)], st))
                .map_err(err)?;
            marker(root, Marker::FilledSquare, mid, 4.0 * s, TIME_COLOR)
        } else {
            let st = rgb(RECOMMENDED_COLOR).stroke_width(px(2.0).max(1) as u32);
            root.draw(&Circle::new(mid, px(8.0), st)).map_err(err)
        }
    }
}

/// A linear coordinate whose ticks (and grid lines) are exactly the axis'
/// ticks; the labels come from the axis too.
#[derive(Clone)]
struct Keyed {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Keyed {
    fn of(a: &Axis) -> Keyed {
        Keyed {
            lo: a.lo,
            hi: a.hi,
            keys: a.ticks.iter().map(|t| t.0).collect(),
        }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Split the segment a-b into dashes `on` pixels long with `off` gaps.
fn dashes(a: (i32, i32), b: (i32, i32), on: f64, off: f64) -> Vec<Vec<(i32, i32)>> {
    let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
    let len = dx.hypot(dy);
    if len == 0.0 || on <= 0.0 {
        return vec![vec![a, b]];
    }
    let at = |t: f64| {
        (
            a.0 + (dx * t / len).round() as i32,
            a.1 + (dy * t / len).round() as i32,
        )
    };
    let mut out = Vec::new();
    let mut t = 0.0;
    while t < len {
        out.push(vec![at(t), at((t + on).min(len))]);
        t += on + off.max(1.0);
    }
    out
}

fn marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    kind: Marker,
    (x, y): (i32, i32),
    r: f64,
    color: Rgb,
) -> Result<()> {
    let c = rgb(color);
    let ri = r.round() as i32;
    match kind {
        Marker::Circle => root.draw(&Circle::new((x, y), ri, c.filled())),
        Marker::Triangle => {
            let h = (r * 1.2).round() as i32;
            root.draw(&Polygon::new(
                vec![(x, y - h), (x - h, y + h * 3 / 4), (x + h, y + h * 3 / 4)],
                c.filled(),
            ))
        }
        Marker::Square => {
            root.draw(&Rectangle::new(
                [(x - ri, y - ri), (x + ri, y + ri)],
                WHITE.filled(),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x - ri, y - ri), (x + ri, y + ri)],
                c.stroke_width(((r / 2.5).round() as u32).max(1)),
            ))
        }
        Marker::FilledSquare => root.draw(&Rectangle::new(
            [(x - ri, y - ri), (x + ri, y + ri)],
            c.filled(),
        )),
    }
    .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(count_label(10.0), "10");
        assert_eq!(count_label(1000.0), "1k");
        assert_eq!(count_label(12_500.0), "12.5k");
        assert_eq!(count_label(300_000.0), "300k");
        assert_eq!(count_label(2_000_000.0), "2M");
        assert_eq!(thousands(23_765), "23,765");
        assert_eq!(thousands(41), "41");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(seconds_label(0.05), "0.05");
        assert_eq!(seconds_label(2.5), "2.5");
    }

    #[test]
    fn axis_is_log_only_across_decades() {
        let a = Axis::for_values(&[41.0, 300_000.0, 1000.0], count_label);
        assert!(a.log);
        assert_eq!(a.ticks.first().map(|t| t.1.as_str()), Some("10"));
        assert!(a.ticks.iter().any(|t| t.1 == "100k"));
        assert!(a.lo < 41f64.log10() && a.hi > 300_000f64.log10());
        let b = Axis::for_values(&[2000.0, 23_000.0], count_label);
        assert!(!b.log);
        assert!(b.hi >= 23_000.0 && b.lo == 0.0);
        // Zeros on a log axis get their own tick below the first decade.
        let c = Axis::for_values(&[0.0, 5.0, 5000.0], count_label);
        assert!(c.log);
        assert_eq!(c.ticks[0].1, "0");
        assert_eq!(c.map(0.0), c.zero_at.unwrap());
        assert!(c.map(0.0) < c.map(5.0) && c.map(0.0) > c.lo);
    }

    #[test]
    fn dashes_cover_the_segment_with_gaps() {
        let d = dashes((0, 0), (100, 0), 10.0, 5.0);
        assert_eq!(d.len(), 7);
        assert_eq!(d[0], vec![(0, 0), (10, 0)]);
        assert_eq!(d[1], vec![(15, 0), (25, 0)]);
        assert_eq!(d.last().unwrap()[1], (100, 0));
    }

    #[test]
    fn sizes_parse_and_scale() {
        assert_eq!(PlotOptions::parse_size("800x600"), Ok((800, 600)));
        assert!(PlotOptions::parse_size("800").is_err());
        assert!(PlotOptions::parse_size("10x600").is_err());
        assert_eq!(PlotOptions::parse_dpi("192"), Ok(192));
        assert!(PlotOptions::parse_dpi("0").is_err());
        let o = PlotOptions {
            width: 800,
            height: 600,
            dpi: 192,
        };
        assert_eq!(o.png_pixels(), (1600, 1200));
    }
}
