//! ThreadSanitizer's template matching (sanitizer_common's `TemplateMatch`),
//! reimplemented from its documented behaviour: a template is literal text
//! with `*` (any run of characters), a leading `^` (the match starts at the
//! string's start) and `$` (the match ends at the string's end).
//!
//! It is not a full glob matcher, and cprace keeps its quirks so a
//! suppressions file means what it means to TSan: each literal piece is
//! found at its *first* occurrence after the previous one (no
//! backtracking), so `foo$` does not match `foofoo` and `a*b$` does not
//! match `abxb`; a `$` right after a `*` matches whatever follows; the
//! empty string never matches; text after a `$` is never looked at.

/// Whether `templ` matches `s` as ThreadSanitizer's `TemplateMatch` decides.
pub fn template_match(templ: &str, s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    let (mut t, mut anchored) = match templ.strip_prefix('^') {
        Some(rest) => (rest, true),
        None => (templ, false),
    };
    let mut s = s;
    let mut after_star = false;
    while !t.is_empty() {
        if let Some(rest) = t.strip_prefix('*') {
            t = rest;
            anchored = false;
            after_star = true;
            continue;
        }
        if t.starts_with('$') {
            return s.is_empty() || after_star;
        }
        if s.is_empty() {
            return false;
        }
        let end = t.find(['*', '$']).unwrap_or(t.len());
        let piece = &t[..end];
        let Some(at) = s.find(piece) else {
            return false;
        };
        if anchored && at != 0 {
            return false;
        }
        s = &s[at + piece.len()..];
        t = &t[end..];
        anchored = false;
        after_star = false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::template_match as m;

    #[test]
    fn plain_text_matches_anywhere() {
        assert!(m("foo", "foo"));
        assert!(m("foo", "xfooy"));
        assert!(m("race.c", "/src/race.c"));
        assert!(!m("foo", "fo"));
        assert!(!m("foo", ""));
        assert!(!m("", ""));
        // An empty template matches every non-empty string, as in TSan.
        assert!(m("", "x"));
    }

    #[test]
    fn anchors_fix_the_ends() {
        assert!(m("^foo", "foobar"));
        assert!(!m("^foo", "xfoo"));
        assert!(m("foo$", "xfoo"));
        assert!(!m("foo$", "foox"));
        assert!(m("^foo$", "foo"));
        assert!(!m("^foo$", "foo2"));
        assert!(!m("^foo$", "afoo"));
        // First occurrence, no backtracking (TSan's behaviour).
        assert!(!m("foo$", "foofoo"));
        assert!(!m("^$", "x"));
    }

    #[test]
    fn stars_match_runs() {
        assert!(m("a*c", "abbbc"));
        assert!(m("a*c", "ac"));
        assert!(!m("a*c", "ca"));
        assert!(m("^std::*::push$", "std::vector<int>::push"));
        assert!(m("*", "anything"));
        assert!(m("^*x", "abx"));
        assert!(m("lib*.so", "/usr/lib/libz.so.1"));
        // `$` right after `*` accepts what follows.
        assert!(m("a*$", "abc"));
        // No backtracking: `b` is taken at its first occurrence.
        assert!(!m("a*b$", "abxb"));
        assert!(m("a*b", "abxb"));
    }
}
