//! An index's live chunks as one table over its parts: an immutable base
//! generation and the delta generations appended after it, each of which
//! may bury files of the parts before it.
//!
//! ```text
//! delta.u32  in a delta: a u32 count of the parts before it; per part, a
//!            u32 count n, then n ascending u32 file indices of that part
//!            whose files (and so chunks) are dead — changed or deleted
//!            since it was written; then a u32 count m of the delta's own
//!            files and, per file, the u32 number of the earlier parts'
//!            files (live or dead) whose path sorts before its path
//! ```
//! A run that changes a few files writes a delta with just those files and
//! the tombstones of the versions they replace, rather than every table
//! anew (ARCHITECTURE.md, "Parts"). Readers see the parts as one table
//! whose chunk ordinals run in path order, as one generation's do: each
//! delta file's chunks stand where a fresh index would put them among the
//! earlier parts' (its recorded place), so a list that breaks ties by
//! ordinal breaks them by chunk id, and every ranking equals a fresh
//! index's. [`OrdinalMap`] holds that order as runs of consecutive chunks
//! of one part. A dead chunk keeps its ordinal but is never returned
//! ([`Parts::live_chunks`]), found by id, or counted. File indices run on
//! from part to part. An index without deltas is one part and reads
//! exactly as a generation.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, ensure};

use super::checked::{CheckedMap, write_with_blocks};
use super::checks::Checksums;
use super::damaged;
use super::generation::{ChunkOrd, ChunkRecord, ChunkView, FileEntry, Generation};

/// File, in a delta part, naming the files of earlier parts it buries and
/// where its own files stand among theirs.
pub const DELTA_FILE: &str = "delta.u32";

/// One part: a generation, where its files start in the index's
/// numbering, and which of its files later parts buried.
#[derive(Debug)]
pub struct Part {
    generation: Generation,
    file_base: u32,
    /// Its files buried by later parts, ascending, local indices.
    dead_files: Vec<u32>,
}

impl Part {
    /// The part's generation (its own folder and numbering).
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// Whether its file `local` is still live.
    pub fn file_is_live(&self, local: u32) -> bool {
        self.dead_files.binary_search(&local).is_err()
    }
}

/// Consecutive chunk ordinals of the index that one part holds in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The part, by position.
    pub part: usize,
    /// Its first chunk's ordinal in the part.
    pub local: ChunkOrd,
    /// Its first chunk's ordinal in the index.
    pub global: ChunkOrd,
    /// How many chunks.
    pub len: ChunkOrd,
}

/// Where each part's chunks stand in the index's path order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrdinalMap {
    /// The runs, in index order.
    runs: Vec<Run>,
    /// Per part, the positions of its runs in `runs` (in its own order).
    by_part: Vec<Vec<usize>>,
}

impl OrdinalMap {
    /// The map of `runs` (in index order) over `parts` parts.
    fn new(runs: Vec<Run>, parts: usize) -> Self {
        let mut by_part = vec![Vec::new(); parts];
        for (at, run) in runs.iter().enumerate() {
            by_part[run.part].push(at);
        }
        Self { runs, by_part }
    }

    /// The runs, in index order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The index ordinal of part `part`'s chunk `local` (which it holds).
    #[inline]
    pub fn global(&self, part: usize, local: ChunkOrd) -> ChunkOrd {
        let runs = &self.by_part[part];
        let at = runs.partition_point(|&r| self.runs[r].local <= local);
        let run = &self.runs[runs[at.saturating_sub(1)]];
        run.global + (local - run.local)
    }

    /// The runs of part `part`, in its own order.
    fn runs_of(&self, part: usize) -> impl Iterator<Item = &Run> {
        self.by_part[part].iter().map(|&at| &self.runs[at])
    }

