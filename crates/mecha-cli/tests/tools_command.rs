//! `mecha tools`, run as a user runs it: the real binary, a temp MECHA_HOME
//! and workspace, no provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use assert_cmd::Command;
use common::{Env, env};
use serde_json::{Value, json};

/// `mecha` with the test's MECHA_HOME and workspace, no provider.
trait Tools {
    fn offline(&self, args: &[&str]) -> assert_cmd::assert::Assert;
    fn offline_stdout(&self, args: &[&str]) -> String;
}

impl Tools for Env {
    fn offline(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        Command::cargo_bin("mecha")
            .unwrap()
            .env("MECHA_HOME", &self.home)
            .env_remove("MECHA_LOG")
            .current_dir(&self.ws)
            .args(args)
            .assert()
    }

    fn offline_stdout(&self, args: &[&str]) -> String {
        let out = self.offline(args).success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    }
}

/// The spec's table of built-ins: read_only and declared capabilities.
#[test]
fn json_matches_the_spec_capability_table() {
    let e = env();
    let listing: Value = serde_json::from_str(&e.offline_stdout(&["tools", "--json"])).unwrap();
    assert_eq!(listing["servers"], json!([]), "{listing:#}");
    let tools = &listing["tools"];
    let caps = |private: bool, untrusted: bool, egress: &str, destructive: bool| json!({"private_data": private, "untrusted_input": untrusted, "egress": egress, "destructive": destructive});
    let expected = [
        ("fs_edit", false, caps(false, false, "none", true)),
        ("fs_list", true, caps(true, false, "none", false)),
        ("fs_read", true, caps(true, false, "none", false)),
        ("fs_write", false, caps(false, false, "none", true)),
        ("http_fetch", true, caps(false, true, "chosen", false)),
        ("shell", false, caps(true, false, "chosen", true)),
        ("todo", true, caps(false, false, "none", false)),
    ];
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), expected.len(), "{tools:#?}");
    for (tool, (name, read_only, capabilities)) in tools.iter().zip(expected) {
        assert_eq!(tool["name"], name);
        assert_eq!(tool["read_only"], read_only, "{name}");
        assert_eq!(tool["capabilities"], capabilities, "{name}");
    }
}

#[test]
fn schema_is_sorted_and_byte_identical_across_runs() {
    let e = env();
    let first = e.offline_stdout(&["tools", "--schema"]);
    let second = e.offline_stdout(&["tools", "--schema"]);
    assert_eq!(first, second);
    let defs: Value = serde_json::from_str(&first).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for def in defs.as_array().unwrap() {
        assert_eq!(def["input_schema"]["type"], "object", "{def}");
        assert!(def["description"].as_str().unwrap().len() > 20, "{def}");
    }
    assert!(
        first.len() < 12 * 1024,
        "the built-in tool list is {} bytes",
        first.len()
    );
}

#[test]
fn human_listing_names_the_sandbox_and_every_tool() {
    let e = env();
    let text = e.offline_stdout(&["tools"]);
    assert!(text.starts_with("sandbox: none"), "{text}");
    for name in [
        "fs_read",
        "fs_list",
        "fs_write",
        "fs_edit",
        "shell",
        "http_fetch",
        "todo",
    ] {
        assert!(
            text.contains(&format!("  {name} ")),
            "{name} missing: {text}"
        );
    }
}

#[test]
fn config_then_project_then_flag_each_narrow() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[tools]\ndisabled = [\"shell\"]\n",
    )
    .unwrap();
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[tools]\nenabled = [\"fs_read\", \"fs_list\", \"shell\"]\n",
    )
    .unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let v: Value = serde_json::from_str(&e.offline_stdout(args)).unwrap();
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&["tools", "--json"]), ["fs_list", "fs_read"]);
    assert_eq!(
        names(&["tools", "--json", "--tool", "fs_read"]),
        ["fs_read"]
    );
    // --tool cannot bring back what config took away.
    assert!(names(&["tools", "--json", "--tool", "shell"]).is_empty());
}

#[test]
fn an_unknown_tool_flag_is_a_usage_error() {
    let e = env();
    e.offline(&["tools", "--tool", "fs_raed"])
        .code(2)
        .stderr(predicates::str::contains(
            "--tool names no such tool: fs_raed",
        ));
}

