//! Git on the host finds a repository from wherever it runs, and runs what
//! that repository's config and hooks name. Each test here plants one of
//! the reproduced ways out from inside the real sandbox, then runs the
//! user's ordinary `git status` on the host, and checks that nothing the
//! command planted ran (a marker file outside the workspace stays absent)
//! and that the sweep said what it undid.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::plants::{case, host_git, plant, plant_with};
use common::{bwrap, confine};
use std::process::Command;

use mecha_sandbox::{HostEnv, SandboxConfig};

#[tokio::test]
async fn a_nested_repository_with_fsmonitor_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = format!(
        "git init -q vendor/lib && git -C vendor/lib config core.fsmonitor {p} && \
         git -C vendor/lib config alias.st '!{p}' && echo '#!/bin/sh' > vendor/lib/.git/hooks/post-checkout && \
         chmod +x vendor/lib/.git/hooks/post-checkout && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    let said = undone.join("\n");
    assert!(
        said.contains("core.fsmonitor") && said.contains("alias.st"),
        "{said}"
    );
    assert!(said.contains("hooks/post-checkout"), "{said}");
    host_git(&ws.join("vendor/lib"), &["status"]);
    host_git(&ws.join("vendor/lib"), &["st"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    // What the user may need is kept beside it, inert.
    assert!(ws.join("vendor/lib/.git/config.mecha-quarantine").is_file());
}

#[tokio::test]
async fn a_bare_repository_at_a_root_without_git_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = format!(
        "git init -q --bare . 2>&1; git config -f config core.worktree .. ; \
         git config -f config core.bare false; git config -f config core.fsmonitor {p}; \
         ls HEAD config && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("core.fsmonitor"), "{undone:?}");
    host_git(ws, &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

#[tokio::test]
async fn a_gitfile_naming_a_fake_git_directory_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = format!(
        "git init -q --bare fake && git -C fake config core.fsmonitor {p} && \
         git -C fake config core.bare false && mkdir -p app && \
         echo 'gitdir: ../fake' > app/.git && git -C fake config core.worktree ../app && \
         echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("core.fsmonitor"), "{undone:?}");
    host_git(&ws.join("app"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

/// An existing repository's pointers and what its config names live in the
/// writable tree: a linked worktree's commondir, `core.hooksPath = .husky`,
/// an `include.path` file, a submodule's `.git` file. None can be changed.
#[tokio::test]
async fn an_existing_repositorys_pointers_and_config_targets_are_read_only() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let git = |args: &[&str]| {
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
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    git(&["worktree", "add", "-q", "wt"]);
    git(&["config", "core.hooksPath", ".husky"]);
    git(&["config", "include.path", "../team.gitconfig"]);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    let script = format!(
        "try() {{ if (eval \"$1\") >/dev/null 2>&1; then echo \"BREACH: $1\"; fi; }}\n\
         try 'mkdir -p fakecommon && echo ../../../fakecommon > .git/worktrees/wt/commondir'\n\
         try 'echo x > .git/worktrees/wt/gitdir'\n\
         try 'mkdir -p .git/worktrees/other'\n\
         try 'mkdir -p .husky && cp {p} .husky/pre-commit'\n\
         try 'printf \"[core]\\n\\tfsmonitor = {p}\\n\" > team.gitconfig'\n\
         try 'echo gitdir: ../fake > sub/.git'\n\
         try 'mv sub sub2'\n\
         try 'echo x > .git/config.worktree'\n\
         echo x > wt/file && echo WORKTREE-WRITABLE\n",
        p = c.payload
    );
    let (out, _) = plant(ws, &script).await;
    assert!(!out.contains("BREACH"), "{out}");
    assert!(out.contains("WORKTREE-WRITABLE"), "{out}");
    host_git(ws, &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

/// What the user asked for still works, and nothing is reported undone.
#[tokio::test]
async fn a_plain_git_init_with_a_remote_is_left_alone() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = "git init -q lib && git -C lib remote add origin https://example.invalid/r.git && \
                  git -C lib -c user.name=t -c user.email=t@t commit -q --allow-empty -m one && \
                  git -C lib branch -q -M main && echo DONE";
    let (out, undone) = plant(ws, script).await;
    assert!(out.contains("DONE"), "{out}");
    assert!(undone.is_empty(), "{undone:?}");
    let log = host_git(&ws.join("lib"), &["log", "--oneline"]);
    assert!(log.contains("one"), "{log}");
    let remote = host_git(&ws.join("lib"), &["remote", "get-url", "origin"]);
    assert!(remote.contains("example.invalid"), "{remote}");
}

/// A directory laid out as a bare repository (HEAD, objects, refs) used to
/// end the walk, so a repository below it went unswept.
#[tokio::test]
async fn a_repository_below_a_bare_looking_directory_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = format!(
        "mkdir -p a/objects a/refs && echo 'ref: refs/heads/main' > a/HEAD && mkdir a/b && \
         git -C a/b init -q && git -C a/b config core.fsmonitor {p} && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    host_git(&ws.join("a/b"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    assert!(
        undone
            .join("\n")
            .contains("a/b/.git/config: removed core.fsmonitor"),
        "{undone:?}"
    );
}

/// Git takes a directory for a git directory before it looks further up,
/// and a symlinked HEAD counts: a bare layout in `src/` of an existing
/// repository, with `core.worktree`, is what `git status` in `src/` uses.
#[tokio::test]
async fn a_bare_layout_with_a_symlinked_head_inside_a_repository_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    std::fs::create_dir(ws.join("src")).unwrap();
    let script = format!(
        "cd src && ln -s refs/heads/main HEAD && mkdir objects refs && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\t\
         fsmonitor = {p}\\n' > config && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    host_git(&ws.join("src"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    let said = undone.join("\n");
    assert!(
        said.contains("src/config: removed core.worktree, core.fsmonitor"),
        "{said}"
    );
}

/// A `.git` symlink is followed by git like a `.git` file: here to a git
/// directory the command hid inside the existing (writable) `.git`, where
/// the walk does not look.
#[tokio::test]
async fn a_dot_git_symlink_into_the_existing_git_directory_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    let script = format!(
        "git init -q --bare .git/x && git --git-dir=.git/x config core.bare false && \
         git --git-dir=.git/x config core.fsmonitor {p} && mkdir tools && \
         ln -s ../.git/x tools/.git && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    host_git(&ws.join("tools"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    assert!(
        undone
            .join("\n")
            .contains(".git/x/config: removed core.fsmonitor"),
        "{undone:?}"
    );
    assert!(ws.join("tools/.git").is_symlink(), "the link itself stays");
}

/// A `.git` the command made (symlink or file) that leads out of the
/// workspace, to a repository it made in a writable path the sweep does
/// not check, is moved aside.
#[tokio::test]
async fn a_new_dot_git_leading_outside_the_workspace_is_moved_aside() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let writable = tempfile::tempdir().unwrap();
    let out_dir = writable.path().display().to_string();
    let config = SandboxConfig {
        writable: vec![writable.path().to_path_buf()],
        ..SandboxConfig::default()
    };
    let Some(sandbox) = common::sandbox(config, HostEnv::current()) else {
        return;
    };
    let script = format!(
        "git init -q --bare {out_dir}/evil && git --git-dir={out_dir}/evil config core.bare false && \
         git --git-dir={out_dir}/evil config core.fsmonitor {p} && mkdir tools app && \
         ln -s {out_dir}/evil tools/.git && echo 'gitdir: {out_dir}/evil' > app/.git && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant_with(&sandbox, ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    host_git(&ws.join("tools"), &["status"]);
    host_git(&ws.join("app"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    let said = undone.join("\n");
    for moved in ["tools/.git", "app/.git"] {
        assert!(
            said.contains(&format!("{moved}: it leads outside the workspace")),
            "{said}"
        );
        assert!(!ws.join(moved).exists(), "{moved} is still there");
    }
}

/// A new repository's `.git/modules/<name>` is a submodule's git
/// directory, with hooks and config of its own, which `git submodule
/// update` (and then every `git status` in the superproject) uses even
/// with the submodule's worktree, and its `.git` file, gone.
#[tokio::test]
async fn a_new_repositorys_submodule_git_directory_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let git = "git -c user.name=t -c user.email=t@t -c protocol.file.allow=always";
    let script = format!(
        "{git} init -q up && {git} -C up commit -q --allow-empty -m up && {git} init -q lib && \
         {git} -C lib submodule add -q \"$PWD/up\" sub && {git} -C lib commit -qm sub && \
         rm -rf lib/sub && git config -f lib/.git/modules/sub/config core.fsmonitor {p} && \
         cp {p} lib/.git/modules/sub/hooks/post-checkout && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    let lib = ws.join("lib");
    host_git(
        &lib,
        &["-c", "protocol.file.allow=always", "submodule", "update"],
    );
    host_git(&lib, &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
    let said = undone.join("\n");
    assert!(
        said.contains("lib/.git/modules/sub/config: removed core.worktree, core.fsmonitor"),
        "{said}"
    );
    assert!(
        said.contains("lib/.git/modules/sub/hooks/post-checkout"),
        "{said}"
    );
}

/// Git reads a `.git` file as a C string: `gitdir: ../.git/evil\0x` names
/// a fake git directory hidden inside the existing one, where the walk
/// never looks.
#[tokio::test]
async fn a_gitfile_with_a_nul_is_read_as_git_reads_it() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    host_git(ws, &["init", "-q"]);
    let script = format!(
        "git init -q --bare .git/evil && git -C .git/evil config core.bare false && \
         git -C .git/evil config core.fsmonitor {p} && mkdir sub && \
         printf 'gitdir: ../.git/evil\\0x' > sub/.git && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("core.fsmonitor"), "{undone:?}");
    host_git(&ws.join("sub"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

/// Git reads the whole config; one whose first megabyte is harmless is
/// still emptied when more follows.
#[tokio::test]
async fn a_config_past_the_read_limit_is_emptied() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    let script = format!(
        "git init -q n && python3 -c \"
c = open('n/.git/config').read() + ('#' * 99 + '\\n') * 11000
open('n/.git/config', 'w').write(c + '[core]\\n\\tfsmonitor = {p}\\n')\" && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant(ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("emptied"), "{undone:?}");
    host_git(&ws.join("n"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

/// A `.git` symlink to a FIFO would block the sweep's open forever, and an
/// interrupted call is not swept to the end.
#[tokio::test]
async fn a_dot_git_leading_to_a_fifo_does_not_stall_the_sweep() {
    let Some(c) = case() else { return };
    let ws = c.ws.path().to_owned();
    let script = format!(
        "git init -q n && git -C n config core.fsmonitor {p} && mkfifo fifo && mkdir z && \
         ln -s ../fifo z/.git && echo PLANTED",
        p = c.payload
    );
    let confined = confine(&bwrap().expect("bubblewrap"), &ws, &script, false);
    let mut command = confined.command;
    let out = command.output().await.unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("PLANTED"));
    let (tx, rx) = std::sync::mpsc::channel();
    let lease = confined.lease;
    std::thread::spawn(move || tx.send(lease.sweep()));
    let undone = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the sweep never finished");
    assert!(undone.join("\n").contains("core.fsmonitor"), "{undone:?}");
    host_git(&ws.join("n"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}

/// The walks for repositories keep what they listed from one job to the
/// next: a repository planted in a directory an earlier job's walks
/// listed (and kept) is found and disarmed all the same.
#[tokio::test]
async fn a_repository_planted_where_an_earlier_job_walked_is_disarmed() {
    let Some(c) = case() else { return };
    let ws = c.ws.path();
    std::fs::create_dir_all(ws.join("src/deep/lib")).unwrap();
    std::fs::create_dir_all(ws.join("docs/api")).unwrap();
    // Older than a listing must be to be kept.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let sandbox = bwrap().expect("bubblewrap");
    let (out, undone) = plant_with(&sandbox, ws, "echo FIRST").await;
    assert!(
        out.contains("FIRST") && undone.is_empty(),
        "{out} {undone:?}"
    );
    let script = format!(
        "git init -q src/deep/lib && git -C src/deep/lib config core.fsmonitor {p} && \
         mkdir docs/api/.git && echo PLANTED",
        p = c.payload
    );
    let (out, undone) = plant_with(&sandbox, ws, &script).await;
    assert!(out.contains("PLANTED"), "{out}");
    assert!(undone.join("\n").contains("core.fsmonitor"), "{undone:?}");
    host_git(&ws.join("src/deep/lib"), &["status"]);
    assert!(!c.marker.exists(), "host git ran the planted program");
}
