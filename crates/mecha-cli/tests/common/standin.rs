//! Stand-ins for web servers (search backends, pages): an HTTP/1.1 server
//! on a thread that answers each request through a handler and records it.
//! It listens on loopback, or inside a private network namespace; nothing
//! it does reaches anywhere else.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the stand-in saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header lines, names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub type Handler = Arc<dyn Fn(&Seen) -> Vec<u8> + Send + Sync>;

pub struct Standin {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Standin {
    /// On a free loopback port.
    pub fn start(handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static) -> Self {
        Self::start_at(None, "127.0.0.1:0", Arc::new(handler))
    }

    /// At `addr` inside the network namespace `netns` (its name under
    /// /run/netns), or in this one.
    pub fn start_at(netns: Option<&str>, addr: &str, handler: Handler) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (log, halt) = (seen.clone(), stop.clone());
        let netns = netns.map(|n| format!("/run/netns/{n}"));
        let addr = addr.to_owned();
        std::thread::spawn(move || {
            if let Some(path) = netns {
                let ns = std::fs::File::open(&path).unwrap();
                rustix::thread::move_into_link_name_space(
                    ns.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .unwrap();
            }
            let listener = TcpListener::bind(&addr).unwrap();
            listener.set_nonblocking(true).unwrap();
            ready_tx.send(listener.local_addr().unwrap()).unwrap();
            while !halt.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let Some(request) = read_request(&mut conn) else {
                    continue;
                };
                let reply = handler(&request);
                log.lock().unwrap().push(request);
                let _ = conn.write_all(&reply);
            }
        });
        let addr = ready_rx.recv().unwrap();
        Self { addr, seen, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_request(conn: &mut std::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    Some(Seen {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// A complete HTTP/1.1 response.
pub fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    out.into_bytes()
}

pub fn json(body: &str) -> Vec<u8> {
    response("200 OK", &[("content-type", "application/json")], body)
}

pub fn html(body: &str) -> Vec<u8> {
    response(
        "200 OK",
        &[("content-type", "text/html; charset=utf-8")],
        body,
    )
}

pub fn redirect(location: &str) -> Vec<u8> {
    response("302 Found", &[("location", location)], "")
}

/// A SearXNG answer (its JSON format's shape) listing `(title, url,
/// content)`.
pub fn searxng_answer(query: &str, results: &[(&str, &str, &str)]) -> String {
    let results: Vec<serde_json::Value> = results
        .iter()
        .map(|(title, url, content)| {
            serde_json::json!({
                "url": url, "title": title, "content": content,
                "engine": "duckduckgo", "engines": ["duckduckgo"], "positions": [1],
                "parsed_url": ["http", "", "", "", "", ""], "template": "default.html",
                "score": 1.0, "category": "general"
            })
        })
        .collect();
    serde_json::json!({
        "query": query, "number_of_results": 0, "results": results,
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
        "unresponsive_engines": []
    })
    .to_string()
}
