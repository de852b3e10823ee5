//! The hook's log is the tools' one log file ([`crate::log`]).
pub use crate::log::*;
