//! The HTML report: one self-contained page (its styles, script and data
//! inline; nothing fetched) with an index of the races, one per location
//! pair as the text report groups them, sortable and filterable, and per
//! race what the text report says: both accesses with their stacks and the
//! source lines around each frame (read from the files when they are
//! there), the memory, the mutexes and threads, what ordered a predicted
//! race, and its witness as a timeline with one lane per thread.
//!
//! The page's data is one JSON document built here ([`Page`]); the script
//! (`html/page.js`) only lays it out, so every word of a race's description
//! is the text report's own (`tsan`, `text::describe`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::sarif::file_line;
use super::text::{self, Group};
use super::tsan::{self, Detail, Location, WitnessRun};
use super::{Layout, Race, Report, printable};
use crate::trace::recorded::StackEntry;
use crate::trace::{EventId, Names};

/// Steps of a witness timeline drawn at most: the last ones (nearest the
/// race) are kept.
const MAX_STEPS: usize = 400;
/// Source lines shown either side of a frame's line.
const CONTEXT: usize = 3;
/// Source files larger than this are not read for snippets.
const MAX_SOURCE: u64 = 4 << 20;
/// Characters kept of a source line.
const MAX_LINE: usize = 240;
/// Characters kept of a witness step's text (a run of a thread can list
/// thousands of scattered event ids).
const MAX_STEP: usize = 400;

/// `s` made printable and cut to `max` characters.
fn cut(s: &str, max: usize) -> String {
    let s = printable(s);
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.into_owned(),
    }
}

/// The page's data.
#[derive(Serialize)]
struct Page<'a> {
    relation: &'a str,
    engine: &'a str,
    window: Option<u64>,
    max_distance: Option<u64>,
    events: u64,
    racy_events: u64,
    racy_variables: u64,
    location_pairs: u64,
    /// The SUMMARY line of the text report.
    summary: String,
    notes: &'a [String],
    suppressed: Option<String>,
    /// Whether witnesses were asked for.
    witnesses: bool,
    /// Location pairs not shown (`--max-reports`).
    not_shown: u64,
    races: Vec<RaceView>,
    /// Source lines around `file:line`, by that key.
    snippets: BTreeMap<String, Snippet>,
}

/// One location pair: its first race, described.
#[derive(Serialize)]
struct RaceView {
    variable: String,
    kinds: Vec<&'static str>,
    /// Racy events with this location pair.
    count: u64,
    threads: Vec<String>,
    other_variables: bool,
    /// The relation, and whether the observed run ordered the race
    /// (known for recorded programs: `predicted`) or not (`observed`).
    relation: String,
    /// Where: the later access's innermost frame (or its location).
    file: String,
    line: u64,
    function: String,
    /// The later access, then the earlier (as TSan prints them).
    accesses: [Side; 2],
    /// Memory, mutexes and threads: a header and a stack each.
    sections: Vec<Section>,
    /// What ordered a predicted race in the observed run.
    ordering: Vec<String>,
    witness: Option<Timeline>,
    /// TSan's `data race FILE:LINE in FUNCTION`.
    summary: Option<String>,
}

#[derive(Serialize)]
struct Side {
    event: EventId,
    thread: String,
    loc: String,
    header: String,
    stack: Vec<Frame>,
}

#[derive(Serialize)]
struct Section {
    header: String,
    stack: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    /// The frame as TSan prints it (`#0 f a.c:7 (prog+0x11a9)`).
    text: String,
    /// Its key in `snippets`, when the source was read.
    source: Option<String>,
}

/// A witness: its runs of one thread in order, one lane per thread.
#[derive(Serialize)]
struct Timeline {
    /// Whether one was found (else the rest is empty).
    found: bool,
    /// Thread names, one lane each, in order of first step.
    lanes: Vec<String>,
    steps: Vec<Step>,
    /// Earlier steps not drawn ([`MAX_STEPS`]).
    elided: usize,
    /// Witness events in all.
    events: usize,
    /// The witness in source terms, one line a step (recorded programs).
    text: Vec<String>,
}

#[derive(Serialize)]
struct Step {
    lane: usize,
    first: EventId,
    last: EventId,
    events: usize,
    text: String,
    /// One of the two racing accesses.
    racy: bool,
}

