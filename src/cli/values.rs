//! Values of options every subcommand parses the same way: event counts with
//! k, M, G suffixes, windows, shares.

/// A window size K, or `none` for the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window(pub(crate) Option<u64>);

/// Parse a window: a positive event count (k, M, G suffixes) or `none`.
pub(crate) fn parse_window(s: &str) -> Result<Window, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Window(None));
    }
    match parse_count(s) {
        Ok(0) | Err(_) => Err(format!(
            "`{s}` is not a window; expected a positive number of events (k, M, G suffixes: 10k) or `none`"
        )),
        Ok(k) => Ok(Window(Some(k))),
    }
}

/// Parse a count: digits with an optional k, M or G suffix (10M = 10^7);
/// `_` separators are allowed. Every numeric option accepts this form.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| {
            format!(
                "`{s}` is not a count; expected digits with an optional k, M or G suffix (e.g. 10M)"
            )
        })
}

/// [`parse_count`] for options held in 32 bits.
pub(crate) fn parse_u32(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    u32::try_from(n).map_err(|_| format!("`{s}` is too large; expected at most {}", u32::MAX))
}

/// A share: a number from 0 to 1.
pub(crate) fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "`{s}` is not a share; expected a number from 0 to 1"
        )),
    }
}
