//! Memories held for review (`wt-memory review`): listed, approved, or their source trusted. Only
//! the user answers a review: the MCP server offers none of these, so a held memory cannot ask
//! the agent to approve it (docs/security.md).

use super::memories::{change_one, checked_id};
use super::{Caller, Direct, Operation};
use serde::{Deserialize, Serialize};
use wt_memory_core::record::MemoryRecord;
use wt_memory_core::record::STANDING_TAG;
use wt_memory_core::store::Store;
use wt_memory_core::trust::{self, AUTHORISED, HELD_REASON, HELD_TAG, PROVENANCE, REVIEWED};
use wt_memory_foundation::error::{bad_input, not_found, other, Result};

/// The memories held for review, oldest first (at most `limit`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Held {
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The most held memories one answer lists.
pub const MAX_HELD_LISTED: usize = 1_000;

pub fn held(store: &Store, limit: usize) -> Result<Vec<MemoryRecord>> {
    let view = store.rank_view()?;
    let mut held: Vec<MemoryRecord> = view
        .rows_tagged(HELD_TAG)
        .iter()
        .map(|&i| view.records.record(i as usize))
        .collect();
    held.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    held.truncate(limit);
    Ok(held)
}

/// How many memories are held (doctor, metrics, SessionStart's notice): the view's tag count.
pub fn held_count(store: &Store) -> Result<usize> {
    Ok(store.rank_view()?.rows_tagged(HELD_TAG).len())
}

impl Operation for Held {
    const NAME: &'static str = "held";
    type Answer = Vec<MemoryRecord>;
    const FROM_VIEW: bool = true;
    fn validate(&self) -> Result<()> {
        match self.limit {
            Some(n) if n == 0 || n > MAX_HELD_LISTED => Err(bad_input(format!(
                "review: --limit must be between 1 and {MAX_HELD_LISTED}"
            ))),
            _ => Ok(()),
        }
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Vec<MemoryRecord>> {
        let limit = self.limit.unwrap_or(MAX_HELD_LISTED);
        direct.read(|s| held(s, limit))
    }
}

/// Approve one held memory: it is trusted from then on (injected like any other).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approve {
    pub id: String,
}

/// A memory approved (or one that was not held).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approved {
    pub id: String,
    /// It was held, and is not any more.
    pub was_held: bool,
}

/// The user approves memory `id` by its id: the hold goes (if it was held) and the memory speaks
/// for the user from now on ([`AUTHORISED`]: what it supplies passes the action gate).
pub fn approve(store: &Store, id: &str) -> Result<Option<Approved>> {
    release(store, id, true)
}

/// Take the hold off memory `id`: the tag and the reason go, the approval is recorded;
/// `authorise`: by the user's own word about this memory (not by trusting its source).
fn release(store: &Store, id: &str, authorise: bool) -> Result<Option<Approved>> {
    let Some(full) = super::memories::resolve_id(store, "review approve", id)? else {
        return Ok(None);
    };
    let Some(memory) = store.get(&full)? else {
        return Ok(None);
    };
    let record = MemoryRecord::from_memory(&memory);
    let was_held = record.has_tag(HELD_TAG);
    if !was_held && (!authorise || record.metadata.contains_key(AUTHORISED)) {
        return Ok(Some(Approved {
            id: full,
            was_held: false,
        }));
    }
    let mut updated = (*memory).clone();
    if authorise {
        updated
            .experience
            .metadata
            .insert(AUTHORISED.into(), format!("by the user {}", Store::now()));
    }
    if !was_held {
        store
            .replace_memory(&updated)
            .map_err(|e| other(format!("review approve failed, nothing changed: {e:#}")))?;
        return Ok(Some(Approved { id: full, was_held }));
    }
    updated.experience.tags.retain(|t| t != HELD_TAG);
    let metadata = &mut updated.experience.metadata;
    let was = metadata.remove(HELD_REASON).unwrap_or_default();
    metadata.insert(
        REVIEWED.into(),
        format!("approved {} (was held: {was})", Store::now()),
    );
    store
        .replace_memory(&updated)
        .map_err(|e| other(format!("review approve failed, nothing changed: {e:#}")))?;
    Ok(Some(Approved {
        id: full,
        was_held: true,
    }))
}