/// Lines `start..` of a file, `line` the one a frame names.
#[derive(Serialize)]
struct Snippet {
    file: String,
    start: usize,
    line: usize,
    lines: Vec<String>,
}

/// Source files read once each (None: not readable).
#[derive(Default)]
struct Sources {
    files: BTreeMap<String, Option<Vec<String>>>,
    snippets: BTreeMap<String, Snippet>,
}

impl Sources {
    /// The key of the snippet around `file:line`, reading the file once.
    fn snippet(&mut self, file: &str, line: u64) -> Option<String> {
        let key = format!("{file}:{line}");
        if self.snippets.contains_key(&key) {
            return Some(key);
        }
        let lines = self
            .files
            .entry(file.to_string())
            .or_insert_with(|| read_source(file))
            .as_ref()?;
        let at = usize::try_from(line).ok()?.checked_sub(1)?;
        if at >= lines.len() {
            return None;
        }
        let start = at.saturating_sub(CONTEXT);
        let end = (at + CONTEXT + 1).min(lines.len());
        self.snippets.insert(
            key.clone(),
            Snippet {
                file: file.to_string(),
                start: start + 1,
                line: at + 1,
                lines: lines[start..end].to_vec(),
            },
        );
        Some(key)
    }

    fn frames(&mut self, stack: &[StackEntry]) -> Vec<Frame> {
        stack
            .iter()
            .enumerate()
            .map(|(k, f)| Frame {
                text: printable(&f.tsan_line(k)).into_owned(),
                source: (!f.file.is_empty() && f.line > 0)
                    .then(|| self.snippet(&f.file, u64::from(f.line)))
                    .flatten(),
            })
            .collect()
    }
}

/// A source file's lines (each cut to [`MAX_LINE`] characters), when it is
/// there, small and text.
fn read_source(file: &str) -> Option<Vec<String>> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_SOURCE {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    Some(text.lines().map(|l| cut(l, MAX_LINE)).collect())
}

/// A race without details: its accesses as the text report words them, the
/// location as the one frame.
fn plain_side(r: &Race, a: &super::Access, names: &Names, src: &mut Sources) -> Side {
    let loc = names.loc(a.loc);
    let previous = a.id == r.first.id;
    let stack = match file_line(loc) {
        Some((file, line)) => vec![Frame {
            text: printable(loc).into_owned(),
            source: src.snippet(file, line),
        }],
        None => Vec::new(),
    };
    Side {
        event: a.id,
        thread: names.thread(a.thread).to_string(),
        loc: loc.to_string(),
        header: text::describe(a, names, if previous { "previous " } else { "" }),
        stack,
    }
}

fn detailed_side(
    a: &super::Access,
    d: &tsan::AccessDetail,
    previous: bool,
    names: &Names,
    src: &mut Sources,
) -> Side {
    Side {
        event: a.id,
        thread: names.thread(a.thread).to_string(),
        loc: names.loc(a.loc).to_string(),
        header: tsan::access_header(d, previous),
        stack: src.frames(&d.frames),
    }
}

/// Memory, mutexes and threads of a detailed race, as the text report
/// heads them.
fn sections(d: &Detail, src: &mut Sources) -> Vec<Section> {
    let mut v = Vec::new();
    if let Some(l) = &d.location {
        let stack = match l {
            Location::Heap { frames, .. } => src.frames(frames),
            _ => Vec::new(),
        };
        v.push(Section {
            header: tsan::location_header(l),
            stack,
        });
        if let Location::Heap {
            freed: Some((thread, frames)),
            ..
        } = l
        {
            v.push(Section {
                header: tsan::freed_header(thread),
                stack: src.frames(frames),
            });
        }
    }
    for m in &d.mutexes {
        v.push(Section {
            header: tsan::mutex_header(m),
            stack: src.frames(&m.frames),
        });
    }
    for t in &d.threads {
        v.push(Section {
            header: tsan::thread_header(t),
            stack: src.frames(&t.frames),
        });
    }
    v
}

