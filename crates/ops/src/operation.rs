//! What an operation is, once: the [`Operation`] trait. Each operation is one type, defined in its
//! group's file (`memories.rs`, `keys.rs`, `maintenance.rs`, `transfer.rs`, `todos.rs`,
//! `usage.rs`) beside its rules: its arguments are its fields, and the trait says what it answers,
//! its checks, what it embeds, whether the ranking view answers it, and how it runs on an open
//! store. Each group lists its operations in one `OPERATIONS` table; [`decode`] finds them by name.
//!
//! Everything that used to be written per operation follows from that: the name on the wire and in
//! `daemon status` ([`Operation::NAME`]), the request a client sends (`{"op": NAME, "args": …}`,
//! [`Request::to_wire`]) and the service decodes ([`decode`]), the dispatch ([`Request::run`]), and
//! the client's one typed call (`Client::run(op)` answers `op`'s own [`Operation::Answer`]).
//!
//! An answer stays typed inside a process ([`answer`], [`Reply::into_any`]); it becomes JSON only
//! where it leaves one (the service's socket, an MCP tool, `--json`). Its records are redacted
//! once, by [`answer`], whichever way the operation is carried out.

use super::{Caller, Direct};
use crate::metrics::Recorder;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::any::Any;
use wt_memory_core::record::Redact;
use wt_memory_foundation::error::{bad_input, Result};

/// One operation on a project's memory.
pub trait Operation: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// Its name, on the wire and in the service's times.
    const NAME: &'static str;
    /// What it answers.
    type Answer: Serialize + DeserializeOwned + Redact + Send + 'static;
    /// Does the answer depend on who asks (branch, directory)?
    const NEEDS_CALLER: bool = false;
    /// Can the ranking view answer it while the engine is still opening (a service's first
    /// seconds at 10^5 memories)? The others wait for the engine before they take their turn,
    /// so they do not hold these up meanwhile.
    const FROM_VIEW: bool = false;
    /// Does it report the store's integrity itself (so no separate warning goes with it)?
    const REPORTS_INTEGRITY: bool = false;
    /// The longest request line the service takes for it (a metrics record is bounded tighter
    /// than the protocol's line limit).
    const MAX_LINE: Option<usize> = None;

    /// The checks that need no store: run by the client before it sends, and by the service for
    /// a request from its socket (the boundary), never again by [`Operation::run`].
    fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// The texts it will have the store embed (a write's content, a query and its parts): a
    /// service embeds them ahead of the request's turn, while another request is served.
    fn texts_to_embed(&self) -> Vec<String> {
        Vec::new()
    }

    /// The embeddings of [`Operation::texts_to_embed`], in order, when the caller computed them
    /// already with this build's model (a hook in a project's service asking the personal
    /// store's): the service takes them instead of running the model again.
    fn embedded(&self) -> &[Vec<f32>] {
        &[]
    }

    /// Carry it out on `direct`'s store for `caller` (validated already). Its answer is shown
    /// through [`answer`], which redacts it.
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Self::Answer>;

    /// An answer that needs no turn on the store (a metrics record joins the service's buffer);
    /// `None`: it waits for its turn and [`Operation::run`]s.
    fn at_once(&self, _recorder: &Recorder) -> Option<Result<Self::Answer>> {
        None
    }
}

/// An answer on its way out of the operation that made it (redacted already): typed to a caller
/// in the same process ([`Reply::into_any`], read back by its own type), JSON to a socket.
pub trait Reply: Send {
    fn into_value(self: Box<Self>) -> Result<Value>;
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
    /// [`Redact::redact`], through the box.
    fn redact_answer(&mut self);
}

impl<T: Serialize + Redact + Send + 'static> Reply for T {
    fn into_value(self: Box<Self>) -> Result<Value> {
        Ok(serde_json::to_value(*self)?)
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
    fn redact_answer(&mut self) {
        Redact::redact(self)
    }
}

/// An answer just made by [`Request::run`], not yet fit to show: [`Made::shown`] redacts it. The
/// service calls it once the store is free for the next request, so a long list is redacted
/// outside its turn.
pub struct Made(Box<dyn Reply>);

impl Made {
    pub fn shown(mut self) -> Box<dyn Reply> {
        self.0.redact_answer();
        self.0
    }
}

/// Carry out `op` and give its answer as every caller sees it: its records redacted, here and only
/// here, whether the caller is in this process or across the socket.
pub fn answer<O: Operation>(op: &O, direct: &mut Direct, caller: &Caller) -> Result<O::Answer> {
    let mut answer = Operation::run(op, direct, caller)?;
    answer.redact();
    Ok(answer)
}

