//! `cprace sweep`: windowed CP once per window K, with HB and WCP as bounds.
//!
//! The trace is loaded once; each row is `analyze --relation cp --window K`:
//! the window bounds CP's reasoning (rule (w)) and every pair is checked, so
//! the rows rise from exact HB towards exact CP as K grows (HB races ⊆
//! windowed-CP races ⊆ exact-CP races). Every row carries exact HB for
//! comparison: `new_vs_hb` counts the row's racy events HB misses. The bound
//! rows (`hb`, `wcp`) are the exact relations: exact HB the lower bound of
//! every CP row, WCP the upper bound. The recommended window is the smallest
//! K after which CP's racy events stop growing within the sweep.

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};

use crate::Result;
use crate::race::{self, Options};
use crate::relation::{Engine, Relation};
use crate::report::Report;
use crate::trace::{EventId, Trace};

/// The bound rows, `(label, relation)`, each run once without a window and
/// listed after the CP rows. The label is the row's `window` in the output.
pub fn bounds() -> Vec<(&'static str, Relation)> {
    vec![
        ("hb", Relation::Hb),
        ("wcp", Relation::Wcp),
        ("shb", Relation::Shb),
        ("syncp", Relation::Syncp),
    ]
}

/// Which windows to sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Windows {
    /// A geometric series up to the trace length, then none ([`auto_windows`]).
    Auto,
    /// These windows (None is `none`), in any order.
    List(Vec<Option<u64>>),
}

impl Windows {
    /// Parse `--windows`: `auto`, or a comma-separated list of positive event
    /// counts (suffixes k, M, G) and `none`.
    pub fn parse(s: &str) -> Result<Windows, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Windows::Auto);
        }
        let mut list = Vec::new();
        for part in s.split(',') {
            let p = part.trim();
            if p.eq_ignore_ascii_case("none") {
                list.push(None);
                continue;
            }
            match parse_k(p) {
                Some(k) if k > 0 => list.push(Some(k)),
                _ => {
                    return Err(format!(
                        "`{p}` is not a window; expected `auto`, or a comma-separated list of `none` and whole numbers of events from 1 to {} (k, M, G suffixes), e.g. 100,500,1k,none",
                        u64::MAX
                    ));
                }
            }
        }
        Ok(Windows::List(list))
    }

    /// The windows to run on a trace of `events` events: ascending, `none`
    /// last, without duplicates.
    pub fn resolve(&self, events: u64) -> Vec<Option<u64>> {
        match self {
            Windows::Auto => auto_windows(events),
            Windows::List(l) => {
                let mut v = l.clone();
                // None sorts first in Option's order; put it last instead.
                v.sort_by_key(|w| w.map_or((1, 0), |k| (0, k)));
                v.dedup();
                v
            }
        }
    }
}

fn parse_k(s: &str) -> Option<u64> {
    let t = s.replace('_', "");
    let (num, mul) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1_000),
        'm' | 'M' => (&t[..t.len() - 1], 1_000_000),
        'g' | 'G' => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// `--windows auto`: 10, 30, 100, 300, 1000, ... (steps of about √10, rounded
/// to 1 and 3 times a power of ten) while below the trace length, then none.
/// A window of at least the trace length pairs every two events, which is
/// exactly `none`, so the series stops below it.
pub fn auto_windows(events: u64) -> Vec<Option<u64>> {
    let mut v = Vec::new();
    let mut decade: u64 = 10;
    'outer: loop {
        for m in [1, 3] {
            match decade.checked_mul(m) {
                Some(k) if k < events => v.push(Some(k)),
                _ => break 'outer,
            }
        }
        match decade.checked_mul(10) {
            Some(d) => decade = d,
            None => break,
        }
    }
    v.push(None);
    v
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `cp` for the window rows; the bound's label (`hb`, `wcp`) otherwise.
    pub label: &'static str,
    /// Relation computed (`cp`, `hb`, `wcp`).
    pub relation: Relation,
    /// Engine that computed it.
    pub engine: Engine,
    /// The window the relation ran with (None: whole trace).
    pub window: Option<u64>,
    /// Number of racy events.
    pub racy_events: u64,
    /// Number of distinct racy variables.
    pub racy_variables: u64,
    /// Number of distinct (unordered) location pairs of the witnesses.
    pub location_pairs: u64,
    /// Racy events of exact HB.
    pub hb_racy_events: u64,
    /// Racy events of this row that are not HB racy events.
    pub new_vs_hb: u64,
    /// Wall-clock seconds of this row's run (the HB comparison not included):
    /// the median of [`Row::seconds_runs`].
    pub seconds: f64,
    /// Wall-clock seconds of each repeated run (`sweep --repeat N`).
    pub seconds_runs: Vec<f64>,
    /// Peak heap bytes of this row's run above what was allocated before it
    /// (the loaded trace); None when the counting allocator is not installed.
    pub peak_bytes: Option<u64>,
    /// The recommended window (at most one row).
    pub recommended: bool,
}

