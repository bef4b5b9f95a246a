//! `[[subagent]]` profiles through the real binary: `mecha tools` lists
//! each with the capabilities derived from the tools its child gets,
//! narrowing removes them like any tool, and every invalid profile stops
//! mecha before anything runs (exit 2), naming the profile and the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use assert_cmd::Command;
use common::{Env, env};
use serde_json::{Value, json};

fn mecha(e: &Env, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("mecha")
        .unwrap()
        .env("MECHA_HOME", &e.home)
        .env_remove("MECHA_LOG")
        .current_dir(&e.ws)
        .args(args)
        .assert()
}

fn with_config(config: &str) -> Env {
    let e = env();
    std::fs::write(e.home.join("config.toml"), config).unwrap();
    e
}

/// `mecha tools --json`, by tool name.
fn listing(e: &Env, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["tools", "--json"];
    args.extend_from_slice(extra);
    let out = mecha(e, &args).success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    v["tools"].as_array().unwrap().clone()
}

fn named<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

fn caps(private: bool, untrusted: bool, egress: &str, destructive: bool) -> Value {
    json!({"private_data": private, "untrusted_input": untrusted, "egress": egress, "destructive": destructive})
}

/// The spec's derivation, for several mixes: private if any tool is,
/// untrusted if any is (unless answers must earn trust), the highest send
/// class, destructive if any is, read-only if all are.
#[test]
fn each_profile_is_listed_with_the_capabilities_of_its_tools() {
    let config = r#"
[[subagent]]
name = "reader"
description = "Reads the workspace."
tools = ["fs_read", "fs_list"]

[[subagent]]
name = "operator"
description = "Runs commands."
tools = ["fs_read", "shell"]

[[subagent]]
name = "fetcher"
description = "Fetches pages."
tools = ["http_fetch"]

[[subagent]]
name = "thinker"
description = "Thinks, with no tools."
tools = []

[[subagent]]
name = "judge"
description = "Says yes or no about a page."
tools = ["http_fetch", "fs_read"]
trusted_output = true
answer_shape = ["yes", "no"]

[[subagent]]
name = "lead"
description = "Delegates to the reader and fetches."
tools = ["reader", "http_fetch"]
"#;
    let e = with_config(config);
    let tools = listing(&e, &[]);
    // (name, its tools, read_only, capabilities, refused once armed)
    let table = [
        (
            "reader",
            json!(["fs_list", "fs_read"]),
            true,
            caps(true, false, "none", false),
            false,
        ),
        (
            "operator",
            json!(["fs_read", "shell"]),
            false,
            caps(true, false, "chosen", true),
            true,
        ),
        (
            "fetcher",
            json!(["http_fetch"]),
            true,
            caps(false, true, "chosen", false),
            true,
        ),
        (
            "thinker",
            json!([]),
            true,
            caps(false, false, "none", false),
            false,
        ),
        (
            "judge",
            json!(["fs_read", "http_fetch"]),
            true,
            caps(true, false, "chosen", false),
            true,
        ),
        (
            "lead",
            json!(["http_fetch", "reader"]),
            true,
            caps(true, true, "chosen", false),
            true,
        ),
    ];
    for (name, given, read_only, capabilities, armed) in table {
        let tool = named(&tools, name).unwrap_or_else(|| panic!("{name} missing: {tools:#?}"));
        assert_eq!(tool["source"], "subagent", "{name}");
        assert_eq!(tool["tools"], given, "{name}");
        assert_eq!(tool["read_only"], read_only, "{name}");
        assert_eq!(tool["capabilities"], capabilities, "{name}");
        assert_eq!(tool["refused_when_armed"], armed, "{name}");
    }
    assert_eq!(named(&tools, "fs_read").unwrap()["source"], "builtin");
    // The listing for people shows them apart, with what each child gets.
    let out = mecha(&e, &["tools"]).success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("subagents (6):"), "{text}");
    assert!(text.contains("tools: fs_list, fs_read\n"), "{text}");
    assert!(text.contains("tools: no tools\n"), "{text}");
    let builtin = text.split("subagents (6):").next().unwrap();
    assert!(!builtin.contains("reader"), "{text}");
}

const RESEARCH: &str = r#"
[[subagent]]
name = "research"
description = "Reads and fetches."
tools = ["fs_read", "http_fetch"]
"#;

