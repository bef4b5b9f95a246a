//! Turning settings into concrete tools. The only place that names them.

use mecha_core::Registry;

use crate::Failure;
use crate::config::Settings;

/// Every built-in the settings allow, in a sorted registry.
pub fn build_registry(settings: &Settings) -> Result<Registry, Failure> {
    let mut registry = Registry::new();
    for tool in mecha_tools::builtin_tools(&settings.builtins) {
        if settings.tool_allowed(tool.name()) {
            registry
                .register(tool)
                .map_err(|e| Failure::Run(anyhow::Error::new(e)))?;
        }
    }
    Ok(registry)
}

/// Names in config or on the command line that match no tool: reported, so
/// a typo does not pass for a deliberate narrowing.
pub fn unknown_names<'a>(
    names: impl IntoIterator<Item = &'a String>,
    known: &[&str],
) -> Vec<&'a str> {
    names
        .into_iter()
        .map(String::as_str)
        .filter(|n| !known.contains(n))
        .collect()
}
