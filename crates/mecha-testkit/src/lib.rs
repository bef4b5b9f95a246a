//! Test support for mecha: [`fixture_mcp`] finds (building if needed) the
//! misbehaving fixture MCP server, and [`MockModel`] is a local HTTP server that answers
//! like the Anthropic Messages API (`/v1/messages`) and the OpenAI Chat
//! Completions API (`/v1/chat/completions`), streaming scripted turns as
//! SSE the way the real APIs do, plus the faults a real API produces:
//! error statuses with `retry-after`, cut streams, malformed events,
//! stalls, refused keys.
//!
//! Tests start it in-process on `127.0.0.1:0` and point a provider (or the
//! `mecha` binary, through its config) at [`MockModel::base_url`]. It
//! deliberately does not model anything a provider does not see on the
//! wire: no tokenizer, no real usage accounting, no prompt caching.

mod fixture;
mod mock_model;
mod render;
mod reply;

pub use fixture::fixture_mcp;
pub use mock_model::{MockModel, RecordedRequest};
pub use reply::MockReply;

/// The script types the mock plays, re-exported so tests need one import.
pub use mecha_provider::script::{Script, ScriptToolCall, ScriptTurn, ScriptUsage};
