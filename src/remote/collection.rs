//! The collection: its schema and indexes, and what memidx records in its
//! properties — the model, the tokenizer and BM25 settings a search must
//! share with it, and which generation of which index it holds.
//!
//! Schema: `id` (VARCHAR primary key, the chunk id), `source`, `heading`,
//! `line_from`/`line_to` (INT64), `text`, `metadata` (JSON, key → list of
//! values), `folders` (ARRAY of VARCHAR), `terms` (VARCHAR with the
//! `standard` analyzer, input of a BM25 function whose output is the
//! SPARSE_FLOAT_VECTOR `sparse`), `dense` (FLOAT_VECTOR of the model's
//! dimension) and `key` (the row's hash). Indexes: `dense` FLAT with inner
//! product (the vectors are unit length: the exact scan memidx itself runs),
//! `sparse` SPARSE_INVERTED_INDEX with the BM25 metric and the index's k1
//! and b.

use std::collections::HashMap;

use anyhow::{Context, Result, bail, ensure};
use milvus::v2::prelude::*;
use serde_json::json;

use super::connection::Connection;
use super::rows::{MAX_VARCHAR, field};
use crate::index::manifest::Manifest;

/// Version of the collection layout memidx writes.
const LAYOUT: &str = "2";

/// Most folders above one file that the `folders` field holds.
pub const MAX_FOLDERS: u32 = 256;

/// Property keys memidx records.
mod property {
    /// [`super::LAYOUT`].
    pub(super) const LAYOUT: &str = "memidx.layout";
    /// The model id, dimension and fingerprint.
    pub(super) const MODEL: &str = "memidx.model";
    /// The tokenizer and BM25 settings, as JSON.
    pub(super) const SPARSE: &str = "memidx.sparse";
    /// The pushed generation (`N at MS`), or `pushing …` during a push.
    pub(super) const PUSHED: &str = "memidx.pushed";
}

/// What a pushed collection must agree on with the index it is searched or
/// pushed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    model: String,
    sparse: String,
}

impl Records {
    /// What `manifest`'s index requires.
    pub fn of(manifest: &Manifest) -> Self {
        let e = &manifest.embedder;
        Self {
            model: format!("{} {} {}", e.id, e.dim, e.fingerprint),
            sparse: json!({"tokenizer": manifest.tokenizer, "bm25": manifest.bm25, "fields": manifest.sparse_fields}).to_string(),
        }
    }
}

/// The generation a finished push leaves recorded: its number and when the
/// index was written, which together tell one index state from another.
pub fn pushed_mark(manifest: &Manifest) -> String {
    format!("{} at {}", manifest.generation, manifest.created_unix_ms)
}

/// The mark of a push under way to `mark`.
fn pushing_mark(mark: &str) -> String {
    format!("pushing {mark}")
}

/// An opened collection of a connection.
pub struct Collection {
    /// The connection.
    pub connection: Connection,
    /// What it records as pushed (`None` when nothing finished yet).
    pub pushed: Option<String>,
}

impl Collection {
    /// Opens the target's collection for a search from the index of
    /// `manifest`: it must exist, match the index's model and sparse
    /// settings, and hold the index's current generation.
    pub fn open_for_search(connection: Connection, manifest: &Manifest) -> Result<Self> {
        let target = connection.target().clone();
        let Some(properties) = describe(&connection)? else {
            bail!(
                "there is no collection '{}' at {}; run 'memidx push {target}' first",
                target.collection,
                target.authority
            );
        };
        check(&properties, manifest, &target.to_string())?;
        let pushed = properties.get(property::PUSHED).cloned();
        let mark = pushed_mark(manifest);
        match pushed.as_deref() {
            Some(p) if p == mark => {}
            Some(p) if p.starts_with("pushing ") => bail!(
                "{target} is being pushed to, or a push was interrupted; run 'memidx push {target}' and search when it ends"
            ),
            _ => bail!(
                "{target} holds {} but the index is at generation {mark}; run 'memidx push {target}' first",
                pushed
                    .as_deref()
                    .map_or("no finished push".to_string(), |p| format!(
                        "generation {p}"
                    ))
            ),
        }
        Ok(Self { connection, pushed })
    }

