//! `http_fetch` ignores proxy variables: a proxy would resolve the name
//! itself (voiding the pin) and could sit inside the network.
//!
//! This file is its own test binary, so its own process, because it sets
//! environment variables: that is `unsafe` in edition 2024 (another thread
//! reading the environment at the same time is undefined behaviour), so it
//! happens before any runtime or thread exists, and no other test shares the
//! process to observe it.
#![allow(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_fetch_support;

use http_fetch_support::*;

#[test]
fn http_fetch_ignores_proxy_variables() {
    // Reserve the trap's port first, with std, before any thread starts.
    let trap_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", trap_listener.local_addr().unwrap());
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        // SAFETY: single-threaded at this point (no runtime yet), and this
        // test binary contains no other test.
        unsafe { std::env::set_var(var, &proxy) };
    }
    for var in ["NO_PROXY", "no_proxy"] {
        // SAFETY: as above.
        unsafe { std::env::remove_var(var) };
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        trap_listener.set_nonblocking(true).unwrap();
        let trap = serve_on(
            tokio::net::TcpListener::from_std(trap_listener).unwrap(),
            trap_reply(),
        );
        let server = serve("127.0.0.2:0", text_reply("direct")).await;
        // A name, not a literal: a proxied request would carry the name to
        // the proxy, and some clients bypass proxies for loopback literals.
        let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

        let out = fetch(&tool, &format!("http://direct.test:{}/", server.port())).await;
        assert!(out.content.contains("direct"), "{}", out.content);
        assert_eq!(server.hits(), 1);

        // https would go through HTTPS_PROXY with a CONNECT. The server
        // speaks plain HTTP, so the TLS handshake fails; what matters is
        // where the connection went.
        let out = fetch(&tool, &format!("https://direct.test:{}/", server.port())).await;
        assert!(out.is_error, "{out:?}");
        assert_eq!(server.hits(), 2);

        assert_eq!(trap.hits(), 0, "a request went to the proxy");
    });
}
