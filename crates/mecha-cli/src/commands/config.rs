//! `mecha config`: the effective configuration, each value with where it
//! came from. The origins are recorded as the layers are applied
//! (`config::origin`); this only shows them. Never prints a key's value.
//!
//! `--json` prints one object:
//! `{"files": {..}, "settings": {KEY: ENTRY}, "mcp": [ENTRY], "rules":
//! [ENTRY], "hooks": [ENTRY], "subagents": [ENTRY], "search": [ENTRY],
//! "skills": {..},
//! "instructions": "instructions: AGENTS.md (N bytes), sent whole"}`, where
//! every ENTRY is `{"value": .., "origin": "default" | "config.toml" |
//! "mecha.toml" | "environment" | "flag", "source": PATH | VARIABLE |
//! FLAG}` (`source` absent for a default).

use std::path::Path;

use clap::Args;
use mecha_provider::{Resolved, Source};
use mecha_tools::BackendSpec;
use serde_json::{Map, Value, json};

use crate::Failure;
use crate::commands::RunOptions;
use crate::config::{Origin, Settings};
use crate::skills::{Selection, SkillFlags};
use crate::terminal::printable;

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// One JSON object: each value with `value`, `origin` and `source`.
    #[arg(long)]
    json: bool,
    /// The flags `run` takes, to see what they change.
    #[command(flatten)]
    options: RunOptions,
}

pub fn run(args: ConfigArgs, mut settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    settings.apply_flags(&args.options);
    settings.apply_tool_flags(&args.options.tools);
    let mut document = document(&mut settings, &args.options);
    document["instructions"] =
        json!(crate::instructions::find(workspace, &settings.instructions_files).summary());
    if args.json {
        let text = serde_json::to_string_pretty(&document).map_err(|e| Failure::Run(e.into()))?;
        crate::output::out(&format!("{text}\n"));
    } else {
        crate::output::out(&printable(&human(&document)));
    }
    Ok(0)
}

/// Everything `mecha config` shows, in the `--json` shape.
fn document(settings: &mut Settings, options: &RunOptions) -> Value {
    let env = |name: &str| std::env::var(name).ok();
    // Builds the provider only to learn what it knows of the model (its
    // window, its output limit); it sends nothing.
    let provider = mecha_provider::build(&settings.provider, &env).ok();
    let window = provider.as_ref().and_then(|p| p.context_window());
    let max_output = provider.as_ref().and_then(|p| p.max_output_tokens());
    settings.adopt_context_window(window);
    let mut values = Map::new();
    for (key, value) in settings.tracked() {
        values.insert(key.to_owned(), settings.origins.of(key).entry(value));
    }
    let resolved = mecha_provider::resolve(&settings.provider, &env).ok();
    provider_values(&mut values, settings, resolved.as_ref());
    let known = |key: &str, value: Option<u64>, values: &mut Map<String, Value>| {
        if let (Some(value), Origin::Default) = (value, settings.origins.of(key)) {
            values.insert(key.to_owned(), Origin::Default.entry(json!(value)));
        }
    };
    known("provider.context_window", window, &mut values);
    known("provider.max_tokens", max_output, &mut values);
    // Planning is a flag alone, no key of a file: a run with it sends only
    // the read-only tools.
    let read_only = match options.plan {
        true => Origin::Flag("--plan"),
        false => Origin::Default,
    };
    values.insert(
        "tools.read_only".to_owned(),
        read_only.entry(json!(options.plan)),
    );
    let threshold = settings
        .compaction_threshold(window, max_output)
        .ok()
        .flatten()
        .map(|t| t.tokens);
    values.insert(
        "compaction.threshold_tokens".to_owned(),
        settings
            .origins
            .of("provider.compact_at_tokens")
            .entry(json!(threshold)),
    );
    json!({
        "files": {
            "config.toml": file(&settings.global_file),
            "mecha.toml": settings.project_file.as_deref().map_or(Value::Null, file),
        },
        "settings": values,
        "mcp": mcp(settings),
        "rules": rules(settings),
        "hooks": settings.hooks.usable().describe().iter().map(|h| {
            Origin::UserFile(settings.global_file.clone()).entry(json!({
                "event": h.event.to_string(),
                "matcher": h.matcher,
                "command": h.command,
                "timeout_s": h.timeout_s,
                "on_error": h.on_error.to_string(),
            }))
        }).collect::<Vec<_>>(),
        "subagents": settings.subagents.iter().map(|s| {
            Origin::UserFile(s.source.clone()).entry(json!({
                "name": s.name(),
                "tools": s.tools,
                "model": s.model,
            }))
        }).collect::<Vec<_>>(),
        "skills": skills(settings, options),
        "search": search(settings),
    })
}

/// The `[[search]]` chain in the order it is tried; a key shows only as set
/// or not.
fn search(settings: &Settings) -> Vec<Value> {
    let backends = settings
        .search
        .as_ref()
        .map_or(&[][..], |s| &s.backends[..]);
    backends
        .iter()
        .map(|entry| {
            let backend = &entry.spec;
            let value = match backend {
                BackendSpec::Searxng { url } => json!({"kind": "searxng", "url": url.as_str()}),
                BackendSpec::Brave {
                    base_url,
                    api_key_env,
                }
                | BackendSpec::Tavily {
                    base_url,
                    api_key_env,
                } => json!({
                    "kind": backend.kind(),
                    "base_url": base_url.as_str(),
                    "api_key_env": api_key_env,
                    "key": if std::env::var_os(api_key_env).is_some_and(|v| !v.is_empty()) {
                        "set"
                    } else {
                        "not set"
                    },
                }),
                BackendSpec::Mcp { tool } => json!({"kind": "mcp", "tool": tool}),
            };
            Origin::UserFile(settings.global_file.clone()).entry(value)
        })
        .collect()
}

