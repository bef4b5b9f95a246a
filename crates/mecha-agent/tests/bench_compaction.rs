//! What one compaction costs the harness, without the model's time: a
//! prompt sent on a 200-turn history (about 270K bytes, ~90K tokens) with
//! a provider that answers at once, with and without a threshold it has
//! crossed. The difference is the compaction: measuring the history,
//! choosing the cut, building the summary request, collecting the carried
//! state and rebuilding the history.
//!
//! `cargo test -p mecha-agent --release --test bench_compaction -- --ignored --nocapture`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mecha_agent::{CompactionPolicy, SUMMARY_REQUEST, Session};
use mecha_core::{Block, Message, Registry, Role, StopReason, ToolCall};
use mecha_provider::{Request, Response};
use support::*;

/// Answers every request at once: a summary when asked, else "done".
fn instant(request: &Request<'_>) -> Response {
    let asked = request
        .messages
        .last()
        .is_some_and(|m| m.text() == SUMMARY_REQUEST);
    let answer = if asked { "SUMMARY: all of it." } else { "done" };
    reply(vec![text(answer)], StopReason::EndTurn)
}

fn history(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::user_text("the task")];
    for n in 0..turns {
        let id = format!("call-{n}");
        messages.push(Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(ToolCall {
                id: id.clone(),
                name: "fs_read".into(),
                input: serde_json::json!({"path": format!("src/file_{n}.rs")}),
                input_error: None,
            })],
        });
        messages.push(Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id,
                content: "fn main() { println!(\"a line of code\"); }\n".repeat(30),
                is_error: false,
                images: Vec::new(),
            }],
        });
    }
    messages
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::test]
#[ignore = "a benchmark: run it in release with --ignored --nocapture"]
async fn one_compaction_in_harness_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::new();
    registry
        .register(Arc::new(mecha_tools::Todo::default()))
        .unwrap();
    let messages = history(200);
    let policy = CompactionPolicy {
        threshold: 60_000,
        window: 1_000_000,
        reply_tokens: 8_000,
    };
    let runs = 200;
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..runs {
        for compacting in [true, false] {
            let mut agent = agent(
                Arc::new(Answering(instant)),
                registry.clone(),
                allow_all_gate(),
                dir.path(),
            );
            if compacting {
                agent = agent.with_compaction(policy);
            }
            let mut session = Session {
                messages: messages.clone().into(),
                ..Session::default()
            };
            let started = Instant::now();
            agent
                .send(&mut session, "next", &Recorder::default())
                .await
                .unwrap();
            let took = started.elapsed();
            if compacting {
                assert!(session.messages.len() < messages.len() / 2, "it compacted");
                with.push(took);
            } else {
                without.push(took);
            }
        }
    }
    let (with, without) = (median(with), median(without));
    println!(
        "one compaction of a {}-message history: {:.2} ms in the harness (a turn with it {:.2} ms, without {:.2} ms; median of {runs})",
        messages.len(),
        with.saturating_sub(without).as_secs_f64() * 1e3,
        with.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
    );
}
