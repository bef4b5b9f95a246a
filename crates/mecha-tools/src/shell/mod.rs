//! `shell`: runs a command with `bash -c` in the workspace.
//!
//! stdout and stderr share one pipe, so the model sees them interleaved
//! exactly as a terminal would show `2>&1`, and the bytes stream into the
//! call's spilling sink, so memory stays at one budget whatever the command
//! prints. The command gets its own registered process group, and the whole
//! group is killed when the call ends, times out or is dropped; what left
//! the group (`setsid`, a double fork) is re-parented to mecha, the child
//! subreaper, and killed and reaped as the call ends (see
//! `mecha_core::process_tree`). Nothing it started outlives the call.

mod cancel;
mod launch;
mod render;
mod spare;

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, ProcessGroup, SpillingSink, Tool, ToolCtx, ToolOutput};
use mecha_sandbox::{Finished, Network, Sandbox};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::{Instant, sleep_until};

use crate::args::{optional_u64, required_str};
use launch::{ConfinedCall, Launched, launch, launch_confined};
use render::{render, seconds};
use spare::Spares;

/// Timeouts for `shell`.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Used when the call names no timeout.
    pub default_timeout: Duration,
    /// The most a call may ask for.
    pub max_timeout: Duration,
    /// Variables the command never sees: the model API keys mecha itself
    /// holds. A command has no use for them, and a prompt-injected one
    /// would have a use for them.
    pub hidden_env: Vec<String>,
    /// Confines every command when set. The policy lives here, not in the
    /// call's context, because it decides the tool's capabilities; the
    /// workspace it mounts still comes from the context at call time.
    pub sandbox: Option<Sandbox>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            hidden_env: Vec::new(),
            sandbox: None,
        }
    }
}

/// Bytes read from the pipe at a time; with the sink's head, the whole of
/// what a call holds in memory.
const READ_CHUNK: usize = 64 * 1024;

/// How long to keep reading after bash exits or the group is killed. Output
/// already in the pipe arrives at once; the wait only matters when a
/// background process still holds the pipe open, and then it must not be
/// waited for.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// Room kept in the call's budget for the status line added after the
/// output, so the loop's later `fit` never has to cut the result again.
const TRAILER_RESERVE: usize = 320;

pub struct Shell {
    config: ShellConfig,
    description: String,
    /// A bash started ahead for the next unconfined call.
    spares: Spares,
}

impl Shell {
    pub fn new(config: ShellConfig) -> Self {
        let description = format!(
            "Run a command with `bash -c` in the workspace directory and return its output. \
             stdout and stderr are merged in the order they were written. stdin is empty, so \
             avoid interactive commands (editors, pagers, prompts): pass flags such as `-y` or \
             `--no-pager` instead. The command is killed after {default} unless you set \
             `timeout_s` (at most {max}). A non-zero exit comes back as an error with its exit \
             code. Long output is cut to fit, and the full output is saved to a file you can read \
             with fs_read. Everything the command starts is killed when it finishes, including \
             what it puts in the background or detaches (`&`, `nohup`, `setsid`, a double fork): \
             a job has to finish within the timeout.",
            default = seconds(default_timeout(&config)),
            max = seconds(config.max_timeout),
        );
        let description = match &config.sandbox {
            None => description,
            Some(sandbox) => format!(
                "{description} It runs in a sandbox: the workspace is writable (except git's \
                 hooks and config, and mecha's own files), the system directories are \
                 read-only, your home directory is absent{extra}, /tmp is private to the \
                 command and discarded when it ends (keep files you need in the workspace), \
                 and {network}.",
                extra = if sandbox.lists_paths() {
                    " except the paths the user listed"
                } else {
                    ""
                },
                network = match sandbox.network() {
                    Network::Full => "the network is reachable".to_owned(),
                    Network::Hosts(list) => format!(
                        "only these hosts are reachable, through a proxy the environment \
                         already names (HTTP_PROXY): {}; connections anywhere else, and DNS \
                         lookups, fail",
                        list.written().collect::<Vec<_>>().join(", ")
                    ),
                    Network::None => "there is no network, so downloads and installs fail: use \
                                      what is already installed"
                        .to_owned(),
                },
            ),
        };
        Self {
            config,
            description,
            spares: Spares::default(),
        }
    }

