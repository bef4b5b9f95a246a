//! The loop: ask the model, gate and run the tools it calls, feed the
//! results back, until it answers or the turn limit is reached.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use mecha_core::{
    Block, Call, EXTERNAL_HEADER, Message, Registry, Role, Slot, StopReason, Taint, ToolCall,
    ToolCtx, ToolDefinition, ToolOutput, Usage, run_turn,
};
use mecha_provider::{Provider, ProviderError, Request, Streamed};

use crate::ending::{self, CONTINUE_PROMPT, CUT_CALL, Reading};
use crate::events::{Event, EventSink, GateStage, GateVerdict};
use crate::gate::Gate;
use crate::progress;
use crate::surface::Surface;

/// Limits of a run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_turns: u32,
    /// Bytes one turn's tool results may add to the context, all told.
    pub turn_budget: usize,
}

/// A conversation and what the harness knows about it.
#[derive(Debug, Default, Clone)]
pub struct Session {
    pub messages: Vec<Message>,
    /// Lasts the whole session: nothing clears it.
    pub taint: Taint,
    /// The tools calls may still reach, once a call narrowed them (`None`:
    /// every registered tool). Like the taint it lasts the whole session:
    /// there is no unload.
    pub surface: Option<Surface>,
    pub usage: Usage,
    pub turns: u32,
}

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model answered without calling tools. A `stop_reason` that
    /// `is_cut` means the output limit cut the answer short.
    Answered {
        text: String,
        stop_reason: StopReason,
    },
    /// The model declined to answer. The exchange, prompt included, was
    /// dropped from the session; `detail` is the API's explanation.
    Refused {
        text: String,
        detail: Option<String>,
    },
    /// The model ended without a word, even after being asked to continue
    /// (or, with `stop_reason` a limit, used it all up before saying anything).
    Silent { stop_reason: StopReason },
    /// `max_turns` model requests were made and the model still wanted tools.
    TurnLimit { turns: u32 },
}

/// What ends a run early.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("tool `{name}` failed in a way the run cannot continue from: {source:#}")]
    Tool {
        name: String,
        #[source]
        source: anyhow::Error,
    },
}

/// A source of tool-list changes between turns (an MCP server announcing
/// new tools). Asked before every model request.
#[async_trait]
pub trait ToolRefresh: Send + Sync {
    /// `Some` replaces the run's tools. It changes the front of the cached
    /// prefix, so it should answer `Some` only when something changed.
    async fn refresh(&self, current: &Registry) -> Option<Registry>;
}

/// The tools of a run and their definitions, replaced together.
struct ToolSet {
    registry: Registry,
    /// Computed once per set: the tool list is the front of the cached
    /// prefix and must be byte-identical on every request.
    definitions: Vec<ToolDefinition>,
}

impl ToolSet {
    fn new(registry: Registry) -> Arc<Self> {
        Arc::new(Self {
            definitions: registry.definitions(),
            registry,
        })
    }
}

