//! `web_search`: the `[[search]]` chain as one tool.
//!
//! Backends are asked in order and the first that answers wins; any
//! failure (a rate limit, a 5xx, a timeout, a refused connection, a missing
//! key, an answer of the wrong shape) moves on to the next, and when every
//! one fails the result names each failure.

use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

use super::backends::{Backend, Failure, backend_client};
use super::{Handles, Hit, SearchConfig};
use crate::args::required_str;

/// Results per search unless the call asks for another number.
const DEFAULT_COUNT: usize = 5;
/// The most results one call may ask for.
const MAX_COUNT: usize = 20;

pub struct WebSearch {
    backends: Vec<Backend>,
    client: reqwest::Client,
    handles: Handles,
    capabilities: Capabilities,
    read_only: bool,
    description: String,
}

impl WebSearch {
    pub(super) fn new(
        config: &SearchConfig,
        handles: Handles,
        mcp_tool: &dyn Fn(&str) -> Option<Arc<dyn Tool>>,
    ) -> Result<Self, String> {
        let backends: Vec<Backend> = config
            .backends
            .iter()
            .map(|entry| Backend::new(entry, mcp_tool))
            .collect();
        let capabilities = chain_capabilities(&backends);
        let read_only = backends.iter().all(Backend::read_only);
        let client = backend_client()?;
        let description = format!(
            "Search the web. Returns up to {MAX_COUNT} results (default {DEFAULT_COUNT}), each \
             numbered with a handle: `[3] title — url — snippet`. Read a result's page with \
             web_open and its handle; web_open opens only results of this tool."
        );
        Ok(Self {
            backends,
            client,
            handles,
            capabilities,
            read_only,
            description,
        })
    }

    /// The handles this tool hands out, shared with `web_open`.
    pub fn handles(&self) -> &Handles {
        &self.handles
    }

    /// Asks each backend in turn; the first answer wins.
    async fn ask_chain(
        &self,
        query: &str,
        count: usize,
        ctx: &ToolCtx,
    ) -> Result<(usize, Vec<Hit>, Vec<(usize, Failure)>), Vec<(usize, Failure)>> {
        let mut failures = Vec::new();
        for (i, backend) in self.backends.iter().enumerate() {
            match self.ask(backend, query, count, ctx).await {
                Ok(hits) => return Ok((i, hits, failures)),
                Err(failure) => failures.push((i, failure)),
            }
        }
        Err(failures)
    }

    /// One backend, within the time each may take.
    async fn ask(
        &self,
        backend: &Backend,
        query: &str,
        count: usize,
        ctx: &ToolCtx,
    ) -> Result<Vec<Hit>, Failure> {
        let asked = backend.search(&self.client, query, count, ctx);
        tokio::time::timeout(backend.timeout, asked)
            .await
            .unwrap_or_else(|_| {
                Err(Failure(format!(
                    "did not answer within {}s (its timeout_s)",
                    backend.timeout.as_secs()
                )))
            })
    }

    /// Asks every backend, not only until one answers, with `query`: each
    /// one's description and how many results it gave, or why none. For
    /// `mecha doctor --online`.
    pub async fn probe(&self, query: &str, ctx: &ToolCtx) -> Vec<(String, Result<usize, String>)> {
        let mut out = Vec::with_capacity(self.backends.len());
        for backend in &self.backends {
            let verdict = self.ask(backend, query, DEFAULT_COUNT, ctx).await;
            out.push((
                backend.spec.to_string(),
                verdict.map(|hits| hits.len()).map_err(|f| f.0),
            ));
        }
        out
    }

