//! The errors a caller matches on. Everything else arrives as [`Error::Other`] with its message
//! (an `anyhow` chain, formatted once). Front ends print any of them as one `wt-memory: …` line,
//! never as Rust debug text. Errors cross the daemon's socket as they are (they serialise).

use serde::{Deserialize, Serialize};

/// Result of every [`wt_memory_ops`] call and every [`wt_memory_service::client::Client`] method.
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Error {
    /// Another process holds the project's store; nothing was done.
    #[error("lock timeout after {waited_secs}s: another wt-memory process is using this project's store{holder}; try again")]
    Busy { waited_secs: u64, holder: String },
    /// The store's vectors were written by another embedder than the one this process has.
    #[error("{message}")]
    EmbedderMismatch { message: String },
    /// An id, snapshot or todo that does not exist.
    #[error("{message}")]
    NotFound { message: String },
    /// A request that cannot be carried out as given: the message says what to change.
    #[error("{message}")]
    BadInput { message: String },
    /// `remember` got nothing storable (empty, whitespace, or only `<private>` spans).
    #[error("remember: nothing to store: {why}")]
    NothingToStore { why: String },
    /// A document `import` cannot use, in the previous implementation's words (`Invalid JSON: …`,
    /// `Unsupported version: 99 (only version 1 supported)`).
    #[error("{message}")]
    UnusableExport { message: String },
    /// The resident service went away or answered out of turn (a client starts over once).
    #[error("{message}")]
    Daemon { message: String },
    /// The resident service is there but did not answer in time (frozen, stuck, or busy past
    /// the caller's budget), or could not start: trying again at once would wait again.
    #[error("{message}")]
    Unanswered { message: String },
    #[error("{message}")]
    Other { message: String },
}

impl From<anyhow::Error> for Error {
    /// Recovers the typed errors that travelled through `anyhow` (the lock, the embedder check).
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<Error>() {
            Ok(typed) => typed,
            Err(e) => Error::Other {
                message: format!("{e:#}"),
            },
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        other(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        other(e)
    }
}

/// A [`Error::BadInput`] from anything printable.
pub fn bad_input(msg: impl Into<String>) -> Error {
    Error::BadInput {
        message: msg.into(),
    }
}

/// A [`Error::NotFound`].
pub fn not_found(msg: impl Into<String>) -> Error {
    Error::NotFound {
        message: msg.into(),
    }
}

/// An [`Error::Other`] from anything printable.
pub fn other(msg: impl std::fmt::Display) -> Error {
    Error::Other {
        message: msg.to_string(),
    }
}

impl Error {
    /// The same error with its message cut to `max` characters: what crosses the socket or
    /// reaches a terminal never quotes a huge input back.
    pub fn clipped(self, max: usize) -> Error {
        let clip = |m: String| wt_memory_base::wire::clip(&m, max);
        match self {
            Error::Busy {
                waited_secs,
                holder,
            } => Error::Busy {
                waited_secs,
                holder: clip(holder),
            },
            Error::EmbedderMismatch { message } => Error::EmbedderMismatch {
                message: clip(message),
            },
            Error::NotFound { message } => Error::NotFound {
                message: clip(message),
            },
            Error::BadInput { message } => Error::BadInput {
                message: clip(message),
            },
            Error::NothingToStore { why } => Error::NothingToStore { why: clip(why) },
            Error::UnusableExport { message } => Error::UnusableExport {
                message: clip(message),
            },
            Error::Daemon { message } => Error::Daemon {
                message: clip(message),
            },
            Error::Unanswered { message } => Error::Unanswered {
                message: clip(message),
            },
            Error::Other { message } => Error::Other {
                message: clip(message),
            },
        }
    }
}
