//! Over random sequences of tool calls, a chosen send runs exactly when the
//! executions before its turn have not brought both private data and
//! untrusted content into the conversation, and one that reads private data
//! itself only while no untrusted content is there (nobody is asked afresh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use mecha_core::{Block, Capabilities, Egress, Registry, ToolOutput};
use proptest::prelude::*;
use serde_json::json;
use support::*;

/// How a stub's call ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ends {
    Ok,
    /// An error carrying content (`cat secret; exit 1`): still taints.
    Error,
    /// The harness's own refusal: adds nothing.
    Refused,
}

#[derive(Debug, Clone, Copy)]
struct Kind {
    name: &'static str,
    caps: Capabilities,
    ends: Ends,
}

const fn caps(private_data: bool, untrusted_input: bool, egress: Egress) -> Capabilities {
    Capabilities {
        private_data,
        untrusted_input,
        egress,
        destructive: false,
    }
}

const KINDS: [Kind; 10] = [
    kind_of("private_src", caps(true, false, Egress::None), Ends::Ok),
    kind_of(
        "private_errors",
        caps(true, false, Egress::None),
        Ends::Error,
    ),
    kind_of(
        "private_refused",
        caps(true, false, Egress::None),
        Ends::Refused,
    ),
    kind_of("untrusted_src", caps(false, true, Egress::None), Ends::Ok),
    kind_of(
        "untrusted_refused",
        caps(false, true, Egress::None),
        Ends::Refused,
    ),
    kind_of("chosen_sink", caps(false, false, Egress::Chosen), Ends::Ok),
    kind_of("fetch_like", caps(false, true, Egress::Chosen), Ends::Ok),
    kind_of("shell_like", caps(true, false, Egress::Chosen), Ends::Ok),
    kind_of("blind_sink", caps(false, false, Egress::Blind), Ends::Ok),
    kind_of("neutral", caps(false, false, Egress::None), Ends::Ok),
];

const fn kind_of(name: &'static str, caps: Capabilities, ends: Ends) -> Kind {
    Kind { name, caps, ends }
}

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for k in KINDS {
        r.register(Arc::new(Stub {
            name: k.name,
            caps: k.caps,
            read_only: true,
            reply: match k.ends {
                Ends::Ok => ToolOutput::ok("data"),
                Ends::Error => ToolOutput::err("data\n[exit code 1]"),
                Ends::Refused => ToolOutput::refusal("refused by a guard"),
            },
            log: Arc::clone(log),
        }))
        .unwrap();
    }
    r
}

fn kind(name: &str) -> Kind {
    *KINDS.iter().find(|k| k.name == name).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn chosen_sends_run_exactly_when_not_armed(
        script in prop::collection::vec(prop::collection::vec(0..KINDS.len(), 1..4), 1..8)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let log = Log::default();
        let dir = tempfile::tempdir().unwrap();
        let turns: Vec<Vec<Block>> = script
            .iter()
            .enumerate()
            .map(|(t, calls)| calls.iter().enumerate().map(|(i, &k)| call(&format!("{t}-{i}"), KINDS[k].name, json!({}))).collect())
            .collect();
        let agent = agent(Queue::new(turns), registry(&log), allow_all_gate(), dir.path());
        rt.block_on(agent.send(&mut session(), "go", &Recorder::default())).unwrap();

        let executions = log.lock().unwrap().clone();
        for (t, calls) in script.iter().enumerate() {
            let turn = t as u32 + 1;
            let before = executions.iter().filter(|(et, _, _)| *et < turn).map(|(_, n, _)| kind(n));
            let (mut private, mut untrusted) = (false, false);
            for k in before {
                if k.ends != Ends::Refused {
                    private |= k.caps.private_data;
                    untrusted |= k.caps.untrusted_input;
                }
            }
            let armed = private && untrusted;
            for &k in calls {
                if KINDS[k].caps.egress != Egress::Chosen {
                    continue;
                }
                let ran = executions.iter().filter(|(et, n, _)| *et == turn && n == KINDS[k].name).count();
                let asked = calls.iter().filter(|&&c| c == k).count();
                if armed {
                    prop_assert_eq!(ran, 0, "turn {}: {} ran while armed", turn, KINDS[k].name);
                } else if untrusted && KINDS[k].caps.is_one_call_trifecta() {
                    prop_assert_eq!(ran, 0, "turn {}: {} read and sent after untrusted content", turn, KINDS[k].name);
                } else {
                    prop_assert_eq!(ran, asked, "turn {}: {} refused while not armed", turn, KINDS[k].name);
                }
            }
        }
    }
}
