//! The entity graph's edges: why two entities are related, and how strongly.

use petgraph::graph::UnGraph;

use super::tables::EntityId;

/// Reasons two entities are related, as bits of one byte.
pub type RelationKinds = u8;
/// Mentioned by one chunk.
pub const CO_OCCURRENCE: RelationKinds = 1;
/// A file and an entity it mentions.
pub const IN_DOCUMENT: RelationKinds = 2;
/// A file and one of its front-matter values.
pub const SAME_METADATA: RelationKinds = 4;
/// Two files, one linking to the other.
pub const LINK: RelationKinds = 8;

/// One edge of the entity graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relation {
    /// Summed weight of every reason.
    pub weight: f32,
    /// Which reasons ([`CO_OCCURRENCE`], [`IN_DOCUMENT`], [`SAME_METADATA`], [`LINK`]).
    pub kinds: RelationKinds,
}

/// The entity graph: node weight = entity id (equal to the node index).
pub type RelationGraph = UnGraph<EntityId, Relation>;
