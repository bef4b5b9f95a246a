//! Shared by the `http_fetch*` integration tests: loopback HTTP servers
//! that count their connections, and a resolver that answers from a script.
//! Nothing here sends traffic anywhere but loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{ToolCtx, ToolOutput};
use mecha_tools::egress::Resolver;
use mecha_tools::{FetchConfig, HttpFetch};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a test server does with each connection.
pub enum Reply {
    /// Writes these bytes and closes.
    Fixed(Vec<u8>),
    /// A 200 whose body never ends.
    Endless,
    /// Accepts and never answers.
    Silent,
}

/// A running test server.
pub struct Server {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Server {
    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

/// A complete HTTP/1.1 response.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// The answer a trap gives, so a test that reaches one also shows it.
pub fn trap_reply() -> Reply {
    Reply::Fixed(response(
        "200 OK",
        &[("content-type", "text/plain")],
        b"TRAP",
    ))
}

pub fn text_reply(body: &str) -> Reply {
    Reply::Fixed(response(
        "200 OK",
        &[("content-type", "text/plain; charset=utf-8")],
        body.as_bytes(),
    ))
}

pub async fn serve(bind: &str, reply: Reply) -> Server {
    serve_on(TcpListener::bind(bind).await.unwrap(), reply)
}

pub fn serve_on(listener: TcpListener, reply: Reply) -> Server {
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let reply = Arc::new(reply);
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(answer(sock, Arc::clone(&reply)));
        }
    });
    Server { addr, hits }
}

async fn answer(mut sock: TcpStream, reply: Arc<Reply>) {
    // Read the request head, so the client is not cut off mid-write. A TLS
    // handshake (first byte 0x16) is not HTTP: hang up at once.
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.first() == Some(&0x16) {
            return;
        }
    }
    match &*reply {
        Reply::Fixed(bytes) => {
            let _ = sock.write_all(bytes).await;
            let _ = sock.shutdown().await;
        }
        Reply::Endless => {
            let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
            if sock.write_all(head).await.is_err() {
                return;
            }
            let chunk = [b'x'; 8192];
            while sock.write_all(&chunk).await.is_ok() {}
        }
        Reply::Silent => tokio::time::sleep(Duration::from_secs(120)).await,
    }
}

/// Two listeners on the same port: 127.0.0.2 (the one the tests exempt)
/// and 127.0.0.1 (refused). A rebinding answer only means something if
/// the trap sits where the connection would go: same port, other address.
pub async fn same_port_pair() -> (TcpListener, TcpListener) {
    for _ in 0..100 {
        let allowed = TcpListener::bind("127.0.0.2:0").await.unwrap();
        let port = allowed.local_addr().unwrap().port();
        if let Ok(trap) = TcpListener::bind(("127.0.0.1", port)).await {
            return (allowed, trap);
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

/// A resolver that answers from a script: the n-th lookup gets the n-th
/// answer (the last one repeats), an empty script fails every lookup.
pub struct Scripted {
    answers: Vec<Vec<IpAddr>>,
    names: Mutex<Vec<String>>,
}

impl Scripted {
    pub fn new(answers: &[&[&str]]) -> Arc<Self> {
        let answers = answers
            .iter()
            .map(|a| a.iter().map(|s| s.parse().unwrap()).collect())
            .collect();
        Arc::new(Self {
            answers,
            names: Mutex::new(Vec::new()),
        })
    }

    /// Every name looked up, in order.
    pub fn names(&self) -> Vec<String> {
        self.names.lock().unwrap().clone()
    }
}

#[async_trait]
impl Resolver for Scripted {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let n = {
            let mut names = self.names.lock().unwrap();
            names.push(host.to_owned());
            names.len() - 1
        };
        match self.answers.get(n).or(self.answers.last()) {
            Some(answer) => Ok(answer.clone()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such host")),
        }
    }
}

/// A resolver that never answers, as a blackholed DNS server would not.
pub struct Hanging;

#[async_trait]
impl Resolver for Hanging {
    async fn lookup(&self, _host: &str) -> io::Result<Vec<IpAddr>> {
        std::future::pending().await
    }
}

/// The tool as the tests use it: exempting 127.0.0.2 only, with a short
/// timeout so a regression fails fast instead of hanging.
pub fn tool(resolver: Arc<Scripted>) -> HttpFetch {
    tool_with(
        resolver,
        FetchConfig {
            timeout: Duration::from_secs(10),
            ..FetchConfig::default()
        },
    )
}

pub fn tool_with(resolver: Arc<Scripted>, config: FetchConfig) -> HttpFetch {
    HttpFetch::new(config)
        .with_resolver(resolver)
        .allowing("127.0.0.2/32".parse().unwrap())
}

pub fn ctx() -> (tempfile::TempDir, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 1 << 20).unwrap();
    (dir, ctx)
}

/// Runs one call, with an outer deadline so no test can hang.
pub async fn fetch(tool: &HttpFetch, url: &str) -> ToolOutput {
    use mecha_core::Tool;
    let (_dir, ctx) = ctx();
    let call = tool.call(json!({ "url": url }), &ctx);
    tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("http_fetch hung past the test's deadline")
        .unwrap()
}

/// Asserts a refusal in the harness's own words.
#[track_caller]
pub fn assert_refused(out: &ToolOutput, mentions: &[&str]) {
    assert!(out.is_error, "not an error: {out:?}");
    assert!(!out.external, "a refusal marked external: {out:?}");
    assert!(out.content.starts_with("refused: "), "{}", out.content);
    for m in mentions {
        assert!(out.content.contains(m), "missing {m:?} in {}", out.content);
    }
}
