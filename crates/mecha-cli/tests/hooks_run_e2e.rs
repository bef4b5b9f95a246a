//! `[[hook]]` guards through `mecha run`: a Claude-Code-style script
//! refuses a command and the model is told why; `ask` is refused under
//! `--yes`; a broken guard keeps the gate shut; the skill tool and a
//! subagent's calls pass the same hooks; the hook never sees a model key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// Refuses any shell command with `rm -rf` (exit 2, the reason on
/// stderr), asks about `deploy`, and records what it was given.
const GUARD: &str = r#"#!/bin/bash
input=$(cat)
echo "$input" >> "$MECHA_PROJECT_DIR/hook-input.jsonl"
env > "$MECHA_PROJECT_DIR/hook-env.txt"
case "$input" in
  *"rm -rf"*) echo "rm -rf is not allowed here; delete files one by one" >&2; exit 2 ;;
  *deploy*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"deploys need a person"}}'; exit 0 ;;
esac
exit 0
"#;

fn guarded(e: &mut Env, script: &str, matcher: &str, extra: &str) {
    let path = e.home.join("guard.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    e.extra_config = format!(
        "[[hook]]\nevent = \"pre_tool\"\nmatcher = \"{matcher}\"\ncommand = \"{}\"\ntimeout_s = 5\n{extra}",
        path.display()
    );
}

#[tokio::test]
async fn a_guard_script_refuses_a_command_and_the_model_is_told_why() {
    let mut e = env();
    guarded(&mut e, GUARD, "shell|fs_.*", "");
    std::fs::write(e.ws.join("keep.txt"), "precious").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": "rm -rf keep.txt"}))]),
        tool_turn(&[("shell", json!({"command": "echo fine > ok.txt"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "clean up"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        e.ws.join("keep.txt").exists(),
        "the guarded command never ran"
    );
    let (refusal, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(is_error);
    assert!(refusal.contains("refused by a hook"), "{refusal}");
    assert!(refusal.contains("delete files one by one"), "{refusal}");
    assert!(
        e.ws.join("ok.txt").exists(),
        "an unobjectionable call still ran"
    );
    // What the hook was given, in the contract's shape; no model key.
    let input = std::fs::read_to_string(e.ws.join("hook-input.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(input.lines().next().unwrap()).unwrap();
    assert_eq!(first["hook_event_name"], "PreToolUse");
    assert_eq!(first["tool_name"], "shell");
    assert_eq!(first["tool_input"]["command"], "rm -rf keep.txt");
    assert!(first["tool_use_id"].is_string() && first["session_id"].is_string());
    let hook_env = std::fs::read_to_string(e.ws.join("hook-env.txt")).unwrap();
    assert!(!hook_env.contains("ANTHROPIC_API_KEY"), "{hook_env}");
    assert!(hook_env.contains("MECHA_PROJECT_DIR="), "{hook_env}");
    assert!(
        stderr(&out).contains("mecha: hook"),
        "each verdict is shown"
    );
    let _ = stdout(&out);
}

#[tokio::test]
async fn a_hooks_ask_is_refused_under_yes() {
    let mut e = env();
    guarded(&mut e, GUARD, "shell", "");
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": "echo deploy > deployed.txt"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "ship it"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !e.ws.join("deployed.txt").exists(),
        "--yes does not answer a hook's ask"
    );
    let (refusal, _) = results_in(&mock, 1).pop().unwrap();
    assert!(refusal.contains("fresh human decision"), "{refusal}");
    assert!(refusal.contains("deploys need a person"), "{refusal}");
}

#[tokio::test]
async fn a_broken_guard_keeps_the_gate_shut_unless_told_otherwise() {
    for (extra, runs) in [("", false), ("on_error = \"allow\"\n", true)] {
        let mut e = env();
        guarded(
            &mut e,
            "#!/bin/bash\necho not json\nexit 1\n",
            "shell",
            extra,
        );
        let mock = MockModel::start(vec![
            tool_turn(&[("shell", json!({"command": "echo ran > ran.txt"}))]),
            MockReply::text("done"),
        ])
        .await;
        let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(e.ws.join("ran.txt").exists(), runs, "on_error {extra:?}");
    }
}

#[tokio::test]
async fn the_skill_tool_and_a_subagents_calls_pass_the_hooks() {
    let mut e = env();
    let skill = e.home.join("skills").join("secret-ops");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: secret-ops\ndescription: Internal operations.\n---\nStep one.\n",
    )
    .unwrap();
    std::fs::write(e.ws.join("notes.txt"), "notes").unwrap();
    let refuse_all = "#!/bin/bash\ncat > /dev/null\necho 'not in this repository' >&2\nexit 2\n";
    guarded(
        &mut e,
        refuse_all,
        "skill|fs_read",
        "[[subagent]]\nname = \"reader\"\ndescription = \"Reads notes.\"\ntools = [\"fs_read\"]\n",
    );
    let mock = MockModel::start(vec![
        tool_turn(&[
            ("skill", json!({"name": "secret-ops"})),
            ("reader", json!({"task": "read notes.txt"})),
        ]),
        MockReply::text("done"),
    ])
    .await;
    mock.route(
        &["fs_read"],
        vec![
            tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]),
            MockReply::text("the child could not read it"),
        ],
    );
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 3);
    let skill_result = &results
        .iter()
        .find(|(c, _)| c.contains("secret-ops") || c.contains("hook"))
        .unwrap()
        .0;
    assert!(skill_result.contains("refused by a hook"), "{results:?}");
    // The child's fs_read went through the parent's hook.
    let child_saw = mock.requests()[2].body["messages"].to_string();
    assert!(child_saw.contains("refused by a hook"), "{child_saw}");
}
