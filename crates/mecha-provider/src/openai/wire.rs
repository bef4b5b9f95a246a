//! The chat format's history JSON, kept from one request to the next (as
//! `wire_cache.rs` does for Anthropic's). One mecha message may become
//! several chat messages, and a user message joins the user message right
//! before it, so what is kept is the JSON of every chat message that can
//! no longer change, and the last one while it is a user message that the
//! next mecha message may still join. After each mecha message the cache
//! marks where that stood, to go back to on a cut.

use std::sync::{Mutex, PoisonError};

use mecha_core::{Era, Message};
use serde_json::Value;

use super::memory::ReasoningField;
use super::request::push_message;
use crate::wire_cache::Known;

#[derive(Debug, Default)]
pub(crate) struct ChatCache {
    last: Mutex<Chat>,
}

#[derive(Debug, Default)]
struct Chat {
    known: Known,
    /// The reasoning field the JSON was made with: the server's choice,
    /// learnt from its replies, can still change.
    field: Option<ReasoningField>,
    /// The chat messages that can no longer change, joined by commas.
    done: String,
    /// The last chat message, while it is a user message.
    open: Option<Value>,
    /// After each mecha message: how long `done` was, and `open`.
    marks: Vec<(usize, Option<Value>)>,
}

impl ChatCache {
    /// The chat messages of `messages`, written to `out` with commas
    /// between them (and one before them when `out` holds a message).
    pub(crate) fn write(
        &self,
        messages: &[Message],
        era: Option<Era>,
        field: ReasoningField,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let mut chat = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = match chat.field {
            Some(was) if was == field => chat.known.unchanged(messages, era),
            _ => 0,
        };
        chat.truncate(kept);
        chat.field = Some(field);
        for message in &messages[kept..] {
            chat.push(message, field)?;
        }
        chat.known.now_in(era);
        let separate = |out: &mut Vec<u8>| {
            if out.last().is_some_and(|&b| b != b'[') {
                out.push(b',');
            }
        };
        if !chat.done.is_empty() {
            separate(out);
            out.extend_from_slice(chat.done.as_bytes());
        }
        if let Some(open) = &chat.open {
            separate(out);
            serde_json::to_writer(&mut *out, open)?;
        }
        Ok(())
    }
}

impl Chat {
    fn truncate(&mut self, len: usize) {
        let (done, open) = match len.checked_sub(1).and_then(|at| self.marks.get(at)) {
            Some((done, open)) => (*done, open.clone()),
            None => (0, None),
        };
        self.done.truncate(done);
        self.open = open;
        self.marks.truncate(len);
        self.known.truncate(len);
    }

    fn push(&mut self, message: &Message, field: ReasoningField) -> serde_json::Result<()> {
        let mut chat: Vec<Value> = self.open.take().into_iter().collect();
        push_message(&mut chat, message, field);
        if chat.last().is_some_and(|m| m["role"] == "user") {
            self.open = chat.pop();
        }
        for finished in &chat {
            if !self.done.is_empty() {
                self.done.push(',');
            }
            self.done.push_str(&serde_json::to_string(finished)?);
        }
        self.marks.push((self.done.len(), self.open.clone()));
        self.known.push(message);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::request::{body, encoded};
    use super::*;
    use crate::Request;
    use mecha_core::{Block, History, Image, Role, ToolCall, ToolDefinition};
    use serde_json::json;

    fn call(n: usize) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: format!("step {n}"),
                    signature: None,
                },
                Block::ToolUse(ToolCall {
                    id: format!("call_{n}"),
                    name: "fs_read".into(),
                    input: json!({"path": format!("f{n}")}),
                    input_error: None,
                }),
            ],
        }
    }

    fn result(n: usize, images: usize) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: format!("call_{n}"),
                content: format!("\"quoted\" contents {n}\n"),
                is_error: n.is_multiple_of(3),
                images: (0..images)
                    .map(|_| Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn encoded_bodies_are_the_body_byte_for_byte_as_the_history_changes() {
        let tools = [ToolDefinition {
            name: "fs_read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        let cache = ChatCache::default();
        let sent = std::cell::Cell::new(0);
        // Every other request comes with the history's era, the others
        // with none; the reasoning field changes once midway.
        let check = |history: &History, field: ReasoningField| {
            sent.set(sent.get() + 1);
            let mut request = Request::of_history("be brief", &tools, history);
            if sent.get() % 2 == 0 {
                request.era = None;
            }
            let expected = serde_json::to_vec(&body("m", None, &request, field)).unwrap();
            let got = encoded("m", None, &request, field, &cache).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(expected).unwrap(),
                "request {}",
                sent.get()
            );
        };
        let field = ReasoningField::Reasoning;
        let mut history = History::new(vec![Message::user_text("start")]);
        check(&history, field);
        // Two user messages in a row are joined into one chat message.
        history.push(Message::user_text("and also"));
        check(&history, field);
        for n in 0..5 {
            history.push(call(n));
            check(&history, field);
            history.push(result(n, n % 2));
            check(&history, field);
        }
        history.push(Message::user_text("a note after the results"));
        check(&history, field);
        // A turn that said nothing is not sent, so what follows it joins
        // the user message before it.
        history.push(Message {
            role: Role::Assistant,
            content: Vec::new(),
        });
        history.push(Message::user_text("still there?"));
        check(&history, field);
        check(&history, ReasoningField::ReasoningContent);
        history.truncate(3);
        check(&history, field);
        history.push(result(7, 1));
        check(&history, field);
        history.edit()[0] = Message::user_text("a summary instead");
        check(&history, field);
        history.replace(Vec::new());
        check(&history, field);
        history.push(Message::user_text("fresh"));
        check(&history, field);
    }
}
