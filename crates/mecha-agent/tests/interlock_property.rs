//! Over random sequences of tool calls, a chosen send runs exactly when the
//! executions before its turn have not brought both private data and
//! untrusted content into the conversation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use mecha_core::{Block, Capabilities, Egress, Registry, ToolOutput};
use proptest::prelude::*;
use serde_json::json;
use support::*;

#[derive(Debug, Clone, Copy)]
struct Kind {
    name: &'static str,
    caps: Capabilities,
    fails: bool,
}

const fn caps(private_data: bool, untrusted_input: bool, egress: Egress) -> Capabilities {
    Capabilities {
        private_data,
        untrusted_input,
        egress,
        destructive: false,
    }
}

const KINDS: [Kind; 7] = [
    Kind {
        name: "private_src",
        caps: caps(true, false, Egress::None),
        fails: false,
    },
    Kind {
        name: "private_fails",
        caps: caps(true, false, Egress::None),
        fails: true,
    },
    Kind {
        name: "untrusted_src",
        caps: caps(false, true, Egress::None),
        fails: false,
    },
    Kind {
        name: "chosen_sink",
        caps: caps(false, false, Egress::Chosen),
        fails: false,
    },
    Kind {
        name: "fetch_like",
        caps: caps(false, true, Egress::Chosen),
        fails: false,
    },
    Kind {
        name: "blind_sink",
        caps: caps(false, false, Egress::Blind),
        fails: false,
    },
    Kind {
        name: "neutral",
        caps: caps(false, false, Egress::None),
        fails: false,
    },
];

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for k in KINDS {
        r.register(Arc::new(Stub {
            name: k.name,
            caps: k.caps,
            read_only: true,
            reply: if k.fails {
                ToolOutput::err("no such file")
            } else {
                ToolOutput::ok("data")
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
                if !k.fails {
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
                } else {
                    prop_assert_eq!(ran, asked, "turn {}: {} refused while not armed", turn, KINDS[k].name);
                }
            }
        }
    }
}
