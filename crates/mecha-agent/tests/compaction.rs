//! Compaction through the loop, with a small window and a model that
//! answers summary requests: what the rebuilt requests hold after several
//! compactions, that a call never loses its result, that taint survives,
//! that a failing summary is retried twice and then the run goes on while
//! it fits, and that the journal replays to the same history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{
    AgentError, AskedCompaction, CompactionPolicy, Event, GateStage, GateVerdict, SUMMARY_HEADER,
    SUMMARY_REQUEST,
};
use mecha_core::{
    Block, CARRIED_HEADER, Capabilities, Egress, Message, Record, Registry, Role, Tool, ToolCtx,
    ToolOutput,
};
use mecha_provider::{Provider, ProviderError, Request, Response, StreamSink};
use serde_json::{Value, json};
use support::*;

/// Answers a summary request with a short summary (or fails it, while
/// `failures` lasts), and hands every other request to the queue.
struct Summarizer {
    queue: Arc<Queue>,
    summaries: AtomicUsize,
    failures: AtomicUsize,
    /// Each summary this long (a summary that grows the context).
    padding: usize,
    /// Every summary request's messages.
    asked: Mutex<Vec<Vec<Message>>>,
}

impl Summarizer {
    fn new(queue: Arc<Queue>, failures: usize) -> Arc<Self> {
        Arc::new(Self {
            queue,
            summaries: AtomicUsize::new(0),
            failures: AtomicUsize::new(failures),
            padding: 0,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn verbose(queue: Arc<Queue>) -> Arc<Self> {
        Arc::new(Self {
            padding: 40_000,
            ..Arc::into_inner(Self::new(queue, 0)).unwrap()
        })
    }
}

fn is_summary_request(messages: &[Message]) -> bool {
    messages.last().is_some_and(|m| m.text() == SUMMARY_REQUEST)
}

#[async_trait]
impl Provider for Summarizer {
    fn describe(&self) -> String {
        "summarizer".into()
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        if !is_summary_request(request.messages) {
            return self.queue.complete(request, on_stream).await;
        }
        self.asked.lock().unwrap().push(request.messages.to_vec());
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(ProviderError::Transport("the stream was cut".into()));
        }
        let n = self.summaries.fetch_add(1, Ordering::SeqCst) + 1;
        let padding = "and so on ".repeat(self.padding / 10);
        Ok(reply(
            vec![text(&format!("SUMMARY {n}: the work so far. {padding}"))],
            mecha_core::StopReason::EndTurn,
        ))
    }
}

/// A skill-like tool whose loaded procedure crosses compactions verbatim.
#[derive(Default)]
struct Procedure {
    loaded: Mutex<bool>,
}

const PROCEDURE: &str = "1. Check the flag.\n2. Never skip step one.";

#[async_trait]
impl Tool for Procedure {
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
    fn carried_state(&self) -> Option<String> {
        self.loaded.lock().unwrap().then(|| PROCEDURE.to_owned())
    }
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        *self.loaded.lock().unwrap() = true;
        Ok(ToolOutput::ok(PROCEDURE))
    }
}

/// `big` returns ~1,000 tokens of private data, `web` a chosen send that
/// reads the outside, plus `todo` and the procedure.
fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(mecha_tools::Todo::default())).unwrap();
    r.register(Arc::new(Procedure::default())).unwrap();
    r.register(Arc::new(Stub {
        name: "big",
        caps: Capabilities {
            private_data: true,
            ..Capabilities::NONE
        },
        read_only: true,
        reply: ToolOutput::ok("x".repeat(3_000)),
        log: Arc::clone(log),
    }))
    .unwrap();
    r.register(Arc::new(Stub {
        name: "web",
        caps: Capabilities {
            untrusted_input: true,
            egress: Egress::Chosen,
            ..Capabilities::NONE
        },
        read_only: true,
        reply: ToolOutput::external("a page"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

const POLICY: CompactionPolicy = CompactionPolicy {
    threshold: 4_000,
    window: 9_000,
    reply_tokens: 1_000,
};

fn todo_call(id: &str) -> Block {
    call(
        id,
        "todo",
        json!({"items": [{"content": "read everything", "status": "in_progress"}]}),
    )
}

/// The first turns: a todo list and the procedure, then `n` big reads.
fn long_task(n: usize) -> Vec<Vec<Block>> {
    let mut turns = vec![vec![todo_call("plan"), call("load", "skill", json!({}))]];
    for i in 0..n {
        turns.push(vec![call(&format!("big{i}"), "big", json!({}))]);
    }
    turns
}

/// How many messages of `request` are carried-state messages, and how
/// many copies of the procedure and the todo list they hold.
fn carried_copies(request: &[Message]) -> (usize, usize, usize) {
    let carried: Vec<String> = request
        .iter()
        .filter(|m| m.role == Role::User && m.text().starts_with(CARRIED_HEADER))
        .map(Message::text)
        .collect();
    let all = carried.join("\n");
    (
        carried.len(),
        all.matches(PROCEDURE).count(),
        all.matches("[>] read everything").count(),
    )
}

/// Every tool result in `request` follows the assistant message that made
/// its call.
fn assert_no_split(request: &[Message]) {
    for (i, message) in request.iter().enumerate() {
        for block in &message.content {
            if let Block::ToolResult { tool_use_id, .. } = block {
                let previous = &request[i - 1];
                assert_eq!(
                    previous.role,
                    Role::Assistant,
                    "result {tool_use_id} at {i}"
                );
                assert!(
                    previous.tool_calls().any(|c| &c.id == tool_use_id),
                    "result {tool_use_id} lost its call"
                );
            }
        }
    }
}

/// The history the journal's records describe, replayed.
fn replayed(records: &[Record]) -> Vec<Message> {
    let mut messages = Vec::new();
    for record in records {
        match record {
            Record::Message { message, .. } => messages.push(message.clone()),
            Record::Rewind { keep } => messages.truncate(*keep),
            Record::Compaction { messages: m, .. } => messages = m.clone(),
            _ => {}
        }
    }
    messages
}

#[tokio::test]
async fn three_compactions_keep_the_first_message_the_summary_and_one_copy_of_the_carried_state() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(long_task(12));
    let provider = Summarizer::new(Arc::clone(&queue), 0);
    let journal = Arc::new(Recording::default());
    let agent = agent(
        provider.clone(),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    )
    .with_compaction(POLICY)
    .with_journal(journal.clone());
    let events = Recorder::default();
    let mut session = session();
    let outcome = agent
        .send(&mut session, "the task: read it all", &events)
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");

    let compactions = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::Compacted { tokens_before, tokens_after, .. } if tokens_after < tokens_before))
        .count();
    assert!(compactions >= 3, "{compactions} compactions");
    let seen = queue.seen.lock().unwrap();
    let offered = queue.offered.lock().unwrap();
    assert!(
        offered.iter().all(|tools| tools == &offered[0]),
        "the tool list never changed"
    );
    let last = seen.last().unwrap();
    assert_eq!(last[0], Message::user_text("the task: read it all"));
    assert!(last[1].text().starts_with(SUMMARY_HEADER), "{:?}", last[1]);
    assert!(last[1].text().contains(&format!("SUMMARY {compactions}")));
    assert!(CARRIED_HEADER.len() < last[2].text().len());
    assert_eq!(carried_copies(last), (1, 1, 1), "exactly one carried copy");
    for request in seen.iter() {
        assert_no_split(request);
        let (messages, procedures, todos) = carried_copies(request);
        assert!(messages <= 1 && procedures <= 2 && todos <= 1 + usize::from(messages == 0));
    }
    // Every request fitted: the estimate never passed the window.
    for request in seen.iter() {
        let bytes: usize = request
            .iter()
            .flat_map(|m| &m.content)
            .map(|b| serde_json::to_string(b).unwrap().len())
            .sum();
        assert!(bytes / 3 < POLICY.window as usize, "{bytes} bytes sent");
    }
    // The summary requests carried no old carried state and ended asking.
    for asked in provider.asked.lock().unwrap().iter() {
        assert_eq!(carried_copies(asked).0, 0);
        assert_no_split(&asked[..asked.len() - 1]);
    }
    let records = journal.records.lock().unwrap();
    assert_eq!(replayed(&records), session.messages, "the journal replays");
    assert_eq!(
        records
            .iter()
            .filter(|r| matches!(r, Record::Compaction { .. }))
            .count(),
        compactions
    );
    assert!(
        journal.syncs.load(Ordering::SeqCst) >= 13,
        "a sync per turn"
    );
}

#[tokio::test]
async fn taint_survives_compaction_and_a_send_is_still_refused() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let mut turns = vec![vec![call("w", "web", json!({}))]];
    turns.extend(long_task(8).into_iter().skip(1));
    turns.push(vec![call("leak", "web", json!({}))]);
    let queue = Queue::new(turns);
    let provider = Summarizer::new(Arc::clone(&queue), 0);
    let agent =
        agent(provider, registry(&log), allow_all_gate(), dir.path()).with_compaction(POLICY);
    let events = Recorder::default();
    let mut session = session();
    agent.send(&mut session, "go", &events).await.unwrap();

    assert!(session.taint.armed());
    let events = events.0.lock().unwrap();
    let compacted = events
        .iter()
        .position(|e| matches!(e, Event::Compacted { .. }))
        .expect("it compacted");
    let refused = events.iter().position(|e| {
        matches!(e, Event::Gate { id, decision: GateVerdict::Blocked { stage: GateStage::Interlock, .. }, .. } if id == "leak")
    });
    assert!(
        refused.is_some_and(|r| r > compacted),
        "the send after compaction was refused"
    );
}

