//! The ranking view's records, packed: each memory's record in one allocation of its bytes
//! instead of a [`MemoryRecord`] of a dozen strings, a tag list and a metadata tree (packed, a
//! record takes a fraction of their bytes; measured: docs/performance.md, "2026-11-27, evening:
//! memory that fits (10^5, fourth session)").
//!
//! Ranking reads a few fields of every memory (its id, tags, importance, date) and whole records
//! only for its candidates and answers, so the fields are read in place ([`Packed`]) and a record
//! is unpacked ([`Packed::record`]) only when one is needed. The content, a large part of a
//! record's bytes (measured: the same section), is not even resident for the memories loaded from
//! the saved view: it is read from that file (the one checked at load, held open, so a later save
//! that replaces it changes nothing) when asked for: for the few records a query answers with, not
//! for its candidates.
//!
//! Layout: importance (f32) and access count (u32), little-endian, a flags byte, then
//! length-prefixed UTF-8 texts (LEB128 lengths): id, type, created, last accessed, content; the
//! tags, the entities and the metadata pairs, each list after its count. A record whose content
//! stays in the file has, in the content's place, the content's offset in the file and its length.

use crate::record::MemoryRecord;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::sync::Arc;

/// Every memory's packed record, row `i` for memory `i` of the view.
#[derive(Clone, Default)]
pub struct Records {
    rows: Vec<Box<[u8]>>,
    /// The saved view that rows loaded from it read their content from.
    file: Option<Arc<File>>,
}

/// One packed record, read in place.
#[derive(Clone, Copy)]
pub struct Packed<'a> {
    bytes: &'a [u8],
    file: Option<&'a File>,
}

const FIXED: usize = 9;
const COMPRESSED: u8 = 1;
const FAILURE: u8 = 2;
const ANOMALY: u8 = 4;
/// The content is in the saved view (its offset and length where the text would be).
const IN_FILE: u8 = 8;

impl Records {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn get(&self, i: usize) -> Packed<'_> {
        Packed {
            bytes: &self.rows[i],
            file: self.file.as_deref(),
        }
    }

    /// Memory `i`'s whole record.
    pub fn record(&self, i: usize) -> MemoryRecord {
        self.get(i).record()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Packed<'_>> + ExactSizeIterator {
        let file = self.file.as_deref();
        self.rows.iter().map(move |bytes| Packed { bytes, file })
    }

    /// The row of memory `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.iter().position(|p| p.id() == id)
    }

    pub fn push(&mut self, record: &MemoryRecord) {
        self.rows.push(pack(record));
    }

    pub fn reserve_exact(&mut self, n: usize) {
        self.rows.reserve_exact(n);
    }

    pub fn remove(&mut self, i: usize) {
        self.rows.remove(i);
    }

    /// Row `i`'s packed bytes with the content in place, as the view file keeps them.
    pub(super) fn bytes(&self, i: usize) -> Cow<'_, [u8]> {
        let bytes = &self.rows[i];
        if bytes[8] & IN_FILE == 0 {
            return Cow::Borrowed(bytes);
        }
        Cow::Owned(pack(&self.record(i)).into())
    }

    /// From here on, rows pushed with [`Records::push_from_file`] read their content from `file`.
    pub(super) fn read_content_from(&mut self, file: File) {
        self.file = Some(Arc::new(file));
    }

    /// Append a record read back from the view file (at byte `at` of it), after checking that it
    /// is a whole record; its content stays in the file when one is attached.
    pub(super) fn push_from_file(&mut self, bytes: &[u8], at: u64) -> Option<()> {
        check(bytes)?;
        if self.file.is_none() {
            self.rows.push(bytes.into());
            return Some(());
        }
        let mut t = Texts::of(bytes);
        t.skip(CONTENT)?;
        let slot = t.at;
        let len = t.count()?;
        let (start, end) = (t.at, t.at + len);
        let mut row = Vec::with_capacity(bytes.len() - len + 10);
        row.extend_from_slice(&bytes[..slot]);
        row[8] |= IN_FILE;
        write_count(&mut row, at as usize + start);
        write_count(&mut row, len);
        row.extend_from_slice(&bytes[end..]);
        self.rows.push(row.into_boxed_slice());
        Some(())
    }
}

