//! The transcript's part of the screen: prompts, answers, one line per
//! tool call with its live status, subagent steps nested under their call,
//! and mecha's notices. The newest entries are at the bottom and stay in
//! view unless the user scrolls back.

use mecha_agent::GateStage;
use mecha_core::JailError;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::Value;
use std::time::Instant;

use crate::escape;
use crate::frame;
use crate::markdown;
use crate::theme::Theme;
use crate::transcript::{Entry, NoticeKind, ToolEntry, ToolStatus, Transcript};

/// The most characters of a call's input its one line shows.
const INPUT_CHARS: usize = 60;
/// Progress lines shown under a running or finished call.
const PROGRESS_SHOWN: usize = 3;
/// Columns of a notice's `· ` lead, under which its wrapped lines go on.
const NOTICE_INDENT: usize = 2;

/// What an empty transcript says: what to type, and where the rest is.
pub const FIRST_SCREEN: &str = "mecha: type a task and press Enter (Ctrl-J for a new line). \
/help lists the commands and keys; Ctrl-C twice quits.";

/// Draws the end of `transcript` into `area`, `scroll_back` lines up from
/// the bottom. Only the newest entries that fill the view are laid out:
/// a frame costs what the screen shows, not how long the session is.
pub fn render(
    transcript: &Transcript,
    theme: Theme,
    scroll_back: u16,
    area: Rect,
    buf: &mut Buffer,
) {
    if transcript.entries().is_empty() {
        Paragraph::new(FIRST_SCREEN)
            .style(theme.dim())
            .wrap(Wrap { trim: false })
            .render(area, buf);
        return;
    }
    let wanted = usize::from(area.height) + usize::from(scroll_back);
    let mut newest_first: Vec<Vec<Line<'static>>> = Vec::new();
    let mut rows = 0;
    for (i, entry) in transcript.entries().iter().enumerate().rev() {
        let mut lines = block(i, entry, theme, wanted - rows, Some(area.width));
        // From the entry's end, only as many lines as the view still
        // needs: a long answer streaming in is not wrapped whole per frame.
        let mut kept = Vec::new();
        while rows < wanted {
            let Some(line) = lines.pop() else { break };
            rows += Paragraph::new(vec![line.clone()])
                .wrap(Wrap { trim: false })
                .line_count(area.width);
            kept.push(line);
        }
        kept.reverse();
        newest_first.push(kept);
        if rows >= wanted {
            break;
        }
    }
    let lines: Vec<Line<'static>> = newest_first.into_iter().rev().flatten().collect();
    let total = u16::try_from(rows).unwrap_or(u16::MAX);
    let top = total
        .saturating_sub(area.height)
        .saturating_sub(scroll_back);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((top, 0))
        .render(area, buf);
}

/// The whole transcript as plain text, each line as the screen shows it
/// before wrapping, without styles: what is left in the terminal's own
/// scrollback when the screen closes. Outside text is escaped as on the
/// screen.
pub fn plain(transcript: &Transcript) -> String {
    let mut text = String::new();
    for (i, entry) in transcript.entries().iter().enumerate() {
        for line in block(i, entry, Theme::new(false), usize::MAX, None) {
            let start = text.len();
            for span in &line.spans {
                text.push_str(&span.content);
            }
            let end = start + text[start..].trim_end().len();
            text.truncate(end);
            text.push('\n');
        }
    }
    text
}

/// Entry `i`'s lines, after a blank line that parts it from the one
/// before, unless it is a call: a call sits under what asked for it.
/// `width`: the columns the screen wraps them to (`None`: not wrapped).
fn block(
    i: usize,
    entry: &Entry,
    theme: Theme,
    wanted: usize,
    width: Option<u16>,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if i > 0 && !matches!(entry, Entry::Tool(_)) {
        lines.push(Line::default());
    }
    entry_lines(entry, theme, wanted, width, &mut lines);
    lines
}

