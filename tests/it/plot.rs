//! `cprace sweep --plot`: the SVG parses and names every series, axis and the
//! recommended K in text elements; the PNG decodes, has the size and dpi
//! asked for, shows every series' colour and has text drawn with the built-in
//! font; bad sizes and places are usage errors before any work.

use std::path::Path;
use std::process::Output;

use crate::common;

use common::cli::{output as cprace, stderr};
use common::traces::generated;
use cprace::tools::plot;
use serde_json::Value;

fn json_rows(o: &Output) -> Vec<Value> {
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(o));
    match serde_json::from_slice::<Value>(&o.stdout).expect("JSON output") {
        Value::Array(a) => a,
        v => panic!("expected an array, got {v}"),
    }
}

fn bound(rows: &[Value], label: &str) -> u64 {
    rows.iter()
        .find(|r| r["row"] == "bound" && r["relation"] == label)
        .and_then(|r| r["racy_events"].as_u64())
        .unwrap_or_else(|| panic!("no {label} row"))
}

fn recommended(rows: &[Value]) -> String {
    let r = rows
        .iter()
        .find(|r| r["recommended"] == true)
        .expect("a recommended row");
    match r["window"].as_u64() {
        Some(k) => plot::count_label(k as f64),
        None => "none".into(),
    }
}

#[test]
fn svg_parses_and_names_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 1);
    // A file name that needs escaping ends up in the title.
    let odd = dir.path().join("r&d <1>.csv");
    std::fs::copy(&f, &odd).unwrap();
    let svg = dir.path().join("sweep.SVG");
    let o = cprace(&[
        "sweep",
        odd.to_str().unwrap(),
        "--windows",
        "100,500,1000,5000,none",
        "--format",
        "json",
        "--repeat",
        "2",
        "--plot-size",
        "800x500",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let rows = json_rows(&o);
    let text = std::fs::read_to_string(&svg).expect("SVG written");
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("800"));
    assert_eq!(root.attribute("height"), Some("500"));
    let texts: Vec<String> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    let has = |want: &str| texts.iter().any(|t| t == want);
    let starts = |want: &str| texts.iter().any(|t| t.starts_with(want));
    assert!(has("cprace sweep: r&d <1>.csv"), "{texts:?}");
    assert!(starts(plot::CP_SERIES), "{texts:?}");
    assert!(
        has(&format!(
            "{}: {}",
            plot::bound_series("hb"),
            plot::thousands(bound(&rows, "hb"))
        )),
        "{texts:?}"
    );
    assert!(
        has(&format!(
            "{}: {}",
            plot::bound_series("wcp"),
            plot::thousands(bound(&rows, "wcp"))
        )),
        "{texts:?}"
    );
    assert!(
        has(&format!(
            "{} (median of 2 runs, bars from min to max)",
            plot::TIME_SERIES
        )),
        "{texts:?}"
    );
    assert!(
        has(&format!(
            "{} = {}",
            plot::RECOMMENDED_LABEL,
            recommended(&rows)
        )),
        "{texts:?}"
    );
    for tick in ["100", "500", "1k", "5k", "none"] {
        assert!(has(tick), "x tick {tick}: {texts:?}");
    }
    assert!(has("window K (events, log scale)"), "{texts:?}");
    assert!(starts("racy events"), "{texts:?}");
    assert!(starts("CP time ("), "{texts:?}");
    // One CP marker per window (filled discs in CP's colour), plus the
    // legend's sample.
    let cp_fill = format!(
        "#{:02X}{:02X}{:02X}",
        plot::CP_COLOR.0,
        plot::CP_COLOR.1,
        plot::CP_COLOR.2
    );
    let discs = root
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("fill") == Some(cp_fill.as_str()))
        .count();
    assert_eq!(discs, 5 + 1);
    // Every coordinate lies on the canvas.
    for n in root.descendants().filter(|n| n.has_tag_name("circle")) {
        let cx: f64 = n.attribute("cx").unwrap().parse().unwrap();
        let cy: f64 = n.attribute("cy").unwrap().parse().unwrap();
        assert!((0.0..=800.0).contains(&cx) && (0.0..=500.0).contains(&cy));
    }
}

/// Pixels of `png` equal to `c`.
fn count_color(rgb: &[u8], c: plot::Rgb) -> usize {
    rgb.chunks_exact(3)
        .filter(|p| (p[0], p[1], p[2]) == c)
        .count()
}

fn decode(path: &Path) -> (png::OutputInfo, Option<png::PixelDimensions>, Vec<u8>) {
    let file = std::fs::File::open(path).expect("PNG written");
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = decoder.read_info().expect("a PNG header");
    let dims = reader.info().pixel_dims;
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("the PNG decodes");
    buf.truncate(info.buffer_size());
    (info, dims, buf)
}

