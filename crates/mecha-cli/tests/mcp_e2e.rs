//! MCP servers through the real binary: a broken server beside a good one,
//! the environment allowlist, the interlock with open-world tools, a crash
//! and respawn, list_changed, the reference npm servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Api, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

fn fixture_server(name: &str, args: &[&str]) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = {:?}\nargs = {:?}\n",
        fixture_mcp().display().to_string(),
        args
    )
}

async fn tools_json(e: &common::Env) -> (Value, String) {
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "tools", &["--json"], "")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    (listing["tools"].clone(), stderr(&out))
}

#[tokio::test]
async fn a_broken_server_is_reported_and_the_rest_work() {
    let mut e = env();
    e.extra_config =
        fixture_server("good", &[]) + &fixture_server("broken", &["--exit-at-start", "7"]);
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    // A failed server fails the listing, which still shows the rest.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("MCP server `good`"), "{text}");
    assert!(text.contains("good__echo"), "{text}");
    assert!(
        text.contains("MCP server `broken` is unavailable"),
        "{text}"
    );
    assert!(text.contains("exit status 7"), "{text}");
    assert!(!text.contains("broken__"), "{text}");
}

#[tokio::test]
async fn capabilities_follow_the_annotations() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let (tools, _) = tools_json(&e).await;
    let tool = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}"))
    };
    let open = tool("fix__echo_open");
    assert_eq!(open["source"], "mcp:fix");
    assert_eq!(
        open["capabilities"],
        json!({"private_data": true, "untrusted_input": true, "egress": "chosen", "destructive": false})
    );
    assert_eq!(tool("fix__destroy")["capabilities"]["destructive"], true);
    assert_eq!(tool("fix__read")["read_only"], true);
    assert_eq!(
        tool("fix__echo")["capabilities"],
        json!({"private_data": true, "untrusted_input": false, "egress": "none", "destructive": false})
    );
}

#[tokio::test]
async fn a_server_sees_only_the_allowlisted_environment_and_runs_in_the_workspace() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[])
        + "env_passthrough = [\"NOTES_TOKEN\"]\nenv = { NOTES_REGION = \"us\" }\n[agent]\ntimezone = \"Europe/Berlin\"\n";
    for (k, v) in [
        ("GITHUB_TOKEN", "ghp-secret"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ("LD_PRELOAD", ""),
        ("NOTES_TOKEN", "passed-through"),
        ("LANG", "C.UTF-8"),
    ] {
        e.extra_env.push((k.into(), v.into()));
    }
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__env", json!({})), ("fix__cwd", json!({}))]),
        MockReply::text("ok"),
    ])
    .await;
    let out = e
        .run(Api::Anthropic, &mock, "the-anthropic-key", &["--yes", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    let seen: Value =
        serde_json::from_str(&results[0].0).unwrap_or_else(|_| panic!("{:?}", results[0]));
    let mut keys: Vec<&str> = seen
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "HOME",
            "LANG",
            "MECHA_TZ",
            "NOTES_REGION",
            "NOTES_TOKEN",
            "PATH"
        ]
    );
    assert_eq!(seen["NOTES_TOKEN"], "passed-through");
    assert_eq!(seen["MECHA_TZ"], "Europe/Berlin");
    let dump = results[0].0.clone();
    for secret in ["the-anthropic-key", "ghp-secret", "aws-secret"] {
        assert!(!dump.contains(secret), "leaked {secret}");
    }
    let ws = std::fs::canonicalize(&e.ws).unwrap();
    assert!(
        results[1].0.contains(ws.to_str().unwrap()),
        "{:?}",
        results[1]
    );
}

