//! What a tool may do to the user: the three legs of the lethal trifecta
//! plus destructiveness.

use serde::Serialize;

/// Where data a tool sends can go, and who picks the destination.
///
/// Ordered by danger, so the highest of several is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Egress {
    /// Nothing leaves the machine.
    #[default]
    None,
    /// Data leaves, but only to a destination the user's config fixed.
    Blind,
    /// The model names the recipient (a URL, an address, a channel).
    Chosen,
}

impl Egress {
    /// Its name as people and JSON see it (`none`, `blind`, `chosen`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Blind => "blind",
            Self::Chosen => "chosen",
        }
    }
}

/// As [`Egress::as_str`], so JSON and the terminal use one set of words.
impl Serialize for Egress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A tool's declared risk surface.
///
/// The only way to combine two is [`Capabilities::union`], which can only
/// widen: config may force an axis on, never off, because narrowing a claim
/// nothing enforces would disarm the interlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Capabilities {
    /// Returns data the user considers private.
    pub private_data: bool,
    /// Returns content a third party can influence.
    pub untrusted_input: bool,
    /// Whether data leaves, and who picks where.
    pub egress: Egress,
    /// May destroy or overwrite data.
    pub destructive: bool,
}

impl Capabilities {
    /// No risk on any axis.
    pub const NONE: Self = Self {
        private_data: false,
        untrusted_input: false,
        egress: Egress::None,
        destructive: false,
    };

    /// Whether the interlock refuses it once the conversation is armed
    /// (private data and untrusted content both present): a send whose
    /// destination the model picks.
    pub fn refused_when_armed(self) -> bool {
        self.egress == Egress::Chosen
    }

    /// Whether one call can be the whole trifecta once untrusted content is
    /// in the conversation: it reads private data itself and sends where the
    /// model says, so an injection already read can direct it to read a
    /// secret and send it in the same call, before the taint could arm
    /// (`cat .env | curl -d @- …` in an unconfined shell).
    pub fn is_one_call_trifecta(self) -> bool {
        self.private_data && self.egress == Egress::Chosen
    }

    /// The wider of the two on every axis.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self {
            private_data: self.private_data || other.private_data,
            untrusted_input: self.untrusted_input || other.untrusted_input,
            egress: self.egress.max(other.egress),
            destructive: self.destructive || other.destructive,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    fn any_egress() -> impl Strategy<Value = Egress> {
        prop_oneof![
            Just(Egress::None),
            Just(Egress::Blind),
            Just(Egress::Chosen)
        ]
    }

    fn any_caps() -> impl Strategy<Value = Capabilities> {
        (any::<bool>(), any::<bool>(), any_egress(), any::<bool>()).prop_map(
            |(private_data, untrusted_input, egress, destructive)| Capabilities {
                private_data,
                untrusted_input,
                egress,
                destructive,
            },
        )
    }

    proptest! {
        #[test]
        fn union_never_narrows(a in any_caps(), b in any_caps()) {
            let u = a.union(b);
            for side in [a, b] {
                prop_assert!(u.private_data >= side.private_data);
                prop_assert!(u.untrusted_input >= side.untrusted_input);
                prop_assert!(u.egress >= side.egress);
                prop_assert!(u.destructive >= side.destructive);
            }
        }

        #[test]
        fn union_is_commutative_and_idempotent(a in any_caps(), b in any_caps()) {
            prop_assert_eq!(a.union(b), b.union(a));
            prop_assert_eq!(a.union(a), a);
        }
    }

    #[test]
    fn egress_serializes_as_its_word() {
        for (egress, word) in [
            (Egress::None, "none"),
            (Egress::Blind, "blind"),
            (Egress::Chosen, "chosen"),
        ] {
            assert_eq!(egress.as_str(), word);
            assert_eq!(
                serde_json::to_value(egress).unwrap(),
                serde_json::json!(word)
            );
        }
    }

    #[test]
    fn only_a_chosen_send_is_refused_when_armed() {
        let with = |egress| Capabilities {
            egress,
            ..Capabilities::NONE
        };
        assert!(with(Egress::Chosen).refused_when_armed());
        assert!(!with(Egress::Blind).refused_when_armed());
        assert!(!with(Egress::None).refused_when_armed());
    }

    #[test]
    fn only_a_private_chosen_send_is_a_one_call_trifecta() {
        let caps = |private_data, egress| Capabilities {
            private_data,
            egress,
            ..Capabilities::NONE
        };
        assert!(caps(true, Egress::Chosen).is_one_call_trifecta());
        assert!(!caps(false, Egress::Chosen).is_one_call_trifecta());
        assert!(!caps(true, Egress::Blind).is_one_call_trifecta());
        assert!(!caps(true, Egress::None).is_one_call_trifecta());
    }

    #[test]
    fn egress_orders_by_danger() {
        assert!(Egress::None < Egress::Blind && Egress::Blind < Egress::Chosen);
    }
}
