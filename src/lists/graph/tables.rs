//! The graph as flat tables, and its file `graph.bin`.
//!
//! Everything a query, `explain` or `memidx graph …` needs is a set of
//! little-endian arrays (offsets + values, the CSR layout), so the file is
//! memory-mapped and used in place: opening it costs a header decode and one
//! validation pass, whatever the corpus size, and a query touches only the
//! pages it reads.
//!
//! The file is framed as [`super::sections`] describes (magic `MIDXGRPH`):
//! the header ([`GraphHeader`]) carries counts and build settings; the
//! sections are the fields of [`GraphTables`], in declaration order.
//! `bytemuck` views each section as a typed slice, `postcard` encodes the
//! header (serde-based, maintained), `memmap2` maps the file. A reader
//! refuses another format version.
//!
//! Ids: an entity id is its position in the entity table, which is sorted by
//! [`EntityKey`](super::entity::EntityKey) (kind, then name); a community id
//! is its position among all levels' communities (level 0 first; the
//! communities of level `l` are `level_community_starts[l]..[l + 1]`).

use std::ops::Range;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use super::entity::EntityKind;
use super::options::GraphOptions;
use super::sections::Framing;
use crate::store::generation::ChunkOrd;

/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// How a graph file is framed.
const FRAMING: Framing = Framing {
    magic: b"MIDXGRPH",
    version: FORMAT_VERSION,
    section_count: SECTION_COUNT,
    what: "graph",
};

/// An entity's position in the entity table.
pub type EntityId = u32;

/// A community's position among all levels' communities.
pub type CommunityId = u32;

/// Marks "no community" (a top-level community's parent).
pub const NO_COMMUNITY: CommunityId = u32::MAX;

/// Counts and settings stored in the file header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphHeader {
    /// Chunks of the generation the graph was built for.
    pub chunk_count: u32,
    /// Files of that generation.
    pub file_count: u32,
    /// Relations (graph edges) between kept entities.
    pub relation_count: u64,
    /// Entities seen before pruning, all kinds.
    pub extracted_entity_count: u64,
    /// The settings it was built with (the analyzer among them, which
    /// queries must use too).
    pub options: GraphOptions,
}

