//! The session file through the real writer and loader: what it holds, its
//! permissions, a torn last line, corrupt files, finding sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{assistant, call, lines, result, tmp, turn, user, write_all};
use mecha_core::{Journal, Message, Record, Taint};
use mecha_session::{SCHEMA_VERSION, SessionError, Writer};
use serde_json::json;

fn every_record() -> Vec<Record> {
    vec![
        user("hello"),
        call("t1", "http_fetch", json!({"url": "https://example.com"})),
        result("t1", "a page", true),
        Record::Rewind { keep: 1 },
        Record::Taint {
            taint: Taint {
                private_data: true,
                untrusted_input: false,
            },
        },
        Record::Surface {
            by: vec!["deploy".into()],
            tools: vec!["fs_read".into(), "skill".into()],
        },
        Record::ToolState {
            tool: "todo".into(),
            state: json!([{"text": "a", "status": "done"}]),
        },
        Record::Compaction {
            messages: vec![Message::user_text("first"), Message::user_text("summary")],
            tokens_before: 900,
            tokens_after: 100,
        },
        turn(1),
        Record::Attached {
            attached: vec!["[mecha: the user ran `ls`]\na.txt".into()],
        },
    ]
}

#[test]
fn every_record_reads_back_as_written() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &every_record());
    let loaded = t.store.load(writer.id()).unwrap();
    let records: Vec<Record> = loaded.entries.iter().map(|e| e.record.clone()).collect();
    assert_eq!(records, every_record());
    let seqs: Vec<u64> = loaded.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<u64>>());
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);

    let h = &loaded.header;
    assert_eq!(h.schema, SCHEMA_VERSION);
    assert_eq!(h.id, writer.id());
    assert_eq!(h.workspace, t.ws);
    assert_eq!(
        (h.model.as_str(), h.command.as_str()),
        ("test-model", "run")
    );
    assert_eq!(h.mecha, env!("CARGO_PKG_VERSION"));
    // RFC 3339 in UTC, as the id's time says.
    let id_time = &h.id[..15];
    let started: String = h
        .started
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    assert_eq!(
        id_time.replace('-', ""),
        started,
        "{} vs {}",
        h.id,
        h.started
    );
    assert!(
        h.started.ends_with('Z') && h.started.len() == 24,
        "{}",
        h.started
    );
    assert_eq!(writer.path(), t.store.dir().join(format!("{}.jsonl", h.id)));

    // The layout the format promises: a header line, then `seq` and the
    // record's own fields on each line.
    let lines = lines(writer.path());
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines[0]["schema"], 1);
    assert_eq!(lines[1]["seq"], 1);
    assert_eq!(lines[1]["type"], "message");
    assert_eq!(lines[3]["external"], json!(["t1"]));
    assert_eq!(lines[9]["type"], "turn");
}

#[test]
fn the_directory_is_0700_and_files_0600() {
    let t = tmp();
    let writer = t.create();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(t.store.dir()), 0o700);
    assert_eq!(mode(writer.path()), 0o600);
}

#[test]
fn a_wider_existing_directory_is_narrowed() {
    let t = tmp();
    fs::create_dir_all(t.store.dir()).unwrap();
    fs::set_permissions(t.store.dir(), fs::Permissions::from_mode(0o755)).unwrap();
    t.create();
    let mode = fs::metadata(t.store.dir()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn ids_are_unique_and_sort_by_time() {
    let t = tmp();
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(t.create().id().to_owned());
    }
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), 20);
    for id in &ids {
        let (time, random) = id.split_at(16);
        assert!(time.len() == 16 && time.as_bytes()[8] == b'-', "{id}");
        assert!(
            random.len() == 6 && random.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert!(ids.windows(2).all(|w| w[0][..15] <= w[1][..15]));
}

/// Writes `records` and then `tail` straight onto the file, as a crash
/// mid-write would leave it.
fn torn_session(t: &common::Tmp, tail: &[u8]) -> String {
    let writer = t.create();
    write_all(&writer, &[user("one"), assistant("two"), turn(1)]);
    let (id, path) = (writer.id().to_owned(), writer.path().to_owned());
    drop(writer);
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(tail)
        .unwrap();
    id
}

#[test]
fn a_torn_last_line_loads_with_a_warning_and_resumes_whole() {
    for tail in [
        &br#"{"seq":4,"type":"message","message":{"role":"us"#[..],
        // Cut inside a string that held a newline: ends in one, reads as nothing.
        &b"{\"seq\":4,\"type\":\"mess\n"[..],
    ] {
        let t = tmp();
        let id = torn_session(&t, tail);
        let loaded = t.store.load(&id).unwrap();
        assert_eq!(loaded.entries.len(), 3);
        assert_eq!(loaded.state.messages.len(), 2);
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        let warning = &loaded.warnings[0];
        assert!(warning.contains(&format!("{id}.jsonl")), "{warning}");
        assert!(warning.contains("line 5"), "{warning}");

        let writer = Writer::reopen(&loaded).unwrap();
        write_all(&writer, &[user("three")]);
        drop(writer);
        let again = t.store.load(&id).unwrap();
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        let seqs: Vec<u64> = again.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        let texts: Vec<String> = again.state.messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["one", "two", "three"]);
    }
}

