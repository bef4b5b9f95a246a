#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The spare sandbox a confined `shell` starts as a call ends: the next
//! call runs in it, exactly as in a fresh one; a protection mount the host
//! undid while it waited sends the call to a fresh sandbox; a spare that
//! goes unused is not swept (a repository the user made meanwhile is the
//! user's); and it goes with the tool, placeholders and all.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_sandbox::{HostEnv, Sandbox, SandboxConfig, SandboxError, SandboxKind};
use mecha_tools::{Shell, ShellConfig};
use serde_json::json;

/// One test at a time: each looks for its spare among this process's
/// descendants.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One sandbox for the whole file, its probe run once: a probe's bwrap
/// is a child no reaper knows of, and the reap a finished test's tool
/// leaves running could collect it.
fn sandbox() -> Option<Sandbox> {
    static SANDBOX: OnceLock<Option<Sandbox>> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            let config = SandboxConfig {
                kind: Some(SandboxKind::Bwrap),
                ..SandboxConfig::default()
            };
            match Sandbox::start(&config, HostEnv::current()) {
                Ok(sandbox) => sandbox,
                Err(SandboxError::BwrapMissing) if std::env::var_os("CI").is_none() => None,
                Err(e) => panic!("{e}"),
            }
        })
        .clone()
}

fn confined(sandbox: &Sandbox) -> Shell {
    Shell::new(ShellConfig {
        sandbox: Some(sandbox.clone()),
        ..ShellConfig::default()
    })
}

fn ctx(dir: &Path) -> ToolCtx {
    ToolCtx::new(&dir.canonicalize().unwrap(), 16 * 1024)
        .unwrap()
        .for_call("t1", 1, 16 * 1024)
}

async fn run(shell: &Shell, ctx: &ToolCtx, command: &str) -> ToolOutput {
    shell
        .call(json!({ "command": command }), ctx)
        .await
        .unwrap()
}

/// Each process's parent and state, from `/proc`.
fn processes() -> Vec<(u32, u32, String, char)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_owned();
            let mut fields = rest.split_whitespace();
            let state = fields.next()?.chars().next()?;
            let parent = fields.next()?.parse().ok()?;
            Some((pid, parent, name, state))
        })
        .collect()
}

/// The spare's bwrap: a child of this process whose sandbox runs a bash
/// that waits (bwrap, its pid-1 bwrap, then bash).
fn spare_bwrap() -> Option<u32> {
    let all = processes();
    let parent_of = |pid: u32| all.iter().find(|p| p.0 == pid).map(|p| p.1);
    let me = std::process::id();
    all.iter()
        .filter(|(_, _, name, state)| name == "bash" && *state == 'S')
        .find_map(|(pid, ..)| {
            let init = parent_of(*pid)?;
            let outer = parent_of(init)?;
            (parent_of(outer)? == me).then_some(outer)
        })
}

/// Waits for the spare a call leaves, and a moment more for the tool to
/// have it in hand.
async fn spare_started() -> u32 {
    for _ in 0..200 {
        if let Some(pid) = spare_bwrap() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no spare sandbox was started");
}

fn alive(pid: u32) -> bool {
    processes()
        .iter()
        .any(|(p, _, _, state)| *p == pid && *state != 'Z')
}

fn git(args: &[&str], dir: &Path) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Clock ticks since boot, as `/proc/PID/stat` counts a start time.
fn ticks_now() -> u64 {
    let uptime = std::fs::read_to_string("/proc/uptime").unwrap();
    let secs: f64 = uptime.split_whitespace().next().unwrap().parse().unwrap();
    (secs * 100.0) as u64
}

#[tokio::test]
async fn a_confined_call_runs_in_a_sandbox_started_before_it() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    assert!(!run(&shell, &ctx, "true").await.is_error);
    let spare = spare_started().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = ticks_now();
    let out = run(&shell, &ctx, "cut -d' ' -f22 /proc/$$/stat").await;
    let started: u64 = out.content.trim().parse().expect(&out.content);
    assert!(
        started + 10 < asked,
        "the command's bash started at tick {started}, the call at {asked}"
    );
    assert!(!alive(spare), "the spare's sandbox ended with its call");
}

