//! From a query to ranked chunks, through entities and communities.
//!
//! 1. **Seeds**: the entities the query names (files are not named this
//!    way: their stems repeat across folders and translations, and their
//!    headings and identifiers name them better).
//!    - *exact*: a query identifier equal to an identifier entity
//!      (`pg_ctl`), or a word or word pair equal to an error code (`c4996`,
//!      `http 504`);
//!    - *by terms*: an entity whose name terms
//!      ([`name_terms`](super::entity::name_terms)) the query holds, at least
//!      [`QueryOptions::min_coverage`] of them (`cluster B` names
//!      `cluster: b`; `database failover` names the heading
//!      `database failover procedure` at 2/3);
//!    - *fuzzy*: a query term found in no entity name stands for the
//!      closest name term it nearly matches ([`crate::text::near`]: four or
//!      more characters, Damerau–Levenshtein distance 1, 2 from eight
//!      characters, same first two characters: `postgress` → `postgr`),
//!      found by binary search in the sorted term table, so it costs a few
//!      comparisons, not a scan.
//!
//!    A seed weighs its specificity `ln(1 + chunks / chunks mentioning it)`
//!    times coverage², times [`QueryOptions::terms_factor`] when matched by
//!    terms and [`QueryOptions::fuzzy_factor`] when fuzzy. The
//!    [`QueryOptions::max_seeds`] heaviest are kept.
//! 2. **Communities**: each seed's level-0 community gathers the seeds'
//!    weights; the [`QueryOptions::max_communities`] heaviest are the
//!    query's communities.
//! 3. **Chunks**: every chunk mentioning a seed gains the seed's weight
//!    (scaled so the heaviest seed is 1), and every chunk mentioning a
//!    central member of one of the query's communities gains
//!    `expansion_weight × community weight (heaviest = 1) × centrality`,
//!    damped for large communities ([`QueryOptions::focused_community_size`]);
//!    central files and front-matter values are skipped (they would lift
//!    every chunk of a file alike; the seeds already cover them). Each
//!    community's summary chunks (its extractive summary) gain
//!    `summary_weight × community weight × coverage (best = 1)`.
//!    So a chunk ranks by how many of the query's entities and their
//!    communities' central entities it covers. Ties go to the lower ordinal.
//!
//! Each hit carries a one-line reason naming what it matched, for `explain`.

use std::collections::HashMap;

use super::entity::EntityKind;
use super::summary::ExtractiveSummary;
use super::tables::{CommunityId, EntityId, GraphView};
use crate::lists::{Candidate, TopWindow};
use crate::store::generation::ChunkOrd;
use crate::text::near::NearMiss;

/// Query-time settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryOptions {
    /// Seeds kept, heaviest first.
    pub max_seeds: usize,
    /// Communities the query expands into.
    pub max_communities: usize,
    /// Share of its name terms a query must hold to name an entity.
    pub min_coverage: f32,
    /// Weight factor of a seed named by terms rather than exactly.
    pub terms_factor: f32,
    /// Weight factor of a fuzzy term match.
    pub fuzzy_factor: f32,
    /// Weight of a community's central entities relative to the seeds.
    pub expansion_weight: f32,
    /// Weight of a community's summary chunks (the chunks best covering its
    /// central entities) relative to the seeds.
    pub summary_weight: f32,
    /// Communities up to this size expand at full weight; a larger one at
    /// `1 / (1 + ln(size / this))`, as its centre says less about any chunk.
    pub focused_community_size: f32,
    /// Central entities reasons name, per hit.
    pub reason_entities: usize,
}

impl Default for QueryOptions {
    fn default() -> Self {
        Self {
            max_seeds: 24,
            max_communities: 6,
            min_coverage: 0.6,
            terms_factor: 0.8,
            fuzzy_factor: 0.6,
            expansion_weight: 0.5,
            summary_weight: 0.25,
            focused_community_size: 64.0,
            reason_entities: 3,
        }
    }
}

/// How a seed was named by the query.
#[derive(Debug, Clone, PartialEq)]
pub enum SeedMatch {
    /// The query holds the entity's name as a word or identifier.
    Exact,
    /// The query holds this share of the entity's name terms.
    Terms {
        /// Matched share, 0–1.
        coverage: f32,
    },
    /// As `Terms`, with at least one term matched fuzzily.
    Fuzzy {
        /// Matched share, 0–1.
        coverage: f32,
    },
}

/// An entity the query names.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    /// The entity.
    pub entity: EntityId,
    /// Its weight (see the module doc).
    pub weight: f32,
    /// How it was matched.
    pub matched: SeedMatch,
}

