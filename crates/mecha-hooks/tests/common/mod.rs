#![allow(dead_code, clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mecha_hooks::{HookConfig, HookContext, HookEvent, HookSet, OnError, Verdicts};

/// Writes an executable bash script `name` into `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

pub fn hook(command: &Path, matcher: Option<&str>) -> HookConfig {
    HookConfig {
        event: HookEvent::PreTool,
        matcher: matcher.map(str::to_owned),
        command: command.display().to_string(),
        timeout_s: None,
        on_error: None,
    }
}

pub fn allowing(mut config: HookConfig) -> HookConfig {
    config.on_error = Some(OnError::Allow);
    config
}

pub fn context(cwd: &Path) -> HookContext {
    HookContext {
        session_id: "sess-1".to_owned(),
        cwd: cwd.to_path_buf(),
        permission_mode: "default".to_owned(),
    }
}

pub async fn pre_tool(configs: &[HookConfig], cwd: &Path, tool: &str) -> Verdicts {
    let set = HookSet::compile(configs, cwd).unwrap();
    set.pre_tool(
        &context(cwd),
        tool,
        &serde_json::json!({"command": "ls"}),
        "toolu_1",
    )
    .await
}
