//! mecha's terminal UI: what a run shows, drawn with ratatui.
//!
//! Each module owns one part of the screen and is a plain function of its
//! state, so every state has a snapshot test on ratatui's `TestBackend`:
//! [`transcript`] folds the agent's events into what is shown (no terminal
//! in it), [`history`] draws it (with [`markdown`] for answers),
//! [`status`] the status line with the interlock's state, [`editor`] the
//! prompt, [`modal`] the approval question (with [`instead`], what to do
//! instead of a call refused), [`asking`] the model's own
//! question (the [`ask_user`] tool's), both in [`frame`]'s box, [`picker`]
//! a list to pick from (`/skills`, `/resume`, `/rewind`), [`queue`] the prompts
//! entered while a turn runs, [`rewind`] the lists `/rewind` shows.
//! Everything from the model or a tool
//! passes [`escape`] before it reaches a cell. [`screen`] places the
//! parts; [`app`] is the state and what each key or event does to it;
//! [`bridge`] carries the agent's events and approval questions to the
//! screen (with [`ModalApprover`], an approver that asks in the modal);
//! [`run`] is the loop that draws on change and drives a turn, and
//! [`notify`] tells the terminal when the screen needs the user.
//!
//! It does not build the agent, read configuration or set the terminal's
//! modes: mecha-cli wires a run to it (implementing [`run::Conversation`]
//! over its agent and session), and nothing here depends on the binary.

pub mod app;
pub mod ask_user;
pub mod asking;
mod body;
pub mod bridge;
pub mod complete;
pub mod editor;
pub mod escape;
pub mod frame;
pub mod history;
pub mod instead;
pub mod markdown;
pub mod modal;
pub mod mode;
pub mod notify;
pub mod picker;
pub mod queue;
pub mod rewind;
pub mod run;
pub mod screen;
pub mod status;
pub mod theme;
pub mod transcript;

pub use app::{Action, App, Preview};
pub use ask_user::{AskUser, UserQuestion};
pub use asking::{AskUserModal, Typed};
pub use bridge::{ChannelSink, ModalApprover, ModalAsker, Question, ToScreen};
pub use editor::{Edit, Editor};
pub use modal::{Answer, Approval};
pub use notify::{Attention, Notify};
pub use picker::{OnPick, PickItem, Picked, Picker};
pub use run::{Reply, Switch};
pub use screen::{Modal, View, draw};
pub use status::RunInfo;
pub use theme::Theme;
pub use transcript::{Entry, NoticeKind, ToolEntry, ToolStatus, Transcript};
