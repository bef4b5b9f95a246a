//! What one provider remembers between its requests: the tool-call ids it
//! made up, and the field its server streams reasoning in.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The delta field a server streams its reasoning in, and reads it back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReasoningField {
    /// vLLM and ollama.
    Reasoning,
    /// llama.cpp and DeepSeek.
    ReasoningContent,
}

impl ReasoningField {
    pub fn name(self) -> &'static str {
        match self {
            ReasoningField::Reasoning => "reasoning",
            ReasoningField::ReasoningContent => "reasoning_content",
        }
    }
}

/// Shared by the provider and each of its streams.
#[derive(Debug)]
pub(crate) struct Memory {
    /// Random per provider, so ids made up by two runs of one conversation
    /// (a resumed chat) do not collide either.
    nonce: String,
    next_id: AtomicU64,
    /// 0 until a stream showed reasoning, then 1 + the field.
    reasoning_field: AtomicU8,
}

impl Default for Memory {
    fn default() -> Self {
        Self {
            nonce: std::iter::repeat_with(fastrand::alphanumeric)
                .take(10)
                .collect(),
            next_id: AtomicU64::new(1),
            reasoning_field: AtomicU8::new(0),
        }
    }
}

impl Memory {
    /// An id for a call the server sent without one. A tool result names
    /// its call by id, so an id must not repeat anywhere in the
    /// conversation: `call_0` on every turn would pair a result with the
    /// wrong call.
    pub fn new_call_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("call_{}_{n}", self.nonce)
    }

    pub fn saw_reasoning_in(&self, field: ReasoningField) {
        let code = match field {
            ReasoningField::Reasoning => 1,
            ReasoningField::ReasoningContent => 2,
        };
        self.reasoning_field.store(code, Ordering::Relaxed);
    }

    /// The field reasoning goes back in: the one the server streamed it in,
    /// else `reasoning` (what ollama and vLLM read).
    pub fn reasoning_field(&self) -> ReasoningField {
        match self.reasoning_field.load(Ordering::Relaxed) {
            2 => ReasoningField::ReasoningContent,
            _ => ReasoningField::Reasoning,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_never_repeat_within_or_across_providers() {
        let one = Memory::default();
        let two = Memory::default();
        let ids = [one.new_call_id(), one.new_call_id(), two.new_call_id()];
        assert_ne!(ids[0], ids[1]);
        assert_ne!(
            ids[0], ids[2],
            "two runs of a conversation made the same id"
        );
        assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");
    }

    #[test]
    fn reasoning_goes_back_in_the_field_it_came_in() {
        let memory = Memory::default();
        assert_eq!(memory.reasoning_field(), ReasoningField::Reasoning);
        memory.saw_reasoning_in(ReasoningField::ReasoningContent);
        assert_eq!(memory.reasoning_field(), ReasoningField::ReasoningContent);
        memory.saw_reasoning_in(ReasoningField::Reasoning);
        assert_eq!(memory.reasoning_field(), ReasoningField::Reasoning);
    }
}
