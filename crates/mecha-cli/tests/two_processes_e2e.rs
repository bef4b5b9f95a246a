//! Two mecha processes confining commands in one workspace at once (two
//! sessions in one repository, parallel CI jobs on one checkout): the
//! placeholders one creates where a protected path is missing must not be
//! removed while the other's job has them bound read-only, since removing
//! a mount point detaches it in every mount namespace. Through the real
//! binary and the real bwrap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Api, env, results_in, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// Tries for six seconds to point the repository at a common directory of
/// the command's own, which would give git on the host its hooks.
const REWRITE_COMMONDIR: &str = "for i in $(seq 60); do \
     printf 'fake\\n' 2>/dev/null > .git/commondir && { echo WROTE; exit 0; }; sleep 0.1; \
     done; echo HELD";

#[tokio::test]
async fn one_process_ending_its_job_leaves_the_others_protection_in_place() {
    if !common::have("bwrap", "the sandbox tests", "bubblewrap") {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    for args in [
        &["init", "-q"][..],
        &["commit", "-q", "--allow-empty", "-m", "init"],
    ] {
        let ok = Command::new("git")
            .args(args)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .current_dir(&e.ws)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    let first_mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": "sleep 3; echo FIRST"}))]),
        MockReply::text("done"),
    ])
    .await;
    let second_mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": REWRITE_COMMONDIR}))]),
        MockReply::text("done"),
    ])
    .await;
    let spawn = |mock: &MockModel| {
        e.command(Api::OpenAi, mock, "sk-test", "run", &["--yes", "go"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    };
    let first = spawn(&first_mock);
    // The first job is running (its placeholders made) before the second
    // starts, and ends while the second still tries.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let second = spawn(&second_mock);
    let (first, second) = tokio::task::spawn_blocking(move || {
        (
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        )
    })
    .await
    .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(results_in(&first_mock, 1)[0].0.contains("FIRST"));
    let (text, _) = &results_in(&second_mock, 1)[0];
    assert!(text.contains("HELD"), "{text}");
    // The last job to end removed the placeholder the first one made.
    assert!(
        !e.ws.join(".git/commondir").exists(),
        "{:?}",
        std::fs::read_to_string(e.ws.join(".git/commondir"))
    );
}
