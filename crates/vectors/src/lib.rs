//! Embeddings kept compactly: per row, an int8 code of the unit vector with its scale and the
//! vector's norm (a quarter of the bytes of f32).
//! - Every query reads every row in one pass: an integer dot product with the query's own codes,
//!   which the CPU does 32 lanes at a time (within 0.01 of the f32 cosine; see the tests).
//! - The few candidates that pass are scored again with the query in f32 against the row decoded
//!   from its codes. An f16 copy for that pass (twice the codes' bytes) ranked the dev sets
//!   exactly as these decoded rows do (the same recall@5, MRR and hook figures), so it went.
//!
//! A row of zeros (no embedding) scores 0 both ways.
//!
//! Also here: the f32 cosine every query computes per memory. These loops are a crate of their own,
//! built at opt-level 2 (Cargo.toml), because they vectorise only from there; the engine-side
//! crates build at opt-level 1, so a first build, which compiles them last, ends sooner. With no
//! dependency, it compiles at the start of a build, beside the engine's C++.

/// One block of rows of the same dimension.
#[derive(Clone, Default)]
pub struct Rows {
    dim: usize,
    codes: Vec<i8>,
    /// Per row: the coarse cosine is `dot(codes) * scale(query) * scale(row)`.
    scales: Vec<f32>,
    norms: Vec<f32>,
}

/// A query vector as [`Rows::coarse`] reads it.
pub struct Quantized {
    codes: Vec<i8>,
    scale: f32,
}

/// `v / |v|` in int8 with the scale that maps a code back (0 for a zero vector).
fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if norm == 0.0 || max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let step = max / 127.0;
    let codes = v.iter().map(|x| (x / step).round() as i8).collect();
    (codes, step / norm)
}

impl Quantized {
    pub fn new(v: &[f32]) -> Quantized {
        let (codes, scale) = quantize(v);
        Quantized { codes, scale }
    }
}

impl Rows {
    pub fn len(&self) -> usize {
        self.norms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// Append a row; a vector of another length than the block's (or none) is stored as zeros.
    pub fn push(&mut self, v: &[f32]) {
        if self.dim == 0 && !v.is_empty() {
            // The first real vector fixes the dimension; earlier empty rows become zeros.
            self.dim = v.len();
            let rows = self.len();
            self.codes.resize(rows * self.dim, 0);
        }
        if v.len() == self.dim && self.dim > 0 {
            let (codes, scale) = quantize(v);
            self.codes.extend_from_slice(&codes);
            self.scales.push(scale);
            self.norms.push(v.iter().map(|x| x * x).sum::<f32>().sqrt());
        } else {
            self.codes.resize(self.codes.len() + self.dim, 0);
            self.scales.push(0.0);
            self.norms.push(0.0);
        }
    }

    /// Remove rows `at..at + n`.
    pub fn remove(&mut self, at: usize, n: usize) {
        let d = self.dim;
        self.codes.drain(at * d..(at + n) * d);
        self.scales.drain(at..at + n);
        self.norms.drain(at..at + n);
    }

    /// Row `i` as f32 (empty for a zero row), decoded from its codes.
    pub fn exact(&self, i: usize) -> Vec<f32> {
        if self.norms[i] == 0.0 {
            return Vec::new();
        }
        let step = self.scales[i] * self.norms[i];
        self.codes[i * self.dim..(i + 1) * self.dim]
            .iter()
            .map(|&c| c as f32 * step)
            .collect()
    }

    pub fn norm(&self, i: usize) -> f64 {
        self.norms[i] as f64
    }

    /// The coarse cosine of row `i` with `q`.
    pub fn coarse(&self, q: &Quantized, i: usize) -> f32 {
        if q.codes.len() != self.dim || self.scales[i] == 0.0 {
            return 0.0;
        }
        dot_i8(&q.codes, &self.codes[i * self.dim..(i + 1) * self.dim]) as f32
            * q.scale
            * self.scales[i]
    }

    /// Every row's coarse cosine with each query: `out[p][i]` for query `p`. One pass over the
    /// rows (each row is read once for all queries).
    pub fn coarse_all(&self, queries: &[Quantized]) -> Vec<Vec<f32>> {
        let mut out = vec![vec![0f32; self.len()]; queries.len()];
        if self.dim == 0 || queries.iter().any(|q| q.codes.len() != self.dim) {
            return out;
        }
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512bw() && self.dim == MINILM_DIM {
                // SAFETY: the CPU has AVX-512 F and BW (checked above), dim = 6 x 64.
                unsafe { self.coarse_all_avx512::<{ MINILM_DIM / 64 }>(queries, &mut out) };
                return out;
            }
            if has_avx2() {
                // SAFETY: the CPU has AVX2 (checked above).
                unsafe { self.coarse_all_avx2(queries, &mut out) };
                return out;
            }
        }
        self.coarse_all_plain(queries, &mut out);
        out
    }

