//! One run of one case: a fresh workspace copied from the fixture, a home
//! of its own (the measured config without skills, MCP servers, hooks or
//! outbox; no skill store; its own sessions), and a `mecha run` process,
//! killed with its process group at the case's timeout. What it printed
//! (`--output-format stream-json`) is the trace the checks read.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mecha_eval::{Case, CaseReport, Observed, TracedCall, grade};
use serde_json::Value;

/// Runs a `command` check's program (argv) in a workspace within a time
/// limit: its exit code, or why it could not run.
pub type CommandRunner = dyn Fn(&[String], &Path, Duration) -> Result<i32, String> + Send + Sync;

/// What every run of the set shares.
pub struct Plan {
    pub exe: PathBuf,
    /// The measured config, with what eval forces off removed.
    pub config: String,
    pub model: Option<String>,
    pub mcp_files: Vec<PathBuf>,
    /// Runs a `command` check in a workspace.
    pub run_command: Box<CommandRunner>,
}

/// What a run's trace showed.
#[derive(Default)]
struct Trace {
    answer: String,
    calls: Vec<TracedCall>,
    ids: Vec<String>,
    turns: u32,
    tokens: u64,
    error: Option<String>,
    failed_servers: Vec<String>,
}

impl Trace {
    fn read(&mut self, event: &Value) {
        let text = |key: &str| event[key].as_str().unwrap_or_default().to_owned();
        match event["type"].as_str() {
            Some("init") => {
                for server in event["servers"].as_array().into_iter().flatten() {
                    if server["status"] == "failed" {
                        self.failed_servers.push(text_of(server, "name"));
                    }
                }
            }
            Some("tool_call") => {
                self.ids.push(text("id"));
                self.calls.push(TracedCall {
                    tool: text("name"),
                    refused: false,
                });
            }
            Some("gate") if event["decision"]["verdict"] != "allowed" => {
                let id = text("id");
                if let Some(n) = self.ids.iter().rposition(|known| *known == id) {
                    self.calls[n].refused = true;
                }
            }
            Some("final") => {
                self.answer = text("text");
                self.turns = u32::try_from(event["turns"].as_u64().unwrap_or(0)).unwrap_or(0);
                let usage = &event["usage"];
                self.tokens = usage["input_tokens"].as_u64().unwrap_or(0)
                    + usage["output_tokens"].as_u64().unwrap_or(0);
                if event["is_error"] == true {
                    self.error = event["error"].as_str().map(str::to_owned);
                }
            }
            _ => {}
        }
    }
}

fn text_of(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// Copies `from` into `to` (which exists), links as links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// Runs `case` once; `fatal` is set when an MCP server failed, which makes
/// the rest of the set meaningless.
pub fn run_case(plan: &Plan, case: &Case, attempt: u32) -> (CaseReport, bool) {
    let started = Instant::now();
    let report =
        |checks: Vec<mecha_eval::CheckResult>, trace: Trace, error: Option<String>| CaseReport {
            name: case.name.clone(),
            passed: error.is_none() && checks_pass(&checks),
            checks,
            turns: trace.turns,
            tokens: trace.tokens,
            seconds: started.elapsed().as_secs_f64(),
            attempt,
            error,
            trace: trace.calls,
        };
    let dir = match tempfile::Builder::new().prefix("mecha-eval-").tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            return (
                report(
                    vec![],
                    Trace::default(),
                    Some(format!("no temporary folder: {e}")),
                ),
                false,
            );
        }
    };
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    let prepared = std::fs::create_dir_all(&home)
        .and_then(|()| std::fs::create_dir_all(&ws))
        .and_then(|()| std::fs::write(home.join("config.toml"), &plan.config))
        .and_then(|()| match &case.fixture {
            Some(fixture) => copy_tree(fixture, &ws),
            None => Ok(()),
        });
    if let Err(e) = prepared {
        let why = format!("cannot prepare the case's workspace: {e}");
        return (report(vec![], Trace::default(), Some(why)), false);
    }
    let trace = match run_mecha(plan, case, &home, &ws) {
        Ok(trace) => trace,
        Err(why) => return (report(vec![], Trace::default(), Some(why)), false),
    };
    if !trace.failed_servers.is_empty() {
        let why = format!(
            "MCP server {} failed; a set graded without its tools measures nothing",
            trace.failed_servers.join(", ")
        );
        return (report(vec![], trace, Some(why)), true);
    }
    let timeout = Duration::from_secs(case.timeout_s());
    let run_command = |argv: &[String]| (plan.run_command)(argv, &ws, timeout);
    let seen = Observed {
        answer: &trace.answer,
        calls: &trace.calls,
        workspace: &ws,
        run_command: &run_command,
    };
    let checks = case.check.iter().map(|check| grade(check, &seen)).collect();
    let error = trace.error.clone();
    (report(checks, trace, error), false)
}

fn checks_pass(checks: &[mecha_eval::CheckResult]) -> bool {
    !checks.is_empty() && checks.iter().all(|c| c.passed)
}

/// `mecha run` on the case in `ws` with `home` as MECHA_HOME, to its end or
/// the case's timeout.
fn run_mecha(plan: &Plan, case: &Case, home: &Path, ws: &Path) -> Result<Trace, String> {
    let mut command = Command::new(&plan.exe);
    command.arg("-C").arg(ws);
    for file in &plan.mcp_files {
        command.arg("--mcp-file").arg(file);
    }
    command.args([
        "run",
        "--yes",
        "--no-skills",
        "--output-format",
        "stream-json",
    ]);
    if let Some(model) = &plan.model {
        command.args(["--model", model]);
    }
    if let Some(turns) = case.max_turns {
        command.args(["--max-turns", &turns.to_string()]);
    }
    command
        .arg(&case.prompt)
        .env("MECHA_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", plan.exe.display()))?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut trace = Trace::default();
        if let Some(stdout) = stdout {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line) {
                    trace.read(&event);
                }
            }
        }
        trace
    });
    let mut stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let deadline = Instant::now() + Duration::from_secs(case.timeout_s());
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for the run: {e}")),
        }
    };
    if status.is_none()
        && let Some(group) = rustix::process::Pid::from_raw(child.id() as i32)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = child.wait();
    }
    let mut trace = reader.join().unwrap_or_default();
    let errors = errors.join().unwrap_or_default();
    match status {
        None => {
            trace.error = Some(format!(
                "timed out after {} s (timeout_s)",
                case.timeout_s()
            ))
        }
        Some(status) if trace.turns == 0 && !status.success() => {
            let last = errors
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            trace.error = Some(format!("the run failed ({status}): {last}"));
        }
        Some(_) => {}
    }
    Ok(trace)
}
