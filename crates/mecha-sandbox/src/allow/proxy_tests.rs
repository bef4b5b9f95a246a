use std::collections::HashMap;
use std::io;

use async_trait::async_trait;
use tokio::net::TcpListener;

use super::*;

/// Answers names from a table; anything else does not exist.
struct Table(HashMap<&'static str, Vec<IpAddr>>);

#[async_trait]
impl Resolver for Table {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        self.0
            .get(host)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"))
    }
}

/// A server on loopback that keeps each request head it is sent and
/// answers `ok`; over a tunnel it echoes.
async fn upstream() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                let http = text.contains("HTTP/1.1\r\n");
                seen.lock().unwrap().push(text.clone());
                if http {
                    let _ = conn
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .await;
                } else {
                    let _ = conn.write_all(format!("echo:{text}").as_bytes()).await;
                }
            });
        }
    });
    (port, heads)
}

fn policy(entries: &[String], names: &[(&'static str, &str)], loopback_public: bool) -> Policy {
    let mut table: HashMap<&'static str, Vec<IpAddr>> = HashMap::new();
    for (name, addr) in names {
        table.entry(name).or_default().push(addr.parse().unwrap());
    }
    let guard = if loopback_public {
        EgressGuard::new().allowing("127.0.0.1/32".parse().unwrap())
    } else {
        EgressGuard::new()
    };
    Policy {
        allow: Arc::new(Allowlist::parse(entries).unwrap()),
        guard,
        resolver: Arc::new(Table(table)),
    }
}

/// Sends `request` through the proxy and reads until it closes (or, for
/// a tunnel, sends `then` after the 200 and reads the echo).
async fn ask(proxy: &Proxy, request: &[u8], then: Option<&[u8]>) -> String {
    let mut conn = UnixStream::connect(proxy.socket()).await.unwrap();
    conn.write_all(request).await.unwrap();
    let mut got = Vec::new();
    if let Some(then) = then {
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).await.unwrap();
        got.extend_from_slice(&buf[..n]);
        if got.starts_with(b"HTTP/1.1 200") {
            conn.write_all(then).await.unwrap();
            let n = conn.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        return String::from_utf8_lossy(&got).into_owned();
    }
    conn.read_to_end(&mut got).await.unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn a_listed_host_is_tunnelled_and_forwarded_and_reported() {
    let (port, heads) = upstream().await;
    let entries = [format!("registry.test:{port}")];
    let proxy = Proxy::start(policy(&entries, &[("registry.test", "127.0.0.1")], true)).unwrap();
    let connect = format!("CONNECT registry.test:{port} HTTP/1.1\r\nHost: x\r\n\r\n");
    let got = ask(&proxy, connect.as_bytes(), Some(b"hello")).await;
    assert!(
        got.starts_with("HTTP/1.1 200 Connection established"),
        "{got}"
    );
    assert!(got.ends_with("echo:hello"), "{got}");

    let get = format!(
        "GET http://REGISTRY.test:{port}/crates/x?y=1 HTTP/1.1\r\nHost: evil.test\r\n\
         Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
    );
    let got = ask(&proxy, get.as_bytes(), None).await;
    assert!(got.ends_with("ok"), "{got}");
    let forwarded = heads.lock().unwrap().last().cloned().unwrap();
    assert!(
        forwarded.starts_with("GET /crates/x?y=1 HTTP/1.1\r\n"),
        "{forwarded}"
    );
    assert!(
        forwarded.contains(&format!("Host: REGISTRY.test:{port}\r\n")),
        "{forwarded}"
    );
    assert!(forwarded.contains("Accept: */*\r\n"));
    assert!(forwarded.contains("Connection: close\r\n"));
    assert!(
        !forwarded.to_ascii_lowercase().contains("proxy-"),
        "{forwarded}"
    );
    assert!(!forwarded.contains("evil.test"), "{forwarded}");
    assert_eq!(
        proxy.report(),
        [format!(
            "mecha's sandbox proxy let through: registry.test:{port} (2 connections)"
        )]
    );
}

#[tokio::test]
async fn an_unlisted_host_a_tricked_name_and_an_address_are_refused_before_any_connection() {
    let (port, heads) = upstream().await;
    let entries = [format!("registry.test:{port}")];
    let names = [
        ("registry.test", "127.0.0.1"),
        ("other.test", "127.0.0.1"),
        ("registry.test.evil.test", "127.0.0.1"),
    ];
    let proxy = Proxy::start(policy(&entries, &names, true)).unwrap();
    for (target, says) in [
        (
            format!("other.test:{port}"),
            "not in allow_hosts".to_owned(),
        ),
        (
            format!("registry.test.evil.test:{port}"),
            "not in allow_hosts".into(),
        ),
        (format!("127.0.0.1:{port}"), "not in allow_hosts".into()),
        (
            format!("registry.test:{}", port + 1),
            "not in allow_hosts".into(),
        ),
        (
            format!("registry.test\0.evil.test:{port}"),
            "a NUL byte".into(),
        ),
        (format!("user@registry.test:{port}"), "userinfo".into()),
        (format!("registry.test%00.x:{port}"), "`%`".into()),
        ("registry.test".to_owned(), "has no port".into()),
    ] {
        let got = ask(
            &proxy,
            format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes(),
            None,
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 40"), "{target:?}: {got}");
        assert!(got.contains(&says), "{target:?}: {got}");
    }
    let got = ask(
        &proxy,
        format!("GET http://user@registry.test:{port}/ HTTP/1.1\r\n\r\n").as_bytes(),
        None,
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    let got = ask(
        &proxy,
        b"GET /local HTTP/1.1\r\nHost: registry.test\r\n\r\n",
        None,
    )
    .await;
    assert!(got.contains("not an absolute http:// URL"), "{got}");
    assert!(heads.lock().unwrap().is_empty(), "something was reached");
    let report = proxy.report().join("\n");
    assert!(
        report.contains(&format!(
            "mecha's sandbox proxy refused other.test:{port}: not in allow_hosts"
        )),
        "{report}"
    );
    assert!(!report.contains("let through"), "{report}");
}

#[tokio::test]
async fn a_name_that_resolves_to_a_refused_address_passes_only_with_a_literal_entry() {
    let (port, heads) = upstream().await;
    // Loopback is not public here: the guard as the sandbox runs it.
    let names = [
        ("mirror.test", "127.0.0.1"),
        ("split.test", "93.184.215.14"),
        ("split.test", "10.1.2.3"),
    ];
    let entries = [format!("mirror.test:{port}"), format!("split.test:{port}")];
    let proxy = Proxy::start(policy(&entries, &names, false)).unwrap();
    for host in ["mirror.test", "split.test"] {
        let got = ask(
            &proxy,
            format!("CONNECT {host}:{port} HTTP/1.1\r\n\r\n").as_bytes(),
            None,
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        assert!(
            got.contains("which only an allow_hosts entry naming that address"),
            "{got}"
        );
    }
    assert!(heads.lock().unwrap().is_empty());
    let entries = [format!("mirror.test:{port}"), format!("127.0.0.1:{port}")];
    let proxy = Proxy::start(policy(&entries, &names, false)).unwrap();
    let got = ask(
        &proxy,
        format!("CONNECT mirror.test:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        Some(b"x"),
    )
    .await;
    assert!(got.ends_with("echo:x"), "{got}");
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_socket() {
    let proxy = Proxy::start(policy(&["a.test".into()], &[], true)).unwrap();
    let socket = proxy.socket().to_owned();
    assert!(UnixStream::connect(&socket).await.is_ok());
    drop(proxy);
    tokio::task::yield_now().await;
    assert!(UnixStream::connect(&socket).await.is_err());
}
