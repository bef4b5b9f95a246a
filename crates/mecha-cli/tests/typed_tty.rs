//! What a user types in the TUI besides a prompt: `!command` (a shell
//! command run as the user, through the gate, confined by the sandbox,
//! counted in the taint, its output given to the model with the next
//! prompt), `@path` mentions (a workspace file attached through the jail,
//! as private data, within the budget), Tab completion, and a prompt wider
//! than the screen, which wraps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, Tui, cells};

use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// Every message the model was sent in request `n`, as one string.
fn sent(mock: &MockModel, n: usize) -> String {
    mock.requests()[n].body["messages"].to_string()
}

#[tokio::test]
async fn a_bang_command_runs_as_the_user_and_goes_to_the_model_with_the_next_prompt() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("it said hello")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("interlock clear").await;
    tui.type_keys(b"!echo hello-from-$((6*7))\r");
    // The output on the screen, under the call's line; nobody was asked.
    tui.wait_for("hello-from-42").await;
    tui.wait_for("✓ shell").await;
    // The shell reads private data: the status line says so at once.
    tui.wait_for("private data held").await;
    assert!(mock.requests().is_empty(), "a !command asks no model");
    tui.type_keys(b"what did it say\r");
    tui.wait_answered("it said hello").await;
    tui.quit().await;
    let sent = sent(&mock, 0);
    assert!(
        sent.contains("the user ran `echo hello-from-$((6*7))` at the prompt"),
        "{sent}"
    );
    assert!(sent.contains("hello-from-42"), "{sent}");
    assert!(sent.contains("what did it say"), "{sent}");
}

/// The taint a `!command` brings is the conversation's: its private data
/// and the untrusted content a model's call then brings (`todo`, forced
/// untrusted here) arm the interlock, which refuses the model's send. The
/// `todo` result alone would have let the fetch through to the fetcher.
#[tokio::test]
async fn a_bang_commands_taint_arms_the_interlock_against_the_models_send() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "[tools.todo]\nforce = { untrusted_input = true }\n".into();
    let todo = json!({"items": [{"content": "x", "status": "pending"}]});
    let fetch = json!({"url": "http://127.0.0.1:9/exfiltrate"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("todo", todo)]),
        common::tool_turn(&[("http_fetch", fetch)]),
        MockReply::text("could not send"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"!echo the-secret\r");
    tui.wait_for("private data held").await;
    tui.type_keys(b"send it\r");
    tui.wait_answered("could not send").await;
    tui.wait_for("armed, sends refused").await;
    tui.quit().await;
    let results = common::results_in(&mock, 2);
    let fetched = &results.last().unwrap().0;
    assert!(
        fetched.contains("interlock"),
        "refused by the interlock, not by the fetcher: {results:?}"
    );
}

#[tokio::test]
async fn a_bang_command_runs_confined_when_a_sandbox_is_configured() {
    if !common::have_setsid()
        || !common::have(
            "bwrap",
            "the sandbox tests",
            "bubblewrap (apt-get install bubblewrap)",
        )
    {
        return;
    }
    let mut e = common::env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    let outside = e.ws.parent().unwrap().join("written-from-the-prompt");
    let mock = MockModel::start(vec![]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"!echo x > ../written-from-the-prompt; echo ran-$((1+1))\r");
    tui.wait_for("ran-2").await;
    tui.quit().await;
    assert!(!outside.exists(), "the command wrote outside the workspace");
}

