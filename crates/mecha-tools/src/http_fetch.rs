//! `http_fetch`: a guarded GET of one URL.
//!
//! The model may be fully controlled by a prompt injection, so everything
//! here assumes the URL is hostile. The guard lives in [`crate::egress`];
//! this module wires it into reqwest so that nothing can route around it:
//! every address is vetted before connecting, the client can only connect to
//! those addresses, redirects are returned rather than followed, and proxy
//! variables (which would resolve the name elsewhere) are ignored.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ipnet::IpNet;
use mecha_core::{
    ArgKind, Capabilities, Egress, SpillingSink, Tool, ToolCtx, ToolOutput, error_chain, parse_url,
};
use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use serde_json::{Value, json};
use url::Url;

use crate::args::required_str;
use crate::egress::{EgressGuard, Resolver, SystemResolver, Vetted, pinned_client, vet};

/// Limits for `http_fetch`.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// The whole request, connect to last byte.
    pub timeout: Duration,
    /// Bytes of body read at most; the rest is not downloaded.
    pub max_body_bytes: usize,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_body_bytes: 5 * 1024 * 1024,
        }
    }
}

const USER_AGENT: &str = concat!("mecha/", env!("CARGO_PKG_VERSION"), " (http_fetch)");

/// URLs echoed in the harness's own messages are cut to this many chars; the
/// model wrote them, and a long query string helps nobody in an error.
const SHOWN_URL_CHARS: usize = 200;

/// Room kept in the call's budget for the notes after the body (a cut, a
/// broken connection), so they stay in the transcript when the body spills.
const NOTES_RESERVE: usize = 400;

/// Bytes of body looked at, before any is shown, to tell text from binary.
const SNIFF_BYTES: usize = 1024;

pub struct HttpFetch {
    config: FetchConfig,
    guard: EgressGuard,
    resolver: Arc<dyn Resolver>,
    description: String,
}

impl HttpFetch {
    pub fn new(config: FetchConfig) -> Self {
        let description = format!(
            "GET one public http:// or https:// URL. Returns the status line, the content type \
             and the body as text. Redirects are not followed: a 3xx comes back with its Location, \
             which you may fetch with a second call. Refuses loopback, private, link-local and \
             other non-public addresses, including names that resolve to any of them, and URLs \
             with credentials. The body is cut at {} bytes; binary bodies are not shown.",
            config.max_body_bytes
        );
        Self {
            config,
            guard: EgressGuard::new(),
            resolver: Arc::new(SystemResolver),
            description,
        }
    }

    /// Resolves names with `resolver` instead of the system resolver. Tests
    /// use it to answer with loopback addresses, or to change the answer
    /// between lookups.
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Exempts one range from the egress guard; the tests use it to reach
    /// loopback servers. Deliberately not reachable from config or the
    /// environment: a model that can write either must not widen the guard.
    pub fn allowing(mut self, net: IpNet) -> Self {
        self.guard = self.guard.allowing(net);
        self
    }

    async fn fetch(&self, url: &Url, shown: &str, ctx: &ToolCtx) -> ToolOutput {
        let vetted = match vet(url, &self.guard, self.resolver.as_ref()).await {
            Ok(vetted) => vetted,
            Err(refusal) if refusal.is_policy() => {
                return ToolOutput::refusal(format!("refused: `{shown}` {refusal}"));
            }
            Err(refusal) => {
                return ToolOutput::refusal(format!("could not fetch `{shown}`: it {refusal}"));
            }
        };
        let client = match pinned_client(&vetted, USER_AGENT) {
            Ok(client) => client,
            Err(e) => {
                return ToolOutput::refusal(format!("could not set up the HTTP client: {e}"));
            }
        };
        let mut response = match client.get(url.clone()).send().await {
            Ok(response) => response,
            Err(e) => return send_failure(&e, &vetted, shown),
        };

        let head = head_lines(response.status(), response.headers());
        let content_type = header_text(response.headers(), CONTENT_TYPE);
        let status = response.status();

        // The body streams into the call's sink, which keeps one budget's
        // worth in memory and spills the rest, so the cap bounds only what
        // is downloaded.
        let mut sink = ctx.sink(
            "http_fetch",
            ctx.call_budget_bytes.saturating_sub(NOTES_RESERVE),
        );
        sink.push(head.as_bytes());
        sink.push(b"\n");
        let mut body = Body::new(content_type.as_deref());
        let max = self.config.max_body_bytes;
        let mut cut = false;
        let mut broke: Option<String> = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = max - body.read;
                    if chunk.len() > room {
                        body.feed(&chunk[..char_start(&chunk, room)], &mut sink);
                        cut = true;
                        break;
                    }
                    body.feed(&chunk, &mut sink);
                }
                Ok(None) => break,
                Err(e) => {
                    broke = Some(shorten(&error_chain(&e)));
                    break;
                }
            }
        }
        // Dropping the response here closes the connection mid-body.
        drop(response);
        body.finish(cut, &mut sink);

        let mut out = sink.finish();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if cut {
            out.push_str(&format!("[body cut at {max} bytes by the harness]\n"));
        }
        if let Some(error) = &broke {
            out.push_str(&format!(
                "[the connection failed after {} bytes of body: {error}]\n",
                body.read
            ));
        }
        // It came from outside, whatever the status; a 4xx/5xx or a broken
        // body is also a failure the model should notice.
        ToolOutput {
            is_error: status.as_u16() >= 400 || broke.is_some(),
            ..ToolOutput::external(out)
        }
    }

    fn timed_out(&self, shown: &str) -> ToolOutput {
        ToolOutput::refusal(format!(
            "`{shown}` timed out: no complete answer within {:?}, http_fetch's time limit set by \
             the harness. Try again later, or a smaller page",
            self.config.timeout
        ))
    }
}

