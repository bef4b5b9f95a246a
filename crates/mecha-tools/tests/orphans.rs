#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What a shell command leaves behind after escaping its process group
//! (`setsid`, a double fork) is killed and reaped as the call ends. This
//! test process is a child subreaper, as the `mecha` binary is, so escaped
//! processes are re-parented to it; it spawns nothing but shell calls, since
//! a subreaper treats any child it did not register as an orphan.

use std::path::Path;

use mecha_core::{ToolCtx, ToolOutput};
use mecha_tools::{Shell, ShellConfig};
use serde_json::json;

fn ctx(dir: &Path) -> ToolCtx {
    mecha_core::become_subreaper().unwrap();
    ToolCtx::new(dir, 1 << 16)
        .unwrap()
        .for_call("t1", 1, 1 << 16)
}

async fn run(ctx: &ToolCtx, command: &str) -> ToolOutput {
    use mecha_core::Tool;
    Shell::new(ShellConfig::default())
        .call(json!({ "command": command }), ctx)
        .await
        .unwrap()
}

/// Whether the process exists at all: alive, or a zombie nobody reaped.
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn is_running_sleep(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.contains("(sleep)") && !stat.contains(") Z "))
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_setsid_process_is_killed_and_reaped_when_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let out = run(&ctx, "setsid sleep 300 > /dev/null 2>&1 & echo $!").await;
    assert!(!out.is_error, "{}", out.content);
    let pid: u32 = out.content.trim().parse().unwrap();
    assert!(!exists(pid), "`setsid sleep 300 &` outlived its command");
}

#[tokio::test]
async fn a_double_fork_leaves_no_zombie() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let out = run(
        &ctx,
        "(sleep 300 > /dev/null 2>&1 & echo $! > bg.pid); echo started",
    )
    .await;
    assert_eq!(out.content, "started\n");
    let pid = read_pid(&dir.path().join("bg.pid"));
    assert!(!exists(pid), "`(sleep 300 &)` outlived its command");
}

#[tokio::test]
async fn a_detached_tree_dies_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let out = run(
        &ctx,
        "setsid sh -c 'sleep 300 & echo $! > inner.pid; setsid sleep 300 & echo $! > deeper.pid; \
         wait' > /dev/null 2>&1 & echo $! > outer.pid; \
         while [ ! -s deeper.pid ]; do sleep 0.01; done",
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    for file in ["outer.pid", "inner.pid", "deeper.pid"] {
        let pid = read_pid(&dir.path().join(file));
        assert!(!exists(pid), "{file}: {pid} outlived its command");
    }
}

#[tokio::test]
async fn a_running_commands_background_job_is_spared_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    // A's sleep is re-parented to this process while A still runs (its
    // `sh` exits), but stays in A's process group.
    let a = run(
        &ctx,
        "sh -c 'sleep 300 > /dev/null 2>&1 & echo $! > a.pid'; \
         while [ ! -e go ]; do sleep 0.01; done",
    );
    let b = async {
        let out = run(&ctx, "while [ ! -s a.pid ]; do sleep 0.01; done; echo b").await;
        assert_eq!(out.content, "b\n");
        let pid = read_pid(&dir.path().join("a.pid"));
        assert!(
            is_running_sleep(pid),
            "B's clean-up killed A's background job while A ran"
        );
        std::fs::write(dir.path().join("go"), "").unwrap();
        pid
    };
    let (a, pid) = tokio::join!(a, b);
    assert!(!a.is_error, "{}", a.content);
    assert!(!exists(pid), "A's background job outlived A");
}

/// The children of this process named `bwrap` that died and were not
/// collected (the spare sandbox a call starts for the next one lives on).
fn bwrap_zombies() -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let Some((head, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            head.ends_with("(bwrap")
                && fields.next() == Some("Z")
                && fields.next() == Some(me.as_str())
        })
        .collect()
}

/// A confined command's sandbox leaves its pid-1 process to mecha, dead:
/// the call collects it before it returns.
#[tokio::test]
async fn a_confined_command_leaves_no_zombie() {
    use mecha_core::Tool;
    use mecha_sandbox::{HostEnv, Sandbox, SandboxConfig, SandboxError, SandboxKind};
    let config = SandboxConfig {
        kind: Some(SandboxKind::Bwrap),
        ..SandboxConfig::default()
    };
    let sandbox = match Sandbox::start(&config, HostEnv::current()) {
        Ok(sandbox) => sandbox,
        Err(SandboxError::BwrapMissing) if std::env::var_os("CI").is_none() => return,
        Err(e) => panic!("{e}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let shell = Shell::new(ShellConfig {
        sandbox,
        ..ShellConfig::default()
    });
    for _ in 0..3 {
        let out = shell
            .call(json!({ "command": "echo confined" }), &ctx)
            .await
            .unwrap();
        assert!(out.content.contains("confined"), "{}", out.content);
        assert_eq!(bwrap_zombies(), Vec::<String>::new());
    }
}
