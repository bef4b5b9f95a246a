//! Distrust from config: capabilities forced onto a tool, for every tool
//! alike (`[tools.NAME] force`, an MCP server's `force`). Forcing can only
//! widen, through [`Capabilities::union`], so config can distrust a tool
//! further and never less.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ArgKind, Capabilities, Confinement, Egress, Narrowing, Tool, ToolCtx, ToolOutput};

/// Capabilities config forces on:
/// `force = { untrusted_input = true, egress = "chosen" }`. A `false` (or
/// `"none"`) forces nothing, because [`Capabilities::union`] only widens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedCapabilities {
    #[serde(default)]
    pub private_data: bool,
    #[serde(default)]
    pub untrusted_input: bool,
    #[serde(default)]
    pub egress: ForcedEgress,
    #[serde(default)]
    pub destructive: bool,
}

/// `egress` as config spells it; ordered like [`Egress`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForcedEgress {
    #[default]
    None,
    Blind,
    Chosen,
}

impl ForcedCapabilities {
    /// Forcing only `untrusted_input`: what `[agent] distrust_workspace`
    /// puts on the tools that read the workspace.
    pub const UNTRUSTED: Self = Self {
        private_data: false,
        untrusted_input: true,
        egress: ForcedEgress::None,
        destructive: false,
    };

    /// As capabilities, to be `union`ed onto what a tool declares.
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            private_data: self.private_data,
            untrusted_input: self.untrusted_input,
            egress: match self.egress {
                ForcedEgress::None => Egress::None,
                ForcedEgress::Blind => Egress::Blind,
                ForcedEgress::Chosen => Egress::Chosen,
            },
            destructive: self.destructive,
        }
    }

    /// Capabilities as config would spell forcing them.
    fn spelt(caps: Capabilities) -> Self {
        Self {
            private_data: caps.private_data,
            untrusted_input: caps.untrusted_input,
            egress: match caps.egress {
                Egress::None => ForcedEgress::None,
                Egress::Blind => ForcedEgress::Blind,
                Egress::Chosen => ForcedEgress::Chosen,
            },
            destructive: caps.destructive,
        }
    }

    /// What two layers force together (the user's config and a project's):
    /// [`Capabilities::union`], the one way capabilities combine.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self::spelt(self.capabilities().union(other.capabilities()))
    }

    /// Whether it forces anything at all.
    pub fn is_empty(&self) -> bool {
        self.capabilities() == Capabilities::NONE
    }
}

/// Why a tool whose send only config declared counts as one, for the
/// interlock's refusal.
const FORCED_SEND: &str = "is a send by your config (`force.egress`), so any call to it counts \
                           as one, whatever its arguments";

/// A tool with capabilities forced on by config. Everything else is the
/// wrapped tool's, so the loop sees the same tool, only more distrusted.
pub struct Forced {
    inner: Arc<dyn Tool>,
    forced: Capabilities,
}

impl Forced {
    /// `tool` with `forced` unioned onto its capabilities; `tool` itself
    /// when `forced` forces nothing.
    pub fn wrap(tool: Arc<dyn Tool>, forced: ForcedCapabilities) -> Arc<dyn Tool> {
        if forced.is_empty() {
            return tool;
        }
        Arc::new(Self {
            inner: tool,
            forced: forced.capabilities(),
        })
    }
}