    /// The timeout a call gets: its own ask within [1 s, max], or the default.
    fn timeout_for(&self, requested: Option<u64>) -> Duration {
        match requested {
            Some(secs) => Duration::from_secs(secs.max(1)).min(self.config.max_timeout),
            None => default_timeout(&self.config),
        }
    }
}

/// The default, never above the max, whatever the config says.
fn default_timeout(config: &ShellConfig) -> Duration {
    config.default_timeout.min(config.max_timeout)
}

#[async_trait]
impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command line to run in the workspace"
                },
                "timeout_s": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.config.max_timeout.as_secs().max(1),
                    "description": format!(
                        "Seconds before the command is killed (default {}, at most {})",
                        seconds(default_timeout(&self.config)),
                        seconds(self.config.max_timeout),
                    )
                }
            },
            "required": ["command"]
        })
    }

    fn capabilities(&self) -> Capabilities {
        // Unconfined, the shell can reach the network with a destination the
        // model writes, so it is a chosen send; confined without network it
        // cannot send at all, and through the allowlist only to hosts the
        // config fixed. It still reads the workspace (private) and
        // writes it (destructive) either way. Taint tracking cannot see
        // inside a command, so it is deliberately not an untrusted source.
        let egress = match &self.config.sandbox {
            None => Egress::Chosen,
            Some(sandbox) => sandbox.egress(Egress::Chosen, sandbox.network()),
        };
        Capabilities {
            private_data: true,
            untrusted_input: false,
            egress,
            destructive: true,
        }
    }

    fn confinement(&self) -> Option<mecha_core::Confinement> {
        let sandbox = self.config.sandbox.as_ref()?;
        Some(mecha_core::Confinement {
            backend: sandbox.kind().as_str().to_owned(),
            network: *sandbox.network() == Network::Full,
            allowed_hosts: match sandbox.network() {
                Network::Hosts(list) => list.len(),
                _ => 0,
            },
        })
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let command = match required_str(&input, "command") {
            Ok(command) => command,
            Err(refusal) => return Ok(refusal),
        };
        let timeout = match optional_u64(&input, "timeout_s") {
            Ok(requested) => self.timeout_for(requested),
            Err(refusal) => return Ok(refusal),
        };

        let sandbox = self.config.sandbox.as_ref();
        let confined = sandbox.map(|sandbox| {
            let call = ConfinedCall {
                workspace: ctx.workspace().to_owned(),
                protected: ctx.protected().to_vec(),
                sealed: ctx.sealed().to_vec(),
            };
            (sandbox, call)
        });
        let launched = match &confined {
            Some((sandbox, call)) => launch_confined(command, call, sandbox, &self.spares),
            None => match self.spares.run(command, ctx.workspace()) {
                Some(launched) => Ok(launched),
                None => launch(command, ctx.workspace(), &self.config.hidden_env),
            },
        };
        let Launched {
            mut child,
            group,
            output,
            lease,
        } = match launched {
            Ok(launched) => launched,
            Err(e) => {
                return Ok(ToolOutput::err(format!(
                    "could not start `bash -c` in {}: {e}",
                    ctx.workspace().display()
                )));
            }
        };
        // Dropped before its end, the call still kills and sweeps.
        let owed = cancel::Owed::new(group, lease, child.id());
        let mut sink = ctx.sink(
            "shell",
            ctx.call_budget_bytes.saturating_sub(TRAILER_RESERVE),
        );
        let ending = pump(&mut child, owed.group(), output, &mut sink, timeout).await?;
        let (group, lease) = owed.disarm();
        // Kills whatever the command left behind, in its group or escaped
        // from it, before the result is handed back.
        group.finish().await;
        // Then, with nothing of it left running (`finish` first ends a
        // container the client's death left running): undo what it planted
        // for git or a login shell on the host (blocking: it walks the
        // tree), and say what it left in its private /tmp.
        let finished = match lease {
            Some(lease) => tokio::task::spawn_blocking(move || lease.finish())
                .await
                .unwrap_or_default(),
            None => Finished::default(),
        };
        // The next call's bash, started while the model writes that call.
        match confined {
            Some((sandbox, call)) => self.spares.refill_confined(sandbox, call),
            None => self.spares.refill(&self.config.hidden_env),
        }

        let at_max = timeout >= self.config.max_timeout;
        let text = sink.finish();
        // A program that exists outside but not inside: say which
        // `readable` line would bring it in.
        let hint = match (&ending, sandbox) {
            (Ending::Exited(status), Some(sandbox)) if status.code() == Some(127) => {
                sandbox.missing_program_hint(&text)
            }
            _ => None,
        };
        let mut result = render(text, &ending, timeout, self.config.max_timeout, at_max);
        if let Some(hint) = hint {
            result.content.push('\n');
            result.content.push_str(&hint);
        }
        if !finished.undone.is_empty() {
            result.content.push_str(
                "\n[mecha undid what this command left for programs on the host to run later:\n",
            );
            for line in finished.undone {
                result.content.push_str(&format!("- {line}\n"));
            }
            result.content.push(']');
        }
        if let Some(discarded) = finished.left_in_tmp {
            result.content.push_str(&format!("\n[{discarded}]"));
        }
        // Where its connections went through the allowlist: a refused host
        // is named here, since the program's own error rarely says why.
        for line in finished.network {
            result.content.push_str(&format!("\n[{line}]"));
        }
        Ok(result)
    }
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    /// The group was killed before bash's status could be collected; only
    /// reachable if a killed bash is not reaped within the grace period.
    Unknown,
}

