//! Skills through the real binary: what a run carries and what it is told,
//! `mecha skills` and its exit code, the layers that narrow the set, and
//! the skill tool's answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

fn skill(home: &Path, dir: &str, frontmatter: &str, body: &str) {
    let folder = home.join("skills").join(dir);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\n{frontmatter}\n---\n{body}"),
    )
    .unwrap();
}

/// Two good skills, written in reverse order so the listing's order is
/// not the filesystem's, and one that cannot load.
fn store(e: &Env) {
    skill(
        &e.home,
        "zeta-report",
        "name: zeta-report\ndescription: Write the weekly report. Use on Fridays.",
        "# Report\n\nSummarise the week.\n",
    );
    skill(
        &e.home,
        "alpha-letter",
        "name: alpha-letter\ndescription: How to answer a letter request.\ntriggers: [letter, reference]",
        "# Letters\n\n1. Check the deadline.\n",
    );
    skill(
        &e.home,
        "broken",
        "name: mismatch\ndescription: x",
        "body\n",
    );
}

async fn skills_json(e: &Env, args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mock = MockModel::start(vec![]).await;
    let mut all = vec!["--json"];
    all.extend(args);
    let out = e.mecha(Api::OpenAi, &mock, "k", "skills", &all, "").await;
    let listing: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    (out.status.code(), listing, stderr(&out))
}

fn status_of<'a>(listing: &'a [Value], dir: &str) -> &'a Value {
    listing.iter().find(|s| s["dir"] == dir).unwrap()
}

#[tokio::test]
async fn mecha_skills_lists_carried_withheld_and_failed_and_exits_1_on_a_failure() {
    let mut e = env();
    store(&e);
    e.extra_config = "[skills]\ndisabled = [\"zeta-report\"]\n".to_owned();
    let (code, listing, _) = skills_json(&e, &[]).await;
    assert_eq!(code, Some(1));
    let dirs: Vec<&str> = listing.iter().map(|s| s["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["alpha-letter", "broken", "zeta-report"]);
    assert_eq!(status_of(&listing, "alpha-letter")["status"], "carried");
    let withheld = status_of(&listing, "zeta-report");
    assert_eq!(withheld["status"], "withheld");
    assert!(
        withheld["reason"]
            .as_str()
            .unwrap()
            .contains("[skills] disabled in"),
        "{withheld}"
    );
    let failed = status_of(&listing, "broken");
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["reason"],
        "frontmatter says `name = mismatch` but the directory is `broken` — they have to match"
    );

    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::OpenAi, &mock, "k", "skills", &["--show"], "")
        .await;
    let text = stdout(&out);
    assert!(
        text.contains("zeta-report  [withheld: [skills] disabled in"),
        "{text}"
    );
    assert!(text.contains("1. Check the deadline."), "{text}");
    assert!(text.contains("broken  [failed: frontmatter says"), "{text}");

    // Without the broken one, the listing succeeds.
    std::fs::remove_dir_all(e.home.join("skills/broken")).unwrap();
    let (code, _, _) = skills_json(&e, &[]).await;
    assert_eq!(code, Some(0));
}

/// Runs one prompt against a mock that answers at once, and returns the
/// system prompt it was sent, the tool names and stderr.
async fn first_request(e: &Env, args: &[&str]) -> (String, Vec<String>, String) {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut all = args.to_vec();
    all.push("go");
    let out = e.run(Api::OpenAi, &mock, "k", &all).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &mock.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
    let tools = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (system, tools, stderr(&out))
}

#[tokio::test]
async fn the_level_one_block_is_sorted_stable_and_a_failure_is_said_at_start() {
    let e = env();
    store(&e);
    let (system, tools, err) = first_request(&e, &[]).await;
    assert!(tools.contains(&"skill".to_owned()), "{tools:?}");
    let alpha = system.find("alpha-letter").unwrap();
    let zeta = system.find("zeta-report").unwrap();
    assert!(alpha < zeta, "sorted by name:\n{system}");
    assert!(
        system.contains("How to answer a letter request."),
        "{system}"
    );
    assert!(system.contains("letter"), "{system}");
    assert!(
        !system.contains(&e.home.display().to_string()),
        "no path: {system}"
    );
    assert!(!system.contains("mismatch"), "{system}");
    assert!(
        err.contains("mecha: skill `broken` did not load — frontmatter says `name = mismatch`"),
        "{err}"
    );
    // The same store, another run: the same bytes.
    let (again, _, _) = first_request(&e, &[]).await;
    assert_eq!(system, again);
}

#[tokio::test]
async fn flags_and_a_project_only_narrow() {
    let e = env();
    store(&e);
    let (system, tools, _) = first_request(&e, &["--no-skills"]).await;
    assert!(!tools.contains(&"skill".to_owned()), "{tools:?}");
    assert!(!system.contains("alpha-letter"), "{system}");

    let (system, _, _) = first_request(&e, &["--skill", "zeta-report"]).await;
    assert!(
        system.contains("zeta-report") && !system.contains("alpha-letter"),
        "{system}"
    );

    // `--skill` cannot bring back what config withheld.
    let mut e2 = env();
    store(&e2);
    e2.extra_config = "[skills]\ndisabled = [\"zeta-report\"]\n".to_owned();
    let (_, tools, err) = first_request(&e2, &["--skill", "zeta-report"]).await;
    assert!(!tools.contains(&"skill".to_owned()), "{tools:?} {err}");

    // A project intersects `enabled`, and its `dir` is dropped loudly.
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[skills]\nenabled = [\"alpha-letter\", \"nothere\"]\ndir = \"skills\"\n",
    )
    .unwrap();
    let (system, _, err) = first_request(&e, &[]).await;
    assert!(
        system.contains("alpha-letter") && !system.contains("zeta-report"),
        "{system}"
    );
    assert!(
        err.contains("[skills] dir = \"skills\" has no effect; yours stays"),
        "{err}"
    );
    assert!(err.contains("[skills] names `nothere`"), "{err}");
    let (_, listing, _) = skills_json(&e, &[]).await;
    assert!(
        status_of(&listing, "zeta-report")["reason"]
            .as_str()
            .unwrap()
            .contains("not in [skills] enabled in"),
        "{listing:?}"
    );
}

