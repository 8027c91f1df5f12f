//! The inner loop of the sign codes' scan ([`super::codes`]): the scores
//! of one block of rows' codes against a query.
//!
//! A block holds the codes of [`BLOCK_ROWS`] rows byte by byte (byte 0 of
//! every row, then byte 1, …), so one AVX2 register holds one code byte of
//! all the block's rows, and a byte shuffle (`pshufb`) looks up 32 half
//! bytes, four dimensions each, in a 16-entry table at once: the layout and
//! lookup of Faiss's "fast scan" (André, Kermarrec and Le Scouarnec, 2015).
//! The sums stay exact: each int8 query value is split into its high and
//! low four bits (`q = 16h + l`), whose table entries add up within a byte
//! over two code bytes, and are widened to 16 bits from there. So the AVX2
//! kernel and the portable loop give every row the same integer score, and
//! the scan ranks rows as a row-by-row loop over full tables would.

/// Rows whose codes are stored together, byte by byte.
pub(super) const BLOCK_ROWS: usize = 32;

/// Where byte `byte` of the code at position `ord` lies in the file.
pub(super) fn byte_offset(ord: u32, byte: usize, len: usize) -> usize {
    let ord = ord as usize;
    (ord / BLOCK_ROWS) * BLOCK_ROWS * len + byte * BLOCK_ROWS + ord % BLOCK_ROWS
}

/// Longest code (bytes) the AVX2 kernel sums in 16-bit lanes: its low
/// half-sums reach 120 per code byte, its high ones −64.
#[cfg(target_arch = "x86_64")]
const MAX_KERNEL_LEN: usize = 256;

/// A query, prepared for scoring codes of one length.
pub(super) struct QueryTables {
    /// The code length, in bytes.
    len: usize,
    kernel: Kernel,
}

/// How blocks are scored.
enum Kernel {
    /// Per code byte, per byte value: the query's dot product with the
    /// signs the byte stands for (`Σ ± qᵢ` over its eight dimensions).
    Portable(Vec<[i16; 256]>),
    /// Per code byte, four 16-entry tables, each twice over (one 256-bit
    /// load): the sums of the low (`l`) parts of the query's values at the
    /// set bits of the low and the high half byte, then of the high (`h`)
    /// parts; and `Σ qᵢ`, which turns sums over set bits into `Σ ± qᵢ`.
    #[cfg(target_arch = "x86_64")]
    Avx2 {
        nibbles: Vec<[[u8; 32]; 4]>,
        total: i32,
    },
}

impl QueryTables {
    /// The tables of the int8 `query` for codes of `len` bytes (bit `b` of
    /// byte `j` standing for dimension `8j + b`; dimensions past the
    /// query's end count as zero).
    pub(super) fn new(query: &[i8], len: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(tables) = Self::avx2(query, len) {
            return tables;
        }
        Self::portable(query, len)
    }

    /// The AVX2 kernel's tables, where the CPU has AVX2 and the codes are
    /// short enough for its 16-bit sums.
    #[cfg(target_arch = "x86_64")]
    fn avx2(query: &[i8], len: usize) -> Option<Self> {
        if len > MAX_KERNEL_LEN || !std::arch::is_x86_feature_detected!("avx2") {
            return None;
        }
        let value = |dim: usize| value_at(query, dim);
        let nibbles = (0..len)
            .map(|byte| {
                // Dimensions of the byte's low and high half bytes.
                let halves = [8 * byte, 8 * byte + 4];
                let part = |half: usize, high: bool, entry: usize| {
                    (0..4)
                        .filter(|b| entry >> b & 1 == 1)
                        .map(|b| {
                            let q = value(halves[half] + b);
                            if high { q >> 4 } else { q & 15 }
                        })
                        .sum::<i32>()
                };
                let mut tables = [[0u8; 32]; 4];
                for (t, table) in tables.iter_mut().enumerate() {
                    let (half, high) = (t % 2, t >= 2);
                    for (entry, slot) in table.iter_mut().enumerate() {
                        // The high parts' sums are negative as often as
                        // not: stored as their two's-complement byte.
                        *slot = part(half, high, entry % 16) as i8 as u8;
                    }
                }
                tables
            })
            .collect();
        let total = (0..len * 8).map(value).sum();
        Some(Self {
            len,
            kernel: Kernel::Avx2 { nibbles, total },
        })
    }

    /// The portable loop's full tables.
    fn portable(query: &[i8], len: usize) -> Self {
        let value = |dim: usize| value_at(query, dim);
        let full = (0..len)
            .map(|byte| {
                let mut table = [0i16; 256];
                for (entry, sum) in table.iter_mut().enumerate() {
                    *sum = (0..8)
                        .map(|b| {
                            let q = value(8 * byte + b) as i16;
                            if entry >> b & 1 == 1 { q } else { -q }
                        })
                        .sum();
                }
                table
            })
            .collect();
        Self {
            len,
            kernel: Kernel::Portable(full),
        }
    }

    /// The scores of the block `block` (`len × BLOCK_ROWS` bytes): row
    /// `r`'s is `Σ qᵢ · sᵢ`, `sᵢ` = ±1 the sign its code gives dimension `i`.
    pub(super) fn block_scores(&self, block: &[u8], scores: &mut [i32; BLOCK_ROWS]) {
        assert_eq!(block.len(), self.len * BLOCK_ROWS, "a block of codes");
        match &self.kernel {
            Kernel::Portable(full) => portable_scores(full, block, scores),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 { nibbles, total } => {
                // SAFETY: the tables are only built for the AVX2 kernel when
                // the CPU supports AVX2 (the kernel's loads are of checked
                // 32-byte slices).
                unsafe { avx2_scores(nibbles, *total, block, scores) }
            }
        }
    }
}

