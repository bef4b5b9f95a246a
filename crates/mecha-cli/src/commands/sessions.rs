//! `mecha sessions`: the sessions stored under `$MECHA_HOME/sessions`,
//! listed one a line or shown as a transcript. Everything in them came
//! from the model, a tool or the user, so all of it is escaped for the
//! terminal.

use std::io::IsTerminal;

use clap::{Args, Subcommand};
use mecha_session::{Listing, SessionError, Store, transcript};

use crate::Failure;
use crate::terminal::printable;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
    /// With no command: what `list` takes.
    #[command(flatten)]
    list: ListArgs,
}

#[derive(Subcommand, Debug)]
pub enum SessionsCommand {
    /// Every stored session, newest first: id, start, turns, workspace and
    /// first prompt, one a line.
    List(ListArgs),
    /// A session's transcript, record by record.
    Show(ShowArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// One JSON object per session per line.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The session's id, or enough of its start to name one session.
    id: String,
}

/// The store every command uses.
pub fn store() -> Result<Store, Failure> {
    Ok(Store::new(crate::config::mecha_home()?.join("sessions")))
}

/// A session error as a failure: naming a session that is not there is a
/// usage error (exit 2), the rest a failed run.
pub fn failure(e: SessionError) -> Failure {
    match e {
        SessionError::Unknown(_) | SessionError::Ambiguous { .. } => Failure::Usage(e.to_string()),
        other => Failure::Run(other.into()),
    }
}

pub fn run(args: SessionsArgs) -> Result<u8, Failure> {
    let store = store()?;
    match args.command {
        None => list(&store, args.list.json),
        Some(SessionsCommand::List(args)) => list(&store, args.json),
        Some(SessionsCommand::Show(args)) => show(&store, &args.id),
    }
}

fn list(store: &Store, json: bool) -> Result<u8, Failure> {
    let all = store.list().map_err(failure)?;
    if json {
        let mut out = String::new();
        for listing in &all {
            out.push_str(&serde_json::to_string(listing).map_err(|e| Failure::Run(e.into()))?);
            out.push('\n');
        }
        crate::output::out(&out);
        return Ok(0);
    }
    if all.is_empty() {
        crate::output::err_line(&printable(&format!(
            "mecha: no sessions yet (they are kept in {})",
            store.dir().display()
        )));
        return Ok(0);
    }
    crate::output::out(&lines(&all, terminal_width()));
    Ok(0)
}

/// Sessions one a line, each at most `width` characters, escaped.
pub fn lines(all: &[Listing], width: usize) -> String {
    all.iter().map(|l| line(l, width) + "\n").collect()
}

fn show(store: &Store, id: &str) -> Result<u8, Failure> {
    // Salvaging: what a broken line leaves readable is still worth seeing.
    let loaded = store.load_salvaging(id).map_err(failure)?;
    crate::output::out(&printable(&transcript(&loaded)));
    for warning in &loaded.warnings {
        crate::output::warning(warning);
    }
    Ok(0)
}

/// One session on one line of at most `width` characters: the fixed
/// fields whole, then the workspace (its end, which names the project) and
/// the first prompt sharing the rest, or the prompt alone when the rest is
/// narrow. Fields are escaped before they are
/// measured, so an escape cannot hide past the edge.
fn line(l: &Listing, width: usize) -> String {
    let id = printable(&l.id);
    if let Some(problem) = &l.problem {
        return fit(
            &format!("{id}  [cannot be read: {}]", printable(problem)),
            width,
        );
    }
    let turns = if l.turns == 1 { "turn " } else { "turns" };
    let fixed = format!("{id}  {}  {:>3} {turns}  ", started(&l.started), l.turns);
    let rest = width.saturating_sub(fixed.chars().count());
    let workspace = printable(&l.workspace.to_string_lossy()).into_owned();
    let prompt = match &l.parent {
        Some(parent) => format!(
            "[subagent of {}] {}",
            printable(parent),
            printable(&l.first_prompt)
        ),
        None => printable(&l.first_prompt).into_owned(),
    };
    // Too narrow for both: the prompt says more about a session.
    if rest < 24 {
        return fit(&format!("{fixed}{prompt}"), width);
    }
    let room = rest
        .saturating_sub(prompt.chars().count() + 2)
        .max(rest / 3);
    let workspace = fit_end(&workspace, room);
    fit(&format!("{fixed}{workspace}  {prompt}"), width)
}

/// `2026-12-01T16:36:47.123Z` as `2026-12-01 16:36`.
pub fn started(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(date), Some(time)) => format!("{date} {time}"),
        _ => rfc3339.to_owned(),
    }
}

/// `text` cut to `width` characters, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `text` cut from the start to `width` characters, with `…` where it was.
fn fit_end(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        return text.to_owned();
    }
    let kept: String = text.chars().skip(count + 1 - width.max(1)).collect();
    format!("…{kept}")
}

/// `COLUMNS`, else the terminal's width, else 100.
fn terminal_width() -> usize {
    const FALLBACK: usize = 100;
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| {
            let stdout = std::io::stdout();
            if !stdout.is_terminal() {
                return None;
            }
            rustix::termios::tcgetwinsize(&stdout)
                .ok()
                .map(|size| usize::from(size.ws_col))
                .filter(|&c| c > 0)
        })
        .unwrap_or(FALLBACK);
    // Below this nothing useful fits; the line wraps instead.
    width.max(40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_cuts_at_the_width_and_says_so() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdefg", 6), "abcde…");
        assert_eq!(fit_end("/home/me/project", 10), "…e/project");
        assert_eq!(fit_end("/a", 10), "/a");
        assert_eq!(started("2026-12-01T16:36:47.123Z"), "2026-12-01 16:36");
        assert_eq!(started("odd"), "odd");
    }
}
