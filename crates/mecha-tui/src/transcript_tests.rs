#![allow(clippy::unwrap_used)]

use mecha_agent::{Event, GateStage, GateVerdict, HookSaid, RunEnd};
use mecha_core::{StopReason, Taint, Usage};
use serde_json::json;

use super::*;

fn text(t: &str) -> Event {
    Event::Text { text: t.into() }
}

fn call(id: &str, name: &str) -> Event {
    Event::ToolCall {
        id: id.into(),
        name: name.into(),
        input: json!({"command": "ls"}),
        confined: None,
    }
}

fn gate(id: &str, decision: GateVerdict) -> Event {
    Event::Gate {
        id: id.into(),
        name: "shell".into(),
        decision,
    }
}

fn result(id: &str, is_error: bool, summary: &str) -> Event {
    Event::ToolResult {
        id: id.into(),
        name: "shell".into(),
        is_error,
        bytes: 42,
        summary: summary.into(),
        excerpt: mecha_agent::Excerpt {
            head: summary.into(),
            rest: 0,
        },
    }
}

fn final_with(taint: Taint, end: RunEnd) -> Event {
    Event::Final {
        text: String::new(),
        end,
        turns: 1,
        usage: Usage::default(),
        taint,
    }
}

fn fed(events: &[Event]) -> Transcript {
    let mut t = Transcript::new();
    for e in events {
        t.apply(e);
    }
    t
}

fn tool(t: &Transcript, at: usize) -> &ToolEntry {
    match &t.entries()[at] {
        Entry::Tool(tool) => tool,
        other => panic!("entry {at} is not a call: {other:?}"),
    }
}

#[test]
fn streamed_text_accumulates_into_one_answer_until_something_else_comes() {
    let t = fed(&[text("Hel"), text("lo"), call("1", "shell"), text("Done")]);
    assert_eq!(
        t.entries()[0],
        Entry::Answer {
            text: "Hello".into(),
            streaming: false
        }
    );
    assert_eq!(
        t.entries()[2],
        Entry::Answer {
            text: "Done".into(),
            streaming: true
        }
    );
    let t = fed(&[
        text("Done"),
        final_with(Taint::default(), RunEnd::Answered(StopReason::EndTurn)),
    ]);
    assert_eq!(
        t.entries(),
        [Entry::Answer {
            text: "Done".into(),
            streaming: false
        }]
    );
}

#[test]
fn a_call_is_one_entry_whose_status_follows_the_gate_and_the_result() {
    let mut t = fed(&[call("1", "shell")]);
    assert_eq!(tool(&t, 0).status, ToolStatus::Waiting);
    t.apply(&gate(
        "1",
        GateVerdict::Allowed {
            stage: GateStage::Approval,
        },
    ));
    assert!(matches!(tool(&t, 0).status, ToolStatus::Running { .. }));
    assert!(t.running());
    t.apply(&result("1", false, "file.txt"));
    assert_eq!(t.entries().len(), 1);
    assert_eq!(
        tool(&t, 0).status,
        ToolStatus::Done {
            bytes: 42,
            summary: "file.txt".into()
        }
    );
    let t = fed(&[
        call("2", "shell"),
        gate(
            "2",
            GateVerdict::Allowed {
                stage: GateStage::Rule,
            },
        ),
        result("2", true, "exit 1"),
    ]);
    assert_eq!(
        tool(&t, 0).status,
        ToolStatus::Failed {
            summary: "exit 1".into()
        }
    );
}

#[test]
fn a_refusal_keeps_its_stage_when_the_refusal_result_follows() {
    let t = fed(&[
        call("1", "http_fetch"),
        gate(
            "1",
            GateVerdict::Blocked {
                stage: GateStage::Interlock,
                reason: "refused by mecha's interlock".into(),
            },
        ),
        result("1", true, "refused by mecha's interlock"),
        call("2", "shell"),
        gate(
            "2",
            GateVerdict::Denied {
                stage: GateStage::Approval,
                reason: "the user said no".into(),
            },
        ),
    ]);
    assert_eq!(
        tool(&t, 0).status,
        ToolStatus::Refused {
            stage: GateStage::Interlock,
            by_user: false,
            reason: "refused by mecha's interlock".into()
        }
    );
    assert!(matches!(
        tool(&t, 1).status,
        ToolStatus::Refused {
            stage: GateStage::Approval,
            by_user: true,
            ..
        }
    ));
}

#[test]
fn progress_nests_under_its_own_call_and_keeps_the_latest() {
    let mut events = vec![call("a", "agent"), call("b", "shell")];
    for i in 0..20 {
        events.push(Event::ToolProgress {
            id: "a".into(),
            name: "agent".into(),
            message: format!("step {i}"),
        });
    }
    let t = fed(&events);
    let sub = tool(&t, 0);
    assert_eq!(sub.progress.len(), PROGRESS_KEPT);
    assert_eq!(sub.progress.last().unwrap(), "step 19");
    assert!(tool(&t, 1).progress.is_empty());
}

