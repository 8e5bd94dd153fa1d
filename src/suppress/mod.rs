//! ThreadSanitizer suppressions: a file of `TYPE:PATTERN` rules, one a line,
//! read as TSan reads it (sanitizer_common's suppression parser) and matched
//! against cprace's race and deadlock reports as TSan matches its own
//! (tsan_suppressions.cpp), so a project's existing file works unchanged.
//!
//! Parsing: leading spaces and tabs are skipped; blank lines and lines
//! starting with `#` are comments; trailing spaces, tabs and `\r` are cut;
//! the type is one TSan knows (`race`, `race_top`, `mutex`, `thread`,
//! `signal`, `called_from_lib`, `deadlock`) followed by `:`, the rest of
//! the line is the pattern ([`template`]), taken as written (TSan keeps a
//! space after the colon). TSan aborts on an unknown type; cprace reports
//! it (exit 2) with the file and line, and also refuses an empty pattern,
//! which TSan would take as matching every report of its type.
//!
//! What each type matches here is in [`apply`].

pub mod apply;
pub mod template;

use std::path::Path;

use crate::trace::LoadError;

pub use template::template_match;

/// A suppression type, as TSan names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `race:` any frame of a race's stacks, or the racy global.
    Race,
    /// `race_top:` the top frame of a race's stacks.
    RaceTop,
    /// `mutex:` TSan's mutex-misuse reports (none in cprace).
    Mutex,
    /// `thread:` TSan's thread-leak reports (none in cprace).
    Thread,
    /// `signal:` TSan's signal-unsafe-call reports (none in cprace).
    Signal,
    /// `called_from_lib:` accesses made on behalf of a library.
    CalledFromLib,
    /// `deadlock:` lock-order inversions and deadlocks.
    Deadlock,
}

impl Kind {
    /// Every type TSan accepts, in its order.
    pub const ALL: [Kind; 7] = [
        Kind::Race,
        Kind::RaceTop,
        Kind::Mutex,
        Kind::Thread,
        Kind::Signal,
        Kind::CalledFromLib,
        Kind::Deadlock,
    ];

    /// The name before the colon.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Race => "race",
            Kind::RaceTop => "race_top",
            Kind::Mutex => "mutex",
            Kind::Thread => "thread",
            Kind::Signal => "signal",
            Kind::CalledFromLib => "called_from_lib",
            Kind::Deadlock => "deadlock",
        }
    }
}

/// One rule of a suppressions file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its type.
    pub kind: Kind,
    /// Its template.
    pub pattern: String,
    /// Its line in the file (1-based).
    pub line: u64,
}

impl Rule {
    /// The rule as written: `race:foo`.
    pub fn text(&self) -> String {
        format!("{}:{}", self.kind.name(), self.pattern)
    }
}

/// The rules of one suppressions file, in the file's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Suppressions {
    /// The file they were read from.
    pub file: String,
    /// The rules.
    pub rules: Vec<Rule>,
}

impl Suppressions {
    /// Read and parse the file at `path`; a missing or unreadable file, an
    /// unknown type, a missing colon or an empty pattern is an error naming
    /// the file (and line).
    pub fn read(path: &Path) -> Result<Suppressions, LoadError> {
        let file = path.to_string_lossy().into_owned();
        let bytes = std::fs::read(path).map_err(|e| {
            LoadError::new(
                &file,
                0,
                b"",
                format!("cannot read the suppressions file: {e}"),
            )
        })?;
        Suppressions::parse(&file, &bytes)
    }

    /// Parse the text of a suppressions file named `file`.
    pub fn parse(file: &str, text: &[u8]) -> Result<Suppressions, LoadError> {
        let mut rules = Vec::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = i as u64 + 1;
            let err = |problem: String| LoadError::new(file, line, raw, problem);
            let Ok(s) = std::str::from_utf8(raw) else {
                return Err(err("not UTF-8 text".into()));
            };
            let s = s.trim_start_matches([' ', '\t']);
            if s.is_empty() || s.starts_with('#') {
                continue;
            }
            let s = s.trim_end_matches([' ', '\t', '\r']);
            if s.is_empty() {
                continue;
            }
            let Some((ty, pattern)) = s.split_once(':') else {
                return Err(err(format!(
                    "expected TYPE:PATTERN (missing `:`); types: {}",
                    type_list()
                )));
            };
            let Some(kind) = Kind::ALL.into_iter().find(|k| k.name() == ty) else {
                return Err(err(format!(
                    "unknown suppression type `{ty}`; ThreadSanitizer's types: {}",
                    type_list()
                )));
            };
            if pattern.is_empty() {
                return Err(err(format!(
                    "empty pattern after `{ty}:` (ThreadSanitizer would suppress every \
                     report of that type; write `{ty}:*` to mean that)"
                )));
            }
            rules.push(Rule {
                kind,
                pattern: pattern.to_string(),
                line,
            });
        }
        Ok(Suppressions {
            file: file.to_string(),
            rules,
        })
    }

    /// Whether any rule has type `kind`.
    pub fn has(&self, kind: Kind) -> bool {
        self.rules.iter().any(|r| r.kind == kind)
    }

    /// The first rule (in the file's order) of type `kind` whose template
    /// matches `s`, as TSan picks the rule it credits.
    pub fn find(&self, kind: Kind, s: &str) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| r.kind == kind && template_match(&r.pattern, s))
    }
}

