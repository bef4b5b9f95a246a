#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Behaviour of the `shell` tool: results, exit codes, timeouts, process
//! group cleanup on every way a call can end, and spilling.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_tools::{Shell, ShellConfig};
use serde_json::{Value, json};
use tempfile::TempDir;

const BUDGET: usize = 16 * 1024;

fn setup(budget: usize) -> (TempDir, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), budget)
        .unwrap()
        .for_call("t1", 1, budget);
    (dir, ctx)
}

async fn run_with(shell: &Shell, ctx: &ToolCtx, input: Value) -> ToolOutput {
    let out = shell.call(input, ctx).await.unwrap();
    assert!(
        out.content.len() <= ctx.call_budget_bytes,
        "{} bytes exceed a budget of {}",
        out.content.len(),
        ctx.call_budget_bytes
    );
    assert!(!out.external);
    out
}

async fn run(ctx: &ToolCtx, command: &str) -> ToolOutput {
    run_with(
        &Shell::new(ShellConfig::default()),
        ctx,
        json!({ "command": command }),
    )
    .await
}

/// Whether a `sleep` with this pid still runs. A zombie counts as dead: it
/// was killed, and only waits for a reaper the test does not control.
fn sleep_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((head, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    head.ends_with("(sleep") && !rest.trim_start().starts_with('Z')
}

async fn wait_until_dead(pid: u32) -> bool {
    for _ in 0..40 {
        if !sleep_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn output_comes_back_on_success() {
    let (_dir, ctx) = setup(BUDGET);
    let out = run(&ctx, "echo hello; printf world").await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "hello\nworld");
}

#[tokio::test]
async fn empty_output_says_so() {
    let (_dir, ctx) = setup(BUDGET);
    let out = run(&ctx, "true").await;
    assert!(!out.is_error);
    assert_eq!(out.content, "[no output]");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_the_code() {
    let (_dir, ctx) = setup(BUDGET);
    let out = run(&ctx, "echo out; exit 3").await;
    assert!(out.is_error);
    assert_eq!(out.content, "out\n[exit code 3]");

    let out = run(&ctx, "exit 1").await;
    assert!(out.is_error);
    assert_eq!(out.content, "[no output]\n[exit code 1]");
}

#[tokio::test]
async fn death_by_signal_names_the_signal() {
    let (_dir, ctx) = setup(BUDGET);
    let out = run(&ctx, "echo dying; kill -TERM $$").await;
    assert!(out.is_error);
    assert_eq!(out.content, "dying\n[killed by signal 15 (SIGTERM)]");
}

#[tokio::test]
async fn stderr_is_merged_in_order() {
    let (_dir, ctx) = setup(BUDGET);
    let out = run(&ctx, "echo a; echo b >&2; echo c; echo d >&2; echo e").await;
    assert!(!out.is_error);
    assert_eq!(out.content, "a\nb\nc\nd\ne\n");
}

#[tokio::test]
async fn runs_in_the_workspace() {
    let (dir, ctx) = setup(BUDGET);
    std::fs::write(dir.path().join("note.txt"), "in the workspace\n").unwrap();
    let out = run(&ctx, "pwd; cat note.txt").await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        out.content,
        format!("{}\nin the workspace\n", ctx.workspace().display())
    );
}

#[tokio::test]
async fn stdin_is_empty() {
    let (_dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig::default());
    // With an inherited or open stdin, `cat` would wait for input until the
    // timeout instead of seeing end-of-file at once.
    let out = run_with(
        &shell,
        &ctx,
        json!({"command": "cat; echo done", "timeout_s": 5}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "done\n");
}

#[tokio::test]
async fn bad_arguments_are_refused_with_a_reason() {
    let (_dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig::default());
    let out = run_with(&shell, &ctx, json!({})).await;
    assert!(out.is_error);
    assert!(out.content.contains("`command`"), "{}", out.content);

    let out = run_with(&shell, &ctx, json!({"command": "true", "timeout_s": "ten"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("`timeout_s`"), "{}", out.content);
}

#[tokio::test]
async fn description_and_schema_name_the_timeouts() {
    let shell = Shell::new(ShellConfig {
        default_timeout: Duration::from_secs(30),
        max_timeout: Duration::from_secs(90),
        ..ShellConfig::default()
    });
    assert!(shell.description().contains("30 s"));
    assert!(shell.description().contains("90 s"));
    let schema = shell.input_schema();
    assert_eq!(schema["required"], json!(["command"]));
    assert_eq!(schema["properties"]["timeout_s"]["type"], "integer");
    assert_eq!(schema["properties"]["timeout_s"]["maximum"], 90);
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let (dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig::default());
    let marker = dir.path().join("marker");
    let started = Instant::now();
    let out = run_with(
        &shell,
        &ctx,
        json!({
            "command": "echo before; (sleep 2; touch marker) & sleep 30",
            "timeout_s": 1,
        }),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    assert!(
        out.content.starts_with("before\n[timed out after 1 s;"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("larger timeout_s (at most 600 s)"),
        "{}",
        out.content
    );

    // The subshell would have touched the marker by now had it survived.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!marker.exists(), "a background child outlived the timeout");
}

#[tokio::test]
async fn timeout_is_capped_at_the_max_and_defaults_apply() {
    let (_dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig {
        default_timeout: Duration::from_secs(1),
        max_timeout: Duration::from_secs(2),
        ..ShellConfig::default()
    });
    let out = run_with(&shell, &ctx, json!({"command": "sleep 30"})).await;
    assert!(
        out.content.contains("timed out after 1 s;"),
        "{}",
        out.content
    );

    let started = Instant::now();
    let out = run_with(
        &shell,
        &ctx,
        json!({"command": "sleep 30", "timeout_s": 100}),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        out.content.contains("timed out after 2 s; ")
            && out.content.contains("the longest allowed"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let (dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig::default());
    let marker = dir.path().join("marker");
    let call = shell.call(
        json!({"command": "sleep 100 & echo $! > bg.pid; (sleep 2; touch marker) & sleep 30"}),
        &ctx,
    );
    // Dropped once the command has started its children, however long a
    // loaded machine takes to get there.
    let started = async {
        while !dir.path().join("bg.pid").exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        _ = call => panic!("the call should still have been running"),
        () = started => {}
    }

    let bg = read_pid(&dir.path().join("bg.pid"));
    assert!(
        wait_until_dead(bg).await,
        "`sleep 100 &` outlived the cancelled call"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !marker.exists(),
        "a background child outlived the cancelled call"
    );
}

#[tokio::test]
async fn a_background_child_holding_the_pipe_does_not_hold_the_call() {
    let (_dir, ctx) = setup(BUDGET);
    let started = Instant::now();
    let out = run(&ctx, "sleep 100 & echo $!; echo hi").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited for the background sleep"
    );
    assert!(!out.is_error, "{}", out.content);
    let (pid, rest) = out.content.split_once('\n').unwrap();
    assert_eq!(rest, "hi\n");
    assert!(
        wait_until_dead(pid.parse().unwrap()).await,
        "the background sleep survived the call"
    );
}

#[tokio::test]
async fn what_the_command_leaves_running_is_killed_when_it_finishes() {
    let (dir, ctx) = setup(BUDGET);
    // Redirected, the child closes the pipe, so only the end-of-call kill
    // can stop it.
    let out = run(
        &ctx,
        "(sleep 1; touch marker) > /dev/null 2>&1 & echo started",
    )
    .await;
    assert_eq!(out.content, "started\n");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !dir.path().join("marker").exists(),
        "a background child outlived the call"
    );
}

/// The spill file path the truncation marker names.
fn spill_path(content: &str) -> PathBuf {
    let after = content
        .split_once("The full output is saved at ")
        .unwrap()
        .1;
    PathBuf::from(after.split_once(" — continue").unwrap().0)
}

/// The line the marker says the rest begins on.
fn rest_begins_on(content: &str) -> usize {
    let after = content.split_once("the rest begins on line ").unwrap().1;
    after.split_once('.').unwrap().0.parse().unwrap()
}

fn seq(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn big_output_spills_whole_and_the_marker_points_at_the_next_line() {
    let budget = 4096;
    let (_dir, ctx) = setup(budget);
    let out = run(&ctx, "seq 1 100000").await;
    assert!(!out.is_error);
    let (shown, marker) = out.content.split_once("[truncated by the harness").unwrap();
    assert!(marker.contains("of 588895 bytes"), "{marker}");

    let full = std::fs::read_to_string(spill_path(&out.content)).unwrap();
    assert_eq!(full, seq(100_000));

    let last_shown: usize = shown.lines().last().unwrap().parse().unwrap();
    assert_eq!(shown, seq(last_shown as u32));
    let next = rest_begins_on(&out.content);
    assert_eq!(next, last_shown + 1);
    assert_eq!(
        full.lines().nth(next - 1).unwrap(),
        (last_shown + 1).to_string()
    );
}

#[tokio::test]
async fn status_lines_survive_truncation_within_budget() {
    let budget = 4096;
    let (_dir, ctx) = setup(budget);
    let shell = Shell::new(ShellConfig::default());

    // Output that just fits the budget on its own must still leave room for
    // the status line.
    let command = format!("head -c {} /dev/zero | tr '\\0' a; exit 4", budget - 4);
    let out = run(&ctx, &command).await;
    assert!(out.is_error);
    assert!(out.content.ends_with("\n[exit code 4]"), "{}", out.content);

    let out = run(&ctx, "seq 1 100000; exit 4").await;
    assert!(out.is_error);
    assert!(out.content.contains("[truncated by the harness"));
    assert!(out.content.ends_with("\n[exit code 4]"), "{}", out.content);

    let out = run_with(
        &shell,
        &ctx,
        json!({"command": "seq 1 100000; sleep 30", "timeout_s": 1}),
    )
    .await;
    assert!(out.content.contains("[truncated by the harness"));
    assert!(
        out.content.contains("\n[timed out after 1 s;"),
        "{}",
        out.content
    );
    let full = std::fs::read_to_string(spill_path(&out.content)).unwrap();
    assert_eq!(full, seq(100_000));
}

/// The model API keys mecha holds never reach a command; other variables do.
#[tokio::test]
async fn hidden_variables_do_not_reach_the_command() {
    let (_dir, ctx) = setup(BUDGET);
    let shell = Shell::new(ShellConfig {
        hidden_env: vec!["PATH_OF_SECRETS".into(), "HOME".into()],
        ..ShellConfig::default()
    });
    // HOME is always set here, so hiding it is observable without touching
    // this process's environment.
    let out = run_with(
        &shell,
        &ctx,
        json!({"command": "echo \"home=${HOME:-unset} path=${PATH:+set}\""}),
    )
    .await;
    assert_eq!(out.content, "home=unset path=set\n");
}
