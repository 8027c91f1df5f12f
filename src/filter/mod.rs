//! Metadata and time filters, applied before any list takes its top window.
//!
//! A filter is a set of `key=value` conditions: a chunk passes when, for
//! every key, its file's metadata holds at least one of the values asked for
//! that key (AND across keys, OR across values of one key), and its file's
//! document date is within the [`TimeFilter`]'s bounds. The filters are
//! evaluated once per search into an [`AllowSet`] over chunk ordinals, and
//! every list consults the same set — so a filtered search never comes back
//! short because unfiltered hits filled the window, and both lists agree on
//! what the filter means.

mod time;

pub use time::{TimeBound, TimeFilter, WHEN_FORMS};

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::lists::AllowSet;
use crate::store::generation::{FileEntry, Generation};
use crate::store::metadata_index::{MetadataIndex, UNINDEXED_KEY};
use crate::store::parts::Parts;

/// Validated filter conditions: key → accepted values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    conditions: BTreeMap<String, Vec<String>>,
    /// Only files under this folder (relative to the root, `/`-separated).
    folder: Option<String>,
    /// Only files dated within these bounds.
    time: TimeFilter,
}

impl Filter {
    /// Builds a filter from `(key, value)` pairs; repeated keys OR their values.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut conditions: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, value) in pairs {
            let values = conditions.entry(key.into()).or_default();
            let value = value.into();
            if !values.contains(&value) {
                values.push(value);
            }
        }
        Self {
            conditions,
            folder: None,
            time: TimeFilter::default(),
        }
    }

    /// Restricts the filter to files dated within `time`.
    pub fn within_time(mut self, time: TimeFilter) -> Self {
        self.time = time;
        self
    }

    /// The time bounds.
    pub fn time(&self) -> &TimeFilter {
        &self.time
    }

    /// The folder files must be under (ending in `/`), if any.
    pub fn folder(&self) -> Option<&str> {
        self.folder.as_deref()
    }

    /// Restricts the filter to files under `folder` (relative to the root,
    /// `/`-separated; empty means the whole root). Used by `search --here`.
    pub fn within_folder(mut self, folder: &str) -> Self {
        let folder = folder.trim_matches('/');
        self.folder = (!folder.is_empty()).then(|| format!("{folder}/"));
        self
    }

    /// True when there is no condition.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.folder.is_none() && self.time.is_empty()
    }

    /// True when there is a metadata or folder condition (one that needs
    /// the file entries decoded).
    fn reads_metadata(&self) -> bool {
        !self.conditions.is_empty() || self.folder.is_some()
    }

    /// The conditions, by key.
    pub fn conditions(&self) -> &BTreeMap<String, Vec<String>> {
        &self.conditions
    }

    /// The first condition `file` fails, as `key=value` (values of one key
    /// joined by `|`) or the time bounds, or `None` when it passes.
    pub fn failing_condition(&self, file: &FileEntry) -> Option<String> {
        let metadata = &file.metadata;
        let date = file.date();
        if !self.time.admits(date.seconds) {
            return Some(format!(
                "{} (dated {})",
                self.time.describe(),
                date.rfc3339()
            ));
        }
        if let Some(folder) = &self.folder {
            let in_folder = metadata
                .get("path")
                .is_some_and(|p| p.iter().any(|p| p.starts_with(folder.as_str())));
            if !in_folder {
                return Some(format!("--here {}", folder.trim_end_matches('/')));
            }
        }
        self.conditions
            .iter()
            .find(|(key, wanted)| !passes(metadata, key, wanted))
            .map(|(key, wanted)| format!("{key}={}", wanted.join("|")))
    }

    /// Evaluates the filters of the indexes a search reads (one or several,
    /// searched as one), each index's own (the same conditions, the folder
    /// of `--here` aside; `None`: nothing of that index is allowed), over
    /// each one's live chunks, part by part: metadata conditions through
    /// each generation's value index, time bounds through its stored dates,
    /// and a chunk a later part buried never passes. A key or value some
    /// index lacks narrows that index to nothing; one no index's live file
    /// has is an error naming the keys or values they do have (each can
    /// only be a typo, and would silently return nothing).
    pub fn evaluate_several(members: &[(Option<&Filter>, &Parts)]) -> Result<Vec<AllowSet>> {
        let mut allowed = Vec::with_capacity(members.len());
        let mut met: Vec<bool> = Vec::new();
        for (filter, parts) in members {
            let Some(filter) = filter else {
                allowed.push(AllowSet::Only(Vec::new().into()));
                continue;
            };
            let (allow, member_met) = filter.evaluate_met(parts)?;
            met.resize(member_met.len(), false);
            for (met, member_met) in met.iter_mut().zip(member_met) {
                *met |= member_met;
            }
            allowed.push(allow);
        }
        let first = members.iter().find_map(|(filter, _)| *filter);
        if let Some(filter) = first.filter(|_| met.contains(&false)) {
            let parts: Vec<&Parts> = members.iter().map(|(_, parts)| *parts).collect();
            filter.name_unmet(&parts)?;
        }
        Ok(allowed)
    }

    /// One index's allowed chunks and, per condition, whether a live file
    /// has one of its values ([`Filter::evaluate_several`]).
    fn evaluate_met(&self, parts: &Parts) -> Result<(AllowSet, Vec<bool>)> {
        let live = parts.live_chunks();
        if self.is_empty() {
            return Ok((live.map_or(AllowSet::All, AllowSet::Only), Vec::new()));
        }
        if parts.is_single() {
            // One part buries nothing, and its chunks are in index order.
            let generation = parts.base();
            let (passing, met) = self.generation_files(generation, &|_| true)?;
            return Ok((allow_chunks(&passing, generation.chunk_files()?), met));
        }
        let mut per_part = Vec::with_capacity(parts.parts().len());
        let mut met = vec![false; self.conditions.len()];
        for part in parts.parts() {
            let generation = part.generation();
            let live = |file: usize| part.file_is_live(file as u32);
            let (passing, part_met) = self.generation_files(generation, &live)?;
            for (met, part_met) in met.iter_mut().zip(part_met) {
                *met |= part_met;
            }
            let chunk_files = generation.chunk_files()?;
            per_part.push(chunk_files.map(|file| passing[file as usize]).collect());
        }
        let allowed = AllowSet::Only(parts.in_index_order(&per_part)?.into());
        let allowed = match live {
            Some(live) => allowed.and(&live),
            None => allowed,
        };
        Ok((allowed, met))
    }

    /// The error for a key or value no live file of `indexes` has, named
    /// from their live files as one fresh index of them all names it
    /// (decoded only on this error path); `Ok` if every one is held.
    fn name_unmet(&self, indexes: &[&Parts]) -> Result<()> {
        let mut live = Vec::new();
        for parts in indexes {
            live.extend(parts.live_files()?.into_iter().map(|(_, file)| file));
        }
        self.files_passing(&Entries(&live), None)?;
        Ok(())
    }

    /// Per file of `generation`, whether it passes, and per condition
    /// whether a file `live` calls live has one of its values (see
    /// [`Filter::files_passing`]).
    fn generation_files(
        &self,
        generation: &Generation,
        live: &dyn Fn(usize) -> bool,
    ) -> Result<(Vec<bool>, Vec<bool>)> {
        let live = Some(live);
        let (mut passing, met) = match (self.reads_metadata(), generation.metadata_index()) {
            (false, _) => (vec![true; generation.file_count()], Vec::new()),
            (true, Some(index)) => self.files_passing(&Indexed { index, generation }, live)?,
            (true, None) => self.files_passing(&Entries(&generation.files()?), live)?,
        };
        if !self.time.is_empty() {
            let dates = generation.file_dates()?;
            for (passes, &date) in passing.iter_mut().zip(dates.iter()) {
                *passes &= self.time.admits(date);
            }
        }
        Ok((passing, met))
    }

    /// Evaluates the filter over `files` for chunks whose file indices are
    /// `chunk_files` (in ordinal order), the dates read from the entries.
    pub fn evaluate_files(
        &self,
        files: &[FileEntry],
        chunk_files: impl Iterator<Item = u32>,
    ) -> Result<AllowSet> {
        if self.is_empty() {
            return Ok(AllowSet::All);
        }
        let (mut passing, _) = self.files_passing(&Entries(files), None)?;
        for (passes, file) in passing.iter_mut().zip(files) {
            *passes &= self.time.admits(file.date().seconds);
        }
        Ok(allow_chunks(&passing, chunk_files))
    }

    /// Per file, whether it passes the metadata and folder conditions, and
    /// per condition whether a live file has one of its values.
    ///
    /// Without `live` (all files are), a key that no indexed file carries
    /// is an error naming it (and the nearest indexed key), and so is a
    /// condition none of whose values any file has (naming the key's
    /// values, most common first): each can only be a typo and would
    /// silently return nothing. With `live` (one part of an index of
    /// several, whose other parts may hold the key), there is no error.
    fn files_passing(
        &self,
        holders: &dyn Holders,
        live: Option<&dyn Fn(usize) -> bool>,
    ) -> Result<(Vec<bool>, Vec<bool>)> {
        let mut passing = match &self.folder {
            Some(folder) => holders.files_under(folder)?,
            None => vec![true; holders.file_count()],
        };
        let mut met = Vec::with_capacity(self.conditions.len());
        for (key, wanted) in &self.conditions {
            let with = holders.files_with(key, wanted)?;
            let held = |file: usize| live.is_none_or(|live| live(file));
            let found = (with.iter().flatten().enumerate()).any(|(file, has)| *has && held(file));
            met.push(found);
            if live.is_some() {
                let with = with.unwrap_or_default();
                for (at, passes) in passing.iter_mut().enumerate() {
                    *passes &= with.get(at).copied().unwrap_or(false);
                }
                continue;
            }
            let Some(with) = with else {
                bail!(
                    "no indexed file has the metadata key '{key}'{}",
                    suggest_key(&holders.keys()?, key)
                );
            };
            if !with.contains(&true) {
                let mut values = holders.value_counts(key)?;
                values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                let known: Vec<String> = values
                    .iter()
                    .take(SHOWN_VALUES)
                    .map(|(v, n)| match n {
                        1 => format!("{v} (1 file)"),
                        n => format!("{v} ({n} files)"),
                    })
                    .collect();
                let more = values.len().saturating_sub(SHOWN_VALUES);
                bail!(
                    "no indexed file has {key}={}; its values: {}{}; values are compared exactly, case included",
                    wanted.join(","),
                    known.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                );
            }
            for (passes, has) in passing.iter_mut().zip(with) {
                *passes &= has;
            }
        }
        Ok((passing, met))
    }
}

