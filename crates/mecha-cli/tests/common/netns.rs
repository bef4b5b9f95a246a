//! A private network namespace that stands in for the internet: a bridge
//! with no ports carries a "public" address (93.184.215.14, which the
//! egress guard does not reserve) and a private one (10.1.2.3), names come
//! from `/etc/netns/NAME/hosts`, and DNS has nowhere to go. Nothing sent
//! inside it leaves the machine. Needs root and iproute2's `ip`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub const PUBLIC: &str = "93.184.215.14";
pub const PRIVATE: &str = "10.1.2.3";

pub struct Netns {
    pub name: String,
    stop: Arc<AtomicBool>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    /// A fresh namespace whose hosts file maps each `(address, name)`;
    /// `None` (a loud skip, or a failure in CI) where it cannot be made.
    pub fn create(tag: &str, hosts: &[(&str, &str)]) -> Option<Self> {
        let root = rustix::process::geteuid().is_root();
        let have_ip = Command::new("ip").arg("-V").output().is_ok();
        if !(root && have_ip) {
            assert!(
                std::env::var_os("CI").is_none(),
                "the allow_hosts tests need root and iproute2 (ip)"
            );
            eprintln!("SKIPPED: needs root and iproute2");
            return None;
        }
        let name = format!("mecha-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Self {
            name: name.clone(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        ip(&["-n", &name, "link", "add", "br0", "type", "bridge"]);
        for addr in [PUBLIC, PRIVATE] {
            ip(&[
                "-n",
                &name,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                "br0",
            ]);
        }
        ip(&["-n", &name, "link", "set", "br0", "up"]);
        let etc = ns.etc();
        std::fs::create_dir_all(&etc).unwrap();
        let mut lines = String::from("127.0.0.1 localhost\n");
        for (addr, host) in hosts {
            lines.push_str(&format!("{addr} {host}\n"));
        }
        std::fs::write(etc.join("hosts"), lines).unwrap();
        // A resolver with nothing behind it: a lookup fails at once.
        std::fs::write(etc.join("resolv.conf"), "nameserver 127.0.0.53\n").unwrap();
        Some(ns)
    }

    fn etc(&self) -> PathBuf {
        PathBuf::from("/etc/netns").join(&self.name)
    }

    /// An HTTP server inside the namespace at `addr`, answering every
    /// request with `body` and its own request line; returns how many
    /// requests it has had.
    pub fn serve(&self, addr: &str, body: &'static str) -> Arc<AtomicUsize> {
        let count = Arc::new(AtomicUsize::new(0));
        let (seen, stop) = (count.clone(), self.stop.clone());
        let path = format!("/run/netns/{}", self.name);
        let addr: SocketAddr = addr.parse().unwrap();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            rustix::thread::move_into_link_name_space(
                ns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .unwrap();
            let listener = TcpListener::bind(addr).unwrap();
            listener.set_nonblocking(true).unwrap();
            ready_tx.send(()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                let text = String::from_utf8_lossy(&head);
                let line = text.lines().next().unwrap_or_default();
                let reply = format!("{body} ({line})\n");
                let _ = conn.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                        reply.len()
                    )
                    .as_bytes(),
                );
            }
        });
        ready_rx.recv().unwrap();
        count
    }

    /// `program args` run inside the namespace (with its hosts file).
    pub fn command(&self, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).arg(program);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = std::fs::remove_dir_all(self.etc());
    }
}
