//! The graph layer on `fixtures/graph`: runbooks of several services that
//! describe the same event (a database going away) in different words.
//! (The same questions through the real binary: `tests/integration/graph.rs`.)

use std::collections::BTreeMap;
use std::path::Path;

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;

use super::cache::CACHE_FILE;
use super::query::{self, SeedMatch};
use super::summary::ExtractiveSummary;
use super::{
    BuiltGraph, ChunkText, EntityCache, EntityExtractor, EntityKind, GraphBuilder, GraphFile,
    GraphOptions, QueryOptions, build_generation, tables,
};
use crate::corpus::chunk::{ChunkOptions, parse_file};
use crate::store::generation::{
    ChunkOrd, ChunkRecord, ChunkTable, FileEntry, FileStamp, HeadingPath,
};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/graph");

/// The fixture's chunk ids in ordinal order, and its built graph.
fn build_fixture() -> (Vec<String>, BuiltGraph) {
    let root = Path::new(FIXTURE);
    let mut paths: Vec<String> = walk(root, root);
    paths.sort();
    let extractor = EntityExtractor::new();
    let mut builder = GraphBuilder::new(GraphOptions::default());
    let mut ids = Vec::new();
    for rel in &paths {
        let source = std::fs::read_to_string(root.join(rel)).expect("reads");
        let parsed = parse_file(&source, &ChunkOptions::default());
        let mut metadata = parsed.front_matter.metadata.clone();
        let dir = rel.rsplit_once('/').map_or(".", |(dir, _)| dir);
        metadata.insert("dir".into(), vec![dir.to_owned()]);
        let heading_paths: Vec<HeadingPath> = parsed
            .chunks
            .iter()
            .map(|c| HeadingPath::new(&c.heading_path))
            .collect();
        let chunks: Vec<ChunkText<'_>> = parsed
            .chunks
            .iter()
            .zip(&heading_paths)
            .map(|(c, heading_path)| ChunkText {
                heading_path,
                text: &c.text,
            })
            .collect();
        ids.extend((1..=chunks.len()).map(|n| format!("{rel}#{n}")));
        builder.add_file(extractor.file(rel, &metadata, parsed.title.as_deref(), &chunks));
    }
    (ids, builder.build().expect("builds"))
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("lists") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(walk(root, &path));
        } else if crate::corpus::walk::is_markdown(&path) {
            found.push(
                path.strip_prefix(root)
                    .expect("inside")
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    found
}

/// Query id → text, and query id → expected chunk id → grade.
fn expectations() -> (
    BTreeMap<String, String>,
    BTreeMap<String, BTreeMap<String, u32>>,
) {
    let queries = std::fs::read_to_string(format!("{FIXTURE}/queries.jsonl")).expect("reads");
    let queries = queries
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("json");
            (
                value["id"].as_str().expect("id").to_owned(),
                value["text"].as_str().expect("text").to_owned(),
            )
        })
        .collect();
    let mut expected: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    let tsv = std::fs::read_to_string(format!("{FIXTURE}/expected-chunks.tsv")).expect("reads");
    for line in tsv.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        expected
            .entry(fields[0].to_owned())
            .or_default()
            .insert(fields[1].to_owned(), fields[2].parse().expect("grade"));
    }
    (queries, expected)
}

#[test]
fn expected_chunks_exist() {
    let (ids, _) = build_fixture();
    let (_, expected) = expectations();
    for chunk in expected.values().flat_map(|e| e.keys()) {
        assert!(
            ids.contains(chunk),
            "{chunk} is not a chunk of the fixture: {ids:?}"
        );
    }
}