macro_rules! graph_tables {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty ),* $(,)?) => {
        /// The whole graph, owned (as the builder makes it).
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct GraphTables {
            $( $(#[$doc])* pub $name: Vec<$ty>, )*
        }

        /// The whole graph, borrowed from a [`GraphTables`] or a mapped file.
        #[derive(Debug, Clone, Copy)]
        pub struct GraphView<'a> {
            /// Counts and settings.
            pub header: &'a GraphHeader,
            $( $(#[$doc])* pub $name: &'a [$ty], )*
        }

        impl GraphTables {
            /// A view of these tables with `header`.
            pub fn view<'a>(&'a self, header: &'a GraphHeader) -> GraphView<'a> {
                GraphView { header, $( $name: &self.$name, )* }
            }

            /// The sections as bytes, in file order.
            fn section_bytes(&self) -> Vec<&[u8]> {
                vec![$( bytemuck::cast_slice(&self.$name), )*]
            }
        }

        /// Views mapped section bytes (in file order) as typed tables.
        fn view_sections<'a>(header: &'a GraphHeader, sections: &[&'a [u8]]) -> Result<GraphView<'a>> {
            let mut sections = sections.iter();
            Ok(GraphView {
                header,
                $( $name: bytemuck::try_cast_slice(sections.next().context("a section is missing")?)
                    .map_err(|e| anyhow::anyhow!("section `{}` is misshapen: {e}", stringify!($name)))?, )*
            })
        }

        /// How many sections the format has.
        const SECTION_COUNT: usize = [$( stringify!($name), )*].len();
    };
}

graph_tables! {
    /// Per file, its first chunk ordinal, plus the chunk count at the end (files + 1).
    file_chunk_starts: u32,
    /// Per entity, where its name starts in `entity_names`, plus the end.
    entity_name_offsets: u32,
    /// Entity names, UTF-8, concatenated.
    entity_names: u8,
    /// Per entity, its [`EntityKind`] byte.
    entity_kinds: u8,
    /// Per entity, how many chunks mention it (file-level entities: every chunk of their files).
    entity_chunk_counts: u32,
    /// Per entity, how many distinct query terms its name has (see `name_terms`).
    entity_term_counts: u8,
    /// Per entity, where its mentions start in `mentions`, plus the end.
    mention_offsets: u32,
    /// Per entity, ascending: chunk ordinals, or file indexes for file-level kinds.
    mentions: u32,
    /// Per name term (sorted), where it starts in `terms`, plus the end.
    term_offsets: u32,
    /// Name terms, UTF-8, concatenated in sorted order.
    terms: u8,
    /// Per term, where its entities start in `term_entities`, plus the end.
    term_entity_offsets: u32,
    /// Per term, ascending: the entities whose names have it.
    term_entities: u32,
    /// Per entity, where its strongest relations start in `neighbors`, plus the end.
    neighbor_offsets: u32,
    /// Per entity, related entities, strongest first.
    neighbors: u32,
    /// The relation weight of each `neighbors` entry.
    neighbor_weights: f32,
    /// Per level, its first community id, plus the total at the end (levels + 1).
    level_community_starts: u32,
    /// Level-major: `entity_communities[level * entities + entity]`.
    entity_communities: u32,
    /// Per community, its member count.
    community_sizes: u32,
    /// Per community, the community of the next level holding most of its
    /// members, or [`NO_COMMUNITY`] at the top level.
    community_parents: u32,
    /// Per community, where its central entities start in `central_entities`, plus the end.
    central_offsets: u32,
    /// Per community, its most central members, most central first.
    central_entities: u32,
    /// Centrality of each `central_entities` entry, 0–1 (1 for the most central).
    central_scores: f32,
    /// Per community, where its summary chunks start in `summary_chunks`, plus the end.
    summary_offsets: u32,
    /// Per community, the chunks that best cover its central entities, best first.
    summary_chunks: u32,
    /// Coverage score of each `summary_chunks` entry.
    summary_scores: f32,
}

/// The range `offsets[index]..offsets[index + 1]`, empty when out of bounds.
fn csr_range(offsets: &[u32], index: usize) -> Range<usize> {
    match (offsets.get(index), offsets.get(index + 1)) {
        (Some(&start), Some(&end)) if start <= end => start as usize..end as usize,
        _ => 0..0,
    }
}

/// The slice of `values` for row `index` of a CSR table.
fn csr_row<'a, T>(offsets: &[u32], values: &'a [T], index: usize) -> &'a [T] {
    values.get(csr_range(offsets, index)).unwrap_or_default()
}

impl<'a> GraphView<'a> {
    /// How many entities the graph holds.
    pub fn entity_count(&self) -> usize {
        self.entity_kinds.len()
    }

    /// How many community levels there are (0 = finest).
    pub fn level_count(&self) -> usize {
        self.level_community_starts.len().saturating_sub(1)
    }

    /// The community ids of `level`.
    pub fn level_communities(&self, level: usize) -> Range<CommunityId> {
        let range = csr_range(self.level_community_starts, level);
        range.start as CommunityId..range.end as CommunityId
    }

    /// The level a community belongs to.
    pub fn community_level(&self, community: CommunityId) -> usize {
        self.level_community_starts
            .partition_point(|&start| start <= community)
            .saturating_sub(1)
    }

    /// An entity's name.
    pub fn entity_name(&self, entity: EntityId) -> &'a str {
        let bytes = csr_row(self.entity_name_offsets, self.entity_names, entity as usize);
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// An entity's kind.
    pub fn entity_kind(&self, entity: EntityId) -> EntityKind {
        self.entity_kinds
            .get(entity as usize)
            .and_then(|&byte| EntityKind::from_byte(byte))
            .unwrap_or(EntityKind::Identifier)
    }

    /// How many chunks mention an entity.
    pub fn entity_chunk_count(&self, entity: EntityId) -> u32 {
        self.entity_chunk_counts
            .get(entity as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The entity with this kind and name, by binary search.
    pub fn find_entity(&self, kind: EntityKind, name: &str) -> Option<EntityId> {
        let key = (kind as u8, name);
        let mut low = 0usize;
        let mut high = self.entity_count();
        while low < high {
            let mid = (low + high) / 2;
            let probe = (self.entity_kinds[mid], self.entity_name(mid as EntityId));
            match probe.cmp(&key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid as EntityId),
            }
        }
        None
    }

    /// An entity's mentions as stored: chunk ordinals, or file indexes for
    /// file-level kinds (see [`Self::mentioning_chunks`]).
    pub fn mentions(&self, entity: EntityId) -> &'a [u32] {
        csr_row(self.mention_offsets, self.mentions, entity as usize)
    }

    /// Every chunk that mentions an entity, ascending.
    pub fn mentioning_chunks(&self, entity: EntityId) -> impl Iterator<Item = ChunkOrd> + 'a {
        let file_level = self.entity_kind(entity).is_file_level();
        let starts = self.file_chunk_starts;
        self.mentions(entity).iter().flat_map(move |&mention| {
            if file_level {
                let range = csr_range(starts, mention as usize);
                range.start as ChunkOrd..range.end as ChunkOrd
            } else {
                mention..mention + 1
            }
        })
    }

    /// Whether an entity is mentioned by a chunk.
    pub fn mentions_chunk(&self, entity: EntityId, chunk: ChunkOrd) -> bool {
        let mentions = self.mentions(entity);
        if self.entity_kind(entity).is_file_level() {
            let file = self
                .file_chunk_starts
                .partition_point(|&start| start <= chunk)
                .saturating_sub(1) as u32;
            mentions.binary_search(&file).is_ok()
        } else {
            mentions.binary_search(&chunk).is_ok()
        }
    }

    /// How many name terms there are.
    pub fn term_count(&self) -> usize {
        self.term_offsets.len().saturating_sub(1)
    }

    /// A name term by its position in the sorted term table.
    pub fn term(&self, index: usize) -> &'a str {
        std::str::from_utf8(csr_row(self.term_offsets, self.terms, index)).unwrap_or_default()
    }

    /// The position of `term` in the sorted term table, or where it would go.
    pub fn term_position(&self, term: &str) -> Result<usize, usize> {
        let mut low = 0usize;
        let mut high = self.term_count();
        while low < high {
            let mid = (low + high) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(low)
    }

    /// The entities whose names have the term at `index`.
    pub fn term_entities(&self, index: usize) -> &'a [EntityId] {
        csr_row(self.term_entity_offsets, self.term_entities, index)
    }

    /// An entity's strongest relations: (entity, weight), strongest first.
    pub fn neighbors(&self, entity: EntityId) -> impl Iterator<Item = (EntityId, f32)> + 'a {
        let row = csr_range(self.neighbor_offsets, entity as usize);
        let ids = self.neighbors.get(row.clone()).unwrap_or_default();
        let weights = self.neighbor_weights.get(row).unwrap_or_default();
        ids.iter().copied().zip(weights.iter().copied())
    }

    /// The community of an entity at `level`.
    pub fn entity_community(&self, entity: EntityId, level: usize) -> Option<CommunityId> {
        self.entity_communities
            .get(level * self.entity_count() + entity as usize)
            .copied()
    }

    /// A community's member count.
    pub fn community_size(&self, community: CommunityId) -> u32 {
        self.community_sizes
            .get(community as usize)
            .copied()
            .unwrap_or(0)
    }

    /// A community's parent at the next level, if it has one.
    pub fn community_parent(&self, community: CommunityId) -> Option<CommunityId> {
        self.community_parents
            .get(community as usize)
            .copied()
            .filter(|&parent| parent != NO_COMMUNITY)
    }

    /// A community's most central members with their centrality, most central first.
    pub fn central_entities(
        &self,
        community: CommunityId,
    ) -> impl Iterator<Item = (EntityId, f32)> + 'a {
        let row = csr_range(self.central_offsets, community as usize);
        let ids = self.central_entities.get(row.clone()).unwrap_or_default();
        let scores = self.central_scores.get(row).unwrap_or_default();
        ids.iter().copied().zip(scores.iter().copied())
    }

    /// A community's summary chunks with their coverage scores, best first.
    pub fn summary_chunks(
        &self,
        community: CommunityId,
    ) -> impl Iterator<Item = (ChunkOrd, f32)> + 'a {
        let row = csr_range(self.summary_offsets, community as usize);
        let chunks = self.summary_chunks.get(row.clone()).unwrap_or_default();
        let scores = self.summary_scores.get(row).unwrap_or_default();
        chunks.iter().copied().zip(scores.iter().copied())
    }

    /// Checks every invariant the accessors rely on for meaningful answers
    /// (they never panic either way): table lengths agree, offsets are
    /// monotone and in bounds, ids are in range, names are UTF-8, the entity
    /// table and the term table are sorted.
    pub fn validate(&self) -> Result<()> {
        let entities = self.entity_count();
        let chunks = self.header.chunk_count as usize;
        let files = self.header.file_count as usize;
        ensure!(
            self.file_chunk_starts.len() == files + 1,
            "file table length"
        );
        check_offsets("file_chunk_starts", self.file_chunk_starts, chunks)?;
        ensure!(
            self.entity_name_offsets.len() == entities + 1,
            "entity name table length"
        );
        check_offsets(
            "entity_name_offsets",
            self.entity_name_offsets,
            self.entity_names.len(),
        )?;
        ensure!(
            std::str::from_utf8(self.entity_names).is_ok(),
            "entity names are not UTF-8"
        );
        ensure!(
            self.entity_kinds
                .iter()
                .all(|&k| EntityKind::from_byte(k).is_some()),
            "unknown entity kind"
        );
        ensure!(
            self.entity_chunk_counts.len() == entities,
            "entity chunk counts length"
        );
        ensure!(
            self.entity_term_counts.len() == entities,
            "entity term counts length"
        );
        ensure!(
            self.mention_offsets.len() == entities + 1,
            "mention table length"
        );
        check_offsets("mention_offsets", self.mention_offsets, self.mentions.len())?;
        for entity in 0..entities {
            let bound = if self.entity_kind(entity as EntityId).is_file_level() {
                files
            } else {
                chunks
            };
            check_ids("mentions", self.mentions(entity as EntityId), bound)?;
        }
        check_offsets("term_offsets", self.term_offsets, self.terms.len())?;
        ensure!(
            std::str::from_utf8(self.terms).is_ok(),
            "terms are not UTF-8"
        );
        ensure!(
            self.term_entity_offsets.len() == self.term_offsets.len(),
            "term entity table length"
        );
        check_offsets(
            "term_entity_offsets",
            self.term_entity_offsets,
            self.term_entities.len(),
        )?;
        check_ids("term_entities", self.term_entities, entities)?;
        ensure!(
            (1..self.term_count()).all(|i| self.term(i - 1) < self.term(i)),
            "terms are not sorted"
        );
        ensure!(
            (1..entities).all(|i| {
                let (a, b) = ((i - 1) as EntityId, i as EntityId);
                (self.entity_kinds[i - 1], self.entity_name(a))
                    < (self.entity_kinds[i], self.entity_name(b))
            }),
            "entities are not sorted"
        );
        ensure!(
            self.neighbor_offsets.len() == entities + 1,
            "neighbor table length"
        );
        check_offsets(
            "neighbor_offsets",
            self.neighbor_offsets,
            self.neighbors.len(),
        )?;
        ensure!(
            self.neighbor_weights.len() == self.neighbors.len(),
            "neighbor weights length"
        );
        check_ids("neighbors", self.neighbors, entities)?;
        let communities = self.community_sizes.len();
        ensure!(
            !self.level_community_starts.is_empty(),
            "level table is empty"
        );
        check_offsets(
            "level_community_starts",
            self.level_community_starts,
            communities,
        )?;
        ensure!(
            self.entity_communities.len() == self.level_count() * entities,
            "membership length"
        );
        check_ids("entity_communities", self.entity_communities, communities)?;
        ensure!(
            self.community_parents.len() == communities,
            "community parents length"
        );
        ensure!(
            self.community_parents
                .iter()
                .all(|&p| p == NO_COMMUNITY || (p as usize) < communities),
            "community parent out of range"
        );
        ensure!(
            self.central_offsets.len() == communities + 1,
            "central table length"
        );
        check_offsets(
            "central_offsets",
            self.central_offsets,
            self.central_entities.len(),
        )?;
        ensure!(
            self.central_scores.len() == self.central_entities.len(),
            "central scores length"
        );
        check_ids("central_entities", self.central_entities, entities)?;
        ensure!(
            self.summary_offsets.len() == communities + 1,
            "summary table length"
        );
        check_offsets(
            "summary_offsets",
            self.summary_offsets,
            self.summary_chunks.len(),
        )?;
        ensure!(
            self.summary_scores.len() == self.summary_chunks.len(),
            "summary scores length"
        );
        check_ids("summary_chunks", self.summary_chunks, chunks)
    }
}