#[tokio::test]
async fn an_open_world_send_is_refused_once_private_and_untrusted_met() {
    let mut e = env();
    let record = e.ws.join("calls.log");
    e.extra_config = fixture_server("fix", &["--record", record.to_str().unwrap()]);
    std::fs::write(e.ws.join("secret.txt"), "TOKEN-123").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "secret.txt"}))]),
        tool_turn(&[("fix__echo_open", json!({"text": "fetch a page"}))]),
        tool_turn(&[("fix__echo_open", json!({"text": "TOKEN-123"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let refused = results_in(&mock, 3);
    let last = refused.last().unwrap();
    assert!(last.0.contains("refused by mecha's interlock"), "{last:?}");
    let calls = std::fs::read_to_string(&record).unwrap();
    assert_eq!(calls.matches("call echo_open").count(), 1, "{calls}");
    assert!(
        !calls.contains("TOKEN-123"),
        "the secret reached the server: {calls}"
    );
}

#[tokio::test]
async fn a_crash_mid_call_is_a_result_and_the_next_call_respawns() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__crash", json!({}))]),
        tool_turn(&[("fix__echo", json!({"text": "still here"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let crash = &results_in(&mock, 1)[0];
    assert!(
        crash.1 && crash.0.starts_with("MCP call failed"),
        "{crash:?}"
    );
    let echo = results_in(&mock, 2).last().cloned().unwrap();
    assert!(!echo.1 && echo.0.contains("still here"), "{echo:?}");
}

#[tokio::test]
async fn tools_announced_by_list_changed_reach_the_next_turn() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__notify", json!({}))]),
        tool_turn(&[("fix__added", json!({}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let names = |n: usize| -> Vec<String> {
        mock.requests()[n].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(0).contains(&"fix__added".to_owned()));
    assert!(
        names(1).contains(&"fix__added".to_owned()),
        "{:?}",
        names(1)
    );
    let added = results_in(&mock, 2).last().cloned().unwrap();
    assert!(!added.1, "{added:?}");
}

#[tokio::test]
async fn what_a_shell_command_detaches_dies_with_it_and_the_mcp_server_lives_on() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__pid", json!({}))]),
        tool_turn(&[(
            "shell",
            json!({"command": "setsid sleep 300 > /dev/null 2>&1 & echo $! > bg.pid"}),
        )]),
        // A zombie still has a /proc entry: gone means killed and reaped.
        tool_turn(&[(
            "shell",
            json!({"command": "if [ -e /proc/$(cat bg.pid) ]; then echo ALIVE; else echo GONE; fi"}),
        )]),
        tool_turn(&[("fix__pid", json!({}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 4);
    assert_eq!(results[2].0.trim(), "GONE", "{results:?}");
    assert_eq!(
        results[0].0, results[3].0,
        "the MCP server was killed with the command's leftovers: {results:?}"
    );
    let bg: u32 = std::fs::read_to_string(e.ws.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!Path::new(&format!("/proc/{bg}")).exists());
}

#[tokio::test]
async fn a_relative_command_resolves_against_the_config_files_directory() {
    let mut e = env();
    std::fs::create_dir_all(e.home.join("bin")).unwrap();
    std::os::unix::fs::symlink(fixture_mcp(), e.home.join("bin/fixture")).unwrap();
    // mecha runs in the workspace, where ./bin/fixture does not exist.
    e.extra_config = "[[mcp]]\nname = \"rel\"\ncommand = \"./bin/fixture\"\n".to_owned();
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("rel__echo"), "{}", stdout(&out));
}

#[tokio::test]
async fn a_failed_servers_stderr_reaches_the_terminal_only_as_a_debug_log() {
    let mut e = env();
    e.extra_config = fixture_server("broken", &["--exit-at-start", "7"]);
    let mock = MockModel::start(vec![]).await;
    for args in [&[][..], &["--json"][..]] {
        let out = e.mecha(Api::Anthropic, &mock, "k", "tools", args, "").await;
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let shown = stdout(&out) + &stderr(&out);
        assert!(shown.contains("exit status 7"), "{shown}");
        assert!(!shown.contains("fixture: exiting at start"), "{shown}");
    }
    e.extra_env
        .push(("MECHA_LOG".into(), "mecha_mcp=debug".into()));
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    let log = stderr(&out);
    assert!(log.contains("fixture: exiting at start"), "{log}");
    assert!(log.contains("broken"), "{log}");
}

#[tokio::test]
async fn mcp_check_quotes_the_last_stderr_lines_of_a_server_that_did_not_start_escaped() {
    let mut e = env();
    e.extra_config = fixture_server(
        "broken",
        &[
            "--flood-stderr",
            "15",
            "--exit-at-start",
            "7",
            "--hostile-text",
        ],
    );
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "mcp", &["check", "broken"], "")
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("exit status 7"), "{text}");
    // Sixteen lines written; the last ten are quoted, in order.
    let quoted: Vec<&str> = text.lines().filter(|l| l.starts_with("  | ")).collect();
    assert_eq!(quoted.len(), 10, "{text}");
    assert!(
        quoted[0].starts_with("  | fixture flood line 00000006"),
        "{text}"
    );
    assert!(
        quoted[9].starts_with("  | fixture: exiting at start with code 7, as asked"),
        "{text}"
    );
    assert!(
        text.contains("the last 10 lines it wrote to stderr:"),
        "{text}"
    );
    assert!(
        text.contains("`MECHA_LOG=debug mecha mcp check broken` logs all it writes"),
        "{text}"
    );
    // The server's words pass the terminal escaper.
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.contains("\\u{1b}]52;c;"), "{text}");
}

#[tokio::test]
async fn a_changed_tool_that_collides_is_reported_and_shadows_nothing() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &["--added-name", "shell"]) + "prefix_tools = false\n";
    let mock = MockModel::start(vec![
        tool_turn(&[("notify", json!({}))]),
        tool_turn(&[("shell", json!({"command": "echo built-in"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("MCP server `fix` registers a tool named `shell`")
            && err.contains("prefix_tools = true"),
        "{err}"
    );
    let shell = results_in(&mock, 2).last().cloned().unwrap();
    assert_eq!(shell.0, "built-in\n", "{shell:?}");
}

#[tokio::test]
async fn an_mcp_servers_json_file_works_with_mcp_file() {
    let e = env();
    let file = e.home.join("claude_desktop_config.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"desk": {"command": fixture_mcp(), "args": []}}}).to_string(),
    )
    .unwrap();
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "tools",
            &["--mcp-file", file.to_str().unwrap()],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("desk__echo"), "{}", stdout(&out));
}

#[tokio::test]
async fn the_reference_servers_work_through_mecha() {
    let (Some(everything), Some(files)) = (
        common::npm_server("mcp-server-everything"),
        common::npm_server("mcp-server-filesystem"),
    ) else {
        return;
    };
    let mut e = env();
    let shared = std::fs::canonicalize(&e.ws).unwrap();
    std::fs::write(shared.join("hello.txt"), "hello from the filesystem server").unwrap();
    e.extra_config = format!(
        "[[mcp]]\nname = \"everything\"\ncommand = {:?}\n[[mcp]]\nname = \"files\"\ncommand = {:?}\nargs = [{:?}]\n",
        everything.display().to_string(),
        files.display().to_string(),
        shared.display().to_string()
    );
    let mock = MockModel::start(vec![
        tool_turn(&[
            ("everything__get-sum", json!({"a": 2, "b": 40})),
            (
                "files__read_text_file",
                json!({"path": shared.join("hello.txt")}),
            ),
            ("files__read_text_file", json!({"path": "/etc/passwd"})),
        ]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    assert!(results[0].0.contains("42"), "{results:?}");
    assert!(
        results[1].0.contains("hello from the filesystem server"),
        "{results:?}"
    );
    assert!(
        results[2].1 && !results[2].0.contains("root:"),
        "{results:?}"
    );
}
