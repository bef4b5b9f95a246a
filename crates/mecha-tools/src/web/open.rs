//! `web_open`: the page behind a result `web_search` returned, as text.
//!
//! The model passes a handle, never a URL, so it cannot name where the
//! request goes. The page's server can, through redirects, so every hop is
//! vetted as `http_fetch` vets its one URL (public addresses only, the
//! connection pinned to the vetted addresses) before anything is sent.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ipnet::IpNet;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput, error_chain};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};
use url::Url;

use super::html::readable;
use super::{Handles, Hit, SearchConfig};
use crate::egress::{EgressGuard, Resolver, SystemResolver, pinned_client, vet};
use crate::http_fetch::{char_start, is_binary, send_failure, shorten};

/// Redirects followed at most, as browsers and curl's default stop short
/// of a loop.
pub const MAX_REDIRECTS: usize = 10;

const USER_AGENT: &str = concat!("mecha/", env!("CARGO_PKG_VERSION"), " (web_open)");

/// Room kept in the call's budget for the notes after the text.
const NOTES_RESERVE: usize = 400;

pub struct WebOpen {
    handles: Handles,
    guard: EgressGuard,
    resolver: Arc<dyn Resolver>,
    timeout: Duration,
    max_page_bytes: usize,
}

/// What the model is told when it tries to open something web_search did
/// not return.
const SEARCH_FIRST: &str = "web_open opens only a page that web_search returned in this \
    session, by the handle printed beside the result (`[3] …` is {\"handle\": 3}); it takes no \
    URL. Search first with web_search, then open one of its results";

impl WebOpen {
    pub(super) fn new(config: &SearchConfig, handles: Handles) -> Self {
        Self {
            handles,
            guard: EgressGuard::new(),
            resolver: Arc::new(SystemResolver),
            timeout: config.open_timeout,
            max_page_bytes: config.max_page_bytes,
        }
    }

    /// Resolves names with `resolver` instead of the system's (tests).
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Exempts one range from the guard; tests reach loopback servers with
    /// it. Not reachable from config, as for `http_fetch`.
    pub fn allowing(mut self, net: IpNet) -> Self {
        self.guard = self.guard.allowing(net);
        self
    }

    /// Which result the call names, or the refusal that says how to name one.
    fn handle(&self, input: &Value) -> Result<(usize, Hit), ToolOutput> {
        if input.get("url").is_some() {
            return Err(ToolOutput::refusal(SEARCH_FIRST));
        }
        let n = match input.get("handle") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<u64>()
                .ok(),
            _ => None,
        };
        let Some(n) = n.and_then(|n| usize::try_from(n).ok()) else {
            return Err(ToolOutput::refusal(format!(
                "`handle` must be the number of a web_search result. {SEARCH_FIRST}"
            )));
        };
        match self.handles.get(n) {
            Some(hit) => Ok((n, hit)),
            None if self.handles.is_empty() => Err(ToolOutput::refusal(format!(
                "there is no result [{n}]: web_search has returned nothing in this session yet. \
                 {SEARCH_FIRST}"
            ))),
            None => Err(ToolOutput::refusal(format!(
                "there is no result [{n}]; this session's searches returned [1] to [{}]. Pick \
                 one of those, or search again",
                self.handles.len()
            ))),
        }
    }

    /// Requests the result's URL and every redirect after it, each hop
    /// vetted and pinned before anything is sent; returns the final answer,
    /// its URL and how many redirects led there.
    async fn follow(
        &self,
        n: usize,
        hit: &Hit,
    ) -> Result<(reqwest::Response, Url, usize), ToolOutput> {
        let mut url = hit.url.clone();
        let mut hops = 0;
        loop {
            let shown = shorten(url.as_str());
            let vetted = match vet(&url, &self.guard, self.resolver.as_ref()).await {
                Ok(vetted) => vetted,
                Err(refusal) => {
                    let what = if hops == 0 {
                        format!("result [{n}] `{shown}`")
                    } else {
                        format!("result [{n}] redirected to `{shown}`, which")
                    };
                    let verdict = if refusal.is_policy() {
                        "refused"
                    } else {
                        "could not open it"
                    };
                    return Err(ToolOutput::refusal(format!(
                        "{verdict}: {what} {}",
                        refusal.describe("web_open")
                    )));
                }
            };
            let client = pinned_client(&vetted, USER_AGENT).map_err(|e| {
                ToolOutput::refusal(format!("could not set up the HTTP client: {e}"))
            })?;
            let response = client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| send_failure(&e, &vetted, &shown))?;
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let Some(location) = location.filter(|_| response.status().is_redirection()) else {
                return Ok((response, url, hops));
            };
            if hops == MAX_REDIRECTS {
                return Err(ToolOutput::refusal(format!(
                    "result [{n}] redirected more than {MAX_REDIRECTS} times; web_open stops \
                     there. Open another result"
                )));
            }
            url = url.join(location.trim()).map_err(|_| {
                ToolOutput::refusal(format!(
                    "result [{n}] redirected to a Location that is no URL; open another result"
                ))
            })?;
            hops += 1;
        }
    }

    async fn open(&self, n: usize, hit: &Hit, ctx: &ToolCtx) -> ToolOutput {
        let (response, url, hops) = match self.follow(n, hit).await {
            Ok(reached) => reached,
            Err(refusal) => return refusal,
        };
        let status = response.status();
        let content_type = response.headers().get(CONTENT_TYPE).map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .trim()
                .to_ascii_lowercase()
        });
        let body = read_body(response, self.max_page_bytes).await;
        let (title, text) = page_text(content_type.as_deref(), body.bytes, &url).await;
        let (cut, broke) = (body.cut, body.broke);
        let mut sink = ctx.sink(
            "web_open",
            ctx.call_budget_bytes.saturating_sub(NOTES_RESERVE),
        );
        let title = title.unwrap_or_else(|| hit.title.clone());
        sink.push(format!("[{n}] {title} — {url}\n").as_bytes());
        if hops > 0 {
            sink.push(
                format!("(reached through {hops} redirect(s) from {})\n", hit.url).as_bytes(),
            );
        }
        if !status.is_success() {
            sink.push(
                format!(
                    "HTTP {} {}\n",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )
                .as_bytes(),
            );
        }
        sink.push(b"\n");
        sink.push(text.as_bytes());
        let mut out = sink.finish();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if cut {
            out.push_str(&format!(
                "[page cut at {} bytes by the harness]\n",
                self.max_page_bytes
            ));
        }
        if let Some(error) = &broke {
            out.push_str(&format!(
                "[the connection failed partway through the page: {error}]\n"
            ));
        }
        ToolOutput {
            is_error: status.as_u16() >= 400 || broke.is_some(),
            ..ToolOutput::external(out)
        }
    }
}

