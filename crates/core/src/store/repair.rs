//! `wt-memory repair`: the derived indexes set aside and rebuilt, the store counted against its
//! record.

use super::*;

/// What `wt-memory repair` did and found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepairReport {
    /// Indexes set aside and rebuilt by the engine.
    pub rebuilt: Vec<String>,
    pub found: u64,
    /// Memories the integrity record expected.
    pub expected: u64,
    /// Recorded memories missing (accepted as lost with `accept_loss`).
    pub missing: u64,
    pub vector_index_ok: bool,
    /// The alert standing before the repair.
    pub previous_alert: Option<Alert>,
    /// The alert still standing (memories missing and not accepted).
    pub alert: Option<Alert>,
}

impl Store {
    /// `wt-memory repair`: set the derived indexes aside (the lexical BM25 index and the vector
    /// index), reopen so the engine rebuilds both from the stored memories, and count the store
    /// against its record. The alert is cleared when no recorded memory is missing (restored, or
    /// never lost), or with `accept_loss` (the store's current contents become the record).
    pub fn repair(project: &Project, accept_loss: bool) -> anyhow::Result<(Store, RepairReport)> {
        let lock = ProjectLock::acquire(&lock::store_lock_path(project), lock_wait())?;
        let dir = &project.store_dir;
        let aside = dir.join(format!("repair-{}", Utc::now().format("%Y%m%dT%H%M%S%.3f")));
        let mut rebuilt = Vec::new();
        for (sub, what) in [
            (BM25_DIR, "lexical index (bm25_index)"),
            (VECTOR_DIR, "vector index (vector_index)"),
        ] {
            if dir.join(sub).exists() {
                std::fs::create_dir_all(&aside)?;
                std::fs::rename(dir.join(sub), aside.join(sub))
                    .with_context(|| format!("cannot move {sub} aside"))?;
                rebuilt.push(what.to_string());
            }
        }
        let store = Self::open_locked(project, lock).with_context(|| {
            format!(
                "the store does not open even without its indexes (they are in {})",
                aside.display()
            )
        })?;
        let _ = std::fs::remove_dir_all(&aside);
        // What the saved ranking view holds is rebuilt from the repaired store.
        super::view_file::discard(&super::view_file::dir_for(store.dir()));
        let ids = store.ids()?;
        let vector_ok = store
            .ms()?
            .verify_index_integrity()
            .map(|r| r.orphaned_count == 0)
            .unwrap_or(false);
        let mut guard = store.integrity();
        let rec = match guard.take() {
            Some(r) => r,
            None => store.rebaseline(&ids, integrity::lost_files(store.dir()))?,
        };
        let expected = rec.count;
        let previous = rec.alert.clone();
        let missing = store.compare(&rec, &ids);
        let cleared = missing.is_none() || accept_loss;
        let rec = if cleared {
            integrity::take_warning();
            store.rebaseline(&ids, integrity::lost_files(store.dir()))?
        } else {
            let mut rec = rec;
            let mut alert = missing.clone().expect("not cleared");
            if let Some(p) = &previous {
                alert.since = p.since.clone();
                alert.lost_files = p.lost_files.clone();
            }
            rec.alert = Some(alert);
            integrity::write(store.dir(), &rec).context("cannot write the integrity record")?;
            rec
        };
        let alert = rec.alert.clone();
        *guard = Some(rec);
        drop(guard);
        let report = RepairReport {
            rebuilt,
            found: ids.len() as u64,
            expected,
            missing: missing.as_ref().map_or(0, Alert::missing),
            vector_index_ok: vector_ok,
            previous_alert: previous,
            alert,
        };
        Ok((store, report))
    }
}

crate::shows_no_memory!(RepairReport);