#[tokio::test]
async fn a_failing_summary_is_tried_three_times_then_the_run_goes_on_until_it_cannot_fit() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(long_task(20));
    let provider = Summarizer::new(Arc::clone(&queue), usize::MAX);
    let journal = Arc::new(Recording::default());
    let agent = agent(
        provider.clone(),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    )
    .with_compaction(POLICY)
    .with_journal(journal.clone());
    let events = Recorder::default();
    let mut session = session();
    let outcome = agent.send(&mut session, "go", &events).await;

    let Err(AgentError::ContextFull { window, why, .. }) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(*window, POLICY.window);
    assert!(why.contains("compaction failed 3 times"), "{why}");
    assert!(
        outcome
            .unwrap_err()
            .to_string()
            .contains("raise [provider] context_window")
    );
    let failures: Vec<u32> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::CompactionFailed { attempt, of: 3, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(
        failures,
        [1, 2, 3],
        "tried three times, and not again every turn"
    );
    assert_eq!(provider.asked.lock().unwrap().len(), 3);
    // It went on after giving up, while the requests still fitted.
    let sent = queue.seen.lock().unwrap();
    let asked_at = sent.len();
    assert!(asked_at > 5, "{asked_at} requests");
    // Nothing was lost: the journal still holds every completed turn.
    assert_eq!(replayed(&journal.records.lock().unwrap()), session.messages);
}

