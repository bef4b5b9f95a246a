//! Tool calls put together from their streamed fragments.
//!
//! The documented stream keys fragments by `index`, the id and name on the
//! first. Servers differ: some leave out `index` and send each call whole,
//! some (ollama#15457, LiteLLM's ollama proxy) send every call at index 0
//! with its own id, some send `arguments` as a JSON object.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub(crate) struct CallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A string of JSON text, as documented, or the JSON value itself.
    #[serde(default)]
    arguments: Option<Value>,
}

/// A call as far as it has streamed.
#[derive(Debug, Default)]
pub(crate) struct PartialCall {
    /// Empty when the server sent none.
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The calls of one answer, in the order they started.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    calls: Vec<PartialCall>,
    /// Which call a wire index currently continues.
    by_index: HashMap<usize, usize>,
}

impl Calls {
    pub fn add(&mut self, delta: CallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let slot = match delta.index {
            Some(index) => match self.by_index.get(&index) {
                // A different id at an index that already has one is a new
                // call, not more of the old one.
                Some(&slot) if !self.is_other_call(slot, id.as_deref()) => slot,
                _ => {
                    let slot = self.start();
                    self.by_index.insert(index, slot);
                    slot
                }
            },
            // Without an index, a new id means a new call and no id means
            // more of the last one.
            None => match self.calls.len().checked_sub(1) {
                Some(last) if id.is_none() => last,
                _ => self.start(),
            },
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name {
                call.name.push_str(&name);
            }
            match function.arguments {
                Some(Value::String(text)) => call.arguments.push_str(&text),
                Some(Value::Null) | None => {}
                // A whole object (ollama's native shape) is its own JSON text.
                Some(value) => call.arguments.push_str(&value.to_string()),
            }
        }
    }

    fn is_other_call(&self, slot: usize, id: Option<&str>) -> bool {
        match (self.calls.get(slot), id) {
            (Some(call), Some(id)) => !call.id.is_empty() && call.id != id,
            _ => false,
        }
    }

    fn start(&mut self) -> usize {
        self.calls.push(PartialCall::default());
        self.calls.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn into_vec(self) -> Vec<PartialCall> {
        self.calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(deltas: &[&str]) -> Vec<PartialCall> {
        let mut calls = Calls::default();
        for d in deltas {
            calls.add(serde_json::from_str(d).unwrap_or_else(|e| panic!("{d}: {e}")));
        }
        calls.into_vec()
    }

    #[test]
    fn fragments_join_by_index() {
        let out = calls(&[
            r#"{"index":0,"id":"a","function":{"name":"fs_read","arguments":""}}"#,
            r#"{"index":1,"id":"b","function":{"name":"fs_list","arguments":"{}"}}"#,
            r#"{"index":0,"function":{"arguments":"{\"path\":"}}"#,
            // Some servers repeat the id on every fragment.
            r#"{"index":0,"id":"a","function":{"arguments":"\"x\"}"}}"#,
        ]);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].id.as_str(), out[0].name.as_str()), ("a", "fs_read"));
        assert_eq!(out[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(out[1].name, "fs_list");
    }

    #[test]
    fn a_new_id_at_a_used_index_is_a_new_call() {
        // ollama#15457: both calls at index 0, each whole, each its own id.
        let out = calls(&[
            r#"{"index":0,"id":"call_1","function":{"name":"fs_read","arguments":"{\"path\":\"a\"}"}}"#,
            r#"{"index":0,"id":"call_2","function":{"name":"fs_read","arguments":"{\"path\":\"b\"}"}}"#,
            r#"{"index":0,"function":{"arguments":""}}"#,
        ]);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].name, "fs_read");
        assert_eq!(out[1].name, "fs_read");
        assert_eq!(out[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(out[1].arguments, r#"{"path":"b"}"#);
        assert_eq!(out[1].id, "call_2");
    }

    #[test]
    fn arguments_as_an_object_are_used() {
        let out = calls(&[
            r#"{"index":0,"id":"a","function":{"name":"fs_read","arguments":{"path":"a"}}}"#,
            r#"{"index":1,"id":"b","function":{"name":"fs_list","arguments":null}}"#,
        ]);
        assert_eq!(out[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(out[1].arguments, "");
    }

    #[test]
    fn without_index_a_new_id_starts_a_call() {
        let out = calls(&[
            r#"{"id":"x1","function":{"name":"a","arguments":"{\"k\":1}"}}"#,
            r#"{"id":"x2","function":{"name":"b","arguments":"{nope"}}"#,
            r#"{"function":{"name":"c","arguments":""}}"#,
        ]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].name, "bc");
    }
}
