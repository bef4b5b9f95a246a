//! What a tool hands back to the loop.

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
}

impl ToolOutput {
    /// A successful result written by the harness or a local tool.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            external: false,
        }
    }

    /// An expected failure; the text should name the fix.
    pub fn err(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            external: false,
        }
    }

    /// Content that came from outside the machine.
    pub fn external(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            external: true,
        }
    }
}