#[tokio::test]
async fn the_compact_tool_asks_for_a_compaction_before_the_next_request() {
    struct Compact;
    #[async_trait]
    impl Tool for Compact {
        fn name(&self) -> &str {
            "compact"
        }
        fn description(&self) -> &str {
            "compacts"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn read_only(&self) -> bool {
            true
        }
        async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput {
                requests_compaction: true,
                ..ToolOutput::ok("will compact")
            })
        }
    }
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let mut turns = long_task(2);
    turns.push(vec![call("c", "compact", json!({}))]);
    let queue = Queue::new(turns);
    let provider = Summarizer::new(Arc::clone(&queue), 0);
    let mut registry = registry(&log);
    registry.register(Arc::new(Compact)).unwrap();
    let roomy = CompactionPolicy {
        threshold: 1_000_000,
        window: 2_000_000,
        reply_tokens: 1_000,
    };
    let agent =
        agent(provider.clone(), registry, allow_all_gate(), dir.path()).with_compaction(roomy);
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    assert_eq!(
        provider.asked.lock().unwrap().len(),
        1,
        "one summary, when asked"
    );
    let seen = queue.seen.lock().unwrap();
    let last = seen.last().unwrap();
    assert!(last[1].text().starts_with(SUMMARY_HEADER));
    assert_eq!(carried_copies(last), (1, 1, 1));
}

