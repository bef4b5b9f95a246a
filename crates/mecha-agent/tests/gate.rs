//! The gate's order and the approval matrix; calls that cannot run come
//! back as results the model can fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{Gate, GateStage, GateVerdict, Hook, HookVerdict};
use mecha_core::{
    Approver, Capabilities, Decision, ModeApprover, PermissionMode, Registry, RuleAction,
    RuleConfig, Rules, Taint, Tool, ToolCall, ToolOutput,
};
use serde_json::{Value, json};
use support::*;

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for (name, read_only) in [("reader", true), ("writer", false)] {
        r.register(Arc::new(Stub {
            name,
            caps: Capabilities::NONE,
            read_only,
            reply: ToolOutput::ok(format!("{name} ran")),
            log: Arc::clone(log),
        }))
        .unwrap();
    }
    r
}

fn tool_call(name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        input,
        input_error: None,
    }
}

fn rules(action: Option<RuleAction>) -> Rules {
    let configs: Vec<RuleConfig> = action
        .into_iter()
        .flat_map(|action| {
            ["reader", "writer"].map(|tool| RuleConfig {
                tool: tool.into(),
                command: None,
                input: Default::default(),
                action,
            })
        })
        .collect();
    Rules::compile(&configs).unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Runs,
    Refused,
}

/// mode × read_only × --yes × rule action × a human present, against what
/// the spec says must happen.
#[tokio::test]
async fn approval_matrix() {
    use Expect::*;
    use PermissionMode::*;
    use RuleAction::{Allow as RAllow, Forbid, Prompt};
    // (mode, --yes, read_only tool, rule, human present) -> outcome
    #[rustfmt::skip]
    let table: Vec<(PermissionMode, bool, bool, Option<RuleAction>, bool, Expect)> = vec![
        // No rule: read-only tools always run; others depend on the mode.
        (Ask, false, true, None, false, Runs),
        (Ask, false, false, None, false, Refused),  // nobody to ask: no
        (Ask, false, false, None, true, Runs),      // the human says yes
        (Ask, true, false, None, false, Runs),      // --yes
        (ReadOnly, false, true, None, false, Runs),
        (ReadOnly, false, false, None, true, Refused),
        (ReadOnly, true, false, None, true, Refused), // --yes does not lift read-only
        (Allow, false, false, None, false, Runs),
        // Allow rules spare the question but never lift read-only.
        (Ask, false, false, Some(RAllow), false, Runs),
        (ReadOnly, false, false, Some(RAllow), true, Refused),
        (ReadOnly, false, true, Some(RAllow), false, Runs),
        // Prompt rules need a fresh human answer, even under --yes.
        (Ask, true, false, Some(Prompt), false, Refused),
        (Allow, false, true, Some(Prompt), false, Refused),
        (Ask, true, false, Some(Prompt), true, Runs),
        (ReadOnly, false, false, Some(Prompt), true, Refused), // a yes does not lift read-only
        // Forbid always wins.
        (Allow, true, true, Some(Forbid), true, Refused),
        (Ask, false, false, Some(Forbid), true, Refused),
    ];
    for (mode, yes, read_only, rule, human, expect) in table {
        let effective = if yes && mode == Ask { Allow } else { mode };
        let approver: Arc<dyn Approver> = if human {
            Arc::new(Scripted {
                mode: effective,
                answer: Decision::Allow,
                fresh: Some(Decision::Allow),
                asked: Mutex::new(Vec::new()),
            })
        } else {
            Arc::new(ModeApprover(effective))
        };
        let gate = Gate::new(effective, approver, rules(rule), None, false);
        let log: Log = Arc::default();
        let tool = if read_only { "reader" } else { "writer" };
        let verdict = gate
            .judge(
                &registry(&log),
                &unused_ctx(),
                Taint::default(),
                None,
                &tool_call(tool, json!({})),
                &support::Recorder::default(),
            )
            .await;
        let got = if matches!(verdict, GateVerdict::Allowed { .. }) {
            Runs
        } else {
            Refused
        };
        assert_eq!(
            got, expect,
            "mode {mode:?} yes {yes} read_only {read_only} rule {rule:?} human {human}: {verdict:?}"
        );
    }
}

