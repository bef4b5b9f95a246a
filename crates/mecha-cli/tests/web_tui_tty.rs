//! A search on the TUI's screen, at a real terminal (a pseudo-terminal with
//! mecha as its session leader): the call's line shows the query, how many
//! results came from which backend, and their first titles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::standin::{Standin, json, searxng_answer};
use common::tui::{READY, Tui, cells};
use mecha_testkit::{MockModel, MockReply};

#[tokio::test]
async fn a_search_shows_its_results_on_its_line() {
    if !common::have_setsid() {
        return;
    }
    let sx = Standin::start(|_| {
        json(&searxng_answer(
            "borrowing",
            &[
                ("Borrowing explained", "https://a.example/", "one"),
                ("The borrow checker", "https://b.example/", "two"),
            ],
        ))
    });
    let mut e = common::env();
    e.extra_config = format!("[[search]]\nkind = \"searxng\"\nurl = \"{}\"\n", sx.url());
    let mock = MockModel::start(vec![
        common::tool_turn(&[("web_search", serde_json::json!({"query": "borrowing"}))]),
        MockReply::text("searched it"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.type_keys(b"search\r");
    tui.wait_answered("searched it").await;
    tui.wait_for("2 results for \"borrowing\" from searxng: Borrowing explained · The")
        .await;
    let screen = cells(&tui.terminal.screen());
    let line = screen
        .lines()
        .find(|l| l.contains("from searxng"))
        .unwrap()
        .to_owned();
    assert!(line.starts_with("✓ web_search borrowing"), "{screen}");
    tui.quit().await;
}
