//! A fetched HTML page as readable text: the article readability finds in
//! it, as markdown, or the whole body as markdown when no article stands
//! out (a short page, a list of links).

use dom_smoothie::{Config, Readability, TextMode};
use url::Url;

/// Elements beyond this are not scored; a page that large is read whole.
const MAX_SCORED_ELEMENTS: usize = 20_000;

/// An article shorter than this is likely a fragment readability picked
/// from a page with no article; the whole body says more.
const MIN_ARTICLE_CHARS: usize = 200;

/// Elements whose text is no part of what a reader sees.
const SKIPPED: [&str; 8] = [
    "script", "style", "meta", "head", "noscript", "template", "svg", "iframe",
];

pub(crate) struct Page {
    /// The page's own title, when it has one.
    pub title: Option<String>,
    pub text: String,
}

pub(crate) fn readable(html: &str, url: &Url) -> Page {
    let config = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: MAX_SCORED_ELEMENTS,
        ..Config::default()
    };
    let article = Readability::new(html, Some(url.as_str()), Some(config))
        .and_then(|mut r| r.parse())
        .ok();
    let whole = dom_query::Document::from(html);
    let title = article
        .as_ref()
        .map(|a| a.title.trim().to_owned())
        .filter(|t| !t.is_empty())
        .or_else(|| {
            let t = whole.select("title").text();
            let t = t.trim();
            (!t.is_empty()).then(|| t.to_owned())
        });
    let text = match article {
        Some(a) if a.text_content.trim().chars().count() >= MIN_ARTICLE_CHARS => {
            a.text_content.trim().to_owned()
        }
        _ => whole.md(Some(&SKIPPED)).trim().to_owned(),
    };
    Page { title, text }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn an_article_comes_out_as_markdown_without_its_chrome() {
        let para = "The borrow checker enforces that references never outlive the data they \
                    point to, and that mutable references are unique. ";
        let html = format!(
            "<html><head><title>Borrowing</title><script>var secret = 1;</script></head><body>\
             <nav><a href='/'>Home</a></nav><article><h1>Borrowing</h1><p>{}</p><p>{}</p>\
             <p>See <a href='https://doc.rust-lang.org/'>the book</a>.</p></article>\
             <footer>© 2026</footer></body></html>",
            para.repeat(3),
            para.repeat(2)
        );
        let page = readable(&html, &Url::parse("https://example.org/a").unwrap());
        assert_eq!(page.title.as_deref(), Some("Borrowing"));
        assert!(
            page.text.contains("The borrow checker enforces"),
            "{}",
            page.text
        );
        assert!(
            page.text.contains("[the book](https://doc.rust-lang.org/)"),
            "{}",
            page.text
        );
        assert!(!page.text.contains("var secret"), "{}", page.text);
    }

    #[test]
    fn a_page_without_an_article_is_read_whole() {
        let html = "<html><head><title>Links</title><style>p{}</style></head><body>\
                    <ul><li><a href='/x'>x</a></li></ul><p>short</p></body></html>";
        let page = readable(html, &Url::parse("https://example.org/").unwrap());
        assert_eq!(page.title.as_deref(), Some("Links"));
        assert!(page.text.contains("short"), "{}", page.text);
        assert!(!page.text.contains("p{}"), "{}", page.text);
    }
}
