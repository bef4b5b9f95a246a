//! The agent loop: turns, the dispatch gate (validation, interlock, hook,
//! rules, approver), taint tracking, the tool surface a skill narrows,
//! compaction with carried state, the journal of every change, subagents
//! (a child agent as a tool), and events for the front end, including a
//! stored conversation's told again ([`retell`]).
//!
//! It holds the provider and every tool as trait objects and names no
//! concrete one; wiring them is the CLI's job. It does not render anything
//! or read config files.

mod agent;
mod checkpointing;
mod compaction;
mod deferral;
mod dispatch;
mod ending;
mod events;
mod gate;
mod hook;
mod hooking;
mod journaling;
#[cfg(test)]
mod measured_tests;
mod planning;
mod progress;
mod retold;
mod subagent;
mod surface;
mod toolset;
mod typed;
mod validate;
mod window;

pub use agent::{Agent, AgentError, Limits, Measured, Outcome, Session};
pub use compaction::{COMPACTION_ATTEMPTS, CompactionPolicy, SUMMARY_HEADER, SUMMARY_REQUEST};
pub use deferral::{Deferred, TOOL_SEARCH, deferred, first_definitions};
pub use dispatch::Parked;
pub use ending::{CONTINUE_PROMPT, CUT_CALL};
pub use events::{
    EarlyStop, Event, EventSink, Excerpt, GateStage, GateVerdict, HookSaid, RunEnd,
    summary_is_whole,
};
pub use gate::Gate;
pub use hook::{Hook, HookVerdict, PromptVerdict, SessionSource};
pub use hooking::MAX_SEND_BACKS;
pub use planning::PLAN_NOTE;
pub use retold::{Retold, retell, typed_prompt};
pub use subagent::{
    AnswerShape, ChildJournals, DEFAULT_SUBAGENT_TURNS, Lineage, Profile, Runtime, SubagentTool,
};
pub use surface::Surface;
pub use toolset::ToolRefresh;
pub use typed::TypedCall;
pub use window::AskedCompaction;
