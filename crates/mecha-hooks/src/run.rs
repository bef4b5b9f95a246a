//! Running one hook: its process, its environment, its bounded output, and
//! what its exit and stdout mean under the Claude Code contract.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Instant;

use mecha_core::{BASE_ENV, ProcessGroup, spawn_group};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::config::{Hook, HookEvent, OnError};
use crate::{Decision, HookRun};

/// The most of a hook's stdout that is read: a decision is a few hundred
/// bytes, and a hook that writes megabytes must not grow memory.
const MAX_STDOUT: usize = 64 * 1024;
/// The most of its stderr that is read.
const MAX_STDERR: usize = 16 * 1024;
/// The longest reason passed on, in characters: it goes to the model.
const MAX_REASON_CHARS: usize = 2000;

/// The exit code that blocks, stderr being the reason.
const EXIT_BLOCK: i32 = 2;

/// Runs `hook` with `payload` on stdin in `cwd`, and reads its verdict.
pub(crate) async fn run(hook: &Hook, payload: &[u8], cwd: &Path) -> HookRun {
    let started = Instant::now();
    let said = match execute(hook, payload, cwd).await {
        Ok(finished) => interpret(&finished, hook.event),
        Err(problem) => Err(problem),
    };
    let (said, failure) = match said {
        Ok(said) => (said, None),
        Err(problem) => (failed(hook, &problem), Some(problem)),
    };
    HookRun {
        command: hook.command.clone(),
        decision: said.decision,
        system_message: said.system_message,
        context: said.context,
        failure,
        elapsed: started.elapsed(),
    }
}

/// What a hook said, once read.
struct Said {
    decision: Decision,
    system_message: Option<String>,
    context: Option<String>,
}

impl Said {
    fn only(decision: Decision) -> Self {
        Self {
            decision,
            system_message: None,
            context: None,
        }
    }
}

/// A hook that broke: its `on_error` decides where it guards (pre_tool and
/// user_prompt), and the problem stays visible either way. At the other
/// events a broken hook has nothing to open: it is reported and changes
/// nothing (a broken stop hook must not keep the model working).
fn failed(hook: &Hook, problem: &str) -> Said {
    let guards = matches!(hook.event, HookEvent::PreTool | HookEvent::UserPrompt);
    Said::only(match hook.on_error {
        OnError::Block if guards => Decision::Block(format!(
            "hook `{}` {problem}, so the {} is blocked (a hook that breaks blocks; set \
             on_error = \"allow\" on its [[hook]] to let {} through when it fails)",
            hook.command,
            guarded(hook.event),
            plural(hook.event),
        )),
        _ => Decision::Pass,
    })
}

fn guarded(event: HookEvent) -> &'static str {
    if event == HookEvent::UserPrompt {
        "prompt"
    } else {
        "call"
    }
}

fn plural(event: HookEvent) -> &'static str {
    if event == HookEvent::UserPrompt {
        "prompts"
    } else {
        "calls"
    }
}

struct Finished {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

async fn execute(hook: &Hook, payload: &[u8], cwd: &Path) -> Result<Finished, String> {
    let mut cmd = Command::new(&hook.program);
    cmd.current_dir(cwd)
        .env_clear()
        .envs(hook_env(cwd))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, group) = start(&mut cmd)
        .await
        .map_err(|e| format!("could not start: {e}"))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("could not start: its pipes were not opened".to_owned());
    };
    let feed = async move {
        // A hook that does not read its stdin closes it: not an error.
        let _ = stdin.write_all(payload).await;
        drop(stdin);
    };
    let wait = async {
        let status = child.wait().await;
        // Whatever the hook left running in its group would hold the
        // pipes open; the verdict is in once the hook itself has exited.
        group.kill();
        status
    };
    let all = async {
        tokio::join!(
            wait,
            read_bounded(stdout, MAX_STDOUT),
            read_bounded(stderr, MAX_STDERR),
            feed
        )
    };
    // On timeout `all` is dropped, and with `group` the whole group dies.
    let (status, stdout, stderr, ()) = tokio::time::timeout(hook.timeout, all)
        .await
        .map_err(|_| format!("timed out after {} s", hook.timeout.as_secs()))?;
    let status = status.map_err(|e| format!("could not be waited for: {e}"))?;
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

/// The allowlist an MCP server starts from, plus the workspace: never
/// anything else of mecha's environment, so model keys never reach a hook.
fn hook_env(cwd: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = BASE_ENV
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v)))
        .collect();
    env.push(("MECHA_PROJECT_DIR".into(), cwd.as_os_str().to_owned()));
    env
}

/// Reads at most `limit` bytes and drains the rest, so that a chatty hook
/// neither grows memory nor blocks on a full pipe.
async fn read_bounded(mut reader: impl AsyncRead + Unpin, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// What a finished hook decided, or what went wrong.
fn interpret(finished: &Finished, event: HookEvent) -> Result<Said, String> {
    match finished.status.code() {
        Some(0) => said_on_stdout(&finished.stdout, event),
        Some(EXIT_BLOCK) => {
            let reason = bounded(String::from_utf8_lossy(&finished.stderr).trim());
            Ok(Said::only(Decision::Block(if reason.is_empty() {
                "blocked by a hook (exit 2, no reason on stderr)".to_owned()
            } else {
                reason
            })))
        }
        Some(code) => Err(format!("exited with code {code}{}", stderr_tail(finished))),
        None => Err(match finished.status.signal() {
            Some(signal) => format!("was killed by signal {signal}{}", stderr_tail(finished)),
            None => "ended without an exit code".to_owned(),
        }),
    }
}

fn stderr_tail(finished: &Finished) -> String {
    let text = bounded(String::from_utf8_lossy(&finished.stderr).trim());
    if text.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {text})")
    }
}

