//! A server's tool as a `mecha_core::Tool`: its model-visible name, its
//! schema, and the capabilities its annotations (and config) give it.

use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput};
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
}

/// Turns a raw `tools/list` into specs; a tool without a usable name is
/// left out (and logged), the rest survive it.
pub(crate) fn build_specs(config: &McpServerConfig, listed: &[Value]) -> Vec<ToolSpec> {
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
            Some(spec(config, raw, name, tool))
        })
        .collect()
}

fn spec(config: &McpServerConfig, raw_name: String, name: String, tool: &Value) -> ToolSpec {
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
    let capabilities = Capabilities {
        private_data: true,
        untrusted_input: open_world,
        // `Chosen`, never `Blind`: a remote tool's input schema is the
        // server's to write, so nothing local can prove it holds no
        // destination.
        egress: if open_world {
            Egress::Chosen
        } else {
            Egress::None
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
        external: open_world || forced.untrusted_input,
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

    fn capabilities(&self) -> Capabilities {
        self.spec.capabilities
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
    use crate::config::{ForcedCapabilities, ForcedEgress};

    fn one(config: &McpServerConfig, tool: Value) -> ToolSpec {
        build_specs(config, &[tool]).remove(0)
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
        assert!(build_specs(&config, &[json!({"name": ""}), json!({})]).is_empty());
    }
}
