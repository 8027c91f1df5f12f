//! Time conditions (`--since`, `--until`) on the documents' dates.
//!
//! A bound is read from an ISO date (`2024-03-01`), a date-time
//! (`2024-03-01T12:00`, UTC unless it names an offset) or a span back from
//! now (`7d`, `2w`, `6m`, `1y`: days, weeks, calendar months and years).
//! Both bounds are inclusive; an `--until` given as a date includes that
//! whole day. Dates are compared as instants, never as strings.

use anyhow::{Result, bail};
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};

use crate::corpus::date::{format_seconds, parse_timestamp, utc_seconds};

/// The forms a bound accepts, for error messages and help.
pub const WHEN_FORMS: &str = "an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless \
     it names an offset such as +02:00 or Z) or a span back from now (7d, 2w, 6m, 1y)";

/// One bound: as given, and the instant it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeBound {
    /// The text given (`7d`, `2024-03-01`), for `explain`.
    pub given: String,
    /// The instant, seconds since the epoch (inclusive).
    pub seconds: i64,
}

impl TimeBound {
    /// `given (instant)`, or just the instant when they read the same.
    pub fn describe(&self) -> String {
        let at = format_seconds(self.seconds);
        if at == self.given {
            at
        } else {
            format!("{} ({at})", self.given)
        }
    }
}

/// The documents' dates a search accepts: at or after `since`, at or
/// before `until`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeFilter {
    /// Oldest date accepted.
    pub since: Option<TimeBound>,
    /// Newest date accepted.
    pub until: Option<TimeBound>,
}

impl TimeFilter {
    /// Reads `since` and `until`, each `(where it came from, text)` (the
    /// name, e.g. `--since` or `time_filter.since`, is for the error), and
    /// either may be absent, relative to `now`.
    pub fn parse(
        since: Option<(&str, &str)>,
        until: Option<(&str, &str)>,
        now: Timestamp,
    ) -> Result<Self> {
        let since_bound = since
            .map(|(name, s)| parse_bound(s, now, false, name))
            .transpose()?;
        let until_bound = until
            .map(|(name, s)| parse_bound(s, now, true, name))
            .transpose()?;
        if let (Some((since_name, _)), Some((until_name, _))) = (since, until)
            && let (Some(s), Some(u)) = (&since_bound, &until_bound)
            && s.seconds > u.seconds
        {
            bail!(
                "{since_name} {} is after {until_name} {}: no date could pass both",
                s.describe(),
                u.describe()
            );
        }
        Ok(Self {
            since: since_bound,
            until: until_bound,
        })
    }

    /// True when there is no bound.
    pub fn is_empty(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// True when a document dated `seconds` passes.
    pub fn admits(&self, seconds: i64) -> bool {
        self.since.as_ref().is_none_or(|s| seconds >= s.seconds)
            && self.until.as_ref().is_none_or(|u| seconds <= u.seconds)
    }

    /// Each bound as `explain` names it, like a metadata condition:
    /// `since=7d (2024-03-08T10:30:00Z)`, `until=…`.
    pub fn parts(&self) -> Vec<String> {
        let since = self.since.iter().map(|s| format!("since={}", s.describe()));
        let until = self.until.iter().map(|u| format!("until={}", u.describe()));
        since.chain(until).collect()
    }

    /// The bounds as one phrase: `since=7d (…) until=…`.
    pub fn describe(&self) -> String {
        self.parts().join(" ")
    }
}

/// Reads one bound; an `until` date means the end of that day.
fn parse_bound(text: &str, now: Timestamp, until: bool, name: &str) -> Result<TimeBound> {
    let given = text.trim();
    let date_only = !given.contains(['T', 't', ' ']);
    let seconds = span_back(given, now).or_else(|| match given.parse::<Date>() {
        Ok(date) if until && date_only => end_of_day(date),
        _ => parse_timestamp(given),
    });
    match seconds {
        Some(seconds) => Ok(TimeBound {
            given: given.to_string(),
            seconds,
        }),
        None => bail!("{name} '{given}' is not a time; give {WHEN_FORMS}"),
    }
}

/// The last second of `date`, UTC.
fn end_of_day(date: Date) -> Option<i64> {
    let next = date.tomorrow().ok()?;
    utc_seconds(DateTime::from(next)).map(|s| s - 1)
}

/// `now` minus a span such as `7d`, `2w`, `6m` or `1y` (calendar months and
/// years, counted in UTC).
fn span_back(text: &str, now: Timestamp) -> Option<i64> {
    let unit = text.chars().last()?;
    let count: i64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    let span = match unit.to_ascii_lowercase() {
        'd' => Span::new().try_days(count).ok()?,
        'w' => Span::new().try_weeks(count).ok()?,
        'm' => Span::new().try_months(count).ok()?,
        'y' => Span::new().try_years(count).ok()?,
        _ => return None,
    };
    let back = now
        .to_zoned_datetime(TimeZone::UTC)
        .checked_sub(span)
        .ok()?;
    Some(back.timestamp().as_second())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2024-03-15T10:30:00Z".parse().unwrap()
    }

