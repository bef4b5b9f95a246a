//! SearXNG's JSON format: `GET /search?q=…&format=json`, which the instance
//! must list under `search.formats` in its settings. Results carry `url`,
//! `title` and `content`; the instance decides how many come back.

use serde::Deserialize;
use url::Url;

use super::{Failure, answer, endpoint, hit};
use crate::web::Hit;

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

pub(super) async fn search(
    client: &reqwest::Client,
    instance: &Url,
    query: &str,
    count: usize,
) -> Result<Vec<Hit>, Failure> {
    let request = client
        .get(search_url(instance))
        .query(&[("q", query), ("format", "json")])
        .header("Accept", "application/json");
    let answer: Answer = answer(
        request,
        "SearXNG's JSON (is `json` among the instance's search.formats?)",
    )
    .await
    .map_err(|f| match f.0.as_str() {
        // SearXNG answers 403 when the JSON format is not enabled.
        s if s.starts_with("answered HTTP 403") => Failure(
            "answered HTTP 403 Forbidden (enable the json format: add `json` to \
                 search.formats in the instance's settings.yml)"
                .to_owned(),
        ),
        _ => f,
    })?;
    Ok(parse(answer, count))
}

/// The instance's `/search`; an instance URL written with `/search` on its
/// end already is taken as it is.
fn search_url(instance: &Url) -> Url {
    if instance.path().trim_end_matches('/').ends_with("/search") {
        let mut url = instance.clone();
        url.set_query(None);
        return url;
    }
    endpoint(instance, "search")
}

fn parse(answer: Answer, count: usize) -> Vec<Hit> {
    answer
        .results
        .iter()
        .filter_map(|r| hit(&r.title, &r.url, &r.content))
        .take(count)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The shape of SearXNG's documented JSON answer, fields and all.
    const RECORDED: &str = r#"{
      "query": "rust borrow checker",
      "number_of_results": 0,
      "results": [
        {"url": "https://doc.rust-lang.org/book/ch04-02-references-and-borrowing.html",
         "title": "References and Borrowing - The Rust Programming Language",
         "content": "A reference is like a pointer in that it’s an address we can follow…",
         "engine": "duckduckgo", "parsed_url": ["https", "doc.rust-lang.org", "/book/", "", "", ""],
         "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 2],
         "score": 4.0, "category": "general", "publishedDate": null},
        {"url": "ftp://old.example/file", "title": "not a page", "content": ""},
        {"url": "https://blog.example/borrowck", "title": "Understanding <b>borrowck</b>",
         "content": "", "engine": "bing"}
      ],
      "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["rust lifetimes"],
      "unresponsive_engines": [["google", "timeout"]]
    }"#;

    #[test]
    fn an_instance_url_with_search_on_its_end_is_not_doubled() {
        let at = |raw: &str| search_url(&Url::parse(raw).unwrap()).to_string();
        assert_eq!(at("http://localhost:8888"), "http://localhost:8888/search");
        assert_eq!(at("https://host/searx/"), "https://host/searx/search");
        assert_eq!(
            at("http://localhost:8888/search"),
            "http://localhost:8888/search"
        );
    }

    #[test]
    fn searxng_answer_is_read_and_non_web_results_dropped() {
        let answer: Answer = serde_json::from_str(RECORDED).unwrap();
        let hits = parse(answer, 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            hits[0].title,
            "References and Borrowing - The Rust Programming Language"
        );
        assert!(hits[0].snippet.starts_with("A reference is like a pointer"));
        assert_eq!(hits[1].title, "Understanding borrowck");
        let answer: Answer = serde_json::from_str(RECORDED).unwrap();
        assert_eq!(parse(answer, 1).len(), 1);
    }
}
