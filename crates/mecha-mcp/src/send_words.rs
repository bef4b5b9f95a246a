//! Whether a tool reads like a send. A server that forgets `openWorldHint`
//! on its `send_email` tool gets `Egress::None` by the spec's default, and
//! the interlock never refuses it; mecha keeps the default (assuming
//! otherwise would arm the interlock on every call) but says so when the
//! tool's own words suggest it sends.

/// Words that name a way for data to leave.
const SEND_WORDS: [&str; 6] = ["send", "post", "email", "upload", "publish", "webhook"];

/// The send word found among the whole words (case-insensitive, in any
/// inflection: `sends`, `posted`, `uploading`, `sent`) of a tool's own name
/// or description, if any. `snake_case`, `kebab-case` and `camelCase` split
/// into words, so `send_report` and `sendReport` match and `postgres` does
/// not.
pub fn send_word(raw_name: &str, description: &str) -> Option<&'static str> {
    words(raw_name)
        .chain(words(description))
        .find_map(|word| SEND_WORDS.into_iter().find(|stem| is_form_of(&word, stem)))
}

fn is_form_of(word: &str, stem: &str) -> bool {
    if stem == "send" && word == "sent" {
        return true;
    }
    word.strip_prefix(stem)
        .is_some_and(|rest| ["", "s", "es", "ed", "ing"].contains(&rest))
}

/// Lowercase words: split at anything not a letter or digit, and where a
/// lowercase letter meets an uppercase one.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            words.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase();
        current.extend(c.to_lowercase());
    }
    words.push(current);
    words.into_iter().filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_in_the_name_or_description_in_any_case() {
        assert_eq!(send_word("send_report", ""), Some("send"));
        assert_eq!(send_word("sendReport", ""), Some("send"));
        assert_eq!(
            send_word("notify", "Sends a message to a channel."),
            Some("send")
        );
        assert_eq!(send_word("x", "POST the body to a URL"), Some("post"));
        assert_eq!(send_word("share", "E-mail or Email it"), Some("email"));
        assert_eq!(send_word("files-upload", ""), Some("upload"));
        assert_eq!(
            send_word("release", "Published to the registry"),
            Some("publish")
        );
        assert_eq!(send_word("hook", "Calls a webhook"), Some("webhook"));
        assert_eq!(
            send_word("mail", "The message is sent at once"),
            Some("send")
        );
    }

    #[test]
    fn words_that_merely_contain_one_do_not_count() {
        assert_eq!(send_word("postgres_query", "Query Postgres."), None);
        assert_eq!(send_word("resend_count", "A godsend."), None);
        assert_eq!(send_word("read", "Read a file."), None);
        assert_eq!(send_word("", ""), None);
    }
}
