//! The measured history ([`Session::context_tokens`]) always agrees with
//! measuring the whole history afresh, whatever pushes, cuts and rebuilds
//! came between two turns.

use mecha_core::Message;
use proptest::prelude::*;

use crate::agent::{Measured, Session};
use crate::compaction;

#[derive(Debug, Clone)]
enum Change {
    Push(usize),
    /// Cut back to this share of the history (a rewind), forgetting the
    /// measure as the loop does.
    Cut(u8),
    /// Rebuilt with these many messages (a compaction).
    Rebuild(u8),
    Measure,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0usize..400).prop_map(Change::Push),
        any::<u8>().prop_map(Change::Cut),
        (1u8..6).prop_map(Change::Rebuild),
        Just(Change::Measure),
    ]
}

proptest! {
    #[test]
    fn the_measure_agrees_with_measuring_everything(changes in proptest::collection::vec(change(), 1..60), prefix in 0usize..5000) {
        let mut session = Session::default();
        for change in changes {
            match change {
                Change::Push(size) => session.messages.push(Message::user_text("x".repeat(size))),
                Change::Cut(share) => {
                    let keep = session.messages.len() * usize::from(share) / 255;
                    session.messages.truncate(keep);
                    session.measured = Measured::default();
                }
                Change::Rebuild(count) => {
                    session.messages = (0..count).map(|n| Message::user_text("y".repeat(usize::from(n) * 7))).collect();
                    session.measured = Measured::default();
                }
                Change::Measure => {}
            }
            let expected = compaction::estimate(prefix, &session.messages);
            prop_assert_eq!(session.context_tokens(prefix), expected);
        }
    }
}
