//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that never
//! moved to streamable HTTP. rmcp 3 has no client for it, so this is the
//! one piece of protocol mecha speaks itself, kept to what the transport
//! is: a GET opens an event stream whose first event, `endpoint`, names
//! where to POST messages; every answer and notification comes back as a
//! `message` event on that stream.
//!
//! The endpoint must be on the server's own origin: a server cannot send
//! mecha's messages (and the token with them) to another host.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest013::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::auth::AuthorizationManager;
use tokio::sync::{Mutex, mpsc};

use crate::bounded::MAX_MESSAGE_BYTES;

/// A transport failure, in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SseError(String);

/// What goes in `Authorization`, asked for afresh on every request so a
/// login's token is refreshed when it is due.
#[derive(Clone)]
pub(crate) enum Credential {
    None,
    Bearer(String),
    OAuth(Arc<Mutex<AuthorizationManager>>),
}

impl Credential {
    async fn header(&self) -> Result<Option<HeaderValue>, SseError> {
        let token = match self {
            Self::None => return Ok(None),
            Self::Bearer(token) => token.clone(),
            Self::OAuth(manager) => manager.lock().await.get_access_token().await.map_err(|e| {
                SseError(format!(
                    "Auth required: the OAuth login cannot be used ({e})"
                ))
            })?,
        };
        HeaderValue::from_str(&format!("Bearer {token}"))
            .map(Some)
            .map_err(|e| SseError(format!("the token cannot be sent as a header: {e}")))
    }
}

