//! What this server sees and can reach, for the environment and sandbox
//! tests: `env`, `cwd`, `pid`, and `probe` (a TCP port on loopback, and
//! whether a path exists).

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
        _ => probe(args),
    }
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
