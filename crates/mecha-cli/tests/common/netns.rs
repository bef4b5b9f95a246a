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
        self.serve_with(addr, move |line| {
            (200, format!("{body} ({line})\n").into_bytes())
        })
    }

    /// An HTTP server inside the namespace at `addr` whose answer to each
    /// request is `answer(request line)`: a status and a body. Returns how
    /// many requests it has had.
    pub fn serve_with(
        &self,
        addr: &str,
        answer: impl Fn(&str) -> (u16, Vec<u8>) + Send + 'static,
    ) -> Arc<AtomicUsize> {
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
                let (status, body) = answer(text.lines().next().unwrap_or_default());
                let reason = if status == 200 { "OK" } else { "Not Found" };
                let mut reply = format!(
                    "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                reply.extend_from_slice(&body);
                let _ = conn.write_all(&reply);
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

    /// `mecha run --yes go` inside the namespace, its model a script of
    /// `calls`; returns the output and the stored session's text with the
    /// journal's JSON escapes of newlines and quotes undone.
    pub fn run_mecha(
        &self,
        e: &super::Env,
        calls: &[serde_json::Value],
        extra_config: &str,
    ) -> (std::process::Output, String) {
        super::scripted_home(&e.home, calls, "Done.", extra_config);
        let out = self
            .command(&assert_cmd::cargo::cargo_bin("mecha"))
            .args(["run", "--yes", "go"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .env("HOME", &e.home)
            .env("MECHA_HOME", &e.home)
            .current_dir(&e.ws)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let mut session = String::new();
        for entry in std::fs::read_dir(e.home.join("sessions")).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                session.push_str(&std::fs::read_to_string(path).unwrap_or_default());
            } else if path.is_dir() {
                for inner in std::fs::read_dir(path).unwrap() {
                    session.push_str(
                        &std::fs::read_to_string(inner.unwrap().path()).unwrap_or_default(),
                    );
                }
            }
        }
        let session = session.replace("\\n", "\n").replace("\\\"", "\"");
        (out, session)
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
