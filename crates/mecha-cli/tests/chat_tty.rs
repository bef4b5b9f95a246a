//! `mecha chat` at a real terminal (a pseudo-terminal with mecha as its
//! session leader), typed at through its line editor: editing, history across
//! chats, bracketed paste, Ctrl-C, slash commands, and an approval
//! question in the middle of a turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use common::pty::{PATIENCE, Terminal};

use mecha_testkit::{MockModel, MockReply, RecordedRequest};
use tokio::sync::mpsc::UnboundedReceiver;

/// What the editor writes each time it starts reading (bracketed paste
/// on): counting it tells how many reads have begun, so keys are typed
/// only once the editor is there to read them.
const READING: &str = "\u{1b}[?2004h";

const ENTER: &[u8] = b"\r";
const LEFT: &[u8] = b"\x1b[D";
const UP: &[u8] = b"\x1b[A";
const CTRL_C: &[u8] = b"\x03";

/// A chat under a pseudo-terminal.
struct Chat {
    terminal: Terminal,
    requests: UnboundedReceiver<RecordedRequest>,
}

impl Chat {
    fn start(e: &common::Env, mock: &MockModel) -> Self {
        let mecha = common::at_terminal(e, mock, &["chat"]);
        Self {
            terminal: Terminal::start(&mecha, 24, 200),
            requests: mock.subscribe(),
        }
    }

    fn screen(&self) -> String {
        self.terminal.screen()
    }

    /// Waits until the editor has begun its `n`th read. Async: the mock
    /// model answers on this same runtime meanwhile.
    async fn wait_reading(&self, n: usize) {
        let what = format!("the editor's read {n}");
        self.terminal
            .wait_until(&what, |screen| screen.matches(READING).count() >= n)
            .await;
    }

    /// Waits for the `n`th read, then types `keys`.
    async fn type_at(&mut self, n: usize, keys: &[u8]) {
        self.wait_reading(n).await;
        self.terminal.type_keys(keys);
    }

    async fn next_request(&mut self) -> RecordedRequest {
        tokio::time::timeout(PATIENCE, self.requests.recv())
            .await
            .unwrap_or_else(|_| panic!("mecha sent no request: {:?}", self.screen()))
            .unwrap()
    }

    /// Waits for chat to end; its exit status and everything on screen.
    async fn end(self) -> (ExitStatus, String) {
        let ended = self.terminal.end().await;
        (ended.status, ended.screen)
    }
}

/// The last user message's text.
fn last_prompt(request: &RecordedRequest) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let content = &messages.last().unwrap()["content"];
    match content.as_str() {
        Some(text) => text.to_owned(),
        None => content[0]["text"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test]
async fn a_line_is_edited_before_it_is_sent() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("ok"), MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    // "say helo", back one, insert "l": "say hello".
    let keys = [b"say helo".as_slice(), LEFT, b"l", ENTER].concat();
    chat.type_at(1, &keys).await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "say hello");
    // Enter after a trailing `\` goes on to the next line.
    chat.type_at(2, b"one \\\rtwo\r").await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "one \ntwo");
    chat.type_at(3, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
}

#[tokio::test]
async fn up_recalls_a_prompt_from_an_earlier_chat_and_the_history_is_private() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("one"), MockReply::text("two")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"the first chat's prompt\r").await;
    chat.next_request().await;
    chat.type_at(2, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");

    let history = e.home.join("chat_history");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&history).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "prompts can be private");

    let mut chat = Chat::start(&e, &mock);
    // Up twice: past `/quit`, to the prompt.
    chat.type_at(1, &[UP, UP, ENTER].concat()).await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "the first chat's prompt");
    chat.type_at(2, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
}