/// The chunks whose file (by index, `chunk_files` in ordinal order) passes.
fn allow_chunks(file_passes: &[bool], chunk_files: impl Iterator<Item = u32>) -> AllowSet {
    AllowSet::Only(
        chunk_files
            .map(|file| file_passes.get(file as usize).copied().unwrap_or(false))
            .collect(),
    )
}

/// Where a filter finds which files have which metadata: the generation's
/// value index, or the decoded file entries.
trait Holders {
    /// Number of files.
    fn file_count(&self) -> usize;
    /// Every metadata key, sorted.
    fn keys(&self) -> Result<Vec<String>>;
    /// Per file, whether its `key` holds one of `wanted`; `None` when no
    /// file has `key`.
    fn files_with(&self, key: &str, wanted: &[String]) -> Result<Option<Vec<bool>>>;
    /// Each value of `key` with how many files have it.
    fn value_counts(&self, key: &str) -> Result<Vec<(String, usize)>>;
    /// Per file, whether its path starts with `folder` (which ends in `/`).
    fn files_under(&self, folder: &str) -> Result<Vec<bool>>;
}

/// A generation's value index, and its file table for the key the index
/// leaves out ([`UNINDEXED_KEY`]: files are sorted by path).
struct Indexed<'a> {
    index: &'a MetadataIndex,
    generation: &'a Generation,
}

