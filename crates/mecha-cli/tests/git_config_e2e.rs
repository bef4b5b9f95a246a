//! A repository config git reads but a strict parser would not (a byte
//! order mark, CRLF line ends with a continuation, a name that is not
//! UTF-8) still has its `core.hooksPath` kept read-only in the sandbox; a
//! config mecha cannot read the way git does refuses the command instead of
//! protecting nothing. Through the real binary and the real bwrap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{Api, Env, env, results_in, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const PLANT: &str = "touch .githooks/pre-commit 2>/dev/null && echo PLANTED || echo REFUSED";

/// A repository whose config is `config` byte for byte, a `.githooks`
/// directory beside it, and one confined `PLANT` call: its result.
async fn plant_with_config(config: &[u8]) -> (Env, String, bool) {
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&e.ws)
        .status()
        .unwrap();
    assert!(init.success());
    std::fs::write(e.ws.join(".git/config"), config).unwrap();
    std::fs::create_dir(e.ws.join(".githooks")).unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": PLANT}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "sk-test", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = results_in(&mock, 1).remove(0);
    (e, text, is_error)
}

#[tokio::test]
async fn hooks_path_in_a_config_git_reads_is_kept_read_only() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    let configs: [(&str, &[u8]); 3] = [
        (
            "a byte order mark",
            b"\xEF\xBB\xBF[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n",
        ),
        (
            "CRLF with a continuation line",
            b"[core]\r\n\trepositoryformatversion = 0\r\n[user]\r\n\tname = a\\\r\n b\r\n\
              [core]\r\n\thooksPath = .githooks\r\n",
        ),
        (
            "a Latin-1 user name",
            b"[core]\n\trepositoryformatversion = 0\n[user]\n\tname = Ren\xe9\n\
              [core]\n\thooksPath = .githooks\n",
        ),
    ];
    for (what, config) in configs {
        let (e, text, _) = plant_with_config(config).await;
        assert!(text.contains("REFUSED"), "{what}: {text}");
        assert!(!e.ws.join(".githooks/pre-commit").exists(), "{what}");
    }
}

#[tokio::test]
async fn a_config_mecha_cannot_read_refuses_the_command() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    // Git reads all of it; mecha reads one MiB, so it cannot vouch for the
    // hooksPath line past that.
    let mut config = b"[core]\n\trepositoryformatversion = 0\n".to_vec();
    while config.len() <= 1 << 20 {
        config.extend_from_slice(b"# padding padding padding padding padding padding\n");
    }
    config.extend_from_slice(b"\thooksPath = .githooks\n");
    let (e, text, is_error) = plant_with_config(&config).await;
    assert!(is_error, "{text}");
    assert!(!text.contains("PLANTED"), "{text}");
    assert!(
        text.contains("cannot be read the way git reads it"),
        "{text}"
    );
    assert!(text.contains("larger than 1 MiB"), "{text}");
    assert!(text.contains("git config --file"), "{text}");
    assert!(!e.ws.join(".githooks/pre-commit").exists());
}

