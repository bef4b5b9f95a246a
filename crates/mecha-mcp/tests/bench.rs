#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Benchmarks, not tests: ignored by default, and they print figures rather
//! than assert them. Run them in release:
//!
//! ```text
//! cargo test -p mecha-mcp --release --test bench -- --ignored --nocapture --test-threads 1
//! ```

mod common;

use std::time::{Duration, Instant};

use common::*;
use mecha_mcp::{McpHub, McpServerConfig};
use serde_json::json;

fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() - 1) as f64 * q).round() as usize;
        samples[i]
    };
    let mean = samples.iter().sum::<Duration>() / u32::try_from(samples.len()).unwrap();
    format!(
        "n={} median={:?} p90={:?} p99={:?} mean={:?} min={:?} max={:?}",
        samples.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        mean,
        samples[0],
        samples[samples.len() - 1]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run with --ignored --nocapture"]
async fn echo_round_trip() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let echo = tool(&hub, "fx__echo");
    let ctx = ctx(ws.path());
    for _ in 0..100 {
        echo.call(json!({"text": "warm"}), &ctx).await.unwrap();
    }
    let mut samples = Vec::with_capacity(1000);
    for i in 0..1000 {
        let started = Instant::now();
        let out = echo
            .call(json!({"text": format!("ping {i}")}), &ctx)
            .await
            .unwrap();
        samples.push(started.elapsed());
        assert!(!out.is_error);
    }
    println!(
        "MCP echo round trip (fixture, via McpTool::call): {}",
        summary(samples)
    );
}

async fn start_up(n: usize, rounds: usize) -> String {
    let ws = tempfile::tempdir().unwrap();
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let configs: Vec<McpServerConfig> = (0..n)
            .map(|i| fixture_config(&format!("s{i}"), &[]))
            .collect();
        let started = Instant::now();
        let hub = McpHub::start(configs, &opts(ws.path())).await;
        samples.push(started.elapsed());
        assert_eq!(
            tool_names(&hub)
                .iter()
                .filter(|t| t.ends_with("__echo"))
                .count(),
            n
        );
        hub.shutdown();
    }
    summary(samples)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run with --ignored --nocapture"]
async fn start_up_one_vs_five() {
    // Build the fixture (and warm the page cache) before timing.
    let _ = start_up(1, 3).await;
    println!("start-up, 1 fixture server:  {}", start_up(1, 30).await);
    println!("start-up, 5 fixture servers: {}", start_up(5, 30).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run with --ignored --nocapture"]
async fn start_up_server_everything() {
    let Some(bin) = npm_servers() else { return };
    let ws = tempfile::tempdir().unwrap();
    let mut samples = Vec::new();
    for _ in 0..10 {
        let mut config = McpServerConfig::new(
            "everything",
            bin.join("mcp-server-everything").to_string_lossy(),
        );
        config.args = vec!["stdio".into()];
        let started = Instant::now();
        let hub = McpHub::start([config], &opts(ws.path())).await;
        samples.push(started.elapsed());
        assert!(!hub.tools().is_empty());
        hub.shutdown();
    }
    println!("start-up, server-everything (node): {}", summary(samples));
}
