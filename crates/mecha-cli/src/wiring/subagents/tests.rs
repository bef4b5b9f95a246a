use std::sync::Arc;

use mecha_agent::{Lineage, Runtime};
use mecha_core::{ModeApprover, PermissionMode, Rules, ToolCtx};
use mecha_provider::{Script, ScriptToolCall, ScriptTurn, ScriptedProvider};
use serde_json::json;

use super::register_subagents;
use crate::Failure;
use crate::config::Settings;
use crate::skills::SkillFlags;
use crate::wiring::{ServerStart, Toolbox, build_toolbox};

/// The toolbox of a run with `config` as the user's file and one skill,
/// `notes`, in the store; its subagents registered without a model.
fn toolbox(config: &str, flags: &[&str], plan: bool) -> Result<Toolbox, Failure> {
    toolbox_with(config, flags, plan, &|_| None).map(|(t, _)| t)
}

fn toolbox_with(
    config: &str,
    flags: &[&str],
    plan: bool,
    runtime: &dyn Fn(&crate::config::SubagentConfig) -> Option<Runtime>,
) -> Result<(Toolbox, tempfile::TempDir), Failure> {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join("config.toml"), config).unwrap();
    let skill = home.join("skills/notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes. Use when asked to.\n---\nWrite them down.\n",
    )
    .unwrap();
    let mut settings = Settings::load(&home, &ws)?;
    let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut toolbox = rt.block_on(build_toolbox(
        &mut settings,
        &flags,
        &SkillFlags::default(),
        plan,
        &ws,
        ServerStart::default(),
        Vec::new(),
    ))?;
    register_subagents(&mut toolbox, &settings.subagents, runtime)?;
    Ok((toolbox, tmp))
}

fn children(toolbox: &Toolbox) -> Vec<(&str, Vec<&str>)> {
    toolbox
        .children
        .iter()
        .map(|(name, tools)| (name.as_str(), tools.iter().map(String::as_str).collect()))
        .collect()
}

const PROFILES: &str = r#"
[tools]
disabled = ["shell"]

[[subagent]]
name = "reader"
description = "Reads."
tools = ["fs_read", "fs_list"]

[[subagent]]
name = "writer"
description = "Writes, with the shell."
tools = ["fs_read", "shell"]

[[subagent]]
name = "thinker"
description = "Thinks."
tools = []
"#;

/// A planning run keeps only read-only tools, and a profile that lists a
/// tool that changes things is not one, even when that tool was narrowed
/// away (the shell is disabled here).
#[test]
fn plan_mode_drops_a_profile_that_writes_as_configured() {
    let run = toolbox(PROFILES, &[], false).unwrap();
    assert_eq!(
        children(&run),
        [
            ("reader", vec!["fs_list", "fs_read"]),
            ("thinker", vec![]),
            ("writer", vec!["fs_read"]),
        ]
    );
    let plan = toolbox(PROFILES, &[], true).unwrap();
    assert_eq!(
        children(&plan),
        [("reader", vec!["fs_list", "fs_read"]), ("thinker", vec![])]
    );
    assert!(!plan.registry.contains("writer"));
    assert!(plan.registry.contains("reader"));
}

const NESTED: &str = r#"
[[subagent]]
name = "outer"
description = "Delegates."
tools = ["inner", "fs_read", "http_fetch"]

[[subagent]]
name = "inner"
description = "Lists."
tools = ["fs_list"]
"#;

/// A child gets only tools the run keeps: `--tool` and `disabled` narrow
/// what it gets, a profile it names included.
#[test]
fn a_child_never_gets_a_tool_the_run_does_not_have() {
    let all = toolbox(NESTED, &[], false).unwrap();
    assert_eq!(
        children(&all),
        [
            ("inner", vec!["fs_list"]),
            ("outer", vec!["fs_read", "http_fetch", "inner"]),
        ]
    );
    let narrowed = toolbox(NESTED, &["outer", "fs_read"], false).unwrap();
    assert_eq!(children(&narrowed), [("outer", vec!["fs_read"])]);
    let names: Vec<&str> = narrowed.registry.names().collect();
    assert_eq!(names, ["fs_read", "outer"]);
    let disabled = format!("[tools]\ndisabled = [\"inner\"]\n{NESTED}");
    let disabled = toolbox(&disabled, &[], false).unwrap();
    assert_eq!(
        children(&disabled),
        [("outer", vec!["fs_read", "http_fetch"])]
    );
}