#[tokio::test]
async fn the_non_interactive_refusal_names_the_tool_and_the_fix() {
    let gate = Gate::new(
        PermissionMode::Ask,
        Arc::new(ModeApprover(PermissionMode::Ask)),
        Rules::default(),
        None,
        false,
    );
    let verdict = gate
        .judge(
            &registry(&Log::default()),
            &unused_ctx(),
            Taint::default(),
            None,
            &tool_call("writer", json!({})),
            &support::Recorder::default(),
        )
        .await;
    // Nobody answered, so nobody declined: policy, not a user's correction.
    assert_eq!(
        verdict,
        GateVerdict::Blocked {
            stage: GateStage::Approval,
            reason: "`writer` needs approval and this run is non-interactive (use --yes to allow)"
                .into()
        }
    );
}

/// A hook that refuses everything and records that it was consulted.
struct Refuse(Mutex<u32>);

#[async_trait]
impl Hook for Refuse {
    async fn pre_tool(
        &self,
        _tool: &dyn Tool,
        _input: &Value,
        _call_id: &str,
        _events: &dyn mecha_agent::EventSink,
    ) -> HookVerdict {
        *self.0.lock().unwrap() += 1;
        HookVerdict::Block("policy says no".into())
    }
}

#[tokio::test]
async fn stages_run_in_order_interlock_hook_rule_approver() {
    let hook = Arc::new(Refuse(Mutex::new(0)));
    let asked = Arc::new(Scripted {
        mode: PermissionMode::Ask,
        answer: Decision::Allow,
        fresh: Some(Decision::Allow),
        asked: Mutex::new(Vec::new()),
    });
    let mut reg = Registry::new();
    reg.register(Arc::new(Stub {
        name: "send",
        caps: Capabilities {
            egress: mecha_core::Egress::Chosen,
            ..Capabilities::NONE
        },
        read_only: false,
        reply: ToolOutput::ok("sent"),
        log: Log::default(),
    }))
    .unwrap();
    let gate = Gate::new(
        PermissionMode::Ask,
        asked.clone(),
        rules(Some(RuleAction::Allow)),
        Some(hook.clone()),
        false,
    );
    let armed = Taint {
        private_data: true,
        untrusted_input: true,
    };
    // Armed: the interlock refuses before the hook is consulted.
    let v = gate
        .judge(
            &reg,
            &unused_ctx(),
            armed,
            None,
            &tool_call("send", json!({})),
            &support::Recorder::default(),
        )
        .await;
    assert!(
        matches!(
            v,
            GateVerdict::Blocked {
                stage: GateStage::Interlock,
                ..
            }
        ),
        "{v:?}"
    );
    assert_eq!(*hook.0.lock().unwrap(), 0);
    // Not armed: the hook refuses, and the allow rule cannot override it.
    let v = gate
        .judge(
            &reg,
            &unused_ctx(),
            Taint::default(),
            None,
            &tool_call("send", json!({})),
            &support::Recorder::default(),
        )
        .await;
    assert!(
        matches!(
            v,
            GateVerdict::Blocked {
                stage: GateStage::Hook,
                ..
            }
        ),
        "{v:?}"
    );
    assert!(
        asked.asked.lock().unwrap().is_empty(),
        "the approver was asked after a refusal"
    );
}

