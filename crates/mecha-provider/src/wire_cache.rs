//! The history's wire JSON, kept from one request to the next. A request
//! sends the whole history, and building and serializing it afresh made a
//! tool round at turn 500 cost almost three times one at turn 10; between
//! requests the history only grows, so a request serializes what is new.
//! Both providers keep theirs (Anthropic's here, the chat format's in
//! `openai/wire.rs`, which must join neighbouring user messages).
//! What was kept is reused only for messages known unchanged: those of the
//! same [`Era`] of a [`mecha_core::History`] (which only grows within one),
//! or, for messages of no known era, those equal to the ones the JSON was
//! made from. A cut, a compaction or a rewritten message is never sent
//! stale.

use std::sync::{Mutex, PoisonError};

use mecha_core::{Era, Message};
use serde_json::{Map, Value};

/// The messages a provider's last request sent, and their era: what tells
/// which of the next request's messages are unchanged.
#[derive(Debug, Default)]
pub(crate) struct Known {
    era: Option<Era>,
    messages: Vec<Message>,
}

impl Known {
    /// How many of the messages known are the first of `messages`: all of
    /// them when the era is the same (a history only grows in one), else
    /// as many as are equal.
    pub(crate) fn unchanged(&self, messages: &[Message], era: Option<Era>) -> usize {
        let grown = era.is_some() && era == self.era && self.messages.len() <= messages.len();
        if grown {
            debug_assert!(
                self.messages[..] == messages[..self.messages.len()],
                "a history changed within its era"
            );
            return self.messages.len();
        }
        self.messages
            .iter()
            .zip(messages)
            .take_while(|(was, now)| was == now)
            .count()
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.messages.truncate(len);
    }

    pub(crate) fn push(&mut self, message: &Message) {
        self.messages.push(message.clone());
    }

    /// The messages from here on are `era`'s.
    pub(crate) fn now_in(&mut self, era: Option<Era>) {
        self.era = era;
    }
}

/// `envelope` written as its `Value` would be (keys in order, no spaces),
/// with `key` in it, at its place in that order, holding the raw JSON that
/// `list` writes: the history goes in as it is, never parsed again.
pub(crate) fn spliced(
    envelope: &Map<String, Value>,
    key: &str,
    list: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> serde_json::Result<Vec<u8>> {
    let (before, after): (Vec<_>, Vec<_>) =
        envelope.iter().partition(|(name, _)| name.as_str() < key);
    let mut out = Vec::with_capacity(16 * 1024);
    out.push(b'{');
    for (name, value) in before {
        field(&mut out, name)?;
        serde_json::to_writer(&mut out, value)?;
    }
    field(&mut out, key)?;
    list(&mut out)?;
    for (name, value) in after {
        field(&mut out, name)?;
        serde_json::to_writer(&mut out, value)?;
    }
    out.push(b'}');
    Ok(out)
}

/// `"name":`, after a comma unless it is the object's first.
fn field(out: &mut Vec<u8>, name: &str) -> serde_json::Result<()> {
    if out.len() > 1 {
        out.push(b',');
    }
    serde_json::to_writer(&mut *out, name)?;
    out.push(b':');
    Ok(())
}

/// Each message's Anthropic JSON.
#[derive(Debug, Default)]
pub(crate) struct WireCache {
    last: Mutex<Wire>,
}

/// The messages of the last request and their JSON.
#[derive(Debug, Default)]
struct Wire {
    known: Known,
    /// The JSON of each message with something to send, joined by commas.
    json: String,
    /// Where each message's part of `json` begins (at the comma before it)
    /// and whether it has one.
    parts: Vec<(usize, bool)>,
}

/// The history as encoded: the JSON of every sent message before the last
/// one, joined by commas, and which message is that last one (it carries
/// the moving breakpoint, so the request makes it afresh).
pub(crate) struct Encoded<'a> {
    pub(crate) before_last: &'a str,
    pub(crate) last: Option<usize>,
}

impl WireCache {
    /// `messages` encoded, each message's JSON what `encode` makes of it
    /// (`None`: nothing of it is sent), given to `write`.
    pub(crate) fn encoded<R>(
        &self,
        messages: &[Message],
        era: Option<Era>,
        encode: impl Fn(&Message) -> Option<String>,
        write: impl FnOnce(Encoded<'_>) -> R,
    ) -> R {
        let mut wire = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = wire.known.unchanged(messages, era);
        wire.truncate(kept);
        for message in &messages[kept..] {
            wire.push(message, encode(message));
        }
        wire.known.now_in(era);
        let last = wire.parts.iter().rposition(|&(_, sent)| sent);
        let before_last = last.map_or("", |at| &wire.json[..wire.parts[at].0]);
        write(Encoded { before_last, last })
    }
}

impl Wire {
    fn truncate(&mut self, len: usize) {
        if let Some(&(end, _)) = self.parts.get(len) {
            self.json.truncate(end);
        }
        self.parts.truncate(len);
        self.known.truncate(len);
    }