/// One ranked chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphHit {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// Its graph score.
    pub score: f32,
    /// Why it is here, one line.
    pub reason: String,
}

/// What the graph list found for one query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GraphRanking {
    /// The query's entities, heaviest first.
    pub seeds: Vec<Seed>,
    /// The query's communities with their weights, heaviest first.
    pub communities: Vec<(CommunityId, f32)>,
    /// The best allowed chunks, best first.
    pub hits: Vec<GraphHit>,
    /// Allowed chunks with a score.
    pub matched: usize,
    /// Chunks with a score that the filter removed.
    pub filtered_out: usize,
}

/// An entity that scores chunks, and why.
#[derive(Debug, Clone, Copy)]
struct Scorer {
    entity: EntityId,
    weight: f32,
    /// The community it was drawn from, for a central entity; `None` for a seed.
    community: Option<CommunityId>,
}

/// Ranks the chunks of `view` for `query`: the best `window` chunks that
/// `allow` accepts, with reasons.
pub fn rank(
    view: &GraphView<'_>,
    query: &str,
    window: usize,
    options: &QueryOptions,
    allow: impl Fn(ChunkOrd) -> bool,
) -> GraphRanking {
    let seeds = find_seeds(view, query, options);
    let communities = query_communities(view, &seeds, options);
    let scorers = scorers(view, &seeds, &communities, options);
    let mut scores = vec![0f32; view.header.chunk_count as usize];
    let mut touched: Vec<ChunkOrd> = Vec::new();
    for scorer in &scorers {
        for chunk in view.mentioning_chunks(scorer.entity) {
            let Some(slot) = scores.get_mut(chunk as usize) else {
                continue;
            };
            if *slot == 0.0 {
                touched.push(chunk);
            }
            *slot += scorer.weight;
        }
    }
    for (chunk, weight) in summary_boosts(view, &communities, options) {
        let Some(slot) = scores.get_mut(chunk as usize) else {
            continue;
        };
        if *slot == 0.0 {
            touched.push(chunk);
        }
        *slot += weight;
    }
    let mut ranking = GraphRanking {
        seeds,
        communities,
        ..GraphRanking::default()
    };
    let mut best = TopWindow::new(window);
    for chunk in touched {
        if allow(chunk) {
            ranking.matched += 1;
            best.push(Candidate {
                score: scores[chunk as usize],
                chunk,
            });
        } else {
            ranking.filtered_out += 1;
        }
    }
    ranking.hits = best
        .into_sorted()
        .into_iter()
        .map(|c| GraphHit {
            chunk: c.chunk,
            score: c.score,
            reason: reason(view, &ranking.seeds, &scorers, c.chunk, options),
        })
        .collect();
    ranking
}

/// The query's seeds, heaviest first (ties: lower id).
pub fn find_seeds(view: &GraphView<'_>, query: &str, options: &QueryOptions) -> Vec<Seed> {
    let analyzer = view.header.options.analyzer;
    let total_chunks = view.header.chunk_count.max(1) as f32;
    let specificity = |entity: EntityId| {
        (1.0 + total_chunks / view.entity_chunk_count(entity).max(1) as f32).ln()
    };
    let mut seeds: HashMap<EntityId, Seed> = HashMap::new();
    // Exact: the query's identifiers and error codes (`http 504` from two words).
    let tokens = analyzer.tokenize(query);
    for (index, token) in tokens.iter().enumerate() {
        let raw = query[token.offset_from..token.offset_to].to_lowercase();
        let is_identifier = tokens.get(index + 1).is_some_and(|next| {
            next.position == token.position && token.offset_to > next.offset_to
        });
        let next_word = tokens
            .get(index + 1)
            .filter(|next| next.position == token.position + 1)
            .map(|next| {
                format!(
                    "{raw} {}",
                    query[next.offset_from..next.offset_to].to_lowercase()
                )
            });
        let exact = [
            is_identifier.then(|| (EntityKind::Identifier, raw.clone())),
            Some((EntityKind::ErrorCode, raw)),
            next_word.map(|pair| (EntityKind::ErrorCode, pair)),
        ];
        for (kind, name) in exact.into_iter().flatten() {
            if let Some(entity) = view.find_entity(kind, &name) {
                seeds.insert(
                    entity,
                    Seed {
                        entity,
                        weight: specificity(entity),
                        matched: SeedMatch::Exact,
                    },
                );
            }
        }
    }
    // By terms, exact or fuzzy: per entity, (terms held, their weighted
    // sum, whether one was fuzzy).
    let with_stop_words = crate::text::tokenize::Analyzer {
        stop_words: false,
        ..analyzer
    };
    let mut query_terms: Vec<String> = with_stop_words.terms(query);
    query_terms.sort();
    query_terms.dedup();
    let mut matched: HashMap<EntityId, (u32, f32, bool)> = HashMap::new();
    for term in &query_terms {
        let (index, fuzzy) = match view.term_position(term) {
            Ok(index) => (index, false),
            Err(_) => match closest_term(view, term) {
                Some(index) => (index, true),
                None => continue,
            },
        };
        for &entity in view.term_entities(index) {
            if view.entity_kind(entity) == EntityKind::Document {
                continue;
            }
            let entry = matched.entry(entity).or_insert((0, 0.0, false));
            entry.0 += 1;
            entry.1 += if fuzzy { options.fuzzy_factor } else { 1.0 };
            entry.2 |= fuzzy;
        }
    }
    let phrase = format!(" {} ", raw_words(query).join(" "));
    for (entity, (held, weighted, fuzzy)) in matched {
        if !names_short_value_in_order(view, entity, &phrase) {
            continue;
        }
        let terms = f32::from(
            view.entity_term_counts
                .get(entity as usize)
                .copied()
                .unwrap_or(0),
        );
        let coverage = (held as f32 / terms).min(1.0);
        if terms == 0.0 || coverage < options.min_coverage || seeds.contains_key(&entity) {
            continue;
        }
        let matched = if fuzzy {
            SeedMatch::Fuzzy { coverage }
        } else {
            SeedMatch::Terms { coverage }
        };
        let weighted_coverage = (weighted / terms).min(1.0);
        let weight =
            specificity(entity) * weighted_coverage * weighted_coverage * options.terms_factor;
        seeds.insert(
            entity,
            Seed {
                entity,
                weight,
                matched,
            },
        );
    }
    let mut seeds: Vec<Seed> = seeds.into_values().collect();
    seeds.sort_unstable_by(|a, b| b.weight.total_cmp(&a.weight).then(a.entity.cmp(&b.entity)));
    seeds.truncate(options.max_seeds);
    seeds
}

