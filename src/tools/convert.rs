//! `cprace convert`: rewrite a trace in another format without losing or
//! destroying anything. The whole trace is validated before a byte is written;
//! a name the output format cannot hold is an error naming the file and line
//! where it first occurs; output files are replaced only on success.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

use crate::trace::{self, Event, EventId, Format, LoadError, Op, Trace};

/// The formats `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Target {
    /// cprace CSV (`thread,op,target,loc`).
    Csv,
    /// RAPID STD (`thread|op(target)|loc`).
    Std,
    /// RAPID's binary format, plus the name tables in `OUTPUT.names.json`
    /// (needs `-o`).
    Rapidbin,
}

/// What `convert` was asked to do.
#[derive(Debug)]
pub struct Options {
    /// Input trace (`-`: standard input).
    pub trace: PathBuf,
    /// Output format.
    pub to: Target,
    /// Output file (standard output when None).
    pub output: Option<PathBuf>,
    /// Input format (detected when None).
    pub input_format: Option<Format>,
    /// STD for RAPID: integer locations plus a side table.
    pub rapid: bool,
}

/// The side table of `--rapid` output `p`: `p.locations.csv`.
pub(crate) fn locations_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".locations.csv");
    PathBuf::from(s)
}

/// Run `convert`; the result goes to `args.output` or `out`.
pub fn run(args: &Options, out: &mut dyn Write) -> Result<i32> {
    if args.rapid && args.to != Target::Std {
        return Err(Error::Usage(
            "--rapid writes STD; use it with --to std".into(),
        ));
    }
    // Refuse an unwritable destination before reading a possibly huge trace.
    if let Some(p) = &args.output {
        crate::output::check_output_path(p)?;
    }
    // The text formats; RapidBin has its own writer (and a side file).
    let std = match args.to {
        Target::Csv => false,
        Target::Std => true,
        Target::Rapidbin => {
            let Some(output) = &args.output else {
                return Err(Error::Usage(
                    "--to rapidbin needs -o FILE (the names go to FILE.names.json)".into(),
                ));
            };
            return convert_to_rapidbin(&args.trace, args.input_format, output);
        }
    };
    let mut events = Vec::new();
    let (names, stats, format) =
        trace::stream(&args.trace, args.input_format, |_, ev| events.push(*ev))?;
    let mut t = Trace {
        events,
        names,
        stats,
    };
    name_by_first_byte(&mut t);
    if std {
        check_std_names(&t, &args.trace, format, args.rapid)?;
    }
    // RAPID has no blocked requests: leave them out of its STD.
    let rapid_events;
    let t = match requests_note(&t).filter(|_| args.rapid) {
        Some(note) => {
            eprintln!("cprace: note: {note}");
            rapid_events = Trace {
                events: t
                    .events
                    .iter()
                    .filter(|e| e.op != Op::Request)
                    .copied()
                    .collect(),
                names: t.names.clone(),
                stats: t.stats.clone(),
            };
            &rapid_events
        }
        None => &t,
    };
    let write = |w: &mut dyn Write| -> Result<()> {
        match (std, args.rapid) {
            (false, _) => trace::csv_format::write(t, &mut &mut *w),
            (true, false) => trace::std_format::write(t, &mut &mut *w),
            (true, true) => Ok(write_rapid_std(t, &mut &mut *w)?),
        }
    };
    match &args.output {
        Some(p) => {
            if args.rapid {
                crate::output::write_file(&locations_path(p), |w| {
                    Ok(write_location_table(t, &mut &mut *w)?)
                })?;
            }
            crate::output::write_file(p, write)?;
        }
        None => write(out)?,
    }
    Ok(0)
}

