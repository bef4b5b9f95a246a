//! Reads the `mcpServers` JSON other clients use (Claude Desktop's
//! `claude_desktop_config.json`, Claude Code's `.mcp.json`, Cursor's
//! `mcp.json`; VS Code's `servers` key too) into [`McpServerConfig`]s.
//!
//! `${VAR}` is deliberately not expanded: a file that writes
//! `"X": "${ANTHROPIC_API_KEY}"` would hand mecha's own key to the server.
//! `"NAME": "${NAME}"` is the one spelling with a safe meaning, and becomes
//! `env_passthrough = ["NAME"]`; any other `${` skips the server with a
//! reason. Whether to trust a file at all (a project's `.mcp.json` comes
//! with the repository) is the caller's decision.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::{McpServerConfig, suggest_server_name};

/// What a file yielded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportedServers {
    pub servers: Vec<McpServerConfig>,
    /// Entries mecha cannot run, with why; never silently dropped.
    pub skipped: Vec<SkippedServer>,
}

/// An entry left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedServer {
    /// The entry's key in the file.
    pub name: String,
    pub reason: String,
}

/// A file that cannot be read as `mcpServers` JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct ImportError {
    pub path: PathBuf,
    pub message: String,
}

/// Reads and parses `path`.
pub fn read_mcp_servers_json(path: &Path) -> Result<ImportedServers, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ImportError {
        path: path.to_owned(),
        message: format!("cannot read: {e}"),
    })?;
    parse_mcp_servers_json(&text, path)
}

/// Parses `text`, read from `path`: messages name it, and a relative
/// `command` resolves against its directory.
pub fn parse_mcp_servers_json(text: &str, path: &Path) -> Result<ImportedServers, ImportError> {
    let fail = |message: String| ImportError {
        path: path.to_owned(),
        message,
    };
    let root: Value =
        serde_json::from_str(text).map_err(|e| fail(format!("not valid JSON: {e}")))?;
    let entries = ["mcpServers", "servers"]
        .iter()
        .find_map(|key| root.get(key).map(|v| (*key, v)));
    let Some((key, entries)) = entries else {
        return Err(fail(
            "no `mcpServers` object; expected {\"mcpServers\": {\"name\": {\"command\": \"...\", \
             \"args\": [...], \"env\": {...}}}}"
                .into(),
        ));
    };
    let Some(entries) = entries.as_object() else {
        return Err(fail(format!("`{key}` is not an object")));
    };

    let mut out = ImportedServers::default();
    let mut names = BTreeSet::new();
    for (raw_name, entry) in entries {
        let Some(entry) = entry.as_object() else {
            return Err(fail(format!("`{key}.{raw_name}` is not an object")));
        };
        let mut config = match entry_to_config(raw_name, entry) {
            Ok(Entry::Server(config)) => *config,
            Ok(Entry::Skip(reason)) => {
                out.skipped.push(SkippedServer {
                    name: raw_name.clone(),
                    reason,
                });
                continue;
            }
            Err(message) => return Err(fail(format!("MCP server `{raw_name}`: {message}"))),
        };
        if !names.insert(config.name.clone()) {
            return Err(fail(format!(
                "MCP server `{raw_name}` becomes `{}` in mecha, which another entry already \
                 uses; rename one of them",
                config.name
            )));
        }
        config.validate(false).map_err(|e| fail(e.to_string()))?;
        config.anchor_command(path.parent().unwrap_or(Path::new("")));
        out.servers.push(config);
    }
    Ok(out)
}

/// A `url` entry (`"type": "http"`, `"streamable-http"`, `"sse"` or none):
/// a remote server, its `headers` kept as written (`${VAR}` is read when it
/// connects).
fn remote_entry(raw_name: &str, kind: &str, entry: &Map<String, Value>) -> Result<Entry, String> {
    let transport = match kind {
        "sse" => Some("sse".to_owned()),
        "http" | "streamable-http" | "stdio" => None,
        other => {
            return Ok(Entry::Skip(format!(
                "`\"type\": \"{other}\"` is no transport mecha knows; use \"http\" or \"sse\""
            )));
        }
    };
    let url = match entry.get("url") {
        Some(Value::String(url)) if !url.trim().is_empty() => url.clone(),
        _ => return Err("a remote server needs `url`, as a non-empty string".into()),
    };
    let mut config = McpServerConfig::new(raw_name, "");
    config.url = Some(url);
    config.transport = transport;
    if let Some(headers) = entry.get("headers") {
        let Some(headers) = headers.as_object() else {
            return Err("`headers` must be an object of strings".into());
        };
        for (name, value) in headers {
            let Some(value) = value.as_str() else {
                return Err(format!("`headers.{name}` must be a string"));
            };
            config.headers.insert(name.clone(), value.to_owned());
        }
    }
    Ok(Entry::Server(Box::new(config)))
}

enum Entry {
    Server(Box<McpServerConfig>),
    Skip(String),
}

