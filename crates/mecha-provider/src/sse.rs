//! Server-sent events from a response body, with an idle timeout.
//!
//! The SSE framing itself is `eventsource-stream`'s; this adds what a model
//! stream needs on top: a silence limit so a stalled stream is an error and
//! never a hang, and errors that say what happened.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use crate::http::{Attempt, HttpCore, HttpOptions, seconds, truncate};
use crate::{ProviderError, Response, StreamSink};
use mecha_core::error_chain;

/// How long to wait for the body's end after the answer is complete.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The event stream of one response.
pub(crate) struct SseReader {
    events: Events,
    idle: Duration,
    /// The key to raise, and where it is set.
    idle_hint: String,
    api: &'static str,
}

impl SseReader {
    pub fn new(response: reqwest::Response, options: &HttpOptions, api: &'static str) -> Self {
        Self {
            events: Box::pin(with_error_fields(response.bytes_stream()).eventsource()),
            idle: options.idle_timeout,
            idle_hint: options.idle_timeout_hint.clone(),
            api,
        }
    }

    /// The next event; `None` when the body ended.
    pub async fn next(&mut self) -> Result<Option<Event>, ProviderError> {
        match tokio::time::timeout(self.idle, self.events.next()).await {
            Err(_) => Err(ProviderError::Transport(format!(
                "the model's stream stalled: {} sent nothing for {} (idle timeout); the server \
                 may be overloaded or the connection silently dropped, try again or raise {}",
                self.api,
                seconds(self.idle),
                self.idle_hint
            ))),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(e)))) => {
                Err(ProviderError::Transport(format!(
                    "the model's stream ended early: the connection to {} failed mid-answer ({}); \
                     try again",
                    self.api,
                    error_chain(&e)
                )))
            }
            Ok(Some(Err(e))) => Err(ProviderError::Transport(format!(
                "{} sent a malformed event stream: {e}",
                self.api
            ))),
        }
    }

    /// Reads what is left after the final event, so the connection goes back
    /// to the pool for the next request instead of being dropped half-read.
    /// Bounded in events and time: a server that keeps the body open after
    /// the answer costs the keep-alive, never the user's wait.
    pub async fn drain(&mut self) {
        let drain = async {
            for _ in 0..16 {
                match self.events.next().await {
                    Some(Ok(event)) => {
                        tracing::debug!(event = %event.event, "ignoring an event after the end of the answer");
                    }
                    Some(Err(_)) | None => return,
                }
            }
        };
        if tokio::time::timeout(DRAIN_LIMIT, drain).await.is_err() {
            tracing::debug!("the stream stayed open after the answer; dropping the connection");
        }
    }
}

/// The event name an `error:` field is delivered under. Older llama.cpp
/// servers report a failed stream as a line `error: {"code":500,
/// "message":..,"type":..}` (then `data: [DONE]`); the SSE rules drop a
/// field they do not know, so its message would be lost and the stream
/// would only seem to end early.
pub(crate) const ERROR_FIELD_EVENT: &str = "mecha-error-field";

/// The body with each `error:` line made an event of its own, named
/// [`ERROR_FIELD_EVENT`], whose data is the field's value. Every other
/// byte passes through unchanged.
fn with_error_fields<S, B, E>(body: S) -> impl Stream<Item = Result<Vec<u8>, E>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let mut fields = ErrorFields::default();
    body.map(Some)
        .chain(futures::stream::once(async { None }))
        .map(move |item| match item {
            Some(Ok(bytes)) => Ok(fields.feed(bytes.as_ref())),
            Some(Err(e)) => Err(e),
            None => Ok(fields.finish()),
        })
}

/// Lines of a body as they complete; the unfinished one waits for its end
/// (the SSE parser could not use it before then either).
#[derive(Debug, Default)]
struct ErrorFields {
    line: Vec<u8>,
}

impl ErrorFields {
    fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + self.line.len());
        for &byte in bytes {
            self.line.push(byte);
            if byte == b'\n' {
                self.flush_into(&mut out);
            }
        }
        out
    }

    /// The rest at the end of the body. An `error:` line the server did not
    /// end with a blank line is still reported.
    fn finish(&mut self) -> Vec<u8> {
        if self.line.starts_with(b"error:") {
            self.line.extend_from_slice(b"\n\n");
        }
        let mut out = Vec::new();
        self.flush_into(&mut out);
        out
    }

    fn flush_into(&mut self, out: &mut Vec<u8>) {
        match self.line.strip_prefix(b"error:") {
            Some(value) => {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                out.extend_from_slice(b"event: ");
                out.extend_from_slice(ERROR_FIELD_EVENT.as_bytes());
                out.extend_from_slice(b"\ndata: ");
                // With the line's own end.
                out.extend_from_slice(value);
            }
            None => out.extend_from_slice(&self.line),
        }
        self.line.clear();
    }
}

