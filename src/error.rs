//! The errors a caller matches on. Everything else is an [`anyhow::Error`] carried in
//! [`Error::Other`]; front ends print any of them as one `wt-memory: …` line (`{:#}`), never as
//! Rust debug text.

/// Result of every [`crate::ops`] call and every [`crate::client::Client`] method.
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another process holds the project's store; nothing was done.
    #[error("lock timeout after {waited_secs}s: another wt-memory process is using this project's store{holder}; try again")]
    Busy { waited_secs: u64, holder: String },
    /// The store's vectors were written by another embedder than the one this process has.
    #[error("{0}")]
    EmbedderMismatch(String),
    /// An id, snapshot or todo that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A request that cannot be carried out as given: the message says what to change.
    #[error("{0}")]
    BadInput(String),
    /// `remember` got nothing storable (empty, whitespace, or only `<private>` spans).
    #[error("remember: nothing to store: {0}")]
    NothingToStore(&'static str),
    #[error("{0:#}")]
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Error {
    /// Recovers the typed errors that travelled through `anyhow` (the lock, the embedder check).
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<Error>() {
            Ok(typed) => typed,
            Err(e) => Error::Other(e),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Other(e.into())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Other(e.into())
    }
}

/// A [`Error::BadInput`] from anything printable.
pub fn bad_input(msg: impl Into<String>) -> Error {
    Error::BadInput(msg.into())
}
