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

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{
    Capabilities, Egress, ProcessGroup, SpillingSink, Tool, ToolCtx, ToolOutput, spawn_group,
};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep_until};

use crate::args::{optional_u64, required_str};

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
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            hidden_env: Vec::new(),
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
        Self {
            config,
            description,
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
        // model writes, so it is a chosen send. Taint tracking cannot see
        // inside a command, so it is deliberately not an untrusted source.
        Capabilities {
            private_data: true,
            untrusted_input: false,
            egress: Egress::Chosen,
            destructive: true,
        }
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

        let (mut child, group, output) =
            match spawn(command, ctx.workspace(), &self.config.hidden_env) {
                Ok(spawned) => spawned,
                Err(e) => {
                    return Ok(ToolOutput::err(format!(
                        "could not start `bash -c` in {}: {e}",
                        ctx.workspace().display()
                    )));
                }
            };
        let mut sink = ctx.sink(
            "shell",
            ctx.call_budget_bytes.saturating_sub(TRAILER_RESERVE),
        );
        let ending = pump(&mut child, &group, output, &mut sink, timeout).await?;
        // Kills whatever the command left behind, in its group or escaped
        // from it, before the result is handed back.
        group.finish().await;

        let at_max = timeout >= self.config.max_timeout;
        Ok(render(
            sink.finish(),
            &ending,
            timeout,
            self.config.max_timeout,
            at_max,
        ))
    }
}

/// Starts `bash -c command` in its own registered process group, with stdout
/// and stderr on one pipe.
fn spawn(
    command: &str,
    cwd: &Path,
    hidden_env: &[String],
) -> io::Result<(Child, ProcessGroup, pipe::Receiver)> {
    let (writer, reader) = pipe::pipe()?;
    let writer = writer.into_blocking_fd()?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        // Git asks for credentials on the terminal, not stdin; without this a
        // push to a private remote sits stopped until the timeout.
        .env("GIT_TERMINAL_PROMPT", "0");
    for name in hidden_env {
        cmd.env_remove(name);
    }
    let (child, group) = spawn_group(&mut cmd)?;
    // `cmd` still owns our copies of the write end; dropping it here is what
    // lets the reader see end-of-file once the command's side closes.
    drop(cmd);
    Ok((child, group, reader))
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
    child: &mut Child,
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

/// The result the model sees: the output, then one line on how it ended.
fn render(
    mut text: String,
    ending: &Ending,
    timeout: Duration,
    max: Duration,
    at_max: bool,
) -> ToolOutput {
    let trailer = match ending {
        Ending::Exited(status) if status.success() => None,
        Ending::Exited(status) => Some(exit_line(*status)),
        Ending::TimedOut => Some(timeout_line(timeout, max, at_max)),
        Ending::Unknown => Some("[the command was killed; its exit status is unknown]".to_owned()),
    };
    if text.is_empty() {
        text.push_str("[no output]");
    }
    match trailer {
        None => ToolOutput::ok(text),
        Some(trailer) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&trailer);
            ToolOutput::err(text)
        }
    }
}

fn exit_line(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        // bash reports a child killed by signal n as 128+n.
        match signal_name(code - 128) {
            Some(name) if code > 128 => {
                format!("[exit code {code}, which usually means a process was killed by {name}]")
            }
            _ => format!("[exit code {code}]"),
        }
    } else if let Some(signal) = status.signal() {
        match signal_name(signal) {
            Some(name) => format!("[killed by signal {signal} ({name})]"),
            None => format!("[killed by signal {signal}]"),
        }
    } else {
        format!("[ended without an exit code: {status}]")
    }
}

fn timeout_line(timeout: Duration, max: Duration, at_max: bool) -> String {
    let retry = if at_max {
        "the longest allowed. Make it do less per call".to_owned()
    } else {
        format!("Retry with a larger timeout_s (at most {})", seconds(max))
    };
    format!(
        "[timed out after {}; the command and everything it started were killed. {retry}, or \
         split the job into steps that each finish in time (nothing started in the background \
         outlives its command).]",
        seconds(timeout),
    )
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return None,
    })
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_trailer_fits_its_reserve() {
        // The newline before the trailer, and "[no output]" when it stands in
        // for the output.
        const SLACK: usize = 1 + "[no output]".len();
        let long = Duration::from_secs(u64::from(u32::MAX));
        for at_max in [false, true] {
            let line = timeout_line(long, long, at_max);
            assert!(
                line.len() + SLACK <= TRAILER_RESERVE,
                "{} bytes: {line}",
                line.len()
            );
        }
        for code in [1, 137, 255] {
            let line = exit_line(ExitStatus::from_raw(code << 8));
            assert!(line.len() + SLACK <= TRAILER_RESERVE, "{line}");
        }
    }

    #[test]
    fn timeout_is_clamped_to_the_config() {
        let shell = Shell::new(ShellConfig::default());
        assert_eq!(shell.timeout_for(None), Duration::from_secs(120));
        assert_eq!(shell.timeout_for(Some(0)), Duration::from_secs(1));
        assert_eq!(shell.timeout_for(Some(5000)), Duration::from_secs(600));
        assert!(shell.description().contains("120 s"));
        assert!(shell.description().contains("600 s"));
    }

    #[test]
    fn exit_lines_name_codes_and_signals() {
        assert_eq!(exit_line(ExitStatus::from_raw(2 << 8)), "[exit code 2]");
        assert!(exit_line(ExitStatus::from_raw(137 << 8)).contains("SIGKILL"));
        assert_eq!(
            exit_line(ExitStatus::from_raw(15)),
            "[killed by signal 15 (SIGTERM)]"
        );
    }
}