#[async_trait]
impl Tool for HttpFetch {
    fn name(&self) -> &str {
        "http_fetch"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The absolute http:// or https:// URL to GET."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[("url", ArgKind::Url)]
    }

    fn capabilities(&self) -> Capabilities {
        // Read-only towards the user's data, yet a send: the query string
        // carries a payload to a host the model picks.
        Capabilities {
            private_data: false,
            untrusted_input: true,
            egress: Egress::Chosen,
            destructive: false,
        }
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let raw = match required_str(&input, "url") {
            Ok(raw) => raw,
            Err(out) => return Ok(out),
        };
        let shown = shorten(raw);
        let url = match parse_url(raw) {
            Ok(url) => url,
            Err(e) => {
                return Ok(ToolOutput::refusal(format!(
                    "`{shown}` is not a valid URL ({e}); give an absolute http:// or https:// URL"
                )));
            }
        };
        // One deadline over everything: the lookup, the connect, the TLS
        // handshake and every byte of the body. reqwest's own timeout would
        // not cover the lookup, which goes through our resolver first.
        match tokio::time::timeout(self.config.timeout, self.fetch(&url, &shown, ctx)).await {
            Ok(out) => Ok(out),
            Err(_) => Ok(self.timed_out(&shown)),
        }
    }
}

/// A request that got no response. Only a connection the system refused or
/// lost before anything was said is a refusal: its text is mecha's and the
/// system's. Any other failure (TLS, a malformed answer) is described by an
/// error chain that the server or its certificate wrote into, through alert
/// codes, certificate names or the bytes it sent, so it is an error that
/// taints like the server's own words.
pub(crate) fn send_failure(e: &reqwest::Error, vetted: &Vetted, shown: &str) -> ToolOutput {
    if !e.is_connect() {
        return ToolOutput::err(format!("request to `{shown}` failed: {}", error_chain(e)));
    }
    let addrs: Vec<String> = vetted.addrs.iter().map(ToString::to_string).collect();
    let connect = format!(
        "could not connect to `{}` ({}) for `{shown}`",
        vetted.host,
        addrs.join(", ")
    );
    match os_error(e) {
        Some(os) => ToolOutput::refusal(format!("{connect}: {os}")),
        None => ToolOutput::err(format!("{connect}: {}", error_chain(e))),
    }
}

/// The operating system's error behind a failed connect, if that is what
/// stopped it: its text comes from this machine, not from the peer.
fn os_error(e: &reqwest::Error) -> Option<&io::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<io::Error>()
            && io.raw_os_error().is_some()
        {
            return Some(io);
        }
        source = err.source();
    }
    None
}

