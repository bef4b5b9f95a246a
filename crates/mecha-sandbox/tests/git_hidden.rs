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

/// Git takes the line ends off the whole `commondir` before it reads it as
/// a C string: `c\n\0x` names `c\n` (the fourth review).
#[tokio::test]
async fn a_commondir_is_read_in_gits_order() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    let script = format!(
        "mkdir src && cd src && echo 'ref: refs/heads/main' > HEAD && d=$(printf 'c\\nx') && \
         d=${{d%x}} && mkdir -p \"$d/objects\" \"$d/refs\" && \
         printf '[alias]\\n\\tst = !{p}\\n' > \"$d/config\" && printf 'c\\n\\0x' > commondir && \
         echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("removed alias.st"), "{undone:?}");
    host_git(&ws.join("src"), &["st"]);
    assert!(!c.marker.exists(), "host git ran the planted alias");
}

/// A repository the command made has no read-only parts: a bare one
/// hidden in its `hooks/x.sample` (or deep in its `worktrees`), reached
/// through a symlink, is undone too.
#[tokio::test]
async fn a_repository_inside_a_new_repositorys_hooks_is_undone() {
    for hidden in ["hooks/x.sample", "worktrees/w/deep"] {
        let Some(c) = case() else { return };
        let ws = c.ws.path();
        host_git(ws, &["init", "-q"]);
        std::fs::create_dir(ws.join("docs")).unwrap();
        let script = format!(
            "git init -q n && F=n/.git/{hidden} && mkdir -p $F && git init -q --bare $F && \
             mkdir $F/wt && git -C $F config core.bare false && \
             git -C $F config core.worktree \"$PWD/$F/wt\" && git -C $F config core.fsmonitor {p} && \
             rm -rf docs && ln -s $F/wt docs && echo PLANTED",
            p = c.payload
        );
        let (out, undone) = plant(ws, &script).await;
        assert!(out.contains("PLANTED"), "{out}");
        // Moved aside, the link leads nowhere; else git runs there.
        if ws.join("docs").is_dir() {
            host_git(&ws.join("docs"), &["status"]);
        }
        assert!(
            !c.marker.exists(),
            "{hidden}: host git ran the fsmonitor: {undone:?}"
        );
        assert!(!undone.is_empty(), "{hidden}: nothing undone");
    }
}

/// A `HEAD` beside a `commondir` that names nothing yet is a git directory
/// as soon as something fills what it names (a file tool, which sees no
/// `HEAD` above what it writes): the `commondir` goes aside at once.
#[tokio::test]
async fn a_commondir_naming_nothing_yet_is_moved_aside() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    let script = "mkdir src && echo 'ref: refs/heads/main' > src/HEAD && \
                  echo ../.cache/c > src/commondir && echo PLANTED";
    let (out, undone) = plant(ws, script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("src/commondir"), "{undone:?}");
    assert!(!ws.join("src/commondir").exists());
}

/// `refs` and `objects` as symlinks that lead nowhere yet: a git directory
/// as soon as a file tool makes where they lead (the fifth review), so it
/// is undone now.
#[tokio::test]
async fn a_head_beside_dangling_refs_and_objects_is_undone() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    let script = format!(
        "mkdir src && cd src && echo 'ref: refs/heads/main' > HEAD && \
         ln -s ../.cache/o objects && ln -s ../.cache/r refs && \
         printf '[alias]\\n\\tst = !{p}\\n' > config && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(
        undone.join("\n").contains("src/config: removed alias.st"),
        "{undone:?}"
    );
    std::fs::create_dir_all(ws.join(".cache/o")).unwrap();
    std::fs::create_dir_all(ws.join(".cache/r")).unwrap();
    host_git(&ws.join("src"), &["st"]);
    assert!(!c.marker.exists(), "host git ran the planted alias");
}
