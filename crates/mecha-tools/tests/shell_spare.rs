#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The spare bash an unconfined `shell` starts as a call ends: the next
//! call runs on it, it runs a command exactly as a fresh `bash -c` does,
//! a spare that died while it waited costs nothing but its time, and it
//! goes when the tool goes.

use std::time::Duration;

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_tools::{Shell, ShellConfig};
use serde_json::json;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn ctx(dir: &std::path::Path) -> ToolCtx {
    ToolCtx::new(dir, 16 * 1024)
        .unwrap()
        .for_call("t1", 1, 16 * 1024)
}

async fn run(shell: &Shell, ctx: &ToolCtx, command: &str) -> ToolOutput {
    shell
        .call(json!({ "command": command }), ctx)
        .await
        .unwrap()
}

/// The spare's pid: a child of this process running bash, waiting.
fn spare_pid() -> Option<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let waiting = head.ends_with("(bash") && fields.first() == Some(&"S");
            (waiting && fields.get(1) == Some(&me.as_str())).then_some(pid)
        })
}

/// Waits for the spare a call leaves to be started.
async fn spare_started() -> u32 {
    for _ in 0..100 {
        if let Some(pid) = spare_pid() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no spare bash was started");
}

/// Clock ticks since boot, as `/proc/PID/stat` counts a start time.
fn ticks_now() -> u64 {
    let uptime = std::fs::read_to_string("/proc/uptime").unwrap();
    let secs: f64 = uptime.split_whitespace().next().unwrap().parse().unwrap();
    (secs * 100.0) as u64
}

/// A `shell` whose first call has ended and whose spare is waiting, in a
/// workspace of its own; one at a time, since each looks for its spare
/// among this process's children.
struct Primed {
    _serial: tokio::sync::MutexGuard<'static, ()>,
    _dir: tempfile::TempDir,
    ctx: ToolCtx,
    shell: Shell,
    spare: u32,
}

async fn primed() -> Primed {
    let serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir.path().canonicalize().unwrap());
    let shell = Shell::new(ShellConfig::default());
    assert!(!run(&shell, &ctx, "true").await.is_error);
    let spare = spare_started().await;
    Primed {
        _serial: serial,
        _dir: dir,
        ctx,
        shell,
        spare,
    }
}

#[tokio::test]
async fn a_later_call_runs_on_a_bash_started_before_it() {
    let p = primed().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = ticks_now();
    let out = run(&p.shell, &p.ctx, "cut -d' ' -f22 /proc/$$/stat").await;
    let started: u64 = out.content.trim().parse().expect(&out.content);
    assert!(
        started + 10 < asked,
        "the command's bash started at tick {started}, the call at {asked}"
    );
}

/// What a command can see of the bash it runs in.
const PROBE: &str = r#"printf '%s|' "$#" "$0" "$PWD" "${c-unset}" "${d-unset}" "$(pwd)"
cat; ls /proc/self/fd | wc -l; echo "${GIT_TERMINAL_PROMPT-unset}"
trap 'echo bye' EXIT
(exit 3)"#;

#[tokio::test]
async fn a_spare_runs_a_command_as_a_fresh_bash_does() {
    let p = primed().await;
    let fresh = run(&Shell::new(ShellConfig::default()), &p.ctx, PROBE).await;
    let spare = run(&p.shell, &p.ctx, PROBE).await;
    assert_eq!(spare.content, fresh.content);
    assert!(
        spare.is_error && spare.content.contains("bye"),
        "{}",
        spare.content
    );
    // A multi-line command with a here-document and quotes of both kinds.
    spare_started().await;
    let heredoc = run(
        &p.shell,
        &p.ctx,
        "cat <<'EOF'\n$HOME 'a' \"b\"\nEOF\necho done",
    )
    .await;
    assert_eq!(
        heredoc.content.lines().take(2).collect::<Vec<_>>(),
        ["$HOME 'a' \"b\"", "done"]
    );
}

#[tokio::test]
async fn a_spare_that_died_while_it_waited_gives_way_to_a_fresh_bash() {
    let p = primed().await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(p.spare as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let out = run(&p.shell, &p.ctx, "echo still here").await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("still here"), "{}", out.content);
}

#[tokio::test]
async fn the_spare_goes_with_the_tool() {
    // The guard and the workspace stay bound to the end: `..` would drop them.
    let Primed {
        _serial,
        _dir,
        shell,
        spare,
        ..
    } = primed().await;
    drop(shell);
    let running = || {
        std::fs::read_to_string(format!("/proc/{spare}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
    };
    for _ in 0..100 {
        if !running() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the spare bash {spare} outlived its tool");
}
