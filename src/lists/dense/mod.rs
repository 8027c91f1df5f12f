//! The dense list: cosine similarity between the query's embedding (moved
//! toward its best chunks, see *Query feedback* below) and every chunk's,
//! over the memory-mapped int8 vectors ([`vectors`]).
//!
//! A search finds its window by an exact scan of every row, or, in an
//! index that has them and a search that covers enough rows for them to
//! serve ([`codes::DenseIndexSetting::serves`]), through the rows' sign
//! codes ([`codes`]): the
//! allowed rows' codes are scored first, and the best few thousand rows
//! rescored with the scan's own arithmetic, so a chunk's score is the same
//! either way and only recall differs. `--exact` forces the scan. Filters
//! apply before the window either way: a row the filter removes is never
//! scored. When the rows to rescore would be all the allowed rows (a
//! selective filter, or `explain`'s complete rankings), the list scans.
//! Both split the rows over the cores with `rayon`. A list over several
//! generations ([`DenseList::merge`]) searches them as one: their rows
//! compete for one rescoring depth by their codes (when the rows together
//! are enough for them; a generation without codes has every allowed row
//! rescored), or are all scanned.
//!
//! **Query feedback.** A short query gives a noisy embedding: a few words,
//! each with every sense it has, and no context. So the list ranks in
//! two scans (pseudo-relevance feedback, Rocchio's method in vector form):
//! the first ranks by the query, the second by the query moved toward the
//! best few chunks of the first pass, `q' = q + mean(seeds)` at unit
//! length. The seeds share the query's topic and carry its context, so
//! `q'` finds paraphrases `q` misses. Which chunks seed it is the
//! retriever's choice ([`List::refine`]): in a hybrid search the best of the
//! fused first pass, alone the list's own best. The count is a setting
//! recorded with the fusion defaults ([`DEFAULT_FEEDBACK`]; 0 turns
//! feedback off), and `explain` names the chunks used. The query's
//! embedding is kept from the first scan for the second (a few recent
//! queries, for a transformer's forward pass costs more than a scan).

pub mod cells;
#[cfg(test)]
mod cells_tests;
mod code_scan;
pub mod codes;
pub mod floor;
mod prefetch;
mod vectors;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};

use super::AllowSet;
use super::{
    Approximate, Candidate, CellsProbed, List, ListHit, ListKind, QueryEmbedding, RankedList,
    TopWindow,
};
use crate::embed::{Embedder, normalize};
use crate::store::checks::Checksums;
use crate::store::damaged;
use crate::store::generation::{ChunkOrd, VectorFlags};
use crate::store::parts::PartOrder;
use codes::{CodeSet, DenseIndexSetting, SignCodes};
pub use vectors::{
    KEYS_FILE, QuantizedVectors, SCALES_FILE, StoredVectors, VECTORS_FILE, VectorWriter, quantize,
    read_keys, read_keys_checked, vector_key,
};

/// A cosine with a dequantized row may exceed 1 by this much: rounding
/// each of a row's values to its scale moves its length by at most
/// `√dim × scale / 2` (see [`DenseList::check_hits`]), a few hundredths.
const SCORE_TOLERANCE: f32 = 0.05;

/// How many of the first scan's best chunks move the query by default (see
/// the module doc): three, with the query and their mean counting alike,
/// the textbook form of Rocchio's feedback rather than a tuned pair.
pub const DEFAULT_FEEDBACK: usize = 3;

/// Most chunks that may move the dense list's query (`--dense-feedback`):
/// feedback is about a query's few best chunks, and each is read in full.
pub const MAX_DENSE_FEEDBACK: usize = 100;

/// Query embeddings kept between a search's two scans.
const RECENT_QUERIES: usize = 16;