#[tokio::test]
async fn a_bracketed_paste_of_three_lines_is_one_prompt() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![
        MockReply::text("got the paste"),
        MockReply::text("got the line"),
    ])
    .await;
    let mut chat = Chat::start(&e, &mock);
    // A terminal sends a long paste in several writes, newlines as CR.
    chat.type_at(1, b"\x1b[200~line one\r").await;
    for part in [b"\rline two\r".as_slice(), b"line three\x1b[201~"] {
        tokio::time::sleep(Duration::from_millis(150)).await;
        chat.terminal.type_keys(part);
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    chat.terminal.type_keys(ENTER);
    let first = chat.next_request().await;
    assert_eq!(last_prompt(&first), "line one\n\nline two\nline three");
    chat.type_at(2, b"typed alone\r").await;
    let second = chat.next_request().await;
    assert_eq!(second.body["messages"].as_array().unwrap().len(), 3);
    assert_eq!(last_prompt(&second), "typed alone");
    chat.type_at(3, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
}

#[tokio::test]
async fn slash_commands_are_answered_by_mecha_and_never_reach_the_model() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"/help\r").await;
    chat.type_at(2, b"/tools\r").await;
    chat.type_at(3, b"/skills\r").await;
    chat.type_at(4, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(screen.contains("commands (answered by mecha"), "{screen}");
    assert!(screen.contains("tools this run offers"), "{screen}");
    assert!(screen.contains("fs_read"), "{screen}");
    assert!(screen.contains("skills this run carries"), "{screen}");
    assert!(mock.requests().is_empty(), "{:?}", mock.requests());
}

/// Tab completes a `/command` and an `@path` from the workspace, as in the
/// TUI; nothing outside the workspace is offered.
#[tokio::test]
async fn tab_completes_a_command_and_a_mention() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::write(e.ws.join("notes-for-tab.txt"), "the note's body\n").unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"/too\t\r").await;
    chat.type_at(2, b"read @notes-f\t\r").await;
    let request = chat.next_request().await;
    let sent = request.body["messages"].to_string();
    assert!(sent.contains("read @notes-for-tab.txt"), "{sent}");
    assert!(sent.contains("the note's body"), "{sent}");
    chat.type_at(3, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(screen.contains("tools this run offers"), "{screen}");
}

#[tokio::test]
async fn an_unknown_command_lists_the_commands_and_a_path_is_a_prompt() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"/halp\r").await;
    chat.type_at(2, b"/etc/hosts is broken\r").await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "/etc/hosts is broken");
    chat.type_at(3, b"/exit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(screen.contains("/halp is not a command here"), "{screen}");
    assert!(
        screen.contains("/skills [NAME]") && screen.contains("/quit"),
        "the commands are listed: {screen}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn ctrl_c_clears_the_line_and_twice_on_an_empty_line_leaves() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(
        1,
        &[b"not this".as_slice(), CTRL_C, b"this", ENTER].concat(),
    )
    .await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "this");
    chat.type_at(2, CTRL_C).await;
    chat.type_at(3, CTRL_C).await;
    let (status, screen) = chat.end().await;
    assert_eq!(status.code(), Some(130), "{screen}");
    assert!(screen.contains("Ctrl-C again"), "{screen}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn an_approval_question_mid_turn_is_answered_through_the_editor() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write.clone())]),
        MockReply::text("written"),
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("went on after the interrupt"),
    ])
    .await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"write it\r").await;
    chat.next_request().await;
    // Read 2 is the question.
    chat.type_at(2, b"y\r").await;
    chat.next_request().await;
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    // Ctrl-C at the next question stops that turn, not the chat.
    std::fs::remove_file(e.ws.join("a.txt")).unwrap();
    chat.type_at(3, b"again\r").await;
    chat.next_request().await;
    chat.type_at(4, CTRL_C).await;
    chat.type_at(5, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert_eq!(screen.matches("mecha wants to run `fs_write`").count(), 2);
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(!e.ws.join("a.txt").exists());
    assert!(!screen.contains("went on after"), "{screen}");
    assert_eq!(
        mock.requests().len(),
        3,
        "the interrupted turn was not carried on"
    );
}

