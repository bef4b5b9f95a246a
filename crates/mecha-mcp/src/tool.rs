//! A server's tool as a `mecha_core::Tool`: its model-visible name, its
//! schema, and the capabilities its annotations (and config) give it.

use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput};
use mecha_sandbox::{Network, Sandbox};
use serde_json::{Map, Value, json};

use crate::config::McpServerConfig;
use crate::naming;
use crate::server::Server;

/// What mecha keeps of one listed tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    /// Model-visible.
    pub name: String,
    /// What the server calls it, and receives in `tools/call`.
    pub raw_name: String,
    pub description: String,
    pub input_schema: Value,
    pub capabilities: Capabilities,
    pub read_only: bool,
    /// Results come from outside the machine.
    pub external: bool,
    /// Why a call to it counts as a chosen send, for the interlock's refusal.
    pub send_reason: &'static str,
    pub kind: ToolKind,
}

/// What a call to the tool asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    /// `tools/call` with the tool's raw name.
    Call,
    /// `resources/read` with the `uri` argument: the reader tool mecha adds
    /// for a server that offers resources, so a resource link is not a
    /// dead end.
    ReadResource,
}

/// The reader tool's name after `<server>__`.
const READER_SUFFIX: &str = "read_resource";

/// Why a remote server's tool counts as a send.
const REMOTE_SEND: &str = "belongs to a remote MCP server, so each call sends its arguments to the \
                           host its config names";
/// Why an open-world tool is refused in an armed conversation: it may take
/// no arguments at all (`browser_snapshot`), so "a destination the model
/// chooses" would be untrue of it.
const OPEN_WORLD_SEND: &str = "is marked open-world (`openWorldHint`) by its MCP server, so any \
                               call to it counts as a send, whatever its arguments";
/// The same, for a tool whose config forces `egress = "chosen"`.
const FORCED_SEND: &str = "is a send by its MCP server's config (`force.egress`), so any call \
                           to it counts as one, whatever its arguments";

/// Turns a raw `tools/list` into specs; a tool without a usable name is
/// left out (and logged), the rest survive it. A server that offers
/// resources gets a reader tool too, unless one of its own tools already
/// has the reader's name.
///
/// `confinement` is the sandbox the server runs in and whether it has the
/// network: without it, nothing the server does can leave the machine.
pub(crate) fn build_specs(
    config: &McpServerConfig,
    listed: &[Value],
    offers_resources: bool,
    confinement: Option<(&Sandbox, Network)>,
) -> Vec<ToolSpec> {
    let mut specs = listed_specs(config, listed, confinement);
    let reader = format!("{}__{READER_SUFFIX}", config.name);
    if offers_resources {
        if specs.iter().any(|s| s.name == reader) {
            tracing::warn!(server = %config.name, tool = %reader, "a tool of the server has the resource reader's name; the reader is left out");
        } else {
            specs.push(reader_spec(config, reader));
        }
    }
    specs
}

/// The reader tool: the server's own capabilities, as an unannotated tool
/// of it gets them, and read-only unless the config says destructive.
fn reader_spec(config: &McpServerConfig, name: String) -> ToolSpec {
    let listing = json!({
        "name": READER_SUFFIX,
        "description": format!(
            "Read a resource of the MCP server `{}` by its URI (one a result linked to, for \
             example). Text comes back inline; binary content as a placeholder naming its type \
             and size.",
            config.name
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI, exactly as the server gave it."}},
            "required": ["uri"],
        },
        "annotations": {"readOnlyHint": true},
    });
    ToolSpec {
        kind: ToolKind::ReadResource,
        ..spec(config, READER_SUFFIX.to_owned(), name, &listing, None)
    }
}

fn listed_specs(
    config: &McpServerConfig,
    listed: &[Value],
    confinement: Option<(&Sandbox, Network)>,
) -> Vec<ToolSpec> {
    let named: Vec<(&str, &Value)> = listed
        .iter()
        .filter_map(|tool| match tool.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => Some((name, tool)),
            _ => {
                tracing::warn!(server = %config.name, "the server lists a tool without a name");
                None
            }
        })
        .collect();
    let raws: Vec<&str> = named.iter().map(|(name, _)| *name).collect();
    naming::assign(&config.name, config.prefix_tools, &raws)
        .into_iter()
        .filter_map(|(raw, name)| {
            let (_, tool) = named.iter().find(|(n, _)| *n == raw)?;
            let confinement = confinement
                .as_ref()
                .map(|(sandbox, network)| (*sandbox, network));
            Some(spec(config, raw, name, tool, confinement))
        })
        .collect()
}