/// Give every access that starts inside its 8-byte cell (a recorded
/// program's `int` at offset 4, a `short` at 2) the variable named after
/// its first byte, as `record` names it in the formats without byte masks
/// (`table+16` at byte 4 is `table+20`, `0x7f30c0` is `0x7f30c4`): CSV, STD
/// and RapidBin hold no masks, and with the cell's own name two threads
/// writing two fields of one cell would read as a race. Accesses that
/// overlap from different starts then no longer conflict, as in `record`'s
/// own text output.
fn name_by_first_byte(t: &mut Trace) {
    let mut named: rustc_hash::FxHashMap<(u32, u32), u32> = Default::default();
    for i in 0..t.events.len() {
        let ev = t.events[i];
        let first = ev.mask.trailing_zeros();
        if !ev.op.is_memory() || ev.mask == 0 || first == 0 {
            continue;
        }
        let vars = &mut t.names.vars;
        let id = *named.entry((ev.target, first)).or_insert_with(|| {
            let name = at_byte(&vars.name(ev.target as usize).unwrap_or_default(), first);
            vars.intern(&name)
        });
        t.events[i].target = id;
    }
}

/// The name of byte `first` of the cell named `cell` (see
/// [`name_by_first_byte`]): a hex address plus `first`, `sym+k` as
/// `sym+(k + first)`, any other name with `+first`, a generation suffix
/// (`~3`) kept at the end.
fn at_byte(cell: &str, first: u32) -> String {
    let (base, generation) = match cell.rsplit_once('~') {
        Some((b, g)) if !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit()) => {
            (b, &cell[b.len()..])
        }
        _ => (cell, ""),
    };
    if let Some(a) = base
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
    {
        return format!("{:#x}{generation}", a + u64::from(first));
    }
    if let Some((sym, k)) = base.rsplit_once('+')
        && let Ok(k) = k.parse::<u64>()
    {
        return format!("{sym}+{}{generation}", k + u64::from(first));
    }
    format!("{base}+{first}{generation}")
}

/// What leaving out the blocked requests (`req`, which RAPID's formats have
/// no operation for) does to `t`, or None when it has none.
pub(crate) fn requests_note(t: &Trace) -> Option<String> {
    let n = t.events.iter().filter(|e| e.op == Op::Request).count();
    let first = t.events.iter().position(|e| e.op == Op::Request)?;
    let ids = if first + n == t.events.len() {
        "every other event keeps its id (the requests were the trace's last events)".to_string()
    } else {
        format!("events after event {first} move up by one id per request left out before them")
    };
    Some(format!(
        "left out {} (`req`), which RAPID has no operation for; {ids}",
        crate::report::text::plural(n as u64, "blocked lock request")
    ))
}

/// Fail on the first name STD cannot hold, naming the file and line where it
/// first occurs and showing it with control characters escaped. Locations
/// are checked only when written as text (not with `--rapid`).
fn check_std_names(t: &Trace, path: &Path, format: Format, rapid: bool) -> Result<()> {
    let n = &t.names;
    let mut first_bad: Option<(EventId, String)> = None;
    let mut consider = |id: Option<EventId>, problem: String| {
        if let Some(id) = id
            && first_bad.as_ref().is_none_or(|(b, _)| id < *b)
        {
            first_bad = Some((id, problem));
        }
    };
    type Uses = fn(&Event, u32) -> bool;
    let tables: [(&str, &crate::trace::model::Interner, bool, Uses); 4] = [
        ("thread", &n.threads, false, |ev, i| {
            ev.thread == i || (ev.op.target_kind() == TargetKind::Thread && ev.target == i)
        }),
        ("lock", &n.locks, false, |ev, i| {
            ev.op.target_kind() == TargetKind::Lock && ev.target == i
        }),
        ("variable", &n.vars, false, |ev, i| {
            ev.op.target_kind() == TargetKind::Variable && ev.target == i
        }),
        ("location", &n.locs, true, |ev, i| ev.loc == i),
    ];
    for (what, table, is_loc, uses) in tables {
        if is_loc && rapid {
            continue;
        }
        for (i, name) in table.iter().enumerate() {
            if let Some(p) = trace::std_format::std_problem(&name, is_loc, what == "thread") {
                let first_use = t
                    .events
                    .iter()
                    .position(|ev| uses(ev, i as u32))
                    .map(|x| x as EventId);
                consider(
                    first_use,
                    format!(
                        "{what} name `{}` cannot be written in STD: it contains {p}",
                        crate::report::printable(&name)
                    ),
                );
            }
        }
    }
    let Some((id, problem)) = first_bad else {
        return Ok(());
    };
    let file = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string_lossy().into_owned()
    };
    let problem = format!("{problem} (event {id}); convert to csv instead, which quotes any name");
    Err(match event_line(path, format, id) {
        Some((line, text)) => LoadError::new(&file, line, text.as_bytes(), problem),
        None => LoadError::new(&file, 0, b"", problem),
    }
    .into())
}