    /// `flags` (one per index ordinal, from `base` on) as part `part` sees
    /// them: one per chunk of the part, in its order (`false` past the
    /// flags).
    fn part_flags(&self, part: usize, flags: &[bool], base: usize) -> Vec<bool> {
        let len = self.runs_of(part).map(|r| (r.local + r.len) as usize).max();
        let mut local = vec![false; len.unwrap_or(0)];
        for run in self.runs_of(part) {
            let from = base + run.global as usize;
            let to = (from + run.len as usize).min(flags.len());
            if from < to {
                let start = run.local as usize;
                local[start..start + (to - from)].copy_from_slice(&flags[from..to]);
            }
        }
        local
    }

    /// The part holding index ordinal `global`, and its ordinal there.
    pub fn locate(&self, global: ChunkOrd) -> Option<(usize, ChunkOrd)> {
        let at = self.runs.partition_point(|r| r.global <= global);
        let run = self.runs.get(at.checked_sub(1)?)?;
        (global - run.global < run.len).then(|| (run.part, run.local + (global - run.global)))
    }
}

/// One part of an index of several, as a list that reads the parts one by
/// one holds it: where the part's chunks stand in the index's order.
#[derive(Debug, Clone)]
pub struct PartOrder {
    map: Arc<OrdinalMap>,
    part: usize,
}

impl PartOrder {
    /// Part `part` of the index whose order is `map`.
    pub fn new(map: Arc<OrdinalMap>, part: usize) -> Self {
        Self { map, part }
    }

    /// The part's position among the index's parts.
    pub fn part(&self) -> usize {
        self.part
    }

    /// The index ordinal of the part's chunk `local`.
    #[inline]
    pub fn global(&self, local: ChunkOrd) -> ChunkOrd {
        self.map.global(self.part, local)
    }

    /// The part holding index ordinal `global`, and its ordinal there.
    pub fn locate(&self, global: ChunkOrd) -> Option<(usize, ChunkOrd)> {
        self.map.locate(global)
    }

    /// `flags` (one per index ordinal, from `base` on) as the part sees
    /// them ([`OrdinalMap::part_flags`]).
    pub fn flags(&self, flags: &[bool], base: usize) -> Vec<bool> {
        self.map.part_flags(self.part, flags, base)
    }
}

/// A stretch of consecutive files of one part, in the index's path order.
#[derive(Debug, Clone, Copy)]
struct FileRun {
    part: usize,
    start: u32,
    len: u32,
}

/// The live view of an index's parts (see the module doc).
#[derive(Debug)]
pub struct Parts {
    parts: Vec<Part>,
    /// The chunks' path order over the parts.
    map: Arc<OrdinalMap>,
    /// Per chunk ordinal, whether it is live; `None` when no chunk is buried.
    live: OnceLock<Option<Arc<[bool]>>>,
}

impl Parts {
    /// Opens the parts `parts` of the index in `index_dir`, oldest first:
    /// each generation number with the checks of its files. Every part
    /// after the first reads its [`DELTA_FILE`], which buries files of the
    /// parts before it and places its own among theirs.
    pub fn open(index_dir: &Path, parts: &[(u64, &Checksums)]) -> Result<Self> {
        ensure!(!parts.is_empty(), "an index has at least one part");
        let mut opened: Vec<Part> = Vec::with_capacity(parts.len());
        let mut order: Vec<FileRun> = Vec::new();
        let mut file_base = 0u64;
        for (at, (generation, checksums)) in parts.iter().enumerate() {
            let generation = Generation::open(index_dir, *generation, checksums)?;
            let files = generation.file_count() as u32;
            order = match at {
                0 => vec![FileRun {
                    part: 0,
                    start: 0,
                    len: files,
                }],
                _ => {
                    let (buried, places) = read_delta(generation.dir(), checksums)?;
                    bury(&mut opened, &buried, generation.dir())?;
                    let bad = || damaged(&generation.dir().join(DELTA_FILE), "misplaces its files");
                    ensure!(places.len() == files as usize, bad());
                    place(order, at, &places).with_context(bad)?
                }
            };
            opened.push(Part {
                file_base: u32::try_from(file_base)
                    .context("the index's parts hold more files than one index can")?,
                dead_files: Vec::new(),
                generation,
            });
            file_base += u64::from(files);
        }
        let map = chunk_runs(&opened, &order)?;
        Ok(Self {
            map: Arc::new(OrdinalMap::new(map, opened.len())),
            parts: opened,
            live: OnceLock::new(),
        })
    }