/// Exit 0: empty stdout is no objection; otherwise it must be a JSON
/// object in the Claude Code shape, except that a user_prompt or
/// session_start hook may print plain text, which is context for the model.
fn said_on_stdout(stdout: &[u8], event: HookEvent) -> Result<Said, String> {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if text.is_empty() {
        return Ok(Said::only(Decision::Pass));
    }
    let takes_plain_text = matches!(event, HookEvent::UserPrompt | HookEvent::SessionStart);
    if takes_plain_text && !text.starts_with('{') {
        return Ok(Said {
            context: Some(bounded(text)),
            ..Said::only(Decision::Pass)
        });
    }
    let json: Value = serde_json::from_str(text).map_err(|_| {
        format!(
            "printed something that is not JSON: `{}`",
            bounded_to(text, 200)
        )
    })?;
    let Value::Object(object) = &json else {
        return Err(format!(
            "printed JSON that is not an object: `{}`",
            bounded_to(text, 200)
        ));
    };
    let reason_at = |value: Option<&Value>| value.and_then(Value::as_str).map(bounded);
    let specific = object.get("hookSpecificOutput");
    let context = reason_at(specific.and_then(|s| s.get("additionalContext")))
        .or_else(|| reason_at(object.get("additionalContext")));
    let decision = if event == HookEvent::PreTool {
        permission_decision(specific)?
    } else {
        Decision::Pass
    };
    // The older top-level form, and `continue: false`: each can only
    // narrow what `permissionDecision` said.
    let no_reason = || "blocked by a hook (no reason given)".to_owned();
    let stop = object.get("continue").and_then(Value::as_bool) == Some(false);
    let blocked_by_top_level = match object.get("decision").map(|d| d.as_str()) {
        Some(Some("block")) => Some(reason_at(object.get("reason")).unwrap_or_else(no_reason)),
        Some(Some("approve" | "allow")) | None => None,
        Some(_) => {
            return Err(
                "answered a `decision` that is neither \"block\" nor \"approve\"".to_owned(),
            );
        }
    };
    // At a stop, `continue: false` is what happens anyway.
    let stops_the_work = stop && matches!(event, HookEvent::PreTool | HookEvent::UserPrompt);
    let decision = match (blocked_by_top_level, decision) {
        (Some(reason), _) => Decision::Block(reason),
        (None, Decision::Block(reason)) => Decision::Block(reason),
        (None, _) if stops_the_work => {
            Decision::Block(reason_at(object.get("stopReason")).unwrap_or_else(no_reason))
        }
        (None, decision) => decision,
    };
    Ok(Said {
        decision,
        system_message: reason_at(object.get("systemMessage")),
        context,
    })
}

/// A pre_tool hook's `hookSpecificOutput.permissionDecision`.
fn permission_decision(specific: Option<&Value>) -> Result<Decision, String> {
    let permission = specific.and_then(|s| s.get("permissionDecision"));
    let reason = specific
        .and_then(|s| s.get("permissionDecisionReason"))
        .and_then(Value::as_str)
        .map(bounded);
    Ok(match permission.map(|p| p.as_str()) {
        Some(Some("deny")) => Decision::Block(
            reason.unwrap_or_else(|| "blocked by a hook (no reason given)".to_owned()),
        ),
        Some(Some("ask")) => Decision::Ask(
            reason.unwrap_or_else(|| "a hook asks for a person's decision".to_owned()),
        ),
        // "No objection", never an approval: the rules and the approver
        // still run.
        Some(Some("allow")) | None => Decision::Pass,
        Some(other) => {
            return Err(format!(
                "answered permissionDecision {}, which is none of allow, deny, ask",
                other.map_or_else(
                    || permission.map(Value::to_string).unwrap_or_default(),
                    |s| { format!("\"{s}\"") }
                )
            ));
        }
    })
}

fn bounded(text: &str) -> String {
    bounded_to(text, MAX_REASON_CHARS)
}

fn bounded_to(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Starts the hook; a script still open for writing somewhere (an editor
/// saving it, a fork of a process that was writing it) refuses to run with
/// ETXTBSY for a moment, so that is tried again a few times.
async fn start(cmd: &mut Command) -> io::Result<(tokio::process::Child, ProcessGroup)> {
    let mut waits = BUSY_WAITS;
    loop {
        match spawn_group(cmd) {
            Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy && waits > 0 => {
                waits -= 1;
                tokio::time::sleep(BUSY_WAIT).await;
            }
            started => return started,
        }
    }
}

/// How often, and how long apart, a busy script is tried again.
const BUSY_WAITS: u32 = 5;
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(20);