/// The answer a [`Reply`] made in this process holds, as `A` (the type the operation answers).
pub fn typed<A: 'static>(reply: Box<dyn Reply>) -> Result<A> {
    reply.into_any().downcast::<A>().map(|a| *a).map_err(|_| {
        wt_memory_foundation::error::other("an answer of another type than its operation's")
    })
}

pub trait Request: Send + Sync {
    fn name(&self) -> &'static str;
    fn validate(&self) -> Result<()>;
    fn needs_caller(&self) -> bool;
    fn texts_to_embed(&self) -> Vec<String>;
    fn embedded(&self) -> &[Vec<f32>];
    fn answered_from_view(&self) -> bool;
    fn reports_integrity(&self) -> bool;
    fn max_line(&self) -> Option<usize>;
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Made>;
    fn at_once(&self, recorder: &Recorder) -> Option<Result<Made>>;
    /// `{"op": name, "args": …}`, as [`decode`] reads it.
    fn to_wire(&self) -> Result<Value>;
    fn boxed(&self) -> Box<dyn Request>;
}

impl<O: Operation> Request for O {
    fn name(&self) -> &'static str {
        O::NAME
    }
    fn validate(&self) -> Result<()> {
        Operation::validate(self)
    }
    fn needs_caller(&self) -> bool {
        O::NEEDS_CALLER
    }
    fn texts_to_embed(&self) -> Vec<String> {
        Operation::texts_to_embed(self)
    }
    fn embedded(&self) -> &[Vec<f32>] {
        Operation::embedded(self)
    }
    fn answered_from_view(&self) -> bool {
        O::FROM_VIEW
    }
    fn reports_integrity(&self) -> bool {
        O::REPORTS_INTEGRITY
    }
    fn max_line(&self) -> Option<usize> {
        O::MAX_LINE
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Made> {
        Ok(Made(Box::new(Operation::run(self, direct, caller)?)))
    }
    fn at_once(&self, recorder: &Recorder) -> Option<Result<Made>> {
        Operation::at_once(self, recorder).map(|a| a.map(|a| Made(Box::new(a))))
    }
    fn to_wire(&self) -> Result<Value> {
        Ok(serde_json::json!({ "op": O::NAME, "args": serde_json::to_value(self)? }))
    }
    fn boxed(&self) -> Box<dyn Request> {
        Box::new(self.clone())
    }
}

/// An operation's entry in its group's `OPERATIONS` table.
pub struct Registered {
    name: &'static str,
    decode: fn(Value) -> serde_json::Result<Box<dyn Request>>,
}

/// The table entry of `O`.
pub const fn entry<O: Operation>() -> Registered {
    Registered {
        name: O::NAME,
        decode: decode_as::<O>,
    }
}

fn decode_as<O: Operation>(args: Value) -> serde_json::Result<Box<dyn Request>> {
    Ok(Box::new(serde_json::from_value::<O>(args)?))
}

/// Every operation, by name.
fn registered() -> impl Iterator<Item = &'static Registered> {
    [
        super::memories::OPERATIONS,
        super::keys::OPERATIONS,
        super::maintenance::OPERATIONS,
        super::transfer::OPERATIONS,
        super::todos::OPERATIONS,
        super::usage::OPERATIONS,
        super::review::OPERATIONS,
    ]
    .into_iter()
    .flatten()
}

/// The names of every operation (for tests and `daemon status`).
pub fn names() -> Vec<&'static str> {
    registered().map(|r| r.name).collect()
}

/// A request as [`Request::to_wire`] wrote it.
pub fn decode(wire: Value) -> Result<Box<dyn Request>> {
    let Value::Object(mut fields) = wire else {
        return Err(bad_input("a request is an object with \"op\" and \"args\""));
    };
    let name = match fields.remove("op") {
        Some(Value::String(name)) => name,
        _ => return Err(bad_input("a request names its operation in \"op\"")),
    };
    let entry = registered().find(|r| r.name == name).ok_or_else(|| {
        bad_input(format!(
            "unknown operation `{name}` (a client of another version?)"
        ))
    })?;
    let args = fields.remove("args").unwrap_or(Value::Null);
    (entry.decode)(args).map_err(|e| bad_input(format!("{name}: {e}")))
}

/// A request, as the socket carries it inside a call line.
pub struct Wire(pub Box<dyn Request>);

impl Serialize for Wire {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        self.0
            .to_wire()
            .map_err(serde::ser::Error::custom)?
            .serialize(ser)
    }
}

impl<'de> serde::Deserialize<'de> for Wire {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Wire, D::Error> {
        let value = Value::deserialize(de)?;
        decode(value).map(Wire).map_err(serde::de::Error::custom)
    }
}
