//! Building the entity graph of a generation: pruning, relations,
//! communities, summaries, and the tables written to disk.
//!
//! Files go in with [`GraphBuilder::add_file`], in the generation's file
//! order (path order), their chunks in order, so chunk ordinals line up with
//! the chunk table. [`GraphBuilder::build`] then:
//!
//! 1. **Prunes.** An entity mentioned by a single chunk relates nothing and
//!    one in more than [`GraphOptions::max_chunk_share`] of the chunks (with
//!    a floor of [`GraphOptions::max_chunks_floor`]) is a stop word of the
//!    corpus (`Remarks`, `ms.topic: reference`): both are dropped. A
//!    front-matter value must be shared by two files. Files (document
//!    entities) are always kept: links point at them.
//! 2. **Relates** kept entities in a `petgraph` undirected graph, one edge
//!    per related pair, its weight summed over every reason
//!    ([`RelationKinds`]):
//!    - *co-occurrence*: two entities of one chunk, `1 / (m − 1)` per chunk
//!      of `m` entities, so each chunk adds the same weight per entity
//!      however long it is; only the chunk's [`GraphOptions::cooccurrence_limit`]
//!      most mentioned entities take part (rarer first on ties), which bounds
//!      the pairs per chunk;
//!    - *in document*: a file and its [`GraphOptions::document_entity_limit`]
//!      most mentioned entities, 0.5 each;
//!    - *same front-matter value*: a file and each of its front-matter
//!      values, 1 each, so files sharing a value (`cluster: b`) are two
//!      steps apart through it (a hub, not a clique of every pair);
//!    - *link*: two files when one links to the other, 1 per linking file.
//! 3. Finds **communities** and **central** members ([`super::community`]),
//!    and each community's **extractive summary** ([`super::summary`]).
//! 4. Writes the **name index** the query side matches against
//!    ([`super::entity::name_terms`]) and each entity's strongest relations.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use rustc_hash::FxHashMap;

use super::community;
use super::entity::{EntityKey, EntityKind, FileEntities, LinkTarget, name_terms};
use super::options::GraphOptions;
use super::relation::{
    CO_OCCURRENCE, IN_DOCUMENT, LINK, Relation, RelationGraph, RelationKinds, SAME_METADATA,
};
use super::summary::covering_chunks;
use super::tables::{EntityId, GraphHeader, GraphTables, NO_COMMUNITY};
use crate::text::tokenize::Analyzer;

/// Weight of an in-document relation.
const IN_DOCUMENT_WEIGHT: f32 = 0.5;

/// A file as the builder keeps it: entities as provisional ids.
#[derive(Debug)]
struct FileRecord {
    document: u32,
    metadata: Vec<u32>,
    links: Vec<LinkTarget>,
    wiki_names: Vec<String>,
    /// Its chunks' range in `GraphBuilder::chunk_starts`.
    first_chunk: u32,
    chunk_count: u32,
}

/// Collects files' entities, then builds the graph.
#[derive(Debug)]
pub struct GraphBuilder {
    options: GraphOptions,
    /// Provisional id (order of first sight) of every key seen.
    ids: HashMap<EntityKey, u32>,
    keys: Vec<EntityKey>,
    files: Vec<FileRecord>,
    /// Per chunk, where its entities start in `chunk_entities`, plus the end.
    chunk_starts: Vec<u32>,
    /// (provisional id, mention count) per chunk, chunk after chunk.
    chunk_entities: Vec<(u32, u32)>,
}

/// What a build produced.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltGraph {
    /// Counts and settings for the file header.
    pub header: GraphHeader,
    /// The tables.
    pub tables: GraphTables,
}

impl GraphBuilder {
    /// An empty builder.
    pub fn new(options: GraphOptions) -> Self {
        Self {
            options,
            ids: HashMap::new(),
            keys: Vec::new(),
            files: Vec::new(),
            chunk_starts: vec![0],
            chunk_entities: Vec::new(),
        }
    }

    /// Adds the next file (files in the generation's order).
    pub fn add_file(&mut self, file: FileEntities) {
        let document = self.intern(EntityKey::new(EntityKind::Document, file.path));
        let metadata = file
            .metadata
            .into_iter()
            .map(|key| self.intern(key))
            .collect();
        let first_chunk = self.chunk_starts.len() as u32 - 1;
        let chunk_count = file.chunks.len() as u32;
        for chunk in file.chunks {
            for (key, count) in chunk {
                let id = self.intern(key);
                self.chunk_entities.push((id, count));
            }
            self.chunk_starts.push(self.chunk_entities.len() as u32);
        }
        self.files.push(FileRecord {
            document,
            metadata,
            links: file.links,
            wiki_names: file.wiki_names,
            first_chunk,
            chunk_count,
        });
    }