#[test]
fn config_errors_name_file_line_and_key_and_exit_2() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[tools]\nenabled = []\nshel = 1\n",
    )
    .unwrap();
    // A key that is no [tools] setting may be a tool's table, so the error
    // is found at its value: the line is the key's, the column the value's.
    e.offline(&["tools"])
        .code(2)
        .stderr(predicates::str::contains(
            "config.toml:3:8: unknown field `shel`",
        ));
    std::fs::write(e.home.join("config.toml"), "[tools]\n").unwrap();
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[tools]\noutput_budget_bytes = \"big\"\n",
    )
    .unwrap();
    e.offline(&["tools"])
        .code(2)
        .stderr(predicates::str::contains("mecha.toml:2:"))
        .stderr(predicates::str::contains("output_budget_bytes"));
    std::fs::write(e.ws.join("mecha.toml"), "[tools\n").unwrap();
    e.offline(&["tools"])
        .code(2)
        .stderr(predicates::str::contains("mecha.toml:1:"));
}

#[test]
fn a_project_that_sets_the_provider_is_warned_about_and_ignored() {
    let e = env();
    std::fs::write(e.ws.join("mecha.toml"), "[provider]\ncontext_window = 1\n").unwrap();
    e.offline(&["tools"])
        .code(0)
        .stderr(predicates::str::contains(
            "[provider] context_window = 1 has no effect; yours stays",
        ));
}

#[test]
fn a_config_typo_in_tool_names_is_warned_about() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[tools]\ndisabled = [\"shel\"]\n",
    )
    .unwrap();
    e.offline(&["tools"])
        .success()
        .stderr(predicates::str::contains("`shel`, which is no tool"));
}

#[test]
fn a_rule_for_no_tool_is_warned_about_and_a_glob_that_matches_one_is_not() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[[rule]]\ntool = \"shel\"\naction = \"forbid\"\n\n\
         [[rule]]\ntool = \"files__*\"\naction = \"prompt\"\n\n\
         [[rule]]\ntool = \"fs_*\"\naction = \"prompt\"\n\n\
         [[rule]]\ntool = \"shell\"\ncommand = \"git push\"\naction = \"forbid\"\n",
    )
    .unwrap();
    let out = e.offline(&["tools"]).success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("a [[rule]] names `shel`, which matches no tool; check the spelling"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`files__*`, which matches no tool"),
        "{stderr}"
    );
    assert!(!stderr.contains("`fs_*`"), "{stderr}");
    assert!(!stderr.contains("`shell`"), "{stderr}");
}

/// What a run gets, `compact` included when its conversation compacts
/// (the provider's window is known): nothing is sent to build it.
#[test]
fn the_listing_has_compact_when_a_run_would() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n",
    )
    .unwrap();
    let names = |key: Option<&str>| {
        let mut mecha = Command::cargo_bin("mecha").unwrap();
        mecha
            .env("MECHA_HOME", &e.home)
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(&e.ws)
            .args(["tools", "--json"]);
        if let Some(key) = key {
            mecha.env("ANTHROPIC_API_KEY", key);
        }
        let out = mecha.assert().success();
        let listing: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let with = names(Some("k"));
    assert!(with.iter().any(|n| n == "compact"), "{with:?}");
    // No provider, no run, no compaction.
    let without = names(None);
    assert!(!without.iter().any(|n| n == "compact"), "{without:?}");
}

/// A misspelt tool name in `[tools]` names the tool that was meant.
#[test]
fn a_near_miss_in_tools_names_the_tool_meant() {
    let e = env();
    std::fs::write(
        e.home.join("config.toml"),
        "[tools]\nenabled = [\"htp_fetch\", \"fs_read\", \"refactor\"]\n",
    )
    .unwrap();
    let out = e.offline(&["tools"]).success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "names `htp_fetch`, which is no tool; check the spelling (did you mean `http_fetch`?)"
        ),
        "{stderr}"
    );
    let far = stderr
        .lines()
        .find(|l| l.contains("`refactor`"))
        .unwrap_or_default();
    assert!(
        far.contains("which is no tool") && !far.contains("did you mean"),
        "{stderr}"
    );
}