    fn push(&mut self, message: &Message, json: Option<String>) {
        let start = self.json.len();
        if let Some(json) = &json {
            if !self.json.is_empty() {
                self.json.push(',');
            }
            self.json.push_str(json);
        }
        self.parts.push((start, json.is_some()));
        self.known.push(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mecha_core::History;
    use serde_json::json;

    /// The JSON before the last sent message, and that message's text.
    fn sent(
        cache: &WireCache,
        messages: &[Message],
        era: Option<Era>,
        count: &AtomicUsize,
    ) -> (String, Option<String>) {
        let encode = |m: &Message| {
            count.fetch_add(1, Ordering::Relaxed);
            let text = m.text();
            (!text.is_empty()).then(|| format!("{text:?}"))
        };
        cache.encoded(messages, era, encode, |e| {
            (
                e.before_last.to_owned(),
                e.last.map(|at| messages[at].text()),
            )
        })
    }

    #[test]
    fn only_what_changed_or_is_new_is_encoded_again() {
        let cache = WireCache::default();
        let encodes = AtomicUsize::new(0);
        let mut history = vec![Message::user_text("a"), Message::user_text("b")];
        let first = sent(&cache, &history, None, &encodes);
        assert_eq!(first, ("\"a\"".to_owned(), Some("b".to_owned())));
        assert_eq!(encodes.load(Ordering::Relaxed), 2);
        history.push(Message::user_text("c"));
        let second = sent(&cache, &history, None, &encodes);
        assert_eq!(encodes.load(Ordering::Relaxed), 3, "only the new one");
        assert_eq!(second, ("\"a\",\"b\"".to_owned(), Some("c".to_owned())));
        // A rewritten message (a compaction's rebuild) is encoded again,
        // and so is everything after it.
        history[1] = Message::user_text("B");
        let third = sent(&cache, &history, None, &encodes);
        assert_eq!(encodes.load(Ordering::Relaxed), 5);
        assert_eq!(third, ("\"a\",\"B\"".to_owned(), Some("c".to_owned())));
        // A shorter history (a cut) sends only what is left.
        history.truncate(1);
        assert_eq!(
            sent(&cache, &history, None, &encodes),
            (String::new(), Some("a".to_owned()))
        );
    }

    #[test]
    fn messages_with_nothing_to_send_are_left_out_wherever_they_are() {
        let cache = WireCache::default();
        let encodes = AtomicUsize::new(0);
        let history = ["", "a", "", "b", ""].map(Message::user_text);
        assert_eq!(
            sent(&cache, &history, None, &encodes),
            ("\"a\"".to_owned(), Some("b".to_owned()))
        );
        assert_eq!(
            sent(&cache, &history[..1], None, &encodes),
            (String::new(), None)
        );
    }

    #[test]
    fn a_spliced_list_lands_where_the_value_would_put_it() {
        let write = |envelope: Value, list: &str| {
            let Value::Object(map) = envelope else {
                unreachable!()
            };
            let list = list.to_owned();
            let out = spliced(&map, "messages", move |out| {
                out.extend_from_slice(list.as_bytes());
                Ok(())
            })
            .unwrap();
            String::from_utf8(out).unwrap()
        };
        for envelope in [
            json!({"model": "m", "max_tokens": 5, "stream": true, "tools": [{"a": "b"}]}),
            json!({"model": "m", "stream": true}),
            json!({"max_tokens": 5}),
            json!({"zeta": 1}),
            json!({}),
        ] {
            let mut whole = envelope.clone();
            whole["messages"] = json!([{"role": "user", "content": "hi \"there\""}]);
            assert_eq!(
                write(envelope, r#"[{"content":"hi \"there\"","role":"user"}]"#),
                whole.to_string()
            );
        }
    }

    #[test]
    fn a_history_of_the_same_era_is_not_compared_and_a_new_era_is() {
        let cache = WireCache::default();
        let encodes = AtomicUsize::new(0);
        let mut history = History::new(vec![Message::user_text("a")]);
        sent(&cache, &history, Some(history.era()), &encodes);
        history.push(Message::user_text("b"));
        let grown = sent(&cache, &history, Some(history.era()), &encodes);
        assert_eq!(grown, ("\"a\"".to_owned(), Some("b".to_owned())));
        assert_eq!(encodes.load(Ordering::Relaxed), 2);
        // An edit starts a new era: what changed is found by comparing.
        history.edit()[0] = Message::user_text("A");
        let edited = sent(&cache, &history, Some(history.era()), &encodes);
        assert_eq!(edited, ("\"A\"".to_owned(), Some("b".to_owned())));
        assert_eq!(encodes.load(Ordering::Relaxed), 4);
    }
}