impl Row {
    /// True for a CP row of the sweep, false for a bound row.
    pub fn is_window_row(&self) -> bool {
        self.label == "cp"
    }

    /// The row's window as printed: the K, `none`, or the bound's label.
    pub(crate) fn window_label(&self) -> String {
        if self.is_window_row() {
            window_name(self.window)
        } else {
            self.label.to_string()
        }
    }

    /// What kind of row this is in machine output: `window` (a CP row) or
    /// `bound` (an HB or WCP bound, run without a window).
    pub(crate) fn row_kind(&self) -> &'static str {
        if self.is_window_row() {
            "window"
        } else {
            "bound"
        }
    }

    /// The row as a JSON object; `window` is the K, null for none (and for
    /// the bound rows, which run without one); `row` tells the kinds apart.
    pub fn to_json(&self) -> Value {
        json!({
            "row": self.row_kind(),
            "window": self.window,
            "relation": self.relation.name(),
            "engine": self.engine.name(),
            "racy_events": self.racy_events,
            "racy_variables": self.racy_variables,
            "location_pairs": self.location_pairs,
            "hb_racy_events": self.hb_racy_events,
            "new_vs_hb": self.new_vs_hb,
            "seconds": self.seconds,
            "peak_bytes": self.peak_bytes,
            "recommended": self.recommended,
        })
    }
}

/// `K` or `none`.
pub fn window_name(w: Option<u64>) -> String {
    w.map_or_else(|| "none".to_string(), |k| k.to_string())
}

/// The result of a sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Events in the trace.
    pub events: u64,
    /// CP rows in ascending window order (`none` last), then the bound rows.
    pub rows: Vec<Row>,
    /// The recommendation sentence, with its evidence (None without CP rows).
    pub recommendation: Option<String>,
}

impl Sweep {
    /// The CP rows.
    pub fn window_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.is_window_row())
    }

    /// The bound row labelled `label`, when present.
    pub fn bound(&self, label: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| !r.is_window_row() && r.label == label)
    }

    /// Exit status following diff(1): 1 when some CP row reports a race.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.window_rows().any(|r| r.racy_events > 0))
    }

    /// What `--plot` draws: the CP rows as points, the bound rows as lines.
    pub fn series(&self) -> crate::tools::plot::Series {
        crate::tools::plot::Series {
            windows: self
                .window_rows()
                .map(|r| crate::tools::plot::Point {
                    window: r.window,
                    racy_events: r.racy_events,
                    seconds: r.seconds,
                    seconds_runs: r.seconds_runs.clone(),
                    recommended: r.recommended,
                })
                .collect(),
            bounds: self
                .rows
                .iter()
                .filter(|r| !r.is_window_row())
                .map(|r| (r.relation, r.racy_events))
                .collect(),
        }
    }
}

/// What a progress display is told before each run.
#[derive(Clone, Debug)]
pub struct Progress {
    /// What runs now, e.g. `cp K=1000` or `hb`.
    pub what: String,
    /// Runs finished so far.
    pub done: usize,
    /// Runs in the whole sweep.
    pub total: usize,
    /// Events analysed so far (each run analyses the whole trace).
    pub events_done: u64,
    /// Events the whole sweep analyses.
    pub events_total: u64,
}

