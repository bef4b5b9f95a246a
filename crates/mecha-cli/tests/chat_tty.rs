//! `mecha chat` at a real terminal (a pseudo-terminal made by util-linux
//! `script`): lines pasted together are one prompt, blank lines included;
//! a line typed on its own is a prompt of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use mecha_testkit::{MockModel, MockReply};

#[tokio::test]
async fn a_paste_with_a_blank_line_is_one_prompt_and_typed_lines_are_their_own() {
    if !common::have_script() {
        return;
    }
    let e = common::env();
    std::fs::write(
        e.home.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![
        MockReply::text("got the paste"),
        MockReply::text("got the line"),
    ])
    .await;
    let mut requests = mock.subscribe();
    let command = format!(
        "{} -C {} chat",
        assert_cmd::cargo::cargo_bin("mecha").display(),
        e.ws.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("MECHA_HOME", &e.home)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut keyboard = child.stdin.take().unwrap();
    let mut next_request = async || {
        tokio::time::timeout(Duration::from_secs(20), requests.recv())
            .await
            .expect("mecha sent no request")
            .unwrap()
    };
    // One write, as a terminal sends a paste.
    keyboard.write_all(b"part one\n\npart two\n").unwrap();
    let first = next_request().await;
    // Typed only after the first turn was sent, so it cannot be part of it.
    keyboard.write_all(b"typed alone\n").unwrap();
    let second = next_request().await;
    keyboard.write_all(b"/exit\n").unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let messages = first.body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0]["content"]
            .to_string()
            .contains(r"part one\n\npart two"),
        "the paste was split: {messages:?}"
    );
    let messages = second.body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[2]["content"].to_string().contains("typed alone"));
    assert!(!messages[2]["content"].to_string().contains("part"));
}