    fn named(&self, failures: &[(usize, Failure)]) -> String {
        failures
            .iter()
            .map(|(i, f)| format!("{} ({}): {f}", i + 1, self.backends[*i].spec))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Titles named in a search's first line at most.
const HEADLINE_TITLES: usize = 3;

/// The first line, which activity lines and the terminal UI show beside
/// the call: how many results, from where, and the first few titles.
fn headline(query: &str, kind: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("no results for \"{query}\" from {kind}; try other words\n");
    }
    let titles: Vec<&str> = hits
        .iter()
        .take(HEADLINE_TITLES)
        .map(|h| h.title.as_str())
        .collect();
    let more = if hits.len() > HEADLINE_TITLES {
        " · …"
    } else {
        ""
    };
    let plural = if hits.len() == 1 { "" } else { "s" };
    format!(
        "{} result{plural} for \"{query}\" from {kind}: {}{more}\n",
        hits.len(),
        titles.join(" · ")
    )
}

/// What the chain does to a conversation: untrusted always, since results
/// are whatever strangers published; each `mcp` backend's tool brings its
/// own class. By the spec the send is blind as soon as one backend is
/// blind (a fixed endpoint is), and only a chain with no blind backend
/// takes the class of its tools, Chosen when they are.
fn chain_capabilities(backends: &[Backend]) -> Capabilities {
    let mut caps = Capabilities {
        untrusted_input: true,
        ..Capabilities::NONE
    };
    for backend in backends {
        let their = backend.capabilities();
        caps = caps.union(Capabilities {
            egress: Egress::None,
            ..their
        });
    }
    let classes = backends.iter().map(|b| b.capabilities().egress);
    caps.egress = if classes.clone().any(|e| e == Egress::Blind) {
        Egress::Blind
    } else {
        classes.max().unwrap_or(Egress::None)
    };
    caps
}

#[async_trait]
impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "description": "How many results to return (default 5)."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn send_reason(&self) -> &str {
        "sends the query to a search backend whose class is chosen, as no blind backend is \
         configured"
    }

    fn carried_state(&self) -> Option<String> {
        self.handles.carried()
    }

    fn saved_state(&self) -> Option<Value> {
        self.handles.saved()
    }

    fn restore_state(&self, state: Value) -> Result<(), String> {
        self.handles.restore(state)
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let query = match required_str(&input, "query") {
            Ok(q) if q.trim().is_empty() => {
                return Ok(ToolOutput::refusal(
                    "`query` is empty; say what to search for",
                ));
            }
            Ok(q) => q.trim().to_owned(),
            Err(out) => return Ok(out),
        };
        let count = match input.get("count") {
            None | Some(Value::Null) => DEFAULT_COUNT,
            Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if (1..=MAX_COUNT).contains(&n) => n,
                _ => {
                    return Ok(ToolOutput::refusal(format!(
                        "`count` must be a whole number from 1 to {MAX_COUNT}, not {v}"
                    )));
                }
            },
        };
        let (answered, hits, failures) = match self.ask_chain(&query, count, ctx).await {
            Ok(found) => found,
            Err(failures) => {
                return Ok(ToolOutput::refusal(format!(
                    "web_search found nothing: every backend failed. {}. Try again later, or \
                     fix the backends in [[search]] (`mecha doctor --online` checks them)",
                    self.named(&failures)
                )));
            }
        };
        let kind = self.backends[answered].spec.kind();
        let mut out = headline(&query, kind, &hits);
        let first = self.handles.add(&hits);
        for (i, hit) in hits.iter().enumerate() {
            out.push_str(&format!("[{}] {} — {}", first + i, hit.title, hit.url));
            if !hit.snippet.is_empty() {
                out.push_str(&format!(" — {}", hit.snippet));
            }
            out.push('\n');
        }
        if !failures.is_empty() {
            out.push_str(&format!(
                "({kind} answered after {})\n",
                self.named(&failures)
            ));
        }
        if !hits.is_empty() {
            out.push_str("Read a page with web_open {\"handle\": N}.\n");
        }
        Ok(ToolOutput::external(ctx.fit("web_search", &out)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn hit(title: &str) -> Hit {
        Hit {
            title: title.into(),
            url: "https://example.org/".parse().unwrap(),
            snippet: String::new(),
        }
    }

    #[test]
    fn the_first_line_counts_the_results_and_names_the_first_titles() {
        let hits: Vec<Hit> = ["A", "B", "C", "D"].into_iter().map(hit).collect();
        assert_eq!(
            headline("q", "brave", &hits),
            "4 results for \"q\" from brave: A · B · C · …\n"
        );
        assert_eq!(
            headline("q", "searxng", &hits[..1]),
            "1 result for \"q\" from searxng: A\n"
        );
        assert!(headline("q", "tavily", &[]).starts_with("no results for \"q\" from tavily"));
    }
}
