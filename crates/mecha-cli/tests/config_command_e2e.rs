//! `mecha config` through the real binary: each value with the layer it
//! came from (default, config.toml, mecha.toml, environment, flag), in text
//! and JSON, and an API key's value never printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const SECRET: &str = "sk-ant-THE-SECRET-VALUE-1234";

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

/// A home whose config.toml sets some values, a workspace whose
/// mecha.toml narrows others.
fn layered() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[agent]\nmax_turns = 50\n\n[tools]\noutput_budget_bytes = 30000\n\n\
         [[rule]]\ntool = \"shell\"\naction = \"forbid\"\n\n\
         [[mcp]]\nname = \"files\"\ncommand = \"/bin/true\"\nenv = { TOKEN = \"mcp-secret-env\" }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("mecha.toml"),
        "[agent]\nmax_turns = 20\n\n[sandbox]\nkind = \"bwrap\"\n\n\
         [[rule]]\ntool = \"http_fetch\"\naction = \"prompt\"\n",
    )
    .unwrap();
    Dirs {
        _tmp: tmp,
        home,
        ws,
    }
}

fn mecha(d: &Dirs, args: &[&str]) -> Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("HOME", &d.home)
        .env("MECHA_HOME", &d.home)
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("ANTHROPIC_MODEL", "claude-from-env")
        .arg("-C")
        .arg(&d.ws)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(d: &Dirs, args: &[&str]) -> Value {
    let mut all = vec!["config", "--json"];
    all.extend_from_slice(args);
    let o = mecha(d, &all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn shown(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

#[test]
fn each_value_names_the_layer_it_came_from_in_json() {
    let d = layered();
    let doc = json(&d, &[]);
    let s = &doc["settings"];
    let user = d.home.join("config.toml").display().to_string();
    let project = shown(&d.ws.join("mecha.toml"));
    // default
    assert_eq!(s["tools.spill_max_bytes"]["origin"], "default");
    assert!(s["tools.spill_max_bytes"].get("source").is_none());
    // config.toml
    assert_eq!(s["tools.output_budget_bytes"]["value"], 30000);
    assert_eq!(s["tools.output_budget_bytes"]["origin"], "config.toml");
    assert_eq!(s["tools.output_budget_bytes"]["source"], user);
    // mecha.toml: it lowered the user's 50
    assert_eq!(s["agent.max_turns"]["value"], 20);
    assert_eq!(s["agent.max_turns"]["origin"], "mecha.toml");
    assert_eq!(s["agent.max_turns"]["source"], project);
    assert_eq!(s["sandbox.kind"]["value"], "bwrap");
    assert_eq!(s["sandbox.kind"]["origin"], "mecha.toml");
    // environment
    assert_eq!(s["provider.model"]["value"], "claude-from-env");
    assert_eq!(s["provider.model"]["origin"], "environment");
    assert_eq!(s["provider.model"]["source"], "ANTHROPIC_MODEL");
    assert_eq!(s["provider.kind"]["value"], "anthropic");
    assert_eq!(s["provider.kind"]["source"], "ANTHROPIC_API_KEY");
    assert_eq!(s["provider.api_key"]["value"], "set");
    // Rules and servers carry the layer that added them.
    let rules = doc["rules"].as_array().unwrap();
    assert_eq!(rules[0]["value"]["tool"], "shell");
    assert_eq!(rules[0]["origin"], "config.toml");
    assert_eq!(rules[1]["value"]["tool"], "http_fetch");
    assert_eq!(rules[1]["origin"], "mecha.toml");
    assert_eq!(doc["mcp"][0]["value"]["name"], "files");
    assert_eq!(doc["mcp"][0]["origin"], "config.toml");
    // flag: over the environment, and over the project's limit
    let doc = json(&d, &["--model", "flagged", "--max-turns", "7"]);
    let s = &doc["settings"];
    assert_eq!(s["provider.model"]["value"], "flagged");
    assert_eq!(s["provider.model"]["origin"], "flag");
    assert_eq!(s["provider.model"]["source"], "--model");
    assert_eq!(s["agent.max_turns"]["value"], 7);
    assert_eq!(s["agent.max_turns"]["source"], "--max-turns");
    // --tool narrows what is enabled, as it does for a run.
    assert!(
        s["tools.enabled"]["value"].is_null(),
        "{}",
        s["tools.enabled"]
    );
    let doc = json(&d, &["--tool", "fs_read", "--tool", "grep"]);
    let enabled = &doc["settings"]["tools.enabled"];
    assert_eq!(enabled["value"], serde_json::json!(["fs_read", "grep"]));
    assert_eq!(enabled["source"], "--tool");
    // --plan keeps only the read-only tools, and says so.
    assert_eq!(s["tools.read_only"]["value"], false);
    let doc = json(&d, &["--plan"]);
    let read_only = &doc["settings"]["tools.read_only"];
    assert_eq!(read_only["value"], true);
    assert_eq!(read_only["source"], "--plan");
}

#[test]
fn the_text_shows_each_value_with_its_origin() {
    let d = layered();
    let o = mecha(&d, &["config", "--model", "flagged"]);
    assert!(o.status.success());
    let out = text(&o);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
            .to_owned()
    };
    let project = shown(&d.ws.join("mecha.toml"));
    assert!(line("tools.spill_max_bytes").ends_with("(default)"));
    assert!(line("tools.output_budget_bytes").contains("30000  (config.toml: "));
    assert!(
        line("agent.max_turns").contains(&format!("20  (mecha.toml: {project})")),
        "{out}"
    );
    assert!(line("provider.kind").contains("anthropic  (environment: ANTHROPIC_API_KEY)"));
    assert!(line("provider.model").contains("flagged  (flag: --model)"));
    assert!(line("provider.api_key").contains("set  (environment: ANTHROPIC_API_KEY)"));
    assert!(out.contains("MCP servers: 1"), "{out}");
}

#[test]
fn no_key_or_secret_value_is_ever_printed() {
    let d = layered();
    for args in [&["config"][..], &["config", "--json"]] {
        let o = mecha(&d, args);
        let all = format!("{}{}", text(&o), String::from_utf8_lossy(&o.stderr));
        assert!(!all.contains(SECRET), "{all}");
        assert!(!all.contains("THE-SECRET"), "{all}");
        // An MCP server's env values may be secrets too: names only.
        assert!(!all.contains("mcp-secret-env"), "{all}");
        assert!(all.contains("TOKEN"), "{all}");
    }
}

#[test]
fn it_says_which_instructions_file_a_run_would_send() {
    let d = layered();
    let o = mecha(&d, &["config"]);
    assert!(
        text(&o).contains("instructions: none (no AGENTS.md or CLAUDE.md in the workspace)"),
        "{}",
        text(&o)
    );
    std::fs::write(d.ws.join("CLAUDE.md"), "Run the tests with make.\n").unwrap();
    let o = mecha(&d, &["config"]);
    assert!(
        text(&o).contains("instructions: CLAUDE.md (25 bytes), sent whole"),
        "{}",
        text(&o)
    );
    assert_eq!(
        json(&d, &[])["instructions"],
        "instructions: CLAUDE.md (25 bytes), sent whole"
    );
}
