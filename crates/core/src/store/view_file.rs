//! The ranking view saved between runs of the resident service, so a service starting on a store
//! of 10^5 memories loads it in a fraction of a second instead of reading, converting and
//! tokenising every memory again.
//!
//! It is derived data, kept in the state directory (`<state>/wt-tools/views/<key>/`, `key` from
//! the store's directory), never in the store: reading a store writes nothing into it.
//! - `view.bin`: the view, versioned ([`FORMAT`]) and checksummed, written whole to a temporary
//!   file and renamed.
//! - `writes.log`: the id of every memory written or deleted since, appended before the engine
//!   writes it. Loading replays it against the engine (each id is read again, so replaying twice
//!   or replaying a write that never happened is harmless): a process killed at any point leaves
//!   a view that is rebuilt or consistent, never wrong.
//! - A loaded view must then hold exactly the memories the store's integrity record counts (count
//!   and id digest, see [`wt_memory_foundation::integrity`]); otherwise, or when the file is damaged, outdated or
//!   of another format, the view is rebuilt from the engine and saved again.

use super::RankView;
use anyhow::{bail, Context as _};
use std::collections::HashMap;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use wt_memory_vectors::Rows;

/// Bump with any change to what the file holds or to how its parts are computed (the terms of
/// `rank::terms`, the quantisation of `vectors`): an older file is then rebuilt, not misread.
pub const FORMAT: u32 = 3;
const MAGIC: &[u8; 8] = b"WTVIEW\0\0";
/// Magic, format, checksum and length of what follows.
const HEADER: usize = 28;
const VIEW: &str = "view.bin";
const LOG: &str = "writes.log";
/// A line of the log saying "something changed that the log cannot name": rebuild.
const EVERYTHING: &str = "*";

/// Where the view of the store at `store_dir` is kept.
pub fn dir_for(store_dir: &Path) -> PathBuf {
    use sha2::{Digest as _, Sha256};
    let canonical = std::fs::canonicalize(store_dir).unwrap_or_else(|_| store_dir.to_path_buf());
    let hash = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let key: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    wt_memory_base::paths::state_home()
        .join("wt-tools")
        .join("views")
        .join(key)
}

/// Note that memory `id` (`None`: anything) is about to be written or deleted.
pub fn note_write(dir: &Path, id: Option<&str>) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(()); // no view was ever saved (the first save makes the folder first)
    }
    let mut log = wt_memory_base::paths::open_private_append(&dir.join(LOG))?;
    log.write_all(format!("{}\n", id.unwrap_or(EVERYTHING)).as_bytes())
}

/// The saved view is no longer to be trusted (a write could not be logged).
pub fn discard(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(VIEW));
    let _ = std::fs::remove_file(dir.join(LOG));
}

/// The log's length now (see [`save`]).
pub fn log_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(LOG)).map_or(0, |m| m.len())
}

/// What replaying the log asks of the store.
pub enum Replay {
    /// These memories were written or deleted since the view was saved.
    Ids(Vec<String>),
    /// Something changed that the log cannot name: rebuild.
    Everything,
}

/// The saved view and the writes logged since, or `Ok(None)` when there is none. An error says
/// why a file that exists cannot be used (damaged, outdated, another store's).
pub fn load(dir: &Path, store_dir: &Path) -> anyhow::Result<Option<(RankView, Replay)>> {
    // Read through the handle the view keeps: its records read their content from this file.
    let mut file = match std::fs::File::open(dir.join(VIEW)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("cannot read the saved view"),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).context("cannot read the saved view")?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        bail!("not a view file");
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let format = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if format != FORMAT {
        bail!("format {format}, this build reads {FORMAT}");
    }
    let (checksum, length) = (word(12), word(20));
    let payload = &bytes[HEADER..];
    let mut sum = Checksum::default();
    sum.update(payload);
    if payload.len() as u64 != length || sum.finish() != checksum {
        bail!("damaged (checksum or length does not match)");
    }
    let mut r = Reader {
        data: payload,
        at: 0,
    };
    if r.string()? != store_dir.to_string_lossy() {
        bail!("saved for another store");
    }
    let view = read_view(&mut r, file)?;
    if r.at != payload.len() {
        bail!("damaged (bytes after the view)");
    }
    let log = std::fs::read_to_string(dir.join(LOG)).unwrap_or_default();
    let mut ids: Vec<String> = Vec::new();
    for line in log.lines() {
        match line.trim() {
            "" => {}
            EVERYTHING => return Ok(Some((view, Replay::Everything))),
            id => ids.push(id.to_string()),
        }
    }
    ids.sort();
    ids.dedup();
    Ok(Some((view, Replay::Ids(ids))))
}

