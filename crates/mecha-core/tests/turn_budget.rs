//! The turn budget is a limit: whatever a turn's calls return, however many
//! there are, external or not, with whatever echoes and refusals, the
//! result blocks it sends never add up to more than the budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_core::{
    Call, EXTERNAL_HEADER, MIN_CALL_SHARE, Registry, Slot, Tool, ToolCtx, ToolOutput, run_turn,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Prints `bytes` bytes in lines, whole or through the streaming sink.
struct Out;

#[async_trait]
impl Tool for Out {
    fn name(&self) -> &str {
        "out"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let bytes = input["bytes"].as_u64().unwrap() as usize;
        let text: String = "0123456789abcdef\n".repeat(bytes / 17 + 1)[..bytes].to_owned();
        let content = if input["stream"].as_bool().unwrap() {
            let mut sink = ctx.sink("out", ctx.call_budget_bytes);
            for piece in text.as_bytes().chunks(4000) {
                sink.push(piece);
            }
            sink.finish()
        } else {
            text
        };
        Ok(if input["external"].as_bool().unwrap() {
            ToolOutput::external(content)
        } else {
            ToolOutput::ok(content)
        })
    }
}

/// Echoes `size` bytes after every result; a call sets a new size, which
/// may even break the limit it declares.
struct Echo {
    size: Mutex<usize>,
    limit: usize,
}

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn echo(&self) -> Option<String> {
        let size = *self.size.lock().unwrap();
        (size > 0).then(|| "e".repeat(size))
    }
    fn echo_limit(&self) -> usize {
        self.limit
    }
    async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        *self.size.lock().unwrap() = input["size"].as_u64().unwrap() as usize;
        Ok(ToolOutput::ok("saved"))
    }
}

#[derive(Debug, Clone)]
enum Planned {
    Out {
        bytes: usize,
        external: bool,
        stream: bool,
    },
    SetEcho(usize),
    Unknown,
    Refused(usize),
}

fn planned() -> impl Strategy<Value = Planned> {
    prop_oneof![
        6 => (0usize..30_000, any::<bool>(), any::<bool>())
            .prop_map(|(bytes, external, stream)| Planned::Out { bytes, external, stream }),
        1 => (0usize..3000).prop_map(Planned::SetEcho),
        1 => Just(Planned::Unknown),
        2 => (0usize..5000).prop_map(Planned::Refused),
    ]
}

fn slot(i: usize, planned: &Planned) -> Slot {
    let run = |name: &str, input: Value| {
        Slot::Run(Call {
            id: format!("c{i}"),
            name: name.into(),
            input,
        })
    };
    match planned {
        Planned::Out {
            bytes,
            external,
            stream,
        } => run(
            "out",
            json!({"bytes": bytes, "external": external, "stream": stream}),
        ),
        Planned::SetEcho(size) => run("echo", json!({ "size": size })),
        Planned::Unknown => run("no_such_tool", json!({})),
        Planned::Refused(len) => Slot::Refused {
            name: "out".into(),
            output: ToolOutput::err("r".repeat(*len)),
        },
    }
}

fn registry(echo: usize, limit: usize) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Out)).unwrap();
    r.register(Arc::new(Echo {
        size: Mutex::new(echo),
        limit,
    }))
    .unwrap();
    r
}

fn turn(budget: usize, registry: &Registry, slots: Vec<Slot>) -> Vec<ToolOutput> {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), budget).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(run_turn(registry, &ctx, 1, budget, slots))
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_turns_results_never_exceed_its_budget(
        budget in 0usize..60_000,
        echo in 0usize..2500,
        limit in 0usize..2500,
        calls in proptest::collection::vec(planned(), 0..50),
    ) {
        let registry = registry(echo, limit);
        let slots: Vec<Slot> = calls.iter().enumerate().map(|(i, p)| slot(i, p)).collect();
        let results = turn(budget, &registry, slots);
        prop_assert_eq!(results.len(), calls.len());
        let total: usize = results.iter().map(|r| r.content.len()).sum();
        prop_assert!(total <= budget, "{} bytes sent against a budget of {}", total, budget);
    }
}

fn outs(n: usize, bytes: usize) -> Vec<Slot> {
    (0..n)
        .map(|i| {
            slot(
                i,
                &Planned::Out {
                    bytes,
                    external: true,
                    stream: true,
                },
            )
        })
        .collect()
}

#[test]
fn forty_calls_against_a_small_budget_run_the_first_and_say_how_many_to_send() {
    let budget = 12_288;
    let registry = registry(300, 2000);
    let results = turn(budget, &registry, outs(40, 20_000));
    let total: usize = results.iter().map(|r| r.content.len()).sum();
    assert!(total <= budget, "{total} bytes against {budget}");
    let ran = results
        .iter()
        .take_while(|r| r.content.starts_with(EXTERNAL_HEADER))
        .count();
    assert!(ran >= 1, "nothing ran");
    for r in &results[..ran] {
        assert!(
            r.content.contains("[truncated by the harness"),
            "{}",
            r.content
        );
        assert!(r.content.ends_with(&"e".repeat(300)), "the echo closes it");
        assert!(
            r.content.len() > MIN_CALL_SHARE,
            "{} bytes",
            r.content.len()
        );
    }
    for r in &results[ran..] {
        assert!(r.is_error && r.harness && !r.external, "{r:?}");
        assert!(
            r.content.starts_with("not run: this turn had 40 calls"),
            "{}",
            r.content
        );
        let most: usize = r
            .content
            .split("send at most ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(most >= ran, "told to send {most} but {ran} ran");
        assert!(most < 40);
    }
    // What the refusal advises fits, and runs every call.
    let most = (budget / (MIN_CALL_SHARE + EXTERNAL_HEADER.len() + 302)).max(1);
    let results = turn(budget, &registry, outs(most, 20_000));
    assert!(
        results
            .iter()
            .all(|r| r.content.starts_with(EXTERNAL_HEADER)),
        "a turn of {most} calls was cut down"
    );
}

#[test]
fn a_turn_that_changes_the_echo_shows_the_new_one_within_the_budget() {
    let budget = 12_000;
    let registry = registry(10, 2000);
    let mut slots = vec![slot(0, &Planned::SetEcho(1500))];
    slots.extend(outs(2, 50_000).into_iter().skip(1));
    let results = turn(budget, &registry, slots);
    let total: usize = results.iter().map(|r| r.content.len()).sum();
    assert!(total <= budget, "{total} bytes against {budget}");
    for r in &results {
        assert!(r.content.ends_with(&"e".repeat(1500)), "{}", r.content);
    }
}
