//! The Tavily API: `POST /search` with a JSON body (`query`,
//! `max_results`) and the key as a bearer token. Results carry `title`,
//! `url` and `content`.

use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::{Failure, answer, endpoint, hit};
use crate::web::Hit;

/// The most results Tavily returns for one request.
const MAX_COUNT: usize = 20;

#[derive(Deserialize)]
struct Answer {
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
    content: String,
}

pub(super) async fn search(
    client: &reqwest::Client,
    base: &Url,
    key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<Hit>, Failure> {
    let request = client
        .post(endpoint(base, "search"))
        .bearer_auth(key)
        .header("Content-Type", "application/json")
        .body(json!({"query": query, "max_results": count.min(MAX_COUNT)}).to_string());
    let answer: Answer = answer(request, "Tavily's search JSON").await?;
    Ok(parse(answer))
}

fn parse(answer: Answer) -> Vec<Hit> {
    answer
        .results
        .iter()
        .filter_map(|r| hit(&r.title, &r.url, &r.content))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The shape of Tavily's documented search response.
    const RECORDED: &str = r#"{
      "query": "Who is Leo Messi?",
      "answer": null,
      "images": [],
      "results": [
        {"title": "Lionel Messi Facts | Britannica",
         "url": "https://www.britannica.com/facts/Lionel-Messi",
         "content": "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest…",
         "score": 0.81025416, "raw_content": null, "favicon": "https://britannica.com/favicon.png"}
      ],
      "response_time": "1.67",
      "request_id": "123e4567-e89b-12d3-a456-426614174111"
    }"#;

    #[test]
    fn tavily_answer_is_read_from_results() {
        let hits = parse(serde_json::from_str(RECORDED).unwrap());
        assert_eq!(hits.len(), 1);
        assert_eq!(
            hits[0].url.as_str(),
            "https://www.britannica.com/facts/Lionel-Messi"
        );
        assert!(hits[0].snippet.starts_with("Lionel Messi, an Argentine"));
    }
}
