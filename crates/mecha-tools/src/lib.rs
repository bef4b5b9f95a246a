//! mecha's built-in tools, one module each: `fs_read`, `fs_list`,
//! `fs_write`, `fs_edit`, `shell`, `http_fetch` and `todo`, plus the egress
//! guard that keeps `http_fetch` off loopback and private networks, and
//! `compact`, which the CLI registers only when compaction is possible, and
//! `web_search` / `web_open`, which it registers only when a `[[search]]`
//! backend is configured.
//!
//! It does not decide whether a call may run (that is the loop's gate) nor
//! which tools a run gets (that is config, in the CLI). Every path a tool
//! touches goes through [`mecha_core::ToolCtx::resolve`].

mod args;
mod atomic;
mod blocking;
mod compact;
pub mod egress;
mod fs_edit;
mod fs_list;
mod fs_read;
mod fs_write;
mod http_fetch;
mod regular;
mod shell;
mod todo;
mod trusting;
mod web;

use std::sync::Arc;

use mecha_core::Tool;

pub use compact::{COMPACT_RESULT, Compact};
pub use fs_edit::{FsEdit, apply_edit};
pub use fs_list::FsList;
pub use fs_read::FsRead;
pub use fs_write::FsWrite;
pub use http_fetch::{FetchConfig, HttpFetch};
pub use regular::open as open_regular_file;
pub use shell::{Shell, ShellConfig};
pub use todo::Todo;
pub use web::{
    BRAVE_BASE_URL, BackendSpec, DEFAULT_BACKEND_TIMEOUT, Handles, Hit, SearchBackend,
    SearchConfig, TAVILY_BASE_URL, WebOpen, WebSearch, describe_chain, web_tools,
};

/// Settings of the built-ins that have any.
#[derive(Debug, Clone, Default)]
pub struct BuiltinConfig {
    pub shell: ShellConfig,
    pub fetch: FetchConfig,
}

/// The names of every built-in, in the order they are registered.
pub const BUILTIN_NAMES: [&str; 7] = [
    "fs_edit",
    "fs_list",
    "fs_read",
    "fs_write",
    "http_fetch",
    "shell",
    "todo",
];

/// A fresh instance of every built-in. Fresh matters: `todo` keeps its list
/// in the instance, so each run gets its own.
pub fn builtin_tools(config: &BuiltinConfig) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(FsEdit),
        Arc::new(FsList),
        Arc::new(FsRead),
        Arc::new(FsWrite),
        Arc::new(HttpFetch::new(config.fetch.clone())),
        Arc::new(Shell::new(config.shell.clone())),
        Arc::new(Todo::default()),
    ]
}