/// A `core.hooksPath` in the user's global config (a team's `.githooks`
/// convention) names a folder in every repository: it is as closed to a
/// confined command and to the file tools as one the repository names.
#[tokio::test]
async fn hooks_path_in_the_global_config_is_protected() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    std::fs::write(
        e.home.join(".gitconfig"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&e.ws)
        .env("HOME", &e.home)
        .status()
        .unwrap();
    assert!(init.success());
    let mock = MockModel::start(vec![
        tool_turn(&[(
            "shell",
            json!({"command": format!("mkdir -p .githooks; {PLANT}")}),
        )]),
        tool_turn(&[(
            "fs_write",
            json!({"path": ".githooks/pre-commit", "content": "#!/bin/sh\n"}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "sk-test", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (shell, _) = results_in(&mock, 1).remove(0);
    assert!(shell.contains("REFUSED"), "{shell}");
    let (write, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(is_error, "{write}");
    assert!(!e.ws.join(".githooks/pre-commit").exists());
}

/// With the same global `core.hooksPath = .githooks`, a repository the
/// command makes keeps its live hooks in its work tree, not its `.git`:
/// the undo renames those too (the fourth review), and the user's first
/// commit there runs nothing.
#[tokio::test]
async fn a_new_repositorys_hooks_where_the_global_config_points_are_undone() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    let gitconfig = "[core]\n\thooksPath = .githooks\n[user]\n\tname = a\n\temail = a@b\n";
    std::fs::write(e.home.join(".gitconfig"), gitconfig).unwrap();
    let marker = e.home.join("RAN");
    // The second keeps its git directory elsewhere (the fifth review).
    let plant = format!(
        "git init -q newproj && mkdir .seps && git init -q --separate-git-dir=.seps/sep.git sep && \
         for p in newproj sep; do echo hi > $p/README && mkdir $p/.githooks && \
         printf '#!/bin/sh\\ntouch {}\\n' > $p/.githooks/pre-commit && \
         chmod +x $p/.githooks/pre-commit; done && echo PLANTED",
        marker.display()
    );
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({ "command": plant }))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "sk-test", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = results_in(&mock, 1).remove(0);
    assert!(text.contains("PLANTED"), "{text}");
    for repo in ["newproj", "sep"] {
        assert!(
            text.contains(&format!("{repo}/.githooks/pre-commit: renamed")),
            "{text}"
        );
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(e.ws.join(repo))
                .env("HOME", &e.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap()
        };
        git(&["add", "README"]);
        let commit = git(&["commit", "-qm", "first"]);
        assert!(commit.status.success(), "{commit:?}");
        assert!(
            !marker.exists(),
            "the user's commit in {repo} ran the planted hook"
        );
    }
}

/// Hook managers run code from the work tree: husky's `.husky/_` runs
/// `.husky/pre-commit`, the pre-commit framework's hook runs what
/// `.pre-commit-config.yaml` lists. Those are as read-only as the hooks
/// directory itself (the fourth review).
#[tokio::test]
async fn what_a_hook_manager_runs_is_kept_read_only() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&e.ws)
            .env("HOME", &e.home)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "core.hooksPath", ".husky/_"]);
    std::fs::create_dir_all(e.ws.join(".husky/_")).unwrap();
    std::fs::write(
        e.ws.join(".husky/_/pre-commit"),
        "#!/bin/sh\n. .husky/_/h\n",
    )
    .unwrap();
    std::fs::write(e.ws.join(".husky/pre-commit"), "echo lint ok\n").unwrap();
    std::fs::write(
        e.ws.join(".git/hooks/pre-push"),
        "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n",
    )
    .unwrap();
    std::fs::write(
        e.ws.join(".git/hooks/post-checkout"),
        "#!/bin/sh\n# lefthook's hook\ncall_lefthook run post-checkout\n",
    )
    .unwrap();
    let plant = "mkdir -p .lefthook/pre-commit 2>/dev/null; \
                 for f in .husky/pre-commit .pre-commit-config.yaml lefthook-local.toml \
                 .lefthook/pre-commit/x.sh; do \
                 (echo 'echo planted' >> $f) 2>/dev/null && echo WROTE $f; done; echo DONE";
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({ "command": plant }))]),
        tool_turn(&[(
            "fs_write",
            json!({"path": ".husky/pre-commit", "content": "echo planted\n"}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "sk-test", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = results_in(&mock, 1).remove(0);
    assert!(text.contains("DONE") && !text.contains("WROTE"), "{text}");
    let (write, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(is_error, "{write}");
    assert_eq!(
        std::fs::read_to_string(e.ws.join(".husky/pre-commit")).unwrap(),
        "echo lint ok\n"
    );
    assert!(!e.ws.join(".pre-commit-config.yaml").exists());
}
