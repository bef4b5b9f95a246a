//! Triggers through the real binary: the file `trigger add` writes, what
//! `trigger show` says (the tools and skills lines even when empty), a run
//! that carries only the skills its trigger names, and the scheduler firing
//! a due trigger once, as `trigger run` does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Api, Env, env, stderr, stdout};
use mecha_testkit::{MockModel, MockReply};

async fn mecha(e: &Env, mock: &MockModel, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", args[0], &args[1..], "")
        .await
}

fn skill(e: &Env, name: &str, description: &str) {
    let dir = e.home.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nDo it.\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn a_trigger_is_added_shown_with_its_empty_lines_and_removed() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let bad = mecha(
        &e,
        &mock,
        &[
            "trigger",
            "add",
            "b",
            "--schedule",
            "0 7 * *",
            "--prompt",
            "x",
        ],
    )
    .await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("five fields"), "{}", stderr(&bad));
    let added = mecha(
        &e,
        &mock,
        &[
            "trigger",
            "add",
            "briefing",
            "--schedule",
            "0 7 * * *",
            "--prompt",
            "brief me",
        ],
    )
    .await;
    assert!(added.status.success(), "{}", stderr(&added));
    let file = e.home.join("triggers/briefing.toml");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let shown = stdout(&mecha(&e, &mock, &["trigger", "show", "briefing"]).await);
    let ws = e.ws.canonicalize().unwrap();
    for line in [
        "schedule   0 7 * * *".to_owned(),
        format!("workspace  {}", ws.display()),
        "tools      (none named: the config's tools)".to_owned(),
        "skills     (none: the run carries no skills)".to_owned(),
        "last run   never".to_owned(),
    ] {
        assert!(shown.contains(&line), "{line}\n{shown}");
    }
    assert!(shown.contains("next run   20"), "{shown}");
    let listed = stdout(&mecha(&e, &mock, &["trigger", "list"]).await);
    assert!(listed.starts_with("briefing  0 7 * * *"), "{listed}");
    let again = mecha(
        &e,
        &mock,
        &[
            "trigger",
            "add",
            "briefing",
            "--schedule",
            "@daily",
            "--prompt",
            "x",
        ],
    )
    .await;
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    let removed = mecha(&e, &mock, &["trigger", "remove", "briefing"]).await;
    assert!(removed.status.success(), "{}", stderr(&removed));
    let gone = mecha(&e, &mock, &["trigger", "show", "briefing"]).await;
    assert_eq!(gone.status.code(), Some(2));
}

#[tokio::test]
async fn a_trigger_run_carries_only_the_skills_it_names() {
    let e = env();
    skill(&e, "morning-brief", "How to write the morning briefing.");
    skill(&e, "tax-forms", "How to fill in tax forms.");
    let mock = MockModel::start(vec![MockReply::text("a"), MockReply::text("b")]).await;
    for (name, skills) in [("plain", &[][..]), ("briefing", &["morning-brief"][..])] {
        let mut args = vec![
            "trigger",
            "add",
            name,
            "--schedule",
            "@daily",
            "--prompt",
            "go",
        ];
        for skill in skills {
            args.extend(["--skill", skill]);
        }
        let added = mecha(&e, &mock, &args).await;
        assert!(added.status.success(), "{}", stderr(&added));
        let ran = mecha(&e, &mock, &["trigger", "run", name]).await;
        assert!(ran.status.success(), "{}", stderr(&ran));
    }
    let plain = mock.requests()[0].body.to_string();
    assert!(!plain.contains("morning-brief"), "{plain}");
    assert!(!plain.contains("tax-forms"), "{plain}");
    let briefing = mock.requests()[1].body.to_string();
    assert!(briefing.contains("morning-brief"), "{briefing}");
    assert!(!briefing.contains("tax-forms"), "{briefing}");
    let shown = stdout(&mecha(&e, &mock, &["trigger", "show", "briefing"]).await);
    assert!(shown.contains("skills     morning-brief"), "{shown}");
    assert!(shown.contains("exit 0"), "{shown}");
}

#[tokio::test]
async fn the_scheduler_runs_a_missed_trigger_once_as_trigger_run_does() {
    let e = env();
    let mock = MockModel::start(vec![
        MockReply::text("by hand"),
        MockReply::text("scheduled"),
    ])
    .await;
    // Yearly, on the 1st of January: its last run a year and more ago.
    let added = mecha(
        &e,
        &mock,
        &[
            "trigger",
            "add",
            "yearly",
            "--schedule",
            "0 0 1 1 *",
            "--prompt",
            "sum up",
        ],
    )
    .await;
    assert!(added.status.success(), "{}", stderr(&added));
    let by_hand = mecha(&e, &mock, &["trigger", "run", "yearly"]).await;
    assert!(by_hand.status.success(), "{}", stderr(&by_hand));
    let state = e.home.join("triggers/.state/yearly.json");
    std::fs::write(
        &state,
        r#"{"started":"2024-06-01T12:00:00+00:00","exit":0}"#,
    )
    .unwrap();
    let shown = stdout(&mecha(&e, &mock, &["trigger", "show", "yearly"]).await);
    assert!(
        shown.contains("missed     the run due 2025-01-01"),
        "{shown}"
    );

    let first = mecha(&e, &mock, &["triggers", "--once"]).await;
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("yearly: the run due 2025-01-01 00:00 was missed"),
        "{}",
        stderr(&first)
    );
    assert!(
        stderr(&first).contains("yearly: ended"),
        "{}",
        stderr(&first)
    );
    let second = mecha(&e, &mock, &["triggers", "--once"]).await;
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(!stderr(&second).contains("yearly:"), "{}", stderr(&second));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "one run by hand, one scheduled");
    for part in ["messages", "tools", "system"] {
        assert_eq!(
            requests[0].body[part], requests[1].body[part],
            "{part}: a scheduled run is the run `trigger run` makes"
        );
    }
}
