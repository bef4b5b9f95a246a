use std::time::Duration;

use mecha_agent::{AnswerShape, DEFAULT_SUBAGENT_TURNS, Profile};

use super::tests::load;

#[test]
fn a_profile_is_read_whole() {
    let s = load(
        Some(
            r#"
[[subagent]]
name = "judge"
description = "Says whether a claim holds."
tools = ["fs_read", "fs_list"]
instructions = "Answer yes or no."
model = "small-model"
max_turns = 7
timeout_s = 90
trusted_output = true
answer_shape = ["yes", "no"]

[[subagent]]
name = "count"
description = "Counts."
tools = []
trusted_output = true
answer_shape = "number"

[[subagent]]
name = "free"
description = "Anything."
tools = ["todo"]
"#,
        ),
        None,
    )
    .unwrap();
    let judge = &s.subagents[0];
    assert_eq!(
        judge.profile,
        Profile {
            name: "judge".into(),
            description: "Says whether a claim holds.".into(),
            instructions: Some("Answer yes or no.".into()),
            max_turns: 7,
            timeout: Some(Duration::from_secs(90)),
            trusted: Some(AnswerShape::OneOf(vec!["yes".into(), "no".into()])),
        }
    );
    assert_eq!(judge.tools, ["fs_read", "fs_list"]);
    assert_eq!(judge.model.as_deref(), Some("small-model"));
    assert_eq!(judge.source, s.global_file);
    assert_eq!(s.subagents[1].profile.trusted, Some(AnswerShape::Number));
    assert!(s.subagents[1].tools.is_empty());
    // What a profile leaves out: the defaults.
    let free = &s.subagents[2].profile;
    assert_eq!(free.max_turns, DEFAULT_SUBAGENT_TURNS);
    assert_eq!(free.timeout, None);
    assert_eq!(free.trusted, None);
    assert_eq!(free.instructions, None);
    assert_eq!(s.subagents[2].model, None);
}

#[test]
fn a_profile_comes_after_the_profiles_it_names() {
    let s = load(
        Some(
            r#"
[[subagent]]
name = "lead"
description = "d"
tools = ["middle", "fs_read"]

[[subagent]]
name = "middle"
description = "d"
tools = ["leaf"]

[[subagent]]
name = "leaf"
description = "d"
tools = []

[[subagent]]
name = "alone"
description = "d"
tools = ["leaf"]
"#,
        ),
        None,
    )
    .unwrap();
    let order: Vec<&str> = s.subagents.iter().map(|p| p.name()).collect();
    assert_eq!(order, ["leaf", "middle", "lead", "alone"]);
}