/// The dense list of one generation, or of several searched as one
/// ([`DenseList::merge`]).
pub struct DenseList {
    /// Each generation's rows, in ordinal order.
    parts: Vec<Rows>,
    embedder: &'static dyn Embedder,
    /// How many seeds move the query; 0: one scan.
    feedback: usize,
    /// Rows to rescore, when not [`codes::default_rescored`].
    rescore: Option<usize>,
    /// The share of the rows whose cells a search probes, when not
    /// [`codes::default_probe`].
    probe: Option<f64>,
    /// The last few queries embedded, with their vectors (newest last).
    recent: Mutex<VecDeque<(u128, Arc<[f32]>)>>,
    /// The noise floor ([`floor`]), measured the first time a search needs it.
    floor: OnceLock<Option<f32>>,
    /// The word floor ([`floor`]), as the index recorded it or measured the
    /// first time a search needs it.
    word_floor: OnceLock<Option<f32>>,
}

/// One generation's rows in a dense list.
struct Rows {
    vectors: StoredVectors,
    /// Which chunks have a non-zero vector (from the chunk table).
    has_vector: VectorFlags,
    /// The rows' sign codes, when the generation has them and the search
    /// may use them.
    codes: Option<SignCodes>,
    /// The setting the codes were written under: whether they serve a
    /// search depends on the rows it covers ([`DenseIndexSetting::serves`]).
    setting: DenseIndexSetting,
    /// The list-wide ordinal of its index's first chunk.
    base: ChunkOrd,
    /// For a part of an index of several, where the part's rows stand in
    /// the index's order, and which part it is (`None`: its rows follow
    /// `base` in order).
    order: Option<PartOrder>,
    /// The last set of flags over the list's ordinals this part's rows
    /// were picked from, with the rows it allows and how many
    /// ([`Rows::allowed`]): an index with a delta gives every unfiltered
    /// search the same set (its live chunks), which a search would
    /// otherwise copy and count row by row, twice.
    last_allowed: Mutex<Option<LastAllowed>>,
}

/// A set of flags over a list's ordinals, what it allows of one part's
/// rows, and how many (counted when first asked).
struct LastAllowed {
    flags: Arc<[bool]>,
    rows: Arc<[bool]>,
    count: OnceLock<usize>,
}

/// How a search goes through the sign codes ([`DenseList::rescore_depth`]).
#[derive(Debug, Clone, Copy)]
struct Depth {
    /// Rows with codes that the codes choose for rescoring.
    depth: usize,
    /// Allowed rows with codes (those the codes score).
    coded_allowed: usize,
    /// Allowed rows in all.
    allowed: usize,
}

/// One scan's outcome: the best chunks and the counts of scored chunks.
struct Scan {
    hits: Vec<ListHit>,
    matched: usize,
    filtered_out: usize,
    approximate: Option<Approximate>,
}

/// How a dense list searches, beyond what every list is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseOptions {
    /// How many seeds move the query (0: one scan, no feedback).
    pub feedback: usize,
    /// Scan every row even where the generation has an approximate index.
    pub exact: bool,
    /// Rows the sign codes choose for exact rescoring; `None`:
    /// [`codes::default_rescored`].
    pub rescore: Option<usize>,
    /// The share of the rows whose cells are probed, in (0, 1]; `None`:
    /// [`codes::default_probe`].
    pub probe: Option<f64>,
}

impl DenseList {
    /// Opens the vectors in `gen_dir`: one per chunk (`has_vector` says
    /// which are non-zero), of the embedder's dimension, and the
    /// generation's sign codes (written under `setting`) unless `options`
    /// ask for exact scans.
    /// Searches move the query toward its best `options.feedback` chunks
    /// first (0: they do not). The rows of the chunks a search returns are
    /// checked against the block checksums the manifest's `checksums` list
    /// ([`StoredVectors::checked`]).
    pub fn open(
        gen_dir: &Path,
        checksums: &Checksums,
        has_vector: VectorFlags,
        embedder: &'static dyn Embedder,
        setting: DenseIndexSetting,
        options: DenseOptions,
    ) -> Result<Self> {
        let dim = embedder.info().dim;
        // The codes are read in (a search that uses them reads them all,
        // and they are an eighth of the vectors), the vectors beside them
        // where a search reads them: populating them all would cost more
        // than a search that rescores a few thousand rows, and an index
        // whose codes serve only beside others (`setting`) scans its
        // vectors whole no slower for their pages coming as it reads.
        let codes = match options.exact {
            true => None,
            false => SignCodes::open(gen_dir, has_vector.len(), dim)?,
        };
        let vectors = match codes.is_some() {
            true => StoredVectors::open_lazily(gen_dir, has_vector.len(), dim)?,
            false => StoredVectors::open(gen_dir, has_vector.len(), dim)?,
        }
        .checked(checksums)?;
        Ok(Self {
            parts: vec![Rows {
                vectors,
                has_vector,
                codes,
                setting,
                base: 0,
                order: None,
                last_allowed: Mutex::new(None),
            }],
            embedder,
            feedback: options.feedback,
            rescore: options.rescore,
            probe: options.probe,
            recent: Mutex::new(VecDeque::with_capacity(RECENT_QUERIES)),
            floor: OnceLock::new(),
            word_floor: OnceLock::new(),
        })
    }

