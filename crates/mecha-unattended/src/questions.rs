//! Parked questions: a delegated task asked its owner something and could
//! not wait. The question is kept with the turn it interrupted (the other
//! calls' results, which already ran) and what the task ran with, so that
//! `mecha questions answer` can hand the answer in as the call's result
//! and run the task on with the same tools and skills.

use std::path::PathBuf;

use chrono::Local;
use mecha_core::{Block, Message};
use serde::{Deserialize, Serialize};

use crate::UnattendedError;
use crate::files::{names, read, write_private};
use crate::trigger::written_time;

/// What a delegated task ran with, to run it on the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegation {
    /// The trigger that started it, if one did.
    #[serde(default)]
    pub trigger: Option<String>,
    /// `--tool` names (empty: the config's set).
    #[serde(default)]
    pub tools: Vec<String>,
    /// `--skill` names; with `no_skills`, none at all.
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub no_skills: bool,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub max_turns: Option<u32>,
}

/// One parked question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub session: String,
    pub workspace: PathBuf,
    /// When it was asked (RFC 3339, local).
    pub asked: String,
    pub question: String,
    /// The call that asked, whose result the answer becomes.
    pub call_id: String,
    /// The interrupted turn's results, the asking call's among them.
    pub results: Message,
    /// Which of those results came from outside the machine.
    #[serde(default)]
    pub external: Vec<String>,
    #[serde(default)]
    pub delegation: Delegation,
}

impl Question {
    /// The interrupted turn's results with `answer` as the asking call's.
    pub fn answered(&self, answer: &str) -> Message {
        let mut results = self.results.clone();
        for block in &mut results.content {
            if let Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } = block
                && *tool_use_id == self.call_id
            {
                *content = answer.to_owned();
                *is_error = false;
            }
        }
        results
    }
}

/// The folder of parked questions.
#[derive(Debug, Clone)]
pub struct QuestionStore {
    dir: PathBuf,
}

impl QuestionStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Parks `question` under a fresh id and the time now (whatever its
    /// `id` and `asked` said), and returns it as stored.
    pub fn park(&self, question: Question) -> Result<Question, UnattendedError> {
        let now = Local::now();
        let parked = Question {
            id: format!("q{}-{:04x}", now.format("%m%d%H%M"), fastrand::u16(..)),
            asked: written_time(&now),
            ..question
        };
        let text = serde_json::to_string_pretty(&parked).unwrap_or_default();
        write_private(&self.file(&parked.id), &text)?;
        Ok(parked)
    }

    /// Every parked question, oldest first.
    pub fn list(&self) -> Result<Vec<Question>, UnattendedError> {
        let mut all = Vec::new();
        for id in names(&self.dir, "json")? {
            all.push(self.load(&id)?);
        }
        all.sort_by(|a, b| a.asked.cmp(&b.asked).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    fn load(&self, id: &str) -> Result<Question, UnattendedError> {
        let path = self.file(id);
        let text = read(&path)?.ok_or_else(|| {
            UnattendedError::Usage(format!(
                "there is no parked question `{id}`; `mecha questions` lists them"
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| UnattendedError::Malformed {
            path,
            reason: e.to_string(),
        })
    }

    /// The question `id`, or the one question whose id starts with it.
    pub fn get(&self, id: &str) -> Result<Question, UnattendedError> {
        let ids = names(&self.dir, "json")?;
        if ids.iter().any(|known| known == id) {
            return self.load(id);
        }
        let matching: Vec<&String> = ids.iter().filter(|known| known.starts_with(id)).collect();
        match matching.as_slice() {
            [one] => self.load(one),
            [] => Err(UnattendedError::Usage(format!(
                "there is no parked question `{id}`; `mecha questions` lists them"
            ))),
            many => Err(UnattendedError::Usage(format!(
                "`{id}` starts {} question ids ({}); give more of it",
                many.len(),
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Removes an answered question.
    pub fn remove(&self, id: &str) -> Result<(), UnattendedError> {
        let path = self.file(id);
        std::fs::remove_file(&path).map_err(|source| UnattendedError::Io {
            what: "cannot remove",
            path,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mecha_core::Role;

    fn results() -> Message {
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "42 lines".into(),
                    is_error: false,
                    images: vec![],
                },
                Block::ToolResult {
                    tool_use_id: "call_2".into(),
                    content: "parked".into(),
                    is_error: false,
                    images: vec![],
                },
            ],
        }
    }

    #[test]
    fn a_parked_question_is_found_by_a_prefix_and_answered_in_its_call() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuestionStore::new(dir.path().join("questions"));
        let parked = store
            .park(Question {
                id: String::new(),
                session: "s1".into(),
                workspace: "/ws".into(),
                asked: String::new(),
                question: "which account?".into(),
                call_id: "call_2".into(),
                results: results(),
                external: vec![],
                delegation: Delegation::default(),
            })
            .unwrap();
        let found = store.get(&parked.id[..8]).unwrap();
        assert_eq!(found, parked);
        let answered = found.answered("the work one");
        let Block::ToolResult { content, .. } = &answered.content[1] else {
            panic!()
        };
        assert_eq!(content, "the work one");
        let Block::ToolResult { content, .. } = &answered.content[0] else {
            panic!()
        };
        assert_eq!(content, "42 lines");
        store.remove(&parked.id).unwrap();
        assert!(store.list().unwrap().is_empty());
        let err = store.get("q9").unwrap_err().to_string();
        assert!(err.contains("mecha questions"), "{err}");
    }
}
