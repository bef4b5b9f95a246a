//! The loop: ask the model, gate and run the tools it calls, feed the
//! results back, until it answers or the turn limit is reached.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::toolset::{ToolRefresh, ToolSet};

use mecha_core::{
    Checkpointer, History, Journal, Message, Record, Registry, Role, StopReason, Taint, ToolCtx,
    Usage,
};
use mecha_provider::{Provider, ProviderError, Request, Streamed};
use serde_json::Value;

use crate::compaction::{self, CompactionPolicy};

use crate::dispatch::Parked;
use crate::ending::{self, CONTINUE_PROMPT, Reading};
use crate::events::{Event, EventSink};
use crate::gate::Gate;
use crate::hook::Hook;
use crate::hooking::{Prompt, SENT_BACK};
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
    pub messages: History,
    /// Lasts the whole session: nothing clears it.
    pub taint: Taint,
    /// The tools calls may still reach, once a call narrowed them (`None`:
    /// every registered tool). Like the taint it lasts the whole session:
    /// there is no unload.
    pub surface: Option<Surface>,
    pub usage: Usage,
    pub turns: u32,
    /// A call asked for a compaction before the next model request.
    pub compact_requested: bool,
    /// The context's size as the API last reported it (tokens, counting
    /// the reply) and how many messages it covered; estimates of what came
    /// after are added to it.
    pub reported: Option<(u64, usize)>,
    /// Each tool's saved state as last journaled, so only a change is
    /// recorded.
    pub saved: BTreeMap<String, Value>,
    /// What session_start hooks added, waiting to go with the next prompt.
    pub hook_context: Vec<String>,
    /// What the user brought in at the prompt (a `!command`'s output, an
    /// `@path` file), each a block with its label, waiting to go with the
    /// next prompt.
    pub attached: Vec<String>,
    /// The answer's text streamed so far by the request in flight: what an
    /// interrupt keeps of a reply that never finished.
    pub unfinished: String,
    /// The running prompt entered the history and its exchange has not
    /// ended (set while `send` runs): what an interrupt keeps and notes.
    pub prompt_open: bool,
    /// The calls of the batch in flight that were let run: an interrupt
    /// tells the model these may have run in part, the others that they
    /// never ran.
    pub running: Vec<String>,
    /// The estimated bytes of the first messages, as far as measured, so a
    /// turn measures only what came since ([`Session::context_tokens`]);
    /// forgotten when the history is cut back or rebuilt.
    pub measured: Measured,
    /// How many prompts the session has had: the running one's number,
    /// from 1 (rewind's turns).
    pub prompts: u32,
    /// The prompt whose workspace checkpoint was taken, once its first
    /// call that could change the workspace was let run.
    pub checkpointed: Option<u32>,
}

/// How many of the history's first messages were measured, and their bytes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Measured {
    messages: usize,
    bytes: usize,
}

impl Session {
    /// The context's size in tokens, as best known: the estimate of every
    /// byte, or what the API reported plus the estimate of what came since,
    /// whichever is larger.
    pub(crate) fn context_tokens(&mut self, prefix: usize) -> u64 {
        // The history only grows between a cut and a rebuild, which forget
        // the measure; a shorter history than measured is one anyway.
        if self.measured.messages > self.messages.len() {
            self.measured = Measured::default();
        }
        let unmeasured = &self.messages[self.measured.messages..];
        self.measured = Measured {
            messages: self.messages.len(),
            bytes: self.measured.bytes + compaction::messages_bytes(unmeasured),
        };
        let estimated = compaction::tokens_of(prefix + self.measured.bytes);
        match self.reported {
            Some((tokens, upto)) if upto <= self.messages.len() => {
                estimated.max(tokens + compaction::estimate(0, &self.messages[upto..]))
            }
            _ => estimated,
        }
    }
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
    /// A user_prompt hook refused the prompt, which was never sent nor kept.
    PromptBlocked { reason: String },
    /// A call parked the task on a question for its absent owner. The
    /// turn's results are not in the history: they wait in `results`, to be
    /// handed to [`Agent::answer`] with the owner's answer in the parked
    /// call's result.
    Parked {
        parked: Parked,
        results: Message,
        external: Vec<String>,
    },
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
    #[error(
        "the conversation (~{tokens} tokens) no longer fits the model's context window \
         ({window} tokens, {reply} of them kept for the reply), {why}. Everything up to here is \
         kept in the session; raise [provider] context_window if the model allows more, or lower \
         [provider] max_tokens or [tools] output_budget_bytes"
    )]
    ContextFull {
        tokens: u64,
        window: u64,
        reply: u64,
        why: String,
    },
    #[error(
        "the prompt (~{tokens} tokens, with the system prompt and the tool list) does not fit the \
         model's context window ({window} tokens, {reply} of them kept for the reply), so nothing \
         was sent. Shorten the prompt (or what is piped with it), lower [provider] max_tokens \
         (the reply's share), or use a model with a larger window and set [provider] \
         context_window to it"
    )]
    PromptTooLarge {
        tokens: u64,
        window: u64,
        reply: u64,
    },
    #[error(
        "mecha could not checkpoint the workspace before a call that can change it, so the call \
         did not run: {reason}"
    )]
    Checkpoint { reason: String },
}

