//! Several indexes searched as one: a person's notes, a project's docs and
//! an agent's memories, ranked in one query as one index built over all
//! their files would rank them.
//!
//! Each member keeps its own folder, manifest and generation; the set only
//! numbers their chunks one after another (a member's chunk `n` is the
//! set's `base + n`), so every list ranks across all members with one
//! ordinal space and the fusion runs once. With more than one member, a
//! chunk's file is named `name:path` wherever it is shown (`notes:runbooks/
//! pg.md#3`), and those ids find their chunk again ([`IndexSet::find`]);
//! with one, nothing changes.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::Index;
use crate::store::generation::{ChunkOrd, ChunkView};

/// Characters an index name may hold besides letters and digits: a name
/// prefixes chunk ids, before a `:`, and is typed on command lines.
const NAME_PUNCTUATION: &[char] = &['-', '_', '.'];

/// Longest index name, in characters.
const MAX_NAME_CHARS: usize = 64;

/// One index of a set: its name and where its chunks start among the set's.
pub struct Member {
    name: String,
    index: Index,
    base: ChunkOrd,
}

impl Member {
    /// The name its chunk ids carry when several indexes are searched.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The opened index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The set-wide ordinal of its first chunk.
    pub fn base(&self) -> ChunkOrd {
        self.base
    }

    /// Its number of chunk ordinals (live and buried).
    pub fn len(&self) -> usize {
        self.index.parts().len()
    }

    /// True when it holds no live chunk (a delta may have buried them all).
    pub fn is_empty(&self) -> bool {
        self.index.parts().live_len() == 0
    }
}

/// The indexes one search runs over, in the order given (the first is the
/// reference whose model, settings and fusion defaults the search uses).
pub struct IndexSet {
    members: Vec<Member>,
    /// Whether chunk ids carry their index's name.
    named: bool,
}

impl IndexSet {
    /// The set of `indexes`, each with the name it was given or `None` for
    /// its indexed folder's name, made unique (`notes`, `notes-2`); chunk
    /// ids carry the names when there are several. An error for no index, a
    /// name given twice, a name that is not a word of letters, digits, `-`,
    /// `_` and `.`, or more chunks than one ordinal space holds.
    pub fn new(indexes: Vec<(Option<String>, Index)>) -> Result<Self> {
        let named = indexes.len() > 1;
        Self::with_names(indexes, named)
    }

    /// [`IndexSet::new`], with chunk ids carrying the names even for one
    /// index: for a server of several indexes, whose ids name their index
    /// whichever of them a call searches.
    pub fn named(indexes: Vec<(Option<String>, Index)>) -> Result<Self> {
        Self::with_names(indexes, true)
    }

    fn with_names(indexes: Vec<(Option<String>, Index)>, named: bool) -> Result<Self> {
        ensure!(!indexes.is_empty(), "no index to search");
        let given: Vec<&str> = indexes.iter().filter_map(|(n, _)| n.as_deref()).collect();
        for (i, name) in given.iter().enumerate() {
            check_name(name)?;
            ensure!(
                !given[..i].contains(name),
                "two indexes are named '{name}'; give each its own name (--index NAME=PATH)"
            );
        }
        // Unnamed indexes take their folder's name, made unique in the
        // order of their folders' paths, not of the flags: reordering the
        // flags changes no result's id.
        let mut taken: Vec<String> = given.iter().map(|n| n.to_string()).collect();
        let mut names: Vec<Option<String>> = indexes.iter().map(|(n, _)| n.clone()).collect();
        let mut unnamed: Vec<usize> = (0..indexes.len()).filter(|&i| names[i].is_none()).collect();
        unnamed.sort_by(|&a, &b| indexes[a].1.root().cmp(indexes[b].1.root()));
        for at in unnamed {
            let name = unique(&default_name(indexes[at].1.root()), &taken);
            taken.push(name.clone());
            names[at] = Some(name);
        }
        let mut members = Vec::with_capacity(indexes.len());
        let mut base: u64 = 0;
        for (name, (_, index)) in names.into_iter().zip(indexes) {
            let name = name.expect("every index is named above");
            let start = ChunkOrd::try_from(base).ok();
            base += index.parts().len() as u64;
            let (Some(start), Ok(_)) = (start, ChunkOrd::try_from(base)) else {
                bail!("the indexes hold more chunks together than one search can rank");
            };
            members.push(Member {
                name,
                index,
                base: start,
            });
        }
        Ok(Self { members, named })
    }

    /// The set of one index (its name is its folder's, and shown nowhere).
    pub fn single(index: Index) -> Self {
        let name = default_name(index.root());
        Self {
            members: vec![Member {
                name,
                index,
                base: 0,
            }],
            named: false,
        }
    }

    /// The members, in order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The first member's index: the reference a search takes its model,
    /// settings and defaults from.
    pub fn first(&self) -> &Index {
        &self.members[0].index
    }

    /// True when more than one index is searched.
    pub fn several(&self) -> bool {
        self.members.len() > 1
    }

    /// True when chunk ids and paths carry their index's name (`name:`):
    /// with several indexes, or a server's one of several.
    pub fn shows_names(&self) -> bool {
        self.named
    }

    /// The chunks of all members.
    pub fn len(&self) -> usize {
        self.members.iter().map(Member::len).sum()
    }

    /// True when no member holds a chunk.
    pub fn is_empty(&self) -> bool {
        self.members.iter().all(Member::is_empty)
    }