fn entry_to_config(raw_name: &str, entry: &Map<String, Value>) -> Result<Entry, String> {
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(Entry::Skip("disabled in the file".into()));
    }
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
    if kind != "stdio" || entry.contains_key("url") {
        return remote_entry(raw_name, kind, entry);
    }
    if entry.contains_key("cwd") {
        return Ok(Entry::Skip(
            "sets `cwd`, but mecha starts every server in the run's workspace; drop `cwd` or \
             start the server through a script that changes directory"
                .into(),
        ));
    }
    let command = match entry.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(_) => return Err("`command` must be a non-empty string".into()),
        None => return Err("no `command`; a stdio server needs the program to run".into()),
    };
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("`args` must be an array of strings")?,
        Some(_) => return Err("`args` must be an array of strings".into()),
    };

    let mut config = McpServerConfig::new(suggest_or_keep(raw_name), command);
    config.args = args;
    match entry.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(env)) => {
            for (var, value) in env {
                let Some(value) = value.as_str() else {
                    return Err(format!("`env.{var}` must be a string"));
                };
                if value == format!("${{{var}}}") {
                    config.env_passthrough.push(var.clone());
                } else {
                    config.env.insert(var.clone(), value.to_owned());
                }
            }
        }
        Some(_) => return Err("`env` must be an object of strings".into()),
    }

    let expanded = std::iter::once(&config.command)
        .chain(&config.args)
        .chain(config.env.values())
        .find(|s| s.contains("${"));
    if let Some(text) = expanded {
        return Ok(Entry::Skip(format!(
            "uses `${{...}}` expansion (`{text}`), which mecha does not do, because it would hand \
             mecha's own environment to the server; write the value out, or use \
             `\"NAME\": \"${{NAME}}\"` to pass a variable of the same name through"
        )));
    }
    Ok(Entry::Server(Box::new(config)))
}

/// The key itself when it is already a valid server name.
fn suggest_or_keep(raw: &str) -> String {
    if McpServerConfig::new(raw, "x").validate(false).is_ok() {
        raw.to_owned()
    } else {
        suggest_server_name(raw)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn parse(text: &str) -> Result<ImportedServers, ImportError> {
        parse_mcp_servers_json(text, Path::new("/home/me/.mcp.json"))
    }

    #[test]
    fn claude_desktop_shape() {
        let got = parse(
            r#"{"mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
                "notes": {"command": "notes-mcp", "env": {"NOTES_REGION": "us", "NOTES_API_TOKEN": "${NOTES_API_TOKEN}"}}
            }}"#,
        )
        .unwrap();
        assert!(got.skipped.is_empty());
        assert_eq!(got.servers.len(), 2);
        let fs = &got.servers[0];
        assert_eq!(fs.name, "filesystem");
        assert_eq!(fs.command, "npx");
        assert_eq!(fs.args.len(), 3);
        assert!(fs.prefix_tools);
        let notes = &got.servers[1];
        assert_eq!(notes.env["NOTES_REGION"], "us");
        assert_eq!(notes.env_passthrough, ["NOTES_API_TOKEN"]);
        assert!(!notes.env.contains_key("NOTES_API_TOKEN"));
    }

    #[test]
    fn remote_entries_run_and_odd_ones_are_reported_not_dropped() {
        let got = parse(
            r#"{"mcpServers": {
                "docs": {"type": "http", "url": "https://example.com/mcp",
                         "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
                "old": {"url": "https://example.com/mcp2"},
                "sse": {"type": "sse", "url": "https://example.com/sse"},
                "ws": {"type": "websocket", "url": "wss://example.com/ws"},
                "off": {"command": "x", "disabled": true},
                "moved": {"command": "x", "cwd": "/srv"},
                "leaky": {"command": "x", "env": {"TOKEN": "${ANTHROPIC_API_KEY}"}},
                "ok": {"type": "stdio", "command": "ok-mcp"}
            }}"#,
        )
        .unwrap();
        let names: Vec<&str> = got.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "ok", "old", "sse"]);
        let docs = &got.servers[0];
        assert_eq!(docs.url.as_deref(), Some("https://example.com/mcp"));
        assert_eq!(docs.headers["Authorization"], "Bearer ${DOCS_TOKEN}");
        assert!(docs.validate(false).is_ok());
        assert_eq!(got.servers[3].transport.as_deref(), Some("sse"));
        assert!(got.servers[3].validate(false).is_ok());
        let skipped: Vec<&str> = got.skipped.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(skipped, ["leaky", "moved", "off", "ws"]);
        let reason = |n: &str| &got.skipped.iter().find(|s| s.name == n).unwrap().reason;
        assert!(reason("ws").contains("`\"type\": \"websocket\"`"));
        assert!(reason("leaky").contains("ANTHROPIC_API_KEY"));
        assert!(reason("moved").contains("cwd"));
    }

    #[test]
    fn errors_name_the_file_and_the_server() {
        let e = parse("{\"mcpServers\": {\"x\": {\"args\": []}}}").unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("/home/me/.mcp.json: "), "{text}");
        assert!(text.contains("`x`") && text.contains("command"), "{text}");

        let e =
            parse("{\"mcpServers\": {\"x\": {\"command\": \"x\", \"args\": [1]}}}").unwrap_err();
        assert!(e.to_string().contains("args"));
        let e = parse("{\"mcp\": {}}").unwrap_err();
        assert!(e.to_string().contains("mcpServers"));
        let e = parse("{\"mcpServers\": {").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn a_relative_command_resolves_against_the_files_directory() {
        let got = parse(
            r#"{"mcpServers": {"local": {"command": "./bin/server"}, "npx": {"command": "npx"}}}"#,
        )
        .unwrap();
        assert_eq!(got.servers[0].command, "/home/me/./bin/server");
        assert_eq!(got.servers[1].command, "npx");
    }

    #[test]
    fn names_are_made_valid_and_collisions_refused() {
        let got = parse(r#"{"servers": {"my.server": {"command": "x"}}}"#).unwrap();
        assert_eq!(got.servers[0].name, "my_server");
        let e = parse(r#"{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}"#)
            .unwrap_err();
        assert!(e.to_string().contains("rename"), "{e}");
    }
}
