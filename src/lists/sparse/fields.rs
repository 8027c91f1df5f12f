//! The fields of a chunk's sparse document, and their weights.
//!
//! A chunk is found by its text, but a note is *about* what its title, its
//! headings and its file name say: `errors/ERR-4471.md`, titled `ERR-4471:
//! token refresh loop`, is the note about that error, and an on-call list
//! that mentions it in one line is not. So the sparse list indexes each
//! chunk as fields: its searchable text (the heading path, then the text),
//! then the heading path again, the file's title, and what the file is
//! named for — the words of its name (without `.md`) that its title holds
//! too — each as many times as its weight says. A name counts only where
//! the title agrees with it: `ERR-4471.md` titled `ERR-4471: …` and
//! `compiler-error-c2664.md` titled `Compiler Error C2664` are named for
//! what they are about, while a name made of ids and folder words
//! (`test-culture-ahrtsdlgra-con01a.md`) shares no word with its title and
//! adds nothing.
//!
//! That is BM25F (Robertson, Zaragoza and Taylor, 2004, "Simple BM25
//! extension to multiple weighted fields") with one length normalization
//! shared by the fields: a field of weight `w` adds `w × tf` to a term's
//! frequency and `w × length` to the document's length, which is BM25 over
//! the document with the field written `w` times. It keeps one posting list
//! per term, so the pruned walk and its bounds stay as they are, and the
//! weights act at index time: [`Fields`] is recorded in the manifest, and an
//! index is searched and checked as it was built.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::store::generation::{ChunkView, FileEntry, HeadingPath};
use crate::text::tokenize::Analyzer;

/// The largest weight a field may have: a field written more often than
/// this would swamp the chunk's own text.
pub const MAX_FIELD_WEIGHT: u32 = 16;

/// How many times each field of a chunk counts in its sparse document,
/// besides the searchable text (which holds the heading path once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fields {
    /// Extra times the heading path counts.
    pub heading: u32,
    /// Times the file's title (front matter `title`, else its first level-1
    /// heading) counts.
    pub title: u32,
    /// Times the words of the file's name (without `.md`) that its title
    /// holds too count.
    pub file_name: u32,
}

impl Fields {
    /// The fields of an index written before they were weighed: the
    /// searchable text alone.
    pub const LEGACY: Self = Self {
        heading: 0,
        title: 0,
        file_name: 0,
    };

    /// What `file` adds to each of its chunks' documents: its title, then
    /// what it is named for, each as often as its weight (the name's words
    /// told apart by `analyzer`, the index's own). The same for every
    /// chunk of the file, so made once per file.
    pub fn file_part(&self, analyzer: &Analyzer, file: &FileEntry) -> FilePart {
        let title = (file.metadata.get("title"))
            .and_then(|values| values.first())
            .map_or("", String::as_str);
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        let name = name.strip_suffix(".md").unwrap_or(name);
        let named_for = match self.file_name {
            0 => String::new(),
            _ => named_for(analyzer, name, title),
        };
        let mut part = String::new();
        repeat(&mut part, title, self.title);
        repeat(&mut part, &named_for, self.file_name);
        FilePart(part)
    }

    /// The text of a chunk with `heading_path` whose searchable text
    /// ([`crate::store::generation::searchable_text`]) is `searchable`: that
    /// text, then the heading path as often as its weight. Its document is
    /// this, then its file's part ([`Self::document`]).
    pub fn chunk_text<'a>(&self, heading_path: &HeadingPath, searchable: &'a str) -> Cow<'a, str> {
        if self.heading == 0 || heading_path.is_empty() {
            return Cow::Borrowed(searchable);
        }
        let mut text = searchable.to_owned();
        repeat(&mut text, &heading_path.display(), self.heading);
        Cow::Owned(text)
    }

    /// The sparse document of a chunk with `heading_path` of the file
    /// whose [`Self::file_part`] is `file`, its searchable text being
    /// `searchable`: its [`Self::chunk_text`], then the file's part.
    pub fn document(
        &self,
        file: &FilePart,
        heading_path: &HeadingPath,
        searchable: &str,
    ) -> String {
        let mut document = self.chunk_text(heading_path, searchable).into_owned();
        document.push_str(&file.0);
        document
    }

    /// The sparse document of the chunk `view` shows ([`Self::document`]).
    pub fn of_view(&self, analyzer: &Analyzer, view: &ChunkView) -> String {
        let file = self.file_part(analyzer, &view.file);
        self.document(&file, &view.record.heading_path, &view.searchable_text())
    }
}

