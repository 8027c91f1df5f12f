//! Near misses: whether a word is one typing slip from another.
//!
//! One rule, shared by the graph list's fuzzy entity names and the sparse
//! list's "did the query nearly match?" (what tells a misspelt word from
//! noise, see `retriever::confidence`): a word of four or more characters
//! nearly matches a word that begins with the same two characters and lies
//! within Damerau–Levenshtein distance 1 of it (2 from eight characters).
//! Typing slips rarely fall on a word's first letters, and the shared
//! prefix makes a sorted term list's candidates one range. `strsim`
//! measures the distance.

/// Shortest word that may nearly match another.
const MIN_CHARS: usize = 4;

/// Words this long may be two slips away.
const TWO_SLIPS_FROM: usize = 8;

/// A word, ready to be compared with candidates that might be it mistyped.
#[derive(Debug, Clone, Copy)]
pub struct NearMiss<'a> {
    word: &'a str,
    chars: usize,
    max_distance: usize,
    prefix: &'a str,
}

impl<'a> NearMiss<'a> {
    /// The rule for `word`; `None` for a word too short to nearly match
    /// anything.
    pub fn of(word: &'a str) -> Option<Self> {
        let chars = word.chars().count();
        if chars < MIN_CHARS {
            return None;
        }
        let prefix_end = word.char_indices().nth(2).map_or(word.len(), |(i, _)| i);
        Some(Self {
            word,
            chars,
            max_distance: if chars >= TWO_SLIPS_FROM { 2 } else { 1 },
            prefix: &word[..prefix_end],
        })
    }

    /// The first two characters, which a near match shares.
    pub fn prefix(&self) -> &'a str {
        self.prefix
    }

    /// How many slips `candidate` is from the word, when it nearly matches
    /// it (the same word counts 0); `None` when it does not.
    pub fn distance(&self, candidate: &str) -> Option<usize> {
        if !candidate.starts_with(self.prefix)
            || candidate.chars().count().abs_diff(self.chars) > self.max_distance
        {
            return None;
        }
        let distance = strsim::damerau_levenshtein(self.word, candidate);
        (distance <= self.max_distance).then_some(distance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_slip_from_four_characters_two_from_eight_same_first_two() {
        let near = NearMiss::of("sirutin").unwrap();
        assert_eq!(near.prefix(), "si");
        assert_eq!(near.distance("sirtuin"), Some(1), "a transposition");
        assert_eq!(near.distance("sirutin"), Some(0));
        assert_eq!(near.distance("sirtuins"), None, "two slips under eight");
        assert_eq!(near.distance("airutin"), None, "another first letter");
        let long = NearMiss::of("postgress").unwrap();
        assert_eq!(long.distance("postgr"), None, "three slips");
        assert_eq!(long.distance("postgre"), Some(2));
        assert!(NearMiss::of("teh").is_none());
        // Characters, not bytes.
        let accented = NearMiss::of("éçole").unwrap();
        assert_eq!(accented.prefix(), "éç");
        assert_eq!(accented.distance("éçolé"), Some(1));
    }
}
