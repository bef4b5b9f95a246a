//! `mecha eval CASES.toml`: runs a case set and grades it; `mecha eval
//! merge` joins shard reports; `mecha eval --compare OLD NEW` says what
//! changed. Each run of a case is a `mecha run` process of its own (see
//! `case_run.rs`): its own workspace, home, sessions and spill, nothing
//! shared with another case or with the user's setup but the measured
//! config, so that `-j N` runs them side by side.

mod case_run;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, Subcommand};
use mecha_eval::cases::parse_shard;
use mecha_eval::{CaseReport, CaseSet, Report};

use crate::Failure;
use crate::output::err_line;
use case_run::{Plan, run_case};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    merge: Option<EvalCommand>,
    /// The case file (TOML: [[case]] with [[case.check]]s).
    cases: Option<PathBuf>,
    /// Run this many cases at once.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    jobs: u32,
    /// Run each case K times, and report pass@1 and pass@K.
    #[arg(long, value_name = "K", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Only shard I of N (e.g. 2/4): each case falls in exactly one shard.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// The model to measure, instead of the config's.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The config to measure, instead of $MECHA_HOME/config.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Compare two reports: which cases changed.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    compare: Option<Vec<PathBuf>>,
}

#[derive(Subcommand, Debug)]
enum EvalCommand {
    /// Join shard reports into one.
    Merge {
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Write the merged report as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

fn read_report(path: &Path) -> Result<Report, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read the report {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::Usage(format!(
            "{} is not a report `mecha eval --json` wrote: {e}",
            path.display()
        ))
    })
}

fn write_report(path: &Path, report: &Report) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(path, text + "\n")
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot write {}: {e}", path.display())))
}

pub fn run(args: EvalArgs, mcp_files: &[PathBuf]) -> Result<u8, Failure> {
    if let Some(EvalCommand::Merge { reports, json }) = args.merge {
        let reports = reports
            .iter()
            .map(|p| read_report(p))
            .collect::<Result<_, _>>()?;
        let merged = Report::merge(reports).map_err(Failure::Usage)?;
        print!("{}", merged.table());
        if let Some(path) = json {
            write_report(&path, &merged)?;
        }
        return Ok(u8::from(merged.failed > 0));
    }
    if let Some(pair) = &args.compare {
        let (old, new) = (read_report(&pair[0])?, read_report(&pair[1])?);
        for line in new.compared_to(&old) {
            println!("{line}");
        }
        return Ok(0);
    }
    let Some(cases) = &args.cases else {
        return Err(Failure::Usage(
            "give the case file: mecha eval CASES.toml (or `mecha eval merge`, `--compare`)".into(),
        ));
    };
    let mut set = CaseSet::load(cases).map_err(Failure::Usage)?;
    if let Some(shard) = &args.shard {
        let (index, count) = parse_shard(shard).map_err(Failure::Usage)?;
        set = set.shard(index, count);
    }
    let plan = plan(&args, mcp_files)?;
    let report = run_set(&plan, &set, &args)?;
    print!("{}", report.table());
    if let Some(path) = &args.json {
        write_report(path, &report)?;
    }
    Ok(u8::from(report.failed > 0))
}

/// The measured config as each case's home gets it: the user's (or
/// `--config`'s) without what eval forces off, its scripted model's path
/// made absolute.
fn measured_config(path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read the config {}: {e}", path.display())))?;
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    for forced_off in ["skills", "mcp", "mcp_files", "hook", "outbox"] {
        table.remove(forced_off);
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let dir = absolute.parent().unwrap_or(Path::new("/"));
    if let Some(toml::Value::Table(provider)) = table.get_mut("provider")
        && let Some(toml::Value::String(script)) = provider.get_mut("script")
        && Path::new(script.as_str()).is_relative()
    {
        *script = dir.join(&*script).display().to_string();
    }
    Ok(toml::to_string(&table).unwrap_or_default())
}

fn plan(args: &EvalArgs, mcp_files: &[PathBuf]) -> Result<Plan, Failure> {
    let home = crate::config::mecha_home()?;
    let source = args
        .config
        .clone()
        .unwrap_or_else(|| home.join("config.toml"));
    let config = measured_config(&source)?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot find mecha's own executable: {e}")))?;
    let mcp_files: Vec<PathBuf> = mcp_files
        .iter()
        .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone()))
        .collect();
    // The checks' commands are confined as the measured config confines
    // a shell command.
    let probe = tempfile::tempdir().map_err(|e| Failure::Run(e.into()))?;
    std::fs::write(probe.path().join("config.toml"), &config)
        .map_err(|e| Failure::Run(e.into()))?;
    let settings = crate::load_settings(probe.path(), probe.path(), &mcp_files)?;
    if !mcp_files.is_empty() {
        check_servers(&exe, probe.path(), &mcp_files)?;
    }
    let sandbox = mecha_sandbox::Sandbox::start(&settings.sandbox, crate::wiring::host_env())
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let runtime = Arc::new(crate::runtime()?);
    let run_command = Box::new(move |argv: &[String], ws: &Path, timeout: Duration| {
        runtime.block_on(checked_command(sandbox.as_ref(), argv, ws, timeout))
    });
    Ok(Plan {
        exe,
        config,
        model: args.model.clone(),
        mcp_files,
        run_command,
    })
}

