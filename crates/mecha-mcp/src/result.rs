//! A `tools/call` result as the text the model reads.
//!
//! rmcp has already parsed the whole response; what is built from it here
//! goes through the call's spilling sink, so the rendered text costs one
//! budget's worth of memory however big the result, and the rest is on disk.

use std::borrow::Cow;
use std::io;

use base64::Engine as _;
use mecha_core::{Image, SpillingSink, ToolOutput};
use serde_json::Value;

/// The most characters of a server-chosen name, URI or MIME type shown in a
/// placeholder: a placeholder stands for a block, it should not become one.
const SHOWN_FIELD_CHARS: usize = 200;

/// Renders a raw `CallToolResult` into `sink`. `external` says whether the
/// server's content came from outside the machine (the tool is open-world);
/// `reader` is the server's resource reader tool, if it offers resources,
/// which a resource link names so the model can follow it.
pub(crate) fn render(
    result: &Value,
    external: bool,
    reader: Option<&str>,
    sink: SpillingSink<'_>,
) -> ToolOutput {
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut out = Parts {
        sink,
        parts: 0,
        bytes: 0,
        images: Vec::new(),
    };
    for block in blocks {
        // An image is not text: it goes beside the text, as it came (the
        // batch decides whether it reaches the model).
        if let Some(image) = image(block) {
            out.images.push(image);
            continue;
        }
        out.next_part();
        render_block(block, reader, &mut out);
    }
    // Servers SHOULD mirror structured output in the content; only when
    // there is no content at all is the structure the only answer there is.
    // Content without a text block (an image, a media file) already says
    // what the structure would, and its base64 is no answer for a model.
    if blocks.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        out.next_part();
        if let Err(e) = serde_json::to_writer(&mut out, structured) {
            tracing::warn!(error = %e, "could not render an MCP result's structured content");
        }
    }
    if out.bytes == 0 && out.images.is_empty() {
        out.push("[the tool returned no content]");
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    ToolOutput {
        content: out.sink.finish(),
        is_error,
        external,
        harness: false,
        images: out.images,
        narrows: None,
        requests_compaction: false,
        parks: None,
    }
}

/// The rendered blocks as they go into the sink, one line break apart.
struct Parts<'a> {
    sink: SpillingSink<'a>,
    parts: usize,
    bytes: usize,
    /// Image blocks, as the server sent them: the batch decides which
    /// reach the model (`mecha_core::Image`).
    images: Vec<Image>,
}

impl Parts<'_> {
    fn next_part(&mut self) {
        if self.parts > 0 {
            self.push("\n");
        }
        self.parts += 1;
    }

    fn push(&mut self, text: &str) {
        self.sink.push(text.as_bytes());
        self.bytes += text.len();
    }
}

impl io::Write for Parts<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.push(buf);
        self.bytes += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn render_block(block: &Value, reader: Option<&str>, out: &mut Parts<'_>) {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str);
    match str_of("type").unwrap_or("") {
        "text" => out.push(str_of("text").unwrap_or("")),
        kind @ "audio" => out.push(&format!(
            "[{kind}: {}, {}]",
            capped(str_of("mimeType").unwrap_or("unknown type")),
            size(str_of("data"))
        )),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = capped(field("uri").unwrap_or("(no uri)"));
            let mime = field("mimeType");
            let text = field("text").map(Cow::Borrowed).or_else(|| {
                field("blob")
                    .filter(|_| mime.is_some_and(is_text))
                    .and_then(decode_text)
                    .map(Cow::Owned)
            });
            match text {
                Some(text) => {
                    out.push(&format!("[resource {uri}]\n"));
                    out.push(&text);
                }
                None => out.push(&format!(
                    "[resource {uri}: {}, {}]",
                    capped(mime.unwrap_or("unknown type")),
                    size(field("blob"))
                )),
            }
        }
        "resource_link" => {
            let link = format!(
                "[resource link: {} <{}>",
                capped(str_of("name").unwrap_or("(unnamed)")),
                capped(str_of("uri").unwrap_or("(no uri)"))
            );
            match reader {
                Some(reader) => out.push(&format!("{link}; read it with {reader}]")),
                None => out.push(&format!("{link}]")),
            }
        }
        other => out.push(&format!(
            "[a content block of type `{}` that mecha does not show]",
            capped(other)
        )),
    }
}

/// An `image` content block's media type and base64 data.
fn image(block: &Value) -> Option<Image> {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str);
    (str_of("type") == Some("image")).then(|| Image {
        media_type: str_of("mimeType").unwrap_or("").to_owned(),
        data: str_of("data").unwrap_or("").to_owned(),
    })
}

/// Whether a resource of this MIME type is text a model can read: `text/*`,
/// and the structured formats that are text in all but name.
fn is_text(mime: &str) -> bool {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind == "text"
        || (kind == "application"
            && (matches!(
                sub,
                "json"
                    | "xml"
                    | "yaml"
                    | "x-yaml"
                    | "toml"
                    | "javascript"
                    | "ecmascript"
                    | "x-sh"
                    | "sql"
                    | "csv"
                    | "ld+json"
                    | "x-ndjson"
                    | "graphql"
            ) || sub.ends_with("+json")
                || sub.ends_with("+xml")))
}