/// One run's results, kept only as long as the comparison needs them.
struct Run {
    engine: Engine,
    racy: Vec<EventId>,
    racy_variables: u64,
    location_pairs: u64,
    seconds: f64,
    seconds_runs: Vec<f64>,
    peak_bytes: Option<u64>,
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The engine a sweep uses for `relation`: `vc` (linear, exact) when the
/// relation has one, else its default.
fn engine_for(relation: Relation) -> Option<Engine> {
    relation
        .engines()
        .contains(&Engine::Vc)
        .then_some(Engine::Vc)
}

/// Run `relation` at `window` `repeat` times (at least once): the report of
/// the first run, the median time, the largest peak.
fn run_one(t: &Trace, relation: Relation, window: Option<u64>, repeat: usize) -> Result<Run> {
    let opts = Options {
        engine: engine_for(relation),
        window,
        ..Options::new(relation)
    };
    let mut first: Option<Report> = None;
    let mut seconds_runs = Vec::new();
    let mut peak_bytes = None;
    for _ in 0..repeat.max(1) {
        // The previous run's state may still be being freed.
        crate::alloc::settle();
        let baseline = crate::alloc::reset_peak();
        let started = Instant::now();
        let report: Report = race::analyze_trace(t, &opts)?;
        seconds_runs.push(started.elapsed().as_secs_f64());
        if let (Some(b), Some(p)) = (baseline, crate::alloc::peak()) {
            let bytes = p.saturating_sub(b) as u64;
            peak_bytes = Some(peak_bytes.map_or(bytes, |q: u64| q.max(bytes)));
        }
        first.get_or_insert(report);
    }
    let report = first.expect("at least one run");
    Ok(Run {
        engine: report.engine,
        racy: report.racy_events(),
        racy_variables: report.racy_variables().len() as u64,
        location_pairs: report.location_pairs().len() as u64,
        seconds: median(&seconds_runs),
        seconds_runs,
        peak_bytes,
    })
}

/// Elements of sorted `a` not in sorted `b`.
fn count_not_in(a: &[EventId], b: &[EventId]) -> u64 {
    a.iter().filter(|x| b.binary_search(x).is_err()).count() as u64
}

/// Run the sweep: CP at each of `windows` (ascending, `none` last, as
/// [`Windows::resolve`] gives them), HB at each for comparison, and the
/// [`bounds`]. `progress` is called before every run.
pub fn run(
    t: &Trace,
    windows: &[Option<u64>],
    progress: &mut dyn FnMut(&Progress),
) -> Result<Sweep> {
    run_repeated(t, windows, 1, progress)
}

/// [`run`], timing every CP and bound row `repeat` times: each row's
/// `seconds` is the median (the HB comparison runs once, untimed).
pub fn run_repeated(
    t: &Trace,
    windows: &[Option<u64>],
    repeat: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Sweep> {
    let events = t.len() as u64;
    let bounds = bounds();
    // Runs: exact HB (first: it is the `hb` row and every row's comparison),
    // then CP per window, then the other bounds.
    let total = 1 + windows.len() + bounds.iter().filter(|b| b.1 != Relation::Hb).count();
    let mut done = 0;
    let mut step = |what: String, progress: &mut dyn FnMut(&Progress)| {
        progress(&Progress {
            what,
            done,
            total,
            events_done: done as u64 * events,
            events_total: total as u64 * events,
        });
        done += 1;
    };

    step("hb".into(), progress);
    let hb_exact = run_one(t, Relation::Hb, None, repeat)?;

    let mut rows = Vec::new();
    for &w in windows {
        step(format!("cp K={}", window_name(w)), progress);
        let cp = run_one(t, Relation::Cp, w, repeat)?;
        rows.push(Row {
            label: "cp",
            relation: Relation::Cp,
            engine: cp.engine,
            window: w,
            racy_events: cp.racy.len() as u64,
            racy_variables: cp.racy_variables,
            location_pairs: cp.location_pairs,
            hb_racy_events: hb_exact.racy.len() as u64,
            new_vs_hb: count_not_in(&cp.racy, &hb_exact.racy),
            seconds: cp.seconds,
            seconds_runs: cp.seconds_runs,
            peak_bytes: cp.peak_bytes,
            recommended: false,
        });
    }

    for &(label, relation) in &bounds {
        let owned;
        let r = if relation == Relation::Hb {
            &hb_exact
        } else {
            step(label.to_string(), progress);
            owned = run_one(t, relation, None, repeat)?;
            &owned
        };
        rows.push(Row {
            label,
            relation,
            engine: r.engine,
            window: None,
            racy_events: r.racy.len() as u64,
            racy_variables: r.racy_variables,
            location_pairs: r.location_pairs,
            hb_racy_events: hb_exact.racy.len() as u64,
            new_vs_hb: count_not_in(&r.racy, &hb_exact.racy),
            seconds: r.seconds,
            seconds_runs: r.seconds_runs.clone(),
            peak_bytes: r.peak_bytes,
            recommended: false,
        });
    }

    let recommendation = recommend(&mut rows);
    Ok(Sweep {
        events,
        rows,
        recommendation,
    })
}

/// Mark the recommended CP row and say why: the first row whose racy-event
/// count every later row of the sweep repeats.
fn recommend(rows: &mut [Row]) -> Option<String> {
    let idx: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].is_window_row())
        .collect();
    let last = *idx.last()?;
    let target = rows[last].racy_events;
    // Scan back from the end while the count stays at the last row's.
    let mut pick = idx.len() - 1;
    while pick > 0 && rows[idx[pick - 1]].racy_events == target {
        pick -= 1;
    }
    let chosen = idx[pick];
    rows[chosen].recommended = true;
    let k = window_name(rows[chosen].window);
    let at = |i: usize| {
        format!(
            "{} at K={}",
            rows[i].racy_events,
            window_name(rows[i].window)
        )
    };
    let sentence = if idx.len() == 1 {
        format!(
            "recommended K = {k}: the only window swept ({} racy events); sweep more windows for evidence",
            rows[chosen].racy_events
        )
    } else if pick + 1 < idx.len() {
        let later: Vec<String> = idx[pick + 1..]
            .iter()
            .map(|&i| window_name(rows[i].window))
            .collect();
        format!(
            "recommended K = {k}: racy events {} at K={k}, unchanged at {}",
            target,
            join_and(&later)
        )
    } else {
        // Still growing at the last window swept.
        let prev = idx[pick - 1];
        let more = if rows[chosen].window.is_some() {
            "; sweep larger windows or none to see whether they keep growing"
        } else {
            " (exact CP)"
        };
        format!(
            "recommended K = {k}: racy events still grow at the largest window swept ({}, {}){more}",
            at(prev),
            at(chosen)
        )
    };
    Some(sentence)
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Output formats of `sweep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SweepFormat {
    /// An aligned table, then the recommendation.
    Text,
    /// An array of row objects.
    Json,
    /// One row per line, with a header.
    Csv,
}

/// `1.23 s`, `45.6 ms`, `0.12 ms`.
pub(crate) fn format_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.01 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

/// `512 B`, `12.3 KiB`, `4.5 MiB`, `1.2 GiB`; `-` when unknown.
pub(crate) fn format_bytes(b: Option<u64>) -> String {
    let Some(b) = b else { return "-".into() };
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

impl Sweep {
    /// Print in `format`. Text ends with the recommendation; JSON and CSV
    /// carry it as the `recommended` field/column only (the sentence goes to
    /// standard error, written by the caller).
    pub fn write(&self, format: SweepFormat, out: &mut impl Write) -> std::io::Result<()> {
        match format {
            SweepFormat::Json => {
                let rows: Vec<Value> = self.rows.iter().map(Row::to_json).collect();
                serde_json::to_writer_pretty(&mut *out, &rows)?;
                writeln!(out)
            }
            SweepFormat::Csv => self.write_csv(out),
            SweepFormat::Text => self.write_text(out),
        }
    }

    fn write_csv(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(CSV_HEADER)?;
        for r in &self.rows {
            w.write_record([
                r.row_kind().to_string(),
                r.window.map_or(String::new(), |k| k.to_string()),
                r.relation.name().to_string(),
                r.engine.name().to_string(),
                r.racy_events.to_string(),
                r.racy_variables.to_string(),
                r.location_pairs.to_string(),
                r.hb_racy_events.to_string(),
                r.new_vs_hb.to_string(),
                format!("{:.6}", r.seconds),
                r.peak_bytes.map_or(String::new(), |b| b.to_string()),
                r.recommended.to_string(),
            ])?;
        }
        w.flush()
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let header = [
            "window",
            "relation",
            "racy events",
            "racy vars",
            "loc pairs",
            "HB racy",
            "new vs HB",
            "time",
            "peak memory",
        ];
        let cells: Vec<[String; 9]> = self
            .rows
            .iter()
            .map(|r| {
                let mark = if r.recommended { " *" } else { "" };
                [
                    format!("{}{mark}", r.window_label()),
                    format!("{} {}", r.relation, r.engine),
                    r.racy_events.to_string(),
                    r.racy_variables.to_string(),
                    r.location_pairs.to_string(),
                    r.hb_racy_events.to_string(),
                    r.new_vs_hb.to_string(),
                    format_seconds(r.seconds),
                    format_bytes(r.peak_bytes),
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for c in &cells {
            for (w, s) in width.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        // Window and relation left-aligned, numbers right-aligned.
        let line = |c: &[String]| -> String {
            let mut s = String::new();
            for (i, cell) in c.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = width[i].saturating_sub(cell.chars().count());
                if i < 2 {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                }
            }
            s.trim_end().to_string()
        };
        let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
        writeln!(out, "{}", line(&head))?;
        let mut bounds_started = false;
        for (r, c) in self.rows.iter().zip(&cells) {
            if !r.is_window_row() && !bounds_started {
                bounds_started = true;
                let total: usize = width.iter().sum::<usize>() + 2 * (width.len() - 1);
                writeln!(out, "{}", "-".repeat(total))?;
            }
            writeln!(out, "{}", line(c))?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{} events. Rows above the rule: CP with window K; below: exact relations without a window (HB, WCP bound CP; SHB, syncp report only real races).",
            self.events
        )?;
        writeln!(
            out,
            "HB racy: racy events of exact HB; new vs HB: racy events of the row HB misses."
        )?;
        if let Some(s) = &self.recommendation {
            writeln!(out, "{s} (marked *)")?;
        }
        Ok(())
    }
}

/// Columns of `--format csv`.
pub const CSV_HEADER: [&str; 12] = [
    "row",
    "window",
    "relation",
    "engine",
    "racy_events",
    "racy_variables",
    "location_pairs",
    "hb_racy_events",
    "new_vs_hb",
    "seconds",
    "peak_bytes",
    "recommended",
];