fn spec(
    config: &McpServerConfig,
    raw_name: String,
    name: String,
    tool: &Value,
    confinement: Option<(&Sandbox, &Network)>,
) -> ToolSpec {
    let annotations = tool.get("annotations");
    // A hint counts only when the server says `true`: an unannotated tool is
    // assumed private but not open-world, or every call would arm the
    // interlock.
    let hint = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let open_world = hint("openWorldHint");
    let forced = config.force.capabilities();
    // A remote server's every call sends its arguments to a host, fixed by
    // config, and what comes back a third party wrote.
    let remote = config.url.is_some();
    let capabilities = Capabilities {
        private_data: true,
        untrusted_input: open_world || remote,
        // `Chosen`: a remote tool's input schema is the server's to write,
        // so nothing local can prove it holds no destination. Only a
        // sandbox that fixes the destinations (`allow_hosts`) makes it
        // `Blind`, and one without network makes it `None`.
        egress: match (open_world, confinement) {
            (false, _) if remote => Egress::Blind,
            (false, _) => Egress::None,
            (true, None) => Egress::Chosen,
            (true, Some((sandbox, network))) => sandbox.egress(Egress::Chosen, network),
        },
        destructive: hint("destructiveHint"),
    }
    .union(forced);
    // Only a destructive claim contradicts read-only: one forced by config,
    // or the server's own (self-contradicting) destructiveHint.
    let read_only = hint("readOnlyHint") && !capabilities.destructive;
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
        .or_else(|| tool.get("title").and_then(Value::as_str))
        .map_or_else(
            || format!("`{raw_name}` from the MCP server `{}`", config.name),
            str::to_owned,
        );
    ToolSpec {
        name,
        raw_name,
        description,
        input_schema: object_schema(tool.get("inputSchema")),
        capabilities,
        read_only,
        // A server the config distrusts is treated as outside content too.
        external: open_world || remote || forced.untrusted_input,
        send_reason: if open_world {
            OPEN_WORLD_SEND
        } else if remote {
            REMOTE_SEND
        } else {
            FORCED_SEND
        },
        kind: ToolKind::Call,
    }
}

/// The model APIs want an object schema; anything else becomes the
/// schema that accepts any object.
fn object_schema(schema: Option<&Value>) -> Value {
    match schema {
        Some(Value::Object(map)) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => Value::Object(map.clone()),
            None if map.contains_key("properties") => {
                let mut map = map.clone();
                map.insert("type".into(), json!("object"));
                Value::Object(map)
            }
            _ => json!({"type": "object"}),
        },
        _ => json!({"type": "object"}),
    }
}

/// One server tool, as the loop sees it.
pub(crate) struct McpTool {
    pub server: Arc<Server>,
    pub spec: Arc<ToolSpec>,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> Value {
        self.spec.input_schema.clone()
    }

    fn read_only(&self) -> bool {
        self.spec.read_only
    }

    fn deferrable(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        self.spec.capabilities
    }

    fn send_reason(&self) -> &str {
        self.spec.send_reason
    }

    fn confinement(&self) -> Option<mecha_core::Confinement> {
        self.server.confinement()
    }

