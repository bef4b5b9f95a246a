//! The project's instructions file (AGENTS.md, CLAUDE.md as the fallback)
//! through the real binary: in the system prompt after mecha's own text,
//! byte-stable, capped with the cut stated, labelled private data as
//! fs_read would label it, a warning when it cannot be read, and named by
//! `mecha tools`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const RULES: &str = "Run `make check` before you say you are done.\nNever touch vendor/.\n";

/// The system prompt of request `n`, whichever API.
fn system_of(mock: &MockModel, n: usize) -> String {
    let body = &mock.requests()[n].body;
    match &body["system"] {
        serde_json::Value::Null => body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        serde_json::Value::String(s) => s.clone(),
        blocks => blocks
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap_or_default())
            .collect(),
    }
}

async fn answered(e: &Env, api: Api) -> (MockModel, String) {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e.run(api, &mock, "k", &["go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    (mock, stderr(&out))
}

#[tokio::test]
async fn agents_md_goes_in_the_system_prompt_after_mechas_text_byte_for_byte() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let e = env();
        std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
        let (first, _) = answered(&e, api).await;
        let system = system_of(&first, 0);
        let heading = system
            .find("# Project instructions (AGENTS.md)")
            .expect(&system);
        assert!(
            system.find("You are mecha").unwrap() < heading,
            "{api:?}: {system}"
        );
        assert!(system[heading..].contains(RULES), "{api:?}: {system}");
        let (second, _) = answered(&e, api).await;
        assert_eq!(system, system_of(&second, 0), "{api:?}: not byte-stable");
    }
}

#[tokio::test]
async fn claude_md_stands_in_only_when_agents_md_is_absent() {
    let e = env();
    std::fs::write(e.ws.join("CLAUDE.md"), "claude rules\n").unwrap();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    let system = system_of(&mock, 0);
    assert!(
        system.contains("# Project instructions (CLAUDE.md)"),
        "{system}"
    );
    assert!(system.contains("claude rules"), "{system}");

    std::fs::write(e.ws.join("AGENTS.md"), "agents rules\n").unwrap();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    let system = system_of(&mock, 0);
    assert!(system.contains("agents rules"), "{system}");
    assert!(!system.contains("claude rules"), "{system}");
}

#[tokio::test]
async fn no_file_no_section() {
    let e = env();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    assert!(!system_of(&mock, 0).contains("Project instructions"));
}