    /// [`Self::coarse_all`] a dot product at a time.
    fn coarse_all_plain(&self, queries: &[Quantized], out: &mut [Vec<f32>]) {
        for (i, row) in self.codes.chunks_exact(self.dim).enumerate() {
            let scale = self.scales[i];
            if scale == 0.0 {
                continue;
            }
            for (q, o) in queries.iter().zip(out.iter_mut()) {
                o[i] = dot_i8(&q.codes, row) as f32 * q.scale * scale;
            }
        }
    }

    /// [`Self::coarse_all`] in AVX-512 for rows of exactly `BLOCKS` x 64 codes: the rows in
    /// chunks that stay in cache while each query, widened to i16 and held in registers, passes
    /// over them (the row-by-row pass with every query per row was bound by moving the queries'
    /// partial sums, not by reading the rows).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn coarse_all_avx512<const BLOCKS: usize>(
        &self,
        queries: &[Quantized],
        out: &mut [Vec<f32>],
    ) {
        use std::arch::x86_64::*;
        /// Rows per chunk: 256 x 384 codes = 96 KiB, within a core's L2.
        const CHUNK: usize = 256;
        let dim = BLOCKS * 64;
        debug_assert_eq!(self.dim, dim);
        let widen = |at: *const i8| {
            // SAFETY: callers pass a pointer with 64 readable codes after it; unaligned loads.
            unsafe {
                (
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256(at as *const __m256i)),
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256(at.add(32) as *const __m256i)),
                )
            }
        };
        let widened: Vec<[(__m512i, __m512i); BLOCKS]> = queries
            .iter()
            // SAFETY: k * 64 + 64 <= dim = the query's length.
            .map(|q| std::array::from_fn(|k| widen(unsafe { q.codes.as_ptr().add(k * 64) })))
            .collect();
        let rows = self.scales.len();
        for first in (0..rows).step_by(CHUNK) {
            let last = (first + CHUNK).min(rows);
            for ((q, wide), o) in queries.iter().zip(&widened).zip(out.iter_mut()) {
                let wide = *wide;
                let chunk = self.codes[first * dim..last * dim].chunks_exact(dim);
                let scored = o[first..last].iter_mut().zip(&self.scales[first..last]);
                for ((o, &scale), row) in scored.zip(chunk) {
                    if scale == 0.0 {
                        continue;
                    }
                    let mut sum = _mm512_setzero_si512();
                    for (k, (q_lo, q_hi)) in wide.iter().enumerate() {
                        // SAFETY: k * 64 + 64 <= dim = the row's length.
                        let (lo, hi) = widen(unsafe { row.as_ptr().add(k * 64) });
                        sum = _mm512_add_epi32(sum, _mm512_madd_epi16(*q_lo, lo));
                        sum = _mm512_add_epi32(sum, _mm512_madd_epi16(*q_hi, hi));
                    }
                    *o = _mm512_reduce_add_epi32(sum) as f32 * q.scale * scale;
                }
            }
        }
    }

    /// [`Self::coarse_all`] in AVX2, the whole pass in one function so nothing is repeated per
    /// row: the queries are widened to i16 once, and each 32 codes of a row once for all
    /// queries (the pass reads every row's codes and was a large share of a recall's time;
    /// measured: docs/performance.md, "The coarse pass, again").
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn coarse_all_avx2(&self, queries: &[Quantized], out: &mut [Vec<f32>]) {
        use std::arch::x86_64::*;
        let dim = self.dim;
        let blocks = dim / 32;
        // Each query's blocks as (low, high) halves widened to i16.
        let widened: Vec<Vec<(__m256i, __m256i)>> = queries
            .iter()
            .map(|q| {
                (0..blocks)
                    .map(|k| {
                        // SAFETY: k * 32 + 32 <= dim = the query's length; unaligned load.
                        let v = unsafe {
                            _mm256_loadu_si256(q.codes.as_ptr().add(k * 32) as *const __m256i)
                        };
                        (
                            _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)),
                            _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(v)),
                        )
                    })
                    .collect()
            })
            .collect();
        let mut sums = vec![_mm256_setzero_si256(); queries.len()];
        for (i, row) in self.codes.chunks_exact(dim).enumerate() {
            let scale = self.scales[i];
            if scale == 0.0 {
                continue;
            }
            sums.fill(_mm256_setzero_si256());
            for k in 0..blocks {
                // SAFETY: k * 32 + 32 <= dim = the row's length; unaligned load.
                let v = unsafe { _mm256_loadu_si256(row.as_ptr().add(k * 32) as *const __m256i) };
                let lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v));
                let hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(v));
                for (sum, q) in sums.iter_mut().zip(&widened) {
                    let (q_lo, q_hi) = q[k];
                    *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(q_lo, lo));
                    *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(q_hi, hi));
                }
            }
            for ((sum, q), o) in sums.iter().zip(queries).zip(out.iter_mut()) {
                let mut lanes = [0i32; 8];
                // SAFETY: `lanes` holds exactly one 256-bit vector.
                unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, *sum) };
                let tail = dot_i8_plain(&q.codes[blocks * 32..], &row[blocks * 32..]);
                o[i] = (lanes.iter().sum::<i32>() + tail) as f32 * q.scale * scale;
            }
        }
    }

    /// The raw parts, for the view file: dim, codes, scales, norms.
    pub fn parts(&self) -> (usize, &[i8], &[f32], &[f32]) {
        (self.dim, &self.codes, &self.scales, &self.norms)
    }

    pub fn from_parts(
        dim: usize,
        codes: Vec<i8>,
        scales: Vec<f32>,
        norms: Vec<f32>,
    ) -> Option<Rows> {
        let n = norms.len();
        (scales.len() == n && codes.len() == n * dim).then_some(Rows {
            dim,
            codes,
            scales,
            norms,
        })
    }
}

