//! The one trait every tool implements, wherever it comes from, and the
//! spelling rule for tool names.

use std::fmt;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use url::Url;

use crate::{Capabilities, Narrowing, ToolCtx, ToolOutput};

/// What a string argument names, so the gate can judge what the tool will
/// act on rather than how the model spelled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A path the tool reads: resolved with [`ToolCtx::resolve`].
    ReadPath,
    /// A path the tool writes: resolved with
    /// [`ToolCtx::resolve_in_workspace`], protected directories refused.
    WritePath,
    /// A URL the tool fetches: parsed with [`crate::parse_url`].
    Url,
}

/// How a [`ArgKind::Url`] argument is read, by the tool that fetches it and
/// by the rules that judge it alike: surrounding whitespace trimmed, then
/// parsed (which lowercases scheme and host, turns `\\` into `/`, adds
/// missing slashes and drops the default port).
pub fn parse_url(raw: &str) -> Result<Url, url::ParseError> {
    Url::parse(raw.trim())
}

/// Where a tool's calls run when a sandbox confines them, for the person
/// asked and the activity line: which backend, and whether the network is
/// reachable from inside (all of it, or only the `allow_hosts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confinement {
    pub backend: String,
    /// The whole network.
    pub network: bool,
    /// How many `allow_hosts` entries the proxy lets through; 0 when the
    /// command has all of the network or none of it.
    #[serde(skip_serializing_if = "is_zero")]
    pub allowed_hosts: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl fmt::Display for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let network = match (self.network, self.allowed_hosts) {
            (true, _) => "network on".to_owned(),
            (false, 0) => "no network".to_owned(),
            (false, 1) => "network: 1 host".to_owned(),
            (false, n) => format!("network: {n} hosts"),
        };
        write!(f, "confined: {}, {network}", self.backend)
    }
}

/// [`Tool::send_reason`] unless a tool says otherwise.
pub const DEFAULT_SEND_REASON: &str = "sends data to a destination the model chooses";

/// A tool the model can call: built-in, MCP, subagent or skill, the loop
/// cannot tell which.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does and when to use it; all the model sees before calling.
    fn description(&self) -> &str;

    /// JSON Schema of the input object.
    fn input_schema(&self) -> Value;

    /// Read-only tools skip the approval gate and are safe to run in parallel.
    fn read_only(&self) -> bool {
        false
    }

    /// Declared risk surface.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Why a call to it counts as a send whose destination the model picks,
    /// completing "`<tool>` …" in the interlock's refusal. Only asked of a
    /// tool whose egress is `Chosen`; one that is a send whatever its
    /// arguments (an open-world MCP tool) says so instead.
    fn send_reason(&self) -> &str {
        DEFAULT_SEND_REASON
    }

    /// The sandbox its calls run in, if one confines them (the shell, a
    /// `sandbox = true` MCP server's tools); `None`: they run as mecha
    /// does, or the tool does not say.
    fn confinement(&self) -> Option<Confinement> {
        None
    }

    /// The string arguments that name a path or a URL. The gate resolves
    /// declared paths before anyone is asked (refusing what the jail would),
    /// and `forbid`/`prompt` rules match every spelling the tool acts on.
    /// Tools whose schema is not ours (MCP) declare nothing.
    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[]
    }

    /// The shared state this tool's calls change, when other tools change
    /// it too (an MCP server's: its tools share the server's database,
    /// workbook or repository). Two calls of one turn in the same group, if
    /// neither tool is read-only, run one at a time in the model's order. A
    /// tool whose only shared state is the paths it declares needs none.
    fn resource_group(&self) -> Option<&str> {
        None
    }

    /// The narrowing a call with `input` will ask for in its result
    /// ([`ToolOutput::narrows`]), when that is known before it runs (a
    /// skill's `tools:`, from its frontmatter). The other calls of its turn
    /// run beside it, so the loop judges them by it too.
    fn narrowing(&self, _input: &Value) -> Option<Narrowing> {
        None
    }

    /// A call stages an item for the owner's review and performs nothing
    /// (an `[[outbox]]` action): nothing leaves by it, so the gate passes it
    /// after validation and the hooks, without the interlock, the rules or
    /// an approval, and the owner decides later.
    fn stages_for_review(&self) -> bool {
        false
    }

    /// State this tool echoes at the end of every tool result of the run, so
    /// the model re-reads it without being re-prompted (the todo list).
    fn echo(&self) -> Option<String> {
        None
    }

    /// The most bytes [`echo`](Self::echo) may return after a call to this
    /// tool (at most [`crate::MAX_ECHO_BYTES`]). A turn that calls it keeps
    /// this much room after every result, since the call may change the echo.
    fn echo_limit(&self) -> usize {
        0
    }

    /// State this tool hands across a compaction, read fresh at the moment
    /// of compaction (the todo list; the skill bodies loaded so far,
    /// verbatim). The rebuilt conversation holds exactly one copy of it,
    /// however many compactions follow.
    fn carried_state(&self) -> Option<String> {
        None
    }

    /// This tool's own state, for the session to save (the todo list's
    /// items, the skills loaded so far), so a resumed session can hand it
    /// back through [`restore_state`](Self::restore_state). `None`: no
    /// state, or nothing yet.
    fn saved_state(&self) -> Option<Value> {
        None
    }

    /// Takes back what [`saved_state`](Self::saved_state) returned in an
    /// earlier run of the session. `Err` says, in words for the user, what
    /// could not be restored (a skill no longer carried); the rest is.
    fn restore_state(&self, _state: Value) -> Result<(), String> {
        Ok(())
    }

    /// Its schema may be left out of the tool list while the list is large
    /// (an MCP server's tool): the model then sees only its name and first
    /// sentence until it loads the schema with `tool_search`. Built-ins,
    /// skills and subagents say no: the harness's own tools are small and
    /// always wanted.
    fn deferrable(&self) -> bool {
        false
    }

    /// Runs the call. Expected failures are `Ok(ToolOutput::err(..))`; `Err`
    /// is for what the model cannot route around, and ends the run.
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput>;
}

/// A description's first sentence (up to the first ". " or line break):
/// what a listing shows, and all a deferred tool's entry carries.
pub fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    let first_line = text.find('\n').unwrap_or(text.len());
    &text[..end.min(first_line)]
}

/// Whether `c` may appear in a tool name. The model APIs accept
/// `^[a-zA-Z0-9_-]{1,64}$`; MCP allows more.
pub fn is_tool_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `raw` with every character a tool name may not hold replaced by `_`, and
/// `_` for an empty name. The length limit is the caller's: what to cut
/// depends on what the name is for.
pub fn sanitize_tool_name(raw: &str) -> String {
    if raw.is_empty() {
        return "_".to_owned();
    }
    raw.chars()
        .map(|c| if is_tool_name_char(c) { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizing_keeps_what_the_model_apis_accept() {
        assert_eq!(sanitize_tool_name("get.weather"), "get_weather");
        assert_eq!(sanitize_tool_name("a-b_C9"), "a-b_C9");
        assert_eq!(sanitize_tool_name("ü b"), "__b");
        assert_eq!(sanitize_tool_name(""), "_");
    }
}