/// The fields after the fixed part, in order, as a cursor over the texts.
struct Texts<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Texts<'a> {
    fn of(bytes: &'a [u8]) -> Self {
        Texts {
            bytes,
            at: FIXED.min(bytes.len()),
        }
    }

    fn count(&mut self) -> Option<usize> {
        let mut n = 0usize;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            n |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn text(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw()?).ok()
    }

    /// The next text's bytes, unchecked (comparing needs no UTF-8 check).
    fn raw(&mut self) -> Option<&'a [u8]> {
        let n = self.count()?;
        let end = self.at.checked_add(n)?;
        let raw = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(raw)
    }

    fn skip(&mut self, texts: usize) -> Option<()> {
        for _ in 0..texts {
            let n = self.count()?;
            self.at = self.at.checked_add(n).filter(|&e| e <= self.bytes.len())?;
        }
        Some(())
    }

    /// Skip a counted list of `per_item` texts each.
    fn skip_list(&mut self, per_item: usize) -> Option<()> {
        let n = self.count()?;
        self.skip(n.checked_mul(per_item)?)
    }

    /// A counted list of `per_item` texts each, read whole (empty when damaged).
    fn strings(&mut self, per_item: usize) -> Vec<String> {
        let n = self.count().unwrap_or(0).saturating_mul(per_item);
        (0..n)
            .map_while(|_| self.text().map(String::from))
            .collect()
    }

    fn list(&mut self) -> Option<ListOf<'a>> {
        let n = self.count()?;
        Some(ListOf {
            texts: Texts {
                bytes: self.bytes,
                at: self.at,
            },
            left: n,
        })
    }
}

/// The texts of a counted list, in place.
struct ListOf<'a> {
    texts: Texts<'a>,
    left: usize,
}

impl<'a> Iterator for ListOf<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.texts.text()
    }
}

/// The places of the texts before the lists (the content's may hold its place in the file).
const ID: usize = 0;
const TYPE: usize = 1;
const CREATED: usize = 2;
const ACCESSED: usize = 3;
const CONTENT: usize = 4;

impl<'a> Packed<'a> {
    fn nth_text(&self, n: usize) -> &'a str {
        let mut t = Texts::of(self.bytes);
        t.skip(n).and_then(|_| t.text()).unwrap_or_default()
    }

    fn content_in_file(&self) -> bool {
        self.bytes[8] & IN_FILE != 0
    }

    /// A cursor just past the content: at the tags.
    fn at_tags(&self) -> Texts<'a> {
        let mut t = Texts::of(self.bytes);
        let _ = t.skip(CONTENT);
        if self.content_in_file() {
            let _ = (t.count(), t.count());
        } else {
            let _ = t.skip(1);
        }
        t
    }

    pub fn id(&self) -> &'a str {
        self.nth_text(ID)
    }

    pub fn experience_type(&self) -> &'a str {
        self.nth_text(TYPE)
    }

    pub fn created_at(&self) -> &'a str {
        self.nth_text(CREATED)
    }

    /// The content: in place, or read from the saved view (empty, and logged, when that read
    /// fails: the file was checked when loaded and is held open, so only the disk can fail it).
    pub fn content(&self) -> Cow<'a, str> {
        if !self.content_in_file() {
            return Cow::Borrowed(self.nth_text(CONTENT));
        }
        let mut t = Texts::of(self.bytes);
        let place = t.skip(CONTENT).and_then(|_| Some((t.count()?, t.count()?)));
        match (place, self.file) {
            (Some((at, len)), Some(file)) => Cow::Owned(read_text(file, at as u64, len)),
            _ => Cow::Borrowed(""),
        }
    }

    pub fn importance(&self) -> f32 {
        f32::from_le_bytes(self.bytes[0..4].try_into().expect("4 bytes"))
    }

    pub fn tags(&self) -> impl Iterator<Item = &'a str> {
        self.at_tags().list().into_iter().flatten()
    }

    /// Carries `tag` (run for every memory by [`crate::store::RankView::rows_tagged`], so read
    /// without unpacking or checking the texts).
    pub fn has_tag(&self, tag: &str) -> bool {
        let mut t = self.at_tags();
        let n = t.count().unwrap_or(0);
        (0..n)
            .map_while(|_| t.raw())
            .any(|raw| raw == tag.as_bytes())
    }

    /// The metadata value under `key`.
    pub fn metadata(&self, key: &str) -> Option<&'a str> {
        let mut t = self.at_tags();
        t.skip_list(1)?; // tags
        t.skip_list(1)?; // entities
        let mut pairs = t.list()?;
        pairs.left *= 2;
        while let (Some(k), Some(v)) = (pairs.next(), pairs.next()) {
            if k == key {
                return Some(v);
            }
        }
        None
    }

    /// What the memory is matched on word for word ([`MemoryRecord::lexical_text`]).
    pub fn lexical_text(&self) -> String {
        crate::record::lexical_text(&self.content(), self.metadata(crate::record::KEYS))
    }

    /// The whole record.
    pub fn record(&self) -> MemoryRecord {
        let texts: Vec<&str> = (0..CONTENT).map(|n| self.nth_text(n)).collect();
        let mut t = self.at_tags();
        let tags = t.strings(1);
        let entities = t.strings(1);
        let mut pairs = t.strings(2).into_iter();
        let mut metadata = BTreeMap::new();
        while let (Some(k), Some(v)) = (pairs.next(), pairs.next()) {
            metadata.insert(k, v);
        }
        let flags = self.bytes[8];
        MemoryRecord {
            id: texts[ID].into(),
            content: self.content().into_owned(),
            experience_type: texts[TYPE].into(),
            tags,
            importance: self.importance(),
            access_count: u32::from_le_bytes(self.bytes[4..8].try_into().expect("4 bytes")),
            created_at: texts[CREATED].into(),
            last_accessed: texts[ACCESSED].into(),
            compressed: flags & COMPRESSED != 0,
            metadata,
            entities,
            is_failure: flags & FAILURE != 0,
            is_anomaly: flags & ANOMALY != 0,
            ..Default::default()
        }
    }
}