#[tokio::test]
async fn the_skill_tool_serves_bodies_and_files_but_nothing_outside_the_skill() {
    let e = env();
    store(&e);
    std::fs::write(e.home.join("skills/alpha-letter/TEMPLATE.md"), "Dear ...\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[
            ("skill", json!({"name": "alpha-letter"})),
            (
                "skill",
                json!({"name": "alpha-letter", "file": "TEMPLATE.md"}),
            ),
            (
                "skill",
                json!({"name": "alpha-letter", "file": "../zeta-report/SKILL.md"}),
            ),
        ]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    assert!(
        results[0].0.contains("1. Check the deadline."),
        "{results:?}"
    );
    assert!(results[1].0.contains("Dear ..."), "{results:?}");
    assert!(!results[2].0.contains("Summarise the week"), "{results:?}");
    assert!(results[2].0.contains("outside"), "{results:?}");
}

#[tokio::test]
async fn a_skills_tools_narrow_what_the_run_may_call_for_the_rest_of_it() {
    let e = env();
    skill(
        &e.home,
        "review",
        "name: review\ndescription: Review the code; read only.\ntools: [fs_read, fs_list]",
        "Read, never write.\n",
    );
    std::fs::write(e.ws.join("a.txt"), "hello\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("skill", json!({"name": "review"}))]),
        tool_turn(&[
            ("fs_write", json!({"path": "planted.txt", "content": "x"})),
            ("fs_read", json!({"path": "a.txt"})),
        ]),
        tool_turn(&[("skill", json!({"name": "review"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skill `review` narrowed"),
        "{}",
        stderr(&out)
    );
    let results = results_in(&mock, 2);
    let (write, read) = (&results[results.len() - 2], &results[results.len() - 1]);
    assert!(
        write.0.contains("`fs_write` is outside") && write.0.contains("`review`"),
        "{write:?}"
    );
    assert!(!e.ws.join("planted.txt").exists(), "the refused call ran");
    assert!(read.0.contains("hello"), "{read:?}");
    // From the narrowing on, the model is sent only the surface, the
    // skill tool included, which still answers.
    let requests = mock.requests();
    let tools: Vec<&str> = requests[2].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["fs_list", "fs_read", "skill"]);
    let last = results_in(&mock, 3);
    assert!(
        last.last().unwrap().0.contains("Read, never write."),
        "{last:?}"
    );
}

#[tokio::test]
async fn chat_answers_skills_and_tools_from_the_running_agent() {
    let mut e = env();
    store(&e);
    e.extra_config = "[skills]\ndisabled = [\"zeta-report\"]\n".to_owned();
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(
            Api::OpenAi,
            &mock,
            "k",
            "chat",
            &["--skill", "alpha-letter"],
            "/skills\n/skills alpha-letter\n/tools\n/exit\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("skills this run carries (1):"), "{text}");
    assert!(text.contains("  alpha-letter  How to answer"), "{text}");
    assert!(
        text.contains("zeta-report  [withheld: [skills] disabled in"),
        "{text}"
    );
    assert!(text.contains("broken  [failed:"), "{text}");
    assert!(text.contains("1. Check the deadline."), "{text}");
    assert!(text.contains("tools this run offers"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("skill ") && l.ends_with("read-only")),
        "the skill tool, with what it can do: {text}"
    );
    assert!(
        mock.requests().is_empty(),
        "a slash command went to the model"
    );
}

#[tokio::test]
async fn without_the_skill_tool_no_skill_is_listed_as_carried() {
    let mut e = env();
    store(&e);
    e.extra_config = "[tools]\ndisabled = [\"skill\"]\n".to_owned();
    let (_, listing, err) = skills_json(&e, &[]).await;
    let alpha = status_of(&listing, "alpha-letter");
    assert_eq!(alpha["status"], "withheld", "{listing:?}");
    assert!(
        alpha["reason"]
            .as_str()
            .unwrap()
            .contains("the `skill` tool is not among this run's tools"),
        "{alpha}"
    );
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::OpenAi, &mock, "k", "chat", &[], "/skills\n/exit\n")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("skills this run carries (0)"), "{text}");
    assert!(
        text.contains("alpha-letter  [withheld: the `skill` tool is not among"),
        "{text}"
    );
    // `skill` is a tool's name even when no skill makes it one.
    for stderr in [err, stderr(&out)] {
        assert!(!stderr.contains("which is no tool"), "{stderr}");
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_read_fails_mecha_skills_and_is_said_at_start() {
    let mut e = env();
    let store = e.home.join("skills-file");
    std::fs::write(&store, "not a folder").unwrap();
    e.extra_config = format!("[skills]\ndir = {:?}\n", store.display().to_string());
    let mock = MockModel::start(vec![MockReply::text("hi")]).await;
    let listed = e.mecha(Api::OpenAi, &mock, "k", "skills", &[], "").await;
    assert_eq!(listed.status.code(), Some(1), "{}", stderr(&listed));
    let said = "cannot read the skills directory";
    assert!(stderr(&listed).contains(said), "{}", stderr(&listed));
    let run = e.run(Api::OpenAi, &mock, "k", &["go"]).await;
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains(said), "{}", stderr(&run));
}
