//! Document dates: when a note was written, for `--since`/`--until` and the
//! recency list.
//!
//! A file's date is, in this order: its front matter's `date`, else
//! `updated`, else `created` (the first of them that reads as a date); else
//! the most specific date its path gives (`2024-02-07-rollback.md`,
//! `notes/2024/02/07/…`, `incidents/2023/q4/…`, a folder named `2023`);
//! else its modification time. Times without a zone are read as UTC. The
//! date is a function of what the index already records of a file (its
//! metadata, path and stamp), so it never needs the file read again.
//!
//! `jiff` parses and converts the ISO forms (it is already the crate that
//! prints the index's build time).

use std::fmt;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

use super::Metadata;

/// The front matter keys read as a document's date, the first found wins.
pub const DATE_KEYS: [&str; 3] = ["date", "updated", "created"];

/// Where a document's date came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DateSource {
    /// A front matter key of [`DATE_KEYS`].
    FrontMatter,
    /// A date in the file's path or name.
    Path,
    /// The file's modification time.
    Mtime,
}

impl DateSource {
    /// Every source, in precedence order.
    pub const ALL: [Self; 3] = [Self::FrontMatter, Self::Path, Self::Mtime];

    /// The stable name shown in output: `front matter`, `path`, `mtime`.
    pub fn name(self) -> &'static str {
        match self {
            Self::FrontMatter => "front matter",
            Self::Path => "path",
            Self::Mtime => "mtime",
        }
    }
}

impl fmt::Display for DateSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A document's date, in whole seconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocDate {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// Where it came from.
    pub source: DateSource,
}

impl DocDate {
    /// The date as an RFC 3339 UTC timestamp (`2024-02-07T00:00:00Z`).
    pub fn rfc3339(&self) -> String {
        format_seconds(self.seconds)
    }
}

/// `seconds` since the epoch as an RFC 3339 UTC timestamp (whole seconds).
pub fn format_seconds(seconds: i64) -> String {
    Timestamp::from_second(seconds).map_or_else(|_| seconds.to_string(), |t| t.to_string())
}

/// The date of the file at `path` (relative, `/`-separated) with
/// `metadata` and modification time `mtime_ns` (see the module doc).
pub fn document_date(path: &str, metadata: &Metadata, mtime_ns: i128) -> DocDate {
    let front_matter = DATE_KEYS.iter().find_map(|key| {
        metadata
            .get(*key)
            .and_then(|values| values.iter().find_map(|v| parse_timestamp(v)))
    });
    if let Some(seconds) = front_matter {
        return DocDate {
            seconds,
            source: DateSource::FrontMatter,
        };
    }
    if let Some(seconds) = date_in_path(path) {
        return DocDate {
            seconds,
            source: DateSource::Path,
        };
    }
    let seconds = i64::try_from(mtime_ns.div_euclid(1_000_000_000)).unwrap_or(0);
    DocDate {
        seconds,
        source: DateSource::Mtime,
    }
}

/// Reads an ISO 8601 date (`2024-03-01`, midnight UTC), date-time without a
/// zone (`2024-03-01T12:00`, `2024-03-01 12:00:00`, read as UTC) or
/// timestamp with one (`2024-03-01T12:00:00+02:00`, `…Z`), in whole seconds.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(at) = text.parse::<Timestamp>() {
        return Some(at.as_second());
    }
    if let Ok(at) = text.parse::<DateTime>() {
        return utc_seconds(at);
    }
    text.parse::<Date>()
        .ok()
        .and_then(|d| utc_seconds(d.into()))
}

/// `at`, read as UTC, in seconds since the epoch.
pub fn utc_seconds(at: DateTime) -> Option<i64> {
    at.to_zoned_datetime(TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp().as_second())
}

/// How precisely a date in a path is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Precision {
    Year,
    Quarter,
    Month,
    Day,
}

/// The most specific date `path` gives (the last one among equally
/// specific), as seconds since the epoch at its first moment, UTC.
fn date_in_path(path: &str) -> Option<i64> {
    let bytes = path.as_bytes();
    let mut best: Option<(Precision, Date)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let starts_number = bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit());
        if starts_number
            && let Some((precision, date)) = date_at(path, i)
            && best.is_none_or(|(p, _)| precision >= p)
        {
            best = Some((precision, date));
        }
        i += 1;
    }
    best.and_then(|(_, date)| utc_seconds(date.into()))
}

