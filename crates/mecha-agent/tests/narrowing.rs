//! A call that narrows the tool surface (a skill with `tools:`) gates
//! dispatch from then on, not just the tool list: the spec's three rules
//! (union, the narrowing tool stays reachable, unregistered names add
//! nothing), for the rest of the session, and for the calls made beside the
//! load in its own turn (`todo` included, unless the skill names it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use mecha_agent::{Event, GateStage, GateVerdict, ToolRefresh};
use mecha_core::{Capabilities, Narrowing, Registry, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};
use support::*;

/// A skill-like tool: each call narrows the surface to the `tools` it is
/// sent, on behalf of the skill `name`, and logs that it ran.
struct Loader {
    log: Log,
}

#[async_trait]
impl Tool for Loader {
    fn name(&self) -> &str {
        "skill"
    }
    fn description(&self) -> &str {
        "loads a procedure"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        true
    }
    /// Asked of any input the model sends, valid or not.
    fn narrowing(&self, input: &Value) -> Option<Narrowing> {
        let tools = input["tools"]
            .as_array()?
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        Some(Narrowing {
            by: input["name"].as_str()?.to_owned(),
            tools,
        })
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        self.log
            .lock()
            .unwrap()
            .push((ctx.turn, "skill".into(), input.clone()));
        Ok(ToolOutput {
            narrows: self.narrowing(&input),
            ..ToolOutput::ok("the procedure")
        })
    }
}

fn stub(name: &'static str, read_only: bool, log: &Log) -> Arc<Stub> {
    Arc::new(Stub {
        name,
        caps: Capabilities::NONE,
        read_only,
        reply: ToolOutput::ok(format!("{name} ran")),
        log: Arc::clone(log),
    })
}

/// `skill`, plus `fs_list`, `fs_read`, `todo` (read-only) and `fs_write`.
fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Loader {
        log: Arc::clone(log),
    }))
    .unwrap();
    let stubs = [
        ("fs_list", true),
        ("fs_read", true),
        ("fs_write", false),
        ("todo", true),
    ];
    for (name, read_only) in stubs {
        r.register(stub(name, read_only, log)).unwrap();
    }
    r
}

fn load(id: &str, skill: &str, tools: &[&str]) -> mecha_core::Block {
    call(id, "skill", json!({"name": skill, "tools": tools}))
}

fn ran(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(_, n, _)| n.clone())
        .collect()
}

#[tokio::test]
async fn a_call_outside_the_surface_is_refused_and_never_runs() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l", "review", &["fs_read", "fs_list"])],
        vec![
            call("w", "fs_write", json!({"path": "x", "content": "y"})),
            call("r", "fs_read", json!({})),
        ],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    assert_eq!(ran(&log), ["skill", "fs_read"], "fs_write never ran");
    let (refusal, is_error) = result_of(&queue, "w");
    assert!(is_error);
    assert_eq!(
        refusal,
        "`fs_write` is outside this run's tool surface: the skill `review` narrowed it to \
         fs_list, fs_read, skill. Finish with those tools, or ask the user."
    );
    assert_eq!(result_of(&queue, "r"), ("fs_read ran".into(), false));
    let events = events.0.lock().unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Gate { name, decision: GateVerdict::Blocked { stage: GateStage::Validation, .. }, .. }
            if name == "fs_write"
    )));
    let narrowed: Vec<(String, Vec<String>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Narrowed { by, tools } => Some((by.clone(), tools.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        narrowed,
        [(
            "review".to_owned(),
            vec!["fs_list".into(), "fs_read".into(), "skill".into()]
        )]
    );
}

/// Ran, in the order they ran (concurrent calls sorted).
fn ran_sorted(log: &Log) -> Vec<String> {
    let mut ran = ran(log);
    ran.sort();
    ran
}

#[tokio::test]
async fn a_call_beside_the_load_is_refused_by_its_narrowing_before_or_after_it() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![vec![
        call("w1", "fs_write", json!({"path": "x", "content": "y"})),
        load("l", "review", &["fs_read"]),
        call("r", "fs_read", json!({})),
        call("w2", "fs_write", json!({"path": "z", "content": "y"})),
    ]]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    assert_eq!(ran_sorted(&log), ["fs_read", "skill"], "no fs_write ran");
    let results = results_sent(&queue);
    let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["w1", "l", "r", "w2"], "results keep call order");
    let refusal = "`fs_write` is outside this run's tool surface: the skill `review` narrowed it \
                   to fs_read, skill. The skill `review` is loaded in this same turn, and its \
                   `tools:` gate the calls made beside the load too. Finish with those tools, or \
                   ask the user.";
    for (id, content, is_error) in &results {
        match id.as_str() {
            "w1" | "w2" => assert!(*is_error && content == refusal, "{id}: {content}"),
            _ => assert!(!is_error, "{id}: {content}"),
        }
    }
    let events = events.0.lock().unwrap();
    let refused: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Gate {
                id,
                decision:
                    GateVerdict::Blocked {
                        stage: GateStage::Validation,
                        ..
                    },
                ..
            } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(refused, ["w1", "w2"]);
    // The next request offers the narrowed surface.
    assert_eq!(queue.offered.lock().unwrap()[1], ["fs_read", "skill"]);
}

