//! Hierarchical communities of the entity graph, and who is central in each.
//!
//! Communities come from the Leiden algorithm (Traag, Waltman & van Eck,
//! 2019) as implemented by the `leiden-rs` crate, optimizing modularity with
//! a fixed seed, so the same graph always gives the same communities. Leiden
//! rather than Louvain because its refinement phase guarantees connected
//! communities (Louvain can produce communities that fall apart); the crate
//! is dual-licensed MIT/Apache, has determinism and correctness tests, and
//! needs only `rand`, `rustc-hash` and `thiserror`, already in memidx's tree.
//! Its default features (a CLI, rayon, the gryf adapter) are off: its
//! parallel local moving may differ run to run, the sequential one does not.
//!
//! Each Leiden iteration (local moving, refinement, aggregation) yields one
//! level, finest first. Leiden's levels are not strictly nested (a refined
//! sub-community may move at the next level), so a community's parent is the
//! next-level community holding most of its members. Communities are
//! numbered within a level by size, largest first, ties by smallest member.
//!
//! Centrality is a member's weighted degree inside its community (the sum of
//! its relations to other members), divided by the community's largest, so
//! the most central member has 1. It is cheap, needs no iteration, and reads
//! directly as "how much of the community this entity ties together".

use anyhow::{Context, Result};
use leiden_rs::{GraphDataBuilder, Leiden, LeidenConfig};
use petgraph::visit::EdgeRef;

use super::relation::RelationGraph;
use super::tables::EntityId;

/// Per level (finest first), each entity's community number within the level.
pub type Levels = Vec<Vec<u32>>;

/// Runs seeded Leiden on `graph` and returns its levels, finest first, each
/// renumbered by size. A graph without relations gets one level of
/// singletons; an empty graph gets no level.
pub fn detect_levels(graph: &RelationGraph, seed: u64, resolution: f64) -> Result<Levels> {
    let nodes = graph.node_count();
    if nodes == 0 {
        return Ok(Vec::new());
    }
    let mut builder = GraphDataBuilder::new(nodes);
    for edge in graph.edge_references() {
        builder
            .add_edge(
                edge.source().index(),
                edge.target().index(),
                f64::from(edge.weight().weight),
            )
            .context("cannot hand a relation to Leiden")?;
    }
    let data = builder.build().context("cannot build the Leiden graph")?;
    let config = LeidenConfig {
        seed: Some(seed),
        resolution,
        ..LeidenConfig::default()
    };
    let output = Leiden::new(config)
        .run_hierarchical(&data)
        .context("community detection failed")?;
    let mut levels: Levels = Vec::new();
    for level in output.levels {
        let membership = renumber_by_size(&level.membership);
        if levels.last() != Some(&membership) {
            levels.push(membership);
        }
    }
    if levels.is_empty() {
        levels.push((0..nodes as u32).collect());
    }
    Ok(levels)
}

/// Renumbers communities 0.. by size, largest first, ties by smallest member.
fn renumber_by_size(membership: &[usize]) -> Vec<u32> {
    let count = membership.iter().max().map_or(0, |&m| m + 1);
    let mut sizes = vec![0u32; count];
    let mut smallest = vec![usize::MAX; count];
    for (node, &community) in membership.iter().enumerate() {
        sizes[community] += 1;
        smallest[community] = smallest[community].min(node);
    }
    let mut order: Vec<usize> = (0..count).filter(|&c| sizes[c] > 0).collect();
    order.sort_unstable_by_key(|&c| (std::cmp::Reverse(sizes[c]), smallest[c]));
    let mut new_number = vec![0u32; count];
    for (number, &community) in order.iter().enumerate() {
        new_number[community] = number as u32;
    }
    membership.iter().map(|&c| new_number[c]).collect()
}

/// How many communities a membership vector has.
pub fn community_count(membership: &[u32]) -> usize {
    membership.iter().max().map_or(0, |&m| m as usize + 1)
}

