//! Remote MCP servers for the tests: the official Python SDK's server
//! (`tests/fixtures/remote_mcp_server.py`, in streamable-HTTP or SSE mode,
//! optionally its own OAuth authorization server), a relay that records
//! what mecha sends, and a plain HTTP GET to play the browser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mecha_testkit::MockModel;

use super::{Api, Env};

/// A server process, killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The Python with the MCP SDK that `.ci/run` installs
/// (`target/mcp-python`, or `$MECHA_MCP_PYTHON`); `None` (skipped) when
/// it is missing outside CI.
pub fn sdk_python() -> Option<PathBuf> {
    let python = std::env::var_os("MECHA_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-python/bin/python")
        });
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: python3 -m venv target/mcp-python && target/mcp-python/bin/pip install \
         mcp==2.3.0",
        python.display()
    );
    eprintln!("SKIPPED: {} is not installed", python.display());
    None
}

/// The fixture server on `port`, with `args` after `--transport`, ready.
pub fn start_sdk_server(python: &Path, port: u16, transport: &str, args: &[&str]) -> Server {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/remote_mcp_server.py");
    let mut child = Command::new(python)
        .arg(script)
        .args(["--transport", transport, "--port", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = BufReader::new(stderr).lines();
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) if line.contains("Uvicorn running") => {
                std::thread::spawn(move || for _ in lines {});
                return server;
            }
            Some(_) => {}
            None => break,
        }
    }
    panic!("the Python MCP server did not start on port {port}");
}

/// A relay on loopback to `port` that keeps each request's head.
pub fn relay(port: u16) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let here = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || carry(client, port, &seen));
        }
    });
    (here, heads)
}

fn carry(mut client: TcpStream, port: u16, seen: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    seen.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&head).into_owned());
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = upstream.write_all(&head);
    let (mut up_read, mut client_write) =
        (upstream.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_read, &mut client_write);
        let _ = client_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut client, &mut upstream);
}

/// `GET url` (http, loopback): the status and the `Location` header.
pub fn http_get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = response
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
                .map(|(_, v)| v.trim().to_owned())
        });
    (status, location)
}

/// Plays the browser: opens `url` and follows its redirects, returning the
/// last address it was sent to.
pub fn browse(url: &str) -> String {
    let mut at = url.to_owned();
    for _ in 0..5 {
        match http_get(&at) {
            (300..=399, Some(next)) => at = next,
            _ => return at,
        }
    }
    at
}

/// The JSON lines the fixture server logged.
pub fn logged(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `mecha mcp login NAME`, with the browser's part played by `browser`,
/// given the address mecha printed and mecha's stdin.
pub async fn login(
    e: &Env,
    mock: &MockModel,
    name: &str,
    browser: impl FnOnce(&str, &mut std::process::ChildStdin) + Send + 'static,
) -> Output {
    let mut cmd = e.command(
        Api::OpenAi,
        mock,
        "k",
        "mcp",
        &["login", name, "--no-browser"],
    );
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut printed = String::new();
        let url = loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap() == 0 {
                break None;
            }
            printed.push_str(&line);
            if line.trim_start().starts_with("http://") {
                break Some(line.trim().to_owned());
            }
        };
        let mut stdin = child.stdin.take().unwrap();
        if let Some(url) = url {
            browser(&url, &mut stdin);
        }
        drop(stdin);
        out.read_to_string(&mut printed).unwrap();
        let mut output = child.wait_with_output().unwrap();
        output.stdout = printed.into_bytes();
        output
    })
    .await
    .unwrap()
}

/// The browser comes back to mecha's listener.
pub fn follow(url: &str, _: &mut std::process::ChildStdin) {
    let landed = browse(url);
    assert!(landed.contains("/callback?"), "{landed}");
}