/// MiniLM-L6's dimension, the one the AVX-512 pass is built for.
#[cfg(target_arch = "x86_64")]
const MINILM_DIM: usize = 384;

/// Integer dot product; with AVX2 where the CPU has it (checked once).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_plain(a, b)
}

#[cfg(target_arch = "x86_64")]
fn has_avx512bw() -> bool {
    use std::sync::OnceLock;
    static AVX512BW: OnceLock<bool> = OnceLock::new();
    *AVX512BW
        .get_or_init(|| is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw"))
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    use std::sync::OnceLock;
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| is_x86_feature_detected!("avx2"))
}

/// 32 codes at a time: widened to i16, multiplied in pairs and summed into eight i32 lanes
/// (`vpmaddwd`); the tail (a dimension not a multiple of 32) in plain code.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let blocks = n / 32;
    let mut sum = _mm256_setzero_si256();
    for k in 0..blocks {
        // SAFETY: k * 32 + 32 <= n, within both slices; unaligned loads.
        let (va, vb) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr().add(k * 32) as *const __m256i),
                _mm256_loadu_si256(b.as_ptr().add(k * 32) as *const __m256i),
            )
        };
        let (a_lo, b_lo) = (
            _mm256_cvtepi8_epi16(_mm256_castsi256_si128(va)),
            _mm256_cvtepi8_epi16(_mm256_castsi256_si128(vb)),
        );
        let (a_hi, b_hi) = (
            _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(va)),
            _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(vb)),
        );
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(a_lo, b_lo));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(a_hi, b_hi));
    }
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` holds exactly one 256-bit vector.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, sum) };
    lanes.iter().sum::<i32>() + dot_i8_plain(&a[blocks * 32..n], &b[blocks * 32..n])
}

fn dot_i8_plain(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    cosine_normed(a, norm(a), b, norm(b))
}

/// Cosine of `a` and `b` given their norms (a query's is computed once, a memory's is kept).
pub fn cosine_normed(a: &[f32], norm_a: f64, b: &[f32], norm_b: f64) -> f64 {
    if a.len() != b.len() || norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot(a, b) / (norm_a * norm_b)
    }
}

pub fn norm(v: &[f32]) -> f64 {
    dot(v, v).sqrt()
}

/// Eight independent f32 lanes, summed in f64: the hot loop of every query (10k memories x 384
/// dimensions) runs several times faster than one f64 chain, and exact enough for ranking.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| *x as f64 * *y as f64)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().map(|&x| x as f64).sum::<f64>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random unit-ish vectors shaped like MiniLM's (384 small components).
    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % 20001) as f32 / 10000.0 - 1.0) * 0.1
            })
            .collect()
    }

    #[test]
    fn coarse_and_exact_cosines_stay_close_to_f32() {
        let mut rows = Rows::default();
        let vs: Vec<Vec<f32>> = (0..300).map(|s| vector(s + 1, 384)).collect();
        for v in &vs {
            rows.push(v);
        }
        // Queries near some rows, so cosines span the range the ranker cares about.
        let mut worst_coarse: f64 = 0.0;
        let mut worst_exact: f64 = 0.0;
        for s in 0..20u64 {
            let mut q = vector(1000 + s, 384);
            for (x, y) in q.iter_mut().zip(&vs[s as usize]) {
                *x = 0.5 * *x + *y;
            }
            let quantized = Quantized::new(&q);
            let all = rows.coarse_all(std::slice::from_ref(&quantized));
            for (i, v) in vs.iter().enumerate() {
                let truth = cosine(&q, v);
                worst_coarse = worst_coarse.max((all[0][i] as f64 - truth).abs());
                assert_eq!(all[0][i], rows.coarse(&quantized, i));
                let exact = cosine_normed(&q, norm(&q), &rows.exact(i), rows.norm(i));
                worst_exact = worst_exact.max((exact - truth).abs());
            }
        }
        assert!(worst_coarse < COARSE_ERROR, "coarse error {worst_coarse}");
        // The query in f32 against the decoded row: no worse than both in int8.
        assert!(
            worst_exact < COARSE_ERROR / 2.0,
            "exact error {worst_exact}"
        );
    }

    /// The bound the ranker's candidate margin assumes (`recall::COARSE_MARGIN`).
    const COARSE_ERROR: f64 = 0.01;

    #[test]
    fn the_whole_pass_gives_each_rows_own_coarse_cosine_for_every_query() {
        for dim in [5usize, 32, 384, 390] {
            // More rows than one chunk of the AVX-512 pass, and an empty one inside.
            let mut rows = Rows::default();
            for s in 0..300 {
                rows.push(&vector(s + 1, dim));
                if s == 100 {
                    rows.push(&vec![0.0; dim]);
                }
            }
            let queries: Vec<Quantized> = (0..3)
                .map(|s| Quantized::new(&vector(500 + s, dim)))
                .collect();
            let all = rows.coarse_all(&queries);
            for (p, q) in queries.iter().enumerate() {
                for (i, score) in all[p].iter().enumerate() {
                    assert_eq!(*score, rows.coarse(q, i), "dim {dim} query {p} row {i}");
                }
            }
            // Every kernel this CPU has, not only the one `coarse_all` picks.
            let fresh = || vec![vec![0f32; rows.len()]; queries.len()];
            let mut plain = fresh();
            rows.coarse_all_plain(&queries, &mut plain);
            assert_eq!(plain, all, "dim {dim}");
            #[cfg(target_arch = "x86_64")]
            {
                if has_avx2() {
                    let mut avx2 = fresh();
                    // SAFETY: the CPU has AVX2.
                    unsafe { rows.coarse_all_avx2(&queries, &mut avx2) };
                    assert_eq!(avx2, plain, "dim {dim}");
                }
                if has_avx512bw() && dim == MINILM_DIM {
                    let mut avx512 = fresh();
                    // SAFETY: the CPU has AVX-512 F and BW; dim = 6 x 64.
                    unsafe { rows.coarse_all_avx512::<6>(&queries, &mut avx512) };
                    assert_eq!(avx512, plain, "dim {dim}");
                }
            }
        }
    }

    /// The pass at 10^5 rows, three queries (a prompt and two of its sentences): `cargo test
    /// --lib coarse_pass_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn coarse_pass_speed() {
        let mut rows = Rows::default();
        for s in 0..100_000 {
            rows.push(&vector(s + 1, 384));
        }
        let queries: Vec<Quantized> = (0..3)
            .map(|s| Quantized::new(&vector(900_000 + s, 384)))
            .collect();
        let mut times = Vec::new();
        for _ in 0..21 {
            let started = std::time::Instant::now();
            std::hint::black_box(rows.coarse_all(&queries));
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let mut per_row = Vec::new();
        for _ in 0..21 {
            let started = std::time::Instant::now();
            for q in &queries {
                std::hint::black_box((0..rows.len()).map(|i| rows.coarse(q, i)).sum::<f32>());
            }
            per_row.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        per_row.sort_by(f64::total_cmp);
        println!(
            "coarse pass, 10^5 rows x 3 queries: median {:.2} ms (a dot product per row and query: {:.2} ms)",
            times[10], per_row[10]
        );
    }

    #[test]
    fn the_vector_dot_product_equals_the_plain_one() {
        for dim in [0usize, 5, 32, 384, 390] {
            let a: Vec<i8> = (0..dim)
                .map(|i| (i as i32 * 37 % 255 - 127) as i8)
                .collect();
            let b: Vec<i8> = (0..dim)
                .map(|i| (i as i32 * 91 % 255 - 127) as i8)
                .collect();
            assert_eq!(dot_i8(&a, &b), dot_i8_plain(&a, &b), "dim {dim}");
        }
        let extreme = vec![-127i8; 384];
        assert_eq!(dot_i8(&extreme, &extreme), 127 * 127 * 384);
    }

    #[test]
    fn empty_and_foreign_rows_score_zero_and_removal_keeps_the_rest() {
        let mut rows = Rows::default();
        rows.push(&[]);
        let (a, b) = (vector(1, 8), vector(2, 8));
        rows.push(&a);
        rows.push(&[1.0, 2.0]); // another length
        rows.push(&b);
        assert_eq!(rows.len(), 4);
        let q = Quantized::new(&b);
        assert_eq!(rows.coarse(&q, 0), 0.0);
        assert_eq!(rows.coarse(&q, 2), 0.0);
        assert!(rows.exact(0).is_empty() && rows.exact(2).is_empty());
        assert!((rows.coarse(&q, 3) - 1.0).abs() < 0.01);
        rows.remove(1, 2);
        assert_eq!(rows.len(), 2);
        assert!((rows.coarse(&q, 1) - 1.0).abs() < 0.01);
        let exact = rows.exact(1);
        let step = b.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        assert!(exact
            .iter()
            .zip(&b)
            .all(|(x, y)| (x - y).abs() <= step / 2.0 + 1e-6));
    }
}