    /// One list over the generations of `lists`, searched as one index
    /// built over all their chunks: each list's rows numbered from its base
    /// (ascending; a generation left out leaves a gap). Cosines compare only
    /// under one model, so every list must embed with the same one (an
    /// error otherwise; the caller leaves out, and names, the rest). The
    /// first list's options hold for all.
    pub fn merge(lists: Vec<(Self, ChunkOrd)>) -> Result<Self> {
        // The best cosine over all their rows is the best of each one's: a
        // floor every list knows is known for all of them.
        let floors: Option<Vec<Option<f32>>> = (lists.iter())
            .map(|(list, _)| list.floor.get().copied())
            .collect();
        let mut lists = lists.into_iter();
        let Some((mut merged, first_base)) = lists.next() else {
            bail!("no dense list to merge");
        };
        merged.floor = OnceLock::new();
        if let Some(floors) = floors {
            merged.know_noise_floor(floors.into_iter().flatten().reduce(f32::max));
        }
        for rows in &mut merged.parts {
            rows.base += first_base;
        }
        for (list, base) in lists {
            ensure!(
                list.embedder.info() == merged.embedder.info(),
                "dense lists embedded with different models cannot be merged"
            );
            merged.parts.extend(list.parts.into_iter().map(|rows| Rows {
                base: rows.base + base,
                ..rows
            }));
        }
        Ok(merged)
    }

    /// Takes `floor` as this list's noise floor ([`floor`]) instead of
    /// measuring it: the one the index recorded when it was written, so a
    /// search embeds nothing but its query.
    pub fn know_noise_floor(&self, floor: Option<f32>) {
        let _ = self.floor.set(floor);
    }

    /// Takes `floor` as the model's word floor ([`floor`]) instead of
    /// measuring it: the one the index recorded when it was written.
    pub fn know_word_floor(&self, floor: f32) {
        let _ = self.word_floor.set(Some(floor));
    }

    /// One list over the parts of one index, `lists` (one per part, in
    /// order, each with where its rows stand in the index's order, `None`
    /// for an index of one part).
    pub fn of_parts(lists: Vec<(Self, Option<PartOrder>)>) -> Result<Self> {
        let (lists, orders): (Vec<_>, Vec<_>) = lists.into_iter().map(|(l, o)| ((l, 0), o)).unzip();
        let mut merged = Self::merge(lists)?;
        for (rows, order) in merged.parts.iter_mut().zip(orders) {
            rows.order = order;
        }
        Ok(merged)
    }

    /// The rows of all its generations.
    fn rows(&self) -> usize {
        self.parts.iter().map(|rows| rows.has_vector.len()).sum()
    }