/// An agent: a provider, the tools, the gate, and the context tools run in.
/// It holds every part as a trait object and names no concrete tool or
/// provider.
pub struct Agent {
    provider: Arc<dyn Provider>,
    pub(crate) tools: Mutex<Arc<ToolSet>>,
    pub(crate) refresh: Option<Arc<dyn ToolRefresh>>,
    pub(crate) system: String,
    pub(crate) gate: Gate,
    pub(crate) ctx: ToolCtx,
    pub(crate) limits: Limits,
    /// The hooks of the loop's own events (a prompt, a stop, a session's
    /// start); the gate holds the same hooks for the calls.
    pub(crate) loop_hook: Option<Arc<dyn Hook>>,
    pub(crate) compaction: Option<CompactionPolicy>,
    pub(crate) journal: Option<Arc<dyn Journal>>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The last tool list measured and its prefix's bytes (see
    /// `window.rs`' `prefix_bytes`): the same list is not serialized again.
    pub(crate) prefix_memo: Mutex<Option<(u64, usize)>>,
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
            tools: Mutex::new(ToolSet::new(registry, None)),
            refresh: None,
            system,
            gate,
            ctx,
            limits,
            compaction: None,
            journal: None,
            checkpointer: None,
            loop_hook: None,
            prefix_memo: Mutex::new(None),
        }
    }

    /// The model requests name, for reports (`None` in a replay).
    pub fn model(&self) -> Option<&str> {
        self.provider.model()
    }

    /// Runs `hook` at the loop's own events: each prompt, each answer
    /// (a stop), the session's start. A subagent's child has none: its
    /// prompt is its parent's call, which the hooks already judged, and its
    /// calls pass them at its gate.
    #[must_use]
    pub fn with_loop_hooks(mut self, hook: Arc<dyn Hook>) -> Self {
        self.loop_hook = Some(hook);
        self
    }

    /// Compacts the conversation when it reaches the policy's threshold
    /// (or a call asks), and ends the run with a clear error rather than
    /// send a request that cannot fit.
    #[must_use]
    pub fn with_compaction(mut self, policy: CompactionPolicy) -> Self {
        self.compaction = Some(policy);
        self
    }

    /// Records every change to the session in `journal`, synced at every
    /// turn boundary (behind the next request, where there is one).
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Picks up tool-list changes from `refresh` at every turn boundary.
    #[must_use]
    pub fn with_refresh(mut self, refresh: Arc<dyn ToolRefresh>) -> Self {
        self.refresh = Some(refresh);
        self
    }

    /// Remembers what the API said the context holds now that its reply is
    /// in the history.
    pub(crate) fn reported(&self, session: &mut Session, usage: Usage) {
        let tokens = usage.context_tokens();
        session.reported = (tokens > 0).then_some((tokens, session.messages.len()));
    }

    pub(crate) fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
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
        session.prompt_open = false;
        let sent = self.exchange(session, prompt, events).await;
        // Only a whole exchange gets here: one dropped midway leaves the
        // flag (and any text streamed) for `keep_interrupted`.
        session.prompt_open = false;
        self.sync_if_failed(&sent);
        self.checkpoint_after_prompt(session)?;
        sent
    }

    async fn exchange(
        &self,
        session: &mut Session,
        prompt: &str,
        events: &dyn EventSink,
    ) -> Result<Outcome, AgentError> {
        let message = match self.prompt(session, prompt, events).await {
            Prompt::Send(message) => message,
            Prompt::Blocked(reason) => return Ok(Outcome::PromptBlocked { reason }),
        };
        {
            let tools = self.snapshot();
            let all = tools.definitions();
            let narrowed = session
                .surface
                .as_ref()
                .map(|surface| surface.definitions(&all));
            let definitions = narrowed.as_deref().unwrap_or(&all);
            self.prompt_fits(&self.offered(&tools.registry, definitions), &message)?;
        }
        let before = session.messages.len();
        session.prompts += 1;
        self.note(&Record::Prompt {
            turn: session.prompts,
        });
        self.push(session, message, Vec::new());
        session.prompt_open = true;
        self.sync_behind();
        self.turns(session, before, events).await
    }

    /// Goes on with a task that parked: `results` (the parked turn's, the
    /// owner's answer now in the parked call's) enter the history, and the
    /// loop runs on from there as if the call had just answered.
    pub async fn answer(
        &self,
        session: &mut Session,
        results: Message,
        external: Vec<String>,
        events: &dyn EventSink,
    ) -> Result<Outcome, AgentError> {
        let before = session.messages.len();
        self.push(session, results, external);
        session.prompt_open = true;
        self.sync_behind();
        let answered = self.turns(session, before, events).await;
        session.prompt_open = false;
        self.sync_if_failed(&answered);
        self.checkpoint_after_prompt(session)?;
        answered
    }

    /// Model requests and their calls, up to `max_turns`, until the model
    /// answers (or parks). `before` is where this exchange began, for a
    /// refusal to drop it.
    async fn turns(
        &self,
        session: &mut Session,
        before: usize,
        events: &dyn EventSink,
    ) -> Result<Outcome, AgentError> {
        let mut nudged = false;
        let mut sent_back = 0;
        // Compaction failed every attempt during this prompt (the last
        // error): the run goes on while it fits, without asking for more
        // summaries.
        let mut gave_up = None;
        for _ in 0..self.limits.max_turns {
            session.turns += 1;
            let turn = session.turns;
            let tools = self.current_tools().await;
            // The prefix changes once, at a narrowing, and stays the same
            // from then on: the filter of a fixed, sorted list.
            // A load changes it once, from the loaded tool on.
            let all = tools.definitions();
            let narrowed = session
                .surface
                .as_ref()
                .map(|surface| surface.definitions(&all));
            let definitions = narrowed.as_deref().unwrap_or(&all);
            // Read at each request: the mode can change during a prompt.
            let definitions = &*self.offered(&tools.registry, definitions);
            self.keep_in_window(
                session,
                &tools.registry,
                definitions,
                turn,
                &mut gave_up,
                events,
            )
            .await?;
            let request = Request::of_history(&self.system, definitions, &session.messages);
            events.emit(Event::Requesting { turn });
            let unfinished = &mut session.unfinished;
            unfinished.clear();
            let mut on_stream = |piece: Streamed<'_>| {
                match piece {
                    Streamed::Text(text) => unfinished.push_str(text),
                    // What streamed before is streamed again.
                    Streamed::Retrying(_) => unfinished.clear(),
                    Streamed::Thinking(_) | Streamed::RedactedThinking => {}
                }
                events.emit(Event::streamed(piece));
            };
            let response = self.provider.complete(request, &mut on_stream).await;
            session.unfinished.clear();
            let response = response?;
            let usage = response.usage;
            session.usage.add(usage);
            events.emit(Event::Usage { turn, usage });
            let (calls, cut) = match ending::read(&response) {
                Reading::Tools { calls, cut } => (calls, cut),
                Reading::Answer { text, stop_reason } => {
                    if stop_reason.is_cut() {
                        events.emit(Event::OutputLimit { turn, tool: None });
                    }
                    self.push(session, response.message, Vec::new());
                    self.reported(session, usage);
                    if let Some(reason) = self.sent_back(&text, &mut sent_back, turn, events).await
                    {
                        self.end_turn(session, usage, false);
                        let back = format!("{SENT_BACK}\n{reason}");
                        self.push(session, Message::user_text(&back), Vec::new());
                        self.sync_behind();
                        continue;
                    }
                    self.end_turn(session, usage, true);
                    return Ok(Outcome::Answered { text, stop_reason });
                }
                Reading::Refusal { text, detail } => {
                    self.end_turn(session, usage, false);
                    self.rewind(session, before);
                    return Ok(Outcome::Refused { text, detail });
                }
                Reading::Empty { stop_reason } => {
                    self.end_turn(session, usage, false);
                    if stop_reason == StopReason::EndTurn && !nudged {
                        nudged = true;
                        events.emit(Event::EmptyTurn { turn });
                        self.push(session, Message::user_text(CONTINUE_PROMPT), Vec::new());
                        continue;
                    }
                    self.sync();
                    return Ok(Outcome::Silent { stop_reason });
                }
            };
            self.push(session, response.message, Vec::new());
            self.reported(session, usage);
            self.end_turn(session, usage, false);
            if let Some(cut) = &cut {
                events.emit(Event::OutputLimit {
                    turn,
                    tool: Some(cut.name.clone()),
                });
            }
            let (taint, surface) = (session.taint, session.surface.clone());
            let results = self
                .dispatch(&tools.registry, session, turn, &calls, cut, events)
                .await?;
            let message = Message {
                role: Role::User,
                content: results.blocks,
            };
            if let Some(parked) = results.parked {
                self.note_changes(session, &tools.registry, taint, false, events);
                self.sync();
                return Ok(Outcome::Parked {
                    parked,
                    results: message,
                    external: results.external,
                });
            }
            self.push(session, message, results.external);
            let narrowed = session.surface != surface;
            self.note_changes(session, &tools.registry, taint, narrowed, events);
            self.sync_behind();
        }
        self.sync();
        Ok(Outcome::TurnLimit {
            turns: self.limits.max_turns,
        })
    }
}
