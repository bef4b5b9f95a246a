//! A run's MCP servers: started from config, and on a screen kept from one
//! conversation to the next (`/clear`, `/resume`, `/model`) for as long as
//! what they were started from stays the same. Restarting them would cost
//! every switch the slowest server's start-up, and lose what a server holds
//! in memory for no reason the user asked for.

use std::sync::Arc;

use mecha_mcp::{McpHub, McpServerConfig, ServerState, SpawnOptions};
use mecha_sandbox::{Check, SandboxConfig};

use crate::config::Settings;

/// Everything a run's servers are started from besides the workspace and
/// mecha's own environment, which one process does not change: servers
/// started from equal origins are interchangeable.
#[derive(Debug, Clone, PartialEq)]
struct Origin {
    configs: Vec<McpServerConfig>,
    sandbox: SandboxConfig,
    timezone: Option<String>,
}

impl Origin {
    fn of(settings: &Settings) -> Self {
        Self {
            configs: settings.mcp.iter().map(|s| s.config.clone()).collect(),
            sandbox: settings.sandbox.clone(),
            timezone: settings.timezone.clone(),
        }
    }
}

/// A run's MCP servers, with what they were started from.
#[derive(Debug)]
pub struct Servers {
    origin: Origin,
    pub hub: Arc<McpHub>,
}

/// How a toolbox gets its MCP servers, and when its sandbox is tried.
#[derive(Debug, Default)]
pub struct ServerStart {
    /// Say on stderr which servers failed to start.
    pub report: bool,
    /// The last conversation's servers, to go on with if they still fit.
    pub kept: Option<Servers>,
    /// At start for a run; at the first confined job (a server with
    /// `sandbox = true`) for a listing, which may confine nothing.
    pub check: Check,
}

impl Servers {
    /// The servers `settings` configures, `None` when it configures none.
    /// They are `start.kept` when those were started from the same
    /// configuration and every one of them is up; otherwise the kept ones
    /// are stopped and these start afresh, so a fixed config or a server
    /// that died gets its new start.
    pub async fn start(
        settings: &Settings,
        options: SpawnOptions,
        start: ServerStart,
    ) -> Option<Self> {
        let origin = Origin::of(settings);
        if let Some(kept) = start.kept {
            if kept.origin == origin && kept.all_up() {
                return Some(kept);
            }
            kept.shutdown();
        }
        if origin.configs.is_empty() {
            return None;
        }
        let hub = McpHub::start(origin.configs.iter().cloned(), &options).await;
        if start.report {
            for status in hub.statuses() {
                if matches!(status.state, ServerState::Failed { .. }) {
                    crate::output::err_line(&format!("mecha: {status}"));
                }
            }
        }
        Some(Self {
            origin,
            hub: Arc::new(hub),
        })
    }

    fn all_up(&self) -> bool {
        self.hub
            .statuses()
            .iter()
            .all(|s| matches!(s.state, ServerState::Ready { .. }))
    }

    /// The servers in a few words, for the TUI's status line: how many are
    /// up (of how many, when some are not) and how many of those are
    /// remote, whose calls leave the machine: `mcp 3 (1 remote)`.
    pub fn in_words(&self) -> String {
        let statuses = self.hub.statuses();
        let up = statuses
            .iter()
            .filter(|s| matches!(s.state, ServerState::Ready { .. }))
            .count();
        let mut words = match up == statuses.len() {
            true => format!("mcp {up}"),
            false => format!("mcp {up}/{} up", statuses.len()),
        };
        let remote = statuses.iter().filter(|s| s.state.is_remote()).count();
        if remote > 0 {
            words.push_str(&format!(" ({remote} remote)"));
        }
        words
    }

    /// Stops every server now rather than whenever the last tool is
    /// dropped.
    pub fn shutdown(&self) {
        self.hub.shutdown();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Settings whose user file is `config`, with a workspace to start in.
    fn settings(config: &str) -> (Settings, tempfile::TempDir) {
        let tmp = tempfile::tempdir().unwrap();
        let (home, ws) = (tmp.path().join("home"), tmp.path().join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(home.join("config.toml"), config).unwrap();
        (Settings::load(&home, &ws).unwrap(), tmp)
    }

    fn server(name: &str, command: &str) -> String {
        format!("[[mcp]]\nname = \"{name}\"\ncommand = {command:?}\n")
    }

    async fn start(settings: &Settings, dir: &Path, kept: Option<Servers>) -> Servers {
        let start = ServerStart {
            kept,
            ..ServerStart::default()
        };
        Servers::start(settings, SpawnOptions::new(dir), start)
            .await
            .unwrap()
    }

    fn stopped(hub: &McpHub) -> bool {
        hub.statuses()
            .iter()
            .all(|s| matches!(s.state, ServerState::Failed { .. }))
    }

    #[tokio::test]
    async fn the_same_config_goes_on_with_the_servers_and_another_starts_afresh() {
        let fixture = mecha_testkit::fixture_mcp().display().to_string();
        let (same, dir) = settings(&server("fx", &fixture));
        let first = start(&same, dir.path(), None).await;
        assert!(first.all_up());
        let hub = Arc::clone(&first.hub);
        let kept = start(&same, dir.path(), Some(first)).await;
        assert!(
            Arc::ptr_eq(&hub, &kept.hub),
            "the same config restarted them"
        );
        let config = format!("[agent]\ntimezone = \"UTC\"\n{}", server("fx", &fixture));
        let (other, _dir) = settings(&config);
        let next = start(&other, dir.path(), Some(kept)).await;
        assert!(!Arc::ptr_eq(&hub, &next.hub), "a changed config kept them");
        assert!(stopped(&hub), "the replaced servers were left running");
        // A config without servers stops the kept ones.
        let last = Arc::clone(&next.hub);
        let (none, _dir) = settings("");
        let start = ServerStart {
            kept: Some(next),
            ..ServerStart::default()
        };
        assert!(
            Servers::start(&none, SpawnOptions::new(dir.path()), start)
                .await
                .is_none()
        );
        assert!(stopped(&last));
    }

    #[tokio::test]
    async fn the_status_line_counts_the_servers_up_and_the_remote_ones() {
        let fixture = mecha_testkit::fixture_mcp().display().to_string();
        let (one, dir) = settings(&server("fx", &fixture));
        assert_eq!(start(&one, dir.path(), None).await.in_words(), "mcp 1");
        let both = format!(
            "{}{}",
            server("fx", &fixture),
            server("gone", "/nonexistent/mcp-server")
        );
        let (both, dir) = settings(&both);
        assert_eq!(
            start(&both, dir.path(), None).await.in_words(),
            "mcp 1/2 up"
        );
    }

    #[tokio::test]
    async fn a_server_that_is_down_is_started_again() {
        let (config, dir) = settings(&server("gone", "/nonexistent/mcp-server"));
        let first = start(&config, dir.path(), None).await;
        assert!(!first.all_up());
        let hub = Arc::clone(&first.hub);
        let again = start(&config, dir.path(), Some(first)).await;
        assert!(
            !Arc::ptr_eq(&hub, &again.hub),
            "a failed server was not retried"
        );
    }
}