/// Each refusal: the profile as written, and what the message must say
/// (the profile, the fix).
#[test]
fn every_refusal_names_the_profile_and_the_fix() {
    let profile = |body: &str| format!("[[subagent]]\n{body}\n");
    let long = "x".repeat(65);
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []\ntool = [\"fs_read\"]"),
            vec!["unknown field `tool`", "tools"],
        ),
        (
            profile("description = \"d\"\ntools = []"),
            vec!["[[subagent]] number 1 has no `name`", "name = \"research\""],
        ),
        (
            profile("name = \"r\"\ntools = []"),
            vec!["`r` has no `description`", "add one"],
        ),
        (
            profile("name = \"r\"\ndescription = \"  \"\ntools = []"),
            vec!["`r` has no `description`"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\""),
            vec!["`r` has no `tools`", "tools = [] for none"],
        ),
        (
            profile("name = \"my agent\"\ndescription = \"d\"\ntools = []"),
            vec!["\"my agent\" cannot be a tool name", "1 to 64"],
        ),
        (
            profile(&format!(
                "name = \"{long}\"\ndescription = \"d\"\ntools = []"
            )),
            vec![&long, "cannot be a tool name"],
        ),
        (
            profile("name = \"\"\ndescription = \"d\"\ntools = []"),
            vec!["\"\" cannot be a tool name"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []")
                + &profile("name = \"r\"\ndescription = \"e\"\ntools = []"),
            vec!["two [[subagent]] profiles are named `r`", "rename one"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = [\"fs_read\", \"r\"]"),
            vec!["`r` names itself", "remove `r` from its tools"],
        ),
        (
            profile("name = \"a\"\ndescription = \"d\"\ntools = [\"b\"]")
                + &profile("name = \"b\"\ndescription = \"d\"\ntools = [\"a\"]"),
            vec!["cycle: a → b → a", "remove one of these"],
        ),
        (
            profile("name = \"top\"\ndescription = \"d\"\ntools = [\"a\"]")
                + &profile("name = \"a\"\ndescription = \"d\"\ntools = [\"b\"]")
                + &profile("name = \"b\"\ndescription = \"d\"\ntools = [\"c\"]")
                + &profile("name = \"c\"\ndescription = \"d\"\ntools = [\"a\"]"),
            vec!["cycle: a → b → c → a"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = true"),
            vec![
                "`r` sets trusted_output = true without answer_shape",
                "add answer_shape",
            ],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []\nanswer_shape = \"number\""),
            vec![
                "`r` sets answer_shape without trusted_output = true",
                "add trusted_output = true, or drop answer_shape",
            ],
        ),
        (
            profile(
                "name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = false\nanswer_shape = \"boolean\"",
            ),
            vec!["`r` sets answer_shape without trusted_output = true"],
        ),
        (
            profile(
                "name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = true\nanswer_shape = \"text\"",
            ),
            vec!["`r`: answer_shape must be \"number\", \"boolean\" or a non-empty list"],
        ),
        (
            profile(
                "name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = true\nanswer_shape = []",
            ),
            vec!["`r`: answer_shape must be"],
        ),
        (
            profile(
                "name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = true\nanswer_shape = [\"yes\", \" no\"]",
            ),
            vec!["`r`: answer_shape must be", "without surrounding spaces"],
        ),
        (
            profile(
                "name = \"r\"\ndescription = \"d\"\ntools = []\ntrusted_output = true\nanswer_shape = [\"yes\", 1]",
            ),
            vec!["`r`: answer_shape must be"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []\nmax_turns = 0"),
            vec!["`r`: max_turns = 0", "use at least 1"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = []\ntimeout_s = 0"),
            vec!["`r`: timeout_s = 0", "use at least 1"],
        ),
        (
            profile("name = \"r\"\ndescription = \"d\"\ntools = [\"recall\"]"),
            vec![
                "`r` lists `recall`, which belongs to the parent's conversation",
                "remove `recall`",
            ],
        ),
    ];
    // Every case is tried, so a failure lists each refusal that is missing.
    let mut wrong = Vec::new();
    for (config, expected) in cases {
        let message = match load(Some(&config), None) {
            Ok(_) => "(accepted)".to_owned(),
            Err(e) => e.to_string(),
        };
        let missing: Vec<&str> = std::iter::once("config.toml")
            .chain(expected)
            .filter(|part| !message.contains(part))
            .collect();
        if !missing.is_empty() {
            wrong.push(format!("{config}\n-> {message}\nlacks {missing:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The tools a child may not have are named by what they are: these must
/// be the tools' own names.
#[test]
fn the_conversation_tools_are_the_real_ones() {
    use mecha_core::Tool;
    let recall = mecha_session::RecallTool::new("/nonexistent/session.jsonl".into());
    assert_eq!(
        super::subagents::CONVERSATION_TOOLS,
        [mecha_tools::Compact.name(), recall.name()]
    );
}

#[test]
fn a_project_cannot_add_a_profile_but_may_disable_one() {
    let global = "[[subagent]]\nname = \"research\"\ndescription = \"d\"\ntools = []\n";
    let project = "[[subagent]]\nname = \"mine\"\ndescription = \"d\"\ntools = [\"shell\"]\n";
    let s = load(Some(global), Some(project)).unwrap();
    let names: Vec<&str> = s.subagents.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        ["research"],
        "the user's profile stays, the project's is ignored"
    );
    let message = s.warnings.join("\n");
    assert!(
        message.contains("mecha.toml: [[subagent]] has no effect; your profiles stay"),
        "{message}"
    );
    assert!(message.contains("config.toml)"), "{message}");
    assert!(
        message.contains("[tools] disabled = [\"NAME\"]"),
        "{message}"
    );
    let s = load(Some(global), Some("[tools]\ndisabled = [\"research\"]\n")).unwrap();
    assert_eq!(s.subagents.len(), 1);
    assert!(!s.tool_filter(false).keeps_name("research"));
}
