//! Tool-call arguments as the model streamed them: one JSON text, which the
//! model may get wrong. A bad argument text is kept (as `input_error`) rather
//! than failing the turn, so the loop can show the model what to fix.

use serde_json::{Map, Value};

/// The parsed arguments and, when they are unusable, why (with the raw text).
pub(crate) fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    // Several APIs send an empty string for a call without arguments.
    if raw.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => (value, None),
        Ok(_) => (
            Value::Object(Map::new()),
            Some(format!(
                "the arguments must be a JSON object, but were: {raw}"
            )),
        ),
        Err(e) => (
            Value::Object(Map::new()),
            Some(format!("the arguments were not valid JSON ({e}): {raw}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_parse() {
        assert_eq!(parse_arguments(r#"{"a":1}"#), (json!({"a": 1}), None));
        assert_eq!(parse_arguments("  "), (json!({}), None));
    }

    #[test]
    fn bad_json_keeps_the_raw_text() {
        let (input, error) = parse_arguments(r#"{"path": "a"#);
        assert_eq!(input, json!({}));
        let error = error.unwrap_or_default();
        assert!(error.contains("not valid JSON"), "{error}");
        assert!(error.contains(r#"{"path": "a"#), "{error}");
    }

    #[test]
    fn non_objects_are_refused() {
        let (input, error) = parse_arguments("[1]");
        assert_eq!(input, json!({}));
        assert!(error.unwrap_or_default().contains("JSON object"));
    }
}
