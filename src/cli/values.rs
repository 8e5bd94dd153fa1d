//! Values of options every subcommand parses the same way: event counts with
//! k, M, G suffixes, windows, shares. Every numeric option also accepts a
//! leading `-` (clap's `allow_hyphen_values`), so a negative value reaches
//! these parsers and the error names the accepted range instead of clap's
//! "unexpected argument".

/// A window size K, or `none` for the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window(pub(crate) Option<u64>);

/// Parse a window: an event count from 1 (k, M, G suffixes) or `none`.
pub(crate) fn parse_window(s: &str) -> Result<Window, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Window(None));
    }
    match count(s) {
        Some(k) if k > 0 => Ok(Window(Some(k))),
        _ => Err(format!(
            "`{s}` is not a window; expected a whole number of events from 1 to {} (k, M, G suffixes: 10k), or `none`",
            u64::MAX
        )),
    }
}

/// Parse a count: digits with an optional k, M or G suffix (10M = 10^7);
/// `_` separators are allowed. Every numeric option accepts this form.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    count(s).ok_or_else(|| {
        format!(
            "`{s}` is not a count; expected a whole number from 0 to {} (k, M, G suffixes: 10M)",
            u64::MAX
        )
    })
}

/// [`parse_count`] for options held in 32 bits.
pub(crate) fn parse_u32(s: &str) -> Result<u32, String> {
    count(s).and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
        format!(
            "`{s}` is not a count; expected a whole number from 0 to {} (k, M suffixes: 10k)",
            u32::MAX
        )
    })
}

/// A count in the form [`parse_count`] accepts, if `s` is one and fits 64 bits.
fn count(s: &str) -> Option<u64> {
    let t = s.trim().replace('_', "");
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    // u64's parser takes a leading `+`; a count is digits only.
    if !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// A share: a number from 0 to 1.
pub(crate) fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "`{s}` is not a share; expected a number from 0 to 1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_named_and_negatives_rejected() {
        let e = parse_window("-1").unwrap_err();
        assert!(e.contains("from 1 to 18446744073709551615"), "{e}");
        assert!(e.contains("`none`"), "{e}");
        let e = parse_window("99999999999999999999999").unwrap_err();
        assert!(e.contains("18446744073709551615"), "{e}");
        assert!(parse_window("0").is_err());
        assert_eq!(parse_window("10k"), Ok(Window(Some(10_000))));
        assert_eq!(parse_window("none"), Ok(Window(None)));
        assert!(parse_count("-5").unwrap_err().contains("from 0 to"));
        assert!(parse_count("+5").is_err());
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("20G").is_ok());
        assert!(parse_count("18446744073709551616").is_err());
        let e = parse_u32("5G").unwrap_err();
        assert!(e.contains("4294967295"), "{e}");
        assert!(parse_share("-0.1").unwrap_err().contains("from 0 to 1"));
    }
}