/// Checks that `offsets` is non-empty, starts at 0, never decreases and ends at `end`.
fn check_offsets(name: &str, offsets: &[u32], end: usize) -> Result<()> {
    ensure!(offsets.first() == Some(&0), "{name} does not start at 0");
    ensure!(offsets.windows(2).all(|w| w[0] <= w[1]), "{name} decreases");
    ensure!(
        offsets.last().map(|&l| l as usize) == Some(end),
        "{name} does not end at {end}"
    );
    Ok(())
}

/// Checks that every id is below `bound`.
fn check_ids(name: &str, ids: &[u32], bound: usize) -> Result<()> {
    ensure!(
        ids.iter().all(|&id| (id as usize) < bound),
        "{name} holds an id out of range"
    );
    Ok(())
}

/// Encodes the header and tables as the bytes of a graph file.
pub fn encode(header: &GraphHeader, tables: &GraphTables) -> Result<Vec<u8>> {
    let header_bytes = postcard::to_stdvec(header).context("cannot encode the graph header")?;
    Ok(FRAMING.encode(&header_bytes, &tables.section_bytes()))
}

/// A graph file, memory-mapped and validated.
#[derive(Debug)]
pub struct GraphFile {
    /// The mapped bytes.
    map: Mmap,
    header: GraphHeader,
    /// Byte range of each section in `map`.
    spans: Vec<Range<usize>>,
}