    fn intern(&mut self, key: EntityKey) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.ids.insert(key, id);
        id
    }

    /// The entities of chunk `chunk` as (provisional id, count).
    fn chunk(&self, chunk: usize) -> &[(u32, u32)] {
        &self.chunk_entities
            [self.chunk_starts[chunk] as usize..self.chunk_starts[chunk + 1] as usize]
    }

    /// Prunes, relates, finds communities and summaries; see the module doc.
    ///
    /// The extracted entities are dropped as soon as the relation graph
    /// holds what they say, so they and community detection's working
    /// copies are never in memory together.
    pub fn build(mut self) -> Result<BuiltGraph> {
        // Only interning needed the key → id map.
        self.ids = HashMap::new();
        let chunk_count = self.chunk_starts.len() - 1;
        let (chunk_counts, final_ids, kept_keys) = self.prune(chunk_count);
        let mut tables = GraphTables::default();
        self.write_files_and_entities(&mut tables, &kept_keys, &final_ids, &chunk_counts);
        drop(chunk_counts);
        let graph = self.relate(&final_ids, &tables.entity_chunk_counts);
        let header = GraphHeader {
            chunk_count: chunk_count as u32,
            file_count: self.files.len() as u32,
            relation_count: graph.edge_count() as u64,
            extracted_entity_count: self.keys.len() as u64,
            options: self.options,
        };
        let options = self.options;
        drop(self);
        drop(final_ids);
        write_name_index(&mut tables, &kept_keys, &options.analyzer);
        drop(kept_keys);
        write_neighbors(&mut tables, &graph, options.neighbor_limit);
        write_communities(&mut tables, &header, &graph, &options)?;
        Ok(BuiltGraph { header, tables })
    }

    /// Per provisional id: chunk count and final id (`None` if pruned); and
    /// the kept keys in final-id order (sorted).
    fn prune(&self, chunk_count: usize) -> (Vec<u32>, Vec<Option<EntityId>>, Vec<EntityKey>) {
        let entities = self.keys.len();
        let mut chunk_counts = vec![0u32; entities];
        let mut file_counts = vec![0u32; entities];
        for chunk in 0..chunk_count {
            for &(id, _) in self.chunk(chunk) {
                chunk_counts[id as usize] += 1;
            }
        }
        for file in &self.files {
            for &id in file.metadata.iter().chain([&file.document]) {
                chunk_counts[id as usize] += file.chunk_count;
                file_counts[id as usize] += 1;
            }
        }
        let max_chunks = ((chunk_count as f64 * self.options.max_chunk_share) as u32)
            .max(self.options.max_chunks_floor);
        let keep = |id: usize| {
            let count = chunk_counts[id];
            match self.keys[id].kind {
                EntityKind::Document => true,
                EntityKind::Metadata => file_counts[id] >= 2 && count <= max_chunks,
                _ => (2..=max_chunks).contains(&count),
            }
        };
        let mut order: Vec<usize> = (0..entities).filter(|&id| keep(id)).collect();
        order.sort_unstable_by(|&a, &b| self.keys[a].cmp(&self.keys[b]));
        let mut final_ids = vec![None; entities];
        for (final_id, &id) in order.iter().enumerate() {
            final_ids[id] = Some(final_id as EntityId);
        }
        let kept_keys = order.iter().map(|&id| self.keys[id].clone()).collect();
        (chunk_counts, final_ids, kept_keys)
    }

    /// Writes the file table, entity names, kinds, chunk counts and mentions.
    fn write_files_and_entities(
        &self,
        tables: &mut GraphTables,
        kept_keys: &[EntityKey],
        final_ids: &[Option<EntityId>],
        chunk_counts: &[u32],
    ) {
        tables.file_chunk_starts = self.files.iter().map(|f| f.first_chunk).collect();
        tables
            .file_chunk_starts
            .push(self.chunk_starts.len() as u32 - 1);
        tables.entity_name_offsets.push(0);
        for key in kept_keys {
            tables.entity_names.extend_from_slice(key.name.as_bytes());
            tables
                .entity_name_offsets
                .push(tables.entity_names.len() as u32);
            tables.entity_kinds.push(key.kind as u8);
        }
        tables.entity_chunk_counts = vec![0; kept_keys.len()];
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); kept_keys.len()];
        for (id, final_id) in final_ids.iter().enumerate() {
            if let Some(final_id) = final_id {
                tables.entity_chunk_counts[*final_id as usize] = chunk_counts[id];
            }
        }
        for (file_index, file) in self.files.iter().enumerate() {
            for &id in file.metadata.iter().chain([&file.document]) {
                if let Some(final_id) = final_ids[id as usize] {
                    rows[final_id as usize].push(file_index as u32);
                }
            }
            for chunk in file.first_chunk..file.first_chunk + file.chunk_count {
                for &(id, _) in self.chunk(chunk as usize) {
                    if let Some(final_id) = final_ids[id as usize] {
                        rows[final_id as usize].push(chunk);
                    }
                }
            }
        }
        tables.mention_offsets.push(0);
        for row in rows {
            tables.mentions.extend_from_slice(&row);
            tables.mention_offsets.push(tables.mentions.len() as u32);
        }
    }

    /// The relation graph over kept entities (see the module doc).
    /// `chunk_counts` is by final id.
    fn relate(&self, final_ids: &[Option<EntityId>], chunk_counts: &[u32]) -> RelationGraph {
        let kept = chunk_counts.len();
        let mut relations: FxHashMap<(EntityId, EntityId), Relation> = FxHashMap::default();
        let mut relate = |a: EntityId, b: EntityId, weight: f32, kind: RelationKinds| {
            if a == b {
                return;
            }
            let relation = relations.entry((a.min(b), a.max(b))).or_insert(Relation {
                weight: 0.0,
                kinds: 0,
            });
            relation.weight += weight;
            relation.kinds |= kind;
        };
        let documents = DocumentIndex::new(&self.files, &self.keys);
        let mut chunk_entities: Vec<(EntityId, u32)> = Vec::new();
        let mut file_entities: BTreeMap<EntityId, u32> = BTreeMap::new();
        for (file_index, file) in self.files.iter().enumerate() {
            let Some(document) = final_ids[file.document as usize] else {
                continue;
            };
            file_entities.clear();
            for chunk in file.first_chunk..file.first_chunk + file.chunk_count {
                chunk_entities.clear();
                for &(id, count) in self.chunk(chunk as usize) {
                    if let Some(final_id) = final_ids[id as usize] {
                        chunk_entities.push((final_id, count));
                        *file_entities.entry(final_id).or_default() += count;
                    }
                }
                // Most mentioned first, then the rarer, then the lower id.
                chunk_entities.sort_unstable_by_key(|&(entity, count)| {
                    (
                        std::cmp::Reverse(count),
                        chunk_counts[entity as usize],
                        entity,
                    )
                });
                chunk_entities.truncate(self.options.cooccurrence_limit);
                if chunk_entities.len() >= 2 {
                    let weight = 1.0 / (chunk_entities.len() - 1) as f32;
                    for (index, &(a, _)) in chunk_entities.iter().enumerate() {
                        for &(b, _) in &chunk_entities[index + 1..] {
                            relate(a, b, weight, CO_OCCURRENCE);
                        }
                    }
                }
            }
            let mut most_mentioned: Vec<(EntityId, u32)> =
                file_entities.iter().map(|(&e, &c)| (e, c)).collect();
            most_mentioned.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for &(entity, _) in most_mentioned
                .iter()
                .take(self.options.document_entity_limit)
            {
                relate(document, entity, IN_DOCUMENT_WEIGHT, IN_DOCUMENT);
            }
            for &id in &file.metadata {
                if let Some(value) = final_ids[id as usize] {
                    relate(document, value, 1.0, SAME_METADATA);
                }
            }
            for target in &file.links {
                if let Some(linked) = documents.resolve(target).filter(|&t| t != file_index)
                    && let Some(linked) = final_ids[self.files[linked].document as usize]
                {
                    relate(document, linked, 1.0, LINK);
                }
            }
        }
        let mut edges: Vec<((EntityId, EntityId), Relation)> = relations.into_iter().collect();
        edges.sort_unstable_by_key(|&(pair, _)| pair);
        let mut graph = RelationGraph::with_capacity(kept, edges.len());
        for id in 0..kept {
            graph.add_node(id as EntityId);
        }
        for ((a, b), relation) in edges {
            graph.add_edge(
                NodeIndex::new(a as usize),
                NodeIndex::new(b as usize),
                relation,
            );
        }
        graph
    }
}

