//! The incremental push: the collection is brought to the index's current
//! generation by sending only the rows that differ and deleting the rows of
//! chunks that are gone.
//!
//! Each row carries `key`, a hash of everything in it but the vector (which
//! follows from the text and the model, both covered). A push reads the
//! collection's `(id, key)` pairs, compares them with the index's rows, and
//! then, in this order: records `pushing N` in the collection's properties
//! (from then on a search refuses it, naming the push), upserts the new and
//! changed rows, deletes the gone ones, flushes, and records `N` last. A
//! reader never gets an answer from a half-pushed collection, and a push
//! that was interrupted anywhere leaves the `pushing` mark, so the next one
//! compares again and converges to the same collection.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::Result;
use milvus::v2::prelude::*;
use rayon::prelude::*;
use serde_json::Value;

use super::Target;
use super::collection::{Collection, pushed_mark};
use super::connection::Connection;
use super::expr::quote;
use super::rows::{Row, field};
use crate::index::Index;
use crate::lists::dense::StoredVectors;
use crate::progress::Progress;
use crate::store::generation::ChunkOrd;

/// Rows per upsert call (a row is at most about 200 KiB of text and terms).
const UPSERT_BATCH: usize = 256;

/// Ids per delete call, and chunks per parallel batch when comparing.
const ID_BATCH: usize = 1024;

/// Most rows one query returns (Milvus's limit on offset + limit).
const MAX_QUERY: usize = 16_384;

/// What a push did.
#[derive(Debug, Clone, PartialEq)]
pub struct PushReport {
    /// The collection's address.
    pub target: String,
    /// The generation pushed, `N at MS`.
    pub generation: String,
    /// Chunks in the index.
    pub chunks: usize,
    /// Rows sent (new or changed).
    pub sent: usize,
    /// Rows deleted (their chunks are gone).
    pub deleted: usize,
    /// True when the collection already held this generation.
    pub up_to_date: bool,
    /// The whole push.
    pub elapsed: Duration,
    /// Sending rows (the upserts alone).
    pub send_time: Duration,
}