    /// The generation holding the list-wide chunk `chunk`, and the chunk's
    /// ordinal in it; `None` for a chunk of no generation here (of an index
    /// the list leaves out).
    fn part_of(&self, chunk: ChunkOrd) -> Option<(&Rows, ChunkOrd)> {
        let at = self.parts.partition_point(|rows| rows.base <= chunk);
        let last = at.checked_sub(1)?;
        let rows = &self.parts[last];
        let Some(order) = &rows.order else {
            return ((chunk - rows.base) as usize)
                .lt(&rows.has_vector.len())
                .then_some((rows, chunk - rows.base));
        };
        // An index's parts are consecutive, all with its base, its last
        // part last.
        let (part, local) = order.locate(chunk - rows.base)?;
        let rows = self.parts.get((last + part).checked_sub(order.part())?)?;
        Some((rows, local))
    }

    /// [`DenseList::part_of`] for a chunk the list ranked: an error when
    /// it is of no generation here.
    fn locate(&self, chunk: ChunkOrd) -> Result<(&Rows, ChunkOrd)> {
        match self.part_of(chunk) {
            Some(found) => Ok(found),
            None => bail!("chunk {chunk} is past the dense list's rows"),
        }
    }

    /// The unit embedding of `query` (all zeros when the model knows none
    /// of it), from the recent ones when it was embedded lately. Recent
    /// queries are kept by a 128-bit hash of their text, never the text, so
    /// a long-running server that met huge queries does not keep them.
    fn embed_query(&self, query: &str) -> Result<(Arc<[f32]>, QueryEmbedding)> {
        let started = Instant::now();
        let key = xxhash_rust::xxh3::xxh3_128(query.as_bytes());
        let recent = |queries: &VecDeque<(u128, Arc<[f32]>)>| {
            queries
                .iter()
                .find(|(seen, _)| *seen == key)
                .map(|(_, vector)| Arc::clone(vector))
        };
        if let Some(vector) = recent(&self.recent.lock().unwrap_or_else(|e| e.into_inner())) {
            let reused = QueryEmbedding {
                time: Duration::ZERO,
                network: None,
            };
            return Ok((vector, reused));
        }
        let (vector, network) = self.embedder.embed_timed(&[query.to_string()])?;
        let vector: Arc<[f32]> = vector.into();
        let embedding = QueryEmbedding {
            time: started.elapsed(),
            network,
        };
        let mut queries = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if queries.len() == RECENT_QUERIES {
            queries.pop_front();
        }
        queries.push_back((key, Arc::clone(&vector)));
        Ok((vector, embedding))
    }

    /// Ranks `allow`'s chunks by `vector` into a list (empty for a zero
    /// vector or window), timed from `started`.
    fn rank(
        &self,
        vector: &[f32],
        window: usize,
        allow: &AllowSet,
        started: Instant,
    ) -> Result<RankedList> {
        let mut list = RankedList::empty(self.kind());
        list.prepare_time = started.elapsed();
        // A query the model knows nothing of has a zero vector: no ranking.
        if vector.iter().all(|v| *v == 0.0) || window == 0 {
            list.elapsed = list.prepare_time;
            return Ok(list);
        }
        let scan = self.scan(vector, window, allow)?;
        list.hits = scan.hits;
        list.matched = scan.matched;
        list.filtered_out = scan.filtered_out;
        list.approximate = scan.approximate;
        list.elapsed = started.elapsed();
        Ok(list)
    }

    /// The best `window` chunks of `allow` for the unit vector `query`:
    /// through the sign codes when they serve this search
    /// ([`DenseList::rescore_depth`]), else by an exact scan.
    fn scan(&self, query: &[f32], window: usize, allow: &AllowSet) -> Result<Scan> {
        let allows: Vec<AllowSet> = self.parts.iter().map(|rows| rows.allowed(allow)).collect();
        let scan = match self.rescore_depth(window, &allows) {
            Some(depth) => self.rescore_best(depth, query, window, &allows)?,
            None => self.scan_all(query, window, &allows)?,
        };
        self.check_hits(&scan.hits)?;
        Ok(scan)
    }