/// A profile is narrowed like any tool, and its child only gets the tools
/// the run keeps.
#[test]
fn tool_flags_and_disabled_remove_a_profile_like_any_tool() {
    let e = with_config(RESEARCH);
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(named(&listing(&e, &[]), "research").is_some());
    assert_eq!(names(&listing(&e, &["--tool", "fs_read"])), ["fs_read"]);
    // Kept alone, it keeps none of its tools: the run does not have them.
    let alone = listing(&e, &["--tool", "research"]);
    assert_eq!(names(&alone), ["research"]);
    assert_eq!(alone[0]["tools"], json!([]));
    assert_eq!(alone[0]["capabilities"], caps(false, false, "none", false));
    let partly = listing(&e, &["--tool", "research", "--tool", "fs_read"]);
    assert_eq!(
        named(&partly, "research").unwrap()["tools"],
        json!(["fs_read"])
    );
    // The user's own `disabled`, and a project's.
    let e = with_config(&format!("[tools]\ndisabled = [\"research\"]\n{RESEARCH}"));
    assert!(named(&listing(&e, &[]), "research").is_none());
    let e = with_config(RESEARCH);
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[tools]\ndisabled = [\"research\"]\n",
    )
    .unwrap();
    assert!(named(&listing(&e, &[]), "research").is_none());
    // No warning that `research` is no tool: it is one.
    let out = mecha(&e, &["tools", "--json"]).success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(!stderr.contains("research"), "{stderr}");
}

/// Every invalid profile refuses to start, exit 2, saying which and how to
/// fix it.
#[test]
fn each_invalid_profile_stops_mecha_with_its_fix() {
    let profile =
        |body: &str| format!("[[subagent]]\nname = \"research\"\ndescription = \"d\"\n{body}\n");
    let cases = [
        (
            profile("tools = []\ntool = [\"fs_read\"]"),
            "unknown field `tool`",
        ),
        (
            profile("tools = [\"fs_raed\"]"),
            "`research` lists `fs_raed` in its tools, which is no tool: check the spelling",
        ),
        (
            "[[subagent]]\nname = \"shell\"\ndescription = \"d\"\ntools = []\n".to_owned(),
            "`shell` has the name of a tool the run already has, or may get from an MCP server: the profile becomes a tool of that name, so rename it",
        ),
        (
            profile("tools = [\"research\"]"),
            "`research` names itself in `tools`",
        ),
        (
            profile("tools = [\"helper\"]")
                + "[[subagent]]\nname = \"helper\"\ndescription = \"d\"\ntools = [\"research\"]\n",
            "cycle: research → helper → research",
        ),
        (
            profile("tools = []\ntrusted_output = true"),
            "`research` sets trusted_output = true without answer_shape",
        ),
        (
            profile("tools = []\nanswer_shape = \"number\""),
            "`research` sets answer_shape without trusted_output = true",
        ),
        (
            profile("tools = []\nmax_turns = 0"),
            "`research`: max_turns = 0",
        ),
        (
            profile("tools = []\ntimeout_s = 0"),
            "`research`: timeout_s = 0",
        ),
        (
            profile(""),
            "`research` has no `tools`: list exactly the tools the child may use",
        ),
    ];
    // Every case is tried, so a failure lists each refusal that is missing.
    let mut wrong = Vec::new();
    for (config, expected) in cases {
        let e = with_config(&config);
        let out = mecha(&e, &["tools"]);
        let output = out.get_output();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() != Some(2)
            || !stderr.contains(expected)
            || !output.stdout.is_empty()
        {
            wrong.push(format!(
                "{config}\n-> {:?}: {stderr}\nwanted {expected:?}",
                output.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Config that names tools by name reaches a profile too: `force` widens
/// its capabilities (a destructive one is no longer read-only), and a
/// `[[rule]]` for it is no typo.
#[test]
fn force_and_rules_name_a_profile_like_any_tool() {
    let e = with_config(&format!(
        "[tools.research]\nforce = {{ destructive = true }}\n\n[[rule]]\ntool = \"research\"\naction = \"prompt\"\n{RESEARCH}"
    ));
    let out = mecha(&e, &["tools", "--json"]).success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(!stderr.contains("research"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let tools = v["tools"].as_array().unwrap();
    let research = named(tools, "research").unwrap();
    assert_eq!(research["capabilities"], caps(true, true, "chosen", true));
    assert_eq!(research["read_only"], false);
    assert_eq!(research["forced"]["destructive"], true, "{research:#}");
}
