//! Loss detection on the open store: the integrity record kept in step with every write, checked
//! at open and whenever the whole store is read (see [`wt_memory_foundation::integrity`]).

use super::*;

impl Store {
    /// Ids of every memory (a whole-store read).
    pub(super) fn ids(&self) -> anyhow::Result<Vec<String>> {
        Ok(self
            .ms()?
            .get_all_memories()
            .map_err(|e| anyhow::anyhow!("cannot read memories: {e:#}"))?
            .iter()
            .map(|m| m.id.0.to_string())
            .collect())
    }

    pub(super) fn integrity(&self) -> std::sync::MutexGuard<'_, Option<Record>> {
        self.integrity.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open-time check, cheap unless something happened: a store without a record gets one (one
    /// read of the store, once); new files in `storage/lost/` mean the engine has just repaired
    /// the store, so only then is the store counted against the record. A standing alert is
    /// queued as this process's warning.
    pub(super) fn check_at_open(&self) -> anyhow::Result<()> {
        let dir = self.dir().clone();
        let lost = integrity::lost_files(&dir);
        let Some(mut rec) = integrity::read(&dir) else {
            let ids = self.ids()?;
            let rec = self.rebaseline(&ids, lost)?;
            *self.integrity() = Some(rec);
            return Ok(());
        };
        let new: Vec<String> = lost
            .into_iter()
            .filter(|f| !rec.lost_seen.contains(f))
            .collect();
        if !new.is_empty() {
            let ids = self.ids()?;
            let mut alert = self.compare(&rec, &ids).unwrap_or_else(|| Alert {
                since: Store::now(),
                expected: rec.count,
                found: ids.len() as u64,
                ids_differ: false,
                lost_files: Vec::new(),
                missing_ids: Some(Vec::new()),
            });
            if let Some(previous) = rec.alert.take() {
                alert.since = previous.since;
                alert.lost_files = previous.lost_files;
            }
            alert.lost_files.extend(new.iter().cloned());
            rec.lost_seen.extend(new);
            self.raise(&mut rec, alert);
        }
        if let Some(a) = &rec.alert {
            integrity::set_warning(a.warning(&self.project.name));
        }
        *self.integrity() = Some(rec);
        Ok(())
    }

    /// A new record (and journal) for the store as it is now.
    pub(super) fn rebaseline(
        &self,
        ids: &[String],
        lost_seen: Vec<String>,
    ) -> anyhow::Result<Record> {
        let rec = Record::new(ids.iter().map(String::as_str), lost_seen);
        *self.recorded_ids.lock().unwrap_or_else(|e| e.into_inner()) = None;
        integrity::journal_reset(self.dir(), ids.iter().map(String::as_str))
            .context("cannot write the integrity journal")?;
        integrity::write(self.dir(), &rec).context("cannot write the integrity record")?;
        Ok(rec)
    }

    /// The store's ids against the record: an alert when recorded memories are missing (named
    /// when the journal can tell which), `None` when all are there.
    pub(super) fn compare(&self, rec: &Record, ids: &[String]) -> Option<Alert> {
        let found = ids.len() as u64;
        let digest = IdDigest::of(ids.iter().map(String::as_str));
        if found == rec.count && digest == rec.id_digest() {
            return None;
        }
        let missing_ids = integrity::journal_ids(self.dir(), rec).map(|expected| {
            let have: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            let mut v: Vec<String> = expected
                .into_iter()
                .filter(|id| !have.contains(id.as_str()))
                .collect();
            v.sort();
            v
        });
        let alert = Alert {
            since: Store::now(),
            expected: rec.count,
            found,
            ids_differ: true,
            lost_files: Vec::new(),
            missing_ids,
        };
        (alert.missing() > 0).then_some(alert)
    }

    /// Record a new alert: saved in the record, one line in the log, and this process's warning.
    pub(super) fn raise(&self, rec: &mut Record, alert: Alert) {
        integrity::log("ERROR", &alert.summary(&self.project.name));
        integrity::set_warning(alert.warning(&self.project.name));
        rec.alert = Some(alert);
        let _ = integrity::write(self.dir(), rec);
    }

    /// A whole-store read found these memories: another count than recorded is reconciled (free,
    /// since the caller has read the store anyway; the rest of the check runs only then).
    pub(super) fn note_count(&self, all: &[Arc<Memory>]) {
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else { return };
        if rec.alert.is_some() {
            return;
        }
        if all.len() as u64 != rec.count {
            let ids: Vec<String> = all.iter().map(|m| m.id.0.to_string()).collect();
            if let Err(e) = self.reconcile(rec, &ids) {
                integrity::log("WARN", &format!("{e:#}"));
            }
            return;
        }
        // Keep the journal short: once it has grown well past one line per memory, and the
        // store matches the record, rewrite it with the current ids.
        let journal_len = std::fs::metadata(self.dir().join(integrity::JOURNAL))
            .map(|m| m.len())
            .unwrap_or(0);
        if journal_len > 64 * (rec.count + 64) && all.len() as u64 == rec.count {
            let ids: Vec<String> = all.iter().map(|m| m.id.0.to_string()).collect();
            if IdDigest::of(ids.iter().map(String::as_str)) == rec.id_digest() {
                let _ = integrity::journal_reset(self.dir(), ids.iter().map(String::as_str));
            }
        }
    }

    /// One memory added or removed: keep the record in step (O(1): a line appended to the
    /// journal and a small atomic write). While memories are missing, a write of an id the record
    /// already holds (a lost memory being restored) leaves the record as it is.
    pub(super) fn record_write(&self, id: &str, added: bool) -> anyhow::Result<()> {
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else {
            return Ok(());
        };
        if rec.alert.is_some() {
            let mut cache = self.recorded_ids.lock().unwrap_or_else(|e| e.into_inner());
            let recorded = cache.get_or_insert_with(|| integrity::journal_ids(self.dir(), rec));
            if let Some(recorded) = recorded.as_mut() {
                if recorded.contains(id) == added {
                    return Ok(());
                }
                if added {
                    recorded.insert(id.to_string());
                } else {
                    recorded.remove(id);
                }
            }
        }
        rec.apply(id, added);
        integrity::journal_append(self.dir(), id, added)
            .context("cannot update the integrity journal")?;
        // Inside a batch an addition leaves the record to the batch's end: the journal already
        // holds the id, and a record behind the store reads as "more than recorded", never as a
        // loss. A removal is recorded at once, before the memory goes.
        if !added || !self.batching.load(std::sync::atomic::Ordering::SeqCst) {
            integrity::write(self.dir(), rec).context("cannot update the integrity record")?;
        }
        Ok(())
    }

    /// The one-line warning of a standing integrity alert (a daemon attaches it to every answer,
    /// as a process that opens the store prints it once).
    pub fn standing_warning(&self) -> Option<String> {
        self.integrity()
            .as_ref()
            .and_then(|rec| rec.alert.as_ref())
            .map(|a| a.warning(&self.project.name))
    }

    /// Count the store against its record (a whole-store read; `health`, `doctor`).
    /// A loss becomes a standing alert; returns the standing alert, if any.
    pub fn verify(&self) -> anyhow::Result<Option<Alert>> {
        let ids = self.ids()?;
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else {
            return Ok(None);
        };
        if let Some(mut alert) = rec.alert.clone() {
            let now = self.compare(rec, &ids);
            alert.expected = rec.count;
            alert.found = ids.len() as u64;
            alert.missing_ids = Some(Vec::new());
            alert.ids_differ = false;
            if let Some(n) = &now {
                alert.ids_differ = n.ids_differ;
                alert.missing_ids = n.missing_ids.clone();
            }
            rec.alert = Some(alert.clone());
            let _ = integrity::write(self.dir(), rec);
            return Ok(Some(alert));
        }
        self.reconcile(rec, &ids)
    }

    /// The store's ids (a whole read) against a record with no standing alert: a loss is raised
    /// and returned. More than recorded is no loss (a process killed between the engine's write
    /// and the record's), but while the record lags, every saved ranking view looks unsound and is
    /// rebuilt: the record is renewed.
    fn reconcile(&self, rec: &mut Record, ids: &[String]) -> anyhow::Result<Option<Alert>> {
        if let Some(alert) = self.compare(rec, ids) {
            self.raise(rec, alert.clone());
            return Ok(Some(alert));
        }
        let found = ids.len() as u64;
        if found != rec.count || IdDigest::of(ids.iter().map(String::as_str)) != rec.id_digest() {
            integrity::log(
                "INFO",
                &format!(
                    "the store holds {found} memories, its integrity record {} (a write the record missed); record renewed",
                    rec.count
                ),
            );
            *rec = self.rebaseline(ids, rec.lost_seen.clone())?;
        }
        Ok(None)
    }
}
