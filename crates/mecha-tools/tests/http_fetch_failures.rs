//! Whose words a failed fetch carries. A refusal is mecha's own and adds no
//! taint, so it may quote only mecha and this machine; a failure the server
//! wrote into (a TLS alert it picked, a malformed answer) must taint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_fetch_support;

use http_fetch_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every connection's first bytes with `reply`, then hangs up.
async fn answer_with(reply: &'static [u8]) -> u16 {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let _ = sock.write_all(reply).await;
            let _ = sock.shutdown().await;
        }
    });
    port
}

#[tokio::test]
async fn a_tls_alert_the_server_chose_is_not_a_refusal() {
    // A fatal alert record, `unknown_ca` (48): the server picks the code and
    // rustls names it in the error chain.
    let port = answer_with(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 48]).await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("https://tls.test:{port}/")).await;

    assert!(out.is_error, "{out:?}");
    assert!(
        !out.harness,
        "the server wrote into this text; it must taint: {out:?}"
    );
    assert!(
        out.content.contains("could not connect") && out.content.contains("alert"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_malformed_answer_is_not_a_refusal() {
    let port = answer_with(b"SURPRISE from the server\r\n\r\n").await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://bad.test:{port}/")).await;

    assert!(out.is_error && !out.harness, "{out:?}");
}

#[tokio::test]
async fn a_connection_the_system_refused_is_a_refusal() {
    // A port that was just free: nothing listens there, and the only words
    // are mecha's and the kernel's.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://closed.test:{port}/")).await;

    assert!(out.is_error && out.harness && !out.external, "{out:?}");
    assert!(
        out.content.contains("Connection refused"),
        "{}",
        out.content
    );
}
