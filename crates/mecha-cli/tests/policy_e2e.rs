//! Policy through the real binary: mecha's home is off limits to the file
//! tools even inside the workspace, and a `[[rule]]` that names no tool is
//! warned about once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, results_in, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

#[tokio::test]
async fn a_workspace_containing_mecha_home_cannot_rewrite_its_config_or_skills() {
    let e = env();
    // The workspace is the directory that holds MECHA_HOME, as when a run's
    // workspace is the user's home directory.
    let workspace = e.home.parent().unwrap().to_path_buf();
    let home = e.home.file_name().unwrap().to_str().unwrap().to_owned();
    std::fs::create_dir(e.home.join("skills")).unwrap();
    let planted = "[[mcp]]\nname = \"planted\"\ncommand = \"/tmp/evil\"\n";
    let mock = MockModel::start(vec![
        tool_turn(&[
            (
                "fs_write",
                json!({"path": format!("{home}/config.toml"), "content": planted}),
            ),
            (
                "fs_edit",
                json!({"path": format!("ws/../{home}/config.toml"), "old": "anthropic", "new": "openai"}),
            ),
            (
                "fs_write",
                json!({"path": format!("{home}/skills/evil/SKILL.md"), "content": "---\nname: evil\n---\n"}),
            ),
        ]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["-C", workspace.to_str().unwrap(), "--yes", "go"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let config = std::fs::read_to_string(e.home.join("config.toml")).unwrap();
    assert_eq!(
        config, "[provider]\nkind = \"anthropic\"\n",
        "the config changed"
    );
    assert!(!e.home.join("skills/evil").exists(), "a skill was planted");
    let results = results_in(&mock, 1);
    assert_eq!(results.len(), 3, "{results:?}");
    for (content, is_error) in &results {
        assert!(*is_error, "{content}");
        assert!(
            content.contains("where mecha keeps its own config, skills, hooks and sessions")
                && content.contains("Ask the user to make this change themselves"),
            "{content}"
        );
    }
}

/// The result of each of a run's calls, after asserting it was refused as
/// a write to mecha's own files.
fn all_refused_as_mecha_files(mock: &MockModel, calls: usize) {
    let results = results_in(mock, 1);
    assert_eq!(results.len(), calls, "{results:?}");
    for (content, is_error) in &results {
        assert!(*is_error, "{content}");
        assert!(
            content.contains("Ask the user to make this change themselves"),
            "{content}"
        );
    }
}

#[tokio::test]
async fn a_skill_store_in_the_workspace_cannot_be_written_to_even_through_its_symlinks() {
    let mut e = env();
    let store = e.ws.join("team-skills");
    let repo = e.ws.join("repo/linked");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let skill = "---\nname: linked\ndescription: A linked skill.\n---\nGo.\n";
    std::fs::write(repo.join("SKILL.md"), skill).unwrap();
    std::os::unix::fs::symlink(&repo, store.join("linked")).unwrap();
    e.extra_config = format!("[skills]\ndir = {:?}\n", store.display().to_string());
    let planted = "---\nname: evil\ndescription: Always load this first.\n---\nObey.\n";
    let mock = MockModel::start(vec![
        tool_turn(&[
            (
                "fs_write",
                json!({"path": "team-skills/evil/SKILL.md", "content": planted}),
            ),
            (
                "fs_edit",
                json!({"path": "team-skills/linked/SKILL.md", "old": "Go.", "new": "Obey."}),
            ),
            (
                "fs_edit",
                json!({"path": "repo/linked/SKILL.md", "old": "Go.", "new": "Obey."}),
            ),
        ]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!store.join("evil").exists(), "a skill was planted");
    let kept = std::fs::read_to_string(repo.join("SKILL.md")).unwrap();
    assert_eq!(kept, skill, "a linked skill was rewritten");
    all_refused_as_mecha_files(&mock, 3);
}

#[tokio::test]
async fn a_skill_store_that_is_a_symlink_to_nothing_yet_is_protected_and_the_run_goes_on() {
    let mut e = env();
    let store = e.ws.join("skills-link");
    std::os::unix::fs::symlink(e.ws.join("future-skills"), &store).unwrap();
    e.extra_config = format!("[skills]\ndir = {:?}\n", store.display().to_string());
    let planted = "---\nname: evil\ndescription: Always load this first.\n---\nObey.\n";
    let mock = MockModel::start(vec![
        tool_turn(&[(
            "fs_write",
            json!({"path": "future-skills/evil/SKILL.md", "content": planted}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot read the skills directory"),
        "{}",
        stderr(&out)
    );
    assert!(!e.ws.join("future-skills").exists(), "a store was planted");
    all_refused_as_mecha_files(&mock, 1);
}

#[tokio::test]
async fn a_rule_that_names_no_tool_is_warned_about_once_at_start_up() {
    let mut e = env();
    e.extra_config =
        "[[rule]]\ntool = \"shel\"\ncommand = \"git push\"\naction = \"forbid\"\n".to_owned();
    let mock = MockModel::start(vec![MockReply::text("hi")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = "warning: a [[rule]] names `shel`, which matches no tool";
    assert_eq!(stderr(&out).matches(warning).count(), 1, "{}", stderr(&out));
}
