//! A filter as a Milvus boolean expression, applied inside each sub-search
//! before its window is taken, as the local lists apply the allowed set:
//! `key=v1|v2` becomes `json_contains_any(metadata["key"], ["v1", "v2"])`
//! (a file's values are a list), `--here DIR` becomes
//! `array_contains(folders, "DIR/")`, `--since`/`--until` become
//! `date >= S`/`date <= U` over the file's document date in seconds (both
//! inclusive, as locally), and conditions are joined by `and`.

use super::rows::field;
use crate::filter::Filter;

/// The expression of `filter` (empty for no condition).
pub fn expression(filter: &Filter) -> String {
    let mut parts: Vec<String> = filter
        .conditions()
        .iter()
        .map(|(key, values)| {
            let values: Vec<String> = values.iter().map(|v| quote(v)).collect();
            format!(
                "json_contains_any({}[{}], [{}])",
                field::METADATA,
                quote(key),
                values.join(", ")
            )
        })
        .collect();
    if let Some(folder) = filter.folder() {
        parts.push(format!(
            "array_contains({}, {})",
            field::FOLDERS,
            quote(folder)
        ));
    }
    let time = filter.time();
    if let Some(since) = &time.since {
        parts.push(format!("{} >= {}", field::DATE, since.seconds));
    }
    if let Some(until) = &time.until {
        parts.push(format!("{} <= {}", field::DATE, until.seconds));
    }
    parts.join(" and ")
}

/// `text` as a double-quoted Milvus string literal.
pub(super) fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::TimeFilter;

    #[test]
    fn conditions_and_folder_become_one_expression() {
        let filter = Filter::from_pairs([
            ("environment", "production"),
            ("environment", "staging"),
            ("ser\"vice", "a\\b"),
        ])
        .within_folder("runbooks/db");
        assert_eq!(
            expression(&filter),
            r#"json_contains_any(metadata["environment"], ["production", "staging"]) and json_contains_any(metadata["ser\"vice"], ["a\\b"]) and array_contains(folders, "runbooks/db/")"#
        );
        assert_eq!(expression(&Filter::default()), "");
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        let time = TimeFilter::parse(
            Some(("--since", "2024-03-01")),
            Some(("--until", "2024-03-01")),
            now,
        )
        .unwrap();
        let dated = Filter::from_pairs([("tag", "x")]).within_time(time);
        assert_eq!(
            expression(&dated),
            r#"json_contains_any(metadata["tag"], ["x"]) and date >= 1709251200 and date <= 1709337599"#
        );
    }
}
