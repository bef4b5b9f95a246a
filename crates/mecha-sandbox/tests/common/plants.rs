//! Planting something for git on the host from inside the real sandbox,
//! and running git afterwards the way the user would.

use std::path::Path;
use std::process::Command;

use super::{bwrap, confine};
use mecha_sandbox::Sandbox;

/// `git` on the host, as the user runs it: whatever the repository says.
pub fn host_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `script` confined in `ws`, then sweeps, as the shell tool does.
pub async fn plant(ws: &Path, script: &str) -> (String, Vec<String>) {
    plant_with(&bwrap().expect("bubblewrap"), ws, script).await
}

pub async fn plant_with(sandbox: &Sandbox, ws: &Path, script: &str) -> (String, Vec<String>) {
    let confined = confine(sandbox, ws, script, false);
    let mut command = confined.command;
    let out = command.output().await.unwrap();
    let undone = confined.lease.sweep();
    drop(confined.lease);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, undone)
}

/// A program that, if git ever runs it, leaves `marker` behind.
pub fn payload(ws: &Path, marker: &Path) -> String {
    let script = ws.join("payload.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&script)
        .status()
        .unwrap();
    script.display().to_string()
}

pub struct Case {
    pub ws: tempfile::TempDir,
    pub marker: std::path::PathBuf,
    _outside: tempfile::TempDir,
    pub payload: String,
}

pub fn case() -> Option<Case> {
    bwrap()?;
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("RAN");
    let payload = payload(ws.path(), &marker);
    Some(Case {
        ws,
        marker,
        _outside: outside,
        payload,
    })
}
