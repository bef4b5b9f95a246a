//! A provider that plays a [`Script`] offline: each request gets the next
//! turn. For tests, demos and replaying a run without a model.

use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use mecha_core::{Block, Message, Role, ToolCall, Usage};

use crate::script::{Script, ScriptTurn};
use crate::tool_args::parse_arguments;
use crate::{Provider, ProviderError, Request, Response, StreamSink, Streamed};

/// Plays a script, one turn per `complete` call.
#[derive(Debug)]
pub struct ScriptedProvider {
    script: Script,
    source: Option<PathBuf>,
    context_window: Option<u64>,
    /// How many turns were played. A plain mutex: never held across await.
    played: Mutex<usize>,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        Self {
            script,
            source: None,
            context_window: None,
            played: Mutex::new(0),
        }
    }

    /// Loads the script from a file, which is named in later errors.
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self, ProviderError> {
        let path = path.into();
        let script = Script::load(&path)?;
        Ok(Self {
            source: Some(path),
            ..Self::new(script)
        })
    }

    pub fn with_context_window(mut self, tokens: Option<u64>) -> Self {
        self.context_window = tokens;
        self
    }

    /// The next turn and its number (from 1).
    fn next_turn(&self) -> Result<(usize, ScriptTurn), ProviderError> {
        let mut played = self.played.lock().unwrap_or_else(|p| p.into_inner());
        let Some(turn) = self.script.turns.get(*played) else {
            let from = self
                .source
                .as_ref()
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default();
            return Err(ProviderError::Api(format!(
                "the model script{from} has {} turns and all were played; the run asked for \
                 turn {}. Add turns to the script or end the run sooner",
                self.script.turns.len(),
                *played + 1
            )));
        };
        *played += 1;
        Ok((*played, turn.clone()))
    }
}

/// The response a turn stands for, shared with nothing else so the scripted
/// provider behaves like the HTTP ones after their parsing.
fn response(number: usize, turn: &ScriptTurn) -> Response {
    let mut content = Vec::new();
    if let Some(thinking) = &turn.thinking {
        content.push(Block::Thinking {
            thinking: thinking.clone(),
            signature: None,
        });
    }
    if let Some(data) = &turn.redacted_thinking {
        content.push(Block::RedactedThinking { data: data.clone() });
    }
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        content.push(Block::Text { text: text.clone() });
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let (input, input_error) = parse_arguments(&call.arguments_text());
        content.push(Block::ToolUse(ToolCall {
            id: call.id_or(number, i + 1),
            name: call.name.clone(),
            input,
            input_error,
        }));
    }
    let usage = turn
        .usage
        .map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
        })
        .unwrap_or_default();
    Response {
        message: Message {
            role: Role::Assistant,
            content,
        },
        stop_reason: turn.effective_stop_reason(),
        stop_detail: turn.stop_detail.clone(),
        usage,
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn describe(&self) -> String {
        match &self.source {
            Some(path) => format!("scripted ({})", path.display()),
            None => "scripted".to_owned(),
        }
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    async fn complete(
        &self,
        _request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let (number, turn) = self.next_turn()?;
        let response = response(number, &turn);
        for block in &response.message.content {
            match block {
                Block::Thinking { thinking, .. } => on_stream(Streamed::Thinking(thinking)),
                Block::RedactedThinking { .. } => on_stream(Streamed::RedactedThinking),
                Block::Text { text } => on_stream(Streamed::Text(text)),
                Block::ToolUse(_) | Block::ToolResult { .. } => {}
            }
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ScriptToolCall;
    use mecha_core::StopReason;
    use serde_json::json;

    fn request() -> Request<'static> {
        Request {
            system: "",
            tools: &[],
            messages: &[],
            era: None,
        }
    }

    #[tokio::test]
    async fn plays_turns_in_order_then_fails() {
        let provider = ScriptedProvider::new(Script {
            turns: vec![
                ScriptTurn::calls(vec![
                    ScriptToolCall::new("fs_read", json!({"path": "a"})),
                    ScriptToolCall::raw("fs_read", "{bad").with_id("mine"),
                ])
                .with_text("Looking."),
                ScriptTurn::text("Done."),
            ],
        });
        let mut seen = String::new();
        let first = provider
            .complete(request(), &mut |piece: Streamed<'_>| {
                if let Streamed::Text(t) = piece {
                    seen.push_str(t);
                }
            })
            .await;
        let first = first.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(seen, "Looking.");
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        let calls: Vec<_> = first.message.tool_calls().cloned().collect();
        assert_eq!(calls[0].id, "call_1_1");
        assert_eq!(calls[0].input, json!({"path": "a"}));
        assert_eq!(calls[1].id, "mine");
        assert!(calls[1].input_error.is_some());

        let second = provider.complete(request(), &mut |_| {}).await;
        assert_eq!(
            second.map(|r| r.stop_reason).ok(),
            Some(StopReason::EndTurn)
        );

        let third = provider.complete(request(), &mut |_| {}).await;
        match third {
            Err(ProviderError::Api(m)) => assert!(m.contains("has 2 turns"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
