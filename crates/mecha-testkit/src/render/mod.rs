//! Scripted replies as the bytes each API sends.

pub(crate) mod anthropic;
pub(crate) mod openai;

use mecha_provider::script::{ScriptTurn, ScriptUsage};

/// Which wire API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Anthropic,
    OpenAi,
}

/// A stream as SSE frames, one event each. `frames[tail..]` are the final
/// events a cut stream leaves out.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub frames: Vec<String>,
    pub tail: usize,
}

/// What the request asked for that shapes the answer.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// Echoed back as the real APIs do.
    pub model: String,
    /// Numbers generated ids, from 1.
    pub turn: usize,
    /// OpenAI sends the usage chunk only when asked.
    pub include_usage: bool,
}

/// Usage a turn reports: the script's, else small made-up numbers so that
/// a test can tell "reported" from "missing".
pub(crate) fn usage(turn: &ScriptTurn) -> ScriptUsage {
    turn.usage.unwrap_or(ScriptUsage {
        input_tokens: 25,
        output_tokens: 10,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    })
}

/// `text` cut into at most `n` non-empty pieces on character boundaries,
/// so a delta can end in the middle of a word or of a JSON string.
pub(crate) fn pieces(text: &str, n: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let size = chars.div_ceil(n.max(1));
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    out.push(&text[start..]);
    out
}

/// The error body an API sends with a status.
pub(crate) fn error_body(api: Api, code: u16, message: &str) -> String {
    let kind = match (api, code) {
        (Api::Anthropic, 400) => "invalid_request_error",
        (Api::Anthropic, 401) => "authentication_error",
        (Api::Anthropic, 403) => "permission_error",
        (Api::Anthropic, 404) => "not_found_error",
        (Api::Anthropic, 413) => "request_too_large",
        (Api::Anthropic, 429) => "rate_limit_error",
        (Api::Anthropic, 529) => "overloaded_error",
        (Api::Anthropic, _) => "api_error",
        (Api::OpenAi, 429) => "rate_limit_exceeded",
        (Api::OpenAi, 500..=599) => "server_error",
        (Api::OpenAi, _) => "invalid_request_error",
    };
    let body = match api {
        Api::Anthropic => serde_json::json!({
            "type": "error",
            "error": {"type": kind, "message": message},
        }),
        Api::OpenAi => serde_json::json!({
            "error": {"message": message, "type": kind, "param": null, "code": null},
        }),
    };
    body.to_string()
}

/// A short message for a status, as an API would phrase it.
pub(crate) fn status_message(code: u16) -> &'static str {
    match code {
        400 => "Invalid request",
        401 => "Invalid API key",
        403 => "Permission denied",
        404 => "Not found",
        429 => "Rate limit exceeded, please slow down",
        500 => "Internal server error",
        502 => "Bad gateway",
        503 => "Service unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text() {
        assert_eq!(pieces("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(pieces("ab", 3), ["a", "b"]);
        assert_eq!(pieces("héllo", 2), ["hél", "lo"]);
        assert!(pieces("", 3).is_empty());
    }
}