#[test]
fn a_profile_may_not_take_a_tools_name_nor_list_a_tool_that_is_none() {
    let taken = "[[subagent]]\nname = \"shell\"\ndescription = \"d\"\ntools = []\n";
    let Err(Failure::Usage(message)) = toolbox(taken, &[], false) else {
        panic!("a profile named shell was taken");
    };
    assert!(
        message.contains("config.toml: [[subagent]] `shell` has the name of a tool"),
        "{message}"
    );
    assert!(message.contains("rename it"), "{message}");
    // Nor a name in an MCP server's namespace, which the server (failed
    // here) could announce later.
    let server = "[[mcp]]\nname = \"srv\"\ncommand = \"/nonexistent/srv\"\n\n[[subagent]]\nname = \"srv__find\"\ndescription = \"d\"\ntools = []\n";
    let Err(Failure::Usage(message)) = toolbox(server, &[], false) else {
        panic!("a profile in a server's namespace was taken");
    };
    assert!(
        message.contains("`srv__find` has the name of a tool"),
        "{message}"
    );
    // Disabled this run, the tool is still no typo.
    let narrowed = "[tools]\ndisabled = [\"shell\"]\n[[subagent]]\nname = \"r\"\ndescription = \"d\"\ntools = [\"shell\"]\n";
    assert_eq!(
        children(&toolbox(narrowed, &[], false).unwrap()),
        [("r", vec![])]
    );
    let typo = "[[subagent]]\nname = \"r\"\ndescription = \"d\"\ntools = [\"fs_raed\"]\n";
    let Err(Failure::Usage(message)) = toolbox(typo, &[], false) else {
        panic!("a misspelt tool was taken");
    };
    assert!(
        message.contains("`r` lists `fs_raed` in its tools, which is no tool"),
        "{message}"
    );
    assert!(
        message.contains("check the spelling (did you mean `fs_read`? the tools are: fs_edit"),
        "{message}"
    );
}

/// The child's state is its own: it writes a list in a fresh `todo` and
/// loads a skill into a fresh `skill`, and the parent's stay empty.
#[test]
fn a_child_plans_and_loads_skills_in_tools_of_its_own() {
    let child_turns = vec![
        ScriptTurn {
            tool_calls: vec![
                ScriptToolCall::new(
                    "todo",
                    json!({"items": [{"content": "the child's step", "status": "pending"}]}),
                ),
                ScriptToolCall::new("skill", json!({"name": "notes"})),
            ],
            ..ScriptTurn::default()
        },
        ScriptTurn {
            text: Some("planned".into()),
            ..ScriptTurn::default()
        },
    ];
    let provider = Arc::new(ScriptedProvider::new(Script { turns: child_turns }));
    let lineage = Arc::new(Lineage {
        mode: PermissionMode::Allow.into(),
        approver: Arc::new(ModeApprover(PermissionMode::Allow)),
        rules: Rules::compile(&[]).unwrap(),
        hook: None,
        block_sends_after_private: false,
        turn_budget: 16_384,
        project_instructions: None,
        journals: None,
        defer_over: None,
    });
    let runtime = |_: &crate::config::SubagentConfig| {
        Some(Runtime {
            provider: provider.clone(),
            lineage: Arc::clone(&lineage),
        })
    };
    let config =
        "[[subagent]]\nname = \"planner\"\ndescription = \"d\"\ntools = [\"todo\", \"skill\"]\n";
    let (toolbox, tmp) = toolbox_with(config, &[], false, &runtime).unwrap();
    let ctx = ToolCtx::new(&tmp.path().join("ws"), 16_384).unwrap();
    let planner = toolbox.registry.get("planner").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt
        .block_on(planner.call(json!({"task": "plan"}), &ctx))
        .unwrap();
    assert!(!out.is_error && out.content.contains("planned"), "{out:?}");
    let parent_todo = toolbox.registry.get("todo").unwrap();
    assert_eq!(
        parent_todo.echo(),
        None,
        "the child's plan reached the parent's todo"
    );
    let parent_skill = toolbox.registry.get("skill").unwrap();
    assert_eq!(
        parent_skill.saved_state(),
        None,
        "the child's skill reached the parent's"
    );
}
