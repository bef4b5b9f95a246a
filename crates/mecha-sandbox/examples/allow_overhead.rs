//! What `allow_hosts` costs: per request through the proxy (a loopback
//! HTTP request made directly and through the proxy's socket, as an
//! absolute-URI request and through a CONNECT tunnel), per command start
//! (a confined `bash -c true` with the allowlist against one with no
//! network), and per request from inside the sandbox (bridge and proxy
//! together). Run with bench/sandbox.sh --allow-hosts, which builds the
//! mecha binary the bridge needs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mecha_core::net::{EgressGuard, SystemResolver};
use mecha_sandbox::{
    Allowlist, HostEnv, Job, Network, Policy, Proxy, Sandbox, SandboxConfig, SandboxKind,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

/// A loopback server answering every request with a short 200 and closing.
async fn serve() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

/// Sends `request` and reads the answer to its end; panics unless it is a 200.
async fn exchange(mut conn: impl AsyncRead + AsyncWrite + Unpin, request: &str) {
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await.unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}

/// Through a CONNECT tunnel: the proxy's 200, then the request inside it.
async fn tunnelled(proxy: &Proxy, addr: SocketAddr, request: &str) {
    let mut conn = UnixStream::connect(proxy.socket()).await.unwrap();
    conn.write_all(format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(conn.read(&mut byte).await.unwrap(), 1, "{head:?}");
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    exchange(conn, request).await;
}

async fn per_request(addr: SocketAddr, list: &Arc<Allowlist>, runs: usize) {
    let proxy = Proxy::start(Policy {
        allow: Arc::clone(list),
        guard: EgressGuard::new(),
        resolver: Arc::new(SystemResolver),
    })
    .unwrap();
    let origin = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let absolute = format!("GET http://{addr}/ HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let (mut direct, mut through, mut tunnel) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let at = Instant::now();
        exchange(TcpStream::connect(addr).await.unwrap(), &origin).await;
        direct.push(at.elapsed());
        let at = Instant::now();
        exchange(
            UnixStream::connect(proxy.socket()).await.unwrap(),
            &absolute,
        )
        .await;
        through.push(at.elapsed());
        let at = Instant::now();
        tunnelled(&proxy, addr, &origin).await;
        tunnel.push(at.elapsed());
    }
    assert!(proxy.report().iter().any(|l| l.contains("let through")));
    let direct = median_ms(direct);
    let (through, tunnel) = (median_ms(through), median_ms(tunnel));
    println!("loopback request direct:        median {direct:.3} ms ({runs} runs)");
    println!("through the proxy (absolute):   median {through:.3} ms");
    println!("through the proxy (CONNECT):    median {tunnel:.3} ms");
    println!(
        "proxy added per request: {:.3} ms absolute-URI, {:.3} ms CONNECT (target: at most 1 ms)",
        through - direct,
        tunnel - direct
    );
}

/// Runs `bash -c script` confined with `network`, `runs` times; the median.
async fn confined_ms(sandbox: &Sandbox, network: &Network, script: &str, runs: usize) -> f64 {
    let ws = tempfile::tempdir().unwrap();
    let args = [OsString::from("-c"), OsString::from(script)];
    let mut samples = Vec::new();
    for _ in 0..runs {
        let at = Instant::now();
        let env = BTreeMap::from([(OsString::from("PATH"), sandbox.path_inside())]);
        let job = Job {
            program: "bash".as_ref(),
            args: &args,
            workspace: ws.path(),
            env,
            network: network.clone(),
            read_only: &[],
            hidden: &[],
        };
        let mut run = sandbox.confine(job).unwrap();
        let status = run.command.status().await.unwrap();
        drop(run.lease);
        assert!(status.success(), "{script}");
        samples.push(at.elapsed());
    }
    median_ms(samples)
}

/// `count` requests in one bash, with builtins only, so that the loop costs
/// the requests and nothing else: to `target` directly, or to the bridge.
fn request_loop(target: &str, url_prefix: &str, count: usize) -> String {
    format!(
        "for i in $(seq {count}); do exec 3<>/dev/tcp/{target}; \
         printf 'GET {url_prefix}/ HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; \
         read -r status <&3; [[ $status == *200* ]] || exit 1; \
         while read -r -u 3 line; do :; done; exec 3<&-; done"
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mecha = PathBuf::from(
        args.next()
            .expect("usage: allow_overhead MECHA_BINARY [RUNS]"),
    );
    let runs: usize = args.next().map_or(200, |n| n.parse().unwrap());
    let addr = serve().await;
    let entry = format!("127.0.0.1:{}", addr.port());
    let list = Arc::new(Allowlist::parse(std::slice::from_ref(&entry)).unwrap());
    per_request(addr, &list, runs).await;

    let config = SandboxConfig {
        kind: Some(SandboxKind::Bwrap),
        allow_hosts: vec![entry],
        ..SandboxConfig::default()
    };
    let host = HostEnv {
        bridge: Some(mecha),
        ..HostEnv::current()
    };
    let sandbox = Sandbox::start(&config, host).unwrap().unwrap();
    let starts = runs / 4;
    let hosts = Network::Hosts(list);
    let none = confined_ms(&sandbox, &Network::None, "true", starts).await;
    let bridged = confined_ms(&sandbox, &hosts, "true", starts).await;
    println!("bash -c true confined, no network:   median {none:.2} ms ({starts} runs)");
    println!("bash -c true confined, allow_hosts:  median {bridged:.2} ms");
    println!(
        "allow_hosts added per command start: {:.2} ms",
        bridged - none
    );

    let count = 50;
    let direct = request_loop(&format!("127.0.0.1/{}", addr.port()), "", count);
    let inside = request_loop(
        "127.0.0.1/3128",
        &format!("http://127.0.0.1:{}", addr.port()),
        count,
    );
    let plain = confined_ms(&sandbox, &Network::Full, &direct, 10).await;
    let plain_base = confined_ms(&sandbox, &Network::Full, "true", 10).await;
    let through = confined_ms(&sandbox, &hosts, &inside, 10).await;
    let per_direct = (plain - plain_base) / count as f64;
    let per_bridged = (through - bridged) / count as f64;
    println!(
        "from inside: {per_direct:.3} ms per request with the whole network, \
         {per_bridged:.3} ms through bridge and proxy; added {:.3} ms",
        per_bridged - per_direct
    );
}