#[derive(PartialEq)]
enum Phase {
    Running,
    /// bash has exited; reading what is left in the pipe.
    Draining,
    /// The group is dead; reading what is left, however it got here.
    Killed,
}

/// Streams the pipe into the sink until bash has exited and the pipe is
/// closed, or the timeout and grace periods run out.
async fn pump(
    child: &mut launch::Running,
    group: &ProcessGroup,
    mut output: pipe::Receiver,
    sink: &mut SpillingSink<'_>,
    timeout: Duration,
) -> io::Result<Ending> {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut open = true;
    let mut status = None;
    let mut timed_out = false;
    let mut phase = Phase::Running;
    // A timeout too far away to represent is as good as none.
    let far = Instant::now() + Duration::from_secs(365 * 24 * 60 * 60);
    let deadline = sleep_until(Instant::now().checked_add(timeout).unwrap_or(far).min(far));
    tokio::pin!(deadline);

    while open || status.is_none() {
        tokio::select! {
            read = output.read(&mut buf), if open => match read {
                Ok(0) => open = false,
                Ok(n) => sink.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading shell output failed");
                    open = false;
                }
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(waited?);
                if phase == Phase::Running {
                    phase = Phase::Draining;
                    deadline.as_mut().reset(Instant::now() + DRAIN_GRACE);
                }
            },
            () = &mut deadline => {
                if phase == Phase::Killed {
                    break;
                }
                // Either the timeout, or bash exited and something it left in
                // the background still holds the pipe open.
                timed_out = phase == Phase::Running;
                group.kill();
                phase = Phase::Killed;
                deadline.as_mut().reset(Instant::now() + DRAIN_GRACE);
            },
        }
    }

    Ok(match status {
        _ if timed_out => Ending::TimedOut,
        Some(status) => Ending::Exited(status),
        None => Ending::Unknown,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn timeout_is_clamped_to_the_config() {
        let shell = Shell::new(ShellConfig::default());
        assert_eq!(shell.timeout_for(None), Duration::from_secs(120));
        assert_eq!(shell.timeout_for(Some(0)), Duration::from_secs(1));
        assert_eq!(shell.timeout_for(Some(5000)), Duration::from_secs(600));
        assert!(shell.description().contains("120 s"));
        assert!(shell.description().contains("600 s"));
    }
}
