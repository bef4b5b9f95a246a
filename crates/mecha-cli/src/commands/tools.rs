//! `mecha tools`: what a run would get, without needing a provider.

use std::io::Write;

use clap::Args;
use mecha_core::Registry;
use serde_json::json;

use crate::Failure;
use crate::config::Settings;
use crate::wiring::{build_registry, narrow_by_flags};

#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Print exactly the tool list the model is sent.
    #[arg(long, conflicts_with = "json")]
    schema: bool,
    /// Print each tool's capabilities and read_only flag as JSON.
    #[arg(long)]
    json: bool,
    /// Keep only this tool (repeatable); narrows config, never widens it.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
}

pub fn run(args: ToolsArgs, mut settings: Settings) -> Result<(), Failure> {
    narrow_by_flags(&mut settings, &args.tools)?;
    let registry = build_registry(&settings)?;
    let text = if args.schema {
        schema(&registry)?
    } else if args.json {
        capabilities_json(&registry)?
    } else {
        human(&registry, &settings)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Run(e.into()))
}

/// The tool list exactly as it goes to the model: compact JSON, sorted.
fn schema(registry: &Registry) -> Result<String, Failure> {
    let mut text =
        serde_json::to_string(&registry.definitions()).map_err(|e| Failure::Run(e.into()))?;
    text.push('\n');
    Ok(text)
}

fn capabilities_json(registry: &Registry) -> Result<String, Failure> {
    let tools: Vec<_> = registry
        .iter()
        .map(|t| {
            json!({
                "name": t.name(),
                "source": "builtin",
                "read_only": t.read_only(),
                "capabilities": t.capabilities(),
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&tools).map_err(|e| Failure::Run(e.into()))?;
    text.push('\n');
    Ok(text)
}

fn human(registry: &Registry, settings: &Settings) -> String {
    let mut out = String::from(
        "sandbox: none (shell runs unconfined, as you; a sandbox backend is not configurable yet)\n",
    );
    let width = registry.names().map(str::len).max().unwrap_or(0);
    let plural = if registry.len() == 1 { "" } else { "s" };
    out.push_str(&format!("{} tool{plural}:\n", registry.len()));
    for tool in registry.iter() {
        out.push_str(&format!(
            "  {:width$}  {}\n",
            tool.name(),
            first_sentence(tool.description())
        ));
    }
    let present = |p: &std::path::Path| if p.exists() { "" } else { " (absent)" };
    out.push_str(&format!(
        "config: {}{}\n",
        settings.global_file.display(),
        present(&settings.global_file)
    ));
    if let Some(project) = &settings.project_file {
        out.push_str(&format!("narrowed by {}\n", project.display()));
    }
    out
}

fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}