    /// Opens the target's collection for a push from the index of
    /// `manifest`, creating it when missing; an existing one must have
    /// memidx's schema and the index's model and sparse settings.
    pub fn open_for_push(connection: Connection, manifest: &Manifest) -> Result<Self> {
        let target = connection.target().to_string();
        let properties = match describe(&connection)? {
            Some(properties) => {
                check(&properties, manifest, &target)?;
                properties
            }
            None => create(&connection, manifest)?,
        };
        let name = connection.target().collection.clone();
        connection.call("load the collection", |c| async move {
            c.load_collection(
                LoadCollectionRequest::builder()
                    .collection_name(name)
                    .build()?,
            )
            .await
        })?;
        let pushed = properties.get(property::PUSHED).cloned();
        Ok(Self { connection, pushed })
    }

    /// Records that a push toward `manifest`'s generation has begun: a
    /// reader refuses the collection until [`Collection::finish`].
    pub fn begin(&mut self, manifest: &Manifest) -> Result<()> {
        let mark = pushing_mark(&pushed_mark(manifest));
        self.record(&mark)
    }

    /// Records that the collection now holds `manifest`'s generation.
    pub fn finish(&mut self, manifest: &Manifest) -> Result<()> {
        self.record(&pushed_mark(manifest))
    }

    fn record(&mut self, mark: &str) -> Result<()> {
        let name = self.connection.target().collection.clone();
        self.connection.call("record the push", |c| async move {
            c.alter_collection_properties(
                AlterCollectionPropertiesRequest::builder()
                    .collection_name(&name)
                    .property(property::PUSHED, mark)
                    .build()?,
            )
            .await
        })?;
        self.pushed = Some(mark.to_string());
        Ok(())
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.connection.target().collection
    }
}

/// The collection's properties, with its schema checked to be memidx's;
/// `None` when there is no such collection.
fn describe(connection: &Connection) -> Result<Option<HashMap<String, String>>> {
    let target = connection.target();
    let name = &target.collection;
    let exists = connection.call("look the collection up", |c| async move {
        c.has_collection(
            HasCollectionRequest::builder()
                .collection_name(name)
                .build()?,
        )
        .await
    })?;
    if !exists.exists() {
        return Ok(None);
    }
    let described = connection.call("describe the collection", |c| async move {
        c.describe_collection(
            DescribeCollectionRequest::builder()
                .collection_name(name)
                .build()?,
        )
        .await
    })?;
    let description = described.description();
    let properties = description.get_properties().clone();
    match properties.get(property::LAYOUT).map(String::as_str) {
        Some(LAYOUT) => {}
        Some(other) => bail!(
            "{target} holds memidx's collection layout {other}, and this memidx writes layout {LAYOUT}; push to another collection (or drop this one)"
        ),
        None => bail!(
            "{target} exists but was not made by memidx (no '{}' property); push to another collection",
            property::LAYOUT
        ),
    }
    let ours = schema(0);
    let fields: Vec<(&str, DataType)> = description
        .get_schema()
        .get_fields()
        .iter()
        .map(|f| (f.get_name(), f.get_data_type()))
        .collect();
    for expected in ours.get_fields() {
        ensure!(
            fields.contains(&(expected.get_name(), expected.get_data_type())),
            "{target} has an incompatible schema (field '{}' missing or of another type); push to another collection",
            expected.get_name()
        );
    }
    Ok(Some(properties))
}

