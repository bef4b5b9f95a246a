//! Model APIs behind one [`Provider`] trait.
//!
//! A provider turns mecha's conversation ([`mecha_core::Message`]) into one
//! API request, streams the answer back (text as it arrives), and returns
//! the assistant message with its stop reason and token usage. It does not
//! run tools or loop; that is the agent's job.

use async_trait::async_trait;
use mecha_core::{Message, StopReason, ToolDefinition, Usage};

/// One request to the model.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The system prompt. Part of the cached prefix, so it must not change
    /// from turn to turn.
    pub system: &'a str,
    /// The tools, already sorted by name (the front of the cached prefix).
    pub tools: &'a [ToolDefinition],
    pub messages: &'a [Message],
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The assistant message: text and tool calls, in order.
    pub message: Message,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

/// What went wrong talking to the model. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// No provider is configured, or the configuration is incomplete.
    #[error("{0}")]
    NotConfigured(String),
    /// The API refused the credentials (401/403).
    #[error("{0}")]
    Auth(String),
    /// The API answered with an error that retrying will not fix.
    #[error("{0}")]
    Api(String),
    /// Retries ran out on 429, 5xx or overloaded.
    #[error("{0}")]
    Exhausted(String),
    /// The connection failed, timed out, or the stream was cut or malformed.
    #[error("{0}")]
    Transport(String),
}

/// A model API. The loop holds it as `Arc<dyn Provider>` and never learns
/// which one it is.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short label for messages: kind, model and endpoint.
    fn describe(&self) -> String;

    /// The model's context window in tokens, if known.
    fn context_window(&self) -> Option<u64>;

    /// Sends one request and streams the answer; `on_text` receives text as
    /// it arrives.
    async fn complete(
        &self,
        request: Request<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Response, ProviderError>;
}
