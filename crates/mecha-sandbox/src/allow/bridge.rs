//! The inside half of `allow_hosts`: mecha's own binary, run as the first
//! program in the sandbox, listens on the loopback of the sandbox's empty
//! network namespace (where the proxy variables point), starts the
//! confined command, and carries each connection to the proxy's UNIX
//! socket, bound in from the host. It judges nothing: the proxy does.
//!
//! Threads and blocking I/O, not an async runtime: a handful of
//! connections per command, and nothing to start before the command runs.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

/// The argument that makes mecha's binary the bridge.
pub const BRIDGE_ARG: &str = "__sandbox-bridge";
/// The bridge's one other use: exit 0 at once, to show it starts (in a
/// docker image, say).
pub const BRIDGE_CHECK: &str = "--check";
/// Where the bridge listens inside the sandbox.
pub const BRIDGE_LISTEN: &str = "127.0.0.1:3128";

/// Runs the bridge with its arguments (after [`BRIDGE_ARG`]):
/// `SOCKET -- PROGRAM ARGS...`. Returns the exit code to leave with: the
/// program's, or 128 + the signal that ended it.
pub fn run_bridge(args: Vec<OsString>) -> i32 {
    match bridge(args) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("mecha's sandbox bridge: {why}");
            125
        }
    }
}

fn bridge(args: Vec<OsString>) -> Result<i32, String> {
    if args.first().is_some_and(|a| a == BRIDGE_CHECK) {
        return Ok(0);
    }
    let mut args = args.into_iter();
    let socket = PathBuf::from(args.next().ok_or("no proxy socket given")?);
    if args.next().is_none_or(|sep| sep != "--") {
        return Err("expected `--` before the program".into());
    }
    let program = args.next().ok_or("no program given")?;
    let listener =
        TcpListener::bind(BRIDGE_LISTEN).map_err(|e| format!("listen on {BRIDGE_LISTEN}: {e}"))?;
    // The listener is close-on-exec, so the command cannot take it over.
    let mut child = Command::new(&program)
        .args(args)
        .spawn()
        .map_err(|e| format!("start {}: {e}", program.to_string_lossy()))?;
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || carry(client, &socket));
        }
    });
    let status = child
        .wait()
        .map_err(|e| format!("wait for the program: {e}"))?;
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(125))
}

/// Copies one connection both ways between the command and the proxy.
fn carry(client: TcpStream, socket: &std::path::Path) {
    let _ = client.set_nodelay(true);
    let Ok(proxy) = UnixStream::connect(socket) else {
        let body = "mecha's sandbox proxy has stopped; no connection can leave the sandbox\n";
        let reply = format!(
            "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut client = client;
        let _ = client.write_all(reply.as_bytes());
        return;
    };
    let (Ok(client_back), Ok(proxy_back)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || pump(client, proxy, |p| p.shutdown(Shutdown::Write)));
    pump(proxy_back, client_back, |c| c.shutdown(Shutdown::Write));
    let _ = up.join();
}

/// Copies `from` into `to` until `from` ends, then closes `to`'s writing
/// side so the far end sees the end too.
fn pump<R: Read, W: Write>(mut from: R, mut to: W, close: impl FnOnce(&W) -> std::io::Result<()>) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = close(&to);
}