use crate::trace::model::TargetKind;

/// The 1-based line (and its text) of event `id` in the file at `path`, found
/// by counting the lines that hold events; None for standard input.
fn event_line(path: &Path, format: Format, id: EventId) -> Option<(u64, String)> {
    if path.as_os_str() == "-" {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut seen: u64 = 0;
    let mut header_done = format == Format::Std;
    let mut found = None;
    let name = path.to_string_lossy();
    let _ = trace::lines::for_each_line(&name, file, |line, text| {
        if trace::lines::is_blank_or_comment(text.as_bytes()) {
            return Ok(());
        }
        // CSV: the header; RAPID CSV: an optional header of thread names (no
        // parentheses) and rows with no filled cell hold no event.
        if !header_done {
            header_done = true;
            if format == Format::Csv || !text.contains(['(', ')']) {
                return Ok(());
            }
        }
        if format != Format::Std && text.chars().all(|c| c == ',' || c.is_whitespace()) {
            return Ok(());
        }
        if seen == id as u64 {
            found = Some((line, text.to_string()));
            return Err(LoadError::new("", 0, b"", "found"));
        }
        seen += 1;
        Ok(())
    });
    found
}

/// STD that RAPID parses: locations as integers (the location's id: 1, 2, ...
/// in order of first use; 0 for none).
fn write_rapid_std(t: &Trace, out: &mut impl Write) -> std::io::Result<()> {
    trace::std_format::write_events(t, out, |buf, ev| {
        buf.extend_from_slice(ev.loc.to_string().as_bytes())
    })
}

/// The side table of `--rapid`: `id,location` for every location used.
fn write_location_table(t: &Trace, out: &mut impl Write) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["id", "location"])?;
    for (i, loc) in t.names.locs.iter().enumerate().skip(1) {
        w.write_record([i.to_string().as_str(), &loc])?;
    }
    w.flush()?;
    Ok(())
}

/// `cprace convert --to rapidbin`: the trace and its side file of names, each
/// written to a temporary file first, so existing outputs are replaced only
/// when both are complete.
fn convert_to_rapidbin(input: &Path, format: Option<Format>, output: &Path) -> Result<i32> {
    use trace::rapid_bin;
    let mut t = trace::load::load_checked(input, format, Some(&rapid_bin::check))?;
    name_by_first_byte(&mut t);
    if let Some(note) = requests_note(&t) {
        eprintln!("cprace: note: {note}");
    }
    let side = rapid_bin::side_path(output);
    let tmp = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push(".cprace-tmp");
        PathBuf::from(s)
    };
    let (tmp_out, tmp_side) = (tmp(output), tmp(&side));
    let written = (|| -> Result<()> {
        let f = std::fs::File::create(&tmp_out)
            .map_err(Error::io(format!("cannot create {}", tmp_out.display())))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        rapid_bin::write(&t, &mut w)
            .and_then(|()| w.flush())
            .map_err(Error::io(format!("cannot write {}", tmp_out.display())))?;
        std::fs::write(&tmp_side, rapid_bin::side_json(&t))
            .map_err(Error::io(format!("cannot write {}", tmp_side.display())))?;
        std::fs::rename(&tmp_side, &side)
            .map_err(Error::io(format!("cannot replace {}", side.display())))?;
        std::fs::rename(&tmp_out, output)
            .map_err(Error::io(format!("cannot replace {}", output.display())))?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_out);
        let _ = std::fs::remove_file(&tmp_side);
    }
    written.map(|()| 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_byte_of_a_cell_is_named_as_record_names_it() {
        assert_eq!(super::at_byte("0x7f30c0", 4), "0x7f30c4");
        assert_eq!(super::at_byte("0x7f30c0~12", 2), "0x7f30c2~12");
        assert_eq!(super::at_byte("table+16", 4), "table+20");
        assert_eq!(super::at_byte("count", 6), "count+6");
        assert_eq!(super::at_byte("count~3", 1), "count+1~3");
        assert_eq!(super::at_byte("a~b", 1), "a~b+1");
    }
}
