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

/// The candidate `name` is most likely a misspelling of: the nearest by
/// edit distance, within a third of the name's length (at least one
/// edit), ties going to the first. `None` when `name` is itself one, or
/// nothing is that near.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name {
            return None;
        }
        let distance = edit_distance(name, candidate);
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_names_what_was_meant() {
        let commands = ["run", "chat", "tools", "sessions"];
        assert_eq!(closest("rn", commands), Some("run"));
        assert_eq!(closest("sesions", commands), Some("sessions"));
        assert_eq!(
            closest("htp_fetch", ["fs_read", "http_fetch"]),
            Some("http_fetch")
        );
        assert_eq!(
            closest("run", commands),
            None,
            "an exact name is no misspelling"
        );
        assert_eq!(closest("refactor", commands), None);
        assert_eq!(closest("fix", commands), None);
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("flaw", "lawn"), 2);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
