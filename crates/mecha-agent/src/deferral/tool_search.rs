//! `tool_search`: the one tool the model sees in place of the deferred
//! ones, and how a query picks the tools it loads.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{Tool, ToolCtx, ToolDefinition, ToolOutput};
use serde_json::{Value, json};

use super::{Deferral, TOOL_SEARCH, catalogue};

/// The most tools one keyword search loads: a broad word should not load a
/// whole server. Names given exactly are all loaded.
const MAX_KEYWORD_MATCHES: usize = 8;

/// The tool that loads deferred schemas. Its description is the catalogue
/// of the deferred tools, fixed for the tool set (loads do not change it),
/// so it never moves the cached prefix itself.
pub(crate) struct ToolSearch {
    deferral: Arc<Deferral>,
    description: String,
}

impl ToolSearch {
    pub(crate) fn new(
        deferral: Arc<Deferral>,
        deferred: &BTreeMap<String, ToolDefinition>,
    ) -> Self {
        Self {
            deferral,
            description: catalogue::describe(deferred.values()),
        }
    }
}

#[async_trait]
impl Tool for ToolSearch {
    fn name(&self) -> &str {
        TOOL_SEARCH
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"query": {
                "type": "string",
                "description": "Tool names from the list, or keywords, separated by spaces",
            }},
            "required": ["query"],
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn saved_state(&self) -> Option<Value> {
        let state = self.deferral.state();
        (!state.loaded.is_empty()).then(|| json!(state.loaded))
    }

    fn restore_state(&self, saved: Value) -> Result<(), String> {
        let names: Vec<String> = serde_json::from_value(saved)
            .map_err(|e| format!("the tools this session loaded could not be read back: {e}"))?;
        self.deferral.state().loaded.extend(names);
        Ok(())
    }

    async fn call(&self, input: Value, _: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let query = input.get("query").and_then(Value::as_str).unwrap_or("");
        let mut state = self.deferral.state();
        let found: Vec<ToolDefinition> = search(&state.deferred, query)
            .into_iter()
            .cloned()
            .collect();
        if found.is_empty() {
            return Ok(ToolOutput::err(format!(
                "no deferred tool matches `{query}`: give names from this tool's description, \
                 or other keywords"
            )));
        }
        let mut out = String::from(
            "These tools are in your tool list with their full schemas from the next request \
             on:\n",
        );
        for definition in found {
            let line = serde_json::to_string(&definition)?;
            state.loaded.insert(definition.name);
            out.push_str(&line);
            out.push('\n');
        }
        Ok(ToolOutput::ok(out))
    }
}

/// The deferred tools `query` names exactly, then (if it names none) the
/// ones whose name or description holds most of its words, at most
/// [`MAX_KEYWORD_MATCHES`].
fn search<'d>(
    deferred: &'d BTreeMap<String, ToolDefinition>,
    query: &str,
) -> Vec<&'d ToolDefinition> {
    let words: Vec<&str> = query
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let named: Vec<&ToolDefinition> = words.iter().filter_map(|w| deferred.get(*w)).collect();
    if !named.is_empty() {
        return named;
    }
    let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut scored: Vec<(usize, &ToolDefinition)> = deferred
        .values()
        .filter_map(|d| {
            let haystack = format!("{} {}", d.name, d.description).to_lowercase();
            let score = words.iter().filter(|w| haystack.contains(*w)).count();
            (score > 0).then_some((score, d))
        })
        .collect();
    // Stable: among equal scores, name order.
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored
        .into_iter()
        .take(MAX_KEYWORD_MATCHES)
        .map(|(_, d)| d)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue(entries: &[(&str, &str)]) -> BTreeMap<String, ToolDefinition> {
        entries
            .iter()
            .map(|(name, description)| {
                let definition = ToolDefinition {
                    name: (*name).to_owned(),
                    description: (*description).to_owned(),
                    input_schema: json!({"type": "object"}),
                };
                ((*name).to_owned(), definition)
            })
            .collect()
    }

    fn found(deferred: &BTreeMap<String, ToolDefinition>, query: &str) -> Vec<String> {
        search(deferred, query)
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    #[test]
    fn names_win_then_keywords_by_how_many_they_match() {
        let deferred = catalogue(&[
            ("fs__read_file", "Reads a file."),
            ("fs__write_file", "Writes a file."),
            ("web__navigate", "Opens a page in the browser."),
        ]);
        assert_eq!(
            found(&deferred, "web__navigate, fs__read_file"),
            ["web__navigate", "fs__read_file"]
        );
        assert_eq!(
            found(&deferred, "WRITES file"),
            ["fs__write_file", "fs__read_file"]
        );
        assert!(found(&deferred, "spreadsheet").is_empty());
    }

    #[test]
    fn a_broad_keyword_loads_a_few() {
        let many: Vec<(String, String)> = (0..20)
            .map(|n| (format!("t{n:02}"), "Does a thing.".to_owned()))
            .collect();
        let entries: Vec<(&str, &str)> =
            many.iter().map(|(n, d)| (n.as_str(), d.as_str())).collect();
        assert_eq!(
            found(&catalogue(&entries), "thing").len(),
            MAX_KEYWORD_MATCHES
        );
    }
}
