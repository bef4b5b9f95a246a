//! `[[mcp]]`: one MCP server's configuration, and the checks that make a bad
//! entry fail at load time with a message that names the server and the fix.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use mecha_sandbox::Allowlist;

use mecha_core::{ForcedCapabilities, is_tool_name_char, sanitize_tool_name};
use serde::{Deserialize, Serialize};

/// Seconds a server gets to start, answer `initialize` and list its tools:
/// the spec's 120 s for a request, which `npx`/`uvx` launchers downloading
/// on their first run need.
pub const DEFAULT_STARTUP_TIMEOUT_S: u64 = 120;
/// Seconds one request may take (the spec's 120 s).
pub const DEFAULT_CALL_TIMEOUT_S: u64 = 120;
/// Server names stay short so `<server>__<tool>` keeps room under the
/// model APIs' 64-character limit.
pub const MAX_SERVER_NAME_LEN: usize = 32;

/// One `[[mcp]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Short name: the tool prefix, and how messages refer to the server.
    pub name: String,
    /// A bare name (resolved against mecha's own PATH) or a path; a relative
    /// path is made absolute against the directory of the file that
    /// configured it (see [`anchor_command`](Self::anchor_command)).
    /// Empty for a remote server, which has a `url` instead.
    #[serde(default)]
    pub command: String,
    /// A remote server's endpoint, spoken to over streamable HTTP;
    /// exclusive with `command` (see `remote.rs`).
    #[serde(default)]
    pub url: Option<String>,
    /// `streamable-http`, the one remote transport this build speaks.
    #[serde(default)]
    pub transport: Option<String>,
    /// The variable of mecha's environment whose value a remote server gets
    /// as `Authorization: Bearer …`.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// Headers sent with every request to a remote server; `${VAR}` in a
    /// value is read from mecha's environment when it connects.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The OAuth client a remote server's authorization server registered
    /// for mecha beforehand; without it `mecha mcp login` registers itself.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The loopback port `mecha mcp login` listens on for the browser's
    /// return, for a pre-registered client whose redirect names one;
    /// otherwise any free port.
    #[serde(default)]
    pub callback_port: Option<u16>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Register tools as `<server>__<tool>`; `false` promises distinct names.
    #[serde(default = "default_true")]
    pub prefix_tools: bool,
    /// Names copied from mecha's environment into the server's.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Variables set literally; they win over everything else.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run the server confined by the `[sandbox]` backend; `true` with no
    /// backend configured is refused.
    #[serde(default)]
    pub sandbox: bool,
    /// Per-server network switch for a sandboxed server; overrides the
    /// global one.
    #[serde(default)]
    pub network: Option<bool>,
    /// For a sandboxed server: the only hosts it reaches, through mecha's
    /// proxy, over the `[sandbox]` section's network; exclusive with
    /// `network = true`.
    #[serde(default)]
    pub allow_hosts: Option<Vec<String>>,
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_s: u64,
    #[serde(default = "default_call_timeout")]
    pub call_timeout_s: u64,
    /// Capabilities forced on for every tool of this server; only widens.
    /// (`[tools.NAME] force` does the same for one tool of any kind.)
    #[serde(default)]
    pub force: ForcedCapabilities,
}

fn default_true() -> bool {
    true
}

fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_S
}

fn default_call_timeout() -> u64 {
    DEFAULT_CALL_TIMEOUT_S
}