    /// Where part `part`'s chunks stand in the index's order, for a list
    /// that reads the parts one by one; `None` for an index of one part,
    /// whose ordinals are its generation's.
    pub fn order_of(&self, part: usize) -> Option<PartOrder> {
        (!self.is_single()).then(|| PartOrder::new(self.map.clone(), part))
    }

    /// Values given per part, one per chunk in the part's own order
    /// (`per_part`, in part order), gathered in the index's order.
    pub fn in_index_order<T: Copy>(&self, per_part: &[Vec<T>]) -> Result<Vec<T>> {
        let mut ordered = Vec::with_capacity(self.len());
        for run in self.runs() {
            let range = run.local as usize..(run.local + run.len) as usize;
            let values = per_part.get(run.part).and_then(|values| values.get(range));
            ordered.extend_from_slice(values.context("a part has fewer values than chunks")?);
        }
        Ok(ordered)
    }

    /// The runs of consecutive chunks of one part, in index order.
    fn runs(&self) -> &[Run] {
        self.map.runs()
    }

    /// The index ordinal of part `part`'s chunk `local`.
    fn global(&self, part: usize, local: ChunkOrd) -> ChunkOrd {
        match self.is_single() {
            true => local,
            false => self.map.global(part, local),
        }
    }

    /// The parts, oldest (the base) first.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The base: the first part, whose folder holds what is written once
    /// for the whole index (the graph).
    pub fn base(&self) -> &Generation {
        &self.parts[0].generation
    }

    /// True when the index is one generation without deltas.
    pub fn is_single(&self) -> bool {
        self.parts.len() == 1
    }

