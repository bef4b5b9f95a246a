//! `/rewind` in the TUI: the session's turns with the files each changed
//! (`/rewind`), what to put back of one (`/rewind N`), and the rewind itself
//! (`/rewind N both|files|conversation [force]`), which the lists enter
//! as the user picks. The files go back through the same function as
//! `mecha rewind --to N --files` ([`rewind::restore_files`]), files changed
//! outside the session since are asked about rather than overwritten, and
//! the conversation is cut in the live session through the agent, so the
//! cut is journaled and the taint, which lasts the whole session, stays.

use mecha_agent::{Agent, Session};
use mecha_core::Record;
use mecha_tui::Reply;
use mecha_tui::rewind::{self as lists, Restore, TurnRow};

use crate::commands::sessions::{failure, store as sessions};
use crate::rewind::{self, Files, Turn};

/// What a `/rewind` line asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// The turns to pick from.
    List,
    /// What to put back of this turn.
    Turn(u32),
    Restore {
        number: u32,
        restore: Restore,
        force: bool,
    },
}

/// The words after `/rewind`; `Err`, how to write them.
pub fn asked(args: &[&str]) -> Result<Asked, String> {
    let usage = || {
        "/rewind lists the prompts to go back to; /rewind N asks what to restore of turn N; \
         /rewind N both|files|conversation [force] restores it\n"
            .to_owned()
    };
    let (number, what, force) = match args {
        [] => return Ok(Asked::List),
        [number] => return number.parse().map(Asked::Turn).map_err(|_| usage()),
        [number, what] => (number, what, false),
        [number, what, "force"] => (number, what, true),
        _ => return Err(usage()),
    };
    match (number.parse(), Restore::from_word(what)) {
        (Ok(number), Some(restore)) => Ok(Asked::Restore {
            number,
            restore,
            force,
        }),
        _ => Err(usage()),
    }
}

/// mecha's answer to `asked` in the conversation of `session`, stored as
/// `session_id`.
pub fn answer(
    agent: &Agent,
    session: &mut Session,
    session_id: Option<&str>,
    asked: Asked,
) -> Reply {
    answered(agent, session, session_id, asked).unwrap_or_else(Reply::Show)
}

fn answered(
    agent: &Agent,
    session: &mut Session,
    session_id: Option<&str>,
    asked: Asked,
) -> Result<Reply, String> {
    let (Some(id), Some(journal)) = (session_id, agent.journal()) else {
        return Err(
            "this session is not stored (the session store could not be written), so \
                    it has no checkpoints or history to rewind to"
                .to_owned(),
        );
    };
    // What the loop appended is read back from the file.
    journal.sync();
    let loaded = sessions()
        .and_then(|store| store.load(id).map_err(failure))
        .map_err(crate::Failure::said)?;
    let turns = rewind::turns(&loaded);
    if turns.is_empty() {
        return Err("no prompts in this session yet, so there is nothing to rewind".to_owned());
    }
    let turn = |number| rewind::turn(&turns, number).map_err(crate::Failure::said);
    match asked {
        Asked::List => {
            let store = rewind::store().map_err(crate::Failure::said)?;
            let rows: Vec<TurnRow> = turns.iter().map(|t| row(&store, &turns, t)).collect();
            let list = lists::turns(&rows);
            Ok(Reply::Pick(match rows.iter().any(|row| row.files) {
                true => list,
                false => list.saying(vec![
                    "no prompt of this session changed the workspace, so there are no \
                     checkpoints: only the conversation can go back"
                        .to_owned(),
                ]),
            }))
        }
        Asked::Turn(number) => {
            let store = rewind::store().map_err(crate::Failure::said)?;
            Ok(Reply::Pick(lists::choices(&row(
                &store,
                &turns,
                turn(number)?,
            ))))
        }
        Asked::Restore {
            number,
            restore,
            force,
        } => {
            let turn = turn(number)?;
            // Checked before any file moves: a rewind of both does both
            // or neither.
            let keep = match restore.conversation() {
                true => Some(rewind::history_before(&loaded, turn).map_err(crate::Failure::said)?),
                false => None,
            };
            let mut said = String::new();
            if restore.files() {
                let files = rewind::restore_files(&loaded, journal, &turns, number, force)
                    .map_err(crate::Failure::said)?;
                if let Files::Conflicts(paths) = &files {
                    return Ok(Reply::Pick(lists::conflicts(number, restore, paths)));
                }
                said.push_str(&rewind::files_said(number, &files));
            }
            let prompt = keep.map(|keep| {
                agent.rewind(session, keep);
                said.push_str(&format!(
                    "the conversation is back to before turn {number}: cut to {keep} message{}; \
                     its prompt is in the editor, to change and send again",
                    if keep == 1 { "" } else { "s" }
                ));
                rewind::prompt_text(&loaded, turn)
            });
            // The conversation as it now stands: the journal read back,
            // with the cut just made.
            let retold = keep.map(|keep| {
                let cut = Record::Rewind { keep };
                let records = loaded.entries.iter().map(|entry| &entry.record);
                mecha_agent::retell(records.chain([&cut]))
            });
            Ok(Reply::Rewound {
                said: said.trim_end().to_owned(),
                prompt,
                retold,
            })
        }
    }
}

/// `turn` as the lists show it.
fn row(store: &mecha_checkpoint::Store, turns: &[Turn], turn: &Turn) -> TurnRow {
    TurnRow {
        number: turn.number,
        prompt: turn.prompt.clone(),
        changed: rewind::changed_words(store, turn),
        files: rewind::checkpoint_before(turns, turn.number).is_some(),
        cut: turn.cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_the_lists_enter_are_read_back() {
        assert_eq!(asked(&[]), Ok(Asked::List));
        assert_eq!(asked(&["2"]), Ok(Asked::Turn(2)));
        for (restore, force) in [
            (Restore::Both, false),
            (Restore::Files, true),
            (Restore::Conversation, false),
        ] {
            let line = lists::command(3, restore, force);
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            assert_eq!(
                asked(&words),
                Ok(Asked::Restore {
                    number: 3,
                    restore,
                    force
                })
            );
        }
        for bad in [&["two"][..], &["2", "all"], &["2", "files", "now"]] {
            assert!(asked(bad).is_err(), "{bad:?}");
        }
    }
}
