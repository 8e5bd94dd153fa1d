//! Load errors: every one names the file, the line, the offending text and what
//! was expected.

use std::fmt;

/// A malformed input line or an unreadable file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// File name as given on the command line (`-` for standard input).
    pub file: String,
    /// 1-based line number (0 when the error is not tied to a line).
    pub line: u64,
    /// The offending text, shortened for display.
    pub text: String,
    /// What is wrong and what was expected.
    pub problem: String,
}

const MAX_SHOWN: usize = 120;

impl LoadError {
    /// Build an error; `text` may be any bytes (non-UTF-8 is shown lossily).
    pub fn new(file: &str, line: u64, text: &[u8], problem: impl Into<String>) -> Self {
        let mut text = &text[..text.len().min(4 * MAX_SHOWN)];
        while let [rest @ .., b'\r' | b'\n'] = text {
            text = rest;
        }
        // Invalid UTF-8 shows as `\xNN` and control characters are escaped,
        // so the message stays one readable line on any terminal.
        let mut shown = String::new();
        let mut count = 0;
        'all: for chunk in text.utf8_chunks() {
            for c in chunk.valid().chars() {
                if count == MAX_SHOWN {
                    shown.push('…');
                    break 'all;
                }
                count += 1;
                if c.is_control() {
                    shown.extend(c.escape_default());
                } else {
                    shown.push(c);
                }
            }
            for b in chunk.invalid() {
                if count == MAX_SHOWN {
                    shown.push('…');
                    break 'all;
                }
                count += 1;
                shown.push_str(&format!("\\x{b:02X}"));
            }
        }
        LoadError {
            file: file.to_string(),
            line,
            text: shown,
            problem: problem.into(),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.problem)
        } else if self.text.is_empty() {
            write!(f, "{}:{}: {}", self.file, self.line, self.problem)
        } else {
            write!(
                f,
                "{}:{}: {} (in `{}`)",
                self.file, self.line, self.problem, self.text
            )
        }
    }
}

impl std::error::Error for LoadError {}
