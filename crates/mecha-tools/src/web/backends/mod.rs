//! The kinds of `[[search]]` backend: what each one's request looks like,
//! how its answer is read, and how its failure is said.
//!
//! Every failure is described in mecha's own words (a status code, a
//! timeout, a refused connection, a shape that did not parse), never with
//! text the backend sent: the chain's report of failures is harness text,
//! and a backend must not be able to write into it.

mod brave;
mod mcp;
mod searxng;
mod tavily;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mecha_core::{Capabilities, Egress, Tool, ToolCtx, error_chain};
use serde::de::DeserializeOwned;
use url::Url;

use super::{Hit, SearchBackend};

/// Where Brave's API lives unless `base_url` says otherwise.
pub const BRAVE_BASE_URL: &str = "https://api.search.brave.com";
/// Where Tavily's API lives unless `base_url` says otherwise.
pub const TAVILY_BASE_URL: &str = "https://api.tavily.com";

/// One `[[search]]` entry, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// A SearXNG instance with its JSON format enabled.
    Searxng { url: Url },
    /// The Brave Search API; the key is read from `api_key_env` per call.
    Brave { base_url: Url, api_key_env: String },
    /// The Tavily API; the key is read from `api_key_env` per call.
    Tavily { base_url: Url, api_key_env: String },
    /// An MCP server's search tool, by its registered name.
    Mcp { tool: String },
}

impl BackendSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Searxng { .. } => "searxng",
            Self::Brave { .. } => "brave",
            Self::Tavily { .. } => "tavily",
            Self::Mcp { .. } => "mcp",
        }
    }

    /// The environment variable holding this backend's key, if it has one.
    pub fn key_variable(&self) -> Option<&str> {
        match self {
            Self::Brave { api_key_env, .. } | Self::Tavily { api_key_env, .. } => Some(api_key_env),
            Self::Searxng { .. } | Self::Mcp { .. } => None,
        }
    }

    /// Whether config alone fixes where a query goes (every kind but `mcp`,
    /// whose tool declares its own class).
    pub fn fixed_endpoint(&self) -> bool {
        !matches!(self, Self::Mcp { .. })
    }
}

/// `searxng http://localhost:8888/`, `brave https://api.search.brave.com/
/// (key from $BRAVE_API_KEY)`, `mcp tool web__search`.
impl fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Searxng { url } => write!(f, "searxng {url}"),
            Self::Brave {
                base_url,
                api_key_env,
            }
            | Self::Tavily {
                base_url,
                api_key_env,
            } => write!(f, "{} {base_url} (key from ${api_key_env})", self.kind()),
            Self::Mcp { tool } => write!(f, "mcp tool {tool}"),
        }
    }
}

/// The chain in order, one line each, for `mecha tools` and `mecha doctor`.
pub fn describe_chain(backends: &[SearchBackend]) -> Vec<String> {
    backends
        .iter()
        .enumerate()
        .map(|(i, b)| format!("{}. {}", i + 1, b.spec))
        .collect()
}

/// Why one backend gave no results, in mecha's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A backend ready to be asked.
pub(crate) struct Backend {
    pub spec: BackendSpec,
    /// How long it may take to answer.
    pub timeout: Duration,
    /// The tool an `mcp` backend calls; `None` when no running server
    /// offers it.
    mcp_tool: Option<Arc<dyn Tool>>,
}

impl Backend {
    pub fn new(entry: &SearchBackend, mcp_tool: &dyn Fn(&str) -> Option<Arc<dyn Tool>>) -> Self {
        let tool = match &entry.spec {
            BackendSpec::Mcp { tool } => mcp_tool(tool),
            _ => None,
        };
        Self {
            spec: entry.spec.clone(),
            timeout: entry.timeout,
            mcp_tool: tool,
        }
    }

    /// Whether asking it changes nothing: an `mcp` backend is only as
    /// read-only as its tool, so a search through one that is not still
    /// goes to the approver.
    pub fn read_only(&self) -> bool {
        self.mcp_tool.as_ref().is_none_or(|tool| tool.read_only())
    }

    /// What asking this backend does to the conversation. An `mcp` backend
    /// brings its tool's class; one whose tool is absent sends nothing.
    pub fn capabilities(&self) -> Capabilities {
        match (&self.spec, &self.mcp_tool) {
            (BackendSpec::Mcp { .. }, Some(tool)) => tool.capabilities(),
            (BackendSpec::Mcp { .. }, None) => Capabilities::NONE,
            _ => Capabilities {
                egress: Egress::Blind,
                ..Capabilities::NONE
            },
        }
    }