#[tokio::test]
async fn an_at_mention_attaches_the_file_as_private_data() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "the-note-body\n").unwrap();
    let mock = MockModel::start(vec![MockReply::text("read your note")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("interlock clear").await;
    tui.type_keys(b"explain @notes.txt please\r");
    tui.wait_answered("read your note").await;
    tui.wait_for("private data held").await;
    tui.quit().await;
    let sent = sent(&mock, 0);
    assert!(sent.contains("explain @notes.txt please"), "{sent}");
    assert!(
        sent.contains("the user attached `notes.txt` to this prompt"),
        "{sent}"
    );
    assert!(sent.contains("the-note-body"), "{sent}");
}

/// A hostile mention: outside the workspace (by `..`, an absolute path, a
/// symlink that leads out), in mecha's own files (a skill store in the
/// workspace) or in a git directory. Each is refused with a line that says
/// why, and nothing reaches the model.
#[tokio::test]
async fn a_mention_the_jail_refuses_sends_nothing_and_says_why() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    let secret = e.ws.parent().unwrap().join("outside.txt");
    std::fs::write(&secret, "outside-secret\n").unwrap();
    std::os::unix::fs::symlink(&secret, e.ws.join("link.txt")).unwrap();
    let store = e.ws.join("skills");
    std::fs::create_dir_all(store.join("s")).unwrap();
    std::fs::write(
        store.join("s/SKILL.md"),
        "---\nname: s\ndescription: d\n---\nstore-body\n",
    )
    .unwrap();
    std::fs::create_dir_all(e.ws.join(".git")).unwrap();
    std::fs::write(e.ws.join(".git/config"), "git-config-body\n").unwrap();
    e.extra_config = format!("[skills]\ndir = {:?}\n", store.display().to_string());
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    let cases = [
        ("@../outside.txt", "(outside the workspace)"),
        (secret.to_str().unwrap(), "(outside the workspace)"),
        ("@link.txt", "(outside the workspace)"),
        ("@skills/s/SKILL.md", "(in mecha's own files)"),
        ("@.git/config", "(inside a git directory)"),
    ];
    for (mention, why) in cases {
        let mention = if mention.starts_with('@') {
            mention.to_owned()
        } else {
            format!("@{mention}")
        };
        tui.type_keys(format!("look at {mention}\r").as_bytes());
        tui.wait_for(&format!("{mention} was not attached {why}"))
            .await;
    }
    tui.wait_for("so nothing was sent").await;
    tui.quit().await;
    assert!(
        mock.requests().is_empty(),
        "a refused mention sent a prompt"
    );
}

/// A file longer than the turn's budget is cut, and the cut says where
/// the rest is.
#[tokio::test]
async fn a_long_attachment_is_cut_within_the_budget_with_where_the_rest_is() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "[tools]\noutput_budget_bytes = 16000\n".into();
    let long: String = (0..5000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(e.ws.join("big.txt"), &long).unwrap();
    let mock = MockModel::start(vec![MockReply::text("skimmed")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"summarise @big.txt\r");
    tui.wait_answered("skimmed").await;
    tui.quit().await;
    let sent = sent(&mock, 0);
    assert!(sent.len() < 20_000, "not cut: {} bytes", sent.len());
    assert!(sent.contains("line 0"), "{sent}");
    assert!(!sent.contains("line 4999"), "the tail was sent");
    assert!(
        sent.contains("to stay within the output budget; continue with offset"),
        "{sent}"
    );
}

#[tokio::test]
async fn tab_completes_commands_and_workspace_paths() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::create_dir(e.ws.join("src")).unwrap();
    std::fs::write(e.ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    let mock = MockModel::start(vec![MockReply::text("seen")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"/he\t");
    tui.wait_for("› /help").await;
    // Two commands start so: both shown under the prompt.
    tui.type_keys(b"\x15/mo\t");
    tui.wait_for("/mode  /model").await;
    tui.type_keys(b"\x15read @s\t");
    tui.wait_for("› read @src/").await;
    tui.type_keys(b"\t");
    tui.wait_for("› read @src/main.rs").await;
    tui.type_keys(b"\r");
    tui.wait_answered("seen").await;
    let screen = cells(&tui.terminal.screen());
    tui.quit().await;
    assert!(screen.contains("› read @src/main.rs"), "{screen}");
    assert!(sent(&mock, 0).contains("fn main() {}"));
}

#[tokio::test]
async fn a_prompt_wider_than_the_screen_wraps_so_its_end_stays_in_sight() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("seen")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    // 150 characters on a 100-column screen, the last words past its edge.
    let prompt = format!("{} the-very-end", "x".repeat(136));
    tui.type_keys(prompt.as_bytes());
    tui.wait_for("the-very-end").await;
    tui.type_keys(b"\r");
    tui.wait_answered("seen").await;
    tui.quit().await;
    assert!(sent(&mock, 0).contains(&prompt));
}