/// Finds the file a link points at: by path, or by wiki name (file stem or
/// title, lowercase; the first file in path order wins).
struct DocumentIndex<'a> {
    by_path: HashMap<&'a str, usize>,
    by_wiki_name: HashMap<&'a str, usize>,
}

impl<'a> DocumentIndex<'a> {
    fn new(files: &'a [FileRecord], keys: &'a [EntityKey]) -> Self {
        let mut by_path = HashMap::new();
        let mut by_wiki_name = HashMap::new();
        for (index, file) in files.iter().enumerate() {
            by_path.insert(keys[file.document as usize].name.as_str(), index);
            for name in &file.wiki_names {
                by_wiki_name.entry(name.as_str()).or_insert(index);
            }
        }
        Self {
            by_path,
            by_wiki_name,
        }
    }

    fn resolve(&self, target: &LinkTarget) -> Option<usize> {
        match target {
            LinkTarget::Path(path) => self.by_path.get(path.as_str()).copied(),
            LinkTarget::WikiName(name) => self.by_wiki_name.get(name.as_str()).copied(),
        }
    }
}

/// Writes the term table and the term → entities postings.
fn write_name_index(tables: &mut GraphTables, kept_keys: &[EntityKey], analyzer: &Analyzer) {
    let mut postings: BTreeMap<String, Vec<EntityId>> = BTreeMap::new();
    for (entity, key) in kept_keys.iter().enumerate() {
        let terms = name_terms(analyzer, key);
        tables
            .entity_term_counts
            .push(terms.len().min(usize::from(u8::MAX)) as u8);
        for term in terms {
            postings.entry(term).or_default().push(entity as EntityId);
        }
    }
    tables.term_offsets.push(0);
    tables.term_entity_offsets.push(0);
    for (term, entities) in postings {
        tables.terms.extend_from_slice(term.as_bytes());
        tables.term_offsets.push(tables.terms.len() as u32);
        tables.term_entities.extend_from_slice(&entities);
        tables
            .term_entity_offsets
            .push(tables.term_entities.len() as u32);
    }
}