#[tokio::test]
async fn todo_beside_the_load_is_refused_unless_the_skill_names_it() {
    for (tools, runs) in [(&["fs_read"][..], false), (&["fs_read", "todo"][..], true)] {
        let log = Log::default();
        let dir = tempfile::tempdir().unwrap();
        let queue = Queue::new(vec![vec![
            call("t", "todo", json!({"items": []})),
            load("l", "review", tools),
        ]]);
        let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
        agent
            .send(&mut session(), "go", &Recorder::default())
            .await
            .unwrap();
        let (content, is_error) = result_of(&queue, "t");
        if runs {
            assert_eq!(ran_sorted(&log), ["skill", "todo"]);
            assert!(!is_error, "{content}");
        } else {
            assert_eq!(ran(&log), ["skill"], "todo never ran");
            assert!(
                is_error
                    && content.starts_with("`todo` is outside this run's tool surface")
                    && content.contains("`review` is loaded in this same turn, and its `tools:`"),
                "{content}"
            );
        }
    }
}

#[tokio::test]
async fn a_load_refused_at_validation_narrows_nothing() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let broken = mecha_core::Block::ToolUse(mecha_core::ToolCall {
        id: "l".into(),
        name: "skill".into(),
        input: json!({"name": "review", "tools": ["fs_read"]}),
        input_error: Some("trailing characters".into()),
    });
    let queue = Queue::new(vec![vec![
        broken,
        call("w", "fs_write", json!({"path": "x", "content": "y"})),
    ]]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(ran(&log), ["fs_write"]);
    assert!(result_of(&queue, "l").1);
    assert_eq!(result_of(&queue, "w"), ("fs_write ran".into(), false));
}

#[tokio::test]
async fn a_second_skill_loaded_beside_a_call_widens_the_union_for_it() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l1", "review", &["fs_read"])],
        vec![
            load("l2", "edit", &["fs_write"]),
            call("w", "fs_write", json!({"path": "x", "content": "y"})),
            call("ls", "fs_list", json!({})),
        ],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(ran_sorted(&log), ["fs_write", "skill", "skill"]);
    let (refusal, _) = result_of(&queue, "ls");
    assert!(
        refusal.contains(
            "the skills `review` and `edit` narrowed it to fs_read, fs_write, skill. The skill \
             `edit` is loaded in this same turn"
        ),
        "{refusal}"
    );
}