impl McpServerConfig {
    /// A server with every option at its default.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            url: None,
            transport: None,
            bearer_token_env: None,
            headers: BTreeMap::new(),
            client_id: None,
            callback_port: None,
            args: Vec::new(),
            prefix_tools: true,
            env_passthrough: Vec::new(),
            env: BTreeMap::new(),
            sandbox: false,
            network: None,
            allow_hosts: None,
            startup_timeout_s: DEFAULT_STARTUP_TIMEOUT_S,
            call_timeout_s: DEFAULT_CALL_TIMEOUT_S,
            force: ForcedCapabilities::default(),
        }
    }

    /// Makes a relative `command` with a `/` (`./bin/server`) absolute
    /// against `dir`, the directory of the file that configured it, so it
    /// means the same wherever mecha is started. A bare name stays as it is,
    /// for the PATH lookup.
    pub fn anchor_command(&mut self, dir: &Path) {
        let command = Path::new(&self.command);
        if !self.command.contains('/') || command.is_absolute() {
            return;
        }
        // A directory given relative to where mecha started (`--mcp-file
        // servers.json`) is made absolute first.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        self.command = dir.join(command).to_string_lossy().into_owned();
    }

    /// Checks this entry on its own; [`validate_all`] adds the checks that
    /// span entries. `sandbox_backend` says whether `[sandbox]` names a
    /// backend, which `sandbox = true` needs.
    pub fn validate(&self, sandbox_backend: bool) -> Result<(), ConfigError> {
        check_name(&self.name)?;
        let name = || self.name.clone();
        if self.url.is_some() {
            crate::remote::validate(self).map_err(|reason| ConfigError::Remote {
                name: name(),
                reason,
            })?;
        } else if self.command.trim().is_empty() {
            return Err(ConfigError::EmptyCommand { name: name() });
        } else {
            crate::remote::validate_local(self).map_err(|reason| ConfigError::Remote {
                name: name(),
                reason,
            })?;
        }
        if self.startup_timeout_s == 0 {
            return Err(ConfigError::ZeroTimeout {
                name: name(),
                field: "startup_timeout_s",
            });
        }
        if self.call_timeout_s == 0 {
            return Err(ConfigError::ZeroTimeout {
                name: name(),
                field: "call_timeout_s",
            });
        }
        for var in &self.env_passthrough {
            check_env_name(&self.name, "env_passthrough", var)?;
        }
        for (var, value) in &self.env {
            check_env_name(&self.name, "env", var)?;
            if value.contains('\0') {
                return Err(ConfigError::BadEnvValue {
                    name: name(),
                    var: var.clone(),
                });
            }
        }
        if self.sandbox && !sandbox_backend {
            return Err(ConfigError::SandboxUnavailable { name: name() });
        }
        if !self.sandbox && self.network == Some(false) {
            return Err(ConfigError::NetworkWithoutSandbox { name: name() });
        }
        if let Some(hosts) = &self.allow_hosts {
            if !self.sandbox {
                return Err(ConfigError::HostsWithoutSandbox { name: name() });
            }
            if self.network == Some(true) {
                return Err(ConfigError::HostsAndNetwork { name: name() });
            }
            Allowlist::parse(hosts).map_err(|reason| ConfigError::BadAllowHosts {
                name: name(),
                reason,
            })?;
        }
        Ok(())
    }
}

/// Checks every entry, and that no two share a name.
pub fn validate_all(configs: &[McpServerConfig], sandbox_backend: bool) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for config in configs {
        config.validate(sandbox_backend)?;
        if !seen.insert(config.name.as_str()) {
            return Err(ConfigError::DuplicateName {
                name: config.name.clone(),
            });
        }
    }
    Ok(())
}

/// A configuration mecha refuses to run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "an [[mcp]] entry has an empty `name`; give every server a short name such as \"notes\""
    )]
    EmptyName,
    #[error(
        "MCP server name `{name}` {problem}; use letters, digits, `-` and single `_`, start with a \
         letter, at most {MAX_SERVER_NAME_LEN} characters (for example `{suggestion}`)"
    )]
    BadName {
        name: String,
        problem: &'static str,
        suggestion: String,
    },
    #[error("two MCP servers are named `{name}`; server names must be unique, so rename one")]
    DuplicateName { name: String },
    #[error(
        "MCP server `{name}` has an empty `command`; set it to the server's executable, a name on \
         PATH or an absolute path"
    )]
    EmptyCommand { name: String },
    #[error("MCP server `{name}` has `{field} = 0`; give it at least 1 second, or drop the line")]
    ZeroTimeout { name: String, field: &'static str },
    #[error(
        "MCP server `{name}` lists `{var}` in `{field}`, which is not a valid environment variable \
         name; use a name without `=` or NUL"
    )]
    BadEnvName {
        name: String,
        field: &'static str,
        var: String,
    },
    #[error("MCP server `{name}` sets `{var}` in `env` to a value containing NUL; remove it")]
    BadEnvValue { name: String, var: String },
    // Word for word the spec's text, line breaks included.
    #[error(
        "MCP server `{name}` is configured with `sandbox = true`, but no sandbox backend\nis set. \
         Set [sandbox] kind = \"bwrap\" or \"docker\", or drop `sandbox = true` to\naccept that it \
         runs unconfined."
    )]
    SandboxUnavailable { name: String },
    #[error(
        "MCP server `{name}` sets `network = false`, but it runs unconfined and so keeps the \
         network whatever this says; drop `network`, or confine it with `sandbox = true`"
    )]
    NetworkWithoutSandbox { name: String },
    #[error(
        "MCP server `{name}` sets `allow_hosts`, but it runs unconfined and so reaches every \
         host whatever this says; confine it with `sandbox = true`, or drop `allow_hosts`"
    )]
    HostsWithoutSandbox { name: String },
    #[error(
        "MCP server `{name}` sets both `network = true` and `allow_hosts`; network = true gives \
         every host, allow_hosts only those listed: keep the one you mean"
    )]
    HostsAndNetwork { name: String },
    #[error("MCP server `{name}`: allow_hosts: {reason}")]
    BadAllowHosts { name: String, reason: String },
    #[error("MCP server `{name}`: {reason}")]
    Remote { name: String, reason: String },
}

