//! Web research: `web_search`, a chain of configured search backends, and
//! `web_open`, which reads the page behind one of its results.
//!
//! The pair exists so that an armed conversation can still read the web.
//! `web_search` sends only a query, and only to endpoints config fixed, so
//! its send is blind. `web_open` takes a result's handle, never a URL, so
//! the model cannot name a destination through it either; every hop it
//! follows is vetted the way `http_fetch` vets its one.

mod backends;
mod handles;
mod html;
mod open;
mod search;

use std::sync::Arc;
use std::time::Duration;

use mecha_core::Tool;
use url::Url;

pub use backends::{BRAVE_BASE_URL, BackendSpec, TAVILY_BASE_URL, describe_chain};
pub use handles::Handles;
pub use open::WebOpen;
pub use search::WebSearch;

/// How long a backend may take to answer, unless its entry says.
pub const DEFAULT_BACKEND_TIMEOUT: Duration = Duration::from_secs(15);

/// One `[[search]]` entry: the backend, and how long it may take to answer
/// before the next is tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchBackend {
    pub spec: BackendSpec,
    pub timeout: Duration,
}

/// `[[search]]` entries in order, and the limits of both web tools.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub backends: Vec<SearchBackend>,
    /// `web_open`'s whole fetch, every hop and every byte included.
    pub open_timeout: Duration,
    /// Bytes of a page read at most.
    pub max_page_bytes: usize,
}

impl SearchConfig {
    /// `backends` in order, each with the default time limit.
    pub fn new(backends: Vec<BackendSpec>) -> Self {
        let backends = backends
            .into_iter()
            .map(|spec| SearchBackend {
                spec,
                timeout: DEFAULT_BACKEND_TIMEOUT,
            })
            .collect();
        Self {
            backends,
            open_timeout: Duration::from_secs(30),
            max_page_bytes: 5 * 1024 * 1024,
        }
    }
}

/// One search result: what the backend said about a page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hit {
    pub title: String,
    pub url: Url,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub snippet: String,
}

/// Both web tools over one set of handles, so `web_open` can open exactly
/// what `web_search` returned. `mcp_tool` finds the tool an `mcp` backend
/// names among the run's MCP tools.
pub fn web_tools(
    config: SearchConfig,
    mcp_tool: &dyn Fn(&str) -> Option<Arc<dyn Tool>>,
) -> Result<(WebSearch, WebOpen), String> {
    let handles = Handles::default();
    let open = WebOpen::new(&config, handles.clone());
    let search = WebSearch::new(&config, handles, mcp_tool)
        .map_err(|e| format!("cannot set up web_search's HTTP client: {e}"))?;
    Ok((search, open))
}
