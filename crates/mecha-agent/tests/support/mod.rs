//! Shared pieces for the loop's tests: a provider that plays queued turns,
//! stub tools with chosen capabilities that log their executions, and a
//! recording event sink.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{
    Agent, DEFAULT_SUBAGENT_TURNS, Event, EventSink, Gate, Limits, Lineage, Profile, Session,
};
use mecha_core::{
    Approver, Block, Capabilities, Decision, FreshReason, Journal, Message, ModeApprover,
    PermissionMode, Record, Registry, Role, Rules, StopReason, Tool, ToolCall, ToolCtx, ToolOutput,
    Usage,
};
use mecha_provider::{Provider, ProviderError, Request, Response, StreamSink, Streamed};
use serde_json::{Value, json};

/// Answers every request at once with what its function makes of it, for
/// the benchmarks of the harness's own time.
pub struct Answering<F>(pub F);

#[async_trait]
impl<F> Provider for Answering<F>
where
    F: Fn(&Request<'_>) -> Response + Send + Sync,
{
    fn describe(&self) -> String {
        "answering".into()
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    async fn complete(
        &self,
        request: Request<'_>,
        _on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        Ok((self.0)(&request))
    }
}

/// Plays one queued assistant turn per request and records what it was sent.
pub struct Queue {
    turns: Mutex<VecDeque<Response>>,
    pub seen: Mutex<Vec<Vec<Message>>>,
    /// The names of the tools each request offered, in the order sent.
    pub offered: Mutex<Vec<Vec<String>>>,
}

impl Queue {
    /// Turns of these blocks, each with the stop reason its content implies.
    pub fn new(turns: Vec<Vec<Block>>) -> Arc<Self> {
        Self::replies(
            turns
                .into_iter()
                .map(|content| {
                    let stop = if content.iter().any(|b| matches!(b, Block::ToolUse(_))) {
                        StopReason::ToolUse
                    } else {
                        StopReason::EndTurn
                    };
                    reply(content, stop)
                })
                .collect(),
        )
    }

    /// Whole responses, played in order.
    pub fn replies(replies: Vec<Response>) -> Arc<Self> {
        Arc::new(Self {
            turns: Mutex::new(replies.into()),
            seen: Mutex::new(Vec::new()),
            offered: Mutex::new(Vec::new()),
        })
    }
}

/// A response of these blocks with this stop reason.
pub fn reply(content: Vec<Block>, stop_reason: StopReason) -> Response {
    Response {
        message: Message {
            role: Role::Assistant,
            content,
        },
        stop_reason,
        stop_detail: None,
        usage: Usage::default(),
    }
}

pub fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

#[async_trait]
impl Provider for Queue {
    fn describe(&self) -> String {
        "queue".into()
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        self.seen.lock().unwrap().push(request.messages.to_vec());
        let names = request.tools.iter().map(|t| t.name.clone()).collect();
        self.offered.lock().unwrap().push(names);
        let response = self
            .turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| reply(vec![text("done")], StopReason::EndTurn));
        for block in &response.message.content {
            match block {
                Block::Text { text } => on_stream(Streamed::Text(text)),
                Block::Thinking { thinking, .. } => on_stream(Streamed::Thinking(thinking)),
                _ => {}
            }
        }
        Ok(response)
    }
}

pub fn call(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse(ToolCall {
        id: id.into(),
        name: name.into(),
        input,
        input_error: None,
    })
}

/// Shared log of executions: (turn, tool name, input).
pub type Log = Arc<Mutex<Vec<(u32, String, Value)>>>;

/// A tool with whatever capabilities a test needs; it logs each execution
/// and returns `reply`.
pub struct Stub {
    pub name: &'static str,
    pub caps: Capabilities,
    pub read_only: bool,
    pub reply: ToolOutput,
    pub log: Log,
}

#[async_trait]
impl Tool for Stub {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "stub"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        self.log
            .lock()
            .unwrap()
            .push((ctx.turn, self.name.to_owned(), input));
        Ok(self.reply.clone())
    }
}