/// For each community of `child`, the `parent`-level community holding
/// most of its members (ties: the lower number).
pub fn parents(child: &[u32], parent: &[u32]) -> Vec<u32> {
    let mut overlaps: Vec<(u32, u32)> = child.iter().copied().zip(parent.iter().copied()).collect();
    overlaps.sort_unstable();
    let mut best = vec![(0u32, 0u32); community_count(child)];
    let mut index = 0;
    while index < overlaps.len() {
        let pair = overlaps[index];
        let run = overlaps[index..].iter().take_while(|&&p| p == pair).count() as u32;
        let (count, chosen) = &mut best[pair.0 as usize];
        if run > *count {
            *count = run;
            *chosen = pair.1;
        }
        index += run as usize;
    }
    best.into_iter().map(|(_, chosen)| chosen).collect()
}

/// Per community, its `limit` most central members with their centrality
/// (0–1), most central first; ties go to the lower entity id.
pub fn central_members(
    graph: &RelationGraph,
    membership: &[u32],
    limit: usize,
) -> Vec<Vec<(EntityId, f32)>> {
    let mut inner_strength = vec![0f32; membership.len()];
    for edge in graph.edge_references() {
        let (a, b) = (edge.source().index(), edge.target().index());
        if a != b && membership[a] == membership[b] {
            inner_strength[a] += edge.weight().weight;
            inner_strength[b] += edge.weight().weight;
        }
    }
    let mut members: Vec<Vec<EntityId>> = vec![Vec::new(); community_count(membership)];
    for (entity, &community) in membership.iter().enumerate() {
        members[community as usize].push(entity as EntityId);
    }
    members
        .into_iter()
        .map(|mut list| {
            list.sort_unstable_by(|&a, &b| {
                inner_strength[b as usize]
                    .total_cmp(&inner_strength[a as usize])
                    .then(a.cmp(&b))
            });
            list.truncate(limit);
            let top = list.first().map_or(0.0, |&e| inner_strength[e as usize]);
            list.into_iter()
                .map(|e| {
                    let centrality = if top > 0.0 {
                        inner_strength[e as usize] / top
                    } else {
                        1.0
                    };
                    (e, centrality)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::relation::Relation;
    use super::*;
    use petgraph::graph::NodeIndex;

    /// Two triangles joined by one weak relation.
    fn two_triangles() -> RelationGraph {
        let mut graph = RelationGraph::default();
        for id in 0..6 {
            graph.add_node(id);
        }
        let strong = Relation {
            weight: 1.0,
            kinds: 1,
        };
        for (a, b) in [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)] {
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), strong);
        }
        graph.add_edge(
            NodeIndex::new(2),
            NodeIndex::new(3),
            Relation {
                weight: 0.1,
                kinds: 1,
            },
        );
        graph
    }

    #[test]
    fn two_triangles_are_two_communities_every_time() {
        let graph = two_triangles();
        let levels = detect_levels(&graph, 7, 1.0).expect("detects");
        assert_eq!(levels[0], [0, 0, 0, 1, 1, 1]);
        assert_eq!(levels, detect_levels(&graph, 7, 1.0).expect("detects"));
    }

    #[test]
    fn a_graph_without_relations_is_singletons() {
        let mut graph = RelationGraph::default();
        graph.add_node(0);
        graph.add_node(1);
        assert_eq!(
            detect_levels(&graph, 1, 1.0).expect("detects"),
            [vec![0, 1]]
        );
        assert!(
            detect_levels(&RelationGraph::default(), 1, 1.0)
                .expect("detects")
                .is_empty()
        );
    }

    #[test]
    fn renumbering_puts_the_largest_first() {
        assert_eq!(renumber_by_size(&[5, 2, 2, 5, 5, 9]), [0, 1, 1, 0, 0, 2]);
    }

    #[test]
    fn parents_hold_most_members() {
        assert_eq!(parents(&[0, 0, 0, 1, 1, 2], &[1, 1, 0, 0, 0, 0]), [1, 0, 0]);
    }

    #[test]
    fn the_bridge_ends_are_the_most_central() {
        let graph = two_triangles();
        let central = central_members(&graph, &[0, 0, 0, 1, 1, 1], 2);
        assert_eq!(central[0], [(0, 1.0), (1, 1.0)]);
        let mut weighted = graph.clone();
        weighted.add_edge(
            NodeIndex::new(2),
            NodeIndex::new(1),
            Relation {
                weight: 1.0,
                kinds: 1,
            },
        );
        let central = central_members(&weighted, &[0, 0, 0, 1, 1, 1], 3);
        assert_eq!(central[0], [(1, 1.0), (2, 1.0), (0, 2.0 / 3.0)]);
    }
}