fn check_name(name: &str) -> Result<(), ConfigError> {
    if name.is_empty() {
        return Err(ConfigError::EmptyName);
    }
    let problem = if name.len() > MAX_SERVER_NAME_LEN {
        Some("is too long")
    } else if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        Some("does not start with a letter")
    } else if !name.chars().all(is_tool_name_char) {
        Some("has characters the model APIs do not allow in tool names")
    } else if name.contains("__") {
        // `__` separates server from tool; one inside a server name would
        // let two servers produce the same prefixed tool name.
        Some("contains `__`, which separates a server's name from its tools'")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ConfigError::BadName {
            name: name.to_owned(),
            problem,
            suggestion: suggest_server_name(name),
        }),
    }
}

/// The nearest valid server name: what the importer uses for keys from
/// other clients' files, and what a refusal suggests.
pub fn suggest_server_name(name: &str) -> String {
    let mut out = String::new();
    for c in sanitize_tool_name(name).chars() {
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.starts_with(|c: char| c.is_ascii_alphabetic()) {
        trimmed.to_owned()
    } else {
        format!("s{trimmed}")
    };
    out.truncate(MAX_SERVER_NAME_LEN);
    while out.ends_with('_') {
        out.pop();
    }
    out
}

fn check_env_name(server: &str, field: &'static str, var: &str) -> Result<(), ConfigError> {
    if var.is_empty() || var.contains('=') || var.contains('\0') {
        return Err(ConfigError::BadEnvName {
            name: server.to_owned(),
            field,
            var: var.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use mecha_core::{Capabilities, Egress};

    fn parse(text: &str) -> Result<McpServerConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn defaults_match_the_spec() {
        let c = parse("name = \"graph\"\ncommand = \"mecha-graph-mcp\"").unwrap();
        assert_eq!(c, McpServerConfig::new("graph", "mecha-graph-mcp"));
        assert!(c.prefix_tools);
        assert_eq!(c.startup_timeout_s, 120);
        assert_eq!(c.call_timeout_s, 120);
        assert_eq!(c.force.capabilities(), Capabilities::NONE);
        c.validate(false).unwrap();
    }

    #[test]
    fn the_spec_examples_parse() {
        let c = parse(
            "name = \"graph\"\ncommand = \"mecha-graph-mcp\"\nprefix_tools = false\n\
             env_passthrough = [\"MECHA_GRAPH_DB\"]",
        )
        .unwrap();
        assert!(!c.prefix_tools);
        assert_eq!(c.env_passthrough, ["MECHA_GRAPH_DB"]);
        let c = parse(
            "name = \"notes\"\ncommand = \"notes-mcp\"\nenv_passthrough = [\"NOTES_API_TOKEN\"]\n\
             env = { NOTES_REGION = \"us\" }",
        )
        .unwrap();
        assert_eq!(c.env["NOTES_REGION"], "us");
    }

    #[test]
    fn force_only_widens() {
        let c = parse(
            "name = \"x\"\ncommand = \"x\"\nforce = { untrusted_input = true, destructive = true, \
             egress = \"chosen\", private_data = true }",
        )
        .unwrap();
        let forced = c.force.capabilities();
        assert_eq!(
            forced,
            Capabilities {
                private_data: true,
                untrusted_input: true,
                egress: Egress::Chosen,
                destructive: true
            }
        );
        let c = parse(
            "name = \"x\"\ncommand = \"x\"\nforce = { untrusted_input = false, egress = \"none\" }",
        )
        .unwrap();
        assert_eq!(c.force.capabilities(), Capabilities::NONE);
        assert!(
            parse("name = \"x\"\ncommand = \"x\"\nforce = { egress = \"everywhere\" }").is_err()
        );
        assert!(parse("name = \"x\"\ncommand = \"x\"\nforce = { narrow = true }").is_err());
    }

    #[test]
    fn a_relative_command_is_anchored_at_its_config_files_directory() {
        let anchored = |command: &str, dir: &str| {
            let mut c = McpServerConfig::new("s", command);
            c.anchor_command(Path::new(dir));
            c.command
        };
        assert_eq!(
            anchored("./bin/server", "/home/me/.mecha"),
            "/home/me/.mecha/./bin/server"
        );
        assert_eq!(
            anchored("bin/server", "/etc/mecha"),
            "/etc/mecha/bin/server"
        );
        assert_eq!(anchored("../tools/s", "/a/b"), "/a/b/../tools/s");
        assert_eq!(anchored("/usr/bin/s", "/a"), "/usr/bin/s");
        assert_eq!(anchored("npx", "/a"), "npx");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(anchored("./s", ""), cwd.join("./s").to_string_lossy());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = parse("name = \"x\"\ncommand = \"x\"\ncwd = \"/tmp\"").unwrap_err();
        assert!(e.to_string().contains("cwd"), "{e}");
    }

    #[test]
    fn sandbox_true_is_the_specs_error() {
        let mut c = McpServerConfig::new("graph", "mecha-graph-mcp");
        c.sandbox = true;
        assert_eq!(
            c.validate(false).unwrap_err().to_string(),
            "MCP server `graph` is configured with `sandbox = true`, but no sandbox backend\n\
             is set. Set [sandbox] kind = \"bwrap\" or \"docker\", or drop `sandbox = true` to\n\
             accept that it runs unconfined."
        );
        // With a backend configured it is what confines the server.
        c.validate(true).unwrap();
    }

    #[test]
    fn network_false_unconfined_cannot_be_honoured() {
        let mut c = McpServerConfig::new("web", "web-mcp");
        c.network = Some(false);
        let e = c.validate(false).unwrap_err().to_string();
        assert!(e.contains("`web`") && e.contains("network"), "{e}");
        c.network = Some(true);
        c.validate(false).unwrap();
    }

    #[test]
    fn names_are_checked_and_a_fix_suggested() {
        for (bad, suggestion) in [
            ("my.server", "my_server"),
            ("9lives", "s9lives"),
            ("a__b", "a_b"),
            ("über", "ber"),
        ] {
            let e = McpServerConfig::new(bad, "x").validate(false).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("`{bad}`")), "{text}");
            assert!(text.contains(&format!("`{suggestion}`")), "{text}");
            McpServerConfig::new(suggest_server_name(bad), "x")
                .validate(false)
                .unwrap();
        }
        let long = "a".repeat(40);
        assert!(McpServerConfig::new(&long, "x").validate(false).is_err());
        assert_eq!(
            McpServerConfig::new("", "x").validate(false),
            Err(ConfigError::EmptyName)
        );
    }

    #[test]
    fn other_mistakes_name_the_server() {
        let mut c = McpServerConfig::new("notes", " ");
        assert!(
            c.validate(false)
                .unwrap_err()
                .to_string()
                .contains("`notes`")
        );
        c.command = "notes-mcp".into();
        c.call_timeout_s = 0;
        assert!(
            c.validate(false)
                .unwrap_err()
                .to_string()
                .contains("call_timeout_s")
        );
        c.call_timeout_s = 5;
        c.env_passthrough = vec!["A=B".into()];
        assert!(c.validate(false).unwrap_err().to_string().contains("`A=B`"));
        let dup = [
            McpServerConfig::new("a", "x"),
            McpServerConfig::new("a", "y"),
        ];
        assert_eq!(
            validate_all(&dup, false),
            Err(ConfigError::DuplicateName { name: "a".into() })
        );
    }
}
