//! A memory's retrieval keys: set by its writer, edited by hand, learned from the prompts whose
//! answers cited it, and unlearned.

use super::memories::{change_one, resolve_id};
use super::take_snapshot;
use super::{Caller, Direct, Operation};
use serde::{Deserialize, Serialize};
use wt_memory_core::record::{self, MemoryRecord};
use wt_memory_core::store::Store;
use wt_memory_foundation::error::{bad_input, not_found, other, Result};
use wt_memory_foundation::hygiene;

/// Replace the keys a writer gave a memory (an empty list removes them), keeping those learned
/// from use; returns the updated record.
pub fn set_keys(store: &Store, id: &str, keys: &[String]) -> Result<MemoryRecord> {
    let memory = resolve_id(store, "set-keys", id)?
        .and_then(|full| store.get(&full).ok().flatten())
        .ok_or_else(|| {
            not_found(format!(
                "no memory {id}; nothing changed (see `wt-memory list`)"
            ))
        })?;
    // Keys learned from use stay, after the writer's (which come first if all cannot).
    let learned: Vec<String> = MemoryRecord::from_memory(&memory)
        .learned_keys()
        .into_iter()
        .map(str::to_string)
        .collect();
    let keys: Vec<String> = keys.iter().cloned().chain(learned).collect();
    store
        .write_keys(&memory, &keys)
        .map_err(|e| other(format!("set-keys failed, nothing changed: {e:#}")))?;
    let updated = store
        .get(&memory.id.0.to_string())?
        .ok_or_else(|| other("the memory vanished while its keys were written"))?;
    Ok(MemoryRecord::from_memory(&updated))
}

/// What [`learn_key`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    pub id: String,
    /// The key as stored, when it was added (None: the memory had it already, or no room).
    pub key: Option<String>,
    /// The learned key it replaced, when the memory already had [`record::MAX_LEARNED_KEYS`].
    pub replaced: Option<String>,
}

/// Give memory `id` the prompt it answered as a retrieval key, learned from use: the agent cited
/// the memory in its answer to `prompt` (the Stop hook). A memory keeps at most
/// [`record::MAX_LEARNED_KEYS`] of these, the newest; they never displace keys a writer gave,
/// and a prompt that the write path would change (it holds a secret or a `<private>` span) is
/// not learned.
pub fn learn_key(store: &Store, id: &str, prompt: &str) -> Result<Learned> {
    let memory = resolve_id(store, "learn-key", id)?
        .and_then(|full| store.get(&full).ok().flatten())
        .ok_or_else(|| not_found(format!("no memory {id}; nothing learned")))?;
    let full_id = memory.id.0.to_string();
    let unchanged = || Learned {
        id: full_id.clone(),
        key: None,
        replaced: None,
    };
    let Some(key) = learnable_key(prompt) else {
        return Ok(unchanged());
    };
    let current = MemoryRecord::from_memory(&memory);
    let mut keys: Vec<String> = current.keys().into_iter().map(str::to_string).collect();
    let mut learned: Vec<String> = current
        .learned_keys()
        .into_iter()
        .map(str::to_string)
        .collect();
    if let Some(k) = keys.iter().find(|k| record::same_key(k, &key)).cloned() {
        // Asked again: a learned key becomes the newest (the last to be replaced); a writer's
        // key is left as it is.
        if learned.last() == Some(&k) || !learned.contains(&k) {
            return Ok(unchanged());
        }
        learned.retain(|l| *l != k);
        learned.push(k);
        write_learned(store, &memory, &keys, &learned)?;
        return Ok(unchanged());
    }
    let mut replaced = None;
    if learned.len() >= record::MAX_LEARNED_KEYS || keys.len() >= record::MAX_KEYS {
        // Room is made from the oldest learned key only: a writer's keys stay.
        if learned.is_empty() {
            return Ok(unchanged());
        }
        let oldest = learned.remove(0);
        keys.retain(|k| *k != oldest);
        replaced = Some(oldest);
    }
    keys.push(key.clone());
    learned.push(key.clone());
    write_learned(store, &memory, &keys, &learned)?;
    Ok(Learned {
        id: full_id,
        key: Some(key),
        replaced,
    })
}