#[test]
fn png_decodes_at_the_size_and_dpi_asked_with_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 3000, 2);
    let png_path = dir.path().join("sweep.png");
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "10,100,1000,none",
        "--plot-size",
        "640x400",
        "--plot-dpi",
        "192",
        "--plot",
        png_path.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let (info, dims, rgb) = decode(&png_path);
    assert_eq!((info.width, info.height), (1280, 800));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let dims = dims.expect("a pHYs chunk");
    assert_eq!(dims.unit, png::Unit::Meter);
    assert_eq!(dims.xppu, (192.0f64 / 0.0254).round() as u32);
    for (name, c) in [
        ("CP", plot::CP_COLOR),
        ("HB", plot::HB_COLOR),
        ("WCP", plot::WCP_COLOR),
        ("time", plot::TIME_COLOR),
        ("recommended K", plot::RECOMMENDED_COLOR),
    ] {
        assert!(count_color(&rgb, c) > 100, "{name}: too few pixels");
    }
    // The title is drawn: dark, anti-aliased glyph pixels in the top band.
    let band = &rgb[..1280 * 3 * 60];
    let ink = band
        .chunks_exact(3)
        .filter(|p| p.iter().all(|v| *v < 0x80))
        .count();
    let grey = band
        .chunks_exact(3)
        .filter(|p| p.iter().all(|v| (0x80..0xf0).contains(v)))
        .count();
    assert!(ink > 300, "title glyphs: {ink} dark pixels");
    assert!(grey > 100, "anti-aliased edges: {grey} grey pixels");
}

#[test]
fn png_has_the_default_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 500, 3);
    let png_path = dir.path().join("d.png");
    let o = cprace(&[
        "sweep",
        f.to_str().unwrap(),
        "--windows",
        "10,none",
        "--plot",
        png_path.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let (info, _, _) = decode(&png_path);
    assert_eq!((info.width, info.height), plot::DEFAULT_SIZE);
}

#[test]
fn bad_sizes_and_places_are_usage_errors_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let f = generated(dir.path(), 200, 1);
    let f = f.to_str().unwrap();
    let out = dir.path().join("p.png");
    let o = out.to_str().unwrap();
    let missing = dir.path().join("no/such/dir/p.svg");
    for args in [
        vec!["sweep", f, "--plot", o, "--plot-size", "big"],
        vec!["sweep", f, "--plot", o, "--plot-size", "100x100"],
        vec!["sweep", f, "--plot", o, "--plot-dpi", "0"],
        vec![
            "sweep",
            f,
            "--plot",
            o,
            "--plot-size",
            "8000x8000",
            "--plot-dpi",
            "600",
        ],
        vec!["sweep", f, "--repeat", "0"],
        vec!["sweep", f, "--plot", missing.to_str().unwrap()],
        // Checked before the trace is read: this one does not exist either.
        vec![
            "sweep",
            "/nonexistent/t.csv",
            "--plot",
            missing.to_str().unwrap(),
        ],
    ] {
        let r = cprace(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(r.stdout.is_empty(), "{args:?}");
        assert!(!stderr(&r).is_empty(), "{args:?}");
    }
    let r = cprace(&[
        "sweep",
        "/nonexistent/t.csv",
        "--plot",
        missing.to_str().unwrap(),
    ]);
    assert!(stderr(&r).contains("--plot"), "{}", stderr(&r));
    assert!(!out.exists());
}

#[test]
fn coinciding_bounds_stay_apart_and_none_follows_the_largest_k() {
    // On the CP paper's Figure 1 every row is 0: HB and WCP coincide.
    let t = cprace::trace::load(Path::new("data/figures/cp-fig1.csv"), None).unwrap();
    let s = cprace::tools::sweep::run(&t, &[Some(2), Some(5), None], &mut |_| {}).unwrap();
    let fig = plot::Figure::new(&s.series(), "fig1");
    let [hb, wcp, shb, syncp] = &fig.bounds[..] else {
        panic!("four bounds (hb, wcp, shb, syncp): {:?}", fig.bounds)
    };
    assert!(hb.name.starts_with("HB") && wcp.name.starts_with("WCP"));
    // All four coincide here; every pair differs in colour and dash.
    let all = [hb, wcp, shb, syncp];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_eq!(a.value, b.value);
            assert!(a.color != b.color && a.dash != b.dash, "{a:?} vs {b:?}");
        }
    }
    assert_eq!(hb.value, wcp.value);
    assert_ne!(hb.dash, wcp.dash);
    assert_ne!(hb.marker, wcp.marker);
    assert_ne!(hb.color, wcp.color);
    // Their markers fall at different places between the windows.
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!((a.phase - b.phase).abs() > 0.15, "{a:?} vs {b:?}");
        }
    }
    let xs: Vec<f64> = fig.cp.iter().map(|p| p.0).collect();
    assert_eq!(xs[0], 2f64.log10());
    assert_eq!(xs[1], 5f64.log10());
    assert!(xs[2] > xs[1] && fig.x_break.is_some_and(|b| xs[1] < b && b < xs[2]));
    let labels: Vec<&str> = fig.x.ticks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(labels, ["2", "5", "none"]);
    // The recommended row is marked where its point is.
    let rec = s.window_rows().position(|r| r.recommended).unwrap();
    assert_eq!(fig.recommended.as_ref().map(|r| r.0), Some(xs[rec]));
    let legend: Vec<String> = fig.legend().into_iter().map(|l| l.0).collect();
    assert!(legend.contains(&"HB (exact): 0".to_string()), "{legend:?}");
    assert!(legend.contains(&"WCP (exact): 0".to_string()), "{legend:?}");
}
