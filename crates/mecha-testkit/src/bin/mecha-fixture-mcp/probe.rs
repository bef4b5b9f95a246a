//! What this server sees and can reach, for the environment and sandbox
//! tests: `env`, `cwd`, `pid`, `probe` (a TCP port on loopback, and
//! whether a path exists) and `fetch` (one plain-HTTP GET, through the
//! proxy the environment names, as an open-world server would).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Map, Value, json};

/// The answer to one of this module's tools.
pub(super) fn answer(name: &str, args: &Value) -> String {
    match name {
        "env" => {
            let env: Map<String, Value> = std::env::vars()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            Value::Object(env).to_string()
        }
        "cwd" => match std::env::current_dir() {
            Ok(dir) => dir.display().to_string(),
            Err(e) => format!("no cwd: {e}"),
        },
        "pid" => std::process::id().to_string(),
        "fetch" => fetch(args.get("url").and_then(Value::as_str).unwrap_or_default()),
        _ => probe(args),
    }
}

/// `http://host[:port]/path` fetched with HTTP/1.0, through `HTTP_PROXY`
/// (`http://addr:port`) when set, else straight to the host.
fn fetch(url: &str) -> String {
    let Some(rest) = url.strip_prefix("http://") else {
        return format!("not an http:// URL: {url}");
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let proxy = std::env::var("HTTP_PROXY").ok();
    let (connect_to, request) = match &proxy {
        Some(p) => (
            p.trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned(),
            format!("GET {url} HTTP/1.0\r\nHost: {authority}\r\n\r\n"),
        ),
        None => {
            let path = &rest[authority.len()..];
            let with_port = if authority.contains(':') {
                authority.to_owned()
            } else {
                format!("{authority}:80")
            };
            (
                with_port,
                format!(
                    "GET {} HTTP/1.0\r\nHost: {authority}\r\n\r\n",
                    if path.is_empty() { "/" } else { path }
                ),
            )
        }
    };
    let mut stream = match TcpStream::connect(&connect_to) {
        Ok(stream) => stream,
        Err(e) => return format!("could not connect to {connect_to}: {e}"),
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    if let Err(e) = stream.write_all(request.as_bytes()) {
        return format!("could not send: {e}");
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// `{"port": N, "path": "/x", "append": "/y"}` in, `{"connect": "ok" |
/// "<error>", "exists": bool, "appended": "ok" | "<error>"}` out. `append`
/// tries to add a line to a file, as a filesystem server's write would.
fn probe(args: &Value) -> String {
    let connect = args.get("port").and_then(Value::as_u64).map(|port| {
        let addr = SocketAddr::from(([127, 0, 0, 1], u16::try_from(port).unwrap_or(0)));
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        }
    });
    let exists = args
        .get("path")
        .and_then(Value::as_str)
        .map(|path| std::path::Path::new(path).exists());
    let appended = args.get("append").and_then(Value::as_str).map(|path| {
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        match opened.and_then(|mut f| std::io::Write::write_all(&mut f, b"# planted\n")) {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.to_string(),
        }
    });
    json!({"connect": connect, "exists": exists, "appended": appended}).to_string()
}