/// A witness's runs as lanes and steps, the last [`MAX_STEPS`] drawn.
fn timeline(runs: &[WitnessRun], mut text: Vec<String>) -> Timeline {
    let elided = runs.len().saturating_sub(MAX_STEPS);
    text.drain(..text.len().saturating_sub(MAX_STEPS));
    let mut lanes: Vec<String> = Vec::new();
    let racy_from = runs.len().saturating_sub(2);
    let steps = runs
        .iter()
        .enumerate()
        .skip(elided)
        .map(|(i, r)| {
            let lane = match lanes.iter().position(|l| *l == r.thread_id) {
                Some(k) => k,
                None => {
                    lanes.push(r.thread_id.clone());
                    lanes.len() - 1
                }
            };
            Step {
                lane,
                first: r.events.first().copied().unwrap_or_default(),
                last: r.events.last().copied().unwrap_or_default(),
                events: r.events.len(),
                text: cut(&r.text, MAX_STEP),
                racy: i >= racy_from,
            }
        })
        .collect();
    Timeline {
        found: true,
        lanes,
        steps,
        elided,
        // The runs end with the two racy accesses, which are not witness
        // events.
        events: runs.iter().map(|r| r.events.len()).sum::<usize>() - 2.min(runs.len()),
        text,
    }
}

fn race_view(report: &Report, g: &Group, names: &Names, src: &mut Sources) -> RaceView {
    let r = &g.first;
    let detail = report.details.get(&(r.first.id, r.second.id));
    let (accesses, sections, ordering, summary) = match detail {
        Some(d) => (
            [
                detailed_side(&r.second, &d.accesses[0], false, names, src),
                detailed_side(&r.first, &d.accesses[1], true, names, src),
            ],
            sections(d, src),
            d.ordering
                .iter()
                .map(|l| printable(l.trim()).into_owned())
                .collect(),
            d.accesses[0]
                .top
                .as_ref()
                .map(|(at, f)| printable(&format!("data race {at} in {f}")).into_owned()),
        ),
        None => (
            [
                plain_side(r, &r.second, names, src),
                plain_side(r, &r.first, names, src),
            ],
            Vec::new(),
            Vec::new(),
            None,
        ),
    };
    // Where: the later access's innermost frame, else its location.
    let top = detail.and_then(|d| d.accesses[0].frames.first());
    let (file, line, function) = match top {
        Some(f) => (f.file.clone(), u64::from(f.line), f.function.clone()),
        None => {
            let loc = names.loc(r.second.loc);
            match file_line(loc) {
                Some((file, line)) => (file.to_string(), line, String::new()),
                None => (loc.to_string(), 0, String::new()),
            }
        }
    };
    let relation = match detail {
        Some(d) if !d.ordering.is_empty() => format!("{} (predicted)", report.relation),
        Some(_) if report.relation != crate::relation::Relation::Hb => {
            format!("{} (observed)", report.relation)
        }
        _ => report.relation.to_string(),
    };
    let witness = report.witness_of(r).map(|w| match w {
        None => Timeline {
            found: false,
            lanes: Vec::new(),
            steps: Vec::new(),
            elided: 0,
            events: 0,
            text: Vec::new(),
        },
        Some(_) => {
            let text: Vec<String> = detail
                .map(|d| d.witness.iter().map(|s| cut(s, MAX_STEP)).collect())
                .unwrap_or_default();
            let runs = report
                .timelines
                .get(&(r.first.id, r.second.id))
                .map_or(&[][..], Vec::as_slice);
            timeline(runs, text)
        }
    });
    RaceView {
        variable: printable(&names.var(r.variable)).into_owned(),
        kinds: g.kinds(),
        count: g.count,
        threads: g
            .threads
            .iter()
            .map(|&t| printable(names.thread(t)).into_owned())
            .collect(),
        other_variables: g.other_variables,
        relation,
        file: printable(&file).into_owned(),
        line,
        function: printable(&function).into_owned(),
        accesses,
        sections,
        ordering,
        witness,
        summary,
    }
}