/// A connected SSE session.
pub(crate) struct SseTransport {
    client: reqwest013::Client,
    endpoint: url::Url,
    headers: HeaderMap,
    credential: Credential,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream at `url` and waits up to `limit` for the
/// `endpoint` event.
pub(crate) async fn connect(
    client: reqwest013::Client,
    url: &str,
    headers: HeaderMap,
    credential: Credential,
    limit: Duration,
) -> Result<SseTransport, SseError> {
    let base = url::Url::parse(url).map_err(|e| SseError(e.to_string()))?;
    let mut request = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream");
    if let Some(auth) = credential.header().await? {
        request = request.header(AUTHORIZATION, auth);
    }
    let response = tokio::time::timeout(limit, request.send())
        .await
        .map_err(|_| SseError(format!("no answer from {url} within {} s", limit.as_secs())))?
        .map_err(|e| SseError(format!("cannot reach {url}: {e}")))?;
    let status = response.status();
    if status == reqwest013::StatusCode::UNAUTHORIZED {
        return Err(SseError("Auth required (HTTP 401)".into()));
    }
    if !status.is_success() {
        return Err(SseError(format!(
            "the SSE stream at {url} answered HTTP {status}"
        )));
    }
    let mut events = Events::new(response.bytes_stream());
    let endpoint = tokio::time::timeout(limit, events.next_event())
        .await
        .map_err(|_| {
            SseError(format!(
                "{url} sent no `endpoint` event within {} s",
                limit.as_secs()
            ))
        })?;
    let endpoint = match endpoint {
        Some(event) if event.kind == "endpoint" => base
            .join(event.data.trim())
            .map_err(|e| SseError(format!("the `endpoint` event is not a URL: {e}")))?,
        Some(event) => {
            return Err(SseError(format!(
                "{url} began its stream with a `{}` event, not `endpoint`: it does not speak the \
                 SSE transport",
                event.kind
            )));
        }
        None => {
            return Err(SseError(format!(
                "{url} closed its stream before naming an endpoint"
            )));
        }
    };
    if endpoint.origin() != base.origin() {
        return Err(SseError(format!(
            "{url} named {endpoint} for its messages, another origin; mecha sends them only to \
             the server's own"
        )));
    }
    let (tx, incoming) = mpsc::channel(64);
    let reader = tokio::spawn(async move {
        while let Some(event) = events.next_event().await {
            if event.kind != "message" {
                continue;
            }
            match serde_json::from_str(&event.data) {
                Ok(message) => {
                    if tx.send(message).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!("an SSE message that is not JSON-RPC: {e}"),
            }
        }
    });
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        credential,
        incoming,
        reader,
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> std::borrow::Cow<'static, str> {
        "SSE".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let credential = self.credential.clone();
        async move {
            let body = serde_json::to_vec(&item).map_err(|e| SseError(e.to_string()))?;
            let mut request = client
                .post(endpoint)
                .headers(headers)
                .header(CONTENT_TYPE, "application/json")
                .body(body);
            if let Some(auth) = credential.header().await? {
                request = request.header(AUTHORIZATION, auth);
            }
            let response = request
                .send()
                .await
                .map_err(|e| SseError(format!("the message did not reach the server: {e}")))?;
            match response.status() {
                s if s.is_success() => Ok(()),
                reqwest013::StatusCode::UNAUTHORIZED => {
                    Err(SseError("Auth required (HTTP 401)".into()))
                }
                s => Err(SseError(format!(
                    "the server refused the message: HTTP {s}"
                ))),
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

/// One server-sent event.
#[derive(Debug, PartialEq, Eq)]
struct Event {
    kind: String,
    data: String,
}

/// The events of a byte stream, each at most `MAX_MESSAGE_BYTES`.
struct Events<S> {
    bytes: S,
    buffer: Vec<u8>,
    ended: bool,
}

impl<S, B, E> Events<S>
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    fn new(bytes: S) -> Self {
        Self {
            bytes,
            buffer: Vec::new(),
            ended: false,
        }
    }

    /// The next event; `None` when the stream ends (or breaks, or sends
    /// one larger than the cap).
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.take_event() {
                return Some(event);
            }
            if self.ended || self.buffer.len() > MAX_MESSAGE_BYTES {
                return None;
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(chunk.as_ref()),
                _ => self.ended = true,
            }
        }
    }

    /// An event whose blank line has arrived, taken from the buffer.
    fn take_event(&mut self) -> Option<Event> {
        loop {
            let text = std::str::from_utf8(&self.buffer).ok()?;
            let normalized_end = ["\n\n", "\r\n\r\n", "\r\r"]
                .iter()
                .filter_map(|sep| text.find(sep).map(|at| (at, sep.len())))
                .min();
            let (at, len) = normalized_end?;
            let block = text[..at].to_owned();
            self.buffer.drain(..at + len);
            if let Some(event) = parse_block(&block) {
                return Some(event);
            }
        }
    }
}

/// An event block's `event:` and `data:` lines; `None` for a block of
/// comments only (a keep-alive).
fn parse_block(block: &str) -> Option<Event> {
    let mut kind = None;
    let mut data: Option<String> = None;
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => kind = Some(value.to_owned()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    if kind.is_none() && data.is_none() {
        return None;
    }
    Some(Event {
        kind: kind.unwrap_or_else(|| "message".to_owned()),
        data: data.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&str]) -> Vec<Event> {
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(c.as_bytes().to_vec()))
                .collect::<Vec<_>>(),
        );
        let mut events = Events::new(stream);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut out = Vec::new();
            while let Some(e) = events.next_event().await {
                out.push(e);
            }
            out
        })
    }

    #[test]
    fn events_split_across_chunks_and_keep_alives_are_read_as_the_server_meant() {
        let got = events_of(&[
            ": ping\n\nevent: endpoint\r\ndata: /messages/?session_id=1",
            "\r\n\r\nevent: message\ndata: {\"a\":\n",
            "data: 1}\n\ndata: bare\n\n",
        ]);
        assert_eq!(
            got,
            vec![
                Event {
                    kind: "endpoint".into(),
                    data: "/messages/?session_id=1".into()
                },
                Event {
                    kind: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
                Event {
                    kind: "message".into(),
                    data: "bare".into()
                },
            ]
        );
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_not_made_up() {
        assert_eq!(events_of(&["event: message\ndata: {\"half\""]), vec![]);
    }
}
