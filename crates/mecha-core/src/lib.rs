//! mecha's vocabulary, shared by every other crate: the [`Tool`] trait and
//! its [`ToolOutput`], [`Capabilities`] (and the [`Forced`] wrapper by which
//! config distrusts a tool further), the [`ToolCtx`] a call runs in (with
//! the path jail, the spill directory and the output budget), the sorted
//! [`Registry`], the provider-neutral conversation types, running one
//! turn's calls as a batch, the [`CarriedState`] tools hand across a
//! compaction, the [`Record`]s a session's [`Journal`] keeps, the [`Checkpointer`]
//! the loop asks for workspace snapshots, and the tree of processes mecha starts (each in
//! a registered process group, orphans reaped, a panic still cleaning up).
//!
//! It deliberately knows nothing of models, networks or MCP, and nothing of
//! which concrete tools exist.

mod approval;
mod asking;
mod batch;
mod budget;
mod capabilities;
mod carried;
mod checkpoint;
mod conversation;
mod ctx;
mod error_text;
mod forced;
mod history;
mod image;
mod jail;
mod journal;
mod mode;
pub mod net;
mod order;
mod output;
mod panic_cleanup;
mod parallel;
mod printable;
mod process_tree;
mod progress;
mod registry;
mod regular_file;
mod rules;
mod shell_words;
mod spill;
mod taint;
mod threshold;
mod tool;
mod trusted_roots;

pub use approval::{Approver, Decision, FreshReason, ModeApprover};
pub use asking::{Asker, AskingApprover, Offer, Said, ask_user_schema, asked_question};
pub use batch::{Call, EXTERNAL_HEADER, Slot, run_turn, unknown_tool};
pub use budget::{
    FALLBACK_TURN_BUDGET, MAX_ECHO_BYTES, MIN_CALL_SHARE, MIN_TURN_BUDGET,
    budget_for_context_window,
};
pub use capabilities::{Capabilities, Egress};
pub use carried::{CARRIED_HEADER, CarriedState};
pub use checkpoint::{Checkpoint, Checkpointer};
pub use conversation::{Block, Message, Role, StopReason, ToolCall, Usage};
pub use ctx::ToolCtx;
pub use error_text::{closest, error_chain, system_words};
pub use forced::{Forced, ForcedCapabilities, ForcedEgress};
pub use history::{Era, History};
pub use image::{
    IMAGE_COST_BYTES, Image, MAX_IMAGE_BYTES, human_size, over_cap, placeholder, sniff,
};
pub use jail::{Jail, JailError, ResolvedPath, canonical_protected};
pub use journal::{
    INTERRUPTED_RESULT, INTERRUPTED_TURN, Journal, LOST_RESULT, NOT_RUN_RESULT, Record,
    close_dangling_calls, results_for_open_calls,
};
pub use mode::{ModeSwitch, PermissionMode, only_edits};
pub use output::{Narrowing, ToolOutput};
pub use panic_cleanup::{clean_up_after_panic, install_panic_cleanup};
pub use parallel::map_in_order;
pub use printable::{needs_escape, printable, rewrite};
pub use process_tree::{
    BASE_ENV, ProcessGroup, Program, Spawned, become_subreaper, on_path, reap_orphans,
    reap_orphans_now, spawn_group, spawn_program_group,
};
pub use progress::ProgressSink;
pub use registry::{DuplicateTool, Registry, ToolDefinition};
pub use regular_file::open_regular_beneath;
pub use rules::{RuleAction, RuleConfig, RuleError, Rules, Spellings, StandingAnswer};
pub use shell_words::{SimpleCommand, split_commands};
pub use spill::{DEFAULT_SPILL_MAX_BYTES, SpillDir, SpillingSink};
pub use taint::{InterlockVerdict, Taint, interlock};
pub use threshold::{
    ThresholdError, budget_tokens, checked_compact_at, compaction_threshold, reply_reserve,
    safety_margin,
};
pub use tool::{
    ArgKind, Confinement, Tool, first_sentence, is_tool_name_char, parse_url, sanitize_tool_name,
};
pub use trusted_roots::{CERT_FILE_VAR, extra_roots};
