//! `cprace sweep --plot`: racy events and time against the window K.
//!
//! The chart is built once as a list of shapes ([`Scene`]) and then written
//! either as hand-written SVG or rasterised here and encoded as PNG (our own
//! minimal writer: fixed-Huffman deflate with run-length matches, CRC-32,
//! Adler-32), so there is no dependency and both files show the same drawing.
//!
//! Layout: x is log10(K), with `none` one gap to the right of the largest K
//! behind an axis break; the left axis counts racy events (CP per K as a line
//! with markers, the exact HB and WCP rows as dashed horizontal lines), the
//! right axis is CP's time per K.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::sweep::Sweep;

/// An RGB colour.
pub type Color = [u8; 3];

/// CP racy events.
pub const CP_COLOR: Color = [0x1f, 0x77, 0xb4];
/// CP time.
pub const TIME_COLOR: Color = [0xff, 0x7f, 0x0e];
/// The HB bound.
pub const HB_COLOR: Color = [0x2c, 0xa0, 0x2c];
/// The WCP bound.
pub const WCP_COLOR: Color = [0xd6, 0x27, 0x28];
/// Any other bound row.
pub const OTHER_COLOR: Color = [0x94, 0x67, 0xbd];
const INK: Color = [0x22, 0x22, 0x22];
const GRID: Color = [0xdd, 0xdd, 0xdd];
const WHITE: Color = [0xff, 0xff, 0xff];

/// Canvas size in pixels.
pub const WIDTH: u32 = 960;
/// Canvas height in pixels.
pub const HEIGHT: u32 = 600;

/// Where a text's x coordinate sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

/// One drawing primitive. Coordinates in pixels, y downwards; text y is the
/// baseline.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A filled and/or outlined rectangle.
    Rect {
        /// Left.
        x: f64,
        /// Top.
        y: f64,
        /// Width.
        w: f64,
        /// Height.
        h: f64,
        /// Fill colour.
        fill: Option<Color>,
        /// Outline colour (1 px).
        stroke: Option<Color>,
    },
    /// A polyline; `series` names a data series (None for axes and ticks).
    Line {
        /// Points.
        points: Vec<(f64, f64)>,
        /// Colour.
        color: Color,
        /// Stroke width.
        width: f64,
        /// Dashed (6 on, 4 off).
        dashed: bool,
        /// Series name, when this line is data.
        series: Option<String>,
    },
    /// A filled marker disc.
    Dot {
        /// Centre x.
        x: f64,
        /// Centre y.
        y: f64,
        /// Radius.
        r: f64,
        /// Colour.
        color: Color,
    },
    /// Text, optionally rotated 90° counter-clockwise (reads upwards).
    Text {
        /// Anchor x.
        x: f64,
        /// Baseline y.
        y: f64,
        /// The text.
        text: String,
        /// Font size in pixels (raster text scales the 5x7 font to it).
        size: f64,
        /// Anchor.
        anchor: Anchor,
        /// Rotated upwards.
        vertical: bool,
        /// Colour.
        color: Color,
    },
}

/// A drawing: shapes in painting order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scene {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Shapes, painted in order.
    pub shapes: Vec<Shape>,
}

/// The image formats `--plot` writes, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

impl PlotFormat {
    /// The format for `path`, or a usage error naming the accepted extensions.
    pub fn from_path(path: &Path) -> Result<PlotFormat> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(PlotFormat::Svg),
            Some("png") => Ok(PlotFormat::Png),
            _ => bail!(crate::UsageError(format!(
                "--plot {}: unknown image type; expected a file name ending in .svg or .png",
                path.display()
            ))),
        }
    }
}

