//! What has entered the conversation, and the interlock that follows from it.
//!
//! The lethal trifecta is private data, untrusted content, and a send whose
//! destination the model picks. Once the first two are in the conversation,
//! an injection in the untrusted part can direct the model to leak the
//! private part, so every `Egress::Chosen` call is refused from then on. The
//! decision uses only what the harness observed, never what the model says.

use serde::{Deserialize, Serialize};

use crate::{Capabilities, Egress, Tool, ToolOutput};

/// Which legs of the trifecta have entered the conversation. Only ever set,
/// never cleared: taint lasts the whole session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    pub private_data: bool,
    pub untrusted_input: bool,
}

impl Taint {
    /// Records the result of an executed call to a tool with `caps`. Only
    /// a result wholly in the harness's words (a refusal) adds nothing;
    /// errors count, because a failing command still prints the file it
    /// read and a remote 404 page is still a stranger's text. A result
    /// marked external is untrusted whatever the tool declared: it came
    /// from outside, which is what untrusted means (a spilled page read
    /// back through fs_read, say).
    pub fn record(&mut self, caps: Capabilities, output: &ToolOutput) {
        if output.harness {
            return;
        }
        self.private_data |= caps.private_data;
        self.untrusted_input |= caps.untrusted_input || output.external;
    }

    /// Both legs present: the conversation is armed.
    pub fn armed(&self) -> bool {
        self.private_data && self.untrusted_input
    }

    /// The union of two taints (a child agent starts with its parent's).
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self {
            private_data: self.private_data || other.private_data,
            untrusted_input: self.untrusted_input || other.untrusted_input,
        }
    }
}

/// The interlock's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterlockVerdict {
    /// Through to the rest of the gate.
    Clear,
    /// Refused, with the reason the model is given.
    Refused(String),
    /// The call is the whole trifecta by itself: it may pass the hook and
    /// the rules (a `forbid` still forbids), but only a fresh human decision
    /// lets it run. Neither `--yes`, a standing "always" nor an allow rule
    /// answers it; with nobody to ask it is refused with this reason.
    NeedsFreshDecision(String),
}

/// The interlock's answer for one call, from what the harness observed.
///
/// An armed conversation refuses every chosen send. Before it is armed, a
/// chosen send that reads private data itself
/// ([`Capabilities::is_one_call_trifecta`]) after untrusted content has
/// entered needs a fresh human decision: the injection it read can have the
/// one call fetch the secret and send it before the taint could arm.
///
/// `block_sends_after_private` is the stricter setting: once private data is
/// present, every send is refused, blind ones included, and so is a send
/// that brings private data itself, even as a run's first call. Refusals
/// name the tool's own [`send_reason`](Tool::send_reason), so they are true
/// of a tool that takes no arguments too.
pub fn interlock(
    taint: Taint,
    tool: &dyn Tool,
    block_sends_after_private: bool,
) -> InterlockVerdict {
    let (name, caps) = (tool.name(), tool.capabilities());
    if caps.refused_when_armed() && taint.armed() {
        return InterlockVerdict::Refused(format!(
            "refused by mecha's interlock: `{name}` {}, and this conversation already holds \
             both private data and untrusted content, so an instruction hidden in that content \
             could be steering the send. Finish without it, or ask the user to do this step \
             themselves.",
            tool.send_reason()
        ));
    }
    if caps.egress != Egress::None && block_sends_after_private {
        if taint.private_data {
            return InterlockVerdict::Refused(format!(
                "refused by mecha's interlock: `{name}` sends data off this machine, and this \
                 conversation holds private data while block_sends_after_private is set. Finish \
                 without sending, or ask the user."
            ));
        }
        if caps.private_data {
            return InterlockVerdict::Refused(format!(
                "refused by mecha's interlock: `{name}` sends data off this machine and reads \
                 private data itself, so one call could read and send it, and \
                 block_sends_after_private is set. {CANNOT_SEND_FIX}"
            ));
        }
    }
    if caps.is_one_call_trifecta() && taint.untrusted_input {
        return InterlockVerdict::NeedsFreshDecision(format!(
            "refused by mecha's interlock: `{name}` {}; it also reads private data itself, and \
             this conversation already holds untrusted content, so an instruction hidden in it \
             could have this one call read a secret and send it. Such a call needs a fresh decision \
             from the user (neither --yes, an \"always\" answer nor an allow rule stands in for \
             one), and this run has nobody to ask. {CANNOT_SEND_FIX}",
            tool.send_reason()
        ));
    }
    InterlockVerdict::Clear
}