/// The key `prompt` would be learned as: whitespace collapsed, cut to [`record::KEY_CHARS`];
/// None when the write path would change the whole prompt (it holds a secret or a `<private>`
/// span), so neither the store nor the spool ever holds one.
pub fn learnable_key(prompt: &str) -> Option<String> {
    let collapsed = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() || hygiene::clean_content(&collapsed) != collapsed {
        return None;
    }
    record::clean_keys(&[collapsed]).pop()
}

/// Store `keys`, of which `learned` were learned from use (oldest first), on `memory`.
fn write_learned(
    store: &Store,
    memory: &shodh_memory::memory::Memory,
    keys: &[String],
    learned: &[String],
) -> Result<()> {
    let mut updated = memory.clone();
    updated
        .experience
        .metadata
        .insert(record::LEARNED_KEYS.to_string(), learned.join("\n"));
    store
        .write_keys(&updated, keys)
        .map_err(|e| other(format!("learn-key failed, nothing changed: {e:#}")))
}

/// Add and remove a memory's retrieval keys by hand (`wt-memory keys ID --add/--remove`): a
/// question the memory should answer, in the asker's words, or a key that finds it wrongly.
/// Added keys are the writer's (a learned key added again becomes one); either list may name
/// learned keys to remove. Refused, nothing changed, when a key to remove is not there or the
/// writer's keys would pass [`record::MAX_KEYS`]. Returns the memory as stored.
pub fn edit_keys(
    store: &Store,
    id: &str,
    add: &[String],
    remove: &[String],
) -> Result<MemoryRecord> {
    let memory = resolve_id(store, "keys", id)?
        .and_then(|full| store.get(&full).ok().flatten())
        .ok_or_else(|| not_found(format!("no memory {id}; nothing changed")))?;
    let current = MemoryRecord::from_memory(&memory);
    let mut learned: Vec<String> = current
        .learned_keys()
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut written: Vec<String> = current
        .written_keys()
        .into_iter()
        .map(str::to_string)
        .collect();
    let same = record::same_key;
    for r in remove {
        let before = written.len() + learned.len();
        written.retain(|k| !same(k, r));
        learned.retain(|k| !same(k, r));
        if written.len() + learned.len() == before {
            return Err(bad_input(format!(
                "memory {} has no key \"{}\"; nothing changed (its keys: `wt-memory keys {}`)",
                current.id,
                hygiene::truncate_chars(r, 80),
                record::short_id(&current.id)
            )));
        }
    }
    for k in record::clean_keys(add) {
        learned.retain(|l| !same(l, &k));
        if !written.iter().any(|w| same(w, &k)) {
            written.push(k);
        }
    }
    if written.len() > record::MAX_KEYS {
        return Err(bad_input(format!(
            "a memory holds at most {} keys and {} would have {}; nothing changed (remove one with --remove)",
            record::MAX_KEYS,
            current.id,
            written.len()
        )));
    }
    if !remove.is_empty() {
        take_snapshot(store, "keys")?;
    }
    let keys: Vec<String> = written.iter().chain(&learned).cloned().collect();
    write_learned(store, &memory, &keys, &learned)?;
    let updated = store
        .get(&memory.id.0.to_string())?
        .ok_or_else(|| other("the memory vanished while its keys were written"))?;
    Ok(MemoryRecord::from_memory(&updated))
}

/// What [`unlearn`] removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Unlearned {
    pub memories: usize,
    pub keys: usize,
}