/// A text resource sent as a blob, decoded; `None` when it is not base64
/// or not UTF-8, so it stays a placeholder rather than becoming mojibake.
fn decode_text(blob: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// A server-chosen field, cut to [`SHOWN_FIELD_CHARS`].
fn capped(field: &str) -> String {
    match field.char_indices().nth(SHOWN_FIELD_CHARS) {
        Some((at, _)) => format!("{}…", &field[..at]),
        None => field.to_owned(),
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
    use mecha_core::ToolCtx;
    use serde_json::json;

    fn render(result: &Value, external: bool) -> ToolOutput {
        let ctx = ToolCtx::new(&std::env::temp_dir(), 64 * 1024).unwrap();
        super::render(result, external, None, ctx.sink("t", 64 * 1024))
    }

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
    fn images_are_images_and_other_blocks_placeholders() {
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
            "[audio: audio/wav, 0 bytes]\n[resource file:///a.txt]\n\
             hello\n[resource file:///b.bin: application/zip, 3 bytes]\n[resource link: report \
             <file:///r.pdf>]\n[a content block of type `hologram` that mecha does not show]"
        );
        assert_eq!(
            out.images,
            vec![Image {
                media_type: "image/png".into(),
                data: "aGVsbG8gd29ybGQ=".into()
            }],
            "an image block is an image, not a placeholder"
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
        // Content without text (a media file) is the answer; the structure
        // beside it (its base64 again, say) is not appended.
        let out = render(
            &json!({"content": [{"type": "image", "data": "aGVsbG8gd29ybGQ=", "mimeType": "image/png"}],
                    "structuredContent": {"base64": "aGVsbG8gd29ybGQ="}}),
            false,
        );
        assert!(!out.content.contains("aGVsbG8"), "{}", out.content);
        let out = render(&json!({}), false);
        assert_eq!(out.content, "[the tool returned no content]");
    }

    #[test]
    fn text_blobs_show_inline_and_binary_ones_stay_placeholders() {
        let blob = |mime: &str, data: &str| json!({"content": [{"type": "resource", "resource": {"uri": "mem://r", "mimeType": mime, "blob": data}}]});
        // "hello, resource" in base64.
        let hello = "aGVsbG8sIHJlc291cmNl";
        for mime in [
            "text/plain",
            "application/json",
            "text/markdown; charset=utf-8",
            "application/vnd.api+json",
        ] {
            assert_eq!(
                render(&blob(mime, hello), false).content,
                "[resource mem://r]\nhello, resource",
                "{mime}"
            );
        }
        assert_eq!(
            render(&blob("application/octet-stream", hello), false).content,
            "[resource mem://r: application/octet-stream, 15 bytes]"
        );
        // Not UTF-8, or not base64: a placeholder, not mojibake.
        assert_eq!(
            render(&blob("text/plain", "//79"), false).content,
            "[resource mem://r: text/plain, 3 bytes]"
        );
        assert!(
            render(&blob("text/plain", "*not base64*"), false)
                .content
                .starts_with("[resource mem://r: text/plain")
        );
    }

    #[test]
    fn a_resource_link_names_the_reader_tool() {
        let ctx = ToolCtx::new(&std::env::temp_dir(), 4096).unwrap();
        let link = json!({"content": [{"type": "resource_link", "uri": "file:///r.pdf", "name": "report"}]});
        let out = super::render(
            &link,
            false,
            Some("srv__read_resource"),
            ctx.sink("t", 4096),
        );
        assert_eq!(
            out.content,
            "[resource link: report <file:///r.pdf>; read it with srv__read_resource]"
        );
    }

    #[test]
    fn a_result_larger_than_the_budget_spills_whole() {
        let ctx = ToolCtx::new(&std::env::temp_dir(), 4096).unwrap();
        let big: String = (0..10_000).map(|i| format!("row {i}\n")).collect();
        let result = json!({"content": [
            {"type": "text", "text": big},
            {"type": "text", "text": "the end"}
        ]});
        let out = super::render(&result, true, None, ctx.sink("srv__t", 4096));
        assert!(out.content.len() <= 4096, "{} bytes", out.content.len());
        assert!(out.external);
        assert!(
            out.content.contains("[truncated by the harness"),
            "{}",
            out.content
        );
        let files: Vec<_> = std::fs::read_dir(ctx.spill().path().unwrap())
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1);
        let saved = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
        assert_eq!(saved, format!("{big}\nthe end"));
    }

    #[test]
    fn server_chosen_fields_in_placeholders_are_capped() {
        let long = "u".repeat(100_000);
        let out = render(
            &json!({"content": [{"type": "resource_link", "uri": long, "name": long}]}),
            false,
        );
        assert!(out.content.len() < 1000, "{} bytes", out.content.len());
        assert!(out.content.contains(&format!("{}…", "u".repeat(200))));
    }
}
