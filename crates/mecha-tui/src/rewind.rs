//! What `/rewind` shows, in [`Picker`]s: the session's turns with the files
//! each changed, then what to put back of the one picked (files and
//! conversation, files, conversation, or nothing), then, if files changed
//! outside the session since, whether to overwrite them. Each choice enters
//! a line (`/rewind 2 both`), as if typed but not shown as typed, which the
//! binary answers; the turns and what they changed are the binary's to
//! read.

use crate::picker::{OnPick, PickItem, Picker};

/// The command that opens the list (and Esc twice at an empty prompt).
pub const REWIND: &str = "/rewind";

/// What a rewind puts back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    Both,
    Files,
    Conversation,
}

impl Restore {
    /// Its word in the command (`/rewind 2 files`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::Files => "files",
            Self::Conversation => "conversation",
        }
    }

    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Both, Self::Files, Self::Conversation]
            .into_iter()
            .find(|r| r.word() == word)
    }

    pub fn files(self) -> bool {
        self != Self::Conversation
    }

    pub fn conversation(self) -> bool {
        self != Self::Files
    }
}

/// The line that does a rewind: to before turn `number`, putting back
/// `restore`, overwriting files changed since if `force`.
pub fn command(number: u32, restore: Restore, force: bool) -> String {
    let force = if force { " force" } else { "" };
    format!("{REWIND} {number} {}{force}", restore.word())
}

/// One turn of the session, as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRow {
    pub number: u32,
    /// Its prompt's first line.
    pub prompt: String,
    /// The files it changed, in words ("a.txt, b.txt", "no files changed").
    pub changed: String,
    /// Whether there is a checkpoint to put the files back from.
    pub files: bool,
    /// An earlier rewind took its prompt out of the conversation.
    pub cut: bool,
}

/// The session's turns, the newest first (the likeliest to undo).
pub fn turns(rows: &[TurnRow]) -> Picker {
    let items = rows
        .iter()
        .rev()
        .map(|row| PickItem {
            name: format!("{:>2}  {}", row.number, row.prompt),
            note: row.cut.then(|| "cut from the conversation".to_owned()),
            description: row.changed.clone(),
            picked: OnPick::Enter(format!("{REWIND} {}", row.number)),
        })
        .collect();
    Picker::new(
        "rewind to before which prompt?",
        "chooses what to restore",
        items,
    )
}

/// What to put back of `row`: both by default; without a checkpoint only
/// the conversation can go back.
pub fn choices(row: &TurnRow) -> Picker {
    let number = row.number;
    let item = |name: &str, description: &str, restore: Restore| PickItem {
        name: name.to_owned(),
        note: None,
        description: description.to_owned(),
        picked: OnPick::Enter(command(number, restore, false)),
    };
    let mut items = Vec::new();
    let mut said = vec![format!("your prompt: {}", row.prompt)];
    if row.files {
        said.push(format!("files it changed: {}", row.changed));
        items.push(item(
            "files and conversation",
            "both as they were before this prompt",
            Restore::Both,
        ));
        items.push(item(
            "files only",
            "the workspace as it was; the conversation goes on",
            Restore::Files,
        ));
    } else {
        said.push(format!(
            "no call from turn {number} on changed the workspace: only the conversation can go \
             back"
        ));
    }
    items.push(item(
        "conversation only",
        "cut back to before this prompt; the files stay",
        Restore::Conversation,
    ));
    items.push(PickItem {
        name: "cancel".to_owned(),
        note: None,
        description: "change nothing".to_owned(),
        picked: OnPick::Show("nothing was rewound".to_owned()),
    });
    Picker::new(
        &format!("rewind to before turn {number}"),
        "restores it",
        items,
    )
    .saying(said)
}

/// Files changed outside the session since turn `number` that a rewind
/// would overwrite: no (the first, the default) writes nothing at all.
pub fn conflicts(number: u32, restore: Restore, paths: &[String]) -> Picker {
    let mut said = vec![format!(
        "{} changed since mecha last saw {}; rewinding to before turn {number} would \
         overwrite {}:",
        if paths.len() == 1 {
            "this file"
        } else {
            "these files"
        },
        if paths.len() == 1 { "it" } else { "them" },
        if paths.len() == 1 { "it" } else { "them" },
    )];
    said.extend(paths.iter().map(|path| format!("  {path}")));
    let items = vec![
        PickItem {
            name: "no".to_owned(),
            note: None,
            description: "write nothing; the files and the conversation stay".to_owned(),
            picked: OnPick::Show(
                "nothing was rewound: the files changed since are as they were".to_owned(),
            ),
        },
        PickItem {
            name: "yes, overwrite".to_owned(),
            note: None,
            description: "put them back as they were before the prompt too".to_owned(),
            picked: OnPick::Enter(command(number, restore, true)),
        },
    ];
    Picker::new("overwrite files changed since?", "answers", items).saying(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_restore_goes_through_its_word_and_back() {
        for restore in [Restore::Both, Restore::Files, Restore::Conversation] {
            assert_eq!(Restore::from_word(restore.word()), Some(restore));
        }
        assert_eq!(Restore::from_word("all"), None);
        assert_eq!(command(2, Restore::Both, true), "/rewind 2 both force");
    }
}