/// Remove the keys learned from use from memory `id`, or from every memory (`None`); the keys a
/// writer gave stay. An undo snapshot is taken first when anything is to be removed.
pub fn unlearn(store: &Store, id: Option<&str>) -> Result<Unlearned> {
    let records = match id {
        Some(id) => {
            let found = resolve_id(store, "unlearn", id)?
                .and_then(|full| store.get(&full).ok().flatten())
                .ok_or_else(|| not_found(format!("no memory {id}; nothing changed")))?;
            vec![MemoryRecord::from_memory(&found)]
        }
        None => store.records()?,
    };
    let learning: Vec<&MemoryRecord> = records
        .iter()
        .filter(|r| !r.learned_keys().is_empty())
        .collect();
    let mut done = Unlearned::default();
    if learning.is_empty() {
        return Ok(done);
    }
    take_snapshot(store, "unlearn")?;
    for r in learning {
        let learned = r.learned_keys();
        let kept: Vec<String> = r.written_keys().into_iter().map(str::to_string).collect();
        let Some(memory) = store.get(&r.id)? else {
            continue; // forgotten meanwhile
        };
        store
            .write_keys(&memory, &kept)
            .map_err(|e| other(format!("unlearn: {} keeps its keys: {e:#}", r.id)))?;
        done.memories += 1;
        done.keys += learned.len();
    }
    Ok(done)
}

/// The operations on keys.
pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<SetKeys>(),
    super::entry::<LearnKey>(),
    super::entry::<EditKeys>(),
    super::entry::<Unlearn>(),
];

/// Replace one memory's retrieval keys (`enrich`); answers its record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetKeys {
    pub id: String,
    pub keys: Vec<String>,
}

impl Operation for SetKeys {
    const NAME: &'static str = "set_keys";
    type Answer = MemoryRecord;
    fn validate(&self) -> Result<()> {
        super::checked_id("set-keys", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<MemoryRecord> {
        change_one(direct, "set-keys", &self.id, |s, id| {
            set_keys(s, id, &self.keys)
        })
    }
}

/// Give a memory the prompt whose answer cited it as a learned key (the Stop hook).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LearnKey {
    pub id: String,
    pub prompt: String,
}

impl Operation for LearnKey {
    const NAME: &'static str = "learn_key";
    type Answer = Learned;
    fn validate(&self) -> Result<()> {
        super::checked_id("learn-key", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Learned> {
        change_one(direct, "learn-key", &self.id, |s, id| {
            learn_key(s, id, &self.prompt)
        })
    }
}

/// Add and remove one memory's retrieval keys by hand; answers its record. Its arguments are the
/// command line's (`wt-memory keys ID --add KEY --remove KEY`) and the MCP tool's (`edit_keys`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, clap::Args, schemars::JsonSchema)]
pub struct EditKeys {
    /// The memory's id (full, or a unique prefix of 8+ characters).
    pub id: String,
    /// Keys to add: questions it answers, files, commands or identifiers it is about.
    #[serde(default)]
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub add: Vec<String>,
    /// Keys to remove, as listed with the memory.
    #[serde(default)]
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub remove: Vec<String>,
}

impl Operation for EditKeys {
    const NAME: &'static str = "edit_keys";
    type Answer = MemoryRecord;
    fn validate(&self) -> Result<()> {
        super::checked_id("keys", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<MemoryRecord> {
        change_one(direct, "keys", &self.id, |s, id| {
            edit_keys(s, id, &self.add, &self.remove)
        })
    }
}

/// Remove the keys learned from use from one memory, or from every memory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Unlearn {
    pub id: Option<String>,
}

impl Operation for Unlearn {
    const NAME: &'static str = "unlearn";
    type Answer = Unlearned;
    fn validate(&self) -> Result<()> {
        match &self.id {
            Some(id) => super::checked_id("unlearn", id).map(drop),
            None => Ok(()),
        }
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Unlearned> {
        let id = (self.id.as_deref())
            .map(|id| super::checked_id("unlearn", id))
            .transpose()?;
        Ok(direct
            .change(|s| unlearn(s, id.as_deref()))?
            .unwrap_or_default())
    }
}

wt_memory_core::shows_no_memory!(Learned, Unlearned);
