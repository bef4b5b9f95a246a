//! Finding sessions: by id or prefix, the newest of a workspace, and the
//! listing, broken files included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;

use common::{call, tmp, turn, user, write_all};
use mecha_session::SessionError;
use serde_json::json;

/// A session file with this id, holding only a header.
fn bare(t: &common::Tmp, id: &str, ws: &Path, started: &str) {
    fs::create_dir_all(t.store.dir()).unwrap();
    let header = json!({"type": "header", "schema": 1, "mecha": "0.1.0", "id": id,
        "workspace": ws, "model": "m", "started": started, "command": "run"});
    fs::write(
        t.store.dir().join(format!("{id}.jsonl")),
        format!("{header}\n"),
    )
    .unwrap();
}

#[test]
fn sessions_are_found_by_id_or_unique_prefix() {
    let t = tmp();
    bare(
        &t,
        "20260101-000000-aaaaaa",
        &t.ws,
        "2026-01-01T00:00:00.000Z",
    );
    bare(
        &t,
        "20260101-000000-aaaabb",
        &t.ws,
        "2026-01-01T00:00:00.000Z",
    );
    assert_eq!(
        t.store.load("20260101-000000-aaaaaa").unwrap().header.id,
        "20260101-000000-aaaaaa"
    );
    assert_eq!(
        t.store.load("20260101-000000-aaaab").unwrap().header.id,
        "20260101-000000-aaaabb"
    );

    let e = t.store.load("20260101-000000-aaaa").unwrap_err();
    assert!(matches!(e, SessionError::Ambiguous { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("20260101-000000-aaaaaa") && text.contains("20260101-000000-aaaabb"),
        "{text}"
    );
    assert!(text.contains("mecha sessions list"), "{text}");

    for unknown in [
        "zzz",
        "",
        "../sessions/20260101-000000-aaaaaa",
        "/etc/passwd",
    ] {
        let e = t.store.load(unknown).unwrap_err();
        assert!(matches!(e, SessionError::Unknown(_)), "{unknown}: {e}");
        assert!(e.to_string().contains("mecha sessions list"), "{e}");
    }
}

#[test]
fn a_workspace_lists_its_own_sessions_and_latest_in_picks_the_newest() {
    let t = tmp();
    let other = t.dir.path().join("other");
    fs::create_dir_all(&other).unwrap();
    bare(
        &t,
        "20260101-000000-000001",
        &t.ws,
        "2026-01-01T00:00:00.100Z",
    );
    // Same second, later millisecond, an id that sorts first.
    bare(
        &t,
        "20260101-000000-000000",
        &t.ws,
        "2026-01-01T00:00:00.900Z",
    );
    bare(
        &t,
        "20260102-000000-000000",
        &other,
        "2026-01-02T00:00:00.000Z",
    );
    let latest = |ws: &Path| t.store.latest_in(ws).unwrap().map(|l| l.header.id);
    assert_eq!(latest(&t.ws).as_deref(), Some("20260101-000000-000000"));
    assert_eq!(latest(&other).as_deref(), Some("20260102-000000-000000"));
    // The same directory by another path.
    let link = t.dir.path().join("link");
    std::os::unix::fs::symlink(&t.ws, &link).unwrap();
    assert_eq!(latest(&link).as_deref(), Some("20260101-000000-000000"));
    assert_eq!(latest(t.dir.path()), None);
    // The listing of a workspace holds the same sessions, newest first.
    let listed = |ws: &Path| -> Vec<String> {
        let all = t.store.list_in(ws).unwrap();
        all.into_iter().map(|l| l.id).collect()
    };
    assert_eq!(
        listed(&link),
        ["20260101-000000-000000", "20260101-000000-000001"]
    );
    assert!(listed(t.dir.path()).is_empty());
    // Real sessions, written a moment apart.
    let first = t.create_in(&other);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let second = t.create_in(&other);
    assert_eq!(latest(&other).as_deref(), Some(second.id()));
    drop(first);
}

#[test]
fn the_listing_shows_every_session_newest_first_broken_ones_included() {
    let t = tmp();
    let old = t.create();
    write_all(&old, &[user("old\n  task"), turn(1)]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let new = t.create();
    write_all(
        &new,
        &[
            user("new task"),
            // A tool input holding what looks like a turn record is not one.
            call(
                "t1",
                "fs_write",
                json!({"content": "{\"type\":\"turn\",\"turn\":99}"}),
            ),
            turn(1),
            user("second prompt"),
            turn(2),
        ],
    );
    fs::write(t.store.dir().join("broken.jsonl"), "not json\n").unwrap();
    fs::write(t.store.dir().join("notes.txt"), "not a session").unwrap();

    let all = t.store.list().unwrap();
    let ids: Vec<&str> = all.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, [new.id(), old.id(), "broken"]);
    assert_eq!(
        (all[0].turns, all[0].first_prompt.as_str()),
        (2, "new task")
    );
    assert_eq!(
        (all[1].turns, all[1].first_prompt.as_str()),
        (1, "old task")
    );
    assert_eq!(all[0].workspace, t.ws);
    assert!(all[0].problem.is_none());
    let problem = all[2].problem.as_deref().unwrap();
    assert!(
        problem.contains("broken.jsonl") && problem.contains("line 1"),
        "{problem}"
    );
}

#[test]
fn a_long_first_prompt_is_cut_in_the_listing() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user(&"é".repeat(500))]);
    let listed = &t.store.list().unwrap()[0];
    assert_eq!(listed.first_prompt.chars().count(), 201);
    assert!(listed.first_prompt.ends_with('…'));
}

#[test]
fn no_sessions_directory_is_no_sessions() {
    let t = tmp();
    assert!(t.store.list().unwrap().is_empty());
    assert!(t.store.latest_in(&t.ws).unwrap().is_none());
    assert!(matches!(t.store.load("x"), Err(SessionError::Unknown(_))));
}

#[test]
fn records_with_their_fields_in_another_order_still_read() {
    let t = tmp();
    bare(
        &t,
        "20260101-000000-abcdef",
        &t.ws,
        "2026-01-01T00:00:00.000Z",
    );
    let path = t.store.dir().join("20260101-000000-abcdef.jsonl");
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    let message = json!({"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        "type": "message", "seq": 1});
    let turn = json!({"usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 0,
        "cache_write_tokens": 0}, "turn": 4, "type": "turn", "seq": 2});
    writeln!(file, "{message}\n{turn}").unwrap();
    let loaded = t.store.load("20260101-000000-abcdef").unwrap();
    assert_eq!(
        loaded.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(loaded.state.turns, 4);
    let listed = &t.store.list().unwrap()[0];
    assert_eq!((listed.turns, listed.first_prompt.as_str()), (4, "hi"));
}