/// What a command can see of the bash it runs in.
const PROBE: &str = r#"printf '%s|' "$#" "$0" "$PWD" "${c-unset}" "${d-unset}" "$(pwd)"
cat; ls /proc/self/fd | wc -l; ls /tmp | wc -l; echo "${GIT_TERMINAL_PROMPT-unset}"
touch .git/hooks/x 2>/dev/null || echo hooks read-only
trap 'echo bye' EXIT
(exit 3)"#;

#[tokio::test]
async fn a_confined_spare_runs_a_command_as_a_fresh_sandbox_does() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    git(&["init", "-q"], dir.path());
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    let fresh = run(&shell, &ctx, PROBE).await;
    spare_started().await;
    let spare = run(&shell, &ctx, PROBE).await;
    assert_eq!(spare.content, fresh.content);
    assert!(
        spare.is_error && spare.content.contains("hooks read-only\nbye"),
        "{}",
        spare.content
    );
}

#[tokio::test]
async fn a_hooks_mount_undone_while_the_spare_waited_does_not_open_the_hooks() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    git(&["init", "-q"], dir.path());
    let hooks = dir.path().join(".git/hooks");
    std::fs::remove_dir_all(&hooks).unwrap();
    std::fs::create_dir(&hooks).unwrap();
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    assert!(!run(&shell, &ctx, "true").await.is_error);
    spare_started().await;
    // Removing a mount point in another namespace detaches the mount there.
    std::fs::remove_dir(&hooks).unwrap();
    std::fs::create_dir(&hooks).unwrap();
    let out = run(&shell, &ctx, "echo '#!/bin/sh' > .git/hooks/pre-commit").await;
    assert!(out.is_error, "{}", out.content);
    assert!(!hooks.join("pre-commit").exists());
}

#[tokio::test]
async fn a_repository_made_while_an_unused_spare_waited_is_not_swept() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    assert!(!run(&shell, &ctx, "true").await.is_error);
    spare_started().await;
    // The user's own repository, with a hook, made on the host.
    let nested = dir.path().join("mine");
    std::fs::create_dir(&nested).unwrap();
    git(&["init", "-q"], &nested);
    let hook = nested.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let out = run(&shell, &ctx, "true").await;
    assert!(!out.content.contains("undid"), "{}", out.content);
    drop(shell);
    mecha_sandbox::wait_for_background_sweeps(Duration::from_secs(10));
    assert!(hook.exists(), "the user's hook was swept");
}

#[tokio::test]
async fn the_confined_spare_goes_with_the_tool_and_its_placeholders_with_it() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    assert!(!run(&shell, &ctx, "true").await.is_error);
    let spare = spare_started().await;
    let placeholder = dir.path().join(".git");
    assert!(placeholder.is_dir(), "the waiting sandbox holds its mounts");
    drop(shell);
    mecha_sandbox::wait_for_background_sweeps(Duration::from_secs(10));
    assert!(!alive(spare), "the spare {spare} outlived its tool");
    assert!(!placeholder.exists(), "the placeholder outlived the spare");
}

#[tokio::test]
async fn spares_that_keep_going_unused_are_no_longer_started() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ctx_a, ctx_b) = (ctx(a.path()), ctx(b.path()));
    let shell = confined(&sandbox);
    // Each call's spare is made for the other workspace: unused.
    for ctx in [&ctx_a, &ctx_b, &ctx_a] {
        assert!(!run(&shell, ctx, "true").await.is_error);
        spare_started().await;
    }
    assert!(!run(&shell, &ctx_b, "true").await.is_error);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(spare_bwrap(), None, "a fourth spare was started");
    // Calls still run, each in a sandbox of its own.
    let out = run(&shell, &ctx_a, "touch .git/hooks/x").await;
    assert!(out.is_error, "{}", out.content);
}

#[tokio::test]
async fn a_command_with_a_nul_is_refused_whole_not_cut_short_on_the_spare() {
    let Some(sandbox) = sandbox() else { return };
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (shell, ctx) = (confined(&sandbox), ctx(dir.path()));
    assert!(!run(&shell, &ctx, "true").await.is_error);
    spare_started().await;
    let out = run(&shell, &ctx, "touch made\0; echo after").await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        !dir.path().join("made").exists(),
        "the spare ran the first part"
    );
}
