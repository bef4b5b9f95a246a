//! What a tool hands back to the loop.

use crate::Image;

/// The result of one tool call, as the model will see it.
///
/// `is_error` marks an expected failure the model can route around; `Err`
/// from [`crate::Tool::call`] is reserved for what it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text that becomes the tool result.
    pub content: String,
    /// The call failed in a way the model can fix or route around.
    pub is_error: bool,
    /// The content came from outside the machine (a web page, a remote API).
    ///
    /// Not the same as the tool's declared `untrusted_input`: a refusal from
    /// mecha's own guard is the harness speaking, and labelling it external
    /// makes the model invent explanations for its own harness.
    pub external: bool,
    /// Written wholly by mecha: a refusal, an argument check, a connection
    /// that never happened. It carries nothing from the tool's source, so it
    /// adds no taint. Any other result of an executed call does, error or
    /// not: a failing command's output is still the file it printed.
    pub harness: bool,
    /// Images the result carries besides its text (a screenshot, a PNG
    /// file). Which of them reach the model is the batch's decision.
    pub images: Vec<Image>,
    /// This call narrows the run's tool surface (a skill with `tools:` was
    /// loaded); the loop applies it, for the rest of the run.
    pub narrows: Option<Narrowing>,
    /// The call asks the loop to compact the conversation before the next
    /// model request (the `compact` tool: a finished step is a good place).
    pub requests_compaction: bool,
    /// The call parks the task on this question for its owner, who is not
    /// here (a delegated task's `ask_user`): the loop stops after this turn,
    /// keeping the turn's results, and the owner's answer becomes this
    /// call's result when the task resumes.
    pub parks: Option<Box<str>>,
}

/// A narrowing of the tool surface that a call asks for: the tools the
/// procedure `by` needs. The loop unions what every such call named and
/// always keeps the tool that made the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowing {
    /// What narrowed it (a skill's name), for the refusal of a call
    /// outside the surface.
    pub by: String,
    /// The tool names it allows.
    pub tools: Vec<String>,
}

impl ToolOutput {
    /// A successful result from a local tool.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            external: false,
            harness: false,
            images: Vec::new(),
            narrows: None,
            requests_compaction: false,
            parks: None,
        }
    }

    /// An expected failure that may carry what the tool produced (a failing
    /// command's output); the text should name the fix.
    pub fn err(content: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(content)
        }
    }

    /// A failure in mecha's own words, carrying nothing from the tool's
    /// source: bad arguments, a guard's refusal, a connection never made.
    pub fn refusal(content: impl Into<String>) -> Self {
        Self {
            harness: true,
            ..Self::err(content)
        }
    }

    /// Content that came from outside the machine.
    pub fn external(content: impl Into<String>) -> Self {
        Self {
            external: true,
            ..Self::ok(content)
        }
    }
}