/// `wanted`: how many lines of its end the view needs at least.
fn entry_lines(
    entry: &Entry,
    theme: Theme,
    wanted: usize,
    width: Option<u16>,
    out: &mut Vec<Line<'static>>,
) {
    match entry {
        Entry::Prompt(text) => {
            for (i, line) in text.split('\n').enumerate() {
                let mark = if i == 0 { "› " } else { "  " };
                out.push(Line::from(vec![
                    Span::styled(mark, theme.prompt()),
                    Span::raw(escape::owned(line)),
                ]));
            }
        }
        Entry::Answer { text, streaming } => {
            if *streaming {
                out.extend(markdown::render_tail(text, theme, wanted));
                out.push(Line::styled("…", theme.dim()));
            } else {
                out.extend(markdown::render(text, theme));
            }
        }
        Entry::Thinking => out.push(Line::styled("thinking…", theme.dim())),
        Entry::Tool(tool) => tool_lines(tool, theme, out),
        Entry::Notice { kind, text } => {
            let style = match kind {
                NoticeKind::Info => Default::default(),
                NoticeKind::Hook | NoticeKind::Compaction => theme.dim(),
                NoticeKind::Warning => theme.warn(),
                NoticeKind::Error => theme.alert(),
            };
            // Each line escaped alone: a line break is the text's own, any
            // other control character is shown, not obeyed. Wrapped, a
            // line goes on under its text, not under the `·`.
            for (i, line) in text.lines().enumerate() {
                let lead = if i == 0 { "· " } else { "  " };
                let span = Span::styled(format!("{lead}{}", escape::line(line)), style);
                match width {
                    Some(width) => out.extend(frame::hanging(vec![span], width, NOTICE_INDENT)),
                    None => out.push(Line::from(span)),
                }
            }
        }
    }
}

fn tool_lines(tool: &ToolEntry, theme: Theme, out: &mut Vec<Line<'static>>) {
    let (mark, mark_style, status, status_style) = match &tool.status {
        ToolStatus::Waiting => (
            "○",
            theme.dim(),
            "waiting for the gate".to_owned(),
            theme.dim(),
        ),
        ToolStatus::Running { since } => ("●", theme.running(), running(*since), theme.running()),
        ToolStatus::Done { bytes, summary } => (
            "✓",
            theme.ok(),
            if mecha_agent::summary_is_whole(*bytes, summary) {
                escape::line(summary).into_owned()
            } else {
                format!("{} · {}", size(*bytes), escape::line(summary))
            },
            theme.dim(),
        ),
        ToolStatus::Failed { summary } => {
            ("✗", theme.alert(), escape::owned(summary), theme.warn())
        }
        ToolStatus::Refused {
            stage,
            by_user,
            reason,
        } => (
            "⊘",
            theme.alert(),
            refused_line(*stage, *by_user, reason),
            theme.alert(),
        ),
    };
    // Said while the call is judged and runs: what it may reach depends
    // on it.
    let status = match (&tool.confined, &tool.status) {
        (Some(confined), ToolStatus::Waiting | ToolStatus::Running { .. }) => {
            format!("{status} · {confined}")
        }
        _ => status,
    };
    out.push(Line::from(vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(escape::owned(&tool.name), Style::new()),
        Span::raw(" "),
        Span::styled(brief(&tool.input), theme.dim()),
        Span::raw("  "),
        Span::styled(status, status_style),
    ]));
    let skipped = tool.progress.len().saturating_sub(PROGRESS_SHOWN);
    for step in &tool.progress[skipped..] {
        out.push(Line::from(vec![
            Span::styled("  └ ", theme.dim()),
            Span::styled(escape::owned(step), theme.dim()),
        ]));
    }
    if tool.expanded {
        expanded_lines(tool, theme, out);
    }
}