/// Save `view` (taken when the log was `log_len` bytes long) and drop the log if nothing was
/// logged since; `lock` serialises this with [`note_write`]'s callers.
pub fn save(
    dir: &Path,
    store_dir: &Path,
    view: &RankView,
    log_len_then: u64,
    lock: &std::sync::Mutex<()>,
) -> anyhow::Result<()> {
    wt_memory_base::paths::ensure_private_dir(dir)?;
    // A save cut short (the service killed) leaves its temporary file: only one service saves a
    // store's view at a time, so any such file is garbage now.
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    {
        let mut w = Writer::new(BufWriter::with_capacity(1 << 20, tmp.as_file_mut()));
        w.inner.write_all(MAGIC)?;
        w.inner.write_all(&FORMAT.to_le_bytes())?;
        // Checksum and length, filled in at the end.
        w.inner.write_all(&[0u8; 16])?;
        w.string(&store_dir.to_string_lossy())?;
        write_view(&mut w, view)?;
        let (checksum, length) = (w.sum.finish(), w.written);
        let file = w.inner.into_inner().map_err(|e| e.into_error())?;
        file.seek(std::io::SeekFrom::Start(12))?;
        file.write_all(&checksum.to_le_bytes())?;
        file.write_all(&length.to_le_bytes())?;
    }
    tmp.persist(dir.join(VIEW))?;
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    if log_len(dir) == log_len_then {
        let _ = std::fs::remove_file(dir.join(LOG));
    }
    Ok(())
}

fn write_view<W: Write>(w: &mut Writer<W>, view: &RankView) -> std::io::Result<()> {
    w.u64(view.records.len() as u64)?;
    for i in 0..view.records.len() {
        let bytes = view.records.bytes(i);
        w.u64(bytes.len() as u64)?;
        w.bytes(&bytes)?;
    }
    write_rows(w, &view.vectors)?;
    write_rows(w, &view.keys)?;
    for &(start, count) in &view.key_spans {
        w.u32(start)?;
        w.u32(count)?;
    }
    let postings: Vec<_> = view.corpus.postings().collect();
    w.u64(postings.len() as u64)?;
    for (term, docs) in postings {
        w.string(term)?;
        w.u64(docs.len() as u64)?;
        let bytes: Vec<u8> = docs.iter().flat_map(|d| d.to_le_bytes()).collect();
        w.bytes(&bytes)?;
    }
    Ok(())
}

fn read_view(r: &mut Reader, file: std::fs::File) -> anyhow::Result<RankView> {
    let n = r.len()?;
    let mut view = RankView::default();
    view.records.reserve_exact(n);
    view.records.read_content_from(file);
    for _ in 0..n {
        let len = r.len()?;
        let at = (HEADER + r.at) as u64;
        view.records
            .push_from_file(r.bytes(len)?, at)
            .context("damaged (a record does not read back)")?;
        let record = view.records.get(view.records.len() - 1);
        if let Some(older) = record.metadata(crate::record::SUPERSEDES) {
            view.superseded_by
                .insert(older.to_string(), record.id().to_string());
        }
        view.tally.add(record);
    }
    view.vectors = read_rows(r)?;
    view.keys = read_rows(r)?;
    view.key_spans = (0..n)
        .map(|_| Ok((r.u32()?, r.u32()?)))
        .collect::<anyhow::Result<_>>()?;
    let terms = r.len()?;
    let mut postings = HashMap::with_capacity(terms);
    for _ in 0..terms {
        let term = r.string()?;
        let docs = r.len()?;
        let bytes = r.bytes(docs * 4)?;
        let docs: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        postings.insert(term, docs);
    }
    view.corpus = crate::rank::Corpus::from_postings(n, postings)
        .context("a posting names a memory out of range")?;
    let spans_fit = view
        .key_spans
        .iter()
        .all(|&(start, count)| (start as usize + count as usize) <= view.keys.len());
    if view.vectors.len() != n || !spans_fit {
        bail!("the vectors do not match the memories");
    }
    Ok(view)
}

