//! Each message's wire JSON, kept from one request to the next. A request
//! sends the whole history, and building and serializing it afresh made a
//! tool round at turn 500 cost almost three times one at turn 10; between
//! requests the history only grows, so a request serializes what is new.
//! A message is reused only when it equals the one its JSON was made from
//! (a comparison of its bytes, no allocation), so a cut, a compaction or a
//! rewritten message is never sent stale.

use std::sync::{Arc, Mutex, PoisonError};

use mecha_core::Message;

/// The messages of the last request, each with its JSON (`None`: nothing
/// of it is sent).
#[derive(Debug, Default)]
pub(crate) struct WireCache {
    last: Mutex<Vec<(Message, Option<Arc<str>>)>>,
}

impl WireCache {
    /// The JSON of each of `messages`: the last request's where the message
    /// is unchanged, else what `encode` makes of it.
    pub(crate) fn encoded(
        &self,
        messages: &[Message],
        encode: impl Fn(&Message) -> Option<String>,
    ) -> Vec<Option<Arc<str>>> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = last
            .iter()
            .zip(messages)
            .take_while(|((was, _), now)| was == *now)
            .count();
        last.truncate(kept);
        for message in &messages[kept..] {
            let json = encode(message).map(Arc::from);
            last.push((message.clone(), json));
        }
        last.iter().map(|(_, json)| json.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn only_what_changed_or_is_new_is_encoded_again() {
        let cache = WireCache::default();
        let encodes = AtomicUsize::new(0);
        let encode = |m: &Message| {
            encodes.fetch_add(1, Ordering::Relaxed);
            Some(m.text())
        };
        let mut history = vec![Message::user_text("a"), Message::user_text("b")];
        let first = cache.encoded(&history, encode);
        assert_eq!(encodes.load(Ordering::Relaxed), 2);
        history.push(Message::user_text("c"));
        let second = cache.encoded(&history, encode);
        assert_eq!(encodes.load(Ordering::Relaxed), 3, "only the new one");
        assert!(Arc::ptr_eq(
            first[0].as_ref().unwrap(),
            second[0].as_ref().unwrap()
        ));
        // A rewritten message (a compaction's rebuild) is encoded again,
        // and so is everything after it.
        history[1] = Message::user_text("B");
        let third = cache.encoded(&history, encode);
        assert_eq!(encodes.load(Ordering::Relaxed), 5);
        let texts: Vec<&str> = third.iter().map(|j| j.as_deref().unwrap()).collect();
        assert_eq!(texts, ["a", "B", "c"]);
        // A shorter history (a cut) sends only what is left.
        history.truncate(1);
        assert_eq!(cache.encoded(&history, encode).len(), 1);
    }
}