/// A page's body as read: at most the cap, and how the reading ended.
struct Body {
    bytes: Vec<u8>,
    /// The cap was reached; the rest was not downloaded.
    cut: bool,
    /// The connection failed partway, in these words.
    broke: Option<String>,
}

async fn read_body(mut response: reqwest::Response, max: usize) -> Body {
    let mut body = Body {
        bytes: Vec::new(),
        cut: false,
        broke: None,
    };
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = max - body.bytes.len();
                if chunk.len() > room {
                    body.bytes
                        .extend_from_slice(&chunk[..char_start(&chunk, room)]);
                    body.cut = true;
                    break;
                }
                body.bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                body.broke = Some(shorten(&error_chain(&e)));
                break;
            }
        }
    }
    // Dropping the response here closes the connection mid-body.
    body
}

/// The page's title and text: HTML made readable (off the async thread, as
/// a large page takes a while), other text as it is, binary not at all.
async fn page_text(
    content_type: Option<&str>,
    body: Vec<u8>,
    url: &Url,
) -> (Option<String>, String) {
    let html = content_type.is_some_and(|ct| ct.contains("html"))
        || (content_type.is_none() && looks_like_html(&body));
    if html {
        let url = url.clone();
        let made = tokio::task::spawn_blocking(move || {
            let page = readable(&String::from_utf8_lossy(&body), &url);
            (page.title, page.text)
        })
        .await;
        return made.unwrap_or_else(|_| (None, "(the page could not be made readable)".to_owned()));
    }
    if body.is_empty() {
        return (None, "(empty page)".to_owned());
    }
    if is_binary(content_type, &body) {
        return (
            None,
            format!("binary body of {} bytes, not shown", body.len()),
        );
    }
    (None, String::from_utf8_lossy(&body).into_owned())
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<!doctype html") || head.contains("<html")
}

#[async_trait]
impl Tool for WebOpen {
    fn name(&self) -> &str {
        "web_open"
    }

    fn description(&self) -> &str {
        "Read the page behind a web_search result, by the handle printed beside it ([3] is \
         {\"handle\": 3}). Follows redirects to public addresses; returns the page's main text \
         as markdown. Takes no URL: search first."
    }

    /// Loose on purpose: a URL in place of a handle, or beside it, must
    /// reach the call, whose refusal says to search first; a schema error
    /// would only say the arguments are wrong.
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "handle": {
                    "type": ["integer", "string"],
                    "description": "The number shown beside a web_search result, e.g. 3 for [3]."
                }
            }
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        // The request goes where a search result points, which the model
        // picked among but did not write: a blind send.
        Capabilities {
            untrusted_input: true,
            egress: Egress::Blind,
            ..Capabilities::NONE
        }
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let (n, hit) = match self.handle(&input) {
            Ok(found) => found,
            Err(refusal) => return Ok(refusal),
        };
        match tokio::time::timeout(self.timeout, self.open(n, &hit, ctx)).await {
            // Even a refusal here quotes a URL a search backend or the
            // page's server wrote, so it taints like their own words.
            Ok(out) => Ok(ToolOutput {
                harness: false,
                ..out
            }),
            Err(_) => Ok(ToolOutput::refusal(format!(
                "result [{n}] timed out: no complete page within {}s, web_open's limit. Try \
                 another result",
                self.timeout.as_secs()
            ))),
        }
    }
}