    /// A server's tools share its state (the directory it just created, the
    /// table, the index), and it may serve requests in any order.
    fn resource_group(&self) -> Option<&str> {
        Some(self.server.name())
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Ok(ToolOutput::refusal(format!(
                    "`{}` takes a JSON object as its input",
                    self.spec.name
                )));
            }
        };
        Ok(self.server.call(&self.spec, arguments, ctx).await)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use mecha_core::{ForcedCapabilities, ForcedEgress};

    fn one(config: &McpServerConfig, tool: Value) -> ToolSpec {
        build_specs(config, &[tool], false, None).remove(0)
    }

    fn annotated(annotations: Value) -> Value {
        json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": annotations})
    }

    #[test]
    fn unannotated_is_private_only() {
        let s = one(&McpServerConfig::new("s", "x"), json!({"name": "t"}));
        assert_eq!(
            s.capabilities,
            Capabilities {
                private_data: true,
                ..Capabilities::NONE
            }
        );
        assert!(!s.read_only && !s.external);
    }

    #[test]
    fn annotations_become_capabilities() {
        let config = McpServerConfig::new("s", "x");
        let open = one(&config, annotated(json!({"openWorldHint": true})));
        assert!(open.capabilities.untrusted_input && open.external);
        assert_eq!(open.capabilities.egress, Egress::Chosen);
        let destroy = one(&config, annotated(json!({"destructiveHint": true})));
        assert!(destroy.capabilities.destructive && !destroy.read_only);
        let read = one(&config, annotated(json!({"readOnlyHint": true})));
        assert!(read.read_only && !read.capabilities.destructive);
        let falsy = one(
            &config,
            annotated(json!({"openWorldHint": false, "destructiveHint": false})),
        );
        assert_eq!(falsy.capabilities.egress, Egress::None);
        // Contradicting itself, a server gets the safe reading.
        let both = one(
            &config,
            annotated(json!({"readOnlyHint": true, "destructiveHint": true})),
        );
        assert!(!both.read_only);
    }

    #[test]
    fn forced_capabilities_only_widen() {
        let mut config = McpServerConfig::new("s", "x");
        config.force = ForcedCapabilities {
            untrusted_input: true,
            egress: ForcedEgress::Blind,
            destructive: true,
            private_data: false,
        };
        let read = one(
            &config,
            annotated(json!({"readOnlyHint": true, "openWorldHint": true})),
        );
        assert_eq!(
            read.capabilities,
            Capabilities {
                private_data: true,
                untrusted_input: true,
                egress: Egress::Chosen,
                destructive: true
            }
        );
        // A forced destructive overrides the server's read-only claim.
        assert!(!read.read_only);
        let plain = one(&config, annotated(json!({})));
        assert_eq!(plain.capabilities.egress, Egress::Blind);
        assert!(plain.external);
    }

    #[test]
    fn a_server_with_resources_gets_a_reader_with_its_capabilities() {
        let mut config = McpServerConfig::new("s", "x");
        let listed = [json!({"name": "t"})];
        assert_eq!(build_specs(&config, &listed, false, None).len(), 1);
        let specs = build_specs(&config, &listed, true, None);
        let reader = specs
            .iter()
            .find(|s| s.kind == ToolKind::ReadResource)
            .unwrap();
        assert_eq!(
            (reader.name.as_str(), reader.raw_name.as_str()),
            ("s__read_resource", "read_resource")
        );
        assert!(reader.read_only);
        assert_eq!(
            reader.capabilities,
            Capabilities {
                private_data: true,
                ..Capabilities::NONE
            }
        );
        assert_eq!(reader.input_schema["required"], json!(["uri"]));
        // Forced capabilities reach it as they reach every tool of the server.
        config.force.untrusted_input = true;
        config.force.egress = ForcedEgress::Chosen;
        let reader = build_specs(&config, &listed, true, None).pop().unwrap();
        assert_eq!(reader.kind, ToolKind::ReadResource);
        assert!(reader.external && reader.capabilities.egress == Egress::Chosen);
        assert_eq!(reader.send_reason, FORCED_SEND);
        // A tool of the server's own that has the name keeps it.
        let own = build_specs(
            &McpServerConfig::new("s", "x"),
            &[json!({"name": "read_resource"})],
            true,
            None,
        );
        assert_eq!(own.len(), 1);
        assert_eq!(own[0].kind, ToolKind::Call);
    }

    #[test]
    fn an_open_world_tool_says_why_it_is_a_send() {
        let config = McpServerConfig::new("s", "x");
        let open = one(&config, annotated(json!({"openWorldHint": true})));
        assert!(
            open.send_reason.contains("marked open-world"),
            "{}",
            open.send_reason
        );
        assert!(open.send_reason.contains("any call to it counts as a send"));
    }

    #[test]
    fn odd_schemas_become_any_object() {
        let any = json!({"type": "object"});
        for schema in [
            None,
            Some(json!("nope")),
            Some(json!({"type": "array"})),
            Some(json!([])),
        ] {
            assert_eq!(object_schema(schema.as_ref()), any);
        }
        let props = json!({"properties": {"a": {"type": "string"}}});
        assert_eq!(
            object_schema(Some(&props)),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
    }

    #[test]
    fn descriptions_fall_back() {
        let config = McpServerConfig::new("s", "x");
        assert_eq!(
            one(&config, json!({"name": "t", "title": "Title"})).description,
            "Title"
        );
        assert_eq!(
            one(&config, json!({"name": "t", "description": " "})).description,
            "`t` from the MCP server `s`"
        );
        assert!(build_specs(&config, &[json!({"name": ""}), json!({})], false, None).is_empty());
    }
}
