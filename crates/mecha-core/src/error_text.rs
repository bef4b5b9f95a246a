//! Error text for people and models: an error with its causes, and a
//! system error in the system's own words.

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

/// What the system said, without the ` (os error N)` Rust adds: the words
/// any other program prints for it (`No such file or directory`).
pub fn system_words(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => match text.strip_suffix(&format!(" (os error {code})")) {
            Some(words) => words.to_owned(),
            None => text,
        },
        None => text,
    }
}