#[tokio::test]
async fn malformed_calls_are_results_the_model_can_fix() {
    let log = Log::default();
    let mut reg = registry(&log);
    reg.register(Arc::new(mecha_tools::FsRead)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bad_json = mecha_core::Block::ToolUse(ToolCall {
        id: "j".into(),
        name: "reader".into(),
        input: json!({}),
        input_error: Some("expected `,` at column 9 in {\"a\": 1 \"b\"}".into()),
    });
    let queue = Queue::new(vec![vec![
        call("u", "no_such_tool", json!({})),
        bad_json,
        call("s", "fs_read", json!({"path": 7})),
        call("ok", "reader", json!({})),
    ]]);
    let agent = agent(queue.clone(), reg, allow_all_gate(), dir.path());
    let outcome = agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert!(
        matches!(outcome, mecha_agent::Outcome::Answered { .. }),
        "the run went on"
    );
    let results = results_sent(&queue);
    assert!(results[0].1.contains("no tool named `no_such_tool`") && results[0].2);
    assert!(
        results[1].1.contains("not valid JSON") && results[1].2,
        "{}",
        results[1].1
    );
    assert!(
        results[2].1.contains("do not match its input schema") && results[2].2,
        "{}",
        results[2].1
    );
    assert_eq!(results[3], ("ok".into(), "reader ran".into(), false));
    assert_eq!(log.lock().unwrap().len(), 1, "only the valid call ran");
}

/// Approval is asked one call at a time in call order; results come back
/// in call order whatever order the calls finish in.
#[tokio::test]
async fn approval_is_sequential_and_results_keep_call_order() {
    let log = Log::default();
    let approver = Arc::new(Scripted {
        mode: PermissionMode::Ask,
        answer: Decision::Allow,
        fresh: None,
        asked: Mutex::new(Vec::new()),
    });
    let mut reg = Registry::new();
    for name in ["w1", "w2", "w3"] {
        reg.register(Arc::new(Stub {
            name,
            caps: Capabilities::NONE,
            read_only: false,
            reply: ToolOutput::ok(name),
            log: Arc::clone(&log),
        }))
        .unwrap();
    }
    let gate = Gate::new(
        PermissionMode::Ask,
        approver.clone(),
        Rules::default(),
        None,
        false,
    );
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![vec![
        call("3", "w3", json!({})),
        call("1", "w1", json!({})),
        call("2", "w2", json!({})),
    ]]);
    let agent = agent(queue.clone(), reg, gate, dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(*approver.asked.lock().unwrap(), ["w3", "w1", "w2"]);
    let ids: Vec<String> = results_sent(&queue).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, ["3", "1", "2"]);
}

/// Four calls that each wait for all four to have started: only concurrent
/// execution can finish.
#[tokio::test]
async fn one_turns_calls_run_concurrently() {
    struct Rendezvous(Arc<tokio::sync::Barrier>);
    #[async_trait]
    impl Tool for Rendezvous {
        fn name(&self) -> &str {
            "meet"
        }
        fn description(&self) -> &str {
            "waits for its siblings"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn read_only(&self) -> bool {
            true
        }
        async fn call(
            &self,
            _input: Value,
            _ctx: &mecha_core::ToolCtx,
        ) -> anyhow::Result<ToolOutput> {
            self.0.wait().await;
            Ok(ToolOutput::ok("met"))
        }
    }
    let mut reg = Registry::new();
    reg.register(Arc::new(Rendezvous(Arc::new(tokio::sync::Barrier::new(4)))))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        (0..4)
            .map(|i| call(&i.to_string(), "meet", json!({})))
            .collect(),
    ]);
    let agent = agent(queue.clone(), reg, allow_all_gate(), dir.path());
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        agent.send(&mut session(), "go", &Recorder::default()),
    )
    .await
    .expect("calls ran one after another")
    .unwrap();
    assert!(results_sent(&queue).iter().all(|r| r.1 == "met"));
}

#[tokio::test]
async fn the_turn_limit_ends_the_run_with_an_outcome() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let turns = (0..30)
        .map(|i| vec![call(&i.to_string(), "reader", json!({}))])
        .collect();
    let agent = agent(
        Queue::new(turns),
        registry(&log),
        allow_all_gate(),
        dir.path(),
    );
    let outcome = agent
        .send(&mut session(), "loop forever", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(outcome, mecha_agent::Outcome::TurnLimit { turns: 20 });
}