#[test]
fn hooks_compactions_and_failed_runs_become_notices() {
    let t = fed(&[
        Event::Hook {
            event: "pre_tool".into(),
            command: "guard.sh".into(),
            tool: Some("shell".into()),
            id: Some("1".into()),
            verdict: HookSaid::Block,
            reason: Some("no rm".into()),
            context: None,
            message: None,
            failure: None,
            elapsed_ms: 3,
        },
        Event::Compacted {
            turn: 4,
            tokens_before: 90_000,
            tokens_after: 12_000,
            messages_before: 40,
            messages_after: 6,
        },
        final_with(
            Taint::default(),
            RunEnd::Stopped {
                why: mecha_agent::EarlyStop::Interrupted,
                error: "interrupted".into(),
            },
        ),
    ]);
    let notices: Vec<_> = t
        .entries()
        .iter()
        .map(|e| match e {
            Entry::Notice { kind, text } => (*kind, text.as_str()),
            other => panic!("not a notice: {other:?}"),
        })
        .collect();
    assert_eq!(
        notices[0],
        (
            NoticeKind::Hook,
            "hook `guard.sh` (pre_tool on `shell`): refused: no rm"
        )
    );
    assert_eq!(notices[1].0, NoticeKind::Compaction);
    assert!(notices[1].1.contains("~90000 → ~12000"), "{}", notices[1].1);
    assert_eq!(notices[2], (NoticeKind::Error, "interrupted"));
}

#[test]
fn the_interlock_state_changes_when_a_result_brings_taint_mid_run() {
    let private = Taint {
        private_data: true,
        untrusted_input: false,
    };
    let mut t = fed(&[
        call("1", "fs_read"),
        gate(
            "1",
            GateVerdict::Allowed {
                stage: GateStage::Rule,
            },
        ),
    ]);
    t.apply(&result("1", false, "secret"));
    assert_eq!(tool(&t, 0).output.head, "secret", "kept to show on demand");
    assert!(!t.taint().private_data);
    let before = t.revision();
    t.apply(&Event::Tainted { taint: private });
    assert!(t.taint().private_data, "before the run ends");
    assert!(t.revision() > before, "the status line is drawn again");
}

#[test]
fn a_new_conversation_shows_its_own_sessions_taint() {
    let private = Taint {
        private_data: true,
        untrusted_input: false,
    };
    let mut t = fed(&[final_with(private, RunEnd::Answered(StopReason::EndTurn))]);
    t.begin_conversation(Taint::default());
    assert!(!t.taint().private_data, "a fresh session holds nothing");
    t.begin_conversation(private);
    assert!(t.taint().private_data, "a resumed one holds what it held");
}

#[test]
fn taint_accumulates_over_runs_and_usage_is_the_latest_request() {
    let private = Taint {
        private_data: true,
        untrusted_input: false,
    };
    let untrusted = Taint {
        private_data: false,
        untrusted_input: true,
    };
    let answered = || RunEnd::Answered(StopReason::EndTurn);
    let t = fed(&[
        Event::Usage {
            turn: 1,
            usage: Usage {
                input_tokens: 1000,
                output_tokens: 50,
                cache_read_tokens: 9000,
                cache_write_tokens: 0,
            },
        },
        final_with(private, answered()),
        final_with(untrusted, answered()),
    ]);
    assert!(t.taint().armed());
    assert_eq!(t.context_tokens(), 10_050);
}

#[test]
fn a_compaction_leaves_the_context_at_its_estimate_until_the_next_request() {
    let usage = |input_tokens| Event::Usage {
        turn: 1,
        usage: Usage {
            input_tokens,
            ..Usage::default()
        },
    };
    let mut t = fed(&[
        usage(60_000),
        Event::Compacted {
            turn: 2,
            tokens_before: 60_000,
            tokens_after: 4_200,
            messages_before: 30,
            messages_after: 6,
        },
    ]);
    assert_eq!(t.context_tokens(), 4_200);
    t.apply(&usage(5_000));
    assert_eq!(t.context_tokens(), 5_000);
}

#[test]
fn every_change_moves_the_revision() {
    let mut t = Transcript::new();
    let before = t.revision();
    t.apply(&text("a"));
    let after_text = t.revision();
    assert_ne!(before, after_text);
    t.apply(&call("1", "shell"));
    t.toggle_details();
    assert!(tool(&t, 1).expanded);
    assert_ne!(t.revision(), after_text);
}

#[test]
fn an_interrupt_ends_every_call_still_waiting_or_running() {
    let mut t = Transcript::new();
    t.apply(&call("1", "shell"));
    t.apply(&call("2", "shell"));
    t.apply(&gate(
        "2",
        GateVerdict::Allowed {
            stage: GateStage::Approval,
        },
    ));
    t.interrupted();
    let statuses: Vec<&ToolStatus> = t
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Tool(tool) => Some(&tool.status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 2);
    for status in statuses {
        assert!(
            matches!(status, ToolStatus::Failed { summary } if summary.contains("interrupted")),
            "{status:?}"
        );
    }
}
