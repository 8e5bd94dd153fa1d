//! `cprace verify`: check witness reorderings from a JSON file against a
//! trace, with the engine-independent checker of [`cprace::witness::verify`].

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Outcome;
use serde_json::Value;

use cprace::trace::{EventId, Format};
use cprace::witness::verify::{check, check_pair};

#[derive(clap::Args, Debug)]
/// Check race and deadlock witnesses against a trace, independently of every engine
///
/// FILE is the JSON output of `cprace analyze --witness --format json` (every
/// race with a non-null witness is checked), of `cprace deadlocks --witness
/// --format json` (every deadlock's witness: a reordering after which each
/// of its threads is about to request a lock another of them holds), or one
/// object
/// {"first": E1, "second": E2, "witness": [ids...]}. A witness is valid when,
/// replayed in the listed order, each event is the next one of its thread, a
/// forked thread starts after its fork, a join follows every event of the
/// joined thread, no acquire takes a lock another thread holds, every read
/// (volatile too) sees the write it saw in the trace, and afterwards E1 and
/// E2 (conflicting accesses of two threads) are the next events of their
/// threads. A race with `"witness": null` is still checked to be two
/// conflicting accesses of the trace. Prints one line per race and a
/// SUMMARY line. Exit 0 when every witness checked is valid; 1 when some
/// witness or race is invalid, or when races were given but none had a
/// witness (nothing was checked: never a pass); 2 on bad input.
///
/// Examples:
///   cprace analyze t.std --relation syncp --witness --format json > r.json
///   cprace verify t.std --witness r.json
#[command(verbatim_doc_comment)]
pub(crate) struct VerifyArgs {
    /// Trace file.
    trace: PathBuf,
    /// The witness file (JSON).
    #[arg(long)]
    witness: PathBuf,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
}

impl VerifyArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// The event ids of JSON array `v` (`what` names it in errors).
fn id_list(v: Option<&Value>, file: &Path, what: &str) -> Result<Vec<EventId>, cprace::Error> {
    let bad = || {
        cprace::Error::Usage(format!(
            "{}: {what} is not an array of event ids",
            file.display()
        ))
    };
    let a = v.and_then(|v| v.as_array()).ok_or_else(bad)?;
    a.iter()
        .map(|x| match x.as_u64() {
            Some(x) if x <= u32::MAX as u64 => Ok(x as EventId),
            _ => Err(bad()),
        })
        .collect()
}

/// `cprace verify TRACE --witness FILE`: check every witness in FILE (races,
/// or deadlocks when FILE is a `cprace deadlocks` report), print one line
/// each, return the exit code (0 all valid, 1 some invalid).
pub(crate) fn run(args: VerifyArgs, out: &mut dyn Write) -> Outcome {
    let file = &args.witness;
    let t = cprace::trace::load(&args.trace, args.input_format)?;
    let text = std::fs::read_to_string(file)
        .map_err(cprace::Error::io(format!("cannot read {}", file.display())))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| cprace::Error::Usage(format!("{}: not JSON: {e}", file.display())))?;
    let deadlocks = json.get("deadlocks").and_then(|d| d.as_array());
    let items: Vec<&Value> = match (deadlocks, json.get("races")) {
        (Some(d), _) => d.iter().collect(),
        (None, Some(Value::Array(a))) => a.iter().collect(),
        _ => vec![&json],
    };
    let id = |v: &Value, k: &str| -> Result<EventId, cprace::Error> {
        match v.get(k).and_then(|x| x.as_u64()) {
            Some(x) if x <= u32::MAX as u64 => Ok(x as EventId),
            _ => Err(cprace::Error::Usage(format!(
                "{}: a race without a valid `{k}` event id",
                file.display()
            ))),
        }
    };
    let (mut valid, mut invalid, mut absent) = (0, 0, 0);
    for v in items {
        let (events, name) = if deadlocks.is_some() {
            let events = id_list(v.get("events"), file, "a deadlock's `events`")?;
            let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("deadlock");
            let list: Vec<String> = events.iter().map(|e| e.to_string()).collect();
            (
                Some(events),
                format!("deadlock [{}] ({kind})", list.join(", ")),
            )
        } else {
            let (e1, e2) = (id(v, "first")?, id(v, "second")?);
            (None, format!("({e1}, {e2})"))
        };
        let w = match v.get("witness") {
            Some(Value::Null) => {
                // Without a witness there is no reordering to replay, but
                // the pair must still be a race of this trace.
                match &events {
                    Some(_) => {
                        absent += 1;
                        writeln!(out, "{name}: no witness")?;
                    }
                    None => match check_pair(&t, id(v, "first")?, id(v, "second")?) {
                        Ok(()) => {
                            absent += 1;
                            writeln!(
                                out,
                                "{name}: no witness (the events are conflicting accesses)"
                            )?;
                        }
                        Err(why) => {
                            invalid += 1;
                            writeln!(out, "{name}: INVALID: {why}")?;
                        }
                    },
                }
                continue;
            }
            Some(w @ Value::Array(_)) => id_list(Some(w), file, &format!("the witness of {name}"))?,
            _ => {
                return Err(cprace::Error::Usage(format!(
                    "{}: {name} has no `witness` array (run {} with --witness)",
                    file.display(),
                    if deadlocks.is_some() {
                        "deadlocks"
                    } else {
                        "analyze"
                    }
                ))
                .into());
            }
        };
        let verdict = match &events {
            Some(events) => {
                let locks: Option<Vec<String>> = v.get("locks").and_then(|l| {
                    l.as_array()?
                        .iter()
                        .map(|x| x.as_str().map(String::from))
                        .collect()
                });
                cprace::witness::deadlock::check(&t, events, locks.as_deref(), &w)
            }
            None => check(&t, id(v, "first")?, id(v, "second")?, &w).map(|v| v.sync_preserving),
        };
        match verdict {
            Ok(sync_preserving) => {
                valid += 1;
                let sp = if sync_preserving {
                    ", sync-preserving"
                } else {
                    ""
                };
                writeln!(out, "{name}: valid ({} events{sp})", w.len())?;
            }
            Err(why) => {
                invalid += 1;
                writeln!(out, "{name}: INVALID: {why}")?;
            }
        }
    }
    writeln!(
        out,
        "SUMMARY: {valid} valid, {invalid} invalid, {absent} without a witness"
    )?;
    // Races given but no witness among them: nothing was replayed, which
    // must not read as a pass.
    Ok(if invalid > 0 || (valid == 0 && absent > 0) {
        1
    } else {
        0
    })
}
