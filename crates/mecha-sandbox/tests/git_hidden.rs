//! Repositories a command hides where a walk would not look but git's
//! discovery does (the third review): a git directory whose `commondir`
//! only git can read, and one made inside the existing `.git` and reached
//! through a symlink. Each is planted inside the real sandbox, then git
//! runs on the host as the user would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::plants::{case, host_git, plant};

/// Git reads `commondir` as a C string: `.\0` is `.`, so an ordinary
/// folder of the user's repository becomes a git directory whose config
/// runs an alias; so does a `commondir` too long for mecha to resolve.
#[tokio::test]
async fn a_commondir_only_git_can_read_does_not_hide_a_git_directory() {
    for commondir in [
        r"printf '.\0'",
        r#"python3 -c "print('./' * 40000, end='')""#,
    ] {
        let Some(c) = case() else { return };
        let ws = c.ws.path();
        host_git(ws, &["init", "-q"]);
        let script = format!(
            "mkdir src && cd src && git init -q --bare . && git config alias.st '!{p}' && \
             {commondir} > commondir && echo PLANTED",
            p = c.payload
        );
        let (out, undone) = plant(ws, &script).await;
        assert!(out.contains("PLANTED"), "{out}");
        let said = undone.join("\n");
        assert!(
            said.contains("src/config: removed alias.st"),
            "{commondir}: {said}"
        );
        host_git(&ws.join("src"), &["st"]);
        assert!(
            !c.marker.exists(),
            "{commondir}: host git ran the planted alias"
        );
    }
}

/// A bare repository made inside the workspace's `.git`, with a worktree
/// that an ordinary folder is replaced by a symlink to: `cd docs; git
/// status` is in that repository.
#[tokio::test]
async fn a_repository_inside_the_git_directory_is_undone() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    std::fs::create_dir(ws.join("docs")).unwrap();
    let script = format!(
        "git init -q --bare .git/x && mkdir .git/x/wt && git -C .git/x config core.bare false && \
         git -C .git/x config core.worktree \"$PWD/.git/x/wt\" && \
         git -C .git/x config core.fsmonitor {p} && rm -rf docs && ln -s .git/x/wt docs && \
         echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    let said = undone.join("\n");
    assert!(said.contains(".git/x/config: removed"), "{said}");
    host_git(&ws.join("docs"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted fsmonitor");
}
