//! `cprace verify`: check witness reorderings from a JSON file against a
//! trace, with the engine-independent checker of [`cprace::witness::verify`].

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use serde_json::Value;

use cprace::trace::{EventId, Format};
use cprace::witness::verify::check;

#[derive(clap::Args, Debug)]
/// Check race witnesses against a trace, independently of every engine
///
/// FILE is the JSON output of `cprace analyze --witness --format json` (every
/// race with a non-null witness is checked) or one object
/// {"first": E1, "second": E2, "witness": [ids...]}. A witness is valid when,
/// replayed in the listed order, each event is the next one of its thread, a
/// forked thread starts after its fork, a join follows every event of the
/// joined thread, no acquire takes a lock another thread holds, every read
/// (volatile too) sees the write it saw in the trace, and afterwards E1 and
/// E2 (conflicting accesses of two threads) are the next events of their
/// threads. Prints one line per race; exit 0 when all are valid, 1 when some
/// is not, 2 on bad input.
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
}

impl VerifyArgs {
    /// The trace this command reads and its input format.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>) {
        (&mut self.trace, self.input_format)
    }
}

/// `cprace verify TRACE --witness FILE`: check every witness in FILE, print
/// one line per race, return the exit code (0 all valid, 1 some invalid).
pub(crate) fn run(args: VerifyArgs, out: &mut dyn Write) -> Outcome {
    let file = &args.witness;
    let t = cprace::trace::load(&args.trace, args.input_format)?;
    let text = std::fs::read_to_string(file)
        .map_err(cprace::Error::io(format!("cannot read {}", file.display())))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| cprace::Error::Usage(format!("{}: not JSON: {e}", file.display())))?;
    let items: Vec<&Value> = match json.get("races") {
        Some(Value::Array(a)) => a.iter().collect(),
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
        let (e1, e2) = (id(v, "first")?, id(v, "second")?);
        let w = match v.get("witness") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| match x.as_u64() {
                    Some(x) if x <= u32::MAX as u64 => Ok(x as EventId),
                    _ => Err(cprace::Error::Usage(format!(
                        "{}: witness of ({e1}, {e2}) holds `{x}`, not an event id",
                        file.display()
                    ))),
                })
                .collect::<Result<Vec<EventId>, cprace::Error>>()?,
            Some(Value::Null) => {
                absent += 1;
                writeln!(out, "({e1}, {e2}): no witness")?;
                continue;
            }
            _ => {
                return Err(cprace::Error::Usage(format!(
                    "{}: race ({e1}, {e2}) has no `witness` array (run analyze with --witness)",
                    file.display()
                ))
                .into());
            }
        };
        match check(&t, e1, e2, &w) {
            Ok(v) => {
                valid += 1;
                let sp = if v.sync_preserving {
                    ", sync-preserving"
                } else {
                    ""
                };
                writeln!(out, "({e1}, {e2}): valid ({} events{sp})", w.len())?;
            }
            Err(why) => {
                invalid += 1;
                writeln!(out, "({e1}, {e2}): INVALID: {why}")?;
            }
        }
    }
    writeln!(
        out,
        "SUMMARY: {valid} valid, {invalid} invalid, {absent} without a witness"
    )?;
    Ok(if invalid > 0 { 1 } else { 0 })
}