/// Pushes `index` to `target`, creating the collection when missing.
pub fn push(index: &Index, target: &Target, progress: &dyn Progress) -> Result<PushReport> {
    let started = Instant::now();
    let manifest = index.manifest();
    let parts = index.parts();
    let mut collection = Collection::open_for_push(Connection::open(target)?, manifest)?;
    let remote = remote_keys(&collection)?;
    let (analyzer, fields) = (manifest.tokenizer, manifest.sparse_fields);
    let ords: Vec<ChunkOrd> = (0..parts.len() as ChunkOrd)
        .filter(|&ord| parts.is_live(ord))
        .collect();
    progress.stage("comparing", ords.len(), "chunks");
    let local: Vec<(String, String)> = ords
        .par_chunks(ID_BATCH)
        .map(|batch| {
            let rows = batch
                .iter()
                .map(|&ord| Row::of(parts, analyzer, fields, ord).map(|r| (r.id, r.key)))
                .collect::<Result<Vec<_>>>();
            progress.advance(batch.len());
            rows
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    progress.finish();
    let changed: Vec<ChunkOrd> = local
        .iter()
        .zip(&ords)
        .filter(|((id, key), _)| remote.get(id) != Some(key))
        .map(|(_, &ord)| ord)
        .collect();
    let ids: HashSet<&str> = local.iter().map(|(id, _)| id.as_str()).collect();
    let mut gone: Vec<String> = remote
        .into_keys()
        .filter(|id| !ids.contains(id.as_str()))
        .collect();
    gone.sort_unstable();
    let mark = pushed_mark(manifest);
    let mut report = PushReport {
        target: target.to_string(),
        generation: mark.clone(),
        chunks: ords.len(),
        sent: changed.len(),
        deleted: gone.len(),
        up_to_date: false,
        elapsed: Duration::ZERO,
        send_time: Duration::ZERO,
    };
    if changed.is_empty() && gone.is_empty() && collection.pushed.as_deref() == Some(&mark) {
        report.up_to_date = true;
        report.elapsed = started.elapsed();
        return Ok(report);
    }
    collection.begin(manifest)?;
    let sending = Instant::now();
    let vectors = (parts.parts().iter())
        .map(|part| {
            let generation = part.generation();
            StoredVectors::open(generation.dir(), generation.len(), manifest.embedder.dim)
        })
        .collect::<Result<Vec<_>>>()?;
    progress.stage("sending", changed.len(), "chunks");
    for batch in changed.chunks(UPSERT_BATCH) {
        let rows: Vec<Value> = batch
            .par_iter()
            .map(|&ord| {
                let (at, row) = parts.locate(ord)?;
                Row::of(parts, analyzer, fields, ord)?.with_vector(&vectors[at], row)
            })
            .collect::<Result<_>>()?;
        upsert(&collection, rows)?;
        progress.advance(batch.len());
    }
    progress.finish();
    report.send_time = sending.elapsed();
    for batch in gone.chunks(ID_BATCH) {
        delete(&collection, batch)?;
    }
    let name = collection.name().to_string();
    collection
        .connection
        .call("flush the collection", |c| async move {
            c.flush(
                FlushRequest::builder()
                    .collection_names([name.as_str()])
                    .build()?,
            )
            .await
        })?;
    collection.finish(manifest)?;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Every row's id and key in the collection.
fn remote_keys(collection: &Collection) -> Result<HashMap<String, String>> {
    let mut keys = HashMap::new();
    read_keys(collection, "", &mut keys)?;
    Ok(keys)
}

/// Reads the `(id, key)` pairs of the rows whose key starts with `prefix`
/// into `keys`. One query returns at most [`MAX_QUERY`] rows (Milvus's
/// limit, and milvus-lite has no query iterator), so a prefix that fills it
/// is read again as its sixteen longer prefixes: the keys are hex hashes,
/// spread evenly.
fn read_keys(
    collection: &Collection,
    prefix: &str,
    keys: &mut HashMap<String, String>,
) -> Result<()> {
    let name = collection.name();
    let filter = format!("{} like \"{prefix}%\"", field::KEY);
    let response = collection
        .connection
        .call("read the collection's keys", |c| async move {
            c.query(
                QueryRequest::builder()
                    .collection_name(name)
                    .filter(filter)
                    .output_fields([field::ID, field::KEY])
                    .limit(MAX_QUERY as i64)
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()?,
            )
            .await
        })?;
    let results = response.results();
    if results.get_row_count() as usize >= MAX_QUERY && prefix.len() < 16 {
        for digit in "0123456789abcdef".chars() {
            read_keys(collection, &format!("{prefix}{digit}"), keys)?;
        }
        return Ok(());
    }
    for row in results.rows()? {
        keys.insert(
            row.get_str(field::ID)?.to_string(),
            row.get_str(field::KEY)?.to_string(),
        );
    }
    Ok(())
}

/// Upserts `rows` (whole rows, vectors included).
fn upsert(collection: &Collection, rows: Vec<Value>) -> Result<()> {
    let name = collection.name();
    collection.connection.call("store chunks", |c| async move {
        c.upsert(
            UpsertRequest::builder()
                .insert(
                    InsertRequest::builder()
                        .collection_name(name)
                        .rows(rows)
                        .build()?,
                )
                .build()?,
        )
        .await
    })?;
    Ok(())
}

/// Deletes the rows of `ids`, by an `id in [...]` expression (milvus-lite
/// reads no filter templates, which the SDK's delete by ids sends).
fn delete(collection: &Collection, ids: &[String]) -> Result<()> {
    let name = collection.name();
    let quoted: Vec<String> = ids.iter().map(|id| quote(id)).collect();
    let filter = format!("{} in [{}]", field::ID, quoted.join(", "));
    collection
        .connection
        .call("delete gone chunks", |c| async move {
            c.delete(
                DeleteRequest::builder()
                    .collection_name(name)
                    .filter(filter)
                    .build()?,
            )
            .await
        })?;
    Ok(())
}
