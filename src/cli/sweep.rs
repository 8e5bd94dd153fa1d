//! `cprace sweep`: its options, the sweep run with progress, printed, and
//! drawn.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;

use cprace::tools::plot;
use cprace::tools::sweep::{Progress, SweepFormat, Windows, run_repeated};
use cprace::trace::Format;

#[derive(clap::Args, Debug)]
/// Choose a window: run windowed CP once per K and tabulate the races
///
/// Loads the trace once, then runs CP with each window K of --windows and
/// prints one row per K (ascending, `none` last), then the bound rows.
/// Each row is `analyze --relation cp --window K`: K bounds CP's
/// reasoning and every pair is checked (a pair K or more apart races
/// exactly when HB leaves it unordered), so rows rise from exact HB
/// towards exact CP as K grows. Columns:
///   window          K, or `none` (exact CP); `hb`/`wcp` for the bounds
///   relation        relation and engine of the row
///   racy events     events with an earlier conflicting access that the
///                   relation leaves unordered
///   racy vars       distinct variables of those races
///   loc pairs       distinct (unordered) location pairs of the witnesses
///   HB racy         racy events of exact HB (always CP racy events too)
///   new vs HB       racy events of the row that HB misses: what CP's
///                   prediction adds
///   time            wall-clock time of the row's run
///   peak memory     most heap the run held at once, above the loaded trace
/// The bound rows are exact: `hb` is exact HB (the lower bound of every CP
/// row), `wcp` exact WCP (the upper bound of every CP row). CP racy events
/// never shrink as K grows.
///
/// Recommendation: the smallest K after which racy events stop growing
/// within the sweep, with the evidence, e.g.
///   recommended K = 1000: racy events 412 at K=1000, unchanged at 5000 and none
/// Text output prints it under the table and marks the row with `*`; JSON
/// and CSV set `recommended` true on that row and print the sentence on
/// standard error. Include `none` (or use auto) for the evidence to reach
/// exact CP.
///
/// --windows auto runs 10, 30, 100, 300, 1000, ... (steps of about √10)
/// while below the trace length, then none (a window at least the trace
/// length is the same as none).
///
/// --format json prints an array of row objects: row (`window` for a CP
/// row, `bound` for the hb/wcp rows), window (K, or null for none and for
/// the bound rows), relation, engine, racy_events, racy_variables,
/// location_pairs, hb_racy_events, new_vs_hb, seconds, peak_bytes (null
/// when not measured), recommended. --format csv has the same columns, one
/// row per line after a header (empty window for none and the bounds,
/// empty peak_bytes when not measured).
///
/// --plot FILE.svg or FILE.png draws two panels against K (log scale,
/// `none` at the right end): CP racy events with the exact HB and WCP
/// bounds (log scale when the counts span two decades) and the recommended
/// K marked; below, CP time (the median of --repeat N runs, bars from min
/// to max). --plot-size WxH (default 960x720) and --plot-dpi (PNG only;
/// 192 doubles the pixels) size the figure.
///
/// While stderr is a terminal, progress (current run, phase, events read)
/// is shown there after a second, unless --quiet. Exit codes: 0 when no CP
/// row has a race, 1 when some does, 2 on bad input or usage.
///
/// Examples:
///   cprace sweep trace.std --windows 100,500,1000,5000,none
///   cprace sweep trace.std --windows auto --plot sweep.svg
///   cprace sweep trace.std --repeat 5 --plot sweep.png --plot-dpi 192
///   cprace sweep trace.csv --windows 1k,10k,100k --format json > sweep.json
///   cprace gen --profile small -n 3000 --seed 1 | cprace sweep - --plot k.png
#[command(verbatim_doc_comment)]
pub(crate) struct SweepArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// Windows: `auto`, or a comma-separated list of event counts (k, M
    /// suffixes) and `none`, e.g. 100,500,1000,5000,none.
    #[arg(long, allow_hyphen_values = true, default_value = "auto", value_parser = Windows::parse)]
    windows: Windows,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SweepFormat::Text)]
    format: SweepFormat,
    /// Also draw the table into this image (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Size of the --plot figure in pixels (1/96 inch), WIDTHxHEIGHT.
    #[arg(long, allow_hyphen_values = true, value_name = "WxH", default_value = "960x720", value_parser = plot::PlotOptions::parse_size)]
    plot_size: (u32, u32),
    /// Resolution of a --plot PNG in dots per inch: 192 doubles the pixels
    /// of the same figure (the SVG is unaffected).
    #[arg(long, allow_hyphen_values = true, value_name = "DPI", default_value = "96", value_parser = plot::PlotOptions::parse_dpi)]
    plot_dpi: u32,
    /// Run every CP and bound row N times; its time is the median (the
    /// figure shows the min-max range).
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
}

impl SweepArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// `cprace sweep`: load, sweep, print, plot; returns the exit code.
pub(crate) fn run(args: SweepArgs, out: &mut dyn Write) -> Outcome {
    // A bad --plot name or size is a usage error before any work.
    let plot_opts = plot::PlotOptions {
        width: args.plot_size.0,
        height: args.plot_size.1,
        dpi: args.plot_dpi,
    };
    let plot_format = match &args.plot {
        Some(p) => {
            let f = plot::PlotFormat::from_path(p)?;
            plot_opts.check(f)?;
            Some(f)
        }
        None => None,
    };
    let t = cprace::trace::load(&args.trace, args.input_format)?;
    let windows = args.windows.resolve(t.len() as u64);
    let mut show = |p: &Progress| {
        cprace::progress::task(format!(
            "sweep run {} of {}: {}",
            p.done + 1,
            p.total,
            p.what
        ));
    };
    let sweep = run_repeated(&t, &windows, args.repeat as usize, &mut show)?;
    sweep.write(args.format, &mut &mut *out)?;
    if args.format != SweepFormat::Text
        && let Some(s) = &sweep.recommendation
    {
        cprace::progress::suspend(|| eprintln!("cprace: {s}"));
    }
    if let (Some(path), Some(fmt)) = (&args.plot, plot_format) {
        let name = if args.trace.as_os_str() == "-" {
            "standard input".to_string()
        } else {
            args.trace.file_name().map_or_else(
                || args.trace.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        cprace::progress::task("sweep: drawing the figure");
        plot::write(
            &sweep.series(),
            &format!("cprace sweep: {name}"),
            path,
            fmt,
            &plot_opts,
        )?;
    }
    Ok(sweep.exit_code())
}