/// Writes each entity's `limit` strongest relations (ties: lower id).
fn write_neighbors(tables: &mut GraphTables, graph: &RelationGraph, limit: usize) {
    tables.neighbor_offsets.push(0);
    let mut row: Vec<(EntityId, f32)> = Vec::new();
    for node in graph.node_indices() {
        row.clear();
        row.extend(graph.edges(node).map(|edge| {
            let other = if edge.source() == node {
                edge.target()
            } else {
                edge.source()
            };
            (other.index() as EntityId, edge.weight().weight)
        }));
        row.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for &(neighbor, weight) in row.iter().take(limit) {
            tables.neighbors.push(neighbor);
            tables.neighbor_weights.push(weight);
        }
        tables.neighbor_offsets.push(tables.neighbors.len() as u32);
    }
}

/// Detects communities and writes levels, memberships, parents, central
/// members and extractive summaries.
fn write_communities(
    tables: &mut GraphTables,
    header: &GraphHeader,
    graph: &RelationGraph,
    options: &GraphOptions,
) -> Result<()> {
    let levels = community::detect_levels(graph, options.seed, options.resolution)?;
    tables.level_community_starts.push(0);
    let mut central_per_community: Vec<Vec<(EntityId, f32)>> = Vec::new();
    for (level, membership) in levels.iter().enumerate() {
        let base = *tables.level_community_starts.last().unwrap_or(&0);
        let count = community::community_count(membership);
        tables
            .entity_communities
            .extend(membership.iter().map(|&c| base + c));
        let mut sizes = vec![0u32; count];
        for &community in membership {
            sizes[community as usize] += 1;
        }
        tables.community_sizes.extend(sizes);
        match levels.get(level + 1) {
            Some(next) => {
                let next_base = base + count as u32;
                tables.community_parents.extend(
                    community::parents(membership, next)
                        .into_iter()
                        .map(|p| next_base + p),
                );
            }
            None => tables
                .community_parents
                .extend(std::iter::repeat_n(NO_COMMUNITY, count)),
        }
        central_per_community.extend(community::central_members(
            graph,
            membership,
            options.central_limit,
        ));
        tables.level_community_starts.push(base + count as u32);
    }
    tables.central_offsets.push(0);
    for central in &central_per_community {
        for &(entity, centrality) in central {
            tables.central_entities.push(entity);
            tables.central_scores.push(centrality);
        }
        tables
            .central_offsets
            .push(tables.central_entities.len() as u32);
    }
    let summaries: Vec<Vec<(u32, f32)>> = {
        let view = tables.view(header);
        central_per_community
            .iter()
            .map(|central| covering_chunks(&view, central, options.summary_chunk_limit))
            .collect()
    };
    tables.summary_offsets.push(0);
    for summary in summaries {
        for (chunk, coverage) in summary {
            tables.summary_chunks.push(chunk);
            tables.summary_scores.push(coverage);
        }
        tables
            .summary_offsets
            .push(tables.summary_chunks.len() as u32);
    }
    Ok(())
}