    /// How deep the sign codes choose rows to rescore for a search of
    /// `window` chunks allowed by `allows` (one set per generation), when
    /// they serve it: when some generation has codes, every setting they
    /// were written under serves a search over all the generations' rows,
    /// and the rows to rescore would not be every allowed row with a code.
    fn rescore_depth(&self, window: usize, allows: &[AllowSet]) -> Option<Depth> {
        let rows = self.rows();
        // Whether the codes serve is settled before any allowed row is
        // counted: a small index alone (the common case) pays nothing.
        let mut coded = self
            .parts
            .iter()
            .filter(|part| part.codes.is_some())
            .peekable();
        if coded.peek().is_none() || !coded.all(|part| part.setting.serves(rows)) {
            return None;
        }
        let (mut allowed, mut coded_allowed) = (0, 0);
        for (part, allow) in self.parts.iter().zip(allows) {
            let count = part.count_allowed(allow);
            allowed += count;
            if part.codes.is_some() {
                coded_allowed += count;
            }
        }
        let depth = (self.rescore)
            .unwrap_or_else(|| codes::default_rescored(window, rows))
            .max(window);
        (depth < coded_allowed).then_some(Depth {
            depth,
            coded_allowed,
            allowed,
        })
    }

    /// The best `window` chunks of `allows` for `query`: of the
    /// generations with codes, the `depth.depth` rows whose codes score
    /// best, over all those generations as over one
    /// ([`codes::best_across`]), rescored exactly (in row order, which
    /// reads the mapped rows forward); of a generation without (one too
    /// small for them), every allowed row, scanned as without codes.
    fn rescore_best(
        &self,
        depth: Depth,
        query: &[f32],
        window: usize,
        allows: &[AllowSet],
    ) -> Result<Scan> {
        let (quantized, query_scale) = quantize(query);
        let share =
            (self.probe).unwrap_or_else(|| codes::default_probe(depth.depth, depth.coded_allowed));
        let (mut scanned, mut competing) = (depth.coded_allowed, depth.coded_allowed);
        let mut cells: Option<CellsProbed> = None;
        let mut sets = Vec::new();
        let mut coded = Vec::new();
        for (at, (rows, allow)) in self.parts.iter().zip(allows).enumerate() {
            let Some(codes) = &rows.codes else { continue };
            let mut set = CodeSet::whole(codes, allow);
            let allowed = rows.count_allowed(allow);
            // The share is of the allowed rows: a filter that lets few
            // through probes more cells, and every code when they are few.
            let wanted = (share * allowed as f64).ceil() as usize;
            // A probe that stopped short found the filter keeping away
            // from the query: every code is scored instead.
            if let Some(probe) = (wanted < allowed)
                .then(|| codes.probe(&quantized, wanted, allow, allowed))
                .flatten()
                .filter(|probe| probe.allowed >= wanted)
            {
                set.blocks = probe.blocks;
                let probed = cells.get_or_insert(CellsProbed { probed: 0, of: 0 });
                probed.probed += probe.cells;
                probed.of += probe.of;
                // The kernel scores every row of a probed block; the
                // allowed rows of the probed cells compete.
                scanned = scanned - allowed + probe.rows;
                competing = competing - allowed + probe.allowed;
            }
            sets.push(set);
            coded.push(at);
        }
        let chosen = codes::best_across(&sets, &quantized, depth.depth, competing);
        let mut candidates: Vec<Vec<ChunkOrd>> = vec![Vec::new(); self.parts.len()];
        let mut rescored = chosen.len();
        for (_, set, ord) in chosen {
            candidates[coded[set]].push(ord);
        }
        let mut best = TopWindow::new(window);
        let mut scores = Vec::new();
        for ((rows, allow), mut local) in self.parts.iter().zip(allows).zip(candidates) {
            if rows.codes.is_none() {
                rescored += rows.scan_into(query, allow, &mut best)?.0;
                continue;
            }
            local.sort_unstable();
            rows.vectors
                .score_ords(&quantized, query_scale, &local, &mut scores)?;
            for (&chunk, &score) in local.iter().zip(&scores) {
                rows.check_score(chunk, score)?;
                best.push(Candidate {
                    score,
                    chunk: rows.global(chunk),
                });
            }
        }
        let hits: Vec<ListHit> = best.into_sorted().into_iter().map(ListHit::from).collect();
        // A damaged code can only cost recall; a returned chunk's code
        // that does not match its vector names the file.
        for hit in &hits {
            let (rows, chunk) = self.locate(hit.chunk)?;
            if let Some(codes) = &rows.codes {
                codes.check(chunk, rows.vectors.quantized_row(chunk)?.0)?;
            }
        }
        Ok(Scan {
            hits,
            matched: depth.allowed,
            filtered_out: self.rows() - depth.allowed,
            approximate: Some(Approximate {
                scanned,
                cells,
                rescored,
            }),
        })
    }

