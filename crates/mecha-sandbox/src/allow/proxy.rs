//! The host side of `allow_hosts`: an HTTP proxy on a UNIX socket that a
//! confined command reaches through the bridge (bridge.rs), and the only
//! way out of its network namespace.
//!
//! It takes `CONNECT host:port` (the tunnel HTTPS and most package
//! managers use) and absolute-URI requests (`GET http://host/path`, plain
//! HTTP). For each it checks the host's spelling and the allowlist, looks
//! the name up itself, refuses the whole name if any answer is an address
//! the `http_fetch` guard refuses (unless an entry names that address), and
//! connects to an address it vetted: the client never gets to resolve or
//! pick one. A refusal is a `403` whose body says why, and is kept for the
//! report the command's output ends with.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mecha_core::net::{EgressGuard, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::hosts::{Allowlist, Host, parse_host, parse_port};

/// The longest request head read before the request is refused.
const MAX_HEAD: usize = 32 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one connection attempt to a vetted address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the proxy needs to judge a request.
#[derive(Clone)]
pub struct Policy {
    pub allow: Arc<Allowlist>,
    pub guard: EgressGuard,
    pub resolver: Arc<dyn Resolver>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// A running proxy; dropping it stops it and every tunnel through it.
#[derive(Debug)]
pub struct Proxy {
    socket: PathBuf,
    log: Arc<Mutex<Log>>,
    task: tokio::task::JoinHandle<()>,
    /// The 0700 directory the socket is in; removed with it.
    _dir: tempfile::TempDir,
}

/// The destinations one proxy was asked for.
#[derive(Debug, Default)]
struct Log {
    /// `host:port` → connections made.
    reached: BTreeMap<String, usize>,
    /// `host:port` → why it was refused (the first reason).
    refused: BTreeMap<String, String>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Binds a fresh socket and starts serving on the current tokio runtime.
    pub fn start(policy: Policy) -> std::io::Result<Self> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| std::io::Error::other(format!("no async runtime to run it on: {e}")))?;
        let dir = tempfile::Builder::new().prefix("mecha-proxy-").tempdir()?;
        let socket = dir.path().join("proxy.sock");
        let listener = {
            let _entered = handle.enter();
            UnixListener::bind(&socket)?
        };
        let log = Arc::new(Mutex::new(Log::default()));
        let served = log.clone();
        let task = handle.spawn(async move {
            let mut tunnels = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                tunnels.spawn(serve(client, policy.clone(), served.clone()));
                while tunnels.try_join_next().is_some() {}
            }
        });
        Ok(Self {
            socket,
            log,
            task,
            _dir: dir,
        })
    }

    /// Where the proxy listens, on the host.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// One sentence per refused destination, then one naming what was
    /// reached, since the last report: what a command's output (or a
    /// server's call's) ends with.
    pub fn report(&self) -> Vec<String> {
        let log = std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()));
        let mut lines: Vec<String> = log
            .refused
            .iter()
            .map(|(dest, why)| format!("mecha's sandbox proxy refused {dest}: {why}"))
            .collect();
        if !log.reached.is_empty() {
            let reached: Vec<String> = log
                .reached
                .iter()
                .map(|(dest, n)| match n {
                    1 => dest.clone(),
                    n => format!("{dest} ({n} connections)"),
                })
                .collect();
            lines.push(format!(
                "mecha's sandbox proxy let through: {}",
                reached.join(", ")
            ));
        }
        lines
    }
}

/// One client connection: read its request, judge it, then tunnel.
async fn serve(mut client: UnixStream, policy: Policy, log: Arc<Mutex<Log>>) {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(read)) => read,
        Ok(Err(why)) => return answer(&mut client, 400, &why).await,
        Err(_) => return answer(&mut client, 408, "no request head within 30 s").await,
    };
    let request = match Request::parse(&head) {
        Ok(request) => request,
        Err(why) => return answer(&mut client, 400, &why).await,
    };
    let dest = format!("{}:{}", request.host, request.port);
    let judged = if policy.allow.allows(&request.host, request.port) {
        vetted_addresses(&policy, &request.host, request.port).await
    } else {
        Err("not in allow_hosts".to_owned())
    };
    let addrs = match judged {
        Ok(addrs) => addrs,
        Err(why) => {
            let line = format!("mecha's sandbox proxy refused {dest}: {why}");
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .refused
                .entry(dest)
                .or_insert(why);
            return answer(&mut client, 403, &line).await;
        }
    };
    let Some(mut upstream) = connect(&addrs, request.port).await else {
        let why = format!(
            "mecha's sandbox proxy could not reach {dest} (at {})",
            list(&addrs)
        );
        return answer(&mut client, 502, &why).await;
    };
    *log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .reached
        .entry(dest)
        .or_default() += 1;
    let opening = match &request.forward {
        None => {
            let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
            if client.write_all(established).await.is_err() {
                return;
            }
            rest
        }
        Some(rewritten) => [rewritten.as_bytes(), &rest].concat(),
    };
    if upstream.write_all(&opening).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The request head up to its blank line, and whatever came after it.