/// The query's value at dimension `dim`, zero past its end (the bits of a
/// code's last byte beyond the dimensions).
fn value_at(query: &[i8], dim: usize) -> i32 {
    query.get(dim).map_or(0, |q| i32::from(*q))
}

/// Sums each row's full-table entries, code byte by code byte.
fn portable_scores(full: &[[i16; 256]], block: &[u8], scores: &mut [i32; BLOCK_ROWS]) {
    *scores = [0; BLOCK_ROWS];
    for (table, bytes) in full.iter().zip(block.chunks_exact(BLOCK_ROWS)) {
        for (score, byte) in scores.iter_mut().zip(bytes) {
            *score += i32::from(table[*byte as usize]);
        }
    }
}

/// Sums each row's half-byte entries 32 rows at a time (see the module
/// doc): two code bytes in 8-bit lanes, then into 16-bit accumulators,
/// which `unpack` fills with rows 0–7 and 16–23 in one register, 8–15 and
/// 24–31 in the other.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_scores(
    nibbles: &[[[u8; 32]; 4]],
    total: i32,
    block: &[u8],
    scores: &mut [i32; BLOCK_ROWS],
) {
    use std::arch::x86_64::*;
    let load = |bytes: &[u8; 32]| {
        // SAFETY: 32 readable bytes; unaligned loads are allowed.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
    };
    let mask = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    let [mut low_a, mut low_b, mut high_a, mut high_b] = [zero; 4];
    for (tables, bytes) in nibbles.chunks(2).zip(block.chunks(2 * BLOCK_ROWS)) {
        let (mut low, mut high) = (zero, zero);
        for (table, bytes) in tables.iter().zip(bytes.chunks_exact(BLOCK_ROWS)) {
            let codes = load(bytes.try_into().expect("32 bytes"));
            let lo = _mm256_and_si256(codes, mask);
            let hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), mask);
            let [low_lo, low_hi, high_lo, high_hi] = table.each_ref().map(load);
            low = _mm256_add_epi8(low, _mm256_shuffle_epi8(low_lo, lo));
            low = _mm256_add_epi8(low, _mm256_shuffle_epi8(low_hi, hi));
            high = _mm256_add_epi8(high, _mm256_shuffle_epi8(high_lo, lo));
            high = _mm256_add_epi8(high, _mm256_shuffle_epi8(high_hi, hi));
        }
        low_a = _mm256_add_epi16(low_a, _mm256_unpacklo_epi8(low, zero));
        low_b = _mm256_add_epi16(low_b, _mm256_unpackhi_epi8(low, zero));
        let sign = _mm256_cmpgt_epi8(zero, high);
        high_a = _mm256_add_epi16(high_a, _mm256_unpacklo_epi8(high, sign));
        high_b = _mm256_add_epi16(high_b, _mm256_unpackhi_epi8(high, sign));
    }
    let lanes = [low_a, low_b, high_a, high_b].map(|register| {
        let mut lanes = [0i16; 16];
        // SAFETY: `lanes` is 32 writable bytes.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), register) };
        lanes
    });
    for (row, score) in scores.iter_mut().enumerate() {
        // Row r is lane (r % 8) + 8 × (r / 16) of register (r / 8) % 2.
        let (register, lane) = ((row / 8) % 2, row % 8 + 8 * (row / 16));
        let set = 16 * i32::from(lanes[2 + register][lane]) + i32::from(lanes[register][lane]);
        *score = 2 * set - total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    /// `Σ qᵢ · sᵢ` for one row of a block, bit by bit.
    fn row_score(query: &[i8], block: &[u8], row: usize) -> i32 {
        let len = block.len() / BLOCK_ROWS;
        (0..len * 8)
            .map(|dim| {
                let q = query.get(dim).map_or(0, |q| i32::from(*q));
                let set = block[dim / 8 * BLOCK_ROWS + row] >> (dim % 8) & 1 == 1;
                if set { q } else { -q }
            })
            .sum()
    }

    #[test]
    fn every_row_of_a_block_gets_its_dot_product_with_its_signs() {
        // Lengths of one byte, odd ones, the common 32 and 48, the kernel's
        // longest and one past it; queries of random and of extreme values.
        for len in [1, 3, 32, 48, 255, 256, 257] {
            for seed in 0..4u64 {
                let mut query: Vec<i8> = random_bytes(seed, len * 8 - 3)
                    .into_iter()
                    .map(|b| b as i8)
                    .collect();
                if seed == 3 {
                    query
                        .iter_mut()
                        .enumerate()
                        .for_each(|(i, q)| *q = if i % 2 == 0 { i8::MIN } else { i8::MAX });
                }
                let block = random_bytes(seed + 100, len * BLOCK_ROWS);
                let expected: Vec<i32> = (0..BLOCK_ROWS)
                    .map(|r| row_score(&query, &block, r))
                    .collect();
                let mut kernels = vec![QueryTables::portable(&query, len)];
                #[cfg(target_arch = "x86_64")]
                kernels.extend(QueryTables::avx2(&query, len));
                for tables in kernels {
                    let mut scores = [0; BLOCK_ROWS];
                    tables.block_scores(&block, &mut scores);
                    assert_eq!(scores.to_vec(), expected, "len {len}, seed {seed}");
                }
            }
        }
    }
}
