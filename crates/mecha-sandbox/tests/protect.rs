//! The protected paths inside the workspace, attacked from inside.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{bwrap, confine, eventually, run};
use mecha_sandbox::{Job, Network, SandboxError};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every way in: write, append, replace, remove, rename the parent away.
const ATTACKS: &str = r#"
try() { if (eval "$1") >/dev/null 2>&1; then echo "BREACH: $1"; fi; }
try 'echo evil > .git/hooks/pre-commit'
try 'echo "[core] hooksPath = /tmp" >> .git/config'
try 'echo "[sandbox]" > mecha.toml'
try 'rm -rf .git/hooks'
try 'mv .git/config .git/config.old'
try 'mv mecha.toml elsewhere'
try 'mv .git .git-away && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit'
try 'git config core.hooksPath /tmp'
mkdir evil && cp -r .git/. evil/ && chmod -R u+w evil
try 'echo ../evil > .git/commondir'
try 'mkdir -p .git/modules/sub/hooks'
echo x > .git/objects-are-writable && echo OBJECTS-OK
"#;

#[tokio::test]
async fn hooks_config_and_mecha_toml_cannot_be_changed_from_inside() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    git(ws, &["init", "-q"]);
    fs::write(ws.join("mecha.toml"), "[agent]\n").unwrap();
    let config = fs::read_to_string(ws.join(".git/config")).unwrap();
    let out = run(&sandbox, ws, ATTACKS, false).await;
    assert!(!out.stdout.contains("BREACH"), "{out:?}");
    assert!(
        out.stdout.contains("OBJECTS-OK"),
        "the rest of .git stays writable: {out:?}"
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(!ws.join(".git-away").exists());
    assert_eq!(fs::read_to_string(ws.join(".git/config")).unwrap(), config);
    assert_eq!(
        fs::read_to_string(ws.join("mecha.toml")).unwrap(),
        "[agent]\n"
    );
    let common = Command::new("git")
        .args(["rev-parse", "--git-common-dir"])
        .current_dir(ws)
        .output()
        .unwrap();
    let common = String::from_utf8_lossy(&common.stdout);
    assert_eq!(common, ".git\n", "hooks and config still come from .git");
    assert!(!ws.join(".git/modules").exists() && !ws.join(".git/commondir").exists());
}

#[tokio::test]
async fn a_missing_protected_path_cannot_be_created_and_leaves_nothing_behind() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    fs::write(ws.join("file.txt"), "mine").unwrap();
    let script = r#"
try() { if (eval "$1") >/dev/null 2>&1; then echo "BREACH: $1"; fi; }
try 'mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout'
try 'git init -q'
try 'rmdir .git'
echo ok > other.txt && echo WS-OK
"#;
    let out = run(&sandbox, ws, script, false).await;
    assert!(!out.stdout.contains("BREACH"), "{out:?}");
    assert!(out.stdout.contains("WS-OK"), "{out:?}");
    let mut left: Vec<_> = fs::read_dir(ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["file.txt", "other.txt"],
        "the masks are gone afterwards"
    );
}

/// Two jobs at once on one workspace share the placeholders: the first to
/// end does not unmask the second, and the last leaves nothing behind.
#[tokio::test]
async fn concurrent_jobs_do_not_remove_each_others_masks() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let flag = ws.join("first-done");
    let script = "while [ ! -e first-done ]; do sleep 0.02; done; \
                  (rmdir .git) 2>/dev/null && echo BREACH; \
                  (mkdir -p .git/hooks) 2>/dev/null && echo BREACH; echo SECOND-DONE";
    let mut second = confine(&sandbox, ws, script, false);
    let child = second.command.spawn().unwrap();
    let first = run(&sandbox, ws, "true", false).await;
    assert!(first.status.success());
    assert!(
        ws.join(".git").exists(),
        "the second job still holds the mask"
    );
    fs::write(&flag, "").unwrap();
    let out = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("SECOND-DONE") && !stdout.contains("BREACH"),
        "{stdout}"
    );
    drop(second.lease);
    fs::remove_file(&flag).unwrap();
    assert!(eventually(|| fs::read_dir(ws).unwrap().count() == 0).await);
}

#[tokio::test]
async fn a_worktree_reads_its_repository_but_cannot_change_gitdir_or_hooks() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    fs::write(main.join("a.txt"), "a").unwrap();
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-qm", "a"]);
    git(&main, &["worktree", "add", "-q", "../wt"]);
    let wt = tmp.path().join("wt");
    let dot_git = fs::read_to_string(wt.join(".git")).unwrap();
    let script = r#"
try() { if (eval "$1") >/dev/null 2>&1; then echo "BREACH: $1"; fi; }
git log --oneline | grep -q a && echo READS
try 'echo "gitdir: /tmp/fake" > .git'
try 'rm .git'
try "echo evil > $(git rev-parse --git-common-dir)/hooks/pre-commit"
try "echo evil > $(git rev-parse --git-dir)/HEAD"
try 'git config core.hooksPath /tmp'
"#;
    let out = run(&sandbox, &wt, script, false).await;
    assert!(out.stdout.contains("READS"), "git works inside: {out:?}");
    assert!(!out.stdout.contains("BREACH"), "{out:?}");
    assert_eq!(fs::read_to_string(wt.join(".git")).unwrap(), dot_git);
    assert!(!main.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn a_symlinked_dot_git_is_refused_with_the_fix() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (ws, elsewhere) = (tmp.path().join("ws"), tmp.path().join("elsewhere"));
    fs::create_dir_all(&ws).unwrap();
    fs::create_dir_all(elsewhere.join("hooks")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, ws.join(".git")).unwrap();
    let err = sandbox
        .confine(Job {
            program: "true".as_ref(),
            args: &[],
            workspace: &ws,
            env: Default::default(),
            network: Network::None,
            read_only: &[],
            hidden: &[],
        })
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::ProtectedSymlink {
            path: ws.join(".git")
        }
    );
    assert!(
        err.to_string()
            .contains("replace it with the file or directory it points to")
    );
}

/// The protection must not break git itself: in a plain repository (no
/// commondir, no modules) status and commit work inside, and the masks
/// leave nothing in the repository afterwards.
#[tokio::test]
async fn git_still_works_in_a_plain_repository() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    fs::write(ws.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "one"]);
    let script = "echo two >> a.txt && git status --short && \
                  git -c user.name=t -c user.email=t@t commit -qam two && echo COMMITTED";
    let out = run(&sandbox, ws, script, false).await;
    assert!(out.stdout.contains(" M a.txt"), "{out:?}");
    assert!(out.stdout.contains("COMMITTED"), "{out:?}");
    assert_eq!(git(&["log", "--format=%s"]), "two\none\n");
    assert_eq!(git(&["status", "--porcelain"]), "", "nothing left behind");
    assert!(!ws.join(".git/commondir").exists());
}