#[tokio::test]
async fn pasted_control_characters_are_shown_escaped_and_keys_are_not_logged() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_env.push(("MECHA_LOG".into(), "debug".into()));
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    // A bell and a backspace inside a paste: echoed, the terminal would
    // ring and rub out the `b`.
    chat.type_at(1, b"\x1b[200~ab\x07\x08c\x1b[201~\r").await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "ab\u{7}\u{8}c");
    chat.type_at(2, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(screen.contains(r"ab\u{7}\u{8}c"), "{screen:?}");
    assert!(
        !screen.contains('\u{7}') && !screen.contains('\u{8}'),
        "{screen:?}"
    );
    assert!(screen.contains("DEBUG"), "debug logging is on: {screen}");
    assert!(!screen.contains("rustyline"), "keys were logged: {screen}");
}

#[tokio::test]
async fn the_history_file_keeps_the_last_thousand_prompts() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let old: String = (0..1100).map(|i| format!("old prompt {i}\n")).collect();
    std::fs::write(e.home.join("chat_history"), format!("#V2\n{old}")).unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"the newest\r").await;
    chat.next_request().await;
    chat.type_at(2, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    let history = std::fs::read_to_string(e.home.join("chat_history")).unwrap();
    let entries: Vec<&str> = history.lines().skip(1).collect();
    assert_eq!(entries.len(), 1000, "{:?}", &entries[..3]);
    assert_eq!(entries[998..], ["the newest", "/quit"]);
}

#[tokio::test]
async fn ctrl_c_while_a_tool_runs_stops_the_turn_and_chat_goes_on() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let shell = serde_json::json!({"command": "touch started; sleep 60"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", shell)]),
        MockReply::text("the next prompt"),
    ])
    .await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"run it\r").await;
    chat.next_request().await;
    chat.type_at(2, b"y\r").await;
    let start = Instant::now();
    while !e.ws.join("started").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{}",
            chat.screen()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Between reads the terminal is not raw: Ctrl-C is SIGINT, as before.
    chat.terminal.type_keys(CTRL_C);
    chat.type_at(3, b"next\r").await;
    let request = chat.next_request().await;
    assert_eq!(last_prompt(&request), "next");
    chat.type_at(4, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{status:?}: {screen}");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the sleep was not stopped"
    );
    assert!(
        screen.contains("interrupted; running tools were stopped"),
        "{screen}"
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "the interrupted turn was not carried on"
    );
    common::assert_interrupt_kept(&mock, 1, "next");
}

#[tokio::test]
async fn no_at_an_approval_asks_what_to_do_instead_and_the_model_gets_it() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("b.txt it is"),
    ])
    .await;
    let mut chat = Chat::start(&e, &mock);
    chat.type_at(1, b"write it\r").await;
    chat.next_request().await;
    // Read 2 is the question, read 3 what to do instead.
    chat.type_at(2, b"n\r").await;
    chat.type_at(3, b"write b.txt instead\r").await;
    chat.next_request().await;
    chat.type_at(4, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains("what should the model do instead?"),
        "{screen}"
    );
    assert_eq!(
        common::results_in(&mock, 1)[0].0,
        "the user declined this `fs_write` call and said what to do instead: write b.txt instead"
    );
    assert!(!e.ws.join("a.txt").exists());
}

#[tokio::test]
async fn leaving_a_chat_says_how_to_go_on_with_it() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let mut chat = Chat::start(&e, &mock);
    chat.wait_reading(1).await;
    assert!(
        chat.screen()
            .contains("mecha chat: type a task and press Enter"),
        "{}",
        chat.screen()
    );
    chat.type_at(1, b"hi\r").await;
    chat.next_request().await;
    chat.type_at(2, b"/quit\r").await;
    let (status, screen) = chat.end().await;
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains("mecha: to go on with this session: `mecha chat --resume "),
        "{screen}"
    );
}
