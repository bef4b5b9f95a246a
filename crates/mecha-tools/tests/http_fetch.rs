//! `http_fetch` end to end against loopback servers, attacked the way a
//! prompt-injected model would: internal addresses in every spelling,
//! rebinding DNS, redirects into the network, oversized and endless bodies.
//!
//! The tool exempts 127.0.0.2 only (`HttpFetch::allowing`); traps listen on
//! 127.0.0.1, which stays refused, and count their connections. A trap with
//! a connection means the guard was bypassed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_fetch_support;

use std::time::{Duration, Instant};

use http_fetch_support::*;
use mecha_core::{Egress, Tool};
use mecha_tools::{FetchConfig, HttpFetch};

#[tokio::test]
async fn http_fetch_reaches_an_exempted_server_and_labels_it_external() {
    let server = serve("127.0.0.2:0", text_reply("hello from outside")).await;
    let resolver = Scripted::new(&[&["127.0.0.2"]]);
    let tool = tool(resolver.clone());

    let out = fetch(&tool, &format!("http://site.test:{}/page", server.port())).await;

    assert!(!out.is_error, "{out:?}");
    assert!(out.external, "remote content must be marked external");
    assert!(out.content.starts_with("HTTP 200 OK\n"), "{}", out.content);
    assert!(
        out.content
            .contains("content-type: text/plain; charset=utf-8")
    );
    assert!(out.content.contains("hello from outside"));
    assert_eq!(server.hits(), 1);
    assert_eq!(resolver.names(), ["site.test"]);
}

#[tokio::test]
async fn http_fetch_refuses_loopback_literals_in_every_spelling() {
    let trap = serve("127.0.0.1:0", trap_reply()).await;
    let p = trap.port();
    let resolver = Scripted::new(&[&["127.0.0.2"]]);
    let tool = tool(resolver.clone());

    // Every one of these is 127.0.0.1 to the `url` crate (and to a browser).
    let spellings = [
        format!("http://127.0.0.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f.1:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://%31%32%37.0.0.1:{p}/"),
        format!("http://127.0.0.1.:{p}/"),
        format!("HTTP://127.0.0.1:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://[::ffff:7f00:1]:{p}/"),
    ];
    for url in &spellings {
        let out = fetch(&tool, url).await;
        assert_refused(&out, &["127.0.0.1", "loopback", "public internet"]);
    }
    // The brief's example wording, literally.
    let out = fetch(&tool, &format!("http://127.1:{p}/")).await;
    assert!(
        out.content.starts_with(&format!(
            "refused: `http://127.1:{p}/` points at 127.0.0.1, a loopback address"
        )),
        "{}",
        out.content
    );

    // 0.0.0.0 reaches this machine on Linux; [::1], [::] and the
    // compatible form are loopback or unspecified too.
    for (url, why) in [
        (format!("http://0:{p}/"), "unspecified"),
        (format!("http://0.0.0.0:{p}/"), "unspecified"),
        (format!("http://[::1]:{p}/"), "loopback"),
        (format!("http://[::]:{p}/"), "unspecified"),
        (format!("http://[::127.0.0.1]:{p}/"), "loopback"),
        (format!("https://127.0.0.1:{p}/"), "loopback"),
    ] {
        let out = fetch(&tool, &url).await;
        assert_refused(&out, &[why]);
    }

    assert_eq!(trap.hits(), 0, "a loopback spelling got through");
    assert!(
        resolver.names().is_empty(),
        "IP literals must not be looked up"
    );
}