/// `HTTP 302 Found`, the content type, and for a redirect the Location.
fn head_lines(status: reqwest::StatusCode, headers: &HeaderMap) -> String {
    let mut out = format!(
        "HTTP {} {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let content_type = header_text(headers, CONTENT_TYPE);
    out.push_str(&format!(
        "content-type: {}\n",
        content_type.as_deref().unwrap_or("(none)")
    ));
    if let Some(location) = header_text(headers, LOCATION) {
        out.push_str(&format!("location: {location}\n"));
        if status.is_redirection() {
            out.push_str(
                "[redirect not followed by the harness; call http_fetch on the location to follow it]\n",
            );
        }
    }
    out
}

fn header_text(headers: &HeaderMap, name: reqwest::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
}

/// Whether to withhold the body: a clearly binary content type, or, when
/// the type does not say text, a NUL byte near the start.
pub(crate) fn is_binary(content_type: Option<&str>, body: &[u8]) -> bool {
    let mime = content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let (kind, sub) = mime.split_once('/').unwrap_or((mime.as_str(), ""));
    let textual = kind == "text"
        || [
            "json",
            "xml",
            "javascript",
            "ecmascript",
            "x-javascript",
            "x-www-form-urlencoded",
            "yaml",
            "x-yaml",
            "toml",
            "x-ndjson",
            "graphql",
            "sql",
            "x-sh",
        ]
        .contains(&sub)
        || ["+json", "+xml", "+yaml"].iter().any(|s| sub.ends_with(s));
    if textual {
        return false;
    }
    let binary_kind = ["image", "audio", "video", "font", "model"].contains(&kind);
    let binary_app = kind == "application"
        && [
            "octet-stream",
            "pdf",
            "zip",
            "gzip",
            "x-gzip",
            "x-tar",
            "x-bzip2",
            "x-xz",
            "zstd",
            "x-7z-compressed",
            "x-rar-compressed",
            "wasm",
            "java-archive",
            "x-executable",
            "x-msdownload",
        ]
        .contains(&sub);
    binary_kind || binary_app || body.iter().take(1024).any(|&b| b == 0)
}

/// The body on its way into the sink: held back until its first
/// [`SNIFF_BYTES`] say whether it is text, then streamed, or only counted
/// when it is binary.
struct Body<'a> {
    content_type: Option<&'a str>,
    sniffed: Vec<u8>,
    binary: Option<bool>,
    /// Bytes of body read from the network.
    read: usize,
}

impl<'a> Body<'a> {
    fn new(content_type: Option<&'a str>) -> Self {
        Self {
            content_type,
            sniffed: Vec::new(),
            binary: None,
            read: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8], sink: &mut SpillingSink<'_>) {
        self.read += bytes.len();
        match self.binary {
            Some(true) => {}
            Some(false) => sink.push(bytes),
            None => {
                self.sniffed.extend_from_slice(bytes);
                if self.sniffed.len() >= SNIFF_BYTES {
                    self.decide(sink);
                }
            }
        }
    }

    fn decide(&mut self, sink: &mut SpillingSink<'_>) {
        let binary = is_binary(self.content_type, &self.sniffed);
        if !binary {
            sink.push(&self.sniffed);
        }
        self.sniffed = Vec::new();
        self.binary = Some(binary);
    }

    /// Says what the sink got: an empty or binary body in words.
    fn finish(&mut self, cut: bool, sink: &mut SpillingSink<'_>) {
        if self.binary.is_none() {
            self.decide(sink);
        }
        if self.read == 0 && !cut {
            sink.push(b"(empty body)\n");
        } else if self.binary == Some(true) {
            sink.push(format!("binary body of {} bytes, not shown\n", self.read).as_bytes());
        }
    }
}

/// Where to cut `chunk` to keep at most `room` bytes: backed off to the
/// start of a character the cut would split, so its leading bytes are not
/// shown as a replacement character.
pub(crate) fn char_start(chunk: &[u8], room: usize) -> usize {
    let mut end = room.min(chunk.len());
    // At most three continuation bytes follow a character's first byte.
    for _ in 0..3 {
        match chunk.get(end) {
            Some(&b) if end > 0 && b & 0xC0 == 0x80 => end -= 1,
            _ => break,
        }
    }
    end
}

pub(crate) fn shorten(raw: &str) -> String {
    match raw.char_indices().nth(SHOWN_URL_CHARS) {
        Some((at, _)) => format!("{}…", &raw[..at]),
        None => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_fetch_cut_inside_a_character_drops_its_start() {
        let body = "héllo".as_bytes();
        // A cut after the first byte of "é" backs off to before it.
        assert_eq!(char_start(body, 2), 1);
        assert_eq!(char_start(body, 3), 3);
        assert_eq!(char_start(body, 1), 1);
        assert_eq!(char_start("€".as_bytes(), 2), 0);
    }

    #[test]
    fn http_fetch_binary_detection() {
        assert!(is_binary(Some("image/png"), b"x"));
        assert!(is_binary(Some("application/octet-stream"), b"x"));
        assert!(!is_binary(Some("image/svg+xml"), b"<svg/>"));
        assert!(!is_binary(Some("application/json; charset=utf-8"), b"{}"));
        assert!(!is_binary(Some("text/html"), b"a\0b"));
        assert!(is_binary(None, b"PK\x03\x04\0\0"));
        assert!(!is_binary(None, b"plain"));
    }
}