/// Checks that a collection's records agree with `manifest`'s index.
fn check(properties: &HashMap<String, String>, manifest: &Manifest, target: &str) -> Result<()> {
    let records = Records::of(manifest);
    let model = properties.get(property::MODEL).map_or("", String::as_str);
    ensure!(
        model == records.model,
        "{target} was pushed from an index embedded with '{model}', but this index is embedded with '{}'; push to another collection",
        records.model
    );
    let sparse = properties.get(property::SPARSE).map_or("", String::as_str);
    ensure!(
        sparse == records.sparse,
        "{target} was pushed with other tokenizer or BM25 settings ({sparse}) than this index's ({}); push to another collection",
        records.sparse
    );
    Ok(())
}

/// The collection's schema for vectors of `dim` dimensions.
fn schema(dim: u32) -> CollectionSchema {
    let varchar = |name: &str, max: usize| {
        FieldSchema::new()
            .name(name)
            .data_type(DataType::VarChar)
            .max_length(max as u32)
    };
    let int = |name: &str| FieldSchema::new().name(name).data_type(DataType::Int64);
    CollectionSchema::new()
        .description("memidx chunks (see memidx's docs/milvus.md)")
        .add_field(varchar(field::ID, MAX_VARCHAR).primary_key(true))
        .add_field(varchar(field::SOURCE, MAX_VARCHAR))
        .add_field(varchar(field::HEADING, MAX_VARCHAR))
        .add_field(int(field::LINE_FROM))
        .add_field(int(field::LINE_TO))
        .add_field(varchar(field::TEXT, MAX_VARCHAR))
        .add_field(
            FieldSchema::new()
                .name(field::METADATA)
                .data_type(DataType::Json),
        )
        .add_field(int(field::DATE))
        .add_field(
            FieldSchema::new()
                .name(field::FOLDERS)
                .data_type(DataType::Array)
                .element_type(DataType::VarChar)
                .max_capacity(MAX_FOLDERS)
                .max_length(MAX_VARCHAR as u32),
        )
        .add_field(
            varchar(field::TERMS, MAX_VARCHAR)
                .enable_analyzer(true)
                .analyzer_params(json!({"type": "standard"})),
        )
        .add_field(
            FieldSchema::new()
                .name(field::SPARSE)
                .data_type(DataType::SparseFloatVector),
        )
        .add_field(
            FieldSchema::new()
                .name(field::DENSE)
                .data_type(DataType::FloatVector)
                .dimension(dim),
        )
        .add_field(varchar(field::KEY, 16))
        .add_function(
            Function::new()
                .name("memidx_bm25")
                .function_type(FunctionType::Bm25)
                .input_fields([field::TERMS])
                .output_fields([field::SPARSE]),
        )
}

/// Creates the collection for `manifest`'s index; returns its properties.
fn create(connection: &Connection, manifest: &Manifest) -> Result<HashMap<String, String>> {
    let records = Records::of(manifest);
    let properties = HashMap::from([
        (property::LAYOUT.to_string(), LAYOUT.to_string()),
        (property::MODEL.to_string(), records.model),
        (property::SPARSE.to_string(), records.sparse),
    ]);
    let dim = u32::try_from(manifest.embedder.dim).context("the model's dimension is too large")?;
    let bm25 = HashMap::from([
        ("bm25_k1".to_string(), manifest.bm25.k1.to_string()),
        ("bm25_b".to_string(), manifest.bm25.b.to_string()),
    ]);
    let name = &connection.target().collection;
    let sent = properties.clone();
    connection.call("create the collection", |c| async move {
        c.create_collection(
            CreateCollectionRequest::builder()
                .collection_name(name)
                .schema(schema(dim))
                .properties(sent)
                .index_params(vec![
                    IndexParam::new()
                        .field_name(field::DENSE)
                        .index_type(IndexType::Flat)
                        .metric_type(MetricType::Ip),
                    IndexParam::new()
                        .field_name(field::SPARSE)
                        .index_type(IndexType::SparseInvertedIndex)
                        .metric_type(MetricType::Bm25)
                        .extra_params(bm25),
                ])
                .build()?,
        )
        .await
    })?;
    Ok(properties)
}
