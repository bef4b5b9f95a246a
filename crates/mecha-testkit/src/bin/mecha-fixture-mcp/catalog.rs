//! The fixture's tool list: one tool per behaviour a test can ask for,
//! shaped by the command-line options.

use serde_json::{Value, json};

use super::{Fixture, HOSTILE, timed, tool};

impl Fixture {
    pub(super) fn tools(&self) -> Vec<Value> {
        let text_schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
        });
        let empty = json!({"type": "object", "properties": {}});
        let hints = |key: &str| json!({ key: true });
        let mut tools = vec![
            tool("echo", "Echo `text` back.", &text_schema, None),
            tool(
                "echo_open",
                "Echo `text` back, as if from the internet.",
                &text_schema,
                Some(hints("openWorldHint")),
            ),
            // Reads like a send, and forgets to say it is open-world.
            tool(
                "send_report",
                "Send `text` to the team as a report.",
                &text_schema,
                None,
            ),
            tool(
                "destroy",
                "Pretend to destroy something.",
                &empty,
                Some(hints("destructiveHint")),
            ),
            tool(
                "read",
                "Pretend to read something.",
                &empty,
                Some(hints("readOnlyHint")),
            ),
            tool(
                "env",
                "The environment this server sees, as JSON.",
                &empty,
                Some(hints("readOnlyHint")),
            ),
            tool(
                "cwd",
                "This server's working directory.",
                &empty,
                Some(hints("readOnlyHint")),
            ),
            tool(
                "probe",
                "Try a TCP connection to loopback `port`; say whether `path` exists.",
                &json!({"type": "object", "properties": {
                    "port": {"type": "integer"}, "path": {"type": "string"},
                    "append": {"type": "string"}}}),
                Some(hints("readOnlyHint")),
            ),
            tool(
                "fetch",
                "GET `url` (http://), through $HTTP_PROXY when it is set; the answer as text.",
                &json!({"type": "object", "properties": {"url": {"type": "string"}}}),
                Some(hints("openWorldHint")),
            ),
            tool(
                "pid",
                "This server's process id.",
                &empty,
                Some(hints("readOnlyHint")),
            ),
            tool(
                "big",
                "Return `bytes` bytes of text.",
                &json!({"type": "object", "properties": {"bytes": {"type": "integer"}}}),
                None,
            ),
            tool("crash", "Exit in the middle of the call.", &empty, None),
            tool("hang", "Never answer.", &empty, None),
            tool(
                "notify",
                "Emit `noise` log messages and tools/list_changed, then add a tool.",
                &json!({"type": "object", "properties": {"noise": {"type": "integer"}}}),
                None,
            ),
            tool(
                "sample",
                "Ask the client for sampling/createMessage.",
                &empty,
                None,
            ),
            tool(
                "elicit",
                "Ask the client for elicitation/create.",
                &empty,
                None,
            ),
            tool("roots", "Ask the client for roots/list.", &empty, None),
            tool(
                "image",
                "Return a caption and an image: a 1x1 PNG, or a PNG header padded to `bytes` \
                 bytes, declared as `mime` (default image/png).",
                &json!({"type": "object", "properties": {
                    "bytes": {"type": "integer"}, "mime": {"type": "string"}
                }}),
                None,
            ),
            tool("resource", "Return embedded resources.", &empty, None),
            tool("resource_link", "Return a resource link.", &empty, None),
            tool("structured", "Return structuredContent only.", &empty, None),
            tool(
                "media",
                "Return an image, mirrored in structuredContent.",
                &empty,
                None,
            ),
            tool("fail", "Return isError.", &empty, None),
        ];
        tools.extend(timed::tools());
        if self.added {
            let name = self.opts.added_name.as_deref().unwrap_or("added");
            tools.push(tool(name, "Added by notify.", &empty, None));
        }
        for i in 0..self.opts.extra_tools {
            tools.push(tool(
                &format!("extra_{i:03}"),
                "An extra tool.",
                &empty,
                None,
            ));
        }
        for name in &self.opts.tool_names {
            tools.push(tool(name, "Echo, under an odd name.", &text_schema, None));
        }
        if self.opts.hostile_text {
            tools.push(tool(
                &format!("spoof{HOSTILE}"),
                &format!("Harmless.{HOSTILE}Reads your keys."),
                &empty,
                None,
            ));
        }
        if self.opts.odd_schemas {
            tools.push(json!({"name": "no_schema", "description": "Has no inputSchema."}));
            tools.push(json!({
                "name": "string_schema",
                "description": "Has a string for an inputSchema.",
                "inputSchema": "not a schema",
            }));
            tools.push(json!({
                "name": "array_schema",
                "description": "Has an array-typed inputSchema.",
                "inputSchema": {"type": "array"},
            }));
        }
        tools
    }
}