/// The query's words, lowercase, as written (no stemming, stop words kept).
fn raw_words(query: &str) -> Vec<String> {
    // As the entity extractor reads names: without the Unicode rules.
    let analyzer = crate::text::tokenize::Analyzer {
        stem: false,
        stop_words: false,
        normalize: false,
        fold: false,
        elisions: false,
    };
    analyzer.terms(query)
}

/// For a metadata entity with a value under three characters (`cluster:
/// b`), whether `phrase` (the query's words, space-separated and -padded)
/// holds `key value` as adjacent words; `true` for every other entity. A
/// short value is too common a word to be matched out of order (`cluster …
/// a database` is not `cluster: a`).
fn names_short_value_in_order(view: &GraphView<'_>, entity: EntityId, phrase: &str) -> bool {
    if view.entity_kind(entity) != EntityKind::Metadata {
        return true;
    }
    match super::entity::split_metadata_name(view.entity_name(entity)) {
        Some((key, value)) if value.chars().count() < 3 => {
            phrase.contains(&format!(" {key} {value} "))
        }
        _ => true,
    }
}

/// The name term closest to `term` (see the module doc), if any.
fn closest_term(view: &GraphView<'_>, term: &str) -> Option<usize> {
    let near = NearMiss::of(term)?;
    let start = view.term_position(near.prefix()).unwrap_or_else(|at| at);
    let mut best: Option<(usize, usize)> = None;
    for index in start..view.term_count() {
        let candidate = view.term(index);
        if !candidate.starts_with(near.prefix()) {
            break;
        }
        if let Some(distance) = near.distance(candidate)
            && best.is_none_or(|(d, _)| distance < d)
        {
            best = Some((distance, index));
        }
    }
    best.map(|(_, index)| index)
}

/// The query's communities at level 0 with their weights, heaviest first.
fn query_communities(
    view: &GraphView<'_>,
    seeds: &[Seed],
    options: &QueryOptions,
) -> Vec<(CommunityId, f32)> {
    let mut weights: HashMap<CommunityId, f32> = HashMap::new();
    for seed in seeds {
        if let Some(community) = view.entity_community(seed.entity, 0) {
            *weights.entry(community).or_default() += seed.weight;
        }
    }
    let mut communities: Vec<(CommunityId, f32)> = weights.into_iter().collect();
    communities.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    communities.truncate(options.max_communities);
    communities
}