    /// The best `window` chunks of `allows` (one set per generation), every
    /// row scored.
    fn scan_all(&self, query: &[f32], window: usize, allows: &[AllowSet]) -> Result<Scan> {
        let mut best = TopWindow::new(window);
        let (mut matched, mut filtered_out) = (0, 0);
        for (rows, allow) in self.parts.iter().zip(allows) {
            let (allowed, removed) = rows.scan_into(query, allow, &mut best)?;
            matched += allowed;
            filtered_out += removed;
        }
        Ok(Scan {
            hits: best.into_sorted().into_iter().map(ListHit::from).collect(),
            matched,
            filtered_out,
            approximate: None,
        })
    }

    /// Checks that every returned chunk's vector is what the chunk table
    /// says: unit length, or zero for a chunk the model knew nothing of.
    /// Catches a zeroed or overwritten vector file at the cost of
    /// `window × dim` multiplications.
    fn check_hits(&self, hits: &[ListHit]) -> Result<()> {
        // In row order: explain's complete rankings check every row, and
        // rows visited in score order would be random reads of the mapped
        // vectors and chunk table.
        let mut chunks: Vec<ChunkOrd> = hits.iter().map(|hit| hit.chunk).collect();
        chunks.sort_unstable();
        for chunk in chunks {
            let (rows, chunk) = self.locate(chunk)?;
            rows.check_hit(chunk)?;
        }
        Ok(())
    }
}

impl Rows {
    /// The list-wide ordinal of row `row`.
    #[inline]
    fn global(&self, row: ChunkOrd) -> ChunkOrd {
        self.base + self.order.as_ref().map_or(row, |order| order.global(row))
    }

    /// What `allow` (over the list's ordinals) allows of these rows, by
    /// row. The same flags as the last search's give its answer again.
    fn allowed(&self, allow: &AllowSet) -> AllowSet {
        let rows = self.has_vector.len();
        let AllowSet::Only(flags) = allow else {
            return allow.part(self.base, rows);
        };
        let mut last = self
            .last_allowed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = last.as_ref().filter(|last| Arc::ptr_eq(&last.flags, flags)) {
            return AllowSet::Only(last.rows.clone());
        }
        let local: Arc<[bool]> = match &self.order {
            None => match allow.part(self.base, rows) {
                AllowSet::Only(local) => local,
                AllowSet::All => return AllowSet::All,
            },
            Some(order) => {
                let mut local = order.flags(flags, self.base as usize);
                local.resize(rows, false);
                local.into()
            }
        };
        *last = Some(LastAllowed {
            flags: flags.clone(),
            rows: local.clone(),
            count: OnceLock::new(),
        });
        AllowSet::Only(local)
    }

    /// How many of these rows `allowed` (from [`Rows::allowed`]) allows:
    /// counted once for the last search's flags.
    fn count_allowed(&self, allowed: &AllowSet) -> usize {
        let rows = self.has_vector.len();
        let AllowSet::Only(local) = allowed else {
            return rows;
        };
        let last = self
            .last_allowed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match last.as_ref().filter(|last| Arc::ptr_eq(&last.rows, local)) {
            Some(last) => *last.count.get_or_init(|| allowed.count(rows)),
            None => allowed.count(rows),
        }
    }