/// Records every journal entry, and how many syncs.
#[derive(Default)]
pub struct Recording {
    pub records: Mutex<Vec<Record>>,
    pub syncs: AtomicUsize,
}

impl Journal for Recording {
    fn append(&self, record: &Record) {
        self.records.lock().unwrap().push(record.clone());
    }
    fn sync(&self) {
        self.syncs.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Event>>);

impl EventSink for Recorder {
    fn emit(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

pub fn agent(
    provider: Arc<dyn Provider>,
    registry: Registry,
    gate: Gate,
    ws: &std::path::Path,
) -> Agent {
    let ctx = ToolCtx::new(ws, 64 * 1024).unwrap();
    Agent::new(
        provider,
        registry,
        "system".into(),
        gate,
        ctx,
        Limits {
            max_turns: 20,
            turn_budget: 64 * 1024,
        },
    )
}

pub fn allow_all_gate() -> Gate {
    Gate::new(
        PermissionMode::Allow,
        Arc::new(ModeApprover(PermissionMode::Allow)),
        Rules::default(),
        None,
        false,
    )
}

pub fn session() -> Session {
    Session::default()
}

/// The tool results of the last turn that had any, as the model was sent
/// them: (call id, content, is_error).
pub fn results_sent(queue: &Queue) -> Vec<(String, String, bool)> {
    let seen = queue.seen.lock().unwrap();
    seen.last()
        .unwrap()
        .iter()
        .rev()
        .find(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, Block::ToolResult { .. }))
        })
        .into_iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => Some((tool_use_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// The result a call got, by id, from every request the model was sent.
pub fn result_of(queue: &Queue, id: &str) -> (String, bool) {
    let seen = queue.seen.lock().unwrap();
    seen.iter()
        .flatten()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } if tool_use_id == id => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap()
}

/// A context for judging calls of tools that declare no paths: the gate
/// needs one, and nothing is resolved in it.
pub fn unused_ctx() -> ToolCtx {
    ToolCtx::new(&std::env::temp_dir(), 64 * 1024).unwrap()
}

/// An approver standing in for a terminal: answers `answer`, and a fresh
/// question with `fresh` (None: nobody there). Records what it was asked:
/// the tool's name, `fresh:NAME` for a rule's fresh question and
/// `trifecta:NAME` for the one-call trifecta's.
pub struct Scripted {
    pub mode: PermissionMode,
    pub answer: Decision,
    pub fresh: Option<Decision>,
    pub asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Approver for Scripted {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision {
        if self.mode != PermissionMode::Ask || tool.read_only() {
            return ModeApprover(self.mode).approve(tool, input).await;
        }
        self.asked.lock().unwrap().push(tool.name().to_owned());
        self.answer.clone()
    }
    async fn ask_fresh(
        &self,
        tool: &dyn Tool,
        _input: &Value,
        why: FreshReason,
    ) -> Option<Decision> {
        let asked = match why {
            FreshReason::Rule => "fresh",
            FreshReason::OneCallTrifecta => "trifecta",
            FreshReason::Hook => "hook",
        };
        self.asked
            .lock()
            .unwrap()
            .push(format!("{asked}:{}", tool.name()));
        self.fresh.clone()
    }
}

/// A subagent profile with the defaults.
pub fn profile(name: &str) -> Profile {
    Profile {
        name: name.into(),
        description: format!("the {name} subagent"),
        instructions: None,
        max_turns: DEFAULT_SUBAGENT_TURNS,
        timeout: None,
        trusted: None,
    }
}

/// What a child inherits, everything allowed and nothing else set.
pub fn lineage(approver: Arc<dyn Approver>) -> Arc<Lineage> {
    Arc::new(Lineage {
        mode: PermissionMode::Allow.into(),
        approver,
        rules: Rules::default(),
        hook: None,
        block_sends_after_private: false,
        turn_budget: 64 * 1024,
        project_instructions: None,
        journals: None,
        defer_over: None,
    })
}

pub fn allow() -> Arc<dyn Approver> {
    Arc::new(ModeApprover(PermissionMode::Allow))
}
