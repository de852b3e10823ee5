//! The tools' log file; see [`wt_memory_base::log`] (the hook's front writes it too).

pub use wt_memory_base::log::*;