    /// Up to `count` results for `query`.
    pub async fn search(
        &self,
        client: &reqwest::Client,
        query: &str,
        count: usize,
        ctx: &ToolCtx,
    ) -> Result<Vec<Hit>, Failure> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let hits = match &self.spec {
            BackendSpec::Searxng { url } => searxng::search(client, url, query, count).await?,
            BackendSpec::Brave {
                base_url,
                api_key_env,
            } => {
                let key = env(api_key_env).ok_or_else(|| missing_key(api_key_env))?;
                brave::search(client, base_url, &key, query, count).await?
            }
            BackendSpec::Tavily {
                base_url,
                api_key_env,
            } => {
                let key = env(api_key_env).ok_or_else(|| missing_key(api_key_env))?;
                tavily::search(client, base_url, &key, query, count).await?
            }
            BackendSpec::Mcp { tool } => match &self.mcp_tool {
                Some(found) => mcp::search(found.as_ref(), query, count, ctx).await?,
                None => {
                    return Err(Failure(format!(
                        "the MCP tool `{tool}` is not available (its server did not start, \
                         or does not offer it); check `mecha doctor`"
                    )));
                }
            },
        };
        Ok(hits.into_iter().take(count).collect())
    }
}

fn missing_key(variable: &str) -> Failure {
    Failure(format!(
        "${variable} is not set in mecha's environment; export the API key there"
    ))
}

/// The client every fixed-endpoint backend is asked through (each ask has
/// its backend's time limit around it). It follows no redirect: the
/// endpoint is config's, and a Location would be a destination config
/// never named, with the query in it.
pub(crate) fn backend_client() -> Result<reqwest::Client, String> {
    let builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!(
            "mecha/",
            env!("CARGO_PKG_VERSION"),
            " (web_search)"
        ));
    crate::trusting::trusting_extra_roots(builder)?
        .build()
        .map_err(|e| mecha_core::error_chain(&e))
}

/// `base` with `path` appended to whatever path it already has, so a
/// SearXNG under `https://host/searx/` is asked at `/searx/search`.
fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{}", base.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    url.set_query(None);
    url
}

/// The most of a backend's answer that is read: a page of results is tens
/// of kilobytes, and a broken or hostile backend must not fill memory.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Sends `request` and reads a JSON body of shape `T`, or says why not.
async fn answer<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    shape: &str,
) -> Result<T, Failure> {
    let response = request.send().await.map_err(|e| sent_failure(&e))?;
    let status = response.status();
    if !status.is_success() {
        let reason = status.canonical_reason().unwrap_or("");
        let note = match status.as_u16() {
            429 => " (rate limited)",
            401 | 403 => " (check the API key)",
            300..=399 => {
                " (a redirect, which web_search does not follow: fix the URL in [[search]])"
            }
            _ => "",
        };
        return Err(Failure(format!(
            "answered HTTP {} {reason}{note}",
            status.as_u16()
        )));
    }
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| sent_failure(&e))? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Failure(format!(
                "its answer is larger than {MAX_ANSWER_BYTES} bytes, more than a page of \
                 results needs"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| {
        Failure(format!(
            "its answer is not {shape} (line {}, column {}: {:?})",
            e.line(),
            e.column(),
            e.classify()
        ))
    })
}

fn sent_failure(e: &reqwest::Error) -> Failure {
    if e.is_timeout() {
        return Failure("did not answer in time".to_owned());
    }
    if e.is_connect() {
        return Failure(format!("could not connect: {}", os_reason(e)));
    }
    Failure("the request failed before an answer came".to_owned())
}

/// The operating system's words for a failed connect (`Connection refused
/// (os error 111)`), or a plain phrase when it was something else.
fn os_reason(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.raw_os_error().is_some()
        {
            return io.to_string();
        }
        source = err.source();
    }
    let chain = error_chain(e);
    if chain.contains("dns error") {
        "the name could not be resolved".to_owned()
    } else {
        "the connection was not made".to_owned()
    }
}

/// A result as the backends give it: kept only with an http(s) URL, its
/// text cleaned of markup and cut to a line's worth.
fn hit(title: &str, url: &str, snippet: &str) -> Option<Hit> {
    let url = Url::parse(url.trim()).ok()?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return None;
    }
    let title = clean(title, 200);
    Some(Hit {
        title: if title.is_empty() {
            url.to_string()
        } else {
            title
        },
        url,
        snippet: clean(snippet, 300),
    })
}

/// Text without tags (Brave marks matches with `<strong>`), the common
/// entities decoded, whitespace collapsed, and at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => plain.push(c),
            _ => {}
        }
    }
    let decoded = plain
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    let collapsed: Vec<&str> = decoded.split_whitespace().collect();
    let joined = collapsed.join(" ");
    match joined.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn endpoint_keeps_an_instance_path() {
        let base = Url::parse("https://host/searx/").unwrap();
        assert_eq!(
            endpoint(&base, "search").as_str(),
            "https://host/searx/search"
        );
        let bare = Url::parse("http://127.0.0.1:8888").unwrap();
        assert_eq!(
            endpoint(&bare, "search").as_str(),
            "http://127.0.0.1:8888/search"
        );
    }

    #[test]
    fn result_text_loses_markup_and_length() {
        assert_eq!(
            clean("The <strong>Rust</strong>\n  language &amp; you", 100),
            "The Rust language & you"
        );
        assert_eq!(clean("abcdef", 3), "abc…");
        assert!(hit("x", "javascript:alert(1)", "").is_none());
        assert_eq!(
            hit("", "https://a.example/", "").unwrap().title,
            "https://a.example/"
        );
    }
}
