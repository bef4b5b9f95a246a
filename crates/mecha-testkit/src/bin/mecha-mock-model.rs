//! `mecha-mock-model`: the mock model server as a process, for benchmarks
//! and manual runs.
//!
//! ```sh
//! mecha-mock-model --script turns.json [--log requests.jsonl]
//! ```
//!
//! Binds `127.0.0.1` on a free port and prints its base URL on the first
//! line of stdout (`ANTHROPIC_BASE_URL=<url>`, `OPENAI_BASE_URL=<url>/v1`).
//! It answers requests to `/v1/messages` and `/v1/chat/completions` with the
//! script's turns in order (the format of `mecha_provider::script`), and
//! once they are used up with a 400 that says so. With `--log`, it appends
//! one JSON line per request as it arrives:
//!
//! ```json
//! {"n":1,"t_ns":1700000000123456789,"method":"POST","path":"/v1/messages","body_bytes":9876}
//! ```
//!
//! `t_ns` is when the whole request had arrived, in nanoseconds since the
//! UNIX epoch (the realtime clock, so other processes can compare). When an
//! answer's last byte has been handed out, one more line says so, numbered
//! by the answers so far:
//!
//! ```json
//! {"answered":1,"t_ns":1700000000456789012}
//! ```
//!
//! so a round's time from the end of one answer to the next request leaves
//! out the mock's own reading of the request and the pauses between its
//! events.
//!
//! It serves until killed, or until its stdin reaches end of file when stdin
//! is a pipe: a parent that holds the pipe and dies takes the mock with it.
//! (A stdin of `/dev/null`, a file or a terminal is not watched.)

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

use mecha_testkit::{MockModel, MockReply, RecordedRequest, Script};

const USAGE: &str = "usage: mecha-mock-model --script FILE [--log FILE]";

#[derive(Debug)]
struct Args {
    script: PathBuf,
    log: Option<PathBuf>,
}

/// Parses the arguments after the program name; `Ok(None)` for `--help`.
fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Option<Args>, String> {
    let mut script = None;
    let mut log = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(PathBuf::from(value))),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().map(PathBuf::from))
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match name.as_str() {
            "--script" => script = Some(value()?),
            "--log" => log = Some(value()?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let script = script.ok_or_else(|| format!("--script is required\n{USAGE}"))?;
    Ok(Some(Args { script, log }))
}

fn log_line(n: usize, request: &RecordedRequest) -> String {
    let t_ns = request
        .received_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    serde_json::json!({
        "n": n,
        "t_ns": t_ns,
        "method": request.method,
        "path": request.path,
        "body_bytes": request.body_bytes,
    })
    .to_string()
}

fn answer_line(n: usize, at: std::time::SystemTime) -> String {
    let t_ns = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    serde_json::json!({"answered": n, "t_ns": t_ns}).to_string()
}

/// Whether stdin is a pipe, the one kind whose end of file means the
/// parent is gone.
fn stdin_is_pipe() -> bool {
    let stdin = std::io::stdin();
    let Ok(fd) = stdin.as_fd().try_clone_to_owned() else {
        return false;
    };
    File::from(fd)
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo())
}

/// Returns once stdin reaches end of file (or fails).
async fn stdin_closed() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 4096];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = tx.send(());
    });
    let _ = rx.await;
}

async fn serve(args: Args) -> Result<(), String> {
    let script = Script::load(&args.script).map_err(|e| e.to_string())?;
    let mut log = match &args.log {
        Some(path) => Some(BufWriter::new(
            File::options()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the log {}: {e}", path.display()))?,
        )),
        None => None,
    };
    let mock = MockModel::try_start(MockReply::from_script(script))
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1: {e}"))?;
    let mut requests = mock.subscribe();
    let mut answers = mock.subscribe_answered();
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", mock.base_url())
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
    }
    let watch_stdin = stdin_is_pipe();
    let stdin_closed = async {
        if watch_stdin {
            stdin_closed().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(stdin_closed, interrupted);
    let mut n = 0;
    let mut answered = 0;
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(request) = request else { return Ok(()) };
                n += 1;
                if let Some(log) = log.as_mut() {
                    writeln!(log, "{}", log_line(n, &request))
                        .and_then(|()| log.flush())
                        .map_err(|e| format!("cannot write the log: {e}"))?;
                }
            }
            Some(at) = answers.recv() => {
                answered += 1;
                if let Some(log) = log.as_mut() {
                    writeln!(log, "{}", answer_line(answered, at))
                        .and_then(|()| log.flush())
                        .map_err(|e| format!("cannot write the log: {e}"))?;
                }
            }
            () = &mut stdin_closed => return Ok(()),
            _ = &mut interrupted => return Ok(()),
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mecha-mock-model: {message}");
            return ExitCode::from(2);
        }
    };
    // One thread is plenty for a mock, and leaves the cores to the client
    // being measured.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mecha-mock-model: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mecha-mock-model: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::time::{Duration, SystemTime};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn args(list: &[&str]) -> Result<Option<Args>, String> {
        parse_args(list.iter().map(OsString::from))
    }

    #[test]
    fn parses_both_spellings_and_refuses_the_rest() {
        let a = args(&["--script", "s.json", "--log=l.jsonl"])
            .unwrap()
            .unwrap();
        assert_eq!(a.script, PathBuf::from("s.json"));
        assert_eq!(a.log, Some(PathBuf::from("l.jsonl")));
        assert!(
            args(&["--log", "l"])
                .unwrap_err()
                .contains("--script is required")
        );
        assert!(args(&["--script"]).unwrap_err().contains("needs a value"));
        assert!(
            args(&["--port", "1"])
                .unwrap_err()
                .contains("unknown argument `--port`")
        );
        assert!(args(&["--help"]).unwrap().is_none());
    }

    /// The log line carries the raw body length and the arrival time, for a
    /// request the mock refuses (404) as much as for one it answers.
    #[tokio::test]
    async fn logs_raw_length_and_arrival_of_every_request() {
        let mock = MockModel::start(vec![MockReply::text("hi")]).await;
        let mut requests = mock.subscribe();
        let before = SystemTime::now();
        for (path, body) in [
            ("/v1/messages", r#"{"model": "m",  "stream": true}"#),
            ("/nope", "x"),
        ] {
            let mut stream = tokio::net::TcpStream::connect(mock.addr()).await.unwrap();
            let head = format!(
                "POST {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\nx-api-key: k\r\n\
                 anthropic-version: 2023-06-01\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(body.as_bytes()).await.unwrap();
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await.unwrap();
        }
        let first = tokio::time::timeout(Duration::from_secs(5), requests.recv())
            .await
            .unwrap()
            .unwrap();
        let second = requests.recv().await.unwrap();
        assert_eq!(first.body_bytes, 31);
        assert_eq!(second.body_bytes, 1);
        assert!(first.received_at >= before && second.received_at >= first.received_at);
        let line: serde_json::Value = serde_json::from_str(&log_line(2, &second)).unwrap();
        assert_eq!(line["n"], 2);
        assert_eq!(line["path"], "/nope");
        assert_eq!(line["method"], "POST");
        assert_eq!(line["body_bytes"], 1);
        let t_ns = line["t_ns"].as_u64().unwrap();
        let since = second.received_at.duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(u128::from(t_ns), since.as_nanos());
        assert_eq!(mock.requests(), vec![first, second]);
    }
}
