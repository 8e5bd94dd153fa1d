//! The library's error: why an operation failed, and the exit code that ends
//! a command failing that way.

use std::fmt;
use std::io;

use crate::trace::LoadError;

/// Why an operation of the library failed.
#[derive(Debug)]
pub enum Error {
    /// The request cannot be carried out as asked: options that conflict, an
    /// engine the relation does not have, a trace too large for a reference
    /// engine, an event id not in the trace, a name the output format cannot
    /// hold.
    Usage(String),
    /// A trace could not be read: the file, line, text and problem.
    Load(LoadError),
    /// Two engines computing the same relation disagree (the message names
    /// the first event they differ on).
    EnginesDisagree(String),
    /// Reading or writing a file or stream failed; `context` says what was
    /// being done (`cannot write out.csv`).
    Io {
        /// What was being done, when known.
        context: Option<String>,
        /// The failure.
        source: io::Error,
    },
}

/// A result whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The exit code of a command failing this way: 3 when engines disagree,
    /// else 2 (bad input or usage).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::EnginesDisagree(_) => 3,
            _ => 2,
        }
    }

    /// Whether this is a write to a pipe whose reader has gone: the reader's
    /// choice, not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if io_broken_pipe(source))
    }

    /// An I/O failure while doing `context`, for `map_err`.
    pub fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io {
            context: Some(context),
            source,
        }
    }
}

/// Whether `e` (or an error it wraps) is a write to a closed pipe.
pub(crate) fn io_broken_pipe(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return true;
    }
    // csv and others wrap the io::Error they got in a new one.
    let inner = e.get_ref();
    inner.is_some_and(|i| {
        i.downcast_ref::<io::Error>().is_some_and(io_broken_pipe)
            || i.downcast_ref::<csv::Error>()
                .is_some_and(|c| matches!(c.kind(), csv::ErrorKind::Io(io) if io_broken_pipe(io)))
    })
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::EnginesDisagree(m) => f.write_str(m),
            Error::Load(e) => e.fmt(f),
            Error::Io {
                context: Some(c), ..
            } => f.write_str(c),
            Error::Io {
                context: None,
                source,
            } => source.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Usage(_) | Error::EnginesDisagree(_) => None,
            // The load error is the message itself; its cause follows it.
            Error::Load(e) => e.source(),
            Error::Io {
                context: Some(_),
                source,
            } => Some(source),
            Error::Io {
                context: None,
                source,
            } => source.source(),
        }
    }
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        Error::Load(e)
    }
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Io {
            context: None,
            source,
        }
    }
}