impl Indexed<'_> {
    /// Per file, whether it is among `files`.
    fn flags(&self, files: impl IntoIterator<Item = u32>) -> Vec<bool> {
        let mut flags = vec![false; self.file_count()];
        for file in files {
            if let Some(flag) = flags.get_mut(file as usize) {
                *flag = true;
            }
        }
        flags
    }
}

impl Holders for Indexed<'_> {
    fn file_count(&self) -> usize {
        self.generation.file_count()
    }

    fn keys(&self) -> Result<Vec<String>> {
        let mut keys: Vec<String> = self.index.keys()?.into_iter().map(str::to_string).collect();
        if self.file_count() > 0 {
            keys.push(UNINDEXED_KEY.to_string());
            keys.sort();
            keys.dedup();
        }
        Ok(keys)
    }

    fn files_with(&self, key: &str, wanted: &[String]) -> Result<Option<Vec<bool>>> {
        if key == UNINDEXED_KEY {
            if self.file_count() == 0 {
                return Ok(None);
            }
            let files = wanted
                .iter()
                .filter_map(|path| self.generation.file_index(path));
            return Ok(Some(self.flags(files)));
        }
        let Some(values) = self.index.key(key)? else {
            return Ok(None);
        };
        let lists = wanted
            .iter()
            .map(|v| values.files_with(v))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(self.flags(lists.into_iter().flatten().copied())))
    }

    fn value_counts(&self, key: &str) -> Result<Vec<(String, usize)>> {
        if key == UNINDEXED_KEY {
            return (0..self.file_count() as u32)
                .map(|file| Ok((self.generation.file_path(file)?.to_string(), 1)))
                .collect();
        }
        Ok(match self.index.key(key)? {
            Some(values) => values
                .counts()?
                .into_iter()
                .map(|(v, n)| (v.to_string(), n))
                .collect(),
            None => Vec::new(),
        })
    }

    fn files_under(&self, folder: &str) -> Result<Vec<bool>> {
        Ok(self.flags(self.generation.files_with_prefix(folder)?))
    }
}