#[tokio::test]
async fn the_list_is_configurable_and_a_project_may_set_its_own() {
    let mut e = env();
    e.extra_config = "[agent]\ninstructions_files = [\"docs/agents.txt\"]\n".into();
    std::fs::create_dir(e.ws.join("docs")).unwrap();
    std::fs::write(e.ws.join("docs/agents.txt"), "from docs\n").unwrap();
    std::fs::write(e.ws.join("AGENTS.md"), "from the root\n").unwrap();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    let system = system_of(&mock, 0);
    assert!(
        system.contains("from docs") && !system.contains("from the root"),
        "{system}"
    );

    std::fs::write(
        e.ws.join("mecha.toml"),
        "[agent]\ninstructions_files = []\n",
    )
    .unwrap();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    assert!(!system_of(&mock, 0).contains("Project instructions"));

    std::fs::write(
        e.ws.join("mecha.toml"),
        "[agent]\ninstructions_files = [\"../outside.md\"]\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("mecha.toml") && err.contains("[agent] instructions_files: `../outside.md`"),
        "{err}"
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_large_file_is_cut_at_32_kb_on_a_char_boundary_and_the_cut_is_stated() {
    let e = env();
    // "é" is two bytes, and its second byte is byte 32768: the cut must
    // leave the whole character out.
    let mut text = "a".repeat(32 * 1024 - 1);
    text.push('é');
    text.push_str("\nTAIL THAT IS NOT SENT\n");
    std::fs::write(e.ws.join("AGENTS.md"), &text).unwrap();
    let (mock, _) = answered(&e, Api::Anthropic).await;
    let system = system_of(&mock, 0);
    assert!(!system.contains("TAIL THAT IS NOT SENT") && !system.contains('é'));
    let note = format!(
        "[mecha cut AGENTS.md here: the first 32767 of its {} bytes are above; fs_read \
         AGENTS.md from line 1 for the rest]",
        text.len()
    );
    assert!(system.ends_with(&note), "{}", &system[system.len() - 300..]);
}

/// With `block_sends_after_private`, a send is refused once the
/// conversation holds private data: from the first call, when the
/// instructions file is in the prompt; not at all without one.
#[tokio::test]
async fn the_instructions_make_the_conversation_hold_private_data() {
    for with_file in [true, false] {
        let mut e = env();
        e.extra_config = "[agent]\nblock_sends_after_private = true\n".into();
        if with_file {
            std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
        }
        let mock = MockModel::start(vec![
            tool_turn(&[("http_fetch", json!({"url": "http://127.0.0.1:9/"}))]),
            MockReply::text("done"),
        ])
        .await;
        let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let (result, _) = results_in(&mock, 1).pop().unwrap();
        let refused = result.contains("holds private data while block_sends_after_private");
        assert_eq!(refused, with_file, "file: {with_file}: {result}");
    }
}

/// The trifecta: private data from the instructions, untrusted input from
/// a tool config distrusts (todo: it reads nothing private), then a send whose destination the model
/// chooses is refused. Without the file the same send is left to the gate.
#[tokio::test]
async fn the_instructions_are_the_private_leg_of_the_trifecta() {
    for with_file in [true, false] {
        let mut e = env();
        e.extra_config = "[tools.todo]\nforce = { untrusted_input = true }\n".into();
        if with_file {
            std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
        }
        let mock = MockModel::start(vec![
            tool_turn(&[("todo", json!({"items": []}))]),
            tool_turn(&[("http_fetch", json!({"url": "http://127.0.0.1:9/"}))]),
            MockReply::text("done"),
        ])
        .await;
        let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let (second, _) = results_in(&mock, 2).pop().unwrap();
        let armed = second.contains("both private data and untrusted content");
        assert_eq!(armed, with_file, "file: {with_file}: {second}");
    }
}

/// The label is fs_read's, config included: under `distrust_workspace`
/// fs_read's results are untrusted too, so the file alone arms the
/// interlock.
#[tokio::test]
async fn under_distrust_workspace_the_file_alone_arms_the_interlock() {
    let mut e = env();
    e.extra_config = "[agent]\ndistrust_workspace = true\n".into();
    std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("http_fetch", json!({"url": "http://127.0.0.1:9/"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, _) = results_in(&mock, 1).pop().unwrap();
    assert!(
        result.contains("both private data and untrusted content"),
        "{result}"
    );
}

/// The label is stored with the session: a resumed run keeps it even when
/// the file is gone by then.
#[tokio::test]
async fn a_resumed_session_keeps_the_label() {
    let mut e = env();
    e.extra_config = "[agent]\nblock_sends_after_private = true\n".into();
    std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
    let (_, _) = answered(&e, Api::Anthropic).await;
    std::fs::remove_file(e.ws.join("AGENTS.md")).unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("http_fetch", json!({"url": "http://127.0.0.1:9/"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--yes", "--continue", "again"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!system_of(&mock, 0).contains("Project instructions"));
    let (result, _) = results_in(&mock, 1).pop().unwrap();
    assert!(
        result.contains("holds private data while block_sends_after_private"),
        "{result}"
    );
}

#[tokio::test]
async fn a_file_that_cannot_be_read_is_a_warning_and_the_run_goes_on() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "outside text\n").unwrap();
    type Plant = Box<dyn Fn(&Env)>;
    let cases: Vec<(Plant, &str)> = vec![
        (
            Box::new(|e| std::fs::create_dir(e.ws.join("AGENTS.md")).unwrap()),
            "it is a directory",
        ),
        (
            Box::new(|e| std::fs::write(e.ws.join("AGENTS.md"), b"ok \xff\xfe").unwrap()),
            "not UTF-8",
        ),
        (
            Box::new(move |e| {
                std::os::unix::fs::symlink(outside.path().join("secret.md"), e.ws.join("AGENTS.md"))
                    .unwrap()
            }),
            "outside the workspace",
        ),
    ];
    for (plant, problem) in cases {
        let e = env();
        plant(&e);
        // The first file that exists is the one: CLAUDE.md does not stand in.
        std::fs::write(e.ws.join("CLAUDE.md"), "fallback\n").unwrap();
        let (mock, err) = answered(&e, Api::Anthropic).await;
        assert!(
            err.contains("warning: the project instructions file AGENTS.md cannot be read")
                && err.contains(problem),
            "{problem}: {err}"
        );
        let system = system_of(&mock, 0);
        assert!(
            !system.contains("Project instructions") && !system.contains("outside text"),
            "{system}"
        );
    }
}

async fn tools(e: &Env) -> String {
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn mecha_tools_names_the_file_its_size_and_the_cut() {
    let e = env();
    let listing = tools(&e).await;
    assert!(
        listing.contains("instructions: none (no AGENTS.md or CLAUDE.md in the workspace)"),
        "{listing}"
    );
    std::fs::write(e.ws.join("CLAUDE.md"), RULES).unwrap();
    let listing = tools(&e).await;
    assert!(
        listing.contains(&format!(
            "instructions: CLAUDE.md ({} bytes), sent whole",
            RULES.len()
        )),
        "{listing}"
    );
    std::fs::write(e.ws.join("AGENTS.md"), "x".repeat(40_000)).unwrap();
    let listing = tools(&e).await;
    assert!(
        listing.contains("instructions: AGENTS.md (40000 bytes; the first 32768 are sent"),
        "{listing}"
    );
}

#[tokio::test]
async fn chat_sends_them_too() {
    let e = env();
    std::fs::write(e.ws.join("AGENTS.md"), RULES).unwrap();
    let mock = MockModel::start(vec![MockReply::text("hi")]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "chat", &[], "hello\n")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = system_of(&mock, 0);
    assert!(
        system.contains("# Project instructions (AGENTS.md)") && system.contains(RULES),
        "{system}"
    );
}