#[test]
fn a_reopened_session_continues_its_sequence() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one"), turn(1)]);
    let id = writer.id().to_owned();
    drop(writer);
    let writer = Writer::reopen(&t.store.load(&id).unwrap()).unwrap();
    assert_eq!(writer.id(), id);
    write_all(&writer, &[user("two"), turn(2)]);
    drop(writer);
    let loaded = t.store.load(&id).unwrap();
    let seqs: Vec<u64> = loaded.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(loaded.state.turns, 2);
}

#[test]
fn a_session_being_written_cannot_be_reopened_by_another() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one")]);
    let loaded = t.store.load(writer.id()).unwrap();
    let Err(e) = Writer::reopen(&loaded) else {
        panic!("reopened a session another writer holds");
    };
    assert!(matches!(e, SessionError::Busy { .. }), "{e}");
    assert!(e.to_string().contains("in use by another mecha"), "{e}");
    drop(writer);
    assert!(Writer::reopen(&loaded).is_ok());
}

#[test]
fn a_session_that_changed_since_it_was_loaded_is_not_reopened() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one")]);
    let loaded = t.store.load(writer.id()).unwrap();
    write_all(&writer, &[user("two")]);
    drop(writer);
    let Err(e) = Writer::reopen(&loaded) else {
        panic!("reopened a stale load");
    };
    assert!(matches!(e, SessionError::Stale { .. }), "{e}");
}

fn rewrite_line(path: &Path, n: usize, line: &str) {
    let text = fs::read_to_string(path).unwrap();
    let mut all: Vec<&str> = text.lines().collect();
    all[n - 1] = line;
    fs::write(path, all.join("\n") + "\n").unwrap();
}

#[test]
fn a_corrupt_line_in_the_middle_is_an_error_naming_file_and_line() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one"), assistant("two"), user("three")]);
    let (id, path) = (writer.id().to_owned(), writer.path().to_owned());
    drop(writer);
    rewrite_line(&path, 3, "{\"seq\":2,\"type\":\"message\",\"mess");
    let e = t.store.load(&id).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SessionError::Corrupt { line: 3, .. }), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.contains("line 3") && text.contains("mecha sessions show"),
        "{text}"
    );

    // Showing still reads the rest, and says what it skipped; such a load
    // is never resumed.
    let salvaged = t.store.load_salvaging(&id).unwrap();
    let texts: Vec<String> = salvaged.state.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["one", "three"]);
    assert!(
        salvaged.warnings[0].contains("line 3"),
        "{:?}",
        salvaged.warnings
    );
    assert!(matches!(
        Writer::reopen(&salvaged),
        Err(SessionError::Stale { .. })
    ));
}

#[test]
fn a_sequence_that_does_not_increase_is_an_error() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one"), assistant("two"), user("three")]);
    let (id, path) = (writer.id().to_owned(), writer.path().to_owned());
    drop(writer);
    let mut third = lines(&path)[3].clone();
    third["seq"] = json!(2);
    rewrite_line(&path, 4, &third.to_string());
    let e = t.store.load(&id).unwrap_err();
    assert!(matches!(e, SessionError::Corrupt { line: 4, .. }), "{e}");
    assert!(
        e.to_string()
            .contains("sequence number 2 does not follow 2"),
        "{e}"
    );
}

#[test]
fn an_unknown_schema_version_is_refused_by_name() {
    let t = tmp();
    let writer = t.create();
    write_all(&writer, &[user("one")]);
    let (id, path) = (writer.id().to_owned(), writer.path().to_owned());
    drop(writer);
    let mut header = lines(&path)[0].clone();
    header["schema"] = json!(7);
    header["mecha"] = json!("9.0.0");
    rewrite_line(&path, 1, &header.to_string());
    let e = t.store.load(&id).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SessionError::Schema { found: 7, .. }), "{text}");
    assert!(
        text.contains("format 7") && text.contains("mecha 9.0.0"),
        "{text}"
    );
}

#[test]
fn an_empty_or_headless_file_says_what_to_do() {
    let t = tmp();
    fs::create_dir_all(t.store.dir()).unwrap();
    for (name, bytes) in [("empty", &b""[..]), ("half", &b"{\"type\":\"hea"[..])] {
        fs::write(t.store.dir().join(format!("{name}.jsonl")), bytes).unwrap();
        let e = t.store.load(name).unwrap_err();
        assert!(matches!(e, SessionError::Empty { .. }), "{e}");
        assert!(e.to_string().contains("delete the file"), "{e}");
    }
}