/// Draw `sweep` and write it to `path` in `format`.
pub fn write(sweep: &Sweep, title: &str, path: &Path, format: PlotFormat) -> Result<()> {
    let scene = chart(sweep, title);
    let bytes = match format {
        PlotFormat::Svg => scene.to_svg().into_bytes(),
        PlotFormat::Png => scene.to_png(),
    };
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Series names as they appear in the legend (and in SVG `data-series`).
pub const CP_SERIES: &str = "CP racy events";
/// The time series.
pub const TIME_SERIES: &str = "CP time";

/// The legend name of a bound row.
pub fn bound_series(label: &str) -> String {
    format!("{} (exact)", label.to_ascii_uppercase())
}

/// The colour of a bound row's line.
pub fn bound_color(label: &str) -> Color {
    match label {
        "hb" => HB_COLOR,
        "wcp" => WCP_COLOR,
        _ => OTHER_COLOR,
    }
}

/// A "nice" step (1, 2 or 5 times a power of ten) for about `n` intervals up
/// to `max`, and the axis top (a multiple of it).
fn nice_axis(max: f64, n: f64, integer: bool) -> (f64, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let raw = max / n;
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    let top = (max / step).ceil() * step;
    (step, top.max(step))
}

/// `10`, `300`, `1k`, `30k`, `1M`.
pub fn k_label(k: u64) -> String {
    for (div, suffix) in [(1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")] {
        if k >= div && (k / div) * div == k {
            return format!("{}{suffix}", k / div);
        }
    }
    k.to_string()
}

fn tick_number(v: f64, step: f64) -> String {
    // Enough decimals to tell ticks apart.
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// Build the chart of `sweep`.
pub fn chart(sweep: &Sweep, title: &str) -> Scene {
    let (w, h) = (WIDTH as f64, HEIGHT as f64);
    let (left, right, top, bottom) = (100.0, w - 110.0, 60.0, h - 160.0);
    let mut s = Scene {
        width: WIDTH,
        height: HEIGHT,
        shapes: Vec::new(),
    };
    let text = |x: f64, y: f64, t: &str, size: f64, anchor: Anchor| Shape::Text {
        x,
        y,
        text: t.to_string(),
        size,
        anchor,
        vertical: false,
        color: INK,
    };
    let line = |points: Vec<(f64, f64)>, color: Color| Shape::Line {
        points,
        color,
        width: 1.0,
        dashed: false,
        series: None,
    };
    s.shapes.push(Shape::Rect {
        x: 0.0,
        y: 0.0,
        w,
        h,
        fill: Some(WHITE),
        stroke: None,
    });
    s.shapes
        .push(text(w / 2.0, 32.0, title, 16.0, Anchor::Middle));

    let rows: Vec<&crate::sweep::Row> = sweep.window_rows().collect();
    let bounds: Vec<&crate::sweep::Row> =
        sweep.rows.iter().filter(|r| !r.is_window_row()).collect();

    // x: log10 of the finite windows; `none` one gap right of the largest.
    let finite: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.window)
        .map(|k| (k as f64).log10())
        .collect();
    let has_none = rows.iter().any(|r| r.window.is_none());
    let (lo, hi) = match (
        finite.iter().cloned().reduce(f64::min),
        finite.iter().cloned().reduce(f64::max),
    ) {
        (Some(a), Some(b)) => (a, b),
        _ => (0.0, 0.0),
    };
    let span = (hi - lo).max(1.0);
    let none_at = hi + 0.3 * span;
    let (dlo, dhi) = if finite.is_empty() {
        (none_at - 1.0, none_at + 1.0)
    } else {
        (
            lo - 0.08 * span,
            if has_none { none_at } else { hi } + 0.08 * span,
        )
    };
    let px = |lx: f64| left + (lx - dlo) / (dhi - dlo) * (right - left);
    let xw = |wnd: Option<u64>| px(wnd.map_or(none_at, |k| (k as f64).log10()));

    // Left axis: racy events (all rows); right axis: CP time.
    let max_count = sweep
        .rows
        .iter()
        .map(|r| r.racy_events.max(r.hb_racy_events))
        .max()
        .unwrap_or(0) as f64;
    let (ystep, ytop) = nice_axis(max_count, 5.0, true);
    let py = |v: f64| bottom - v / ytop * (bottom - top);
    let max_secs = rows.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let (unit, scale) = if max_secs >= 1.0 {
        ("s", 1.0)
    } else {
        ("ms", 1e3)
    };
    let (tstep, ttop) = nice_axis(max_secs * scale, 5.0, false);
    let pt = |secs: f64| bottom - secs * scale / ttop * (bottom - top);

    // Grid and left ticks.
    let mut v = 0.0;
    while v <= ytop + ystep / 2.0 {
        let y = py(v);
        s.shapes.push(line(vec![(left, y), (right, y)], GRID));
        s.shapes.push(line(vec![(left - 5.0, y), (left, y)], INK));
        s.shapes.push(text(
            left - 8.0,
            y + 4.0,
            &tick_number(v, ystep),
            12.0,
            Anchor::End,
        ));
        v += ystep;
    }
    let mut v = 0.0;
    while v <= ttop + tstep / 2.0 {
        let y = bottom - v / ttop * (bottom - top);
        s.shapes.push(line(vec![(right, y), (right + 5.0, y)], INK));
        s.shapes.push(text(
            right + 8.0,
            y + 4.0,
            &tick_number(v, tstep),
            12.0,
            Anchor::Start,
        ));
        v += tstep;
    }

    // x ticks: decades labelled, 2..9 unlabelled; the windows themselves
    // labelled when fewer than two decades fall in range.
    let mut labelled: Vec<f64> = Vec::new();
    if !finite.is_empty() {
        let mut d = dlo.floor() as i32;
        while (d as f64) <= hi + 1e-9 {
            for m in 1..10 {
                let lx = d as f64 + (m as f64).log10();
                if lx < dlo || lx > hi + 0.08 * span {
                    continue;
                }
                let x = px(lx);
                let len = if m == 1 { 6.0 } else { 3.0 };
                s.shapes
                    .push(line(vec![(x, bottom), (x, bottom + len)], INK));
                if m == 1 && (0..=18).contains(&d) {
                    s.shapes.push(text(
                        x,
                        bottom + 20.0,
                        &k_label(10u64.pow(d as u32)),
                        12.0,
                        Anchor::Middle,
                    ));
                    labelled.push(x);
                }
            }
            d += 1;
        }
        // The swept windows themselves, where there is room.
        {
            for r in &rows {
                if let Some(k) = r.window {
                    let x = xw(Some(k));
                    if labelled.iter().all(|l| (l - x).abs() > 30.0) {
                        s.shapes
                            .push(line(vec![(x, bottom), (x, bottom + 6.0)], INK));
                        s.shapes
                            .push(text(x, bottom + 20.0, &k_label(k), 12.0, Anchor::Middle));
                        labelled.push(x);
                    }
                }
            }
        }
    }
    if has_none {
        let x = xw(None);
        s.shapes
            .push(line(vec![(x, bottom), (x, bottom + 6.0)], INK));
        s.shapes
            .push(text(x, bottom + 20.0, "none", 12.0, Anchor::Middle));
    }

    // Axes (the x axis broken between the largest K and none).
    s.shapes.push(line(vec![(left, top), (left, bottom)], INK));
    s.shapes
        .push(line(vec![(right, top), (right, bottom)], INK));
    if has_none && !finite.is_empty() {
        let brk = px((hi + none_at) / 2.0);
        s.shapes
            .push(line(vec![(left, bottom), (brk - 5.0, bottom)], INK));
        s.shapes
            .push(line(vec![(brk + 5.0, bottom), (right, bottom)], INK));
        for dx in [-5.0, 5.0] {
            s.shapes.push(line(
                vec![
                    (brk + dx - 3.0, bottom + 5.0),
                    (brk + dx + 3.0, bottom - 5.0),
                ],
                INK,
            ));
        }
    } else {
        s.shapes
            .push(line(vec![(left, bottom), (right, bottom)], INK));
    }
    s.shapes.push(text(
        (left + right) / 2.0,
        bottom + 44.0,
        "window K (log scale)",
        13.0,
        Anchor::Middle,
    ));
    s.shapes.push(Shape::Text {
        x: left - 80.0,
        y: (top + bottom) / 2.0,
        text: "racy events".into(),
        size: 13.0,
        anchor: Anchor::Middle,
        vertical: true,
        color: INK,
    });
    s.shapes.push(Shape::Text {
        x: right + 92.0,
        y: (top + bottom) / 2.0,
        text: format!("CP time ({unit})"),
        size: 13.0,
        anchor: Anchor::Middle,
        vertical: true,
        color: INK,
    });

    // Series: bounds first, then time, then racy events on top.
    let mut legend: Vec<(String, Color, bool)> = Vec::new();
    legend.push((CP_SERIES.to_string(), CP_COLOR, false));
    legend.push((TIME_SERIES.to_string(), TIME_COLOR, false));
    for b in &bounds {
        let name = bound_series(b.label);
        let color = bound_color(b.label);
        let y = py(b.racy_events as f64);
        s.shapes.push(Shape::Line {
            points: vec![(left, y), (right, y)],
            color,
            width: 2.0,
            dashed: true,
            series: Some(name.clone()),
        });
        legend.push((name, color, true));
    }
    let time_pts: Vec<(f64, f64)> = rows.iter().map(|r| (xw(r.window), pt(r.seconds))).collect();
    let cp_pts: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (xw(r.window), py(r.racy_events as f64)))
        .collect();
    for (name, color, pts) in [
        (TIME_SERIES, TIME_COLOR, time_pts),
        (CP_SERIES, CP_COLOR, cp_pts),
    ] {
        for &(x, y) in &pts {
            s.shapes.push(Shape::Dot {
                x,
                y,
                r: 4.0,
                color,
            });
        }
        s.shapes.push(Shape::Line {
            points: pts,
            color,
            width: 2.0,
            dashed: false,
            series: Some(name.to_string()),
        });
    }

    // Legend: one row under the axis label.
    let mut x = left;
    let y = h - 50.0;
    for (name, color, dashed) in legend {
        s.shapes.push(Shape::Line {
            points: vec![(x, y - 4.0), (x + 30.0, y - 4.0)],
            color,
            width: 3.0,
            dashed,
            series: None,
        });
        // The raster font's advance (6 px at scale 2) bounds the SVG text's too.
        let width = 12.0 * name.chars().count() as f64;
        s.shapes.push(text(x + 38.0, y, &name, 12.0, Anchor::Start));
        x += 38.0 + width + 30.0;
    }
    s
}

fn hex(c: Color) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot hold at all.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

impl Scene {
    /// The scene as an SVG document. Data lines are `<polyline>`s with a
    /// `data-series` attribute naming their series.
    pub fn to_svg(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#,
            w = self.width,
            h = self.height
        );
        for shape in &self.shapes {
            match shape {
                Shape::Rect {
                    x,
                    y,
                    w,
                    h,
                    fill,
                    stroke,
                } => {
                    let _ = writeln!(
                        o,
                        r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}" stroke="{}"/>"#,
                        fill.map_or("none".into(), hex),
                        stroke.map_or("none".into(), hex)
                    );
                }
                Shape::Line {
                    points,
                    color,
                    width,
                    dashed,
                    series,
                } => {
                    let pts: Vec<String> = points
                        .iter()
                        .map(|(x, y)| format!("{x:.1},{y:.1}"))
                        .collect();
                    let dash = if *dashed {
                        r#" stroke-dasharray="6 4""#
                    } else {
                        ""
                    };
                    let series = series.as_ref().map_or(String::new(), |s| {
                        format!(r#" data-series="{}""#, escape(s))
                    });
                    let _ = writeln!(
                        o,
                        r#"<polyline{series} points="{}" fill="none" stroke="{}" stroke-width="{width}"{dash}/>"#,
                        pts.join(" "),
                        hex(*color)
                    );
                }
                Shape::Dot { x, y, r, color } => {
                    let _ = writeln!(
                        o,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{}"/>"#,
                        hex(*color)
                    );
                }
                Shape::Text {
                    x,
                    y,
                    text,
                    size,
                    anchor,
                    vertical,
                    color,
                } => {
                    let anchor = match anchor {
                        Anchor::Start => "start",
                        Anchor::Middle => "middle",
                        Anchor::End => "end",
                    };
                    let rotate = if *vertical {
                        format!(r#" transform="rotate(-90 {x:.1} {y:.1})""#)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        o,
                        r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" fill="{}"{rotate}>{}</text>"#,
                        hex(*color),
                        escape(text)
                    );
                }
            }
        }
        o.push_str("</svg>\n");
        o
    }

    /// The scene rasterised (RGB, row-major).
    pub fn rasterize(&self) -> Canvas {
        let mut c = Canvas::new(self.width, self.height);
        for shape in &self.shapes {
            match shape {
                Shape::Rect {
                    x,
                    y,
                    w,
                    h,
                    fill,
                    stroke,
                } => {
                    if let Some(f) = fill {
                        c.fill_rect(*x, *y, *w, *h, *f);
                    }
                    if let Some(s) = stroke {
                        let p = [(*x, *y), (x + w, *y), (x + w, y + h), (*x, y + h), (*x, *y)];
                        c.polyline(&p, 1.0, false, *s);
                    }
                }
                Shape::Line {
                    points,
                    color,
                    width,
                    dashed,
                    ..
                } => c.polyline(points, *width, *dashed, *color),
                Shape::Dot { x, y, r, color } => c.disc(*x, *y, *r, *color),
                Shape::Text {
                    x,
                    y,
                    text,
                    size,
                    anchor,
                    vertical,
                    color,
                } => c.text(*x, *y, text, *size, *anchor, *vertical, *color),
            }
        }
        c
    }

    /// The scene as a PNG file.
    pub fn to_png(&self) -> Vec<u8> {
        let c = self.rasterize();
        encode_png(c.width, c.height, &c.pixels)
    }
}

/// An RGB raster.
pub struct Canvas {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// RGB bytes, row-major, top row first.
    pub pixels: Vec<u8>,
}

impl Canvas {
    /// A white canvas.
    pub fn new(width: u32, height: u32) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![0xff; width as usize * height as usize * 3],
        }
    }

    fn set(&mut self, x: i64, y: i64, c: Color) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            let i = (y as usize * self.width as usize + x as usize) * 3;
            self.pixels[i..i + 3].copy_from_slice(&c);
        }
    }

    /// The colour at (x, y).
    pub fn get(&self, x: u32, y: u32) -> Color {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, c: Color) {
        let (x0, y0) = (x.round() as i64, y.round() as i64);
        let (x1, y1) = ((x + w).round() as i64, (y + h).round() as i64);
        for yy in y0.max(0)..y1.min(self.height as i64) {
            for xx in x0.max(0)..x1.min(self.width as i64) {
                self.set(xx, yy, c);
            }
        }
    }

    fn disc(&mut self, cx: f64, cy: f64, r: f64, c: Color) {
        let (x0, x1) = ((cx - r).floor() as i64, (cx + r).ceil() as i64);
        let (y0, y1) = ((cy - r).floor() as i64, (cy + r).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                if dx * dx + dy * dy <= r * r {
                    self.set(x, y, c);
                }
            }
        }
    }

    /// Stroke a polyline `width` pixels wide; dashes run 6 on, 4 off along
    /// the whole line.
    fn polyline(&mut self, points: &[(f64, f64)], width: f64, dashed: bool, c: Color) {
        let half = ((width - 1.0) / 2.0).max(0.0);
        let (lo, hi) = (-(half.floor() as i64), half.ceil() as i64);
        let mut walked = 0.0f64;
        for seg in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (seg[0], seg[1]);
            let len = ((x1 - x0).powi(2) + (y1 - y0).powi(2)).sqrt();
            let steps = len.ceil().max(1.0) as usize;
            for i in 0..=steps {
                let t = i as f64 / steps as f64;
                if dashed && (walked + t * len) % 10.0 >= 6.0 {
                    continue;
                }
                let x = (x0 + t * (x1 - x0)).round() as i64;
                let y = (y0 + t * (y1 - y0)).round() as i64;
                for dy in lo..=hi {
                    for dx in lo..=hi {
                        self.set(x + dx, y + dy, c);
                    }
                }
            }
            walked += len;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        vertical: bool,
        c: Color,
    ) {
        let s = ((size / 7.0).round() as i64).max(1);
        let n = text.chars().count() as i64;
        let total = (n * 6 - 1).max(0) * s;
        let start = match anchor {
            Anchor::Start => 0,
            Anchor::Middle => -total / 2,
            Anchor::End => -total,
        };
        let (x, y) = (x.round() as i64, y.round() as i64);
        for (i, ch) in text.chars().enumerate() {
            let rows = glyph(ch);
            let drop = if DESCENDERS.contains(ch) { 2 * s } else { 0 };
            for (gy, row) in rows.iter().enumerate() {
                for gx in 0..5i64 {
                    if row & (0x10 >> gx) == 0 {
                        continue;
                    }
                    for sy in 0..s {
                        for sx in 0..s {
                            // u along the text, v from the glyph top (7s above the baseline).
                            let u = start + (i as i64 * 6 + gx) * s + sx;
                            let v = gy as i64 * s + sy - 7 * s + drop;
                            if vertical {
                                self.set(x + v, y - u, c);
                            } else {
                                self.set(x + u, y + v, c);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The 5x7 bitmap of `ch` (bit 4 is the left column); unknown characters are
/// drawn as a box.
fn glyph(ch: char) -> [u8; 7] {
    match FONT.iter().find(|(c, _)| *c == ch) {
        Some((_, rows)) => {
            let mut g = [0u8; 7];
            for (i, r) in rows.iter().enumerate() {
                g[i] = r
                    .bytes()
                    .fold(0u8, |acc, b| (acc << 1) | u8::from(b == b'#'));
            }
            g
        }
        None => [0x1f, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1f],
    }
}

/// Glyphs drawn two rows lower, so their last two rows hang below the baseline.
const DESCENDERS: &str = "gpqy";

/// A 5x7 font drawn for cprace: digits, letters and common punctuation.
const FONT: &[(char, [&str; 7])] = &[
    (
        ' ',
        [
            ".....", ".....", ".....", ".....", ".....", ".....", ".....",
        ],
    ),
    (
        '0',
        [
            ".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###.",
        ],
    ),
    (
        '1',
        [
            "..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###.",
        ],
    ),
    (
        '2',
        [
            ".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####",
        ],
    ),
    (
        '3',
        [
            "#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###.",
        ],
    ),
    (
        '4',
        [
            "...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#.",
        ],
    ),
    (
        '5',
        [
            "#####", "#....", "####.", "....#", "....#", "#...#", ".###.",
        ],
    ),
    (
        '6',
        [
            "..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###.",
        ],
    ),
    (
        '7',
        [
            "#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#...",
        ],
    ),
    (
        '8',
        [
            ".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###.",
        ],
    ),
    (
        '9',
        [
            ".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##..",
        ],
    ),
    (
        'A',
        [
            ".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#",
        ],
    ),
    (
        'B',
        [
            "####.", "#...#", "#...#", "####.", "#...#", "#...#", "####.",
        ],
    ),
    (
        'C',
        [
            ".###.", "#...#", "#....", "#....", "#....", "#...#", ".###.",
        ],
    ),
    (
        'D',
        [
            "###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###..",
        ],
    ),
    (
        'E',
        [
            "#####", "#....", "#....", "####.", "#....", "#....", "#####",
        ],
    ),
    (
        'F',
        [
            "#####", "#....", "#....", "####.", "#....", "#....", "#....",
        ],
    ),
    (
        'G',
        [
            ".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####",
        ],
    ),
    (
        'H',
        [
            "#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#",
        ],
    ),
    (
        'I',
        [
            ".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###.",
        ],
    ),
    (
        'J',
        [
            "..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##..",
        ],
    ),
    (
        'K',
        [
            "#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#",
        ],
    ),
    (
        'L',
        [
            "#....", "#....", "#....", "#....", "#....", "#....", "#####",
        ],
    ),
    (
        'M',
        [
            "#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#",
        ],
    ),
    (
        'N',
        [
            "#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#",
        ],
    ),
    (
        'O',
        [
            ".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###.",
        ],
    ),
    (
        'P',
        [
            "####.", "#...#", "#...#", "####.", "#....", "#....", "#....",
        ],
    ),
    (
        'Q',
        [
            ".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#",
        ],
    ),
    (
        'R',
        [
            "####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#",
        ],
    ),
    (
        'S',
        [
            ".####", "#....", "#....", ".###.", "....#", "....#", "####.",
        ],
    ),
    (
        'T',
        [
            "#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#..",
        ],
    ),
    (
        'U',
        [
            "#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###.",
        ],
    ),
    (
        'V',
        [
            "#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#..",
        ],
    ),
    (
        'W',
        [
            "#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#.",
        ],
    ),
    (
        'X',
        [
            "#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#",
        ],
    ),
    (
        'Y',
        [
            "#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#..",
        ],
    ),
    (
        'Z',
        [
            "#####", "....#", "...#.", "..#..", ".#...", "#....", "#####",
        ],
    ),
    (
        'a',
        [
            ".....", ".....", ".###.", "....#", ".####", "#...#", ".####",
        ],
    ),
    (
        'b',
        [
            "#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####.",
        ],
    ),
    (
        'c',
        [
            ".....", ".....", ".###.", "#....", "#....", "#...#", ".###.",
        ],
    ),
    (
        'd',
        [
            "....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####",
        ],
    ),
    (
        'e',
        [
            ".....", ".....", ".###.", "#...#", "#####", "#....", ".###.",
        ],
    ),
    (
        'f',
        [
            "..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#...",
        ],
    ),
    (
        'g',
        [
            ".####", "#...#", "#...#", "#...#", ".####", "....#", ".###.",
        ],
    ),
    (
        'h',
        [
            "#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#",
        ],
    ),
    (
        'i',
        [
            "..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###.",
        ],
    ),
    (
        'j',
        [
            "...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##..",
        ],
    ),
    (
        'k',
        [
            "#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#.",
        ],
    ),
    (
        'l',
        [
            ".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###.",
        ],
    ),
    (
        'm',
        [
            ".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#",
        ],
    ),
    (
        'n',
        [
            ".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#",
        ],
    ),
    (
        'o',
        [
            ".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###.",
        ],
    ),
    (
        'p',
        [
            "####.", "#...#", "#...#", "#...#", "####.", "#....", "#....",
        ],
    ),
    (
        'q',
        [
            ".####", "#...#", "#...#", "#...#", ".####", "....#", "....#",
        ],
    ),
    (
        'r',
        [
            ".....", ".....", "#.##.", "##..#", "#....", "#....", "#....",
        ],
    ),
    (
        's',
        [
            ".....", ".....", ".###.", "#....", ".###.", "....#", "####.",
        ],
    ),
    (
        't',
        [
            ".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##.",
        ],
    ),
    (
        'u',
        [
            ".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#",
        ],
    ),
    (
        'v',
        [
            ".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#..",
        ],
    ),
    (
        'w',
        [
            ".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#.",
        ],
    ),
    (
        'x',
        [
            ".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#",
        ],
    ),
    (
        'y',
        [
            "#...#", "#...#", "#...#", "#...#", ".####", "....#", ".###.",
        ],
    ),
    (
        'z',
        [
            ".....", ".....", "#####", "...#.", "..#..", ".#...", "#####",
        ],
    ),
    (
        '.',
        [
            ".....", ".....", ".....", ".....", ".....", ".##..", ".##..",
        ],
    ),
    (
        ',',
        [
            ".....", ".....", ".....", ".....", ".##..", "..#..", ".#...",
        ],
    ),
    (
        ':',
        [
            ".....", ".##..", ".##..", ".....", ".##..", ".##..", ".....",
        ],
    ),
    (
        ';',
        [
            ".....", ".##..", ".##..", ".....", ".##..", "..#..", ".#...",
        ],
    ),
    (
        '(',
        [
            "...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#.",
        ],
    ),
    (
        ')',
        [
            ".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#...",
        ],
    ),
    (
        '[',
        [
            ".###.", ".#...", ".#...", ".#...", ".#...", ".#...", ".###.",
        ],
    ),
    (
        ']',
        [
            ".###.", "...#.", "...#.", "...#.", "...#.", "...#.", ".###.",
        ],
    ),
    (
        '-',
        [
            ".....", ".....", ".....", "#####", ".....", ".....", ".....",
        ],
    ),
    (
        '+',
        [
            ".....", "..#..", "..#..", "#####", "..#..", "..#..", ".....",
        ],
    ),
    (
        '=',
        [
            ".....", ".....", "#####", ".....", "#####", ".....", ".....",
        ],
    ),
    (
        '/',
        [
            ".....", "....#", "...#.", "..#..", ".#...", "#....", ".....",
        ],
    ),
    (
        '\\',
        [
            ".....", "#....", ".#...", "..#..", "...#.", "....#", ".....",
        ],
    ),
    (
        '_',
        [
            ".....", ".....", ".....", ".....", ".....", ".....", "#####",
        ],
    ),
    (
        '%',
        [
            "##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##",
        ],
    ),
    (
        '<',
        [
            "...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#.",
        ],
    ),
    (
        '>',
        [
            ".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#...",
        ],
    ),
    (
        '\'',
        [
            "..#..", "..#..", ".#...", ".....", ".....", ".....", ".....",
        ],
    ),
    (
        '"',
        [
            ".#.#.", ".#.#.", ".....", ".....", ".....", ".....", ".....",
        ],
    ),
    (
        '!',
        [
            "..#..", "..#..", "..#..", "..#..", "..#..", ".....", "..#..",
        ],
    ),
    (
        '?',
        [
            ".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#..",
        ],
    ),
    (
        '*',
        [
            ".....", "..#..", "#.#.#", ".###.", "#.#.#", "..#..", ".....",
        ],
    ),
    (
        '#',
        [
            ".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#.",
        ],
    ),
    (
        '&',
        [
            ".##..", "#..#.", "#.#..", ".#...", "#.#.#", "#..#.", ".##.#",
        ],
    ),
    (
        '|',
        [
            "..#..", "..#..", "..#..", "..#..", "..#..", "..#..", "..#..",
        ],
    ),
];

/// CRC-32 (ISO-HDLC, as PNG chunks use) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, t) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *t = c;
    }
    let mut c = !0u32;
    for &b in data {
        c = table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Adler-32 of `data` (the zlib trailer).
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

/// Writes bits least-significant first, as deflate packs them.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= (value as u64) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code: its bits go most-significant first.
    fn code(&mut self, code: u32, len: u32) {
        let rev = code.reverse_bits() >> (32 - len);
        self.put(rev, len);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

const LEN_BASE: [u32; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u32; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u32; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The fixed-Huffman code of literal/length symbol `sym` (RFC 1951, 3.2.6).
fn fixed_code(bits: &mut Bits, sym: u32) {
    match sym {
        0..=143 => bits.code(0x30 + sym, 8),
        144..=255 => bits.code(0x190 + sym - 144, 9),
        256..=279 => bits.code(sym - 256, 7),
        _ => bits.code(0xc0 + sym - 280, 8),
    }
}

/// A zlib stream of `data`: one fixed-Huffman deflate block whose matches
/// are only at the distances `dists` (a raster repeats its previous pixel or
/// its previous row, so that is nearly all the compression there is to find).
pub fn zlib(data: &[u8], dists: &[usize]) -> Vec<u8> {
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = 01, fixed Huffman
    let mut p = 0;
    while p < data.len() {
        let mut best = (0usize, 0usize);
        for &d in dists {
            if d == 0 || d > p || d > 32768 {
                continue;
            }
            let max = (data.len() - p).min(258);
            let mut l = 0;
            while l < max && data[p + l] == data[p + l - d] {
                l += 1;
            }
            if l > best.0 {
                best = (l, d);
            }
        }
        if best.0 >= 3 {
            let (len, dist) = (best.0 as u32, best.1 as u32);
            let li = LEN_BASE.iter().rposition(|&b| b <= len).unwrap_or(0);
            fixed_code(&mut bits, 257 + li as u32);
            bits.put(len - LEN_BASE[li], LEN_EXTRA[li]);
            let di = DIST_BASE.iter().rposition(|&b| b <= dist).unwrap_or(0);
            bits.code(di as u32, 5);
            bits.put(dist - DIST_BASE[di], DIST_EXTRA[di]);
            p += best.0;
        } else {
            fixed_code(&mut bits, data[p] as u32);
            p += 1;
        }
    }
    fixed_code(&mut bits, 256);
    let mut out = bits.finish();
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A PNG file of an RGB raster (8 bits per channel, no filtering).
pub fn encode_png(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let stride = width as usize * 3;
    let mut raw = Vec::with_capacity((stride + 1) * height as usize);
    for row in rgb.chunks(stride.max(1)).take(height as usize) {
        raw.push(0); // filter type None
        raw.extend_from_slice(row);
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no filter/interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib(&raw, &[1, 3, stride + 1]));
    chunk(&mut out, b"IEND", &[]);
    out
}
