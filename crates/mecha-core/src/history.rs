//! A conversation's messages, with a promise a provider can build on: in
//! one era the history only grows. Anything else (a cut, a rebuild, an
//! edit) starts a new era, so whoever encoded the first `n` messages at
//! some era may send that encoding again, without comparing a byte, for as
//! long as the era lasts. That keeps a tool round at turn 500 as cheap as
//! one at turn 10.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Message;

/// Which stretch of append-only life a [`History`] is in. Unique across
/// every history of the process: two histories never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Era(u64);

impl Era {
    fn next() -> Self {
        static ERAS: AtomicU64 = AtomicU64::new(1);
        Self(ERAS.fetch_add(1, Ordering::Relaxed))
    }
}

/// The messages, read as a slice; changed only through methods that keep
/// the era's promise.
#[derive(Debug)]
pub struct History {
    messages: Vec<Message>,
    era: Era,
}

impl History {
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            era: Era::next(),
        }
    }

    /// The current era: while it lasts, every message now here stays, at
    /// the same place, unchanged.
    pub fn era(&self) -> Era {
        self.era
    }

    /// Adds a message at the end: the era goes on.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Keeps the first `len` messages. A new era when something goes, as
    /// what comes after may differ from what went.
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            self.messages.truncate(len);
            self.era = Era::next();
        }
    }

    /// Replaces the whole history (a compaction's rebuild): a new era.
    pub fn replace(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.era = Era::next();
    }

    /// The messages to change in place: a new era, whatever is done.
    pub fn edit(&mut self) -> &mut Vec<Message> {
        self.era = Era::next();
        &mut self.messages
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

/// A copy goes its own way from here, so it gets an era of its own.
impl Clone for History {
    fn clone(&self) -> Self {
        Self::new(self.messages.clone())
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        Self::new(messages)
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        Self::new(messages.into_iter().collect())
    }
}

impl PartialEq<Vec<Message>> for History {
    fn eq(&self, other: &Vec<Message>) -> bool {
        &self.messages == other
    }
}

impl PartialEq<History> for Vec<Message> {
    fn eq(&self, other: &History) -> bool {
        self == &other.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(n: usize) -> Vec<Message> {
        (0..n).map(|i| Message::user_text(i.to_string())).collect()
    }

    #[test]
    fn only_growth_keeps_the_era() {
        let mut history = History::new(texts(3));
        let era = history.era();
        history.push(Message::user_text("more"));
        history.truncate(10);
        assert_eq!(history.era(), era, "growing, or cutting nothing");

        history.truncate(2);
        let cut = history.era();
        assert_ne!(cut, era);
        history.replace(texts(5));
        assert_ne!(history.era(), cut);
        let replaced = history.era();
        history.edit()[0] = Message::user_text("edited");
        assert_ne!(history.era(), replaced);
    }

    #[test]
    fn no_two_histories_share_an_era() {
        let a = History::new(texts(2));
        let b = a.clone();
        assert_eq!(a, b);
        assert_ne!(a.era(), b.era(), "a copy grows its own way");
        assert_ne!(History::default().era(), History::default().era());
    }
}
