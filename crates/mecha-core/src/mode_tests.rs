use async_trait::async_trait;
use serde_json::{Value, json};

use super::*;
use crate::{Capabilities, ToolCtx, ToolOutput};

/// A tool with the given read-only flag, capabilities and argument kinds.
struct Fake(bool, Capabilities, &'static [(&'static str, ArgKind)]);

#[async_trait]
impl Tool for Fake {
    fn name(&self) -> &str {
        "fake"
    }
    fn description(&self) -> &str {
        "d"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        self.0
    }
    fn capabilities(&self) -> Capabilities {
        self.1
    }
    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        self.2
    }
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::ok(""))
    }
}

const WRITES: &[(&str, ArgKind)] = &[("path", ArgKind::WritePath)];

fn writer() -> Fake {
    let destructive = Capabilities {
        destructive: true,
        ..Capabilities::NONE
    };
    Fake(false, destructive, WRITES)
}

fn shell() -> Fake {
    let caps = Capabilities {
        private_data: true,
        destructive: true,
        egress: Egress::Chosen,
        ..Capabilities::NONE
    };
    Fake(false, caps, &[])
}

#[test]
fn accept_edits_lets_only_workspace_writes_run_unasked() {
    use PermissionMode::*;
    assert!(AcceptEdits.runs_unasked(&writer()));
    assert!(!AcceptEdits.runs_unasked(&shell()));
    assert!(!Ask.runs_unasked(&writer()));
    // A writer that also sends is no mere edit.
    let sending = Fake(
        false,
        Capabilities {
            egress: Egress::Blind,
            ..Capabilities::NONE
        },
        WRITES,
    );
    assert!(!only_edits(&sending));
    assert!(Allow.runs_unasked(&shell()));
    assert!(Plan.runs_unasked(&Fake(true, Capabilities::NONE, &[])));
}

#[test]
fn plan_mode_offers_and_runs_only_read_only_tools() {
    use PermissionMode::*;
    let reader = Fake(true, Capabilities::NONE, &[]);
    assert!(Plan.offers(&reader));
    assert!(!Plan.offers(&writer()));
    assert!(!Plan.offers(&shell()));
    assert!(Ask.offers(&shell()) && ReadOnly.offers(&shell()));
    assert!(Plan.refusal(&writer()).unwrap().contains("plan mode"));
    assert!(ReadOnly.refusal(&writer()).unwrap().contains("read-only"));
    assert_eq!(Plan.refusal(&reader), None);
    assert_eq!(AcceptEdits.refusal(&shell()), None);
}

#[test]
fn the_switch_cycles_ask_accept_edits_plan_and_is_shared_by_its_clones() {
    let switch = ModeSwitch::from(PermissionMode::Ask);
    let reader = switch.clone();
    assert_eq!(switch.cycle(), Ok(PermissionMode::AcceptEdits));
    assert_eq!(reader.get(), PermissionMode::AcceptEdits);
    assert_eq!(switch.cycle(), Ok(PermissionMode::Plan));
    assert_eq!(switch.cycle(), Ok(PermissionMode::Ask));
    assert!(
        switch.set(PermissionMode::Allow).is_err(),
        "allow needs --yes"
    );
    assert_eq!(switch.get(), PermissionMode::Ask);
    // A run started with --yes has allow in its cycle.
    let yes = ModeSwitch::from(PermissionMode::Allow);
    assert_eq!(yes.cycle(), Ok(PermissionMode::Ask));
    for _ in 0..3 {
        yes.cycle().unwrap();
    }
    assert_eq!(yes.get(), PermissionMode::Allow);
    // A read-only run stays so.
    let fixed = ModeSwitch::from(PermissionMode::ReadOnly);
    assert!(fixed.cycle().unwrap_err().contains("read-only"));
    assert_eq!(fixed.get(), PermissionMode::ReadOnly);
}

#[test]
fn every_mode_is_spelt_as_config_spells_it() {
    for name in PermissionMode::names() {
        let mode = PermissionMode::from_name(name).unwrap();
        assert_eq!(mode.as_str(), name);
        let parsed: PermissionMode = serde_json::from_value(json!(name)).unwrap();
        assert_eq!(parsed, mode);
    }
    assert_eq!(PermissionMode::from_name("accept"), None);
}