#[test]
fn the_graph_list_lifts_the_expected_chunks() {
    let (ids, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let (queries, expected) = expectations();
    let mut total_precision = 0.0;
    for (id, text) in &queries {
        let ranking = query::rank(&view, text, 5, &QueryOptions::default(), |_| true);
        let relevant = &expected[id];
        let top: Vec<&str> = ranking
            .hits
            .iter()
            .map(|h| ids[h.chunk as usize].as_str())
            .collect();
        let found = top.iter().filter(|c| relevant.contains_key(**c)).count();
        let precision = found as f64 / top.len().min(relevant.len()).max(1) as f64;
        total_precision += precision;
        eprintln!(
            "{id} {text:?}: {found}/{} relevant in top {}",
            relevant.len(),
            top.len()
        );
        for seed in ranking.seeds.iter().take(6) {
            eprintln!(
                "   seed {} '{}' {:.2} {:?}",
                view.entity_kind(seed.entity),
                view.entity_name(seed.entity),
                seed.weight,
                seed.matched
            );
        }
        for (hit, chunk) in ranking.hits.iter().zip(&top) {
            let mark = if relevant.contains_key(*chunk) {
                "+"
            } else {
                " "
            };
            eprintln!(" {mark} {chunk} {:.3} {}", hit.score, hit.reason);
        }
    }
    let mean = total_precision / queries.len() as f64;
    eprintln!("mean precision@min(5, relevant) = {mean:.3}");
    assert!(mean >= 0.55, "mean precision {mean:.3}");
}

#[test]
fn cluster_b_names_the_metadata_entity_and_excludes_other_clusters() {
    let (ids, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let ranking = query::rank(
        &view,
        "how do the services in cluster b handle a database shutdown",
        4,
        &QueryOptions::default(),
        |_| true,
    );
    let cluster_b = view
        .find_entity(EntityKind::Metadata, "cluster: b")
        .expect("kept");
    assert!(
        ranking
            .seeds
            .iter()
            .any(|s| s.entity == cluster_b && matches!(s.matched, SeedMatch::Terms { .. }))
    );
    for hit in &ranking.hits {
        let id = &ids[hit.chunk as usize];
        assert!(
            !id.contains("auth-gateway") && !id.contains("reporting-etl"),
            "{id} ranked"
        );
        assert!(!hit.reason.is_empty());
    }
}

#[test]
fn a_short_metadata_value_must_follow_its_key() {
    let (_, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let cluster_a = view
        .find_entity(EntityKind::Metadata, "cluster: a")
        .expect("kept");
    let seeds = |q: &str| query::find_seeds(&view, q, &QueryOptions::default());
    assert!(
        seeds("failover in cluster a")
            .iter()
            .any(|s| s.entity == cluster_a)
    );
    assert!(
        !seeds("cluster b handles a shutdown")
            .iter()
            .any(|s| s.entity == cluster_a)
    );
}

#[test]
fn exact_identifiers_and_names_seed_their_chunks() {
    let (ids, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let top_n = |q: &str, n: usize| {
        let ranking = query::rank(&view, q, n, &QueryOptions::default(), |_| true);
        ranking
            .hits
            .iter()
            .map(|h| ids[h.chunk as usize].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        top_n("pg_ctl stop on the primary", 2),
        [
            "services/billing-api-runbook.md#1",
            "platform/postgres-failover.md#1"
        ]
    );
    let patroni = top_n("patroni leader switchover", 4);
    for expected in [
        "platform/postgres-failover.md#2",
        "services/ledger-worker-runbook.md#1",
    ] {
        assert!(patroni.contains(&expected.to_owned()), "{patroni:?}");
    }
}

#[test]
fn a_misspelled_query_matches_fuzzily() {
    let (_, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let ranking = query::rank(
        &view,
        "postgress failovr",
        5,
        &QueryOptions::default(),
        |_| true,
    );
    assert!(
        ranking
            .seeds
            .iter()
            .any(|s| matches!(s.matched, SeedMatch::Fuzzy { .. }))
    );
    assert!(!ranking.hits.is_empty());
}

#[test]
fn the_filter_applies_before_the_window() {
    let (ids, built) = build_fixture();
    let view = built.tables.view(&built.header);
    let inventory = |c: u32| ids[c as usize].contains("inventory");
    let ranking = query::rank(
        &view,
        "database failover",
        3,
        &QueryOptions::default(),
        inventory,
    );
    assert!(!ranking.hits.is_empty() && ranking.hits.iter().all(|h| inventory(h.chunk)));
    assert!(ranking.filtered_out > 0);
}

#[test]
fn ranks_are_deterministic_with_a_stable_tie_break() {
    let (_, first) = build_fixture();
    let (_, second) = build_fixture();
    assert_eq!(first, second, "same corpus, same graph");
    let view = first.tables.view(&first.header);
    let ranking = query::rank(&view, "database", 50, &QueryOptions::default(), |_| true);
    for pair in ranking.hits.windows(2) {
        assert!(
            pair[0].score > pair[1].score
                || (pair[0].score == pair[1].score && pair[0].chunk < pair[1].chunk)
        );
    }
}

#[test]
fn the_file_round_trips_and_answers_the_same() {
    let (_, built) = build_fixture();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("graph.bin");
    std::fs::write(
        &path,
        tables::encode(&built.header, &built.tables).expect("encodes"),
    )
    .expect("writes");
    let file = GraphFile::open(&path).expect("opens");
    let loaded = file.view().expect("views");
    let query = "which services pause their writers during a postgres failover";
    let options = QueryOptions::default();
    assert_eq!(
        query::rank(&loaded, query, 10, &options, |_| true),
        query::rank(
            &built.tables.view(&built.header),
            query,
            10,
            &options,
            |_| true
        )
    );
}

#[test]
fn a_damaged_or_foreign_file_is_refused() {
    let (_, built) = build_fixture();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("graph.bin");
    let mut bytes = tables::encode(&built.header, &built.tables).expect("encodes");
    bytes[8] = 99; // format version
    std::fs::write(&path, &bytes).expect("writes");
    let error = format!("{:#}", GraphFile::open(&path).expect_err("refused"));
    assert!(error.contains("version 99 is not supported"), "{error}");
    let mut bytes = tables::encode(&built.header, &built.tables).expect("encodes");
    let last = bytes.len() - 1;
    bytes[last] = 0xFF; // the last summary score's high byte: still a float, so...
    bytes.truncate(last - 64); // ...cut the file instead
    std::fs::write(&path, &bytes).expect("writes");
    assert!(GraphFile::open(&path).is_err());
}

#[test]
fn communities_have_levels_parents_and_extractive_summaries() {
    let (ids, built) = build_fixture();
    let view = built.tables.view(&built.header);
    assert!(view.level_count() >= 1);
    let top = view.level_count() - 1;
    for community in view.level_communities(0) {
        let summary = ExtractiveSummary::of(&view, community);
        assert_eq!(summary.level, 0);
        assert!(!summary.central_entities.is_empty());
        assert_eq!(view.community_parent(community).is_some(), top > 0);
    }
    let billing = view
        .find_entity(EntityKind::Identifier, "pg_ctl")
        .and_then(|e| view.entity_community(e, 0))
        .expect("pg_ctl has a community");
    let summary = ExtractiveSummary::of(&view, billing);
    eprintln!("community of pg_ctl: [{}]", summary.label(&view, 6));
    for (chunk, coverage) in &summary.chunks {
        eprintln!("   {} {coverage:.2}", ids[*chunk as usize]);
    }
    assert!(!summary.chunks.is_empty());
}

/// The fixture as an indexer hands it over: its chunk table and texts.
fn fixture_table() -> (ChunkTable, Vec<String>) {
    let root = Path::new(FIXTURE);
    let mut paths: Vec<String> = walk(root, root);
    paths.sort();
    let mut table = ChunkTable::default();
    let mut texts = Vec::new();
    for (file, rel) in paths.iter().enumerate() {
        let source = std::fs::read_to_string(root.join(rel)).expect("reads");
        let parsed = parse_file(&source, &ChunkOptions::default());
        let mut metadata = parsed.front_matter.metadata.clone();
        if let Some(title) = &parsed.title {
            metadata.insert("title".into(), vec![title.clone()]);
        }
        table.files.push(FileEntry {
            path: rel.clone(),
            metadata,
            stamp: FileStamp::default(),
        });
        for (n, chunk) in parsed.chunks.iter().enumerate() {
            table.chunks.push(ChunkRecord {
                file: file as u32,
                n: n as u32 + 1,
                heading_path: HeadingPath::new(&chunk.heading_path),
                lines: (0, 0),
                text_start: 0,
                text_len: chunk.text.len() as u32,
                text_crc: crc32fast::hash(chunk.text.as_bytes()),
                has_vector: false,
                uid: table.chunks.len() as u32,
            });
            texts.push(chunk.text.clone());
        }
    }
    (table, texts)
}

/// Builds the fixture's graph into `gen_dir` (graph bytes returned, cache
/// written) reusing `reuse` from `previous`; also returns how many chunk
/// texts were read and how many files were reused.
fn build_into(
    gen_dir: &Path,
    (table, texts): &(ChunkTable, Vec<String>),
    reuse: &[Option<u32>],
    previous: Option<&EntityCache>,
) -> (Vec<u8>, usize, usize) {
    let reads = AtomicUsize::new(0);
    let chunk_text = |ord: ChunkOrd| -> Result<String> {
        reads.fetch_add(1, Ordering::Relaxed);
        Ok(texts[ord as usize].clone())
    };
    let (built, cache) =
        build_generation(table, &chunk_text, reuse, previous, GraphOptions::default())
            .expect("builds");
    let reused = cache.reused();
    std::fs::create_dir_all(gen_dir).expect("creates");
    cache.write(gen_dir).expect("writes the cache");
    let bytes = tables::encode(&built.header, &built.tables).expect("encodes");
    (bytes, reads.into_inner(), reused)
}

#[test]
fn a_rebuild_from_the_cache_is_identical_and_reads_no_text() {
    let fixture = fixture_table();
    let files = fixture.0.files.len();
    let dir = tempfile::tempdir().expect("tempdir");
    let (first, first_reads, _) =
        build_into(&dir.path().join("1"), &fixture, &vec![None; files], None);
    assert_eq!(first_reads, fixture.1.len());
    let cache = EntityCache::open(&dir.path().join("1"))
        .expect("opens")
        .expect("exists");
    assert_eq!(cache.len(), files);
    let all: Vec<Option<u32>> = (0..files as u32).map(Some).collect();
    let (second, reads, reused) = build_into(&dir.path().join("2"), &fixture, &all, Some(&cache));
    assert_eq!((reads, reused), (0, files));
    assert!(
        first == second,
        "graph.bin differs after a rebuild from the cache"
    );
    assert_eq!(
        std::fs::read(dir.path().join("1").join(CACHE_FILE)).expect("reads"),
        std::fs::read(dir.path().join("2").join(CACHE_FILE)).expect("reads"),
    );
}

#[test]
fn only_changed_or_mismatched_files_are_extracted() {
    let fixture = fixture_table();
    let files = fixture.0.files.len();
    let dir = tempfile::tempdir().expect("tempdir");
    let (fresh, _, _) = build_into(&dir.path().join("1"), &fixture, &vec![None; files], None);
    let cache = EntityCache::open(&dir.path().join("1"))
        .expect("opens")
        .expect("exists");
    let chunks_of = |file: u32| fixture.0.chunks.iter().filter(|c| c.file == file).count();
    // File 0 changed; file 1 is claimed to be file 2 (a wrong reuse: its
    // fingerprint differs, so it is extracted anyway).
    let mut reuse: Vec<Option<u32>> = (0..files as u32).map(Some).collect();
    reuse[0] = None;
    reuse[1] = Some(2);
    let (rebuilt, reads, reused) =
        build_into(&dir.path().join("2"), &fixture, &reuse, Some(&cache));
    assert_eq!(reused, files - 2);
    assert_eq!(reads, chunks_of(0) + chunks_of(1));
    assert!(fresh == rebuilt);
}

#[test]
fn a_damaged_or_foreign_cache_means_extracting_again() {
    let fixture = fixture_table();
    let files = fixture.0.files.len();
    let all: Vec<Option<u32>> = (0..files as u32).map(Some).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let old = dir.path().join("1");
    let (fresh, _, _) = build_into(&old, &fixture, &vec![None; files], None);
    let path = old.join(CACHE_FILE);
    let intact = std::fs::read(&path).expect("reads");
    // The compressed blocks are the file's tail: damage them.
    let mut bytes = intact.clone();
    let tail = bytes.len() - 40;
    bytes[tail..].iter_mut().for_each(|b| *b ^= 0x5A);
    std::fs::write(&path, &bytes).expect("writes");
    let cache = EntityCache::open(&old).expect("opens").expect("exists");
    let (rebuilt, reads, reused) = build_into(&dir.path().join("2"), &fixture, &all, Some(&cache));
    assert!(reads > 0 && reused < files);
    assert!(fresh == rebuilt);
    // A cut file is refused when opened; another format version is ignored.
    std::fs::write(&path, &intact[..intact.len() / 2]).expect("writes");
    assert!(EntityCache::open(&old).is_err());
    let mut newer = intact.clone();
    newer[8] = 99;
    std::fs::write(&path, &newer).expect("writes");
    assert!(EntityCache::open(&old).expect("opens").is_none());
    std::fs::remove_file(&path).expect("removes");
    assert!(EntityCache::open(&old).expect("opens").is_none());
}
