//! A `tools/call` result as the text the model reads.

use mecha_core::ToolOutput;
use serde_json::Value;

/// Renders a raw `CallToolResult`. `external` says whether the server's
/// content came from outside the machine (the tool is open-world).
pub(crate) fn render(result: &Value, external: bool) -> ToolOutput {
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    let mut parts: Vec<String> = blocks.iter().map(render_block).collect();
    // Servers SHOULD mirror structured output in a text block; when one
    // does not, the structure is the only answer there is.
    if !has_text && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    let mut content = parts.join("\n");
    if content.is_empty() {
        content.push_str("[the tool returned no content]");
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    ToolOutput {
        content,
        is_error,
        external,
        harness: false,
    }
}

fn render_block(block: &Value) -> String {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str);
    match str_of("type").unwrap_or("") {
        "text" => str_of("text").unwrap_or("").to_owned(),
        kind @ ("image" | "audio") => format!(
            "[{kind}: {}, {}]",
            str_of("mimeType").unwrap_or("unknown type"),
            size(str_of("data"))
        ),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = field("uri").unwrap_or("(no uri)");
            match field("text") {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri}: {}, {}]",
                    field("mimeType").unwrap_or("unknown type"),
                    size(field("blob"))
                ),
            }
        }
        "resource_link" => format!(
            "[resource link: {} <{}>]",
            str_of("name").unwrap_or("(unnamed)"),
            str_of("uri").unwrap_or("(no uri)")
        ),
        other => format!("[a content block of type `{other}` that mecha does not show]"),
    }
}

/// The decoded size of base64 data, without decoding it.
fn size(base64: Option<&str>) -> String {
    let data = base64.unwrap_or("").trim_end_matches('=');
    let bytes = data.len() * 3 / 4;
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else if bytes >= 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_are_joined() {
        let out = render(
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            false,
        );
        assert_eq!(out, ToolOutput::ok("a\nb"));
    }

    #[test]
    fn open_world_results_are_external_errors_too() {
        let out = render(&json!({"content": [{"type": "text", "text": "x"}]}), true);
        assert!(out.external && !out.is_error);
        let out = render(
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
            true,
        );
        assert!(out.external && out.is_error);
        let out = render(
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
            false,
        );
        assert_eq!(out, ToolOutput::err("bad"));
    }

    #[test]
    fn non_text_blocks_become_placeholders() {
        let out = render(
            &json!({"content": [
                {"type": "image", "data": "aGVsbG8gd29ybGQ=", "mimeType": "image/png"},
                {"type": "audio", "data": "", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/zip", "blob": "AAAA"}},
                {"type": "resource_link", "uri": "file:///r.pdf", "name": "report"},
                {"type": "hologram"}
            ]}),
            false,
        );
        assert_eq!(
            out.content,
            "[image: image/png, 11 bytes]\n[audio: audio/wav, 0 bytes]\n[resource file:///a.txt]\n\
             hello\n[resource file:///b.bin: application/zip, 3 bytes]\n[resource link: report \
             <file:///r.pdf>]\n[a content block of type `hologram` that mecha does not show]"
        );
    }

    #[test]
    fn structured_content_only_without_text() {
        let out = render(
            &json!({"content": [], "structuredContent": {"t": 1}}),
            false,
        );
        assert_eq!(out.content, "{\"t\":1}");
        let out = render(
            &json!({"content": [{"type": "text", "text": "t is 1"}], "structuredContent": {"t": 1}}),
            false,
        );
        assert_eq!(out.content, "t is 1");
        let out = render(&json!({}), false);
        assert_eq!(out.content, "[the tool returned no content]");
    }
}