    /// Number of chunk ordinals, live and buried.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.generation.len()).sum()
    }

    /// True when the index holds no chunk ordinal.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of file indices, live and buried.
    pub fn file_count(&self) -> usize {
        let last = self.parts.last().expect("an index has at least one part");
        last.file_base as usize + last.generation.file_count()
    }

    /// Number of live chunks: all less the buried files' (a few ranges,
    /// not a count of every chunk's flag).
    pub fn live_len(&self) -> usize {
        let buried: usize = self.dead_chunks().iter().flatten().map(Range::len).sum();
        self.len().saturating_sub(buried)
    }

    /// Per chunk ordinal, whether it is live; `None` when every one is.
    pub fn live_chunks(&self) -> Option<Arc<[bool]>> {
        self.live
            .get_or_init(|| {
                if self.parts.iter().all(|p| p.dead_files.is_empty()) {
                    return None;
                }
                let mut live = vec![true; self.len()];
                for (at, dead) in self.dead_chunks().into_iter().enumerate() {
                    for chunks in dead {
                        // A file's chunks are consecutive in the index too.
                        let start = self.global(at, chunks.start) as usize;
                        if let Some(flags) = live.get_mut(start..start + chunks.len()) {
                            flags.fill(false);
                        }
                    }
                }
                Some(live.into())
            })
            .clone()
    }

    /// Per part, the ordinals (its own) of its buried chunks, as ascending
    /// ranges: one per buried file.
    pub fn dead_chunks(&self) -> Vec<Vec<Range<ChunkOrd>>> {
        (self.parts.iter())
            .map(|part| {
                (part.dead_files.iter())
                    .filter_map(|&file| part.generation.chunks_of_file(file).ok())
                    .filter(|chunks| !chunks.is_empty())
                    .collect()
            })
            .collect()
    }

    /// Whether chunk `chunk` is live.
    pub fn is_live(&self, chunk: ChunkOrd) -> bool {
        match self.live_chunks() {
            None => (chunk as usize) < self.len(),
            Some(live) => live.get(chunk as usize).copied().unwrap_or(false),
        }
    }

    /// The part holding chunk `chunk`, by position, and the chunk's
    /// ordinal in it.
    pub fn locate(&self, chunk: ChunkOrd) -> Result<(usize, ChunkOrd)> {
        let found = match self.is_single() {
            true => ((chunk as usize) < self.len()).then_some((0, chunk)),
            false => self.map.locate(chunk),
        };
        found.with_context(|| format!("chunk {chunk} is past the index's chunks"))
    }

    /// The part holding file `file`, by position, and the file's index in it.
    fn locate_file(&self, file: u32) -> Result<(usize, u32)> {
        let at = self.parts.partition_point(|p| p.file_base <= file);
        let found = at.checked_sub(1).and_then(|at| {
            let local = file - self.parts[at].file_base;
            ((local as usize) < self.parts[at].generation.file_count()).then_some((at, local))
        });
        found.with_context(|| format!("file {file} is past the index's files"))
    }

    /// Whether file `file` (index-wide) is live: held by a part and not
    /// buried by a later one.
    pub fn file_is_live(&self, file: u32) -> bool {
        (self.locate_file(file)).is_ok_and(|(at, local)| self.parts[at].file_is_live(local))
    }

    /// How many files are live.
    pub fn live_file_count(&self) -> usize {
        (self.parts.iter())
            .map(|part| part.generation.file_count() - part.dead_files.len())
            .sum()
    }

    /// The live files whose path starts with `prefix` (index-wide indices,
    /// part by part): a few binary searches, nothing decoded.
    pub fn live_files_with_prefix(&self, prefix: &str) -> Result<Vec<u32>> {
        let mut files = Vec::new();
        for part in &self.parts {
            let found = part.generation.files_with_prefix(prefix)?;
            let live = found.filter(|&local| part.file_is_live(local));
            files.extend(live.map(|local| part.file_base + local));
        }
        Ok(files)
    }

    /// The live files of the parts after the base (index-wide indices).
    pub fn live_delta_files(&self) -> Vec<u32> {
        (self.parts.iter().skip(1))
            .flat_map(|part| {
                let files = 0..part.generation.file_count() as u32;
                let live = files.filter(|&local| part.file_is_live(local));
                live.map(|local| part.file_base + local)
            })
            .collect()
    }

    /// The file entry at `file`.
    pub fn file(&self, file: u32) -> Result<FileEntry> {
        let (at, local) = self.locate_file(file)?;
        self.parts[at].generation.file(local)
    }

    /// The size and modification time file `file` had when indexed.
    pub fn file_size_and_time(&self, file: u32) -> Result<(u64, i128)> {
        let (at, local) = self.locate_file(file)?;
        self.parts[at].generation.file_size_and_time(local)
    }

    /// The path of file `file`.
    pub fn file_path(&self, file: u32) -> Result<&str> {
        let (at, local) = self.locate_file(file)?;
        self.parts[at].generation.file_path(local)
    }

    /// The file chunk `chunk` comes from.
    pub fn file_of_chunk(&self, chunk: ChunkOrd) -> Result<u32> {
        let (at, local) = self.locate(chunk)?;
        let part = &self.parts[at];
        Ok(part.file_base + part.generation.file_of_chunk(local)?)
    }

    /// The chunks of file `file`, as an ordinal range (a file's chunks
    /// are consecutive in the index as in its part).
    pub fn chunks_of_file(&self, file: u32) -> Result<Range<ChunkOrd>> {
        let (at, local) = self.locate_file(file)?;
        let chunks = self.parts[at].generation.chunks_of_file(local)?;
        if chunks.is_empty() {
            return Ok(0..0);
        }
        let start = self.global(at, chunks.start);
        Ok(start..start + chunks.len() as ChunkOrd)
    }

    /// The chunk at `chunk`, with its file (its record's `file` in the
    /// index's numbering) and text.
    pub fn chunk(&self, chunk: ChunkOrd) -> Result<ChunkView> {
        let (at, local) = self.locate(chunk)?;
        let part = &self.parts[at];
        let mut view = part.generation.chunk(local)?;
        view.record.file += part.file_base;
        Ok(view)
    }

    /// The record of chunk `chunk`, its `file` in the index's numbering.
    pub fn record(&self, chunk: ChunkOrd) -> Result<ChunkRecord> {
        let (at, local) = self.locate(chunk)?;
        let part = &self.parts[at];
        let mut record = part.generation.record(local)?;
        record.file += part.file_base;
        Ok(record)
    }

    /// The id of chunk `chunk`, `path#n`.
    pub fn chunk_id(&self, chunk: ChunkOrd) -> Result<String> {
        let (at, local) = self.locate(chunk)?;
        let generation = &self.parts[at].generation;
        let n = generation.record(local)?.n;
        let path = generation.file_path(generation.file_of_chunk(local)?)?;
        Ok(format!("{path}#{n}"))
    }

    /// The text of chunk `chunk`.
    pub fn text(&self, chunk: ChunkOrd) -> Result<String> {
        let (at, local) = self.locate(chunk)?;
        self.parts[at].generation.text(local)
    }

    /// The length in bytes of chunk `chunk`'s text.
    pub fn text_len(&self, chunk: ChunkOrd) -> Result<u64> {
        let (at, local) = self.locate(chunk)?;
        self.parts[at].generation.text_len(local)
    }

    /// The live chunk with id `path#n`, if any.
    pub fn find(&self, id: &str) -> Option<ChunkOrd> {
        let (path, _) = id.rsplit_once('#')?;
        let (at, _) = self.live_file(path)?;
        Some(self.global(at, self.parts[at].generation.find(id)?))
    }

    /// The live file at each of `paths` (sorted, relative to the root), as
    /// [`Parts::file_index`] finds it, by one merge of the paths with each
    /// part's sorted file table from the first path's place: a walk's
    /// every file costs a path comparison, not a binary search.
    pub fn live_file_indices(&self, paths: &[&str]) -> Result<Vec<Option<u32>>> {
        // Per path, the newest part's verdict: `Some(None)` for a buried file.
        let mut found: Vec<Option<Option<u32>>> = vec![None; paths.len()];
        for part in self.parts.iter().rev() {
            let generation = &part.generation;
            let Some(first) = paths.first() else { break };
            let count = generation.file_count() as u32;
            let mut file = generation.files_before(first)?;
            for (at, path) in paths.iter().enumerate() {
                while file < count && generation.file_path(file)? < *path {
                    file += 1;
                }
                if file == count {
                    break;
                }
                // The newest part holding a path decides, live or buried.
                if found[at].is_none() && generation.file_path(file)? == *path {
                    let live = part.file_is_live(file).then_some(part.file_base + file);
                    found[at] = Some(live);
                }
            }
        }
        Ok(found.into_iter().map(Option::flatten).collect())
    }

    /// The live file at `path` (relative to the root).
    pub fn file_index(&self, path: &str) -> Option<u32> {
        let (at, local) = self.live_file(path)?;
        Some(self.parts[at].file_base + local)
    }

    /// The part holding the live file at `path` and its index there: the
    /// newest part that holds the path, unless it is buried (deleted).
    fn live_file(&self, path: &str) -> Option<(usize, u32)> {
        let (at, local) = self
            .parts
            .iter()
            .enumerate()
            .rev()
            .find_map(|(at, part)| Some((at, part.generation.file_index(path)?)))?;
        self.parts[at].file_is_live(local).then_some((at, local))
    }

    /// The file of every chunk (index-wide file indices), in index order.
    pub fn chunk_files(&self) -> Result<Vec<u32>> {
        let per_part: Vec<Vec<u32>> = (self.parts.iter())
            .map(|part| {
                let files = part.generation.chunk_files()?;
                Ok(files.map(|file| part.file_base + file).collect())
            })
            .collect::<Result<_>>()?;
        self.in_index_order(&per_part)
    }

    /// Every file's document date in seconds (index-wide file indices).
    pub fn file_dates(&self) -> Result<Vec<i64>> {
        let mut dates = Vec::with_capacity(self.file_count());
        for part in &self.parts {
            dates.extend_from_slice(&part.generation.file_dates()?);
        }
        Ok(dates)
    }

    /// Every live file with its index, by path (as a walk lists them).
    pub fn live_files(&self) -> Result<Vec<(u32, FileEntry)>> {
        let mut files = Vec::new();
        for part in &self.parts {
            for local in 0..part.generation.file_count() as u32 {
                if part.file_is_live(local) {
                    files.push((part.file_base + local, part.generation.file(local)?));
                }
            }
        }
        // Each part's files are in path order already: a stable sort
        // merges those runs in one pass.
        if !self.is_single() {
            files.sort_by(|a, b| a.1.path.cmp(&b.1.path));
        }
        Ok(files)
    }
}