/// Write the page: the grouped races (at most `layout.max_reports`).
pub(super) fn write(
    report: &Report,
    names: &Names,
    layout: &Layout,
    out: &mut dyn Write,
) -> io::Result<()> {
    let groups = text::groups(report)?;
    let shown = super::OutputFormat::Html.shown(layout).unwrap_or_default();
    let max = usize::try_from(shown.max_reports.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
    let mut src = Sources::default();
    let races: Vec<RaceView> = groups
        .iter()
        .take(max)
        .map(|g| race_view(report, g, names, &mut src))
        .collect();
    let tally = report.tally()?;
    let summary = text::summary_line(report, &tally);
    let page = Page {
        relation: report.relation.name(),
        engine: report.engine.name(),
        window: report.window,
        max_distance: report.max_distance,
        events: report.events,
        racy_events: tally.racy_events,
        racy_variables: tally.racy_variables,
        location_pairs: tally.location_pairs,
        summary,
        notes: &report.notes,
        suppressed: report.suppressed_line("race"),
        witnesses: report.witnesses.is_some(),
        not_shown: (groups.len() - races.len()) as u64,
        races,
        snippets: src.snippets,
    };
    let data = script_safe(&serde_json::to_string(&page)?);
    let title = format!(
        "cprace: {} ({})",
        text::plural(tally.location_pairs, "location pair"),
        report.relation
    );
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n{}</style>\n</head>\n\
         <body>\n<noscript>This report is drawn by its script; the same races print as text \
         with <code>cprace analyze --format text</code>.</noscript>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{}</script>\n\
         </body>\n</html>\n",
        escape(&title),
        include_str!("html/page.css"),
        include_str!("html/page.js"),
    )
}

/// JSON made safe inside a `<script>` element: `<` only occurs in strings,
/// where `\u003c` means the same, so no `</script>` or `<!--` can end or
/// change the element.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// Text made safe in HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_its_script_element() {
        let json = serde_json::to_string(&["</script><script>alert(1)</script>", "<!--"]).unwrap();
        let safe = script_safe(&json);
        assert!(!safe.contains('<'));
        let back: Vec<String> = serde_json::from_str(&safe).unwrap();
        assert_eq!(back[0], "</script><script>alert(1)</script>");
        assert_eq!(escape("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
    }

    #[test]
    fn timelines_keep_the_last_steps_and_one_lane_per_thread() {
        let run = |t: &str, e: EventId| WitnessRun {
            thread: t.into(),
            thread_id: t.into(),
            events: vec![e, e + 1],
            loc: 0,
            top: None,
            text: format!("{t} runs to {e}"),
        };
        let mut runs: Vec<WitnessRun> = (0..1000)
            .map(|i| run(["T0", "T1", "T2"][i % 3], i as EventId * 2))
            .collect();
        for (t, e) in [("T1", 5000), ("T2", 5001)] {
            runs.push(WitnessRun {
                events: vec![e],
                ..run(t, e)
            });
        }
        let tl = timeline(&runs, Vec::new());
        assert_eq!(tl.steps.len(), MAX_STEPS);
        assert_eq!(tl.elided, 602);
        assert_eq!(tl.events, 2000);
        assert_eq!(tl.lanes.len(), 3);
        let racy: Vec<EventId> = tl
            .steps
            .iter()
            .filter(|s| s.racy)
            .map(|s| s.first)
            .collect();
        assert_eq!(racy, [5000, 5001]);
        assert_eq!(
            tl.steps.last().map(|s| tl.lanes[s.lane].as_str()),
            Some("T2")
        );
    }

    #[test]
    fn snippets_read_the_lines_around_a_frame_once() {
        let dir = std::env::temp_dir().join(format!("cprace-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.c");
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&file, body).unwrap();
        let name = file.to_string_lossy().into_owned();
        let mut src = Sources::default();
        let key = src.snippet(&name, 10).unwrap();
        let s = &src.snippets[&key];
        assert_eq!((s.start, s.line), (7, 10));
        assert_eq!(
            s.lines,
            [
                "line 7", "line 8", "line 9", "line 10", "line 11", "line 12", "line 13"
            ]
        );
        let key = src.snippet(&name, 1).unwrap();
        assert_eq!(src.snippets[&key].lines.len(), 4);
        assert_eq!(src.snippet(&name, 21), None);
        assert_eq!(src.snippet(&name, 0), None);
        assert_eq!(
            src.snippet(&dir.join("missing.c").to_string_lossy(), 3),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
