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
        let mut shown = String::from_utf8_lossy(text)
            .trim_end_matches(['\r', '\n'])
            .to_string();
        if shown.chars().count() > MAX_SHOWN {
            shown = shown.chars().take(MAX_SHOWN).collect::<String>() + "…";
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
