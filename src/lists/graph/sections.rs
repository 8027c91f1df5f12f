//! The framing shared by the graph layer's files (`graph.bin`,
//! `graph-files.bin`): a postcard header and little-endian sections, laid
//! out to be memory-mapped and viewed in place.
//!
//! ```text
//! magic (8 bytes) | format version u32 | section count u32
//! | (offset u64, length u64) per section | header length u32 | header (postcard)
//! | sections, each 8-byte aligned
//! ```
//! `bytemuck` views a section as a typed slice (it checks size and
//! alignment; a mapped file starts page-aligned, so 8-byte aligned sections
//! stay aligned), `postcard` encodes the header. A reader refuses another
//! magic, format version or section count.

use std::ops::Range;

use anyhow::{Context, Result, bail, ensure};

/// Sections start at multiples of this many bytes.
const SECTION_ALIGN: usize = 8;

/// What identifies one kind of file.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// Its first bytes.
    pub magic: &'static [u8; 8],
    /// The format version this code writes and reads.
    pub version: u32,
    /// How many sections it has.
    pub section_count: usize,
    /// What it is, for messages (`graph`).
    pub what: &'static str,
}

impl Framing {
    /// The bytes of a file with `header` (postcard-encoded) and `sections`.
    pub fn encode(&self, header: &[u8], sections: &[&[u8]]) -> Vec<u8> {
        debug_assert_eq!(sections.len(), self.section_count);
        let preamble = self.magic.len() + 4 + 4 + 16 * sections.len() + 4 + header.len();
        let mut offset = preamble.next_multiple_of(SECTION_ALIGN);
        let mut spans = Vec::with_capacity(sections.len());
        for section in sections {
            spans.push((offset as u64, section.len() as u64));
            offset = (offset + section.len()).next_multiple_of(SECTION_ALIGN);
        }
        let mut out = Vec::with_capacity(offset);
        out.extend_from_slice(self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
        for (start, len) in &spans {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(header);
        for (section, (start, _)) in sections.iter().zip(&spans) {
            out.resize(*start as usize, 0);
            out.extend_from_slice(section);
        }
        out
    }

    /// Reads the format version of `bytes` after checking the magic.
    pub fn version_of(&self, bytes: &[u8]) -> Result<u32> {
        ensure!(
            bytes.get(..self.magic.len()) == Some(self.magic),
            "not a memidx {} file",
            self.what
        );
        let version = bytes
            .get(self.magic.len()..self.magic.len() + 4)
            .context("the file is too short")?;
        Ok(u32::from_le_bytes(version.try_into()?))
    }

    /// Checks magic, version and section table; returns the header bytes
    /// and the byte range of each section.
    pub fn parse<'a>(&self, bytes: &'a [u8]) -> Result<(&'a [u8], Vec<Range<usize>>)> {
        let version = self.version_of(bytes)?;
        if version != self.version {
            bail!(
                "{} format version {version} is not supported (this memidx reads {})",
                self.what,
                self.version
            );
        }
        let mut cursor = self.magic.len() + 4;
        let mut take = |len: usize| -> Result<&[u8]> {
            let slice = bytes
                .get(cursor..cursor + len)
                .context("the file is too short")?;
            cursor += len;
            Ok(slice)
        };
        let count = u32::from_le_bytes(take(4)?.try_into()?) as usize;
        ensure!(
            count == self.section_count,
            "{count} sections, expected {}",
            self.section_count
        );
        let mut spans = Vec::with_capacity(count);
        for _ in 0..count {
            let start = u64::from_le_bytes(take(8)?.try_into()?) as usize;
            let len = u64::from_le_bytes(take(8)?.try_into()?) as usize;
            let end = start.checked_add(len).context("a section overflows")?;
            ensure!(
                end <= bytes.len() && start.is_multiple_of(SECTION_ALIGN),
                "a section is out of bounds"
            );
            spans.push(start..end);
        }
        let header_len = u32::from_le_bytes(take(4)?.try_into()?) as usize;
        Ok((take(header_len)?, spans))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Framing = Framing {
        magic: b"MIDXTEST",
        version: 3,
        section_count: 2,
        what: "test",
    };

    #[test]
    fn sections_round_trip_aligned() {
        let bytes = TEST.encode(b"head", &[b"abc", &[1, 2, 3, 4, 5, 6, 7, 8, 9]]);
        let (header, spans) = TEST.parse(&bytes).expect("parses");
        assert_eq!(header, b"head");
        assert_eq!(&bytes[spans[0].clone()], b"abc");
        assert_eq!(bytes[spans[1].clone()].len(), 9);
        assert!(spans.iter().all(|s| s.start % SECTION_ALIGN == 0));
    }

    #[test]
    fn another_kind_version_or_shape_is_refused() {
        let bytes = TEST.encode(b"", &[b"a", b"b"]);
        let other = Framing {
            magic: b"MIDXOTHR",
            ..TEST
        };
        assert!(other.parse(&bytes).is_err());
        let newer = Framing { version: 4, ..TEST };
        let error = newer.parse(&bytes).expect_err("refused").to_string();
        assert!(error.contains("version 3 is not supported"), "{error}");
        assert_eq!(newer.version_of(&bytes).expect("reads"), 3);
        assert!(TEST.parse(&bytes[..bytes.len() - 1]).is_err());
    }
}