/// Adds the files `buried` names (per earlier part, ascending local
/// indices) to `earlier`'s dead files; the delta in `dir` must name only
/// files the earlier parts hold.
fn bury(earlier: &mut [Part], buried: &[Vec<u32>], dir: &Path) -> Result<()> {
    let bad = || damaged(&dir.join(DELTA_FILE), "does not match the index's parts");
    ensure!(buried.len() == earlier.len(), bad());
    for (part, files) in earlier.iter_mut().zip(buried) {
        let count = part.generation.file_count() as u32;
        ensure!(
            files.is_sorted() && files.last().is_none_or(|&f| f < count),
            bad()
        );
        let mut dead: Vec<u32> = part.dead_files.iter().chain(files).copied().collect();
        dead.sort_unstable();
        dead.dedup();
        part.dead_files = dead;
    }
    Ok(())
}

/// The file order `order` of the earlier parts with part `part`'s files
/// placed in it: its file `i` after `places[i]` of theirs (`None` when the
/// places are not ascending or reach past their files).
fn place(order: Vec<FileRun>, part: usize, places: &[u32]) -> Option<Vec<FileRun>> {
    let mut placed: Vec<FileRun> = Vec::with_capacity(order.len() + 2 * places.len());
    let push = |placed: &mut Vec<FileRun>, run: FileRun| match placed.last_mut() {
        Some(last) if last.part == run.part && last.start + last.len == run.start => {
            last.len += run.len;
        }
        _ if run.len > 0 => placed.push(run),
        _ => {}
    };
    let mut earlier = order.into_iter();
    let mut current: Option<FileRun> = None;
    let mut emitted = 0u32;
    for (file, &at) in places.iter().enumerate() {
        if at < emitted {
            return None;
        }
        let mut wanted = at - emitted;
        while wanted > 0 {
            let run = match current.take() {
                Some(run) => run,
                None => earlier.next()?,
            };
            let taken = run.len.min(wanted);
            push(&mut placed, FileRun { len: taken, ..run });
            if taken < run.len {
                current = Some(FileRun {
                    start: run.start + taken,
                    len: run.len - taken,
                    ..run
                });
            }
            wanted -= taken;
            emitted += taken;
        }
        let own = FileRun {
            part,
            start: file as u32,
            len: 1,
        };
        push(&mut placed, own);
    }
    for run in current.into_iter().chain(earlier) {
        push(&mut placed, run);
    }
    Some(placed)
}

