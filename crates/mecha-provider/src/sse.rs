//! Server-sent events from a response body, with an idle timeout.
//!
//! The SSE framing itself is `eventsource-stream`'s; this adds what a model
//! stream needs on top: a silence limit so a stalled stream is an error and
//! never a hang, and errors that say what happened.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use crate::http::{Attempt, HttpCore, seconds, truncate};
use crate::{ProviderError, Response, StreamSink};
use mecha_core::error_chain;

/// How long to wait for the body's end after the answer is complete.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The event stream of one response.
pub(crate) struct SseReader {
    events: Events,
    idle: Duration,
    api: &'static str,
}

impl SseReader {
    pub fn new(response: reqwest::Response, idle: Duration, api: &'static str) -> Self {
        Self {
            events: Box::pin(response.bytes_stream().eventsource()),
            idle,
            api,
        }
    }

    /// The next event; `None` when the body ended.
    pub async fn next(&mut self) -> Result<Option<Event>, ProviderError> {
        match tokio::time::timeout(self.idle, self.events.next()).await {
            Err(_) => Err(ProviderError::Transport(format!(
                "the model's stream stalled: {} sent nothing for {} (idle timeout); the server \
                 may be overloaded or the connection silently dropped, try again or raise \
                 idle_timeout_secs",
                self.api,
                seconds(self.idle)
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
    /// Takes one event; text goes to `on_stream` as it arrives.
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
        body: &[u8],
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let mut retries = self.retries();
        loop {
            let attempt = match self.post(body).await {
                Ok(response) => self.decode::<D>(response, on_stream).await,
                Err(e) => Err(e),
            };
            match attempt {
                Ok(response) => return Ok(response),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry { reason, after }) => retries.wait(reason, after).await?,
            }
        }
    }

    async fn decode<D: StreamDecoder>(
        &self,
        response: reqwest::Response,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, Attempt> {
        let mut events = SseReader::new(response, self.options.idle_timeout, self.api);
        let mut state = D::default();
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
