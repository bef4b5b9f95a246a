//! Model APIs behind one [`Provider`] trait.
//!
//! A provider turns mecha's conversation ([`mecha_core::Message`]) into one
//! API request, streams the answer back (text as it arrives), and returns
//! the assistant message with its stop reason and token usage. It does not
//! run tools or loop; that is the agent's job.
//!
//! Providers: [`AnthropicProvider`] (Messages API), [`OpenAiProvider`]
//! (Chat Completions and the servers that copy it: ollama, vLLM, llama.cpp)
//! and [`ScriptedProvider`] (plays a [`Script`] offline). [`build`] picks and
//! configures one from the `[provider]` section and the environment.
//!
//! HTTP providers stream (SSE), keep one connection pool for the run, retry
//! 429/5xx/overloaded with backoff before any of the answer arrived, and
//! turn a stalled or cut stream into an error rather than a hang. They do
//! not count tokens themselves, trim history, or know which tools exist
//! beyond the definitions they are handed.

mod anthropic;
mod config;
mod http;
mod openai;
mod prices;
mod resolve;
pub mod script;
mod scripted;
mod sse;
mod tool_args;
mod wire_cache;

pub use anthropic::{
    ANTHROPIC_CONTEXT_WINDOW, AnthropicOptions, AnthropicProvider, DEFAULT_MAX_TOKENS,
    MIN_THINKING_BUDGET, Thinking,
};
pub use config::{
    CacheTtl, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_BASE_URL, Kind,
    ProviderSettings, build, build_with,
};
pub use http::HttpOptions;
pub use openai::{MaxTokensField, OpenAiOptions, OpenAiProvider};
pub use prices::{PRICES_AS_OF, Price, price_of};
pub use resolve::{Resolved, Source, Sourced, resolve};
pub use script::{Quirk, Script, ScriptToolCall, ScriptTurn, ScriptUsage};
pub use scripted::ScriptedProvider;

use async_trait::async_trait;
use mecha_core::{Era, History, Message, StopReason, ToolDefinition, Usage};

/// One request to the model.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The system prompt. Part of the cached prefix, so it must not change
    /// from turn to turn.
    pub system: &'a str,
    /// The tools, already sorted by name (the front of the cached prefix).
    pub tools: &'a [ToolDefinition],
    pub messages: &'a [Message],
    /// When `messages` are a [`mecha_core::History`]: its era. Messages an
    /// earlier request sent in the same era are unchanged at the front of
    /// these, so their encoding is reused without comparing them.
    pub era: Option<Era>,
}

impl<'a> Request<'a> {
    /// A request that sends `history`, with its era.
    pub fn of_history(system: &'a str, tools: &'a [ToolDefinition], history: &'a History) -> Self {
        Self {
            system,
            tools,
            messages: history,
            era: Some(history.era()),
        }
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The assistant message: text and tool calls, in order.
    pub message: Message,
    pub stop_reason: StopReason,
    /// What the API said about why it stopped, in words a person can read
    /// (Anthropic's refusal explanation, OpenAI's refusal text).
    pub stop_detail: Option<String>,
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

/// A piece of the answer as it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed<'a> {
    /// Text of the answer.
    Text(&'a str),
    /// Text of the model's reasoning, before or between its answer.
    Thinking(&'a str),
    /// The API sent reasoning it encrypted: there is nothing to show.
    RedactedThinking,
    /// The attempt failed in a way worth another try, and mecha waits
    /// before it: what failed and when the next attempt starts. What
    /// streamed before it streams again.
    Retrying(&'a str),
}

/// Receives the answer as it streams. A named alias because `async_trait`
/// would otherwise bind the borrowed text to one lifetime instead of every
/// lifetime.
pub type StreamSink<'a> = dyn FnMut(Streamed<'_>) + Send + 'a;

/// A model API. The loop holds it as `Arc<dyn Provider>` and never learns
/// which one it is.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short label for messages: kind, model and endpoint.
    fn describe(&self) -> String;

    /// The model's name as requests carry it, for reports (`None`: no
    /// model API behind it, as in a replay).
    fn model(&self) -> Option<&str> {
        None
    }

    /// The model's context window in tokens, if known.
    fn context_window(&self) -> Option<u64>;

    /// The `max_tokens` every request carries, configured or defaulted, if
    /// there is one: the reply's share of the window when the compaction
    /// threshold is derived. `None`: the request carries none, and the
    /// server decides.
    fn max_output_tokens(&self) -> Option<u64> {
        None
    }

    /// Whether the model can be sent images in tool results. A provider
    /// that cannot (or is configured not to) gets a placeholder instead,
    /// which says so; none is assumed to.
    fn accepts_images(&self) -> bool {
        false
    }

    /// Sends one request and streams the answer; `on_stream` receives text
    /// and thinking as they arrive.
    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError>;
}