fn read_text(file: &File, at: u64, len: usize) -> String {
    let mut buf = vec![0u8; len];
    match wt_memory_base::os::files::read_exact_at(file, &mut buf, at) {
        Ok(()) => String::from_utf8(buf).unwrap_or_default(),
        Err(e) => {
            wt_memory_foundation::integrity::log(
                "WARN",
                &format!("cannot read a memory from the saved view: {e}"),
            );
            String::new()
        }
    }
}

fn write_count(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn pack(r: &MemoryRecord) -> Box<[u8]> {
    let count = write_count;
    fn text(out: &mut Vec<u8>, s: &str) {
        write_count(out, s.len());
        out.extend_from_slice(s.as_bytes());
    }
    let mut out = Vec::with_capacity(64 + r.content.len());
    out.extend_from_slice(&r.importance.to_le_bytes());
    out.extend_from_slice(&r.access_count.to_le_bytes());
    let flag = |on: bool, bit: u8| if on { bit } else { 0 };
    let flags =
        flag(r.compressed, COMPRESSED) | flag(r.is_failure, FAILURE) | flag(r.is_anomaly, ANOMALY);
    out.push(flags);
    for s in [
        &r.id,
        &r.experience_type,
        &r.created_at,
        &r.last_accessed,
        &r.content,
    ] {
        text(&mut out, s);
    }
    for list in [&r.tags, &r.entities] {
        count(&mut out, list.len());
        list.iter().for_each(|s| text(&mut out, s));
    }
    count(&mut out, r.metadata.len());
    for (k, v) in &r.metadata {
        text(&mut out, k);
        text(&mut out, v);
    }
    out.into_boxed_slice()
}

/// `Some` when `bytes` are exactly one packed record (every length in range, every text UTF-8).
fn check(bytes: &[u8]) -> Option<()> {
    if bytes.len() < FIXED || bytes[8] & IN_FILE != 0 {
        return None;
    }
    let mut t = Texts::of(bytes);
    for _ in 0..=CONTENT {
        t.text()?;
    }
    for per_item in [1, 1, 2] {
        let n = t.count()?;
        for _ in 0..n.checked_mul(per_item)? {
            t.text()?;
        }
    }
    (t.at == bytes.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MemoryRecord {
        let mut r = MemoryRecord::for_test("4f8e3aab-042d-4bde-ad01-2f91ed245634", "");
        r.content = "é".repeat(100) + " the retry loop"; // a length past one LEB128 byte
        r.experience_type = "Decision".into();
        r.tags = vec!["branch:main".into(), "failure".into()];
        r.entities = vec!["Postgres".into()];
        r.importance = 0.75;
        r.access_count = 300;
        r.created_at = "2026-11-27T18:07:23.451Z".into();
        r.last_accessed = "2026-11-28T08:00:00.000Z".into();
        r.metadata
            .insert("anchors".into(), "scripts/dev.sh@687f".into());
        r.metadata.insert("keys".into(), "why\nretry".into());
        r.is_failure = true;
        r.compressed = true;
        r
    }

    /// [`sample`] as the view file keeps it.
    fn packed_sample() -> Vec<u8> {
        let mut records = Records::default();
        records.push(&sample());
        records.bytes(0).to_vec()
    }

    #[test]
    fn a_packed_record_reads_back_whole_and_in_place() {
        let mut records = Records::default();
        let empty = MemoryRecord::for_test("", "");
        for r in [sample(), empty.clone()] {
            records.push(&r);
        }
        assert_eq!(records.record(0), sample());
        assert_eq!(records.record(1), empty);
        let p = records.get(0);
        assert_eq!(p.id(), sample().id);
        assert_eq!(p.experience_type(), "Decision");
        assert_eq!(p.created_at(), "2026-11-27T18:07:23.451Z");
        assert_eq!(p.content(), sample().content);
        assert_eq!(p.importance(), 0.75);
        assert!(p.has_tag("failure") && !p.has_tag("fail"));
        assert_eq!(p.metadata("keys"), Some("why\nretry"));
        assert_eq!(p.metadata("why"), None);
        assert_eq!(records.position(&sample().id), Some(0));
        records.remove(0);
        assert_eq!(records.len(), 1);
        assert_eq!(records.record(0), empty);
    }

    #[test]
    fn only_whole_records_are_taken_back() {
        let bytes = packed_sample();
        let mut back = Records::default();
        assert!(back.push_from_file(&bytes, 0).is_some());
        assert_eq!(back.record(0), sample());
        for cut in [0, 5, FIXED, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                back.push_from_file(&bytes[..cut], 0).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(back.push_from_file(&longer, 0).is_none());
        let mut not_utf8 = bytes.clone();
        let at = not_utf8.len() - 3; // inside the last metadata value
        not_utf8[at] = 0xff;
        assert!(back.push_from_file(&not_utf8, 0).is_none());
        let mut claims_a_file = bytes;
        claims_a_file[8] |= IN_FILE;
        assert!(back.push_from_file(&claims_a_file, 0).is_none());
        assert_eq!(back.len(), 1);
    }

    #[test]
    fn a_record_loaded_from_the_file_reads_its_content_there() {
        let bytes = packed_sample();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("view.bin");
        let mut file_bytes = b"some header".to_vec();
        let at = file_bytes.len() as u64;
        file_bytes.extend_from_slice(&bytes);
        std::fs::write(&path, &file_bytes).unwrap();
        let mut loaded = Records::default();
        loaded.read_content_from(File::open(&path).unwrap());
        loaded.push_from_file(&bytes, at).unwrap();
        loaded.push(&MemoryRecord::for_test("b", "written after the load"));
        // Only the content stays in the file.
        assert!(loaded.rows[0].len() + sample().content.len() - 8 <= bytes.len());
        // Replaced on disk (as a save does): the records read the file they were loaded from.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"another view").unwrap();
        let p = loaded.get(0);
        assert_eq!(p.content(), sample().content);
        assert_eq!(
            (p.id(), p.created_at()),
            (&*sample().id, "2026-11-27T18:07:23.451Z")
        );
        assert!(p.has_tag("branch:main"));
        assert_eq!(p.metadata("anchors"), Some("scripts/dev.sh@687f"));
        assert_eq!(loaded.record(0), sample());
        assert_eq!(
            &*loaded.bytes(0),
            &bytes[..],
            "saved again with the content in place"
        );
        assert_eq!(loaded.get(1).content(), "written after the load");
        loaded.remove(0);
        assert_eq!(loaded.record(0).content, "written after the load");
    }
}
