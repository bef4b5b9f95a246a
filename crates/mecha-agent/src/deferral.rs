//! Deferred tool schemas: when the deferrable tools' schemas (MCP servers')
//! add up to more than a threshold, they are left out of the tool list. The
//! model sees one `tool_search` tool whose description names each of them
//! with its first sentence; a search returns the full schemas of the tools
//! it matches, and from the next request on those tools are in the list
//! with their full schemas, at their sorted place. A call to a deferred tool
//! not yet loaded is answered with its schema instead of running, and loads
//! it too.
//!
//! The loaded set only grows (like the surface, there is no unload), lives
//! in the agent (so a compaction keeps it) and is journaled as
//! `tool_search`'s saved state (so a resume sends the same list). Each load
//! changes the list once, from the loaded tool on: the cached prefix is
//! written again once, then read as before.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use mecha_core::{Registry, Tool, ToolCtx, ToolDefinition, ToolOutput, first_sentence};
use serde_json::{Value, json};

/// The name of the tool that loads deferred schemas.
pub const TOOL_SEARCH: &str = "tool_search";

/// The most tools one keyword search loads: a broad word should not load a
/// whole server. Names given exactly are all loaded.
const MAX_KEYWORD_MATCHES: usize = 8;

/// The longest first sentence a deferred tool's catalogue line keeps, in
/// bytes: the catalogue is sent on every request.
const MAX_SENTENCE: usize = 90;

/// Which tools of a registry a threshold defers, and their definitions'
/// serialized bytes, all told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    pub names: Vec<String>,
    pub bytes: usize,
}

/// The deferrable tools of `registry` when their definitions add up to more
/// than `over_bytes`; `None` when they do not (or there are none), and the
/// list goes whole.
pub fn deferred(registry: &Registry, over_bytes: usize) -> Option<Deferred> {
    let mut names = Vec::new();
    let mut bytes = 0;
    for tool in registry.iter().filter(|t| t.deferrable()) {
        names.push(tool.name().to_owned());
        bytes += definition_bytes(tool.as_ref());
    }
    (!names.is_empty() && bytes > over_bytes).then_some(Deferred { names, bytes })
}

/// What `registry`'s tool list is sent as at the start of a session with
/// `over_bytes` as the threshold (`None`: never defer): `mecha tools
/// --schema`'s answer, the same code as the loop's.
pub fn first_definitions(registry: &Registry, over_bytes: Option<usize>) -> Vec<ToolDefinition> {
    let set = match over_bytes {
        Some(over_bytes) => crate::toolset::ToolSet::new(
            registry.clone(),
            Some(&Arc::new(Deferral::new(over_bytes))),
        ),
        None => crate::toolset::ToolSet::new(registry.clone(), None),
    };
    set.definitions().to_vec()
}

fn definition_bytes(tool: &dyn Tool) -> usize {
    let definition = json!({
        "name": tool.name(),
        "description": tool.description(),
        "input_schema": tool.input_schema(),
    });
    serde_json::to_string(&definition).map_or(0, |s| s.len())
}

/// A run's deferral: the threshold, the tools the current set defers, and
/// what the session loaded. Shared by the agent, its gate and `tool_search`.
#[derive(Debug)]
pub(crate) struct Deferral {
    pub(crate) over_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The full definitions of the tools the current set defers, by name.
    deferred: BTreeMap<String, ToolDefinition>,
    /// The names whose schemas the session loaded; only grows.
    loaded: BTreeSet<String>,
}

impl Deferral {
    pub(crate) fn new(over_bytes: usize) -> Self {
        Self {
            over_bytes,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a new tool set's deferred tools (none: the set goes whole).
    pub(crate) fn defer(&self, deferred: BTreeMap<String, ToolDefinition>) {
        self.state().deferred = deferred;
    }

    /// How many names were ever loaded: a version of the loaded set, since
    /// it only grows.
    pub(crate) fn loaded_count(&self) -> usize {
        self.state().loaded.len()
    }

    /// Whether `name` is deferred and not loaded, so the list leaves it out.
    pub(crate) fn withheld(&self, name: &str) -> bool {
        let state = self.state();
        state.deferred.contains_key(name) && !state.loaded.contains(name)
    }

    /// For a call to a deferred tool whose schema the model has not seen:
    /// the answer that carries the schema, the tool now loaded. `None`: the
    /// call goes on to the rest of the gate.
    pub(crate) fn first_call(&self, name: &str) -> Option<String> {
        let mut state = self.state();
        if state.loaded.contains(name) {
            return None;
        }
        let definition = serde_json::to_string(state.deferred.get(name)?).ok()?;
        state.loaded.insert(name.to_owned());
        Some(format!(
            "`{name}` did not run: its input schema had not been loaded (the schemas of this \
             run's MCP tools are deferred to keep the prompt small). Here is its definition; \
             the tool is in your tool list with it from the next request on. Call it again with \
             arguments that match:\n{definition}"
        ))
    }
}

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
        let mut description = String::from(
            "Loads the input schemas of the tools listed below, left out of the tool list to \
             keep it small. Call it with their names (or keywords) before calling one: each tool \
             it returns is in your tool list with its full schema from the next request on. \
             Calling a listed tool before it is loaded only returns its schema.\n",
        );
        for definition in deferred.values() {
            let sentence = shortened(first_sentence(&definition.description));
            description.push_str(&definition.name);
            if !sentence.is_empty() {
                description.push_str(": ");
                description.push_str(sentence);
            }
            description.push('\n');
        }
        Self {
            deferral,
            description,
        }
    }
}

/// `text` cut to [`MAX_SENTENCE`] bytes, at a character boundary.
fn shortened(text: &str) -> &str {
    if text.len() <= MAX_SENTENCE {
        return text;
    }
    let mut end = MAX_SENTENCE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_end()
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
    fn a_broad_keyword_loads_a_few_and_long_sentences_are_cut() {
        let many: Vec<(String, String)> = (0..20)
            .map(|n| (format!("t{n:02}"), "Does a thing.".to_owned()))
            .collect();
        let entries: Vec<(&str, &str)> =
            many.iter().map(|(n, d)| (n.as_str(), d.as_str())).collect();
        assert_eq!(
            found(&catalogue(&entries), "thing").len(),
            MAX_KEYWORD_MATCHES
        );
        let long = "é".repeat(100);
        let cut = shortened(&long);
        assert!(cut.len() <= MAX_SENTENCE && long.starts_with(cut));
    }
}