    /// Scores every row against `query` into `best`, those `allow` lets
    /// through: how many it let through and how many it removed.
    fn scan_into(
        &self,
        query: &[f32],
        allow: &AllowSet,
        best: &mut TopWindow,
    ) -> Result<(usize, usize)> {
        let (mut allowed, mut removed) = (0, 0);
        for (chunk, score) in self.vectors.similarities(query)?.into_iter().enumerate() {
            let chunk = chunk as ChunkOrd;
            self.check_score(chunk, score)?;
            if allow.allows(chunk) {
                allowed += 1;
                best.push(Candidate {
                    score,
                    chunk: self.global(chunk),
                });
            } else {
                removed += 1;
            }
        }
        Ok((allowed, removed))
    }

    /// Unit vectors give cosines in [-1, 1]; anything else is a damaged
    /// file: the one whose block checks fail on `chunk`'s row, else the
    /// vector file.
    fn check_score(&self, chunk: ChunkOrd, score: f32) -> Result<()> {
        if score.is_finite() && score.abs() <= 1.0 + SCORE_TOLERANCE {
            return Ok(());
        }
        self.vectors.quantized_row(chunk)?;
        bail!(damaged(
            self.vectors.path(),
            "holds a vector that is not unit length"
        ))
    }

    /// Checks that the vector of `chunk` (of this generation) is what the
    /// chunk table says: unit length, or zero for a chunk the model knew
    /// nothing of (see [`DenseList::check_hits`]).
    fn check_hit(&self, chunk: ChunkOrd) -> Result<()> {
        let (values, scale) = self.vectors.quantized_row(chunk)?;
        // Squares summed as integers, exactly.
        let squares: i64 = values.iter().map(|&v| i64::from(v) * i64::from(v)).sum();
        let norm = (squares as f32).sqrt() * scale;
        let expected = if self.has_vector.get(chunk)? == Some(true) {
            1.0
        } else {
            0.0
        };
        // Rounding moves each value by at most half the scale, so the
        // length by at most √dim × scale / 2 (0.02 is common; one row
        // in a million of corpus-big ×10 comes to 1.01).
        let slack = (values.len() as f32).sqrt() * scale / 2.0 + 1e-3;
        ensure!(
            (norm - expected).abs() <= slack,
            damaged(
                self.vectors.path(),
                "holds a vector that does not match its chunk"
            )
        );
        Ok(())
    }
}

impl List for DenseList {
    fn kind(&self) -> ListKind {
        ListKind::Dense
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let (vector, embedding) = self.embed_query(query)?;
        let mut list = self.rank(&vector, window, allow, started)?;
        list.embedding = Some(embedding);
        Ok(list)
    }

    fn feedback_seeds(&self) -> usize {
        self.feedback
    }

    /// The best cosine random strings reach among all chunks ([`floor`]).
    fn noise_floor(&self) -> Result<Option<f32>> {
        cached_floor(&self.floor, self.embedder, |vector| {
            let scan = self.scan(vector, 1, &AllowSet::All)?;
            Ok(scan.hits.first().map(|hit| hit.score))
        })
    }

    fn word_floor(&self, query: &str) -> Result<Option<(f32, f32)>> {
        Ok(floor::word_standing(self.embedder, query, &self.word_floor))
    }

    /// Moves the query toward the seeds that resemble it at all (a vector,
    /// and a positive cosine), then ranks by it; with no such seed the
    /// query stays as it is.
    fn refine(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
        seeds: &[ChunkOrd],
    ) -> Result<RankedList> {
        let started = Instant::now();
        let (query, embedding) = self.embed_query(query)?;
        let seeds = &seeds[..seeds.len().min(self.feedback)];
        // A seed of an index this list leaves out moves nothing.
        let row_of = |chunk| {
            let Some((rows, local)) = self.part_of(chunk) else {
                return Ok(None);
            };
            Ok((rows.has_vector.get(local)? == Some(true)).then_some((&rows.vectors, local)))
        };
        let (vector, used) = moved_query(&query, seeds, row_of)?;
        let mut list = self.rank(&vector, window, allow, started)?;
        list.feedback_chunks = used;
        list.embedding = Some(embedding);
        Ok(list)
    }

