//! `todo`: the model's own plan, as a list it rewrites as it goes.
//!
//! The current list is echoed at the end of every tool result of the run
//! (through [`Tool::echo`]), so the model re-reads its plan without anyone
//! re-prompting it, and it crosses a compaction as it stands (through
//! [`Tool::carried_state`]). A session saves the items and a resumed one
//! takes them back ([`Tool::saved_state`], [`Tool::restore_state`]).

use std::sync::Mutex;

use async_trait::async_trait;
use mecha_core::{Capabilities, MAX_ECHO_BYTES, Tool, ToolCtx, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Done,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Item {
    content: String,
    status: Status,
}

/// A call's input, and the saved state: one shape, so what a session saved
/// is checked exactly as a call would be.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Input {
    items: Vec<Item>,
}

/// Why a list was not taken.
enum Invalid {
    /// Not the shape the schema gives.
    Shape(serde_json::Error),
    /// Rendered, it would be this many bytes: over the echo's limit.
    TooLong(usize),
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
    /// Checks a list: the schema's shape, and short enough to echo.
    fn parse(value: Value) -> Result<Vec<Item>, Invalid> {
        let items = serde_json::from_value::<Input>(value)
            .map_err(Invalid::Shape)?
            .items;
        match Self::render(&items).len() {
            rendered if rendered > MAX_RENDERED_BYTES => Err(Invalid::TooLong(rendered)),
            _ => Ok(items),
        }
    }

    fn set(&self, new: Vec<Item>) -> anyhow::Result<()> {
        match self.items.lock() {
            Ok(mut items) => *items = new,
            Err(_) => anyhow::bail!("the todo list's lock was poisoned by a panic"),
        }
        Ok(())
    }

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

    fn saved_state(&self) -> Option<Value> {
        let items = self.items.lock().ok()?;
        if items.is_empty() {
            return None;
        }
        serde_json::to_value(Input {
            items: items.clone(),
        })
        .ok()
    }

    /// A malformed list leaves the current one as it is: a resumed run
    /// without its plan is better than one with a plan it cannot show.
    fn restore_state(&self, state: Value) -> Result<(), String> {
        let items = Self::parse(state).map_err(|why| match why {
            Invalid::Shape(e) => format!("the saved todo list is malformed: {e}"),
            Invalid::TooLong(rendered) => format!(
                "the saved todo list is {rendered} bytes, over the {MAX_RENDERED_BYTES} a list \
                 may take"
            ),
        })?;
        self.set(items).map_err(|e| e.to_string())
    }

    async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let items = match Self::parse(input) {
            Ok(items) => items,
            Err(Invalid::Shape(e)) => {
                return Ok(ToolOutput::refusal(format!(
                    "invalid todo list: {e}; send {{\"items\": [{{\"content\": \"...\", \"status\": \"pending\"}}]}}"
                )));
            }
            Err(Invalid::TooLong(rendered)) => {
                return Ok(ToolOutput::refusal(format!(
                    "the todo list is {rendered} bytes, and it is repeated after every tool result, \
                     where each copy takes room from that turn's output budget; keep it under \
                     {MAX_RENDERED_BYTES} bytes with fewer, shorter items"
                )));
            }
        };
        let done = items.iter().filter(|i| i.status == Status::Done).count();
        let total = items.len();
        self.set(items)?;
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

    #[tokio::test]
    async fn the_list_survives_a_save_and_a_restore_in_a_fresh_run() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 4096).unwrap();
        let first = Todo::default();
        assert_eq!(first.saved_state(), None, "an empty list saves nothing");
        let items = json!({"items": [
            {"content": "read the code", "status": "done"},
            {"content": "fix the bug", "status": "in_progress"},
        ]});
        first.call(items.clone(), &ctx).await.unwrap();
        let saved = first.saved_state().unwrap();
        assert_eq!(saved, items);
        let resumed = Todo::default();
        resumed.restore_state(saved).unwrap();
        let shown = "Current todo list:\n[x] read the code\n[>] fix the bug";
        assert_eq!(resumed.echo().as_deref(), Some(shown));
        assert_eq!(resumed.carried_state().as_deref(), Some(shown));
    }

    #[tokio::test]
    async fn a_malformed_saved_list_is_refused_and_the_list_stays() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 4096).unwrap();
        let todo = Todo::default();
        let items = json!({"items": [{"content": "keep me", "status": "pending"}]});
        todo.call(items, &ctx).await.unwrap();
        let before = todo.echo();
        let long = "x".repeat(MAX_RENDERED_BYTES);
        for (bad, says) in [
            (json!([{"content": "a", "status": "pending"}]), "malformed"),
            (
                json!({"items": [{"content": "a", "status": "half"}]}),
                "unknown variant `half`",
            ),
            (
                json!({"items": [{"content": "a"}]}),
                "missing field `status`",
            ),
            (json!({"items": [], "extra": 1}), "unknown field `extra`"),
            (
                json!({"items": [{"content": long, "status": "pending"}]}),
                "bytes, over the 2000",
            ),
        ] {
            let err = todo.restore_state(bad).unwrap_err();
            assert!(err.contains(says), "{says:?} in {err}");
            assert!(err.starts_with("the saved todo list"), "{err}");
            assert_eq!(todo.echo(), before, "the list stays as it was");
        }
    }
}
