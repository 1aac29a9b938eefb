//! Errors of the core. The bindings map each variant to a `foldlog` Python exception.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Damage before the end of a log: valid events follow it. `line` is 1-based.
    Corrupt { line: usize, message: String },
    /// The first line is neither a header nor an event: the file is not a log (never cut).
    NotALog { line: usize, message: String },
    /// Written by a newer foldlog (header version or a required event type we do not know).
    UnsupportedFormat { line: usize, message: String },
    /// An event or message that cannot be recorded, or a log that breaks a rule.
    InvalidEvent { message: String },
    /// I/O of a store. `errno` is the OS error behind it, when there is one (ENOSPC, EROFS, …).
    Storage { message: String, errno: Option<i32> },
    /// Another writer holds the session.
    Locked { holder: String, message: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidEvent {
            message: message.into(),
        }
    }
    pub fn storage(message: impl Into<String>) -> Self {
        Error::Storage {
            message: message.into(),
            errno: None,
        }
    }
    /// A storage error caused by an OS error: keeps its errno so callers can tell a full disk
    /// from a read-only one.
    pub fn storage_io(message: impl Into<String>, cause: &std::io::Error) -> Self {
        Error::Storage {
            message: message.into(),
            errno: cause.raw_os_error(),
        }
    }
    /// The same error, now naming the (1-based) line it was found on.
    pub fn at_line(self, line: usize) -> Self {
        match self {
            Error::InvalidEvent { message } => Error::Corrupt { line, message },
            Error::UnsupportedFormat { message, .. } => Error::UnsupportedFormat { line, message },
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Corrupt { line, message } => write!(f, "corrupt log at line {line}: {message}"),
            Error::NotALog { message, .. } => {
                write!(f, "not a foldlog log (left as it is): {message}")
            }
            Error::UnsupportedFormat { line, message } => {
                write!(f, "newer format at line {line}: {message}")
            }
            Error::InvalidEvent { message } => write!(f, "{message}"),
            Error::Storage { message, .. } => write!(f, "{message}"),
            Error::Locked { message, .. } => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for Error {}
