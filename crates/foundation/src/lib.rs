//! The pieces of wt-memory that need no store and no engine, shared by the store and the fronts:
//! the error every operation answers ([`error`]), content hygiene and redaction ([`hygiene`],
//! [`redact`]), project rules ([`rules`]), the store lock ([`lock`]) and its integrity record
//! ([`integrity`]), child processes ([`child`], [`llm`]), recorded failures ([`failure`]), the
//! plugin's files ([`plugin`]) and the model's download ([`setup`]).
//!
//! It does not link the engine, so a first build compiles it beside the engine's C++.

pub mod child;
pub mod error;
pub mod failure;
pub mod gate;
pub mod hidden;
pub mod hosts;
pub mod hygiene;
pub mod integrity;
pub mod letters;
pub mod llm;
pub mod lock;
pub mod plugin;
pub mod redact;
pub mod rules;
pub mod setup;
pub mod trust;
