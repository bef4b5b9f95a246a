//! Progress a person can see: the status line on a terminal (never in a
//! pipe), NO_COLOR, and `--quiet`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};

use common::{Api, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const ERASE: &str = "\r\x1b[2K";

/// A scripted home whose model runs a shell command that takes a while.
fn slow_tool() -> common::Env {
    let e = env();
    let call = json!({"name": "shell", "input": {"command": "sleep 1.5"}});
    common::scripted_home(&e.home, &[call], "Done.", "");
    e
}

/// `mecha run --yes go` at a pseudo-terminal: everything it showed.
fn at_terminal(e: &common::Env, no_color: bool) -> String {
    let mecha = assert_cmd::cargo::cargo_bin("mecha");
    let command = format!("{} -C {} run --yes go", mecha.display(), e.ws.display());
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &command, "/dev/null"])
        .env("MECHA_HOME", &e.home)
        .env_remove("NO_COLOR")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_running_tool_shows_a_status_line_at_a_terminal_erased_before_what_follows() {
    if !common::have_script() {
        return;
    }
    let shown = at_terminal(&slow_tool(), false);
    let line = "\x1b[2mmecha: running shell (1s)\x1b[0m";
    let at = shown.find(line).unwrap_or_else(|| panic!("{shown:?}"));
    assert_eq!(&shown[at - ERASE.len()..at], ERASE, "{shown:?}");
    // Erased before the result's line and the answer.
    let after = &shown[at + line.len()..];
    assert!(after.starts_with(ERASE), "{after:?}");
    assert!(after.contains("Done."), "{after:?}");
}

#[test]
fn no_color_leaves_the_status_line_undimmed() {
    if !common::have_script() {
        return;
    }
    let shown = at_terminal(&slow_tool(), true);
    assert!(shown.contains("mecha: running shell (1s)"), "{shown:?}");
    assert!(!shown.contains("\x1b[2m"), "{shown:?}");
}

#[test]
fn a_pipe_gets_no_status_line() {
    let e = slow_tool();
    let out = Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", &e.home)
        .current_dir(&e.ws)
        .args(["run", "--yes", "go"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("→ shell"),
        "one plain line per event: {said:?}"
    );
    assert!(!said.contains("running shell"), "{said:?}");
    assert!(!said.contains('\x1b'), "{said:?}");
    assert!(!said.contains('\r'), "{said:?}");
}

#[tokio::test]
async fn quiet_shows_the_answer_and_errors_but_no_activity() {
    let e = env();
    // A shell call too: what a command prints goes to the model, and
    // nothing of running it to the terminal.
    let turns = || {
        vec![
            tool_turn(&[
                ("fs_list", json!({})),
                ("shell", json!({"command": "echo hi; echo there >&2"})),
            ]),
            MockReply::text("the answer"),
        ]
    };
    let mock = MockModel::start(turns()).await;
    let loud = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(stderr(&loud).contains("→ fs_list"), "{}", stderr(&loud));
    let mock = MockModel::start(turns()).await;
    let quiet = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "--quiet", "go"])
        .await;
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert_eq!(stdout(&quiet).trim(), "the answer");
    assert_eq!(stderr(&quiet), "", "no activity when quiet");
    // An error still shows.
    let mock = MockModel::start(vec![MockReply::Unauthorized]).await;
    let failed = e.run(Api::Anthropic, &mock, "k", &["-q", "go"]).await;
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        stderr(&failed).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&failed)
    );
}

#[tokio::test]
async fn an_idle_timeout_names_the_key_and_where_it_is_set() {
    let mut e = env();
    e.provider_config = "idle_timeout_secs = 1\n".to_owned();
    let mock = MockModel::start(vec![MockReply::Stall]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let file = e.home.join("config.toml").display().to_string();
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "[provider] idle_timeout_secs (set to 1 in {file})"
        )),
        "{said}"
    );
}

#[tokio::test]
async fn mecha_log_debug_shows_config_files_provider_requests_and_servers() {
    let mut e = env();
    e.extra_config = "[[mcp]]\nname = \"gone\"\ncommand = \"/nonexistent/mcp-server\"\n".to_owned();
    let mock = MockModel::start(vec![MockReply::text("hi")]).await;
    let quiet = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert!(!stderr(&quiet).contains("DEBUG"), "{}", stderr(&quiet));
    e.extra_env = vec![("MECHA_LOG".into(), "debug".into())];
    let mock = MockModel::start(vec![MockReply::text("hi")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    let config = e.home.join("config.toml").display().to_string();
    let project = e.ws.join("mecha.toml").display().to_string();
    for expected in [
        format!("read config file path={config}"),
        format!("no config file here path={project}"),
        "model provider provider=anthropic claude".to_owned(),
        format!("at {}", mock.anthropic_url()),
        "model request url=".to_owned(),
        "MCP server start server=gone elapsed_ms=".to_owned(),
    ] {
        assert!(log.contains(&expected), "{expected:?} in {log}");
    }
    let request = log.lines().find(|l| l.contains("model request")).unwrap();
    assert!(
        request.contains(" bytes=") && request.contains(" elapsed_ms="),
        "{request}"
    );
    assert!(!log.contains('\x1b'), "a pipe gets no colour: {log}");
}

#[test]
fn every_running_call_of_a_turn_is_on_the_status_line() {
    if !common::have_script() {
        return;
    }
    let e = env();
    let turns = json!({"turns": [
        {"tool_calls": [
            {"name": "shell", "input": {"command": "sleep 1.5"}},
            {"name": "fs_list", "input": {}}
        ]},
        {"text": "Done."}
    ]});
    let script = e.home.join("turns.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    std::fs::write(
        e.home.join("config.toml"),
        format!(
            "[provider]\nkind = \"scripted\"\nscript = {:?}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let shown = at_terminal(&e, true);
    assert!(shown.contains("mecha: running shell"), "{shown:?}");
}