/// Every `--mcp-file` server must start before the first case: a set
/// graded against part of its tools measures nothing.
fn check_servers(exe: &Path, home: &Path, mcp_files: &[PathBuf]) -> Result<(), Failure> {
    let mut command = std::process::Command::new(exe);
    command.arg("-C").arg(home);
    for file in mcp_files {
        command.arg("--mcp-file").arg(file);
    }
    let out = command
        .args(["tools", "--json"])
        .env("MECHA_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Failure::Run(e.into()))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr);
    Err(Failure::Usage(format!(
        "an MCP server of --mcp-file did not start, so no case ran (a set graded without its \
         tools measures nothing):\n{}",
        why.trim_end()
    )))
}

/// A `command` check's program run in `ws`, confined by `sandbox` if one
/// is configured; its exit code.
async fn checked_command(
    sandbox: Option<&mecha_sandbox::Sandbox>,
    argv: &[String],
    ws: &Path,
    timeout: Duration,
) -> Result<i32, String> {
    let (program, rest) = argv.split_first().ok_or("no program")?;
    let args: Vec<std::ffi::OsString> = rest.iter().map(Into::into).collect();
    let (mut command, _lease) = match sandbox {
        Some(sandbox) => {
            let env = std::collections::BTreeMap::from([
                ("PATH".into(), sandbox.path_inside()),
                ("HOME".into(), ws.as_os_str().to_owned()),
            ]);
            let job = mecha_sandbox::Job {
                program: program.as_ref(),
                args: &args,
                workspace: ws,
                env,
                network: sandbox.network().clone(),
                read_only: &[],
                hidden: &[],
            };
            let confined = sandbox.confine(job).map_err(|e| e.to_string())?;
            (confined.command, Some(confined.lease))
        }
        None => {
            let mut command = tokio::process::Command::new(program);
            command.args(&args).current_dir(ws);
            (command, None)
        }
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(timeout, command.status()).await {
        Ok(Ok(status)) => Ok(status.code().unwrap_or(-1)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "it ran past the case's timeout ({} s)",
            timeout.as_secs()
        )),
    }
}

/// Every run of every case, `jobs` at a time, with a line per run ended.
fn run_set(plan: &Plan, set: &CaseSet, args: &EvalArgs) -> Result<Report, Failure> {
    let queue: VecDeque<(usize, u32)> = (0..set.cases.len())
        .flat_map(|n| (1..=args.repeat).map(move |attempt| (n, attempt)))
        .collect();
    let total = queue.len();
    let queue = Mutex::new(queue);
    let done: Mutex<Vec<CaseReport>> = Mutex::new(Vec::new());
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.min(u32::try_from(total).unwrap_or(u32::MAX)) {
            scope.spawn(|| {
                loop {
                    if fatal.lock().map(|f| f.is_some()).unwrap_or(true) {
                        return;
                    }
                    let Some((n, attempt)) = queue.lock().ok().and_then(|mut q| q.pop_front())
                    else {
                        return;
                    };
                    let case = &set.cases[n];
                    let (report, stops) = run_case(plan, case, attempt);
                    if stops && let Ok(mut fatal) = fatal.lock() {
                        *fatal = report.error.clone();
                    }
                    if let Ok(mut done) = done.lock() {
                        done.push(report.clone());
                        err_line(&format!(
                            "mecha eval: [{}/{total}] {}{} {} ({:.1} s)",
                            done.len(),
                            case.name,
                            if args.repeat > 1 {
                                format!(" #{attempt}")
                            } else {
                                String::new()
                            },
                            if report.passed { "pass" } else { "FAIL" },
                            report.seconds
                        ));
                    }
                }
            });
        }
    });
    if let Some(why) = fatal.into_inner().ok().flatten() {
        return Err(Failure::Run(anyhow::anyhow!("the set stopped: {why}")));
    }
    let model = args.model.clone();
    Ok(Report::of(done.into_inner().unwrap_or_default(), model))
}
