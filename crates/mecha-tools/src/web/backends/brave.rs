//! The Brave Search API: `GET /res/v1/web/search?q=…&count=…` with the key
//! in `X-Subscription-Token`. Web results are under `web.results`, each with
//! `title`, `url` and `description` (matches marked with `<strong>`).

use serde::Deserialize;
use url::Url;

use super::{Failure, answer, endpoint, hit};
use crate::web::Hit;

/// The most results Brave returns for one request.
const MAX_COUNT: usize = 20;

#[derive(Deserialize)]
struct Answer {
    /// Absent when the query found no web results.
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

pub(super) async fn search(
    client: &reqwest::Client,
    base: &Url,
    key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<Hit>, Failure> {
    let count = count.min(MAX_COUNT).to_string();
    let request = client
        .get(endpoint(base, "res/v1/web/search"))
        .query(&[("q", query), ("count", &count)])
        .header("Accept", "application/json")
        .header("X-Subscription-Token", key);
    let answer: Answer = answer(request, "Brave's web search JSON").await?;
    Ok(parse(answer))
}

fn parse(answer: Answer) -> Vec<Hit> {
    answer
        .web
        .map(|web| web.results)
        .unwrap_or_default()
        .iter()
        .filter_map(|r| hit(&r.title, &r.url, &r.description))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The shape of a `WebSearchApiResponse`, as Brave documents it.
    const RECORDED: &str = r#"{
      "type": "search",
      "query": {"original": "rust borrow checker", "show_strict_warning": false,
                "is_navigational": false, "spellcheck_off": true, "country": "us"},
      "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
      "web": {
        "type": "search",
        "results": [
          {"title": "The <strong>Borrow Checker</strong> - Rust",
           "url": "https://rustc-dev-guide.rust-lang.org/borrow_check.html",
           "is_source_local": false, "is_source_both": false,
           "description": "The <strong>borrow</strong> check is Rust's \"secret sauce\"",
           "profile": {"name": "Rust", "url": "https://rustc-dev-guide.rust-lang.org", "long_name": "rustc-dev-guide.rust-lang.org"},
           "language": "en", "family_friendly": true, "type": "search_result",
           "subtype": "generic", "meta_url": {"scheme": "https", "netloc": "rustc-dev-guide.rust-lang.org"}}
        ],
        "family_friendly": true
      }
    }"#;

    #[test]
    fn brave_answer_is_read_from_web_results() {
        let hits = parse(serde_json::from_str(RECORDED).unwrap());
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].title, "The Borrow Checker - Rust");
        assert_eq!(
            hits[0].snippet,
            "The borrow check is Rust's \"secret sauce\""
        );
        let none = parse(
            serde_json::from_str(r#"{"type": "search", "query": {"original": "x"}}"#).unwrap(),
        );
        assert!(none.is_empty());
    }
}