async fn read_head(client: &mut UnixStream) -> Result<(String, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Err("the request ended before its blank line".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            let head = String::from_utf8(buf)
                .map_err(|_| "the request head is not UTF-8 text".to_owned())?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err("the request head is longer than 32 KiB".into());
        }
    }
}

/// A request the proxy understood.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: Host,
    port: u16,
    /// For an absolute-URI request, the head to send upstream; `None` for
    /// a CONNECT tunnel.
    forward: Option<String>,
}

impl Request {
    fn parse(head: &str) -> Result<Self, String> {
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut parts = first.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "`{}` is not an HTTP request line",
                first.escape_debug()
            ));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(format!("speaks {version}; the proxy speaks HTTP/1.x"));
        }
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = authority(target, None)?;
            return Ok(Self {
                host,
                port,
                forward: None,
            });
        }
        let lower = target.to_ascii_lowercase();
        let rest = if lower.starts_with("http://") {
            &target["http://".len()..]
        } else if lower.starts_with("https://") {
            return Err("asks for an https:// URL directly; send HTTPS through CONNECT".into());
        } else {
            return Err(format!(
                "asks for `{}`, not an absolute http:// URL; this is a proxy (set HTTP_PROXY)",
                target.escape_debug()
            ));
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (auth, path) = rest.split_at(split);
        let (host, port) = authority(auth, Some(80))?;
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('/') => p.to_owned(),
            p => format!("/{p}"),
        };
        let mut forward = format!("{method} {path} {version}\r\nHost: {auth}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line
                .split(':')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let hop = name.starts_with("proxy-")
                || matches!(name.as_str(), "host" | "connection" | "keep-alive");
            if !hop {
                forward.push_str(line);
                forward.push_str("\r\n");
            }
        }
        // One request per connection: a second one on it would go to this
        // host whatever it named.
        forward.push_str("Connection: close\r\n\r\n");
        Ok(Self {
            host,
            port,
            forward: Some(forward),
        })
    }
}

/// `host:port` (or `[v6]:port`); the port may be left out only where a
/// default is given.
fn authority(auth: &str, default_port: Option<u16>) -> Result<(Host, u16), String> {
    let bad = |why: String| format!("`{}` {why}", auth.escape_debug());
    let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
        let (v6, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("opens a `[` and never closes it".into()))?;
        let addr = v6
            .parse::<IpAddr>()
            .map_err(|_| bad("is not an IPv6 address in brackets".into()))?;
        (Host::Address(addr), after.strip_prefix(':'))
    } else {
        let (host, port) = match auth.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (auth, None),
        };
        (parse_host(host).map_err(bad)?, port)
    };
    let port = match (port, default_port) {
        (Some(p), _) => parse_port(p).ok_or_else(|| bad("has no valid port".into()))?,
        (None, Some(default)) => default,
        (None, None) => return Err(bad("has no port (CONNECT takes host:port)".into())),
    };
    Ok((host, port))
}

/// The addresses a connection to `host` may use, all checked.
async fn vetted_addresses(policy: &Policy, host: &Host, port: u16) -> Result<Vec<IpAddr>, String> {
    let name = match host {
        // Allowed only because an entry names this very address.
        Host::Address(addr) => return Ok(vec![*addr]),
        Host::Name(name) => name,
    };
    let addrs = policy
        .resolver
        .lookup(name)
        .await
        .map_err(|e| format!("the name could not be resolved ({e})"))?;
    if addrs.is_empty() {
        return Err("the name has no addresses".into());
    }
    // One refused answer refuses the name: the client might otherwise be
    // steered to it on a retry.
    for &addr in &addrs {
        if let Err(refused) = policy.guard.check(addr)
            && !policy.allow.names_address(addr, port)
        {
            return Err(format!(
                "it resolves to {refused}, which only an allow_hosts entry naming that \
                 address literally lets through"
            ));
        }
    }
    Ok(addrs)
}

async fn connect(addrs: &[IpAddr], port: u16) -> Option<TcpStream> {
    for &addr in addrs {
        let attempt = TcpStream::connect(SocketAddr::new(addr, port));
        if let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
            // A relay forwards what it has at once; batching is the ends' job.
            let _ = stream.set_nodelay(true);
            return Some(stream);
        }
    }
    None
}

fn list(addrs: &[IpAddr]) -> String {
    addrs
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A short answer that ends the connection; `text` is its body, one line.
async fn answer(client: &mut UnixStream, status: u16, text: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        _ => "Bad Gateway",
    };
    let body = format!("{text}\n");
    let reply = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(reply.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