    /// Says when the model read only the start of the chunk: its vector
    /// stands for that part alone.
    fn match_reason(&self, _query: &str, text: &str) -> Option<String> {
        let window = self.embedder.window()?;
        self.embedder
            .cuts(text)?
            .then(|| format!("the model read only its first {window} word pieces"))
    }
}

/// The noise floor kept in `cache`, measured into it the first time (by
/// [`floor::noise_floor`] with `best`): a list measures it once per opened
/// generation, and only for a search that needs it.
pub fn cached_floor(
    cache: &OnceLock<Option<f32>>,
    embedder: &dyn Embedder,
    best: impl Fn(&[f32]) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    if let Some(floor) = cache.get() {
        return Ok(*floor);
    }
    let floor = floor::noise_floor(embedder, best)?;
    Ok(*cache.get_or_init(|| floor))
}

/// The unit vector `query` moved toward those of `seeds` that resemble it
/// at all (a vector, and a positive cosine), with the seeds used; with no
/// such seed the query stays as it is. `row_of` gives a seed's vectors and
/// its row in them, `None` for a chunk without a vector. The dense list's
/// feedback step, shared with any list that ranks the same vectors
/// elsewhere (the Milvus backend).
pub fn moved_query<'a>(
    query: &[f32],
    seeds: &[ChunkOrd],
    row_of: impl Fn(ChunkOrd) -> Result<Option<(&'a StoredVectors, ChunkOrd)>>,
) -> Result<(Vec<f32>, Vec<ChunkOrd>)> {
    let mut vector = query.to_vec();
    let mut used = Vec::new();
    let mut rows = Vec::new();
    for &chunk in seeds {
        let Some((vectors, row)) = row_of(chunk)? else {
            continue;
        };
        let similarity: f32 = vectors
            .row(row)?
            .iter()
            .zip(&vector)
            .map(|(a, b)| a * b)
            .sum();
        if similarity > 0.0 {
            used.push(chunk);
            rows.push(vectors.quantized_row(row)?);
        }
    }
    if !rows.is_empty() {
        move_toward(&mut vector, &rows);
    }
    Ok((vector, used))
}

/// Moves the unit vector `query` to `query + mean(rows)`, at unit length:
/// toward the rows' centroid, the two weighing alike. Each row is stored
/// int8 values and their scale; at least one row, each with a positive
/// cosine to the query, so the sum cannot vanish.
fn move_toward(query: &mut [f32], rows: &[(&[i8], f32)]) {
    let share = 1.0 / rows.len().max(1) as f32;
    for (values, scale) in rows {
        for (q, v) in query.iter_mut().zip(*values) {
            *q += share * scale * f32::from(*v);
        }
    }
    normalize(query);
}

/// A dense feedback count within 0…[`MAX_DENSE_FEEDBACK`].
pub fn check_dense_feedback(chunks: usize) -> Result<usize> {
    ensure!(
        chunks <= MAX_DENSE_FEEDBACK,
        "dense feedback must be between 0 and {MAX_DENSE_FEEDBACK} chunks, got {chunks}"
    );
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moved_query_is_the_query_plus_the_rows_mean_at_unit_length() {
        let mut query = [1.0, 0.0, 0.0];
        // (0, 1, 0) and (0, 0.6, 0.8), stored as int8 values and a scale.
        let rows: [(&[i8], f32); 2] = [(&[0, 127, 0], 1.0 / 127.0), (&[0, 6, 8], 0.1)];
        // q + mean = (1, 0.8, 0.4), of length √1.8.
        move_toward(&mut query, &rows);
        let length = 1.8f32.sqrt();
        let expected = [1.0 / length, 0.8 / length, 0.4 / length];
        for (m, e) in query.iter().zip(expected) {
            assert!((m - e).abs() < 1e-6, "{query:?}");
        }
        // One row weighs as much as the query: the result lies halfway.
        let mut query = [1.0, 0.0];
        move_toward(&mut query, &[(&[0, 127], 1.0 / 127.0)]);
        let half = 0.5f32.sqrt();
        assert!((query[0] - half).abs() < 1e-6 && (query[1] - half).abs() < 1e-6);
    }
}