/// The call's whole input, then its refusal, or the head of its result
/// with how much more only the model saw.
fn expanded_lines(tool: &ToolEntry, theme: Theme, out: &mut Vec<Line<'static>>) {
    for line in input_lines(&tool.input) {
        out.push(Line::styled(
            format!("    {}", escape::line(&line)),
            theme.code(),
        ));
    }
    let said = |text: &str| Line::styled(format!("    {text}"), theme.dim());
    match &tool.status {
        ToolStatus::Refused { reason, .. } => {
            out.push(said(&format!("→ {}", escape::line(reason))));
        }
        ToolStatus::Done { .. } | ToolStatus::Failed { .. } => {
            let head = &tool.output.head;
            if head.trim().is_empty() {
                out.push(said("→ (no output)"));
            }
            for line in head.lines() {
                out.push(said(&format!("│ {}", escape::line(line))));
            }
            if tool.output.rest > 0 {
                out.push(said(&format!(
                    "… {} more went to the model",
                    size(tool.output.rest)
                )));
            }
        }
        ToolStatus::Waiting | ToolStatus::Running { .. } => {}
    }
}

/// How long a call has run, in whole seconds once there is one: `running
/// 7s`, `running 2m 05s`.
fn running(since: Instant) -> String {
    match since.elapsed().as_secs() {
        0 => "running…".to_owned(),
        secs @ 1..60 => format!("running {secs}s"),
        secs => format!("running {}m {:02}s", secs / 60, secs % 60),
    }
}

/// A call's input as a person reads it: each field on its line, and a
/// text of several lines (a file's content, a script) as its lines under
/// the field's name, not as a JSON string of `\n`s. What is not an object
/// of fields is shown as JSON.
fn input_lines(input: &Value) -> Vec<String> {
    let Some(fields) = input.as_object() else {
        let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
        return pretty.lines().map(str::to_owned).collect();
    };
    let mut lines = Vec::new();
    for (name, value) in fields {
        match value.as_str() {
            Some(text) if text.contains('\n') => {
                lines.push(format!("{name}:"));
                lines.extend(text.lines().map(|line| format!("  {line}")));
            }
            Some(text) => lines.push(format!("{name}: {text}")),
            None => lines.push(format!("{name}: {value}")),
        }
    }
    lines
}

/// What the call's line says of a refusal: why, for a path the jail
/// refused (the reason is the jail's own message), else who refused it.
fn refused_line(stage: GateStage, by_user: bool, reason: &str) -> String {
    match (stage, by_user) {
        (GateStage::Path, false) => format!(
            "refused: {}",
            JailError::summary_in(reason).unwrap_or("a path the jail refused")
        ),
        _ => format!("refused by {}", refuser(stage, by_user)),
    }
}

/// Who refused a call, in the words of the gate's stage.
fn refuser(stage: GateStage, by_user: bool) -> &'static str {
    match (stage, by_user) {
        (_, true) => "you",
        (GateStage::Validation, _) => "validation (a malformed call)",
        (GateStage::Path, _) => "the path jail",
        (GateStage::Interlock, _) => "the interlock",
        (GateStage::Hook, _) => "a hook",
        (GateStage::Rule, _) => "a rule",
        (GateStage::Approval, _) => "approval (nobody could answer)",
    }
}

/// The part of a call's input that says what it does, on one line: a
/// shell's command, a file tool's path, the result `web_open` opens (`[3]`),
/// or the input as compact JSON.
fn brief(input: &Value) -> String {
    let text = ["command", "path", "url", "query", "pattern", "prompt"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))
        .map(str::to_owned)
        .or_else(|| {
            input
                .get("handle")
                .and_then(Value::as_u64)
                .map(|n| format!("[{n}]"))
        })
        .unwrap_or_else(|| input.to_string());
    let line = text.lines().next().unwrap_or_default();
    let cut = match line.char_indices().nth(INPUT_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None if text.contains('\n') => format!("{line}…"),
        None => line.to_owned(),
    };
    escape::owned(&cut)
}

