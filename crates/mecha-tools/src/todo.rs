//! `todo`: the model's own plan, as a list it rewrites as it goes.
//!
//! The current list is echoed at the end of every tool result of the run
//! (through [`Tool::echo`]), so the model re-reads its plan without anyone
//! re-prompting it, and it crosses a compaction as it stands (through
//! [`Tool::carried_state`]).

use std::sync::Mutex;

use async_trait::async_trait;
use mecha_core::{Capabilities, MAX_ECHO_BYTES, Tool, ToolCtx, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Done,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    content: String,
    status: Status,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    items: Vec<Item>,
}

/// The most the list may take when shown: it follows every tool result,
/// and the turn budget pays for it once per call, so a long one leaves less
/// room for results and fewer calls per turn.
const MAX_RENDERED_BYTES: usize = MAX_ECHO_BYTES;

/// The list lives in the instance, so every run gets a fresh one.
#[derive(Default)]
pub struct Todo {
    items: Mutex<Vec<Item>>,
}

impl Todo {
    fn render(items: &[Item]) -> String {
        let mut out = String::from("Current todo list:");
        for item in items {
            let mark = match item.status {
                Status::Pending => "[ ]",
                Status::InProgress => "[>]",
                Status::Done => "[x]",
            };
            out.push_str(&format!("\n{mark} {}", item.content));
        }
        out
    }
}

#[async_trait]
impl Tool for Todo {
    fn name(&self) -> &str {
        "todo"
    }

    fn description(&self) -> &str {
        "Keep a plan as a todo list. Each call replaces the whole list, so send every item with \
         its status (pending, in_progress, done). The current list is shown after every tool \
         result. Use it for work with several steps; keep one item in_progress at a time."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["items"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    fn echo(&self) -> Option<String> {
        let items = self.items.lock().ok()?;
        (!items.is_empty()).then(|| Self::render(&items))
    }

    fn echo_limit(&self) -> usize {
        MAX_RENDERED_BYTES
    }

    /// The plan is how far the run has got: a summary would keep the goal
    /// and lose which steps are done, so the list crosses as it stands.
    fn carried_state(&self) -> Option<String> {
        self.echo()
    }

    async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let parsed: Input = match serde_json::from_value(input) {
            Ok(p) => p,
            Err(e) => {
                return Ok(ToolOutput::refusal(format!(
                    "invalid todo list: {e}; send {{\"items\": [{{\"content\": \"...\", \"status\": \"pending\"}}]}}"
                )));
            }
        };
        let rendered = Self::render(&parsed.items).len();
        if rendered > MAX_RENDERED_BYTES {
            return Ok(ToolOutput::refusal(format!(
                "the todo list is {rendered} bytes, and it is repeated after every tool result, \
                 where each copy takes room from that turn's output budget; keep it under \
                 {MAX_RENDERED_BYTES} bytes with fewer, shorter items"
            )));
        }
        let done = parsed
            .items
            .iter()
            .filter(|i| i.status == Status::Done)
            .count();
        let total = parsed.items.len();
        match self.items.lock() {
            Ok(mut items) => *items = parsed.items,
            Err(_) => anyhow::bail!("the todo list's lock was poisoned by a panic"),
        }
        Ok(ToolOutput::ok(format!(
            "todo list saved: {done} of {total} done"
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use mecha_core::{CarriedState, Registry};
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn the_list_crosses_a_compaction_as_it_stands_then() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 4096).unwrap();
        let todo = Arc::new(Todo::default());
        let mut registry = Registry::new();
        registry
            .register(Arc::clone(&todo) as Arc<dyn Tool>)
            .unwrap();
        assert_eq!(todo.carried_state(), None, "no list, nothing to carry");
        for status in ["in_progress", "done"] {
            let items = json!({"items": [{"content": "fix the bug", "status": status}]});
            todo.call(items, &ctx).await.unwrap();
        }
        let text = CarriedState::collect(&registry).unwrap().text();
        assert!(
            text.ends_with("## todo\n\nCurrent todo list:\n[x] fix the bug\n"),
            "{text}"
        );
    }
}
