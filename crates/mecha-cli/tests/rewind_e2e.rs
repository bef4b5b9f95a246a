//! Rewind through the real binary: a three-turn session that writes,
//! runs the shell and edits, put back to before each turn byte for byte
//! with modes; the conversation cut back with its taint kept; a file
//! edited by hand refused unless forced; a repository whose config and
//! hooks would run under git checkpointed without either running.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Api, Env, env, only_session, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

type Tree = BTreeMap<String, (Vec<u8>, u32)>;

/// Every file under `root` but `.git`, with its bytes and mode.
fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
                out.insert(rel, (fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

async fn chat(e: &Env, mock: &MockModel, resume: Option<&str>, prompt: &str) {
    let mut args = vec!["-y"];
    if let Some(id) = resume {
        args.extend(["--resume", id]);
    }
    let out = e
        .mecha(
            Api::OpenAi,
            mock,
            "k",
            "chat",
            &args,
            &format!("{prompt}\n"),
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
}

async fn mecha(e: &Env, mock: &MockModel, command: &str, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", command, args, "").await
}

/// A three-turn session over a small workspace, and the workspace before
/// each turn and after the last.
async fn three_turns(e: &Env, mock: &MockModel) -> (String, Vec<Tree>) {
    fs::write(e.ws.join("a.txt"), "original a\n").unwrap();
    fs::write(e.ws.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(e.ws.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(e.ws.join("gone.txt"), "deleted in turn 2\n").unwrap();
    let mut states = vec![tree(&e.ws)];
    chat(e, mock, None, "write the notes").await;
    let id = only_session(e);
    states.push(tree(&e.ws));
    chat(e, mock, Some(&id), "tidy with the shell").await;
    states.push(tree(&e.ws));
    chat(e, mock, Some(&id), "edit a").await;
    states.push(tree(&e.ws));
    (id, states)
}

fn script() -> Vec<MockReply> {
    let shell = "printf 'changed by shell\\n' > a.txt && chmod 600 run.sh && rm gone.txt \
                 && mkdir -p made/deep && printf x > made/deep/f";
    vec![
        tool_turn(&[(
            "fs_write",
            json!({"path": "notes.md", "content": "turn one\n"}),
        )]),
        MockReply::text("wrote"),
        tool_turn(&[("shell", json!({"command": shell}))]),
        MockReply::text("tidied"),
        tool_turn(&[(
            "fs_edit",
            json!({"path": "a.txt", "old": "changed by shell", "new": "edited in turn 3"}),
        )]),
        MockReply::text("edited"),
        MockReply::text("again"),
    ]
}

#[tokio::test]
async fn every_turn_is_undone_byte_for_byte_with_its_modes() {
    undone_turn_by_turn(env()).await;
}

/// The same with the shell confined by bubblewrap: what it changed from
/// inside the sandbox is undone the same way.
#[tokio::test]
async fn a_confined_shells_changes_are_undone_too() {
    if !common::have(
        "bwrap",
        "the confined rewind test",
        "bubblewrap (apt-get install bubblewrap)",
    ) {
        return;
    }
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    undone_turn_by_turn(e).await;
}

async fn undone_turn_by_turn(e: Env) {
    let mock = MockModel::start(script()).await;
    let (id, states) = three_turns(&e, &mock).await;
    assert_ne!(states[1], states[0]);
    assert_ne!(states[2], states[1]);
    assert_ne!(states[3], states[2]);

    let out = mecha(&e, &mock, "rewind", &[&id, "--list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    for line in [
        "1  write the notes",
        "notes.md",
        "2  tidy with the shell",
        "a.txt, gone.txt, made/deep/f, run.sh",
        "3  edit a",
    ] {
        assert!(listed.contains(line), "{line:?} in:\n{listed}");
    }

    let out = mecha(&e, &mock, "diff", &[&id, "--turn", "3"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let diff = stdout(&out);
    assert!(diff.contains("changed a.txt"), "{diff}");
    assert!(
        diff.contains("-changed by shell\n+edited in turn 3"),
        "{diff}"
    );

    for turn in [3, 2, 1] {
        let n = turn.to_string();
        let out = mecha(&e, &mock, "rewind", &[&id, "--to", &n, "--files"]).await;
        assert!(out.status.success(), "turn {turn}: {}", stderr(&out));
        assert_eq!(
            tree(&e.ws),
            states[turn - 1],
            "the workspace before turn {turn}"
        );
    }
    assert!(
        !e.ws.join("made").exists(),
        "the shell's new directories are gone"
    );
}

#[tokio::test]
async fn a_file_edited_by_hand_since_the_session_is_refused_unless_forced() {
    let e = env();
    let mock = MockModel::start(script()).await;
    let (id, states) = three_turns(&e, &mock).await;
    fs::write(e.ws.join("a.txt"), "my own work\n").unwrap();

    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("a.txt") && said.contains("--force"), "{said}");
    assert_eq!(
        fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "my own work\n"
    );
    assert_eq!(
        tree(&e.ws).get("notes.md"),
        states[3].get("notes.md"),
        "nothing else moved"
    );

    let out = mecha(
        &e,
        &mock,
        "rewind",
        &[&id, "--to", "1", "--files", "--force"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(tree(&e.ws), states[0]);
}

#[tokio::test]
async fn the_conversation_goes_back_to_before_a_prompt_and_keeps_its_taint() {
    let e = env();
    let mock = MockModel::start(script()).await;
    let (id, _) = three_turns(&e, &mock).await;
    let journal = e.home.join("sessions").join(format!("{id}.jsonl"));
    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "2", "--conversation"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        tree(&e.ws).get("a.txt").unwrap().0,
        b"edited in turn 3\n",
        "files untouched"
    );
    let text = fs::read_to_string(&journal).unwrap();
    let last = text.lines().last().unwrap();
    // The first prompt, its call, the call's result and the answer.
    assert!(
        last.contains("\"type\":\"rewind\"") && last.contains("\"keep\":4"),
        "{last}"
    );

    let out = mecha(&e, &mock, "sessions", &["show", &id]).await;
    assert!(
        stdout(&out).contains("rewound to the first 4 messages"),
        "{}",
        stdout(&out)
    );
    // The shell's call in turn 2 tainted the session; the cut keeps it.
    let taint = text.find("\"type\":\"taint\"").unwrap();
    assert!(taint < text.find("\"type\":\"rewind\"").unwrap());

    chat(&e, &mock, Some(&id), "after the rewind").await;
    let requests = mock.requests();
    let sent = requests.last().unwrap().body["messages"].to_string();
    assert!(
        sent.contains("write the notes") && sent.contains("after the rewind"),
        "{sent}"
    );
    assert!(
        !sent.contains("tidy with the shell") && !sent.contains("edit a"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_repository_config_and_hooks_never_run_and_git_state_is_untouched() {
    let e = env();
    let marker = e.home.join("git-ran");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&e.ws)
            .env("HOME", &e.home)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    fs::write(e.ws.join("tracked.txt"), "tracked\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "tracked.txt"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "first",
    ]);
    let hook = e.ws.join("evil-hook");
    fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir_all(e.ws.join(".git/hooks")).unwrap();
    for name in ["post-checkout", "post-index-change", "pre-commit"] {
        fs::copy(&hook, e.ws.join(".git/hooks").join(name)).unwrap();
    }
    let config = fs::read_to_string(e.ws.join(".git/config")).unwrap();
    fs::write(
        e.ws.join(".git/config"),
        format!(
            "{config}[core]\n\tfsmonitor = {}\n[filter \"x\"]\n\tclean = {}\n\tsmudge = {}\n",
            hook.display(),
            hook.display(),
            hook.display()
        ),
    )
    .unwrap();
    fs::write(e.ws.join(".gitattributes"), "* filter=x\n").unwrap();
    let git_dir = |root: &Path| tree(&root.join(".git"));
    let before = git_dir(&e.ws);

    let mock = MockModel::start(vec![
        tool_turn(&[(
            "fs_write",
            json!({"path": "tracked.txt", "content": "changed\n"}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    chat(&e, &mock, None, "change it").await;
    let id = only_session(&e);
    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(e.ws.join("tracked.txt")).unwrap(),
        "tracked\n"
    );
    assert!(
        !marker.exists(),
        "a repository hook, filter or fsmonitor ran"
    );
    assert_eq!(
        git_dir(&e.ws),
        before,
        "refs, index and config are as they were"
    );
}

#[tokio::test]
async fn prune_keeps_what_sessions_name_and_doctor_shows_the_store() {
    let e = env();
    let mock = MockModel::start(script()).await;
    let (id, states) = three_turns(&e, &mock).await;
    let out = mecha(&e, &mock, "rewind", &["--prune"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("pruned 0 snapshots"),
        "{}",
        stdout(&out)
    );
    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(tree(&e.ws), states[0]);

    let out = mecha(&e, &mock, "doctor", &[]).await;
    let report = stdout(&out);
    let line = report
        .lines()
        .find(|l| l.contains("checkpoints:"))
        .unwrap_or_default();
    assert!(
        line.starts_with("ok") && line.contains("checkpoints"),
        "{report}"
    );

    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "9"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("its turns are 1 to 3"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_file_edited_by_hand_between_turns_is_refused_too() {
    let e = env();
    let mock = MockModel::start(script()).await;
    fs::write(e.ws.join("a.txt"), "original a\n").unwrap();
    fs::write(e.ws.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::write(e.ws.join("gone.txt"), "x\n").unwrap();
    fs::write(e.ws.join("mine.txt"), "before the session\n").unwrap();
    chat(&e, &mock, None, "write the notes").await;
    let id = only_session(&e);
    // Between the prompts, by hand: nothing the agent did.
    fs::write(e.ws.join("mine.txt"), "typed between turns\n").unwrap();
    chat(&e, &mock, Some(&id), "tidy with the shell").await;
    chat(&e, &mock, Some(&id), "edit a").await;

    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("mine.txt"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("a.txt"),
        "the agent's own changes are no conflict"
    );
    assert_eq!(
        fs::read_to_string(e.ws.join("mine.txt")).unwrap(),
        "typed between turns\n"
    );
    // Before turn 2 the hand edit was already there: nothing to refuse.
    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "2", "--files"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(e.ws.join("mine.txt")).unwrap(),
        "typed between turns\n"
    );
    assert_eq!(
        fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "original a\n"
    );
}