/// What a file adds to each of its chunks' sparse documents
/// ([`Fields::file_part`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePart(String);

impl FilePart {
    /// The part as text: its fields, each on a line of its own after a
    /// line break (empty when it adds nothing).
    pub fn text(&self) -> &str {
        &self.0
    }
}

/// Appends `text` to `document` `times` times, each on a line of its own
/// (nothing when `text` is empty).
fn repeat(document: &mut String, text: &str, times: u32) {
    if text.is_empty() {
        return;
    }
    for _ in 0..times {
        document.push('\n');
        document.push_str(text);
    }
}

/// The words of `name` whose terms `title` holds too, as `name` writes
/// them, space-separated: an identifier whole when the title holds it
/// whole (its parts come with it when it is analyzed again), else those of
/// its parts the title holds.
fn named_for(analyzer: &Analyzer, name: &str, title: &str) -> String {
    let held: HashSet<String> = analyzer.terms(title).into_iter().collect();
    let mut words: Vec<&str> = Vec::new();
    let mut whole_held_at = None;
    let mut position = None;
    for token in analyzer.tokenize(name) {
        let first_at_position = position != Some(token.position);
        position = Some(token.position);
        if whole_held_at == Some(token.position) || !held.contains(&token.text) {
            continue;
        }
        if first_at_position {
            whole_held_at = Some(token.position);
        }
        let word = &name[token.offset_from..token.offset_to];
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words.join(" ")
}

impl Default for Fields {
    /// The weights measured best on the dev collections (docs/eval.md).
    fn default() -> Self {
        Self {
            heading: 0,
            title: 1,
            file_name: 4,
        }
    }
}

/// The fields an index records when its manifest predates them.
pub fn legacy() -> Fields {
    Fields::LEGACY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::generation::FileStamp;

    fn file(path: &str, title: Option<&str>) -> FileEntry {
        FileEntry {
            path: path.to_owned(),
            metadata: title
                .map(|t| [("title".to_owned(), vec![t.to_owned()])].into())
                .unwrap_or_default(),
            stamp: FileStamp::default(),
        }
    }

    fn document(fields: Fields, path: &str, title: &str, heading: &[&str]) -> String {
        let heading_path = HeadingPath::new(heading);
        let searchable = format!("{}\ntext", heading_path.display());
        let part = fields.file_part(&Analyzer::default(), &file(path, Some(title)));
        fields.document(&part, &heading_path, &searchable)
    }

    #[test]
    fn each_field_counts_as_often_as_its_weight() {
        let fields = Fields {
            heading: 2,
            title: 1,
            file_name: 3,
        };
        assert_eq!(
            document(
                fields,
                "errors/ERR-4471.md",
                "ERR-4471: token refresh loop",
                &["Cause"]
            ),
            "Cause\ntext\nCause\nCause\nERR-4471: token refresh loop\nERR-4471\nERR-4471\nERR-4471"
        );
    }

    #[test]
    fn a_name_counts_only_with_the_words_its_title_holds() {
        let name_only = Fields {
            file_name: 1,
            ..Fields::LEGACY
        };
        let named = |path, title| document(name_only, path, title, &["H"]);
        // Held whole: the identifier alone (its parts come with it).
        assert_eq!(
            named("ERR-4471.md", "ERR-4471: token refresh loop"),
            "H\ntext\nERR-4471"
        );
        // Held in parts, stemmed as the title is: the parts, as the name writes them.
        assert_eq!(
            named("cpp/compiler-error-c2664.md", "Compiler Error C2664"),
            "H\ntext\ncompiler error c2664"
        );
        // Ids and folder words the title does not hold add nothing.
        assert_eq!(
            named("test-culture-ahrtsdlgra-con01a.md", "arts human rights"),
            "H\ntext"
        );
    }

    #[test]
    fn legacy_fields_are_the_searchable_text() {
        assert_eq!(
            document(Fields::LEGACY, "a/ERR-1.md", "ERR-1", &["H"]),
            "H\ntext"
        );
    }
}