#[tokio::test]
async fn compact_now_summarizes_under_the_threshold_and_says_when_there_is_nothing_older() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(long_task(3));
    let provider = Summarizer::new(Arc::clone(&queue), 0);
    let roomy = CompactionPolicy {
        threshold: 1_000_000,
        window: 2_000_000,
        reply_tokens: 1_000,
    };
    let agent = agent(
        provider.clone(),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    )
    .with_compaction(roomy);
    let events = Recorder::default();
    let mut session = session();
    // Nothing said yet: nothing to summarize, and no request for it.
    assert_eq!(
        agent.compact_now(&mut session, &events).await,
        AskedCompaction::NothingOlder
    );
    assert_eq!(provider.asked.lock().unwrap().len(), 0);
    agent.send(&mut session, "go", &events).await.unwrap();
    let before = session.messages.len();
    let done = agent.compact_now(&mut session, &events).await;
    assert!(
        matches!(done, AskedCompaction::Done { tokens_before, tokens_after } if tokens_after < tokens_before),
        "{done:?}"
    );
    assert_eq!(provider.asked.lock().unwrap().len(), 1, "one summary, now");
    assert!(session.messages.len() < before);
    assert!(session.messages[1].text().starts_with(SUMMARY_HEADER));
    assert!(
        events
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::Compacted { .. })),
        "the screen hears of it as of any compaction"
    );
}

#[tokio::test]
async fn a_summary_that_frees_too_little_is_a_failure_and_the_history_stays() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(long_task(6));
    let provider = Summarizer::verbose(Arc::clone(&queue));
    let roomy_window = CompactionPolicy {
        window: 200_000,
        ..POLICY
    };
    let agent = agent(
        provider.clone(),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    )
    .with_compaction(roomy_window);
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    let events = events.0.lock().unwrap();
    let errors: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::CompactionFailed { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("freed too little"), "{}", errors[0]);
    assert!(!events.iter().any(|e| matches!(e, Event::Compacted { .. })));
    // Nothing was replaced: every request still holds the whole history.
    let seen = queue.seen.lock().unwrap();
    assert!(
        seen.iter()
            .all(|r| !r.iter().any(|m| m.text().starts_with(SUMMARY_HEADER)))
    );
    assert_eq!(
        seen.last().unwrap().len(),
        1 + 2 * 7,
        "the prompt and seven turns"
    );
}

#[tokio::test]
async fn the_carried_todo_list_is_the_current_one_and_compaction_does_not_repeat_every_turn() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let mut turns = long_task(5);
    turns.push(vec![call(
        "finish",
        "todo",
        json!({"items": [{"content": "read everything", "status": "done"}]}),
    )]);
    turns.extend(long_task(6).into_iter().skip(1));
    let queue = Queue::new(turns);
    let provider = Summarizer::new(Arc::clone(&queue), 0);
    let agent = agent(
        provider.clone(),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    )
    .with_compaction(POLICY);
    let events = Recorder::default();
    agent.send(&mut session(), "go", &events).await.unwrap();

    let seen = queue.seen.lock().unwrap();
    let last = seen.last().unwrap();
    let carried: String = last
        .iter()
        .filter(|m| m.text().starts_with(CARRIED_HEADER))
        .map(Message::text)
        .collect();
    assert!(carried.contains("[x] read everything"), "{carried}");
    assert!(
        !carried.contains("[>] read everything"),
        "a finished plan revived: {carried}"
    );
    // Each compaction frees room for several turns: never one per request.
    let compactions = provider.summaries.load(Ordering::SeqCst);
    assert!(compactions >= 2, "{compactions}");
    assert!(
        compactions * 2 <= seen.len(),
        "{compactions} compactions in {} requests",
        seen.len()
    );
}