/// Four real `sleep 1` shell calls in one turn take about one second, not
/// four. The bound is loose on purpose: it separates concurrent from
/// sequential, and leaves timing to the benchmark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_sleeps_in_one_turn_take_about_a_second() {
    let mut reg = Registry::new();
    reg.register(Arc::new(mecha_tools::Shell::new(
        mecha_tools::ShellConfig::default(),
    )))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        (0..4)
            .map(|i| call(&i.to_string(), "shell", json!({"command": "sleep 1"})))
            .collect(),
    ]);
    let agent = agent(queue.clone(), reg, allow_all_gate(), dir.path());
    let started = std::time::Instant::now();
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_millis(2500),
        "took {took:?}: the calls did not overlap"
    );
    assert_eq!(results_sent(&queue).len(), 4);
}

/// A hook that always answers the same.
struct Answers(HookVerdict);

#[async_trait]
impl Hook for Answers {
    async fn pre_tool(
        &self,
        _tool: &dyn Tool,
        _input: &Value,
        _call_id: &str,
        _events: &dyn mecha_agent::EventSink,
    ) -> HookVerdict {
        self.0.clone()
    }
}

#[tokio::test]
async fn a_hooks_ask_needs_a_fresh_decision_and_its_allow_is_no_approval() {
    let log = Log::default();
    let reg = registry(&log);
    let judge = |gate: Gate| {
        let reg = reg.clone();
        async move {
            gate.judge(
                &reg,
                &unused_ctx(),
                Taint::default(),
                None,
                &tool_call("writer", json!({})),
                &support::Recorder::default(),
            )
            .await
        }
    };
    let ask = || Some(Arc::new(Answers(HookVerdict::Ask("a deploy".into()))) as Arc<dyn Hook>);
    // --yes and an allow rule: nobody to ask, so refused.
    let yes: Arc<dyn Approver> = Arc::new(ModeApprover(PermissionMode::Allow));
    let gate = Gate::new(
        PermissionMode::Allow,
        yes,
        rules(Some(RuleAction::Allow)),
        ask(),
        false,
    );
    let v = judge(gate).await;
    let GateVerdict::Blocked {
        stage: GateStage::Hook,
        reason,
    } = &v
    else {
        panic!("{v:?}");
    };
    assert!(
        reason.contains("fresh human decision") && reason.contains("a deploy"),
        "{reason}"
    );
    // At a terminal: asked once, afresh, and the answer decides.
    let person = Arc::new(Scripted {
        mode: PermissionMode::Ask,
        answer: Decision::Deny("no".into()),
        fresh: Some(Decision::Allow),
        asked: Mutex::new(Vec::new()),
    });
    let gate = Gate::new(
        PermissionMode::Ask,
        person.clone(),
        rules(None),
        ask(),
        false,
    );
    assert_eq!(
        judge(gate).await,
        GateVerdict::Allowed {
            stage: GateStage::Hook
        }
    );
    assert_eq!(*person.asked.lock().unwrap(), ["hook:writer"]);
    // A forbid rule still forbids what a hook asks about.
    let gate = Gate::new(
        PermissionMode::Ask,
        person.clone(),
        rules(Some(RuleAction::Forbid)),
        ask(),
        false,
    );
    assert!(matches!(
        judge(gate).await,
        GateVerdict::Blocked {
            stage: GateStage::Rule,
            ..
        }
    ));
    // `allow` is no objection: a prompt rule and the approver still decide.
    let pass = || Some(Arc::new(Answers(HookVerdict::Pass)) as Arc<dyn Hook>);
    let nobody: Arc<dyn Approver> = Arc::new(ModeApprover(PermissionMode::Ask));
    let gate = Gate::new(
        PermissionMode::Ask,
        Arc::clone(&nobody),
        rules(None),
        pass(),
        false,
    );
    assert!(matches!(
        judge(gate).await,
        GateVerdict::Blocked {
            stage: GateStage::Approval,
            ..
        }
    ));
    let gate = Gate::new(
        PermissionMode::Allow,
        Arc::new(ModeApprover(PermissionMode::Allow)),
        rules(Some(RuleAction::Prompt)),
        pass(),
        false,
    );
    assert!(matches!(
        judge(gate).await,
        GateVerdict::Blocked {
            stage: GateStage::Rule,
            ..
        }
    ));
}