impl Operation for Approve {
    const NAME: &'static str = "approve";
    type Answer = Approved;
    fn validate(&self) -> Result<()> {
        checked_id("review approve", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Approved> {
        change_one(direct, "review approve", &self.id, |s, id| {
            approve(s, id)?.ok_or_else(|| {
                not_found(format!(
                    "review approve: no memory {id} (see `wt-memory review`)"
                ))
            })
        })
    }
}

/// Trust a teammate's sync source (`user/machine`): its memories held only because the source
/// was new are approved, and its later pulls are not held for that reason.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrustSource {
    pub source: String,
}

/// What trusting a source did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trusted {
    pub source: String,
    /// Its memories approved now.
    pub approved: usize,
    /// Its memories still held for what they say.
    pub still_held: usize,
}

pub fn trust_source(store: &Store, source: &str) -> Result<Trusted> {
    trust::add_trusted_source(store.dir(), source)
        .map_err(|e| other(format!("review --trust: {e:#}")))?;
    let from = trust::Provenance::Teammate(source.to_string()).as_str();
    let (mut approved, mut still_held) = (0, 0);
    for record in held(store, usize::MAX)? {
        if record.metadata.get(PROVENANCE) != Some(&from) {
            continue;
        }
        let only_the_source = record
            .metadata
            .get(HELD_REASON)
            .is_some_and(|r| r.split("; ").all(trust::is_untrusted_source_reason));
        if only_the_source {
            release(store, &record.id, false)?;
            approved += 1;
        } else {
            still_held += 1;
        }
    }
    Ok(Trusted {
        source: source.to_string(),
        approved,
        still_held,
    })
}

impl Operation for TrustSource {
    const NAME: &'static str = "trust_source";
    type Answer = Trusted;
    fn validate(&self) -> Result<()> {
        trust::check_source_name(&self.source).map_err(bad_input)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Trusted> {
        direct.write(|s| trust_source(s, &self.source))
    }
}

/// Make memory `id` a standing rule of the user's, or (`off`) no longer one: the user's own word
/// about it, so it speaks for them from then on (`wt-memory standing`; no MCP tool answers it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Standing {
    pub id: String,
    #[serde(default)]
    pub off: bool,
}

/// What `standing` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingSet {
    pub id: String,
    pub standing: bool,
}

impl Operation for Standing {
    const NAME: &'static str = "standing";
    type Answer = StandingSet;
    fn validate(&self) -> Result<()> {
        checked_id("standing", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<StandingSet> {
        change_one(direct, "standing", &self.id, |store, id| {
            let Some(full) = super::memories::resolve_id(store, "standing", id)? else {
                return Err(not_found(format!(
                    "standing: no memory {id} (see `wt-memory list`)"
                )));
            };
            let memory = store
                .get(&full)?
                .ok_or_else(|| not_found(format!("standing: no memory {id}")))?;
            let mut updated = (*memory).clone();
            let tags = &mut updated.experience.tags;
            tags.retain(|t| t != STANDING_TAG);
            if !self.off {
                tags.push(STANDING_TAG.into());
                updated
                    .experience
                    .metadata
                    .entry(AUTHORISED.into())
                    .or_insert_with(|| format!("by the user {}", Store::now()));
            }
            store
                .replace_memory(&updated)
                .map_err(|e| other(format!("standing failed, nothing changed: {e:#}")))?;
            Ok(StandingSet {
                id: full,
                standing: !self.off,
            })
        })
    }
}

wt_memory_core::shows_no_memory!(Approved, Trusted, StandingSet);

pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<Held>(),
    super::entry::<Approve>(),
    super::entry::<TrustSource>(),
    super::entry::<Standing>(),
];
