//! A sandbox started ahead of its command, against the real bwrap: a job
//! runs in it only while the workspace would be confined exactly so and
//! every protection mount it made still holds. Each attack below is first
//! shown to work on the waiting sandbox (its mounts really are undone),
//! then shown to make `place` start a fresh one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use mecha_sandbox::{Confined, Job, Lease, Placed, Sandbox};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A confined bash that says `ready` once inside, then runs each line it
/// reads and answers with the line's exit code.
struct Waiting {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    lease: Lease,
}

const LOOP: &str =
    "echo ready; while IFS= read -r line; do eval \"$line\" 2>/dev/null; echo \"rc=$?\"; done";

fn job<'a>(
    workspace: &'a Path,
    args: &'a [OsString],
    env: BTreeMap<OsString, OsString>,
) -> Job<'a> {
    Job {
        program: "bash".as_ref(),
        args,
        workspace,
        env,
        network: false.into(),
        read_only: &[],
        hidden: &[],
    }
}

fn env(sandbox: &Sandbox) -> BTreeMap<OsString, OsString> {
    BTreeMap::from([(OsString::from("PATH"), sandbox.path_inside())])
}

async fn ahead(sandbox: &Sandbox, workspace: &Path) -> Waiting {
    let args = [OsString::from("-c"), OsString::from(LOOP)];
    let program = sandbox
        .confine_ahead(job(workspace, &args, env(sandbox)))
        .unwrap()
        .expect("bwrap starts ahead");
    let Confined { mut command, lease } = program.into_confined().unwrap();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
    Waiting {
        child,
        stdin,
        lines,
        lease,
    }
}

impl Waiting {
    /// Runs `command` in the waiting sandbox; its exit code.
    async fn run(&mut self, command: &str) -> i32 {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .unwrap();
        let line = self.lines.next_line().await.unwrap().unwrap();
        line.strip_prefix("rc=").unwrap().parse().unwrap()
    }

    /// Where the same job would run now.
    fn place(&mut self, sandbox: &Sandbox, workspace: &Path) -> Placed {
        let args = [OsString::from("-c"), OsString::from("true")];
        sandbox
            .place(job(workspace, &args, env(sandbox)), &mut self.lease)
            .unwrap()
    }
}

fn git_init(dir: &Path) {
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

fn repo() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    git_init(ws.path());
    ws
}

fn waiting_used(placed: &Placed) -> bool {
    matches!(placed, Placed::Waiting)
}

#[tokio::test]
async fn an_unchanged_workspace_runs_in_the_waiting_sandbox_with_its_protection() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let ws = repo();
    let mut waiting = ahead(&sandbox, ws.path()).await;
    assert!(waiting_used(&waiting.place(&sandbox, ws.path())));
    assert_eq!(waiting.run("touch made-inside").await, 0);
    assert!(ws.path().join("made-inside").exists());
    assert_ne!(waiting.run("touch .git/hooks/pre-commit").await, 0);
    assert_ne!(waiting.run("echo x >> .git/config").await, 0);
    assert!(!ws.path().join(".git/hooks/pre-commit").exists());
    waiting.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_hooks_directory_removed_and_remade_meanwhile_gets_a_fresh_sandbox() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let ws = repo();
    let hooks = ws.path().join(".git/hooks");
    std::fs::remove_dir_all(&hooks).unwrap();
    std::fs::create_dir(&hooks).unwrap();
    let mut waiting = ahead(&sandbox, ws.path()).await;
    // Removing a mount point in another namespace detaches the mount
    // there; the new directory often reuses the inode number.
    std::fs::remove_dir(&hooks).unwrap();
    std::fs::create_dir(&hooks).unwrap();
    assert!(!waiting_used(&waiting.place(&sandbox, ws.path())));
    assert_eq!(
        waiting.run("touch .git/hooks/pre-commit").await,
        0,
        "the waiting sandbox had really lost the mount"
    );
    waiting.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_git_directory_moved_aside_and_replaced_meanwhile_gets_a_fresh_sandbox() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let ws = repo();
    let mut waiting = ahead(&sandbox, ws.path()).await;
    // The mounts travel with the moved directory; the new `.git` has none.
    std::fs::rename(ws.path().join(".git"), ws.path().join("old")).unwrap();
    git_init(ws.path());
    assert!(!waiting_used(&waiting.place(&sandbox, ws.path())));
    assert_eq!(
        waiting.run("echo '[core]' >> .git/config").await,
        0,
        "the waiting sandbox could write the new config"
    );
    waiting.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_repository_made_meanwhile_gets_a_fresh_sandbox() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let ws = repo();
    let mut waiting = ahead(&sandbox, ws.path()).await;
    let nested = ws.path().join("nested");
    git_init(&nested);
    assert!(!waiting_used(&waiting.place(&sandbox, ws.path())));
    assert_eq!(
        waiting.run("touch nested/.git/hooks/post-checkout").await,
        0,
        "the waiting sandbox does not protect the new repository"
    );
    waiting.child.kill().await.unwrap();
}

#[tokio::test]
async fn a_waiting_sandbox_that_died_or_another_workspace_gets_a_fresh_one() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let ws = repo();
    let other = repo();
    let mut waiting = ahead(&sandbox, ws.path()).await;
    assert!(!waiting_used(&waiting.place(&sandbox, other.path())));
    // A lease is checked once: asked again, it has nothing to offer.
    assert!(!waiting_used(&waiting.place(&sandbox, ws.path())));

    let mut waiting = ahead(&sandbox, ws.path()).await;
    waiting.child.kill().await.unwrap();
    waiting.child.wait().await.unwrap();
    // The sandbox's own first process dies with bwrap (its parent-death
    // signal), a moment after it: until then the sandbox is still whole.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting_used(&waiting.place(&sandbox, ws.path())));
}

#[tokio::test]
async fn a_workspace_moved_aside_and_remade_meanwhile_gets_a_fresh_sandbox() {
    let Some(sandbox) = common::bwrap() else {
        return;
    };
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let mut waiting = ahead(&sandbox, &ws).await;
    std::fs::rename(&ws, parent.path().join("old")).unwrap();
    std::fs::create_dir(&ws).unwrap();
    assert!(!waiting_used(&waiting.place(&sandbox, &ws)));
    assert_eq!(waiting.run("touch here").await, 0);
    assert!(
        parent.path().join("old/here").exists() && !ws.join("here").exists(),
        "the waiting sandbox still shows the old directory"
    );
    waiting.child.kill().await.unwrap();
}