/// How a refused read-and-send can still get done.
const CANNOT_SEND_FIX: &str = "Ask the user to do this step themselves, or use a tool that \
    cannot send: a shell confined by `[sandbox] kind = \"bwrap\"` with network off runs freely \
    here.";

#[cfg(test)]
mod tests {
    use super::*;

    const PRIVATE: Capabilities = Capabilities {
        private_data: true,
        ..Capabilities::NONE
    };
    const UNTRUSTED_CHOSEN: Capabilities = Capabilities {
        untrusted_input: true,
        egress: Egress::Chosen,
        ..Capabilities::NONE
    };
    const BLIND: Capabilities = Capabilities {
        egress: Egress::Blind,
        ..Capabilities::NONE
    };
    /// An unconfined shell: reads private data and sends where it is told.
    const READ_AND_SEND: Capabilities = Capabilities {
        private_data: true,
        egress: Egress::Chosen,
        destructive: true,
        ..Capabilities::NONE
    };

    /// A tool that is its capabilities and, if given, its send reason.
    struct Fake(&'static str, Capabilities, Option<&'static str>);

    #[async_trait::async_trait]
    impl Tool for Fake {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            ""
        }
        fn input_schema(&self) -> serde_json::Value {
            serde_json::json!({"type": "object"})
        }
        fn capabilities(&self) -> Capabilities {
            self.1
        }
        fn send_reason(&self) -> &str {
            self.2.unwrap_or(crate::tool::DEFAULT_SEND_REASON)
        }
        async fn call(
            &self,
            _: serde_json::Value,
            _: &crate::ToolCtx,
        ) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput::ok(""))
        }
    }

    /// The refusal, if the interlock refuses outright.
    fn interlock(t: Taint, name: &'static str, caps: Capabilities, strict: bool) -> Option<String> {
        refused(super::interlock(t, &Fake(name, caps, None), strict))
    }

    fn refused(verdict: InterlockVerdict) -> Option<String> {
        match verdict {
            InterlockVerdict::Refused(reason) => Some(reason),
            _ => None,
        }
    }

    #[test]
    fn the_refusal_gives_the_tools_own_reason() {
        let t = Taint {
            private_data: true,
            untrusted_input: true,
        };
        let default = interlock(t, "http_fetch", UNTRUSTED_CHOSEN, false).unwrap();
        assert!(
            default.contains("`http_fetch` sends data to a destination the model chooses"),
            "{default}"
        );
        let own = Fake(
            "browser_snapshot",
            UNTRUSTED_CHOSEN,
            Some("is marked open-world"),
        );
        let refusal = refused(super::interlock(t, &own, false)).unwrap();
        assert!(
            refusal.contains("`browser_snapshot` is marked open-world, and"),
            "{refusal}"
        );
        assert!(
            !refusal.contains("destination the model chooses"),
            "{refusal}"
        );
    }

    #[test]
    fn refusals_add_no_taint_but_errors_with_content_do() {
        let mut t = Taint::default();
        t.record(UNTRUSTED_CHOSEN, &ToolOutput::refusal("refused: loopback"));
        assert_eq!(t, Taint::default());
        let mut remote_404 = ToolOutput::external("not found");
        remote_404.is_error = true;
        t.record(UNTRUSTED_CHOSEN, &remote_404);
        assert!(t.untrusted_input);
        // `cat secret; exit 1`: an error, and still the secret.
        t.record(PRIVATE, &ToolOutput::err("sk-live-SECRET\n[exit code 1]"));
        assert!(t.private_data);
    }

    #[test]
    fn an_external_result_is_untrusted_whatever_the_tool_declared() {
        let mut t = Taint::default();
        t.record(PRIVATE, &ToolOutput::ok("local"));
        assert!(!t.untrusted_input);
        t.record(
            PRIVATE,
            &ToolOutput::external("a page read back from a spill"),
        );
        assert!(t.untrusted_input);
        assert!(t.armed());
    }

    #[test]
    fn chosen_sends_are_refused_only_when_armed() {
        let mut t = Taint::default();
        assert!(interlock(t, "http_fetch", UNTRUSTED_CHOSEN, false).is_none());
        t.record(PRIVATE, &ToolOutput::ok("secret"));
        assert!(interlock(t, "http_fetch", UNTRUSTED_CHOSEN, false).is_none());
        t.record(UNTRUSTED_CHOSEN, &ToolOutput::external("page"));
        assert!(interlock(t, "http_fetch", UNTRUSTED_CHOSEN, false).is_some());
        assert!(
            interlock(t, "web_search", BLIND, false).is_none(),
            "blind sends pass the interlock"
        );
        assert!(interlock(t, "fs_read", PRIVATE, false).is_none());
    }

    #[test]
    fn block_sends_after_private_refuses_blind_sends() {
        let mut t = Taint::default();
        assert!(interlock(t, "web_search", BLIND, true).is_none());
        t.record(PRIVATE, &ToolOutput::ok("secret"));
        assert!(interlock(t, "web_search", BLIND, true).is_some());
        assert!(interlock(t, "web_search", BLIND, false).is_none());
    }

    #[test]
    fn a_read_and_send_after_untrusted_content_needs_a_fresh_decision() {
        let shell = Fake("shell", READ_AND_SEND, None);
        let mut t = Taint::default();
        assert_eq!(super::interlock(t, &shell, false), InterlockVerdict::Clear);
        t.record(PRIVATE, &ToolOutput::ok("secret"));
        assert_eq!(
            super::interlock(t, &shell, false),
            InterlockVerdict::Clear,
            "private data alone: the model's own command, not an injection's"
        );
        let page = Taint {
            untrusted_input: true,
            ..Taint::default()
        };
        let InterlockVerdict::NeedsFreshDecision(refusal) = super::interlock(page, &shell, false)
        else {
            panic!("not asked afresh");
        };
        assert!(
            refusal
                .contains("`shell` sends data to a destination the model chooses; it also reads"),
            "{refusal}"
        );
        assert!(refusal.contains("[sandbox] kind = \"bwrap\""), "{refusal}");
        // An open-world MCP tool gets its own reason.
        let open = Fake("x__browse", READ_AND_SEND, Some("is marked open-world"));
        let InterlockVerdict::NeedsFreshDecision(refusal) = super::interlock(page, &open, false)
        else {
            panic!("not asked afresh");
        };
        assert!(
            refusal.contains("`x__browse` is marked open-world; it also reads"),
            "{refusal}"
        );
        // A send that reads nothing private is no trifecta by itself.
        assert_eq!(
            super::interlock(page, &Fake("f", UNTRUSTED_CHOSEN, None), false),
            InterlockVerdict::Clear
        );
        // Armed, it is refused outright like every chosen send.
        t.record(UNTRUSTED_CHOSEN, &ToolOutput::external("page"));
        assert!(refused(super::interlock(t, &shell, false)).is_some());
    }

    #[test]
    fn block_sends_after_private_refuses_a_read_and_send_as_the_first_call() {
        let shell = Fake("shell", READ_AND_SEND, None);
        let refusal = refused(super::interlock(Taint::default(), &shell, true)).unwrap();
        assert!(refusal.contains("reads private data itself"), "{refusal}");
        assert!(refusal.contains("block_sends_after_private"), "{refusal}");
        assert!(refusal.contains("[sandbox] kind = \"bwrap\""), "{refusal}");
        // A send that brings no private data still waits for it.
        assert!(interlock(Taint::default(), "web_search", BLIND, true).is_none());
    }
}
