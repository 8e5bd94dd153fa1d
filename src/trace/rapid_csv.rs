//! RAPID's CSV format: one column per thread and exactly one filled cell per row,
//! holding `op(target)`. An optional first row of thread names is a header;
//! without one, column `i` is thread `T{i}`.

use std::io::Read;

use super::csv_format::reader;
use super::error::LoadError;
use super::model::{Event, EventId};
use super::std_format::split_op_target;
use super::validate::Builder;

/// True when `cell` reads as `op(target)` with a known op.
pub fn looks_like_event(cell: &str) -> bool {
    split_op_target(cell).is_ok_and(|(op, _)| super::model::Op::parse(op).is_some())
}

/// Parse RAPID CSV from `r`.
pub fn parse<R: Read, S: FnMut(EventId, &Event)>(
    r: R,
    b: &mut Builder<'_, S>,
) -> Result<(), LoadError> {
    let mut rdr = reader(r);
    let mut rec = csv::ByteRecord::new();
    let mut names: Option<Vec<String>> = None;
    let mut first = true;
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Err(b.error(line, b"", format!("malformed CSV: {e}")));
            }
        }
        let line = rec.position().map_or(0, |p| p.line());
        let text: Vec<u8> = rec.as_slice().to_vec();
        let cells: Vec<&str> = match rec.iter().map(std::str::from_utf8).collect() {
            Ok(c) => c,
            Err(_) => {
                return Err(b.error(line, &text, "text is not valid UTF-8; expected UTF-8 cells"));
            }
        };
        if cells.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        if first {
            first = false;
            if !cells.iter().any(|c| looks_like_event(c)) {
                names = Some(cells.iter().map(|c| c.trim().to_string()).collect());
                continue;
            }
        }
        let mut filled = cells
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.trim().is_empty());
        let (col, cell) = filled.next().expect("checked non-empty above");
        if filled.next().is_some() {
            return Err(b.error(
                line,
                &text,
                "more than one filled cell; expected exactly one event per row",
            ));
        }
        let thread = match &names {
            Some(n) => match n.get(col) {
                Some(name) if !name.is_empty() => name.clone(),
                _ => {
                    return Err(b.error(line, &text, format!("cell in column {} has no thread name in the header; expected at most {} columns", col + 1, n.len())));
                }
            },
            None => format!("T{col}"),
        };
        let (op, target) = split_op_target(cell).map_err(|p| b.error(line, &text, p))?;
        b.push(line, &text, &thread, op, target, "")?;
    }
    Ok(())
}
