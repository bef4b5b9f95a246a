//! Error text for people and models: an error with its causes.

/// An error and its causes in one line. Libraries such as reqwest keep the
/// useful part (connection refused, certificate expired) in the source
/// chain, out of `Display`; causes already in the text are not repeated.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