/// An agent: a provider, the tools, the gate, and the context tools run in.
/// It holds every part as a trait object and names no concrete tool or
/// provider.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Mutex<Arc<ToolSet>>,
    refresh: Option<Arc<dyn ToolRefresh>>,
    system: String,
    gate: Gate,
    ctx: ToolCtx,
    limits: Limits,
}

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        registry: Registry,
        system: String,
        gate: Gate,
        ctx: ToolCtx,
        limits: Limits,
    ) -> Self {
        // Whether a result's images reach the model is the provider's to
        // say; the batch makes a placeholder of each one that cannot.
        let ctx = ctx.with_images(provider.accepts_images());
        Self {
            provider,
            tools: Mutex::new(ToolSet::new(registry)),
            refresh: None,
            system,
            gate,
            ctx,
            limits,
        }
    }

    /// Picks up tool-list changes from `refresh` at every turn boundary.
    #[must_use]
    pub fn with_refresh(mut self, refresh: Arc<dyn ToolRefresh>) -> Self {
        self.refresh = Some(refresh);
        self
    }

    /// The tools as they stand, after any change announced since the last
    /// turn.
    async fn current_tools(&self) -> Arc<ToolSet> {
        let current = self.snapshot();
        let Some(refresh) = &self.refresh else {
            return current;
        };
        match refresh.refresh(&current.registry).await {
            Some(registry) => {
                self.gate.schemas.forget();
                let replaced = ToolSet::new(registry);
                if let Ok(mut tools) = self.tools.lock() {
                    *tools = Arc::clone(&replaced);
                }
                replaced
            }
            None => current,
        }
    }

    /// The names of the tools the agent holds now, sorted (for a front
    /// end asking what this run offers).
    pub fn tool_names(&self) -> Vec<String> {
        self.snapshot()
            .registry
            .names()
            .map(str::to_owned)
            .collect()
    }

    fn snapshot(&self) -> Arc<ToolSet> {
        match self.tools.lock() {
            Ok(tools) => Arc::clone(&tools),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Adds `prompt` to the session and runs until the model answers.
    ///
    /// The session never keeps an empty assistant message (the APIs refuse
    /// one on every later request), and a refusal drops the whole exchange,
    /// prompt included: the API's advice, since a conversation that still
    /// holds the refused turn refuses again.
    pub async fn send(
        &self,
        session: &mut Session,
        prompt: &str,
        events: &dyn EventSink,
    ) -> Result<Outcome, AgentError> {
        let before = session.messages.len();
        session.messages.push(Message::user_text(prompt));
        let mut nudged = false;
        for _ in 0..self.limits.max_turns {
            session.turns += 1;
            let turn = session.turns;
            let tools = self.current_tools().await;
            // The prefix changes once, at a narrowing, and stays the same
            // from then on: the filter of a fixed, sorted list.
            let narrowed = session
                .surface
                .as_ref()
                .map(|surface| surface.definitions(&tools.definitions));
            let request = Request {
                system: &self.system,
                tools: narrowed.as_deref().unwrap_or(&tools.definitions),
                messages: &session.messages,
            };
            let mut on_stream = |piece: Streamed<'_>| events.emit(Event::streamed(piece));
            let response = self.provider.complete(request, &mut on_stream).await?;
            session.usage.add(response.usage);
            events.emit(Event::Usage {
                turn,
                usage: response.usage,
            });
            let (calls, cut) = match ending::read(&response) {
                Reading::Tools { calls, cut } => (calls, cut),
                Reading::Answer { text, stop_reason } => {
                    if stop_reason.is_cut() {
                        events.emit(Event::OutputLimit { turn, tool: None });
                    }
                    session.messages.push(response.message);
                    return Ok(Outcome::Answered { text, stop_reason });
                }
                Reading::Refusal { text, detail } => {
                    session.messages.truncate(before);
                    return Ok(Outcome::Refused { text, detail });
                }
                Reading::Empty { stop_reason } => {
                    if stop_reason == StopReason::EndTurn && !nudged {
                        nudged = true;
                        events.emit(Event::EmptyTurn { turn });
                        session.messages.push(Message::user_text(CONTINUE_PROMPT));
                        continue;
                    }
                    return Ok(Outcome::Silent { stop_reason });
                }
            };
            session.messages.push(response.message);
            if let Some(cut) = &cut {
                events.emit(Event::OutputLimit {
                    turn,
                    tool: Some(cut.name.clone()),
                });
            }
            let results = self
                .dispatch(&tools.registry, session, turn, &calls, cut, events)
                .await?;
            session.messages.push(Message {
                role: Role::User,
                content: results,
            });
        }
        Ok(Outcome::TurnLimit {
            turns: self.limits.max_turns,
        })
    }

    /// Gates every call in order, runs the approved ones concurrently within
    /// the turn budget, and returns the results in call order. The budget
    /// covers the refusals too: every block the turn sends takes room. A
    /// call the output limit cut (always the last) is refused without asking
    /// the gate: nobody should approve arguments that are not all there.
    async fn dispatch(
        &self,
        registry: &Registry,
        session: &mut Session,
        turn: u32,
        calls: &[ToolCall],
        cut: Option<ToolCall>,
        events: &dyn EventSink,
    ) -> Result<Vec<Block>, AgentError> {
        let whole = calls.len();
        let calls: Vec<&ToolCall> = calls.iter().chain(cut.as_ref()).collect();
        let mut verdicts = Vec::with_capacity(calls.len());
        for (n, &call) in calls.iter().enumerate() {
            events.emit(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            });
            let verdict = if n >= whole {
                GateVerdict::Blocked {
                    stage: GateStage::Validation,
                    reason: CUT_CALL.to_owned(),
                }
            } else {
                let surface = session.surface.as_ref();
                self.gate
                    .judge(registry, &self.ctx, session.taint, surface, call)
                    .await
            };
            events.emit(Event::Gate {
                id: call.id.clone(),
                name: call.name.clone(),
                decision: verdict.clone(),
            });
            verdicts.push(verdict);
        }
        let slots: Vec<Slot> = calls
            .iter()
            .zip(&verdicts)
            .map(|(c, verdict)| match verdict {
                GateVerdict::Allowed { .. } => Slot::Run(Call {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    input: c.input.clone(),
                }),
                GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. } => {
                    Slot::Refused {
                        name: c.name.clone(),
                        output: ToolOutput::refusal(reason.clone()),
                    }
                }
            })
            .collect();
        let budget = self.limits.turn_budget;
        let results = progress::reporting(&self.ctx, &calls, events, |ctx| async move {
            run_turn(registry, &ctx, turn, budget, slots).await
        })
        .await;
        let mut blocks = Vec::with_capacity(calls.len());
        for ((call, verdict), result) in calls.into_iter().zip(&verdicts).zip(results) {
            let output = result.map_err(|source| AgentError::Tool {
                name: call.name.clone(),
                source,
            })?;
            if let (GateVerdict::Allowed { .. }, Some(tool)) = (verdict, registry.get(&call.name)) {
                session.taint.record(tool.capabilities(), &output);
                if let Some(narrowing) = &output.narrows
                    && Surface::apply(&mut session.surface, narrowing, tool.name(), registry)
                    && let Some(surface) = &session.surface
                {
                    events.emit(Event::Narrowed {
                        by: narrowing.by.clone(),
                        tools: surface.tools().map(str::to_owned).collect(),
                    });
                }
            }
            let shown = output
                .content
                .strip_prefix(EXTERNAL_HEADER)
                .unwrap_or(&output.content);
            events.emit(Event::ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                is_error: output.is_error,
                bytes: output.content.len(),
                summary: summary(shown),
            });
            blocks.push(Block::ToolResult {
                tool_use_id: call.id.clone(),
                content: output.content,
                is_error: output.is_error,
                images: output.images,
            });
        }
        Ok(blocks)
    }
}

/// The most characters of a result an activity line shows.
const SUMMARY_CHARS: usize = 100;

/// The first line of a result, short, for activity logs. A JSON result's
/// first line is a lone `{`, so JSON is collapsed onto one line instead:
/// its lines trimmed and joined (a JSON string holds no raw line break, so
/// only indentation goes), as far as the summary reaches.
fn summary(content: &str) -> String {
    let trimmed = content.trim_start();
    let line: String = if trimmed.starts_with(['{', '[']) {
        let mut joined = String::new();
        for part in trimmed.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if !joined.is_empty() && !joined.ends_with(['{', '[']) && !part.starts_with(['}', ']'])
            {
                joined.push(' ');
            }
            joined.push_str(part);
            if joined.chars().nth(SUMMARY_CHARS).is_some() {
                break;
            }
        }
        joined
    } else {
        content.lines().next().unwrap_or("").to_owned()
    };
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}