/// Decoded file entries (a generation written before the value index).
struct Entries<'a>(&'a [FileEntry]);

impl Holders for Entries<'_> {
    fn file_count(&self) -> usize {
        self.0.len()
    }

    fn keys(&self) -> Result<Vec<String>> {
        let keys: std::collections::BTreeSet<&String> =
            self.0.iter().flat_map(|f| f.metadata.keys()).collect();
        Ok(keys.into_iter().cloned().collect())
    }

    fn files_with(&self, key: &str, wanted: &[String]) -> Result<Option<Vec<bool>>> {
        if !self.0.iter().any(|f| f.metadata.contains_key(key)) {
            return Ok(None);
        }
        Ok(Some(
            self.0
                .iter()
                .map(|f| passes(&f.metadata, key, wanted))
                .collect(),
        ))
    }

    fn value_counts(&self, key: &str) -> Result<Vec<(String, usize)>> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for values in self.0.iter().filter_map(|f| f.metadata.get(key)) {
            let distinct: std::collections::BTreeSet<&String> = values.iter().collect();
            for value in distinct {
                *counts.entry(value.as_str()).or_default() += 1;
            }
        }
        Ok(counts
            .into_iter()
            .map(|(v, n)| (v.to_string(), n))
            .collect())
    }

    fn files_under(&self, folder: &str) -> Result<Vec<bool>> {
        Ok(self.0.iter().map(|f| f.path.starts_with(folder)).collect())
    }
}

/// Most values of a key named when a filter asks for one no file has.
const SHOWN_VALUES: usize = 5;

/// "; did you mean 'K'?" for the indexed key nearest to `key` (within two
/// edits, `strsim`'s Damerau–Levenshtein), else the start of the list of
/// `keys` (sorted).
fn suggest_key(keys: &[String], key: &str) -> String {
    let nearest = keys
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&k.to_lowercase(), &key.to_lowercase()),
                k,
            )
        })
        .min();
    match nearest {
        Some((distance, k)) if distance <= 2 => format!("; did you mean '{k}'?"),
        _ => {
            let shown: Vec<&str> = keys
                .iter()
                .take(SHOWN_VALUES * 2)
                .map(String::as_str)
                .collect();
            format!("; the keys are {}", shown.join(", "))
        }
    }
}

