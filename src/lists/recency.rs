//! The recency list: the allowed chunks ranked by their file's document
//! date, newest first, ties by chunk id.
//!
//! It reads no query: fused with the query's lists, it lifts recent chunks
//! among those they found; run alone (`--mode recency`), it lists what is
//! newest. Its raw score decays with age behind the newest allowed chunk,
//! halving every [`HALF_LIFE_DAYS`], so relative fusion (`w × score /
//! best`) gives the newest chunk the list's whole weight and one a
//! half-life older half of it; RRF uses only the ranks. The dates are the
//! ones the index stores per file ([`crate::corpus::date`]); the list joins
//! the fusion through [`List`] like any other.

use std::time::Instant;

use anyhow::Result;

use super::{AllowSet, List, ListHit, ListKind, RankedList};
use crate::corpus::date::format_seconds;
use crate::store::generation::ChunkOrd;
use crate::store::parts::Parts;

/// Days after which a chunk's recency score halves.
pub const HALF_LIFE_DAYS: f64 = 30.0;

/// The weight `--recent` gives the recency list (see docs/searching.md, Time).
pub const RECENT_WEIGHT: f64 = 0.1;

/// Seconds in a day.
const DAY: f64 = 86_400.0;

/// The recency list over one generation, or several searched as one.
pub struct RecencyList {
    /// Per chunk ordinal, its file's date in seconds since the epoch.
    dates: Vec<i64>,
}

impl RecencyList {
    /// The list over the chunks of `indexes` (each index's parts), each
    /// one's ordinals following the last one's.
    pub fn open(indexes: &[&Parts]) -> Result<Self> {
        let mut dates = Vec::new();
        for parts in indexes {
            let file_dates = parts.file_dates()?;
            dates.extend(
                (parts.chunk_files()?.into_iter())
                    .map(|file| file_dates.get(file as usize).copied().unwrap_or(i64::MIN)),
            );
        }
        Ok(Self { dates })
    }
}

impl List for RecencyList {
    fn kind(&self) -> ListKind {
        ListKind::Recency
    }

    fn search(&self, _query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let mut allowed: Vec<(i64, ChunkOrd)> = (0..self.dates.len() as ChunkOrd)
            .filter(|&ord| allow.allows(ord))
            .map(|ord| (self.dates[ord as usize], ord))
            .collect();
        let matched = allowed.len();
        let newest_first =
            |a: &(i64, ChunkOrd), b: &(i64, ChunkOrd)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        if window < allowed.len() && window > 0 {
            allowed.select_nth_unstable_by(window - 1, newest_first);
        }
        allowed.truncate(window);
        allowed.sort_unstable_by(newest_first);
        let newest = allowed.first().map_or(0, |&(date, _)| date);
        let mut ranked = RankedList::empty(ListKind::Recency);
        for &(date, chunk) in &allowed {
            let days_behind = (newest - date) as f64 / DAY;
            ranked.hits.push(ListHit {
                chunk,
                score: 0.5f64.powf(days_behind / HALF_LIFE_DAYS) as f32,
            });
            ranked.reasons.push(format!(
                "dated {}, {} behind the newest allowed",
                format_seconds(date),
                days(days_behind)
            ));
        }
        ranked.matched = matched;
        ranked.filtered_out = self.dates.len() - matched;
        ranked.elapsed = started.elapsed();
        Ok(ranked)
    }

    fn reads_query(&self) -> bool {
        false
    }

    fn no_match_reason(&self) -> &'static str {
        "every allowed chunk has a date; this one is not allowed"
    }
}

/// `n days`, to one decimal when under ten.
fn days(days: f64) -> String {
    match days {
        0.0 => "0 days".to_string(),
        d if d < 10.0 => format!("{d:.1} days"),
        d => format!("{d:.0} days"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn list(dates: &[i64]) -> RecencyList {
        RecencyList {
            dates: dates.to_vec(),
        }
    }

    #[test]
    fn newest_first_ties_by_ordinal_scores_halving_per_half_life() {
        let day = 86_400;
        let half = (HALF_LIFE_DAYS as i64) * day;
        let l = list(&[0, 10 * half, 9 * half, 10 * half, 8 * half]);
        let ranked = l.search("ignored", 3, &AllowSet::All).unwrap();
        let got: Vec<(ChunkOrd, f32)> = ranked.hits.iter().map(|h| (h.chunk, h.score)).collect();
        assert_eq!(got, [(1, 1.0), (3, 1.0), (2, 0.5)]);
        assert_eq!(ranked.matched, 5);
        assert!(ranked.reasons[2].ends_with(", 30 days behind the newest allowed"));
        let only = AllowSet::Only(Arc::from([true, false, true, false, true]));
        let ranked = l.search("ignored", 10, &only).unwrap();
        let got: Vec<(ChunkOrd, f32)> = ranked.hits.iter().map(|h| (h.chunk, h.score)).collect();
        assert_eq!(got, [(2, 1.0), (4, 0.5), (0, 0.5f32.powi(9))]);
        assert!(l.search("x", 0, &AllowSet::All).unwrap().hits.is_empty());
    }
}