impl GraphFile {
    /// Maps the graph file at `path` and checks its preamble and section
    /// shapes. The tables' invariants ([`GraphView::validate`]) are checked
    /// when the index is written; the file's checksum (checked when the
    /// generation opens) guards them since, and the accessors never panic
    /// on a table that breaks them.
    pub fn open(path: &Path) -> Result<Self> {
        let damaged = || crate::store::damaged(path, "cannot be read as a graph");
        let map = crate::store::map_file(path)?.with_context(damaged)?;
        let (header, spans) = parse_preamble(&map).with_context(damaged)?;
        let graph = Self { map, header, spans };
        graph.view().with_context(damaged)?;
        Ok(graph)
    }

    /// The tables, borrowed from the mapped file.
    pub fn view(&self) -> Result<GraphView<'_>> {
        let sections: Vec<&[u8]> = self
            .spans
            .iter()
            .map(|span| &self.map[span.clone()])
            .collect();
        view_sections(&self.header, &sections)
    }
}

/// Reads magic, version, section table and header; checks the spans.
fn parse_preamble(bytes: &[u8]) -> Result<(GraphHeader, Vec<Range<usize>>)> {
    let (header, spans) = FRAMING.parse(bytes)?;
    let header = postcard::from_bytes(header).context("the header cannot be decoded")?;
    Ok((header, spans))
}