/// The chunk runs of the file order `order` over `parts`.
fn chunk_runs(parts: &[Part], order: &[FileRun]) -> Result<Vec<Run>> {
    let mut runs: Vec<Run> = Vec::with_capacity(order.len());
    let mut global: u64 = 0;
    for run in order.iter().filter(|run| run.len > 0) {
        let generation = &parts[run.part].generation;
        let first = generation.chunks_of_file(run.start)?;
        let last = generation.chunks_of_file(run.start + run.len - 1)?;
        let (local, len) = (first.start, last.end.saturating_sub(first.start));
        if len == 0 {
            continue;
        }
        runs.push(Run {
            part: run.part,
            local,
            global: ChunkOrd::try_from(global)
                .context("the index's parts hold more chunks than one index can")?,
            len,
        });
        global += u64::from(len);
    }
    ChunkOrd::try_from(global).context("the index's parts hold more chunks than one index can")?;
    Ok(runs)
}

/// The [`DELTA_FILE`] of the delta in `dir`: per earlier part, the local
/// indices of its files this delta buries; and per file of its own, how
/// many earlier files sort before it.
pub fn read_delta(dir: &Path, checksums: &Checksums) -> Result<(Vec<Vec<u32>>, Vec<u32>)> {
    let path = dir.join(DELTA_FILE);
    ensure!(
        checksums.contains_key(DELTA_FILE),
        damaged(&path, "is not in the manifest")
    );
    let map = CheckedMap::open(dir, DELTA_FILE, checksums)?;
    parse_delta(map.all()?).with_context(|| damaged(&path, "is malformed"))
}

