//! Time conditions (`--since`, `--until`) on the documents' dates.
//!
//! A bound is read from an ISO date (`2024-03-01`), a date-time
//! (`2024-03-01T12:00`, UTC unless it names an offset) or a span back from
//! now (`7d`, `2w`, `6m`, `1y`: days, weeks, calendar months and years).
//! Both bounds are inclusive; an `--until` given as a date includes that
//! whole day. Dates are compared as instants, never as strings.

use anyhow::{Result, bail};
use jiff::civil::{Date, Time};
use jiff::fmt::temporal::Pieces;
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Unit};

use crate::corpus::date::{format_seconds, parse_timestamp};

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
        let at = format_instant(self.seconds);
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
    let seconds = match span_back(given, now) {
        Err(Negative) => bail!(
            "{name} '{given}' would be a time in the future: a span back from now is positive \
             (7d, not -7d); give {WHEN_FORMS}"
        ),
        Ok(Some(seconds)) => Some(seconds),
        Ok(None) => match given.parse::<Date>() {
            Ok(date) if until && date_only => end_of_day(date),
            _ => parse_timestamp(given).or_else(|| beyond_timestamps(given)),
        },
    };
    match seconds {
        Some(seconds) => Ok(TimeBound {
            given: given.to_string(),
            seconds,
        }),
        None => bail!("{name} '{given}' is not a time; give {WHEN_FORMS}"),
    }
}

/// Seconds from the epoch to the first moment of `date`, UTC, counted
/// without jiff's `Timestamp` (whose range ends a day short of
/// 9999-12-31 and starts a day after -9999-01-01, to leave room for
/// offsets), so every date has an instant.
fn date_seconds(date: Date) -> Option<i64> {
    let days = EPOCH
        .until((Unit::Day, date))
        .ok()
        .map(|span| i64::from(span.get_days()))?;
    Some(days * 86_400)
}

/// The first day of the epoch.
const EPOCH: Date = Date::constant(1970, 1, 1);

/// The instant of a valid RFC 3339 (or ISO 8601) date-time that jiff's
/// `Timestamp` cannot hold, such as `9999-12-31T23:59:59Z`; `None` for any
/// other text. A time without an offset is UTC, as everywhere here.
fn beyond_timestamps(text: &str) -> Option<i64> {
    let pieces = Pieces::parse(text).ok()?;
    let time = pieces.time().unwrap_or(Time::midnight());
    let offset = pieces
        .offset()
        .map_or(0, |o| i64::from(o.to_numeric_offset().seconds()));
    let seconds = date_seconds(pieces.date())?
        + i64::from(time.hour()) * 3_600
        + i64::from(time.minute()) * 60
        + i64::from(time.second())
        - offset;
    in_timestamps(seconds).is_none().then_some(seconds)
}

/// `seconds` as a jiff `Timestamp`, when it is in its range.
fn in_timestamps(seconds: i64) -> Option<Timestamp> {
    Timestamp::from_second(seconds).ok()
}

/// `seconds` as RFC 3339 in UTC (`2024-03-01T12:00:00Z`), including the
/// instants beyond jiff's `Timestamp` range (see [`date_seconds`]).
fn format_instant(seconds: i64) -> String {
    if in_timestamps(seconds).is_some() {
        return format_seconds(seconds);
    }
    let (days, second) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let date = i32::try_from(days)
        .ok()
        .and_then(|days| EPOCH.checked_add(Span::new().try_days(days).ok()?).ok());
    match date {
        Some(date) => format!(
            "{date}T{:02}:{:02}:{:02}Z",
            second / 3_600,
            second / 60 % 60,
            second % 60
        ),
        None => format_seconds(seconds),
    }
}

/// The last second of `date`, UTC.
fn end_of_day(date: Date) -> Option<i64> {
    date_seconds(date).map(|s| s + 86_400 - 1)
}

/// A span with a minus sign: it would count forward, into the future.
struct Negative;

/// `now` minus a span such as `7d`, `2w`, `6m` or `1y` (calendar months and
/// years, counted in UTC); `Ok(None)` when `text` is not a span, an error
/// when it is a negative one (`-1d`).
fn span_back(text: &str, now: Timestamp) -> Result<Option<i64>, Negative> {
    let Some(unit) = text.chars().last() else {
        return Ok(None);
    };
    let Ok(count) = text[..text.len() - unit.len_utf8()].parse::<i64>() else {
        return Ok(None);
    };
    let span = match unit.to_ascii_lowercase() {
        'd' => Span::new().try_days(count),
        'w' => Span::new().try_weeks(count),
        'm' => Span::new().try_months(count),
        'y' => Span::new().try_years(count),
        _ => return Ok(None),
    };
    if text.starts_with('-') {
        return Err(Negative);
    }
    let Ok(span) = span else {
        return Ok(None);
    };
    Ok(now
        .to_zoned_datetime(TimeZone::UTC)
        .checked_sub(span)
        .ok()
        .map(|back| back.timestamp().as_second()))
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
    fn every_rfc_3339_time_is_an_instant_even_past_jiffs_timestamps() {
        let at = |text: &str, until: bool| {
            let bound = parse_bound(text, now(), until, "--since").unwrap();
            (bound.seconds, bound.describe())
        };
        assert_eq!(
            at("9999-12-31T23:59:59Z", false),
            (253_402_300_799, "9999-12-31T23:59:59Z".to_string())
        );
        assert_eq!(at("9999-12-31t23:59:59z", false).0, 253_402_300_799);
        assert_eq!(at("9999-12-31T23:59:59.999Z", false).0, 253_402_300_799);
        assert_eq!(at("9999-12-31T23:59:60Z", false).0, 253_402_300_799);
        assert_eq!(at("9999-12-31T23:59:59-23:59", false).0, 253_402_387_139);
        assert_eq!(at("9999-12-31T23:59:59+01:00", false).0, 253_402_297_199);
        assert_eq!(at("9999-12-31", false).0, 253_402_214_400);
        assert_eq!(at("9999-12-31", true).0, 253_402_300_799);
        assert_eq!(at("9999-12-30", true).0, 253_402_214_399);
        assert_eq!(
            at("0000-01-01T00:00:00Z", false),
            (-62_167_219_200, "0000-01-01T00:00:00Z".to_string())
        );
        assert_eq!(at("0000-01-01T00:00:00+23:59", false).0, -62_167_305_540);
        assert!(parse_bound("9999-12-32T00:00:00Z", now(), false, "--since").is_err());
        assert!(parse_bound("9999-12-31T24:00:00Z", now(), false, "--since").is_err());
    }

    #[test]
    fn a_negative_span_is_refused_as_a_future_time() {
        for bad in ["-1d", "-2w", "-6m", "-1y", "-0d", "-99999999999y"] {
            let err = parse_bound(bad, now(), false, "--since")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!(
                    "--since '{bad}' would be a time in the future: a span back from now is positive"
                )),
                "{err}"
            );
        }
        assert_eq!(bound("+7d", false), "2024-03-08T10:30:00Z");
        assert_eq!(bound("0d", false), "2024-03-15T10:30:00Z");
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
