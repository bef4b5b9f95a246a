//! `mecha eval` through the real binary, with the scripted model (each
//! case's run plays the script from its start) or the mock server (cases
//! run one after another): checks that pass and fail, a fixture left as it
//! was, skills kept out, a broken --mcp-file server fatal, -j running cases
//! side by side, shards that partition the set, merge and compare.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Api, Env, env, stderr, stdout};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval")
}

/// `mecha eval ARGS` with `e`'s home; its config the scripted model
/// playing `turns`, unless `mock` is given.
async fn eval(e: &Env, mock: &MockModel, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", "eval", args, "").await
}

fn scripted(e: &Env, turns: Value) -> String {
    let script = e.home.join("turns.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let config = e.home.join("scripted.toml");
    std::fs::write(
        &config,
        format!(
            "[provider]\nkind = \"scripted\"\nscript = {:?}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    config.display().to_string()
}

fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn the_example_set_passes_offline_and_leaves_its_fixture_as_it_was() {
    let mut e = env();
    // The fix is graded by `cargo test`, which needs the real toolchain
    // while HOME is the test's.
    let home = std::env::var("HOME").unwrap_or_default();
    for (name, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var(name).unwrap_or_else(|_| format!("{home}/{default}"));
        e.extra_env.push((name.into(), value));
    }
    let mock = MockModel::start(vec![]).await;
    let dir = example();
    let before = std::fs::read_to_string(dir.join("fixtures/add/src/lib.rs")).unwrap();
    let json = e.ws.join("report.json");
    let out = eval(
        &e,
        &mock,
        &[
            dir.join("cases.toml").to_str().unwrap(),
            "--config",
            dir.join("scripted.toml").to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    )
    .await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("2 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
    let report = report(&json);
    assert_eq!(report["passed"], 2);
    let fix = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "fix-add")
        .unwrap();
    assert_eq!(fix["checks"][0]["kind"], "command");
    assert_eq!(fix["checks"][0]["passed"], true);
    let after = std::fs::read_to_string(dir.join("fixtures/add/src/lib.rs")).unwrap();
    assert_eq!(before, after, "the fixture was touched");
    assert!(after.contains("a - b"));
    assert!(!dir.join("fixtures/add/target").exists());
}

#[tokio::test]
async fn a_failing_check_fails_its_case_says_why_and_exits_1() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let config = scripted(
        &e,
        json!([
            {"tool_calls": [{"name": "fs_write", "input": {"path": "out.txt", "content": "wrong"}}]},
            {"text": "I wrote it."}
        ]),
    );
    let cases = e.ws.join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\nname = \"write\"\nprompt = \"write out.txt\"\n\
         [[case.check]]\nkind = \"contains\"\ntext = \"wrote\"\n\
         [[case.check]]\nkind = \"file_equals\"\npath = \"out.txt\"\ntext = \"right\"\n\
         [[case.check]]\nkind = \"tool_called\"\ntool = \"fs_write\"\n",
    )
    .unwrap();
    let json = e.ws.join("r.json");
    let out = eval(
        &e,
        &mock,
        &[
            cases.to_str().unwrap(),
            "--config",
            &config,
            "--json",
            json.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("file_equals: out.txt holds \"wrong\" instead"),
        "{}",
        stdout(&out)
    );
    let checks = &report(&json)["cases"][0]["checks"];
    let passed: Vec<bool> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["passed"] == true)
        .collect();
    assert_eq!(passed, [true, false, true]);
}

#[tokio::test]
async fn a_bad_case_file_stops_before_any_case_runs() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    let cases = e.ws.join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\nname = \"a\"\nprompt = \"p\"\n[[case.check]]\nkind = \"vibes\"\n",
    )
    .unwrap();
    let out = eval(&e, &mock, &[cases.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("vibes"), "{}", stderr(&out));
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_skill_in_the_store_is_in_no_request_and_a_broken_server_is_fatal() {
    let e = env();
    let skill = e.home.join("skills/secret-procedure");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: secret-procedure\ndescription: The house way to do it.\n---\nDo it.\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![MockReply::text("one"), MockReply::text("two")]).await;
    let cases = e.ws.join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\nname = \"a\"\nprompt = \"p\"\n[[case.check]]\nkind = \"contains\"\ntext = \"o\"\n\
         [[case]]\nname = \"b\"\nprompt = \"q\"\n[[case.check]]\nkind = \"contains\"\ntext = \"o\"\n",
    )
    .unwrap();
    let out = eval(&e, &mock, &[cases.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(mock.requests().len(), 2);
    for request in mock.requests() {
        let body = request.body.to_string();
        assert!(!body.contains("secret-procedure"), "{body}");
    }
    let servers = e.ws.join("servers.json");
    std::fs::write(
        &servers,
        r#"{"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}}}"#,
    )
    .unwrap();
    let mut broken = e.command(
        Api::OpenAi,
        &mock,
        "k",
        "--mcp-file",
        &[servers.to_str().unwrap()],
    );
    broken.args(["eval", cases.to_str().unwrap()]);
    let out = tokio::task::spawn_blocking(move || broken.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no case ran"), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 2, "a case ran with a broken server");
}

fn sleepy_cases(e: &Env, count: usize) -> PathBuf {
    let mut text = String::new();
    for n in 0..count {
        text.push_str(&format!(
            "[[case]]\nname = \"case-{n}\"\nprompt = \"sleep\"\n\
             [[case.check]]\nkind = \"tool_called\"\ntool = \"shell\"\n"
        ));
    }
    let path = e.ws.join("cases.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn four_jobs_take_about_as_long_as_the_slowest_case() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let config = scripted(
        &e,
        json!([
            {"tool_calls": [{"name": "shell", "input": {"command": "sleep 2"}}]},
            {"text": "slept"}
        ]),
    );
    let cases = sleepy_cases(&e, 4);
    let started = Instant::now();
    let out = eval(
        &e,
        &mock,
        &[cases.to_str().unwrap(), "--config", &config, "-j", "4"],
    )
    .await;
    let took = started.elapsed();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("4 passed"), "{}", stdout(&out));
    // One after another they take 8 s at least.
    assert!(took < Duration::from_secs(6), "{took:?}");
}

#[tokio::test]
async fn shards_partition_the_set_and_merge_into_its_report() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let config = scripted(
        &e,
        json!([
            {"tool_calls": [{"name": "shell", "input": {"command": "true"}}]},
            {"text": "done"}
        ]),
    );
    let cases = sleepy_cases(&e, 7);
    let mut names = Vec::new();
    let mut files = Vec::new();
    for shard in ["1/3", "2/3", "3/3"] {
        let json = e.ws.join(format!("shard-{}.json", &shard[..1]));
        let out = eval(
            &e,
            &mock,
            &[
                cases.to_str().unwrap(),
                "--config",
                &config,
                "--shard",
                shard,
                "--json",
                json.to_str().unwrap(),
            ],
        )
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
        for case in report(&json)["cases"].as_array().unwrap() {
            names.push(case["name"].as_str().unwrap().to_owned());
        }
        files.push(json.to_str().unwrap().to_owned());
    }
    names.sort();
    let all: Vec<String> = (0..7).map(|n| format!("case-{n}")).collect();
    assert_eq!(names, all, "each case in exactly one shard");
    let merged = e.ws.join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().unwrap()]);
    let out = eval(&e, &mock, &args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(report(&merged)["passed"], 7);
    let twice = eval(&e, &mock, &["merge", &files[0], &files[0]]).await;
    assert_eq!(twice.status.code(), Some(2), "{}", stderr(&twice));

    // A changed set: one case now fails.
    let mut changed = report(&merged);
    changed["cases"][0]["passed"] = json!(false);
    let old = e.ws.join("old.json");
    std::fs::write(&old, changed.to_string()).unwrap();
    let compared = eval(
        &e,
        &mock,
        &["--compare", old.to_str().unwrap(), merged.to_str().unwrap()],
    )
    .await;
    assert!(compared.status.success(), "{}", stderr(&compared));
    assert!(
        stdout(&compared).contains("case-0: FAIL -> pass"),
        "{}",
        stdout(&compared)
    );
}