#[tokio::test]
async fn the_surface_is_the_union_of_every_narrowing() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l1", "review", &["fs_read"])],
        vec![load("l2", "tidy", &["fs_list"])],
        vec![
            call("r", "fs_read", json!({})),
            call("ls", "fs_list", json!({})),
            call("w", "fs_write", json!({})),
        ],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();

    assert_eq!(ran(&log), ["skill", "skill", "fs_read", "fs_list"]);
    let (refusal, _) = result_of(&queue, "w");
    assert!(
        refusal.contains("the skills `review` and `tidy` narrowed it to fs_list, fs_read, skill."),
        "{refusal}"
    );
}

#[tokio::test]
async fn the_narrowing_tool_stays_reachable_though_it_named_none_of_itself() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l1", "review", &["fs_read"])],
        vec![load("l2", "follow-up", &["fs_list"])],
        vec![call("ls", "fs_list", json!({}))],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();

    assert_eq!(ran(&log), ["skill", "skill", "fs_list"]);
    assert!(!result_of(&queue, "l2").1);
}

/// Registers `fs_grep` the third time it is asked (an MCP server announcing
/// a tool later in the run).
struct AddsGrep {
    asked: AtomicUsize,
    log: Log,
}

#[async_trait]
impl ToolRefresh for AddsGrep {
    async fn refresh(&self, current: &Registry) -> Option<Registry> {
        if self.asked.fetch_add(1, Ordering::SeqCst) != 2 {
            return None;
        }
        let mut next = current.clone();
        next.register(stub("fs_grep", true, &self.log)).unwrap();
        Some(next)
    }
}

#[tokio::test]
async fn a_name_not_registered_when_narrowing_adds_nothing() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l", "review", &["fs_read", "fs_grep"])],
        vec![call("g1", "fs_grep", json!({}))],
        vec![call("g2", "fs_grep", json!({}))],
    ]);
    let refresh = Arc::new(AddsGrep {
        asked: AtomicUsize::new(0),
        log: Arc::clone(&log),
    });
    let agent =
        agent(queue.clone(), registry(&log), allow_all_gate(), dir.path()).with_refresh(refresh);
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    // Unknown when named: the existing message, which lists what exists.
    let (unknown, _) = result_of(&queue, "g1");
    assert!(
        unknown.starts_with("there is no tool named `fs_grep`"),
        "{unknown}"
    );
    // Registered later, it is still outside what the skill's load allowed.
    let (outside, _) = result_of(&queue, "g2");
    assert!(
        outside.starts_with("`fs_grep` is outside this run's tool surface"),
        "{outside}"
    );
    assert_eq!(ran(&log), ["skill"]);
    let offered = queue.offered.lock().unwrap();
    assert_eq!(offered[3], ["fs_read", "skill"]);
}

#[tokio::test]
async fn the_next_request_offers_only_the_surface_and_keeps_offering_it() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l", "review", &["fs_read", "fs_list"])],
        vec![call("r", "fs_read", json!({}))],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();

    let offered = queue.offered.lock().unwrap();
    assert_eq!(
        offered[0],
        ["fs_list", "fs_read", "fs_write", "skill", "todo"]
    );
    let narrowed = ["fs_list", "fs_read", "skill"];
    assert_eq!(offered[1], narrowed);
    assert_eq!(offered[2], narrowed, "nothing toggles after the narrowing");
}

#[tokio::test]
async fn a_narrowing_lasts_into_the_next_prompt_of_the_session() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![load("l", "review", &["fs_read"])],
        vec![text("loaded")],
        vec![call("w", "fs_write", json!({}))],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let mut session = session();
    let events = Recorder::default();
    agent.send(&mut session, "load it", &events).await.unwrap();
    agent
        .send(&mut session, "now write", &events)
        .await
        .unwrap();

    assert_eq!(ran(&log), ["skill"]);
    assert!(
        result_of(&queue, "w")
            .0
            .contains("outside this run's tool surface")
    );
    assert_eq!(queue.offered.lock().unwrap()[2], ["fs_read", "skill"]);
}
