//! The outbox: actions that would send something in the owner's name (an
//! email, a message, a post) are tools that stage instead of act. A call
//! is written to `$MECHA_HOME/outbox/` with the session that made it and
//! the taint the conversation held, and nothing happens until the owner
//! approves it with `mecha outbox approve`; a rejection is recorded, and
//! told to the session when it next runs.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Local;
use mecha_core::{Capabilities, Taint, Tool, ToolCtx, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::UnattendedError;
use crate::files::{names, read, write_private};
use crate::trigger::written_time;

/// One `[[outbox]]` action of the user's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxAction {
    /// The tool's name.
    pub name: String,
    /// What the model reads to decide to use it.
    pub description: String,
    /// The JSON Schema of the call's input.
    pub input: Value,
    /// The program and its arguments that perform the action once it is
    /// approved, the input on its stdin as JSON.
    pub command: Vec<String>,
}

impl OutboxAction {
    /// Whether the action can be offered: what is wrong with it otherwise.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        let good_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !good_name {
            return Err(format!(
                "[[outbox]] `{name}`: a name is 1 to 64 letters, digits, `_` and `-`, as tool \
                 names are"
            ));
        }
        if self.command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(format!(
                "[[outbox]] `{name}`: `command` is empty; give the program and its arguments, \
                 e.g. command = [\"/usr/local/bin/send-mail\"]"
            ));
        }
        if self.input.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "[[outbox]] `{name}`: `input` must be a JSON Schema of an object, e.g. input = \
                 {{ type = \"object\", properties = {{ to = {{ type = \"string\" }} }} }}"
            ));
        }
        Ok(())
    }
}

/// Where a staged item stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Decision {
    Staged,
    Approved {
        at: String,
        exit: Option<i32>,
    },
    Rejected {
        at: String,
        #[serde(default)]
        reason: Option<String>,
    },
}

/// One staged call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub action: String,
    pub command: Vec<String>,
    pub input: Value,
    /// The session that staged it (`None`: not saved).
    pub session: Option<String>,
    pub workspace: PathBuf,
    pub staged: String,
    /// What the conversation held when the call was made.
    pub taint: Taint,
    pub decision: Decision,
    /// The decision has been told to the session.
    #[serde(default)]
    pub told: bool,
}

impl Item {
    /// The taint at staging, as a sentence.
    pub fn staged_by(&self) -> &'static str {
        match (self.taint.private_data, self.taint.untrusted_input) {
            (true, true) => "staged by a conversation holding private data and untrusted content",
            (true, false) => "staged by a conversation holding private data",
            (false, true) => "staged by a conversation holding untrusted content",
            (false, false) => {
                "staged by a conversation holding neither private data nor untrusted content"
            }
        }
    }

    /// What the session is told of the decision when it next runs.
    pub fn told_line(&self) -> Option<String> {
        let what = format!(
            "outbox item {} (`{}`, staged {})",
            self.id, self.action, self.staged
        );
        match &self.decision {
            Decision::Staged => None,
            Decision::Approved { exit, .. } => Some(format!(
                "[The owner approved {what}; it ran{}.]",
                match exit {
                    Some(0) => String::new(),
                    Some(code) => format!(" and failed with exit code {code}"),
                    None => " and was killed".to_owned(),
                }
            )),
            Decision::Rejected { reason, .. } => Some(format!(
                "[The owner rejected {what}; it did not happen{}.]",
                reason
                    .as_deref()
                    .map(|r| format!(". Their reason: {r}"))
                    .unwrap_or_default()
            )),
        }
    }
}

/// The folder of staged items.
#[derive(Debug, Clone)]
pub struct OutboxStore {
    dir: PathBuf,
}