fn file(path: &Path) -> Value {
    json!({ "path": path.display().to_string(), "exists": path.is_file() })
}

/// The provider as a run would pick it: what config set, or else what
/// the environment or the defaults gave. The key shows only as set or not.
fn provider_values(
    values: &mut Map<String, Value>,
    settings: &Settings,
    resolved: Option<&Resolved>,
) {
    let Some(resolved) = resolved else {
        return;
    };
    let mut put = |key: &'static str, value: Value, source: &Source| {
        let origin = Origin::of_provider(settings.origins.of(key), source);
        values.insert(key.to_owned(), origin.entry(value));
    };
    put(
        "provider.kind",
        json!(resolved.kind.value.as_str()),
        &resolved.kind.source,
    );
    if let Some(model) = &resolved.model {
        put("provider.model", json!(model.value), &model.source);
    }
    if let Some(url) = &resolved.base_url {
        put("provider.base_url", json!(url.value), &url.source);
    }
    if let Some(key_env) = &resolved.key_env {
        let set = if resolved.key_set { "set" } else { "not set" };
        values.insert(
            "provider.api_key".to_owned(),
            Origin::Env(key_env.clone()).entry(json!(set)),
        );
    }
}

fn mcp(settings: &Settings) -> Vec<Value> {
    settings
        .mcp
        .iter()
        .enumerate()
        .map(|(i, server)| {
            let c = &server.config;
            // Only the names of `env`: its values may be secrets.
            settings.origins.mcp(i).entry(json!({
                "name": c.name,
                "command": c.command,
                "args": c.args,
                "file": server.source,
                "sandbox": c.sandbox,
                "env_passthrough": c.env_passthrough,
                "env": c.env.keys().collect::<Vec<_>>(),
            }))
        })
        .collect()
}

fn rules(settings: &Settings) -> Vec<Value> {
    settings
        .rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let action = match rule.action {
                mecha_core::RuleAction::Allow => "allow",
                mecha_core::RuleAction::Prompt => "prompt",
                mecha_core::RuleAction::Forbid => "forbid",
            };
            settings.origins.rule(i).entry(json!({
                "tool": rule.tool,
                "action": action,
                "command": rule.command,
                "input": rule.input,
            }))
        })
        .collect()
}

fn skills(settings: &Settings, options: &RunOptions) -> Value {
    let flags = SkillFlags {
        only: options.skills.clone(),
        none: options.no_skills,
    };
    let mut selection = Selection::load(&settings.skills, &flags);
    selection.narrow_to_tools(&settings.tool_filter(options.plan));
    json!({
        "dir": settings.origins.of("skills.dir").entry(json!(settings.skills.dir.display().to_string())),
        "carried": selection.carried.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        "withheld": selection.withheld.iter().map(|(s, why)| json!({"name": s.name, "why": why})).collect::<Vec<_>>(),
        "failed": selection.failures.iter().map(|f| json!({"dir": f.dir_name, "why": f.to_string()})).collect::<Vec<_>>(),
    })
}

/// The document for people: one line per value, with its origin.
fn human(document: &Value) -> String {
    let mut out = String::new();
    let files = &document["files"];
    for name in ["config.toml", "mecha.toml"] {
        let line = match &files[name] {
            Value::Null => format!("{name}: none in the workspace\n"),
            f if f["exists"] == true => format!("{name}: {}\n", plain(&f["path"])),
            f => format!("{name}: {} (absent)\n", plain(&f["path"])),
        };
        out.push_str(&line);
    }
    out.push('\n');
    if let Some(values) = document["settings"].as_object() {
        let width = values.keys().map(String::len).max().unwrap_or(0);
        for (key, entry) in values {
            out.push_str(&format!(
                "{key:<width$}  {}  ({})\n",
                plain(&entry["value"]),
                origin(entry)
            ));
        }
    }
    for (list, title) in [
        ("mcp", "MCP servers"),
        ("rules", "rules"),
        ("hooks", "hooks"),
        ("subagents", "subagents"),
        ("search", "search backends, tried in order"),
    ] {
        let entries = document[list].as_array().map_or(&[][..], Vec::as_slice);
        out.push_str(&format!("\n{title}: {}\n", entries.len()));
        for entry in entries {
            out.push_str(&format!(
                "  {}  ({})\n",
                pairs(&entry["value"]),
                origin(entry)
            ));
        }
    }
    out.push_str(&format!("\n{}\n", plain(&document["instructions"])));
    let skills = &document["skills"];
    let count = |key: &str| skills[key].as_array().map_or(0, Vec::len);
    out.push_str(&format!(
        "\nskills: {} carried, {} withheld, {} failed, from {}  ({})\n",
        count("carried"),
        count("withheld"),
        count("failed"),
        plain(&skills["dir"]["value"]),
        origin(&skills["dir"])
    ));
    out
}

/// A value as a person reads it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "(unset)".to_owned(),
        other => other.to_string(),
    }
}

/// An object as `key=value` pairs, leaving out what is unset or empty.
fn pairs(value: &Value) -> String {
    let Some(fields) = value.as_object() else {
        return plain(value);
    };
    let empty = |v: &Value| match v {
        Value::Null | Value::Bool(false) => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    fields
        .iter()
        .filter(|(_, v)| !empty(v))
        .map(|(k, v)| format!("{k}={}", plain(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An entry's origin as `layer` or `layer: source`.
fn origin(entry: &Value) -> String {
    match entry["source"].as_str() {
        Some(source) => format!("{}: {source}", plain(&entry["origin"])),
        None => plain(&entry["origin"]),
    }
}
