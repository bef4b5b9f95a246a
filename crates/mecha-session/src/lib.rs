//! mecha's session store: every `run` and `chat` kept as one append-only
//! JSONL file under `$MECHA_HOME/sessions/`, so that a run that dies loses
//! nothing and can be resumed, listed, shown and searched.
//!
//! The format is deliberately dull (the peers' stores fail their users by
//! being clever: pointer chains that break, indexes that disagree with the
//! files, migrations that lose data). Line 1 is a [`Header`] with a schema
//! version; every later line is one [`Record`] with a sequence number that
//! only increases, written with one `write` so a crash tears at most the
//! last line, which loading then skips with a warning. There is no index:
//! listing reads the files.
//!
//! [`Record`]: mecha_core::Record

mod error;
mod format;
mod listing;
mod parse;
mod recall;
mod replay;
mod store;
mod syncer;
mod time;
mod transcript;
mod writer;

pub use error::SessionError;
pub use format::{Entry, Header, SCHEMA_VERSION};
pub use listing::Listing;
pub use recall::RecallTool;
pub use replay::Restored;
pub use store::{Loaded, NewSession, Store};
pub use transcript::transcript;
pub use writer::Writer;