impl OutboxStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Writes `item` (its id and time given here) and returns it.
    pub fn stage(&self, item: Item) -> Result<Item, UnattendedError> {
        let now = Local::now();
        let item = Item {
            id: format!("o{}-{:04x}", now.format("%m%d%H%M"), fastrand::u16(..)),
            staged: written_time(&now),
            ..item
        };
        self.save(&item)?;
        Ok(item)
    }

    pub fn save(&self, item: &Item) -> Result<(), UnattendedError> {
        let text = serde_json::to_string_pretty(item).unwrap_or_default();
        write_private(&self.file(&item.id), &text)
    }

    /// Every item, oldest first.
    pub fn list(&self) -> Result<Vec<Item>, UnattendedError> {
        let mut all = Vec::new();
        for id in names(&self.dir, "json")? {
            all.push(self.load(&id)?);
        }
        all.sort_by(|a, b| a.staged.cmp(&b.staged).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    fn load(&self, id: &str) -> Result<Item, UnattendedError> {
        let path = self.file(id);
        let text = read(&path)?.ok_or_else(|| {
            UnattendedError::Usage(format!(
                "there is no outbox item `{id}`; `mecha outbox` lists them"
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| UnattendedError::Malformed {
            path,
            reason: e.to_string(),
        })
    }

    /// The item `id`, or the one whose id starts with it.
    pub fn get(&self, id: &str) -> Result<Item, UnattendedError> {
        let ids = names(&self.dir, "json")?;
        let matching: Vec<&String> = ids
            .iter()
            .filter(|known| *known == id || known.starts_with(id))
            .collect();
        match matching.as_slice() {
            [one] => self.load(one),
            _ if ids.iter().any(|known| known == id) => self.load(id),
            [] => Err(UnattendedError::Usage(format!(
                "there is no outbox item `{id}`; `mecha outbox` lists them"
            ))),
            many => Err(UnattendedError::Usage(format!(
                "`{id}` starts {} outbox ids; give more of it",
                many.len()
            ))),
        }
    }

    /// The decisions on `session`'s items not yet told to it, marked told.
    pub fn untold(&self, session: &str) -> Vec<String> {
        let Ok(items) = self.list() else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        for mut item in items {
            if item.told || item.session.as_deref() != Some(session) {
                continue;
            }
            if let Some(line) = item.told_line() {
                item.told = true;
                if self.save(&item).is_ok() {
                    lines.push(line);
                }
            }
        }
        lines
    }
}

/// An `[[outbox]]` action as a tool: a call stages an item and performs
/// nothing. It declares nothing (no data leaves by it); the gate lets it
/// through after validation and the hooks ([`Tool::stages_for_review`]).
#[derive(Debug)]
pub struct OutboxTool {
    action: OutboxAction,
    store: Arc<OutboxStore>,
    session: Option<String>,
}

impl OutboxTool {
    pub fn new(action: OutboxAction, store: Arc<OutboxStore>, session: Option<String>) -> Self {
        Self {
            action,
            store,
            session,
        }
    }
}

#[async_trait]
impl Tool for OutboxTool {
    fn name(&self) -> &str {
        &self.action.name
    }

    fn description(&self) -> &str {
        &self.action.description
    }

    fn input_schema(&self) -> Value {
        self.action.input.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn stages_for_review(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let item = Item {
            id: String::new(),
            action: self.action.name.clone(),
            command: self.action.command.clone(),
            input,
            session: self.session.clone(),
            workspace: ctx.workspace().to_owned(),
            staged: String::new(),
            taint: ctx.taint(),
            decision: Decision::Staged,
            told: false,
        };
        Ok(match self.store.stage(item) {
            Ok(item) => ToolOutput::ok(format!(
                "Staged as outbox item {} for the owner's review. It has NOT happened: nothing \
                 is sent until the owner approves it (`mecha outbox approve {}`), and they may \
                 reject it. Say in your answer what you staged and why.",
                item.id, item.id
            )),
            Err(e) => ToolOutput::refusal(format!(
                "`{}` could not be staged, so nothing happened: {e}",
                self.action.name
            )),
        })
    }
}