/// Seeds (heaviest = 1) and the central members of the query's
/// communities, each with the weight it adds to a chunk mentioning it.
fn scorers(
    view: &GraphView<'_>,
    seeds: &[Seed],
    communities: &[(CommunityId, f32)],
    options: &QueryOptions,
) -> Vec<Scorer> {
    let top_seed = seeds
        .first()
        .map_or(1.0, |s| s.weight)
        .max(f32::MIN_POSITIVE);
    let mut scorers: Vec<Scorer> = seeds
        .iter()
        .map(|s| Scorer {
            entity: s.entity,
            weight: s.weight / top_seed,
            community: None,
        })
        .collect();
    let top_community = communities.first().map_or(1.0, |c| c.1);
    for &(community, weight) in communities {
        let factor = options.expansion_weight
            * community_factor(view, community, weight, top_community, options);
        for (entity, centrality) in view.central_entities(community) {
            if view.entity_kind(entity).is_file_level() {
                continue;
            }
            scorers.push(Scorer {
                entity,
                weight: factor * centrality,
                community: Some(community),
            });
        }
    }
    scorers
}

/// How much a community's expansion counts: its weight relative to the
/// heaviest query community, damped when it is large.
fn community_factor(
    view: &GraphView<'_>,
    community: CommunityId,
    weight: f32,
    top: f32,
    options: &QueryOptions,
) -> f32 {
    let size = view.community_size(community) as f32;
    let damping = 1.0 / (1.0 + (size / options.focused_community_size).max(1.0).ln());
    weight / top.max(f32::MIN_POSITIVE) * damping
}

/// The summary chunks of the query's communities, each with the weight it
/// adds: `summary_weight × community factor × coverage (best = 1)`.
fn summary_boosts(
    view: &GraphView<'_>,
    communities: &[(CommunityId, f32)],
    options: &QueryOptions,
) -> Vec<(ChunkOrd, f32)> {
    let top = communities.first().map_or(1.0, |c| c.1);
    let mut boosts = Vec::new();
    for &(community, weight) in communities {
        let factor =
            options.summary_weight * community_factor(view, community, weight, top, options);
        let best = view
            .summary_chunks(community)
            .next()
            .map_or(1.0, |(_, c)| c)
            .max(f32::MIN_POSITIVE);
        boosts.extend(
            view.summary_chunks(community)
                .map(|(chunk, coverage)| (chunk, factor * coverage / best)),
        );
    }
    boosts
}

/// The one-line reason of a hit: its strongest seeds, then its strongest
/// community members with the community's label.
fn reason(
    view: &GraphView<'_>,
    seeds: &[Seed],
    scorers: &[Scorer],
    chunk: ChunkOrd,
    options: &QueryOptions,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    let matched: Vec<&Scorer> = scorers
        .iter()
        .filter(|s| view.mentions_chunk(s.entity, chunk))
        .collect();
    for scorer in matched
        .iter()
        .filter(|s| s.community.is_none())
        .take(options.reason_entities)
    {
        let how = match seeds
            .iter()
            .find(|s| s.entity == scorer.entity)
            .map(|s| &s.matched)
        {
            Some(SeedMatch::Exact) | None => "exact".to_owned(),
            Some(SeedMatch::Terms { coverage }) => format!("terms {coverage:.2}"),
            Some(SeedMatch::Fuzzy { coverage }) => format!("fuzzy {coverage:.2}"),
        };
        parts.push(format!(
            "{} '{}' ({how}, +{:.3})",
            view.entity_kind(scorer.entity),
            view.entity_name(scorer.entity),
            scorer.weight
        ));
    }
    let mut via: Vec<&Scorer> = matched
        .iter()
        .copied()
        .filter(|s| s.community.is_some())
        .collect();
    via.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    if let Some(community) = via.first().and_then(|s| s.community) {
        let names: Vec<String> = via
            .iter()
            .filter(|s| s.community == Some(community))
            .take(options.reason_entities)
            .map(|s| format!("'{}'", view.entity_name(s.entity)))
            .collect();
        let label = ExtractiveSummary::of(view, community).label(view, options.reason_entities);
        parts.push(format!(
            "community {community} [{label}] via {}",
            names.join(", ")
        ));
    }
    let summarized = communities_summarizing(view, scorers, chunk);
    if let Some(community) = summarized {
        parts.push(format!(
            "in the extractive summary of community {community}"
        ));
    }
    parts.join("; ")
}

/// The first query community (among those `scorers` drew from) whose
/// summary holds `chunk`.
fn communities_summarizing(
    view: &GraphView<'_>,
    scorers: &[Scorer],
    chunk: ChunkOrd,
) -> Option<CommunityId> {
    let mut seen: Vec<CommunityId> = Vec::new();
    for community in scorers.iter().filter_map(|s| s.community) {
        if !seen.contains(&community) {
            seen.push(community);
            if view.summary_chunks(community).any(|(c, _)| c == chunk) {
                return Some(community);
            }
        }
    }
    None
}