#[test]
fn replay_applies_rewinds_compactions_and_the_last_of_each_state() {
    let t = tmp();
    let writer = t.create();
    let armed = Taint {
        private_data: true,
        untrusted_input: true,
    };
    write_all(
        &writer,
        &[
            user("task"),
            call("t1", "http_fetch", json!({})),
            result("t1", "page", true),
            turn(1),
            assistant("refused answer"),
            Record::Rewind { keep: 3 },
            Record::Taint { taint: armed },
            // An edited file cannot take the taint back.
            Record::Taint {
                taint: Taint::default(),
            },
            Record::Surface {
                by: vec!["a".into()],
                tools: vec!["x".into()],
            },
            Record::Surface {
                by: vec!["a".into(), "b".into()],
                tools: vec!["x".into(), "y".into()],
            },
            Record::ToolState {
                tool: "todo".into(),
                state: json!(1),
            },
            Record::ToolState {
                tool: "todo".into(),
                state: json!(2),
            },
            turn(2),
            Record::Compaction {
                messages: vec![Message::user_text("task"), Message::user_text("summary")],
                tokens_before: 10,
                tokens_after: 2,
            },
            assistant("after"),
            // Turns number the model's requests; the count is the highest.
            turn(5),
        ],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    let texts: Vec<String> = state.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["task", "summary", "after"]);
    assert_eq!(state.taint, armed);
    assert_eq!(
        state.surface,
        Some((vec!["a".into(), "b".into()], vec!["x".into(), "y".into()]))
    );
    assert_eq!(state.tool_states["todo"], json!(2));
    assert_eq!(state.turns, 5);
    assert_eq!(state.usage.input_tokens, 30);
    assert!(state.external.contains("t1"));

    // A rewind alone: the refused answer is gone, the rest kept.
    let writer = t.create();
    write_all(
        &writer,
        &[
            user("a"),
            assistant("b"),
            Record::Rewind { keep: 1 },
            user("c"),
        ],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    let texts: Vec<String> = state.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["a", "c"]);
}

#[test]
fn what_the_user_attached_waits_until_a_prompt_takes_it() {
    let t = tmp();
    let attached = |blocks: &[&str]| Record::Attached {
        attached: blocks.iter().map(|b| (*b).to_owned()).collect(),
    };
    let writer = t.create();
    write_all(
        &writer,
        &[
            attached(&["one"]),
            attached(&["one", "two"]),
            user("a prompt takes them"),
            assistant("ok"),
            attached(&["three"]),
        ],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    assert_eq!(state.attached, ["three"]);

    let writer = t.create();
    write_all(&writer, &[attached(&["one"]), user("taken")]);
    let state = t.store.load(writer.id()).unwrap().state;
    assert!(state.attached.is_empty(), "{:?}", state.attached);
}

#[test]
fn an_external_result_without_its_taint_record_still_comes_back_untrusted() {
    // mecha died after journaling the results and before the taint record
    // that follows them: the file says the page came from outside, and
    // that is enough.
    let t = tmp();
    let writer = t.create();
    write_all(
        &writer,
        &[
            user("read the page"),
            call("t1", "http_fetch", json!({"url": "https://example.com"})),
            result("t1", "a page a stranger wrote", true),
        ],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    assert_eq!(
        state.taint,
        Taint {
            private_data: false,
            untrusted_input: true,
        }
    );

    // A result the harness did not mark adds nothing of itself.
    let writer = t.create();
    write_all(
        &writer,
        &[
            user("list"),
            call("t1", "fs_list", json!({})),
            result("t1", "file 3 a.txt", false),
        ],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    assert_eq!(state.taint, Taint::default());
}

#[test]
fn a_dangling_call_is_left_for_the_resumer() {
    let t = tmp();
    let writer = t.create();
    write_all(
        &writer,
        &[user("go"), call("t1", "shell", json!({"command": "ls"}))],
    );
    let state = t.store.load(writer.id()).unwrap().state;
    assert_eq!(state.messages.len(), 2);
}

#[test]
fn loading_ten_thousand_messages_is_fast() {
    let t = tmp();
    let writer = t.create();
    for i in 0..5_000u32 {
        writer.append(&call(
            &format!("t{i}"),
            "fs_read",
            json!({"path": format!("src/file{i}.rs")}),
        ));
        writer.append(&result(
            &format!("t{i}"),
            &"fn main() {}\n".repeat(20),
            false,
        ));
        writer.append(&turn(i + 1));
    }
    writer.sync();
    let started = std::time::Instant::now();
    let loaded = t.store.load(writer.id()).unwrap();
    let took = started.elapsed();
    assert_eq!(loaded.state.messages.len(), 10_000);
    eprintln!("loaded 10,000 messages in {took:?}");
    // Generous for a loaded debug build; quadratic work would take seconds.
    assert!(took.as_millis() < 1_000, "{took:?}");
    let started = std::time::Instant::now();
    let listed = t.store.list().unwrap();
    eprintln!("listed it in {:?}", started.elapsed());
    assert_eq!(listed[0].turns, 5_000);
}
