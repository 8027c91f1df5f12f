//! The links of a markdown text, from pulldown-cmark's events: inline,
//! reference and autolinks, images and wiki links (`[[Name]]`); never inside code.

use pulldown_cmark::{Event, LinkType, Options, Tag};

use super::sections::parser;

/// Where one link of a text points, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// A markdown link's or image's destination (`../db/failover.md#steps`).
    Markdown(String),
    /// A wiki link's or embed's target, without its display text
    /// (`[[Failover#Steps|failing over]]` is `Failover#Steps`).
    Wiki(String),
}

/// The links of `text`, in document order.
pub fn links(text: &str) -> Vec<Link> {
    parser(text, Options::ENABLE_WIKILINKS)
        .filter_map(|event| match event {
            Event::Start(
                Tag::Link {
                    link_type,
                    dest_url,
                    ..
                }
                | Tag::Image {
                    link_type,
                    dest_url,
                    ..
                },
            ) => Some(match link_type {
                LinkType::WikiLink { .. } => Link::Wiki(dest_url.into_string()),
                _ => Link::Markdown(dest_url.into_string()),
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markdown(dest: &str) -> Link {
        Link::Markdown(dest.into())
    }

    #[test]
    fn inline_reference_auto_image_and_wiki_links() {
        let text = "See [a](a.md \"title\"), [b][ref], <https://x.org>, ![c](c.md), \
                    [[Failover#Steps|failing over]] and ![[Embed]].\n\n[ref]: <b b.md>\n";
        assert_eq!(
            links(text),
            [
                markdown("a.md"),
                markdown("b b.md"),
                markdown("https://x.org"),
                markdown("c.md"),
                Link::Wiki("Failover#Steps".into()),
                Link::Wiki("Embed".into()),
            ]
        );
    }

    #[test]
    fn links_inside_code_are_not_links() {
        let text = "```\n[a](a.md) [[A]]\n```\n\n    [b](b.md)\n\nand `[c](c.md)` but [d](d.md)\n";
        assert_eq!(links(text), [markdown("d.md")]);
    }
}
