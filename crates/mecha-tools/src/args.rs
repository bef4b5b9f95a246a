//! Reading a tool's JSON input, with refusals the model can act on.

use mecha_core::{JailError, ToolOutput};
use serde_json::Value;

/// A path the jail refused. The text is wholly mecha's (the path the model
/// gave, where it resolves, the workspace root), so it is a refusal and adds
/// no taint.
pub(crate) fn jail_refusal(e: JailError) -> ToolOutput {
    ToolOutput::refusal(e.to_string())
}

/// A required string argument.
pub(crate) fn required_str<'a>(input: &'a Value, key: &str) -> Result<&'a str, ToolOutput> {
    match input.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolOutput::refusal(format!(
            "`{key}` must be a string, got {}",
            type_name(other)
        ))),
        None => Err(ToolOutput::refusal(format!(
            "missing required argument `{key}`"
        ))),
    }
}

/// An optional non-negative integer argument.
pub(crate) fn optional_u64(input: &Value, key: &str) -> Result<Option<u64>, ToolOutput> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ToolOutput::refusal(format!(
                "`{key}` must be a non-negative integer, got {}",
                type_name(v)
            ))
        }),
    }
}

/// An optional string argument.
pub(crate) fn optional_str<'a>(input: &'a Value, key: &str) -> Result<Option<&'a str>, ToolOutput> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolOutput::refusal(format!(
            "`{key}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