fn size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use mecha_agent::{Event, GateVerdict};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_plain_transcript_is_what_the_screen_shows_escaped_and_unstyled() {
        let mut t = Transcript::new();
        t.prompt("list it");
        t.apply(&Event::Text {
            text: "Here **it** is\u{1b}]52;c;eA==\u{7}".into(),
        });
        t.apply(&Event::ToolCall {
            id: "1".into(),
            name: "shell".into(),
            input: json!({"command": "ls"}),
            confined: None,
        });
        t.apply(&Event::Gate {
            id: "1".into(),
            name: "shell".into(),
            decision: GateVerdict::Allowed {
                stage: GateStage::Rule,
            },
        });
        let text = plain(&t);
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert_eq!(
            text,
            "› list it\n\nHere it is\\u{1b}]52;c;eA==\\u{7}\n● shell ls  running…\n"
        );
    }

    #[test]
    fn a_confined_call_says_so_while_it_is_judged_and_runs() {
        let mut t = Transcript::new();
        t.apply(&Event::ToolCall {
            id: "1".into(),
            name: "shell".into(),
            input: json!({"command": "ls"}),
            confined: Some(mecha_core::Confinement {
                backend: "docker".into(),
                network: true,
                allowed_hosts: 0,
            }),
        });
        assert_eq!(
            plain(&t),
            "○ shell ls  waiting for the gate · confined: docker, network on\n"
        );
        t.apply(&Event::Gate {
            id: "1".into(),
            name: "shell".into(),
            decision: GateVerdict::Allowed {
                stage: GateStage::Approval,
            },
        });
        assert!(plain(&t).ends_with("running… · confined: docker, network on\n"));
    }

    #[test]
    fn a_search_shows_its_results_and_an_open_its_title_on_their_lines() {
        let mut t = Transcript::new();
        let calls = [
            (
                "1",
                "web_search",
                json!({"query": "rust"}),
                "2 results for \"rust\" from searxng: The Book · Rust by Example",
            ),
            (
                "2",
                "web_open",
                json!({"handle": 1}),
                "[1] The Rust Programming Language — https://doc.rust-lang.org/book/",
            ),
        ];
        for (id, name, input, first_line) in calls {
            t.apply(&Event::ToolCall {
                id: id.into(),
                name: name.into(),
                input,
                confined: None,
            });
            t.apply(&Event::ToolResult {
                id: id.into(),
                name: name.into(),
                is_error: false,
                bytes: 2048,
                summary: first_line.into(),
                excerpt: Default::default(),
            });
        }
        let text = plain(&t);
        assert!(
            text.contains("✓ web_search rust  2.0 KB · 2 results for \"rust\" from searxng: The Book · Rust by Example"),
            "{text}"
        );
        assert!(
            text.contains("✓ web_open [1]  2.0 KB · [1] The Rust Programming Language — https://doc.rust-lang.org/book/"),
            "{text}"
        );
    }

    /// The rows a `width`-column screen shows for `t`, trailing blanks cut.
    fn screen(t: &Transcript, width: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, 12);
        let mut buf = Buffer::empty(area);
        render(t, Theme::new(false), 0, area, &mut buf);
        (0..area.height)
            .map(|y| {
                let row: String = (0..width).map(|x| buf[(x, y)].symbol()).collect();
                row.trim_end().to_owned()
            })
            .filter(|row| !row.is_empty())
            .collect()
    }

    #[test]
    fn a_wrapped_notice_goes_on_under_its_text() {
        let mut t = Transcript::new();
        t.notice(
            NoticeKind::Warning,
            "the session file cannot be written, so a resume starts from the last record\nsecond line"
                .into(),
        );
        let rows = screen(&t, 24);
        assert!(rows[0].starts_with("· the session"), "{rows:#?}");
        for row in &rows[1..] {
            assert!(
                row.starts_with("  ") && !row.starts_with("   "),
                "{rows:#?}"
            );
        }
        assert!(rows.iter().any(|r| r == "  second line"), "{rows:#?}");
        // Unwrapped, as the scrollback keeps it, the text is whole.
        assert!(plain(&t).contains("cannot be written, so a resume"));
    }
}