#[tokio::test]
async fn http_fetch_pins_the_vetted_address_against_rebinding() {
    // First answer: the exempted server. Every later answer: the trap on the
    // same port. A client that looked the name up again at connect time
    // would land on the trap.
    let (allowed, trap) = same_port_pair().await;
    let allowed = serve_on(allowed, text_reply("the vetted server"));
    let trap = serve_on(trap, trap_reply());
    let resolver = Scripted::new(&[&["127.0.0.2"], &["127.0.0.1"]]);
    let tool = tool(resolver.clone());
    let url = format!("http://rebind.test:{}/", allowed.port());

    let out = fetch(&tool, &url).await;

    assert!(!out.is_error, "{out:?}");
    assert!(out.content.contains("the vetted server"), "{}", out.content);
    assert_eq!(allowed.hits(), 1);
    assert_eq!(
        trap.hits(),
        0,
        "connected to an address that was never vetted"
    );
    assert_eq!(
        resolver.names(),
        ["rebind.test"],
        "looked up more than once"
    );

    // The next fetch of the same name is vetted afresh and refused.
    let out = fetch(&tool, &url).await;
    assert_refused(&out, &["rebind.test", "127.0.0.1", "loopback"]);
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_refuses_a_name_if_any_answer_is_refused() {
    let (allowed, trap) = same_port_pair().await;
    let allowed = serve_on(allowed, text_reply("fine"));
    let trap = serve_on(trap, trap_reply());
    for answer in [["127.0.0.2", "127.0.0.1"], ["127.0.0.1", "127.0.0.2"]] {
        let tool = tool(Scripted::new(&[&answer]));
        let out = fetch(&tool, &format!("http://mixed.test:{}/", allowed.port())).await;
        assert_refused(
            &out,
            &["mixed.test", "127.0.0.1", "any one of its addresses"],
        );
    }
    assert_eq!(allowed.hits(), 0);
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_refuses_localhost_through_the_system_resolver() {
    let trap = serve("127.0.0.1:0", trap_reply()).await;
    let p = trap.port();
    // The real resolver: localhost is refused because of what it resolves
    // to, not because of its name.
    let tool = HttpFetch::new(FetchConfig {
        timeout: Duration::from_secs(10),
        ..FetchConfig::default()
    });
    for url in [
        format!("http://localhost:{p}/"),
        format!("http://LOCALHOST:{p}/"),
        format!("http://localhost.:{p}/"),
    ] {
        let out = fetch(&tool, &url).await;
        assert!(out.is_error && !out.external, "{url}: {out:?}");
        // Where `localhost.` does not resolve at all, that is an error too;
        // either way nothing is fetched.
        assert!(
            out.content.starts_with("refused: ") || out.content.contains("could not be resolved"),
            "{url}: {}",
            out.content
        );
    }
    let out = fetch(&tool, &format!("http://localhost:{p}/")).await;
    assert_refused(&out, &["`localhost`", "loopback"]);
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_vets_what_a_trailing_dot_name_resolves_to() {
    let trap = serve("127.0.0.1:0", trap_reply()).await;
    let resolver = Scripted::new(&[&["127.0.0.1", "::1"]]);
    let tool = tool(resolver.clone());
    let out = fetch(&tool, &format!("http://localhost.:{}/", trap.port())).await;
    assert_refused(&out, &["`localhost.`", "loopback"]);
    assert_eq!(resolver.names(), ["localhost."]);
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_pin_matches_the_name_as_the_client_sees_it() {
    // The pin is keyed by host name; a mismatch with what the HTTP client
    // asks for would fail every fetch of such names (never reach a trap,
    // since the pinned resolver knows no other answer).
    let server = serve("127.0.0.2:0", text_reply("reached")).await;
    let resolver = Scripted::new(&[&["127.0.0.2"]]);
    let tool = tool(resolver.clone());
    let p = server.port();
    for url in [
        format!("http://Dot.Test.:{p}/"),
        format!("http://b\u{fc}cher.test:{p}/"),
    ] {
        let out = fetch(&tool, &url).await;
        assert!(out.content.contains("reached"), "{url}: {}", out.content);
    }
    assert_eq!(resolver.names(), ["dot.test.", "xn--bcher-kva.test"]);
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn http_fetch_returns_redirects_instead_of_following_them() {
    let trap = serve("127.0.0.1:0", trap_reply()).await;
    let location = format!("http://127.0.0.1:{}/internal", trap.port());
    let redirect = Reply::Fixed(response(
        "302 Found",
        &[("location", &location), ("content-type", "text/html")],
        b"<a href=\"elsewhere\">moved</a>",
    ));
    let server = serve("127.0.0.2:0", redirect).await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://moved.test:{}/", server.port())).await;

    assert!(out.external, "{out:?}");
    assert!(!out.is_error, "a 3xx is an answer, not a failure: {out:?}");
    assert!(
        out.content.starts_with("HTTP 302 Found\n"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains(&format!("location: {location}")),
        "{}",
        out.content
    );
    assert!(out.content.contains("redirect not followed"));
    assert_eq!(server.hits(), 1);
    assert_eq!(trap.hits(), 0, "the redirect was followed");

    // Fetching the Location is a new call, vetted like any other.
    let out = fetch(&tool, &location).await;
    assert_refused(&out, &["loopback"]);
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_refuses_schemes_other_than_http() {
    let resolver = Scripted::new(&[&["127.0.0.2"]]);
    let tool = tool(resolver.clone());
    for url in [
        "file:///etc/passwd",
        "ftp://files.test/x",
        "data:text/plain,hello",
        "gopher://g.test/",
        "ws://sock.test/",
        "javascript:alert(1)",
    ] {
        let out = fetch(&tool, url).await;
        assert_refused(&out, &["only fetches http:// and https://"]);
    }
    let out = fetch(&tool, "file:///etc/passwd").await;
    assert!(out.content.contains("fs_read"), "{}", out.content);
    assert!(resolver.names().is_empty());
}

#[tokio::test]
async fn http_fetch_refuses_credentials_and_names_the_real_host() {
    let trap = serve("127.0.0.1:0", trap_reply()).await;
    let p = trap.port();
    let resolver = Scripted::new(&[&["127.0.0.2"]]);
    let tool = tool(resolver.clone());

    // Parses as host evil.com, with `user@127.0.0.1:port` as userinfo.
    let out = fetch(&tool, &format!("http://user@127.0.0.1:{p}@evil.com/")).await;
    assert_refused(&out, &["username or password", "`evil.com`"]);
    let out = fetch(&tool, &format!("http://user:secret@site.test:{p}/")).await;
    assert_refused(&out, &["username or password", "`site.test`"]);

    assert!(resolver.names().is_empty(), "looked up a URL it refuses");
    assert_eq!(trap.hits(), 0);
}

#[tokio::test]
async fn http_fetch_cuts_the_body_at_the_cap() {
    let big = "a".repeat(100_000);
    let server = serve("127.0.0.2:0", text_reply(&big)).await;
    let tool = tool_with(
        Scripted::new(&[&["127.0.0.2"]]),
        FetchConfig {
            timeout: Duration::from_secs(10),
            max_body_bytes: 1000,
        },
    );

    let out = fetch(&tool, &format!("http://big.test:{}/", server.port())).await;

    assert!(!out.is_error && out.external, "{out:?}");
    assert!(out.content.contains(&"a".repeat(1000)), "{}", out.content);
    assert!(
        !out.content.contains(&"a".repeat(1001)),
        "body not cut at the cap"
    );
    assert!(
        out.content
            .contains("[body cut at 1000 bytes by the harness]")
    );
}

#[tokio::test]
async fn http_fetch_stops_reading_an_endless_body() {
    let server = serve("127.0.0.2:0", Reply::Endless).await;
    // A generous timeout: without the cap this test would run into it and
    // fail on the timeout error instead.
    let tool = tool_with(
        Scripted::new(&[&["127.0.0.2"]]),
        FetchConfig {
            timeout: Duration::from_secs(20),
            max_body_bytes: 64 * 1024,
        },
    );
    let started = Instant::now();

    let out = fetch(&tool, &format!("http://endless.test:{}/", server.port())).await;

    assert!(
        !out.is_error,
        "{}",
        &out.content[..out.content.len().min(300)]
    );
    assert!(
        out.content
            .contains("[body cut at 65536 bytes by the harness]")
    );
    assert!(out.content.contains(&"x".repeat(64 * 1024)));
    assert!(!out.content.contains(&"x".repeat(64 * 1024 + 1)));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn http_fetch_times_out_with_an_error_naming_the_limit() {
    let server = serve("127.0.0.2:0", Reply::Silent).await;
    let tool = tool_with(
        Scripted::new(&[&["127.0.0.2"]]),
        FetchConfig {
            timeout: Duration::from_millis(300),
            ..FetchConfig::default()
        },
    );
    let started = Instant::now();

    let out = fetch(&tool, &format!("http://slow.test:{}/", server.port())).await;

    assert!(out.is_error && !out.external, "{out:?}");
    assert!(out.content.contains("timed out"), "{}", out.content);
    assert!(out.content.contains("300ms"), "{}", out.content);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn http_fetch_deadline_covers_the_lookup() {
    let tool = HttpFetch::new(FetchConfig {
        timeout: Duration::from_millis(200),
        ..FetchConfig::default()
    })
    .with_resolver(std::sync::Arc::new(Hanging));

    let out = fetch(&tool, "http://blackholed.test/").await;

    assert!(out.is_error && !out.external, "{out:?}");
    assert!(out.content.contains("timed out"), "{}", out.content);
    assert!(out.content.contains("200ms"), "{}", out.content);
}

#[tokio::test]
async fn http_fetch_connect_failure_is_a_harness_error() {
    // A port that was just free: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://closed.test:{port}/")).await;

    assert!(out.is_error && !out.external, "{out:?}");
    assert!(out.content.contains("could not connect"), "{}", out.content);
    assert!(out.content.contains("127.0.0.2"), "{}", out.content);
}

#[tokio::test]
async fn http_fetch_unresolvable_name_is_an_error_not_a_refusal() {
    let tool = tool(Scripted::new(&[]));
    let out = fetch(&tool, "http://nowhere.test/").await;
    assert!(out.is_error && !out.external, "{out:?}");
    assert!(
        out.content.contains("could not be resolved"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn http_fetch_withholds_binary_bodies() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let server = serve(
        "127.0.0.2:0",
        Reply::Fixed(response("200 OK", &[("content-type", "image/png")], png)),
    )
    .await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://img.test:{}/x.png", server.port())).await;

    assert!(out.external && !out.is_error, "{out:?}");
    assert!(out.content.contains("content-type: image/png"));
    assert!(
        out.content
            .contains(&format!("binary body of {} bytes, not shown", png.len())),
        "{}",
        out.content
    );
    assert!(!out.content.contains("IHDR"));
}

#[tokio::test]
async fn http_fetch_error_status_is_external_and_an_error() {
    let server = serve(
        "127.0.0.2:0",
        Reply::Fixed(response(
            "404 Not Found",
            &[("content-type", "text/plain")],
            b"no such page",
        )),
    )
    .await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));

    let out = fetch(&tool, &format!("http://gone.test:{}/", server.port())).await;

    assert!(out.external, "it came from the server: {out:?}");
    assert!(out.is_error);
    assert!(
        out.content.starts_with("HTTP 404 Not Found\n"),
        "{}",
        out.content
    );
    assert!(out.content.contains("no such page"));
}

#[tokio::test]
async fn http_fetch_bad_input_is_a_harness_error() {
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));
    let (_dir, ctx) = ctx();
    let out = tool.call(serde_json::json!({}), &ctx).await.unwrap();
    assert!(
        out.is_error && !out.external && out.content.contains("`url`"),
        "{out:?}"
    );
    let out = tool
        .call(serde_json::json!({"url": 7}), &ctx)
        .await
        .unwrap();
    assert!(out.is_error && !out.external, "{out:?}");
    let out = fetch(&tool, "not a url").await;
    assert!(
        out.is_error && !out.external && out.content.contains("not a valid URL"),
        "{out:?}"
    );
}

#[test]
fn http_fetch_declares_itself_a_read_only_chosen_send() {
    let tool = HttpFetch::new(FetchConfig::default());
    assert_eq!(tool.name(), "http_fetch");
    assert!(tool.read_only());
    let caps = tool.capabilities();
    assert_eq!(caps.egress, Egress::Chosen);
    assert!(caps.untrusted_input && !caps.private_data && !caps.destructive);
    let schema = tool.input_schema();
    assert_eq!(schema["required"], serde_json::json!(["url"]));
    assert_eq!(schema["properties"]["url"]["type"], "string");
    let description = tool.description();
    for needle in [
        "GET",
        "public",
        "not followed",
        "Location",
        "private",
        "loopback",
        "5242880",
    ] {
        assert!(description.contains(needle), "description lacks {needle:?}");
    }
}

#[tokio::test]
async fn http_fetch_spills_a_body_larger_than_its_share_and_keeps_the_whole_of_it() {
    let big: String = (0..20_000)
        .map(|i| format!("line {i} of the page\n"))
        .collect();
    let server = serve("127.0.0.2:0", text_reply(&big)).await;
    let tool = tool(Scripted::new(&[&["127.0.0.2"]]));
    let dir = tempfile::tempdir().unwrap();
    let budget = 8192;
    let ctx = mecha_core::ToolCtx::new(dir.path(), budget).unwrap();

    let url = format!("http://big.test:{}/", server.port());
    let out = tool
        .call(serde_json::json!({ "url": url }), &ctx)
        .await
        .unwrap();

    assert!(out.external && !out.is_error, "{out:?}");
    assert!(out.content.len() <= budget, "{} bytes", out.content.len());
    assert!(out.content.starts_with("HTTP 200 OK\n"), "{}", out.content);
    assert!(
        out.content.contains(&format!(
            "of {} bytes",
            big.len() + "HTTP 200 OK\ncontent-type: text/plain; charset=utf-8\n\n".len()
        )),
        "{}",
        out.content
    );
    let start = out.content.find("continue with fs_read ").unwrap() + 22;
    let end = start + out.content[start..].find('}').unwrap() + 1;
    let args: serde_json::Value = serde_json::from_str(&out.content[start..end]).unwrap();
    let saved = std::fs::read_to_string(args["path"].as_str().unwrap()).unwrap();
    assert!(saved.ends_with(&big), "the spill file holds the body");
    assert!(!out.content.contains("body cut at"), "{}", out.content);
}
