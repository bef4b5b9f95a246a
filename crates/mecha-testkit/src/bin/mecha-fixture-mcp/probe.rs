//! `probe`: what this server can reach, for the sandbox's tests: a TCP
//! port on loopback, and whether a path exists.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

/// `{"port": N, "path": "/x"}` in, `{"connect": "ok" | "<error>", "exists": bool}` out.
pub(super) fn probe(args: &Value) -> String {
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
    json!({"connect": connect, "exists": exists}).to_string()
}