/// Writes the [`DELTA_FILE`] of a delta into its folder `dir`: the files
/// of earlier parts it buries (per part, ascending local indices) and
/// each of its files' place among theirs.
pub fn write_delta(dir: &Path, buried: &[Vec<u32>], places: &[u32]) -> Result<()> {
    let mut words = vec![buried.len() as u32];
    for files in buried {
        words.push(files.len() as u32);
        words.extend(files);
    }
    words.push(places.len() as u32);
    words.extend(places);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    write_with_blocks(&dir.join(DELTA_FILE), &bytes)
}

/// The sections of a [`DELTA_FILE`] (see the module doc).
fn parse_delta(bytes: &[u8]) -> Option<(Vec<Vec<u32>>, Vec<u32>)> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut words = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap_or_default()));
    let section = |words: &mut dyn Iterator<Item = u32>| -> Option<Vec<u32>> {
        let count = words.next()? as usize;
        let section: Vec<u32> = words.take(count).collect();
        (section.len() == count).then_some(section)
    };
    let parts = words.next()? as usize;
    let mut buried = Vec::with_capacity(parts.min(1024));
    for _ in 0..parts {
        buried.push(section(&mut words)?);
    }
    let places = section(&mut words)?;
    words.next().is_none().then_some((buried, places))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn delta_files_round_trip_and_malformed_ones_are_refused() {
        let buried = vec![vec![1, 4, 9], vec![], vec![0]];
        let mut words = vec![3u32, 3, 1, 4, 9, 0, 1, 0, 2, 0, 5];
        let bytes = encoded(&words);
        assert_eq!(parse_delta(&bytes), Some((buried, vec![0, 5])));
        words.push(7);
        assert_eq!(parse_delta(&encoded(&words)), None);
        assert_eq!(parse_delta(&bytes[..bytes.len() - 4]), None);
        assert_eq!(parse_delta(&bytes[..5]), None);
    }

    #[test]
    fn placed_files_interleave_in_path_order() {
        let base = vec![FileRun {
            part: 0,
            start: 0,
            len: 5,
        }];
        // Delta files before all, between 2 and 3 (twice), and after all.
        let placed = place(base.clone(), 1, &[0, 2, 2, 5]).unwrap();
        let shape: Vec<(usize, u32, u32)> =
            placed.iter().map(|r| (r.part, r.start, r.len)).collect();
        assert_eq!(
            shape,
            [(1, 0, 1), (0, 0, 2), (1, 1, 2), (0, 2, 3), (1, 3, 1)]
        );
        assert!(place(base.clone(), 1, &[3, 2]).is_none(), "not ascending");
        assert!(place(base, 1, &[6]).is_none(), "past the files");
    }

    #[test]
    fn the_map_finds_each_chunk_both_ways() {
        let runs = vec![
            Run {
                part: 1,
                local: 0,
                global: 0,
                len: 2,
            },
            Run {
                part: 0,
                local: 0,
                global: 2,
                len: 3,
            },
            Run {
                part: 1,
                local: 2,
                global: 5,
                len: 1,
            },
            Run {
                part: 0,
                local: 3,
                global: 6,
                len: 4,
            },
        ];
        let map = OrdinalMap::new(runs, 2);
        for global in 0..10 {
            let (part, local) = map.locate(global).unwrap();
            assert_eq!(map.global(part, local), global);
        }
        assert_eq!(map.locate(10), None);
        assert_eq!(map.global(0, 4), 7);
        assert_eq!(map.global(1, 2), 5);
    }
}