fn write_rows<W: Write>(w: &mut Writer<W>, rows: &Rows) -> std::io::Result<()> {
    let (dim, codes, scales, norms) = rows.parts();
    w.u64(dim as u64)?;
    w.u64(norms.len() as u64)?;
    let codes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
    w.bytes(&codes)?;
    w.bytes(&floats(scales))?;
    w.bytes(&floats(norms))
}

fn floats(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_rows(r: &mut Reader) -> anyhow::Result<Rows> {
    let (dim, n) = (r.len()?, r.len()?);
    let cells = n.checked_mul(dim).context("too many rows")?;
    let scale_bytes = n.checked_mul(4).context("too many rows")?;
    let codes = r.bytes(cells)?.iter().map(|&b| b as i8).collect();
    let scales = unfloats(r.bytes(scale_bytes)?);
    let norms = unfloats(r.bytes(scale_bytes)?);
    Rows::from_parts(dim, codes, scales, norms).context("rows of the wrong size")
}

fn unfloats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// A 64-bit checksum over 8-byte words (a multiply-rotate mix): it finds a damaged or truncated
/// file at memory speed; it is not a defence against an attacker, who could write any file here.
#[derive(Default)]
struct Checksum {
    state: u64,
    pending: Vec<u8>,
}

impl Checksum {
    fn update(&mut self, mut bytes: &[u8]) {
        if !self.pending.is_empty() {
            let take = (8 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == 8 {
                let word = u64::from_le_bytes(self.pending[..].try_into().expect("8 bytes"));
                self.mix(word);
                self.pending.clear();
            }
        }
        let words = bytes.chunks_exact(8);
        let rest = words.remainder();
        for word in words {
            self.mix(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        self.pending.extend_from_slice(rest);
    }

    fn mix(&mut self, word: u64) {
        self.state = (self.state.rotate_left(23) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        let mut tail = [0u8; 8];
        tail[..self.pending.len()].copy_from_slice(&self.pending);
        let state = (self.state.rotate_left(23) ^ u64::from_le_bytes(tail))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        state ^ self.pending.len() as u64
    }
}

/// Little-endian fields after the header, summed as they are written.
struct Writer<W: Write> {
    inner: W,
    sum: Checksum,
    written: u64,
}

impl<W: Write> Writer<W> {
    fn new(inner: W) -> Self {
        Writer {
            inner,
            sum: Checksum::default(),
            written: 0,
        }
    }

    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.sum.update(b);
        self.written += b.len() as u64;
        self.inner.write_all(b)
    }

    fn u32(&mut self, x: u32) -> std::io::Result<()> {
        self.bytes(&x.to_le_bytes())
    }

    fn u64(&mut self, x: u64) -> std::io::Result<()> {
        self.bytes(&x.to_le_bytes())
    }

    fn string(&mut self, s: &str) -> std::io::Result<()> {
        self.u64(s.len() as u64)?;
        self.bytes(s.as_bytes())
    }
}

/// The reading side of [`Writer`], over the file's bytes (checked by the checksum first); every
/// length is checked against what is left before anything is allocated for it.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn bytes(&mut self, n: usize) -> anyhow::Result<&[u8]> {
        if n > self.data.len() - self.at {
            bail!("damaged (the file ends early)");
        }
        let out = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(
            self.bytes(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn len(&mut self) -> anyhow::Result<usize> {
        let n = u64::from_le_bytes(self.bytes(8)?.try_into().expect("8 bytes"));
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.data.len())
            .with_context(|| format!("damaged (a count of {n})"))
    }

    fn string(&mut self) -> anyhow::Result<String> {
        let n = self.len()?;
        String::from_utf8(self.bytes(n)?.to_vec()).context("damaged (a text is not UTF-8)")
    }
}
