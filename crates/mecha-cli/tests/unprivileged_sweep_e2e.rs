//! mecha as an ordinary user (the laptop case; as root, permissions stop
//! nothing): a confined command takes the user's permissions away from a
//! repository it made (`chmod 555` on its `.git`, `chmod 111` on the
//! directory holding it) so that the undo can neither rename in it nor
//! find it, and git on the host, which only needs to search there, would
//! run what it planted. Run as uid 1234 when the tests run as root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::ordinary::{USER, as_root, as_user};
use common::{Api, Env, env, results_in, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

fn git_status(e: &Env, repo: &Path) -> Output {
    let mut git = Command::new("git");
    git.arg("status")
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("HOME", &e.home)
        .env("GIT_CONFIG_NOSYSTEM", "1");
    as_user(git, None).output().unwrap()
}

#[tokio::test]
async fn a_repository_closed_to_its_owner_is_still_undone() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap")
        || (as_root() && !common::have("setpriv", "the ordinary-user tests", "util-linux"))
    {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    let marker = e.ws.parent().unwrap().join("RAN");
    let payload = e.ws.parent().unwrap().join("payload.sh");
    std::fs::write(&payload, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    if as_root() {
        let owned = Command::new("chown")
            .args(["-R", &format!("{USER}:{USER}")])
            .arg(e.ws.parent().unwrap())
            .status()
            .unwrap();
        assert!(owned.success());
    }
    Command::new("chmod")
        .args(["755"])
        .arg(&payload)
        .arg(e.ws.parent().unwrap())
        .status()
        .unwrap();
    let payload = payload.display();
    let plant = |repo: &str| {
        format!(
            "git init -q {repo} && git -C {repo} config core.fsmonitor {payload} && \
             printf '#!/bin/sh\\n{payload}\\n' > {repo}/.git/hooks/pre-commit && \
             chmod 755 {repo}/.git/hooks/pre-commit"
        )
    };
    let command = format!(
        "{} && chmod 555 closed/.git/hooks closed/.git && {} && chmod 111 hidden && echo PLANTED",
        plant("closed"),
        plant("hidden")
    );
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": command}))]),
        MockReply::text("done"),
    ])
    .await;
    let mut run = e.command(Api::OpenAi, &mock, "sk-test", "run", &["--yes", "go"]);
    run.stdin(Stdio::null());
    // The build tree may lie where the ordinary user cannot reach it (a
    // checkout under /root): the user runs a copy in the test's own tree.
    let copy = e.ws.parent().unwrap().join("mecha");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mecha"), &copy).unwrap();
    let mut run = as_user(run, Some(&copy));

    let out = tokio::task::spawn_blocking(move || run.output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = &results_in(&mock, 1)[0];
    assert!(text.contains("PLANTED"), "{text}");
    for repo in ["closed", "hidden"] {
        assert!(
            text.contains(&format!("{repo}/.git/config: removed core.fsmonitor")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{repo}/.git/hooks/pre-commit: renamed")),
            "{text}"
        );
        let status = git_status(&e, &e.ws.join(repo));
        assert!(status.status.success(), "{repo}: {}", stderr(&status));
        assert!(
            !marker.exists(),
            "git status in {repo} ran the planted program"
        );
    }
    // The modes are as the command left them: the sweep only borrowed them.
    let mode = |p: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(e.ws.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("hidden"), 0o111);
    assert_eq!(mode("closed/.git"), 0o555);
}