/// The date that starts at byte `start` of `path` (a digit run's start).
fn date_at(path: &str, start: usize) -> Option<(Precision, Date)> {
    let rest = &path.as_bytes()[start..];
    let run = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let digits = |from: usize, len: usize| -> Option<i16> {
        let part = rest.get(from..from + len)?;
        let after = rest.get(from + len);
        if !part.iter().all(u8::is_ascii_digit) || after.is_some_and(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let plausible_year = |y: i16| (1900..=2199).contains(&y);
    if run == 8 {
        // A compact YYYYMMDD, as in `20240207-notes.md`.
        let number = |range: std::ops::Range<usize>| -> Option<i16> {
            std::str::from_utf8(&rest[range]).ok()?.parse().ok()
        };
        let (y, m, d) = (number(0..4)?, number(4..6)?, number(6..8)?);
        let date = Date::new(y, m as i8, d as i8).ok()?;
        return plausible_year(y).then_some((Precision::Day, date));
    }
    if run != 4 {
        return None;
    }
    let year = digits(0, 4).filter(|&y| plausible_year(y))?;
    let separator = |at: usize| rest.get(at).is_some_and(|b| b"-_/.".contains(b));
    if separator(4) {
        if let Some(month) = digits(5, 2).filter(|m| (1..=12).contains(m)) {
            if separator(7)
                && let Some(day) = digits(8, 2)
                && let Ok(date) = Date::new(year, month as i8, day as i8)
            {
                return Some((Precision::Day, date));
            }
            return Some((Precision::Month, Date::new(year, month as i8, 1).ok()?));
        }
        let quarter = rest.get(5).is_some_and(|b| b.eq_ignore_ascii_case(&b'q'))
            && rest.get(6).is_some_and(|b| (b'1'..=b'4').contains(b))
            && !rest.get(7).is_some_and(u8::is_ascii_alphanumeric);
        if quarter {
            let month = 1 + 3 * (rest[6] - b'1') as i8;
            return Some((Precision::Quarter, Date::new(year, month, 1).ok()?));
        }
    }
    // A year alone counts only as a whole folder or file name (`2023/…`,
    // `2023.md`): a number inside a name is more often something else.
    let before_ok = start == 0 || path.as_bytes()[start - 1] == b'/';
    let after = rest.get(4);
    let after_ok = after.is_none_or(|b| *b == b'/') || path[start + 4..].starts_with(".md");
    if !(before_ok && after_ok) {
        return None;
    }
    Some((Precision::Year, Date::new(year, 1, 1).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(date: &str) -> i64 {
        parse_timestamp(date).unwrap()
    }

    fn meta(pairs: &[(&str, &str)]) -> Metadata {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
            .collect()
    }

    #[test]
    fn front_matter_wins_in_key_order_then_path_then_mtime() {
        let all = meta(&[
            ("created", "2020-01-01"),
            ("updated", "2021-01-01"),
            ("date", "2022-01-01"),
        ]);
        let dated = document_date("2019-05-05-x.md", &all, 0);
        assert_eq!(dated.seconds, on("2022-01-01"));
        assert_eq!(dated.source, DateSource::FrontMatter);
        let no_date = meta(&[("created", "2020-01-01"), ("updated", "2021-01-01")]);
        assert_eq!(document_date("a.md", &no_date, 0).seconds, on("2021-01-01"));
        let created = meta(&[("created", "2020-01-01"), ("date", "soon")]);
        assert_eq!(document_date("a.md", &created, 0).seconds, on("2020-01-01"));
        let from_path = document_date("2019-05-05-x.md", &meta(&[("date", "soon")]), 0);
        assert_eq!(
            (from_path.seconds, from_path.source),
            (on("2019-05-05"), DateSource::Path)
        );
        let from_mtime = document_date("notes/x.md", &Metadata::new(), 1_500_000_000_999_999_999);
        assert_eq!(
            (from_mtime.seconds, from_mtime.source),
            (1_500_000_000, DateSource::Mtime)
        );
    }

    #[test]
    fn iso_forms_read_without_a_zone_as_utc() {
        assert_eq!(on("1970-01-02"), 86_400);
        assert_eq!(on("1970-01-01T01:00"), 3_600);
        assert_eq!(on("1970-01-01 01:00:30"), 3_630);
        assert_eq!(on("1970-01-01T02:00:00+01:00"), 3_600);
        assert_eq!(on("1970-01-01T01:00:00Z"), 3_600);
        for bad in ["", "soon", "2024-13-01", "2024-02-30", "12:00"] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_most_specific_date_of_a_path_wins() {
        let path = |p: &str| date_in_path(p).map(format_seconds);
        let day = |d: &str| Some(format!("{d}T00:00:00Z"));
        assert_eq!(path("2024-02-07-rollback.md"), day("2024-02-07"));
        assert_eq!(path("log/20240207-notes.md"), day("2024-02-07"));
        assert_eq!(path("notes/2024/02/07/standup.md"), day("2024-02-07"));
        assert_eq!(path("incidents/2023/q4/db.md"), day("2023-10-01"));
        assert_eq!(path("incidents/INC-2023-Q2-011.md"), day("2023-04-01"));
        assert_eq!(path("reviews/2023-11/summary.md"), day("2023-11-01"));
        assert_eq!(path("archive/2021/2023/q4/x.md"), day("2023-10-01"));
        assert_eq!(path("archive/2021/notes.md"), day("2021-01-01"));
        assert_eq!(path("2021.md"), day("2021-01-01"));
        assert_eq!(path("2019/2024-02-07.md"), day("2024-02-07"));
        for none in [
            "rfc-2616.md",
            "error-2048.md",
            "v12024-02-07.md",
            "notes/x.md",
            "1800/x.md",
            "build/123456789.md",
        ] {
            assert_eq!(path(none), None, "{none}");
        }
    }
}