#[async_trait]
impl Tool for Forced {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }

    /// Only a forced destructive contradicts a read-only claim, as for an
    /// MCP tool's `readOnlyHint`: the other axes are orthogonal to it.
    fn read_only(&self) -> bool {
        self.inner.read_only() && !self.forced.destructive
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities().union(self.forced)
    }

    fn send_reason(&self) -> &str {
        if self.inner.capabilities().egress == Egress::Chosen {
            self.inner.send_reason()
        } else {
            FORCED_SEND
        }
    }

    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        self.inner.argument_kinds()
    }

    fn confinement(&self) -> Option<Confinement> {
        self.inner.confinement()
    }

    fn resource_group(&self) -> Option<&str> {
        self.inner.resource_group()
    }

    fn stages_for_review(&self) -> bool {
        self.inner.stages_for_review()
    }

    fn narrowing(&self, input: &Value) -> Option<Narrowing> {
        self.inner.narrowing(input)
    }

    fn echo(&self) -> Option<String> {
        self.inner.echo()
    }

    fn echo_limit(&self) -> usize {
        self.inner.echo_limit()
    }

    fn carried_state(&self) -> Option<String> {
        self.inner.carried_state()
    }

    fn saved_state(&self) -> Option<Value> {
        self.inner.saved_state()
    }

    fn restore_state(&self, state: Value) -> Result<(), String> {
        self.inner.restore_state(state)
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        self.inner.call(input, ctx).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// A tool whose every method answers something recognisable.
    struct Marked(Capabilities, bool);

    const KINDS: &[(&str, ArgKind)] = &[("path", ArgKind::ReadPath)];

    #[async_trait]
    impl Tool for Marked {
        fn name(&self) -> &str {
            "marked"
        }
        fn description(&self) -> &str {
            "a marked tool"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object", "properties": {"path": {"type": "string"}}})
        }
        fn read_only(&self) -> bool {
            self.1
        }
        fn capabilities(&self) -> Capabilities {
            self.0
        }
        fn send_reason(&self) -> &str {
            "is its own kind of send"
        }
        fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
            KINDS
        }
        fn confinement(&self) -> Option<Confinement> {
            Some(Confinement {
                backend: "bwrap".into(),
                network: false,
                allowed_hosts: 0,
            })
        }
        fn resource_group(&self) -> Option<&str> {
            Some("group")
        }
        fn echo(&self) -> Option<String> {
            Some("echoed".into())
        }
        fn echo_limit(&self) -> usize {
            77
        }
        fn narrowing(&self, input: &Value) -> Option<Narrowing> {
            Some(Narrowing {
                by: input["name"].as_str()?.to_owned(),
                tools: vec!["fs_read".into()],
            })
        }
        async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput::external(format!("called with {input}")))
        }
    }

    const UNTRUSTED: ForcedCapabilities = ForcedCapabilities::UNTRUSTED;

    #[tokio::test]
    async fn it_forwards_everything_but_the_widened_capabilities() {
        let chosen = Capabilities {
            egress: Egress::Chosen,
            ..Capabilities::NONE
        };
        let inner: Arc<dyn Tool> = Arc::new(Marked(chosen, true));
        let forced = Forced::wrap(Arc::clone(&inner), UNTRUSTED);
        assert_eq!(forced.name(), "marked");
        assert_eq!(forced.description(), "a marked tool");
        assert_eq!(forced.input_schema(), inner.input_schema());
        assert!(forced.read_only());
        assert_eq!(forced.send_reason(), "is its own kind of send");
        assert_eq!(forced.argument_kinds(), KINDS);
        assert_eq!(
            forced.confinement().map(|c| c.to_string()).as_deref(),
            Some("confined: bwrap, no network")
        );
        assert_eq!(forced.resource_group(), Some("group"));
        assert_eq!(forced.echo().as_deref(), Some("echoed"));
        assert_eq!(forced.echo_limit(), 77);
        assert_eq!(
            forced.narrowing(&json!({"name": "review"})),
            inner.narrowing(&json!({"name": "review"}))
        );
        assert!(forced.narrowing(&json!({})).is_none());
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 10_000).unwrap();
        let out = forced.call(json!({"a": 1}), &ctx).await.unwrap();
        assert_eq!(out, ToolOutput::external("called with {\"a\":1}"));
        assert_eq!(
            forced.capabilities(),
            Capabilities {
                untrusted_input: true,
                ..chosen
            }
        );
    }

    #[test]
    fn forcing_only_widens() {
        let wide = Capabilities {
            private_data: true,
            untrusted_input: true,
            egress: Egress::Chosen,
            destructive: true,
        };
        let falses = ForcedCapabilities {
            egress: ForcedEgress::None,
            ..ForcedCapabilities::default()
        };
        let blind = ForcedCapabilities {
            egress: ForcedEgress::Blind,
            ..UNTRUSTED
        };
        for forced in [falses, blind, UNTRUSTED] {
            let tool = Forced::wrap(Arc::new(Marked(wide, false)), forced);
            assert_eq!(tool.capabilities(), wide, "{forced:?} narrowed it");
        }
        let plain = Forced::wrap(Arc::new(Marked(Capabilities::NONE, true)), blind);
        assert_eq!(plain.capabilities().egress, Egress::Blind);
        assert!(plain.capabilities().untrusted_input);
        assert!(plain.read_only(), "only destructive contradicts read-only");
        assert!(plain.send_reason().contains("a send by your config"));
    }

    #[test]
    fn a_forced_destructive_takes_read_only_away() {
        let forced = ForcedCapabilities {
            destructive: true,
            ..ForcedCapabilities::default()
        };
        let tool = Forced::wrap(Arc::new(Marked(Capabilities::NONE, true)), forced);
        assert!(!tool.read_only());
        assert!(tool.capabilities().destructive);
    }

    #[test]
    fn config_words_parse_and_layers_union() {
        let parse = |v: Value| serde_json::from_value::<ForcedCapabilities>(v);
        let chosen = parse(json!({"egress": "chosen"})).unwrap();
        assert_eq!(chosen.capabilities().egress, Egress::Chosen);
        assert!(parse(json!({"egress": "everywhere"})).is_err());
        assert!(parse(json!({"narrow": true})).is_err());
        assert!(parse(json!({"untrusted_input": false})).unwrap().is_empty());
        let both = chosen.union(UNTRUSTED);
        assert_eq!(both.egress, ForcedEgress::Chosen);
        assert!(both.untrusted_input);
        assert_eq!(
            ForcedCapabilities {
                egress: ForcedEgress::Blind,
                ..Default::default()
            }
            .union(chosen)
            .egress,
            ForcedEgress::Chosen
        );
    }
}
