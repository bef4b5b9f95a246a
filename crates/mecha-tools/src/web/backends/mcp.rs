//! An MCP server's search tool as a backend. It is called with the query,
//! in the field its schema names for one (and a count, when it has a field
//! for that); its answer is read as JSON results when it is JSON, else as
//! lines that carry a URL.
//!
//! The tool's own error text is not passed on: it is the server's words,
//! and the chain's report of failures is mecha's.

use mecha_core::{Tool, ToolCtx};
use serde_json::{Map, Value};

use super::{Failure, hit};
use crate::web::Hit;

/// Schema fields a search tool may take the number of results in.
const COUNT_FIELDS: [&str; 4] = ["count", "max_results", "limit", "num_results"];

pub(super) async fn search(
    tool: &dyn Tool,
    query: &str,
    count: usize,
    ctx: &ToolCtx,
) -> Result<Vec<Hit>, Failure> {
    let schema = tool.input_schema();
    let mut input = Map::new();
    input.insert(query_field(&schema), Value::from(query));
    if let Some(field) = COUNT_FIELDS
        .iter()
        .find(|f| schema.pointer(&format!("/properties/{f}")).is_some())
    {
        input.insert((*field).into(), Value::from(count));
    }
    let output = tool
        .call(Value::Object(input), ctx)
        .await
        .map_err(|_| Failure("the MCP tool's call failed".to_owned()))?;
    if output.is_error {
        return Err(Failure(
            "the MCP tool answered with an error (its text is not shown here; call the tool \
             itself to see it)"
                .to_owned(),
        ));
    }
    Ok(parse(&output.content))
}

/// The field a search tool takes its query in: `query` or `q` when the
/// schema has one, else its one required string field, else its only
/// string field, else `query`.
fn query_field(schema: &Value) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    let strings: Vec<&String> = properties
        .into_iter()
        .flatten()
        .filter(|(_, p)| p.get("type").and_then(Value::as_str) == Some("string"))
        .map(|(name, _)| name)
        .collect();
    if let Some(named) = ["query", "q"]
        .iter()
        .find(|n| strings.iter().any(|s| s.as_str() == **n))
    {
        return (*named).to_owned();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|r| strings.iter().any(|s| s.as_str() == *r))
        .collect();
    match (required.as_slice(), strings.as_slice()) {
        ([one], _) => (*one).to_owned(),
        ([], [only]) => (*only).clone(),
        _ => "query".to_owned(),
    }
}

fn parse(text: &str) -> Vec<Hit> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(value) => from_json(&value),
        Err(_) => from_lines(text),
    }
}

fn from_json(value: &Value) -> Vec<Hit> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(_) => ["/results", "/web/results", "/items"]
            .iter()
            .find_map(|p| value.pointer(p).and_then(Value::as_array))
            .map(Vec::as_slice)
            .unwrap_or_default(),
        _ => &[],
    };
    let field = |item: &Value, names: &[&str]| {
        names
            .iter()
            .find_map(|n| item.get(*n).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned()
    };
    items
        .iter()
        .filter_map(|item| {
            hit(
                &field(item, &["title", "name"]),
                &field(item, &["url", "link", "href"]),
                &field(item, &["content", "snippet", "description", "text"]),
            )
        })
        .collect()
}

/// Plain text: each line with an http(s) URL is a result, the rest of the
/// line its title.
fn from_lines(text: &str) -> Vec<Hit> {
    text.lines()
        .filter_map(|line| {
            let start = line.find("https://").or_else(|| line.find("http://"))?;
            let url: String = line[start..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | ']' | '"'))
                .collect();
            let title = format!("{}{}", &line[..start], &line[start + url.len()..]);
            let title = title.trim_matches(|c: char| c.is_whitespace() || "-—:|()[]<>".contains(c));
            hit(title, &url, "")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn the_query_goes_in_the_field_the_tool_names_for_it() {
        let schema = |v: Value| query_field(&v);
        assert_eq!(
            schema(json!({"properties": {"query": {"type": "string"}, "n": {"type": "integer"}}})),
            "query"
        );
        assert_eq!(
            schema(json!({"properties": {"q": {"type": "string"}, "lang": {"type": "string"}}})),
            "q"
        );
        assert_eq!(
            schema(
                json!({"properties": {"terms": {"type": "string"}, "lang": {"type": "string"}}, "required": ["terms"]})
            ),
            "terms"
        );
        assert_eq!(
            schema(json!({"properties": {"text": {"type": "string"}}})),
            "text"
        );
        assert_eq!(schema(json!({"type": "object"})), "query");
    }

    #[test]
    fn mcp_results_are_read_as_json_or_as_lines() {
        let json =
            r#"{"results": [{"title": "A", "url": "https://a.example/", "description": "d"}]}"#;
        let hits = parse(json);
        assert_eq!(hits[0].title, "A");
        assert_eq!(hits[0].snippet, "d");
        let array = r#"[{"name": "B", "link": "https://b.example/x"}]"#;
        assert_eq!(parse(array)[0].url.as_str(), "https://b.example/x");
        let text = "Title: Rust book - https://doc.rust-lang.org/book/\nno url here\n";
        let hits = parse(text);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].title, "Title: Rust book");
    }
}
