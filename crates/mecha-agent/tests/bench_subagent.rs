//! What one delegation costs the harness beyond the child's own model
//! requests: a parent turn that calls a subagent (whose child answers at
//! once, without tools) against the same turn calling a plain tool, with a
//! provider that answers every request at once.
//!
//! `cargo test -p mecha-agent --release --test bench_subagent -- --ignored --nocapture`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mecha_agent::{Runtime, SubagentTool};
use mecha_core::{Capabilities, Registry, StopReason, ToolOutput};
use mecha_provider::{Provider, Request, Response};
use serde_json::json;
use support::*;

/// The parent calls `helper` once, then answers; the child (no tools)
/// answers at once.
fn instant(request: &Request<'_>) -> Response {
    let parent = !request.tools.is_empty();
    let called = request.messages.len() > 1;
    if parent && !called {
        reply(
            vec![call("c", "helper", json!({"task": "answer"}))],
            StopReason::ToolUse,
        )
    } else {
        reply(vec![text("answered")], StopReason::EndTurn)
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::test]
#[ignore = "a benchmark: run it in release with --ignored --nocapture"]
async fn one_delegation_in_harness_time() {
    let dir = tempfile::tempdir().unwrap();
    let provider: Arc<dyn Provider> = Arc::new(Answering(instant));
    let lineage = lineage(allow());
    let profile = profile("helper");
    let runtime = Runtime {
        provider: Arc::clone(&provider),
        lineage,
    };
    let mut delegating = Registry::new();
    delegating
        .register(Arc::new(SubagentTool::new(
            profile,
            Registry::new(),
            Some(runtime),
        )))
        .unwrap();
    let mut plain = Registry::new();
    plain
        .register(Arc::new(Stub {
            name: "helper",
            caps: Capabilities::NONE,
            read_only: true,
            reply: ToolOutput::ok("answered"),
            log: Log::default(),
        }))
        .unwrap();
    let runs = 500;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (registry, samples) in [(&delegating, &mut with), (&plain, &mut without)] {
            let agent = agent(
                Arc::clone(&provider),
                registry.clone(),
                allow_all_gate(),
                dir.path(),
            );
            let started = Instant::now();
            agent
                .send(&mut session(), "go", &Recorder::default())
                .await
                .unwrap();
            samples.push(started.elapsed());
        }
    }
    let (with, without) = (median(with), median(without));
    println!(
        "one delegation: {:.3} ms in the harness beyond the child's model request (a turn with it {:.3} ms, with a plain tool {:.3} ms; median of {runs})",
        with.saturating_sub(without).as_secs_f64() * 1e3,
        with.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
    );
}