    fn bound(text: &str, until: bool) -> String {
        format_seconds(parse_bound(text, now(), until, "--since").unwrap().seconds)
    }

    #[test]
    fn every_form_reads_to_an_instant() {
        assert_eq!(bound("2024-03-01", false), "2024-03-01T00:00:00Z");
        assert_eq!(bound("2024-03-01", true), "2024-03-01T23:59:59Z");
        assert_eq!(bound("2024-03-01T12:00", true), "2024-03-01T12:00:00Z");
        assert_eq!(
            bound("2024-03-01T12:00+02:00", false),
            "2024-03-01T10:00:00Z"
        );
        assert_eq!(bound("2024-03-01T12:00:00Z", false), "2024-03-01T12:00:00Z");
        assert_eq!(bound("7d", false), "2024-03-08T10:30:00Z");
        assert_eq!(bound("2w", true), "2024-03-01T10:30:00Z");
        assert_eq!(bound("1m", false), "2024-02-15T10:30:00Z");
        assert_eq!(bound("6M", false), "2023-09-15T10:30:00Z");
        assert_eq!(bound("1y", false), "2023-03-15T10:30:00Z");
    }

    #[test]
    fn a_malformed_bound_names_the_accepted_forms() {
        for bad in ["yesterday", "7", "d", "7x", "2024-02-30", "-", ""] {
            let err = parse_bound(bad, now(), false, "--since").unwrap_err();
            let err = err.to_string();
            assert!(
                err.starts_with(&format!("--since '{bad}' is not a time")),
                "{err}"
            );
            assert!(err.contains("7d, 2w, 6m, 1y"), "{err}");
        }
    }

    #[test]
    fn bounds_are_inclusive_and_must_be_in_order() {
        let f = TimeFilter::parse(
            Some(("--since", "2024-03-01")),
            Some(("--until", "2024-03-02")),
            now(),
        )
        .unwrap();
        let at = |s: &str| parse_timestamp(s).unwrap();
        assert!(f.admits(at("2024-03-01T00:00:00Z")));
        assert!(f.admits(at("2024-03-02T23:59:59Z")));
        assert!(!f.admits(at("2024-02-29T23:59:59Z")));
        assert!(!f.admits(at("2024-03-03T00:00:00Z")));
        assert_eq!(
            f.describe(),
            "since=2024-03-01 (2024-03-01T00:00:00Z) until=2024-03-02 (2024-03-02T23:59:59Z)"
        );
        let err = TimeFilter::parse(Some(("--since", "1d")), Some(("--until", "1w")), now())
            .unwrap_err()
            .to_string();
        assert!(err.contains("is after --until 1w"), "{err}");
        assert!(TimeFilter::default().is_empty());
    }
}