/// The error for an event whose data is not what the API documents.
pub(crate) fn malformed(api: &str, event: &Event, error: &serde_json::Error) -> ProviderError {
    // Unnamed events (all of OpenAI's) come out of the parser as "message".
    let what = if event.event == "message" {
        "stream chunk".to_owned()
    } else {
        format!("`{}` event", event.event)
    };
    ProviderError::Transport(format!(
        "{api} sent a malformed {what} ({error}): {}",
        truncate(&event.data, 300)
    ))
}

/// Whether a stream has said all it will say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Done,
}

/// One wire format's reading of its event stream. The retrying exchange in
/// [`HttpCore::exchange`] drives it, so both APIs share one loop.
pub(crate) trait StreamDecoder: Default + Send {
    /// Takes one event; text and thinking go to `on_stream` as they arrive.
    fn handle(&mut self, event: &Event, on_stream: &mut StreamSink<'_>) -> Result<Flow, Attempt>;
    /// The answer, once the stream said it was done.
    fn finish(self) -> Response;
    /// The answer when the body ended before the final event: an error,
    /// unless what came is already whole.
    fn at_end_of_body(self) -> Result<Response, ProviderError>;
}

impl HttpCore {
    /// Sends `body` and decodes the streamed answer, retrying what the API
    /// says is worth retrying (never once content has streamed).
    pub async fn exchange<D: StreamDecoder>(
        &self,
        body: Bytes,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        self.exchange_with(body, on_stream, D::default).await
    }

    /// [`Self::exchange`] with each attempt's decoder made by `decoder`,
    /// for a decoder that shares state with its provider.
    pub async fn exchange_with<D: StreamDecoder>(
        &self,
        body: Bytes,
        on_stream: &mut StreamSink<'_>,
        decoder: impl Fn() -> D + Send + Sync,
    ) -> Result<Response, ProviderError> {
        let mut retries = self.retries();
        loop {
            let began = std::time::Instant::now();
            let attempt = match self.post(body.clone()).await {
                Ok(response) => self.decode(response, on_stream, decoder()).await,
                Err(e) => Err(e),
            };
            tracing::debug!(
                url = %self.url(),
                bytes = body.len(),
                elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
                ok = attempt.is_ok(),
                "model request"
            );
            match attempt {
                Ok(response) => return Ok(response),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry { reason, after }) => {
                    retries.wait(reason, after, on_stream).await?;
                }
                Err(Attempt::Refused { reason }) => {
                    retries.wait_refused(self.url(), reason, on_stream).await?;
                }
            }
        }
    }

    async fn decode<D: StreamDecoder>(
        &self,
        response: reqwest::Response,
        on_stream: &mut StreamSink<'_>,
        mut state: D,
    ) -> Result<Response, Attempt> {
        let mut events = SseReader::new(response, &self.options, self.api);
        while let Some(event) = events.next().await? {
            if state.handle(&event, on_stream)? == Flow::Done {
                // Reading the rest lets the connection be reused.
                events.drain().await;
                return Ok(state.finish());
            }
        }
        Ok(state.at_end_of_body()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(chunks: &[&str]) -> String {
        let mut fields = ErrorFields::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(fields.feed(chunk.as_bytes()));
        }
        out.extend(fields.finish());
        String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn error_lines_become_events_split_anywhere() {
        let body =
            "data: {\"a\":1}\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\ndata: [DONE]\n\n";
        let expected = format!(
            "data: {{\"a\":1}}\n\nevent: {ERROR_FIELD_EVENT}\ndata: {{\"code\":500,\"message\":\"boom\"}}\n\ndata: [DONE]\n\n"
        );
        assert_eq!(rewrite(&[body]), expected);
        // Cut mid-line, even inside the field name.
        let (a, b) = body.split_at(20);
        assert_eq!(rewrite(&[a, b]), expected);
        let each: Vec<String> = body.chars().map(String::from).collect();
        let each: Vec<&str> = each.iter().map(String::as_str).collect();
        assert_eq!(rewrite(&each), expected);
    }

    #[test]
    fn other_lines_pass_unchanged_and_a_last_error_line_is_ended() {
        let body = "event: message_start\r\ndata: {}\r\n\r\n: comment\ndata: errors: none\n";
        assert_eq!(rewrite(&[body]), body);
        assert_eq!(
            rewrite(&["error: {}"]),
            format!("event: {ERROR_FIELD_EVENT}\ndata: {{}}\n\n")
        );
        // A cut stream stays cut: its partial line is not made an event.
        assert_eq!(rewrite(&["data: {\"par"]), "data: {\"par");
    }
}