/// True when `metadata[key]` holds one of the `wanted` values.
fn passes(metadata: &crate::corpus::Metadata, key: &str, wanted: &[String]) -> bool {
    metadata
        .get(key)
        .is_some_and(|have| have.iter().any(|v| wanted.contains(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Metadata;
    use crate::store::generation::{ChunkOrd, ChunkRecord, ChunkTable};

    fn table() -> ChunkTable {
        let file = |path: &str, pairs: &[(&str, &[&str])]| FileEntry {
            path: path.into(),
            metadata: pairs
                .iter()
                .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
                .collect::<Metadata>(),
            stamp: Default::default(),
        };
        let chunk = |file| ChunkRecord {
            file,
            n: 1,
            heading_path: Default::default(),
            lines: (1, 1),
            text_start: 0,
            text_len: 0,
            text_crc: 0,
            has_vector: false,
            uid: file,
        };
        ChunkTable {
            files: vec![
                file(
                    "prod.md",
                    &[("environment", &["production"]), ("service", &["billing"])],
                ),
                file("both.md", &[("environment", &["production", "staging"])]),
                file(
                    "stage.md",
                    &[("environment", &["staging"]), ("service", &["billing"])],
                ),
            ],
            chunks: vec![chunk(0), chunk(0), chunk(1), chunk(2)],
        }
    }

    fn eval(filter: &Filter, table: &ChunkTable) -> Result<AllowSet> {
        filter.evaluate_files(&table.files, table.chunks.iter().map(|c| c.file))
    }

    fn allowed(filter: &Filter) -> Vec<ChunkOrd> {
        let set = eval(filter, &table()).unwrap();
        (0..4).filter(|&c| set.allows(c)).collect()
    }

    #[test]
    fn empty_filter_allows_everything() {
        assert_eq!(eval(&Filter::default(), &table()).unwrap(), AllowSet::All);
    }

    #[test]
    fn list_values_match_any_element() {
        let f = Filter::from_pairs([("environment", "staging")]);
        assert_eq!(allowed(&f), [2, 3]);
    }

    #[test]
    fn keys_are_anded_and_repeated_keys_ored() {
        let f = Filter::from_pairs([("environment", "production"), ("service", "billing")]);
        assert_eq!(allowed(&f), [0, 1]);
        let f = Filter::from_pairs([("environment", "production"), ("environment", "staging")]);
        assert_eq!(allowed(&f), [0, 1, 2, 3]);
    }

    #[test]
    fn a_folder_restriction_keeps_only_files_below_it() {
        let f = Filter::default().within_folder("/b/");
        assert!(allowed(&f).is_empty());
        let mut t = table();
        t.files[1].path = "sub/both.md".into();
        let set = eval(&Filter::default().within_folder("sub"), &t).unwrap();
        assert_eq!((0..4).filter(|&c| set.allows(c)).collect::<Vec<_>>(), [2]);
        assert!(Filter::default().within_folder("").is_empty());
    }

    #[test]
    fn failing_condition_names_the_first_unmet_key() {
        let f = Filter::from_pairs([
            ("environment", "staging"),
            ("environment", "qa"),
            ("service", "billing"),
        ]);
        let files = table().files;
        assert_eq!(
            f.failing_condition(&files[0]).as_deref(),
            Some("environment=staging|qa")
        );
        assert_eq!(f.failing_condition(&files[2]), None);
    }

    #[test]
    fn the_value_index_and_the_file_entries_agree_answers_and_errors_included() {
        let mut table = table();
        table.files[1].path = "sub/both.md".into();
        table.files.sort_by(|a, b| a.path.cmp(&b.path));
        for file in &mut table.files {
            crate::corpus::read::add_path_metadata(&mut file.metadata, &file.path);
        }
        let files = table.files.clone();
        let dir = tempfile::tempdir().unwrap();
        let gen_dir = crate::store::generation_dir(dir.path(), 1);
        std::fs::create_dir_all(&gen_dir).unwrap();
        crate::store::generation::write_table(&gen_dir, &table).unwrap();
        crate::store::texts::TextWriter::create(&gen_dir, None)
            .unwrap()
            .finish()
            .unwrap();
        let checksums = crate::store::checks::compute(&gen_dir, &Default::default()).unwrap();
        let generation = Generation::open(dir.path(), 1, &checksums).unwrap();
        let indexed = Indexed {
            index: generation.metadata_index().unwrap(),
            generation: &generation,
        };
        let filters = [
            Filter::from_pairs([("environment", "staging")]),
            Filter::from_pairs([("environment", "production"), ("service", "billing")]),
            Filter::from_pairs([("environment", "qa"), ("environment", "staging")]),
            Filter::default().within_folder("sub"),
            Filter::from_pairs([("service", "billing")]).within_folder("sub"),
            Filter::from_pairs([("enviroment", "production")]),
            Filter::from_pairs([("environment", "Production")]),
            Filter::from_pairs([("colour", "red")]),
            Filter::from_pairs([("path", "sub/both.md")]),
            Filter::from_pairs([("path", "prod.md"), ("path", "stage.md")]),
            Filter::from_pairs([("path", "sub")]),
            Filter::from_pairs([("paths", "prod.md")]),
        ];
        for filter in filters {
            let by_index = filter
                .files_passing(&indexed, None)
                .map_err(|e| e.to_string());
            let by_entries = filter
                .files_passing(&Entries(&files), None)
                .map_err(|e| e.to_string());
            assert_eq!(by_index, by_entries, "{filter:?}");
        }
        // The key the value index leaves out is answered from the sorted paths.
        let passing = |filter: Filter| filter.files_passing(&indexed, None).unwrap().0;
        assert_eq!(
            passing(Filter::from_pairs([("path", "sub/both.md")])),
            [false, false, true]
        );
        assert_eq!(
            passing(Filter::default().within_folder("sub")),
            [false, false, true]
        );
        assert_eq!(
            indexed.keys().unwrap(),
            ["dir", "environment", "path", "service"]
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let f = Filter::from_pairs([("enviroment", "production")]);
        let err = eval(&f, &table()).unwrap_err().to_string();
        assert!(err.contains("'enviroment'"), "{err}");
    }
}