fn type_list() -> String {
    Kind::ALL.map(Kind::name).join(", ")
}

/// The `suppressions` value of a `TSAN_OPTIONS` string, parsed as
/// sanitizer_common parses its flags: `key=value` pairs separated by spaces,
/// tabs, newlines, commas or colons, a value optionally in single or double
/// quotes (then it may hold separators); other keys are ignored, a later
/// `suppressions` overrides an earlier one. None when it names none (an
/// empty value included).
pub fn from_tsan_options(options: &str) -> Option<String> {
    let sep = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | ',' | ':');
    let mut rest = options;
    let mut found = None;
    loop {
        rest = rest.trim_start_matches(sep);
        if rest.is_empty() {
            return found.filter(|v: &String| !v.is_empty());
        }
        let key_end = rest
            .find(|c: char| c == '=' || sep(c))
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        rest = &rest[key_end..];
        let Some(after) = rest.strip_prefix('=') else {
            // A key without a value: TSan complains and stops; nothing
            // after it is read.
            return found.filter(|v| !v.is_empty());
        };
        let value;
        match after.chars().next() {
            Some(q @ ('\'' | '"')) => {
                let body = &after[1..];
                let end = body.find(q).unwrap_or(body.len());
                value = &body[..end];
                rest = body.get(end + 1..).unwrap_or("");
            }
            _ => {
                let end = after.find(sep).unwrap_or(after.len());
                value = &after[..end];
                rest = &after[end..];
            }
        }
        if key == "suppressions" {
            found = Some(value.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Suppressions, String> {
        Suppressions::parse("supp.txt", text.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn rules_comments_and_blank_lines() {
        let s = parse(
            "# a comment\n\n  race:foo\n\trace_top:^bar$  \r\ncalled_from_lib:libz.so\n\
             deadlock:lock_*\nthread:t\nmutex:m\nsignal:handler\n   # indented comment\n",
        )
        .unwrap();
        let got: Vec<(String, u64)> = s.rules.iter().map(|r| (r.text(), r.line)).collect();
        assert_eq!(
            got,
            [
                ("race:foo".to_string(), 3),
                ("race_top:^bar$".into(), 4),
                ("called_from_lib:libz.so".into(), 5),
                ("deadlock:lock_*".into(), 6),
                ("thread:t".into(), 7),
                ("mutex:m".into(), 8),
                ("signal:handler".into(), 9),
            ]
        );
        assert_eq!(s.find(Kind::Race, "xfoo"), Some(0));
        assert_eq!(s.find(Kind::RaceTop, "xbar"), None);
        assert_eq!(s.find(Kind::RaceTop, "bar"), Some(1));
    }

    #[test]
    fn a_space_after_the_colon_is_part_of_the_pattern() {
        let s = parse("race: foo\n").unwrap();
        assert_eq!(s.rules[0].pattern, " foo");
    }

    #[test]
    fn malformed_lines_name_file_line_and_problem() {
        let e = parse("race:ok\nraces:foo\n").unwrap_err();
        assert!(
            e.starts_with("supp.txt:2: unknown suppression type `races`"),
            "{e}"
        );
        let e = parse("# c\nfoo\n").unwrap_err();
        assert!(
            e.starts_with("supp.txt:2: expected TYPE:PATTERN (missing `:`)"),
            "{e}"
        );
        let e = parse("race:\n").unwrap_err();
        assert!(
            e.starts_with("supp.txt:1: empty pattern after `race:`"),
            "{e}"
        );
        let e = parse("\n\nrace:   \n").unwrap_err();
        assert!(e.starts_with("supp.txt:3: empty pattern"), "{e}");
        // Types other sanitizers know are not TSan's.
        let e = parse("leak:foo\n").unwrap_err();
        assert!(e.contains("unknown suppression type `leak`"), "{e}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Suppressions::read(Path::new("/nonexistent/supp.txt")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/supp.txt: cannot read the suppressions file"),
            "{e}"
        );
    }

    #[test]
    fn tsan_options_are_split_as_sanitizers_split_them() {
        let f = |s: &str| from_tsan_options(s);
        assert_eq!(f("suppressions=s.txt"), Some("s.txt".into()));
        assert_eq!(
            f("halt_on_error=1 suppressions=/a/s.txt,history_size=7"),
            Some("/a/s.txt".into())
        );
        assert_eq!(
            f("verbosity=1:suppressions=x:report_bugs=1"),
            Some("x".into())
        );
        assert_eq!(f("suppressions='a b.txt' x=1"), Some("a b.txt".into()));
        assert_eq!(f("suppressions=\"q:r\""), Some("q:r".into()));
        assert_eq!(f("suppressions=a suppressions=b"), Some("b".into()));
        assert_eq!(f("history_size=7"), None);
        assert_eq!(f("suppressions="), None);
        assert_eq!(f(""), None);
    }
}