    /// The member holding the set-wide chunk `chunk`, by position, and the
    /// chunk's ordinal in it.
    pub fn locate(&self, chunk: ChunkOrd) -> Result<(usize, ChunkOrd)> {
        let at = self.members.partition_point(|m| m.base <= chunk);
        let found = at.checked_sub(1).and_then(|at| {
            let local = chunk - self.members[at].base;
            ((local as usize) < self.members[at].len()).then_some((at, local))
        });
        found.with_context(|| format!("chunk {chunk} is past the searched indexes' chunks"))
    }

    /// The chunk `chunk` with its file and text, its path named as the set
    /// shows it ([`IndexSet::shown_path`]).
    pub fn chunk(&self, chunk: ChunkOrd) -> Result<ChunkView> {
        let (member, local) = self.locate(chunk)?;
        let mut view = self.members[member].index.parts().chunk(local)?;
        view.file.path = self.shown_path(member, &view.file.path);
        Ok(view)
    }

    /// The document the sparse list indexed `chunk` under: its searchable
    /// text and fields, weighed as its own index records
    /// ([`crate::lists::sparse::fields`]).
    pub fn sparse_document(&self, chunk: ChunkOrd) -> Result<String> {
        let (member, local) = self.locate(chunk)?;
        let view = self.members[member].index.parts().chunk(local)?;
        Ok(self.sparse_document_of(member, &view))
    }

    /// [`Self::sparse_document`] of a chunk of member `member` read as
    /// `view` (its path as that index holds it, not as the set shows it).
    pub fn sparse_document_of(&self, member: usize, view: &ChunkView) -> String {
        let manifest = self.members[member].index.manifest();
        manifest.sparse_fields.of_view(&manifest.tokenizer, view)
    }

    /// The path of a file of member `member` as the set shows it:
    /// `name:path` when names are shown, else `path`.
    pub fn shown_path(&self, member: usize, path: &str) -> String {
        match self.named {
            true => named_path(&self.members[member].name, path),
            false => path.to_string(),
        }
    }

    /// The member a shown path or chunk id names, and the rest of it: with
    /// names shown, `name:rest` for a member's name (an error naming the
    /// indexes for any other); without, the whole of it.
    pub fn split_shown<'a>(&self, shown: &'a str) -> Result<(usize, &'a str)> {
        if !self.named {
            return Ok((0, shown));
        }
        let found = split_named(shown, self.members.iter().map(Member::name));
        found.with_context(|| {
            format!(
                "'{shown}' names no searched index; with several, ids and paths start with one's name and ':' ({})",
                self.names().join(", ")
            )
        })
    }

    /// The set-wide chunk of the id `id` (`path#n`, `name:path#n` with
    /// several indexes), if a member holds it.
    pub fn find(&self, id: &str) -> Option<ChunkOrd> {
        let (member, id) = self.split_shown(id).ok()?;
        let member = &self.members[member];
        Some(member.base + member.index.parts().find(id)?)
    }

    /// The members' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.name.as_str()).collect()
    }
}

/// A path or chunk id of the index `name` as it is shown with the names:
/// `name:path`.
pub fn named_path(name: &str, path: &str) -> String {
    format!("{name}:{path}")
}

/// The index a path or chunk id shown with the names ([`named_path`])
/// names, by its position among `names`, and the rest of it; `None` when it
/// starts with none of them.
pub fn split_named<'a, 'n>(
    shown: &'a str,
    names: impl IntoIterator<Item = &'n str>,
) -> Option<(usize, &'a str)> {
    let (name, rest) = shown.split_once(':')?;
    let at = names.into_iter().position(|n| n == name)?;
    Some((at, rest))
}

/// Checks an index name given by the user.
fn check_name(name: &str) -> Result<()> {
    let fits = |c: char| c.is_alphanumeric() || NAME_PUNCTUATION.contains(&c);
    ensure!(
        !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS && name.chars().all(fits),
        "the index name '{name}' must be 1 to {MAX_NAME_CHARS} letters, digits, '-', '_' or '.'"
    );
    Ok(())
}

/// The name of the index of the folder `root`: the folder's name, each
/// character a name may not hold as `-` (`index` for a root without one).
fn default_name(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .take(MAX_NAME_CHARS)
        .map(
            |c| match c.is_alphanumeric() || NAME_PUNCTUATION.contains(&c) {
                true => c,
                false => '-',
            },
        )
        .collect();
    match name.is_empty() {
        true => "index".to_string(),
        false => name,
    }
}

/// `name`, or when `taken` holds it, the first of `name-2`, `name-3`, … it
/// does not (`name` shortened to keep each within [`MAX_NAME_CHARS`]).
fn unique(name: &str, taken: &[String]) -> String {
    let free = |candidate: &str| !taken.iter().any(|t| t == candidate);
    if free(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let kept: String = name.chars().take(MAX_NAME_CHARS - suffix.len()).collect();
            kept + &suffix
        })
        .find(|candidate| free(candidate))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_are_the_folders_made_fit_and_unique() {
        assert_eq!(default_name(Path::new("/home/ann/notes")), "notes");
        assert_eq!(default_name(Path::new("/srv/my docs:v2")), "my-docs-v2");
        assert_eq!(default_name(Path::new("/")), "index");
        let taken = ["notes".to_string(), "notes-2".to_string()];
        assert_eq!(unique("notes", &taken), "notes-3");
        assert_eq!(unique("docs", &taken), "docs");
        let long = "n".repeat(MAX_NAME_CHARS);
        let second = unique(&long, std::slice::from_ref(&long));
        assert!(
            second.ends_with("-2") && check_name(&second).is_ok(),
            "{second}"
        );
    }

    #[test]
    fn a_given_name_must_be_a_word() {
        assert!(check_name("notes_2.old-x").is_ok());
        for bad in ["", "a:b", "my notes", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
