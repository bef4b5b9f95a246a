//! `web_open` through the real binary in a private network namespace that
//! stands in for the internet (see `common/netns.rs`): a search result on a
//! "public" host is opened through its redirect and read as text, while a
//! redirect to a private address, a result on one, and a redirect loop are
//! refused, in an armed conversation where `http_fetch` is refused. The
//! SearXNG stand-in listens on the namespace's loopback, as a self-hosted
//! instance does: a backend's endpoint is config's and is not vetted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::netns::{Netns, PRIVATE, PUBLIC};
use common::standin::{Standin, html, json, redirect, response, searxng_answer};
use serde_json::{Value, json};

const HOSTS: &[(&str, &str)] = &[
    (PUBLIC, "news.test.example"),
    (PRIVATE, "db.inside.test.example"),
];

const ARTICLE: &str = "<!doctype html><html><head><title>Borrowing, explained</title>\
    <script>window.tracker = 'TRACKER-SCRIPT';</script></head><body>\
    <nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article>\
    <h1>Borrowing, explained</h1>\
    <p>The borrow checker makes sure every reference is valid for as long as it is used, and \
    that a value is either shared or mutable, never both at the same time. That rule is what \
    lets Rust promise memory safety without a garbage collector.</p>\
    <p>Lifetimes are how the compiler names the spans in which references are valid; most of \
    them are inferred, so you write them only where the compiler cannot tell.</p>\
    </article><footer>© The Example News</footer></body></html>";

fn call(name: &str, input: Value) -> Value {
    json!({ "name": name, "input": input })
}

#[test]
fn web_open_follows_public_redirects_and_refuses_private_ones_in_an_armed_conversation() {
    let Some(ns) = Netns::create("web", HOSTS) else {
        return;
    };
    let results = [
        ("Borrowing", "http://news.test.example/moved"),
        ("Leak", "http://news.test.example/to-private"),
        ("Loop", "http://news.test.example/loop"),
        ("Inside", "http://db.inside.test.example/secret"),
    ];
    let sx = Standin::start_at(
        Some(&ns.name),
        "127.0.0.1:8888",
        Arc::new(move |_| {
            let rows: Vec<(&str, &str, &str)> =
                results.iter().map(|(t, u)| (*t, *u, "a snippet")).collect();
            json(&searxng_answer("borrowing", &rows))
        }),
    );
    let public = Standin::start_at(
        Some(&ns.name),
        &format!("{PUBLIC}:80"),
        Arc::new(|r| match r.target.as_str() {
            "/moved" => redirect("/article"),
            "/article" => html(ARTICLE),
            "/to-private" => redirect("http://db.inside.test.example/secret"),
            "/loop" => redirect("/loop"),
            _ => response("404 Not Found", &[], ""),
        }),
    );
    let private = Standin::start_at(
        Some(&ns.name),
        &format!("{PRIVATE}:80"),
        Arc::new(|_| html("<p>PRIVATE-DATA</p>")),
    );
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "private notes").unwrap();
    let calls = [
        call("fs_read", json!({"path": "notes.txt"})),
        call("web_search", json!({"query": "borrowing"})),
        call(
            "http_fetch",
            json!({"url": "http://news.test.example/article"}),
        ),
        call("web_open", json!({"handle": 1})),
        call("web_open", json!({"handle": 2})),
        call("web_open", json!({"handle": 3})),
        call("web_open", json!({"handle": 4})),
        // A public page the model names itself: refused for being a URL.
        call(
            "web_open",
            json!({"url": "http://news.test.example/article"}),
        ),
        call(
            "web_open",
            json!({"handle": "http://news.test.example/article"}),
        ),
    ];
    let config = "[[search]]\nkind = \"searxng\"\nurl = \"http://127.0.0.1:8888\"\n";
    let (out, session) = ns.run_mecha(&e, &calls, config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sx.seen().len(), 1);
    assert!(
        session.contains("[1] Borrowing — http://news.test.example/moved — a snippet"),
        "{session}"
    );
    assert!(
        session.contains("refused by mecha's interlock: `http_fetch`"),
        "{session}"
    );
    // The public redirect was followed and the page read as text, its
    // script and chrome left out.
    assert!(
        session.contains("[1] Borrowing, explained — http://news.test.example/article"),
        "{session}"
    );
    assert!(
        session.contains("(reached through 1 redirect(s) from http://news.test.example/moved)")
    );
    assert!(session.contains("The borrow checker makes sure every reference is valid"));
    assert!(!session.contains("TRACKER-SCRIPT"), "{session}");
    // The hop to a private address, a private result and a loop: refused.
    assert!(
        session.contains(
            "refused: result [2] redirected to `http://db.inside.test.example/secret`, which names \
             `db.inside.test.example`, which resolves to 10.1.2.3, a private-network address; \
             web_open only reaches public internet addresses"
        ),
        "{session}"
    );
    assert!(
        session.contains("refused: result [4] `http://db.inside.test.example/secret` names"),
        "{session}"
    );
    assert!(
        session.contains("result [3] redirected more than 10 times"),
        "{session}"
    );
    assert!(!session.contains("PRIVATE-DATA"), "{session}");
    assert!(private.seen().is_empty(), "the private server was reached");
    assert_eq!(
        session
            .matches("it takes no URL. Search first with web_search")
            .count(),
        2,
        "{session}"
    );
    let articles = public
        .seen()
        .iter()
        .filter(|r| r.target == "/article")
        .count();
    assert_eq!(
        articles, 1,
        "only the opened result's redirect reached the page"
    );
    let loops = public.seen().iter().filter(|r| r.target == "/loop").count();
    assert_eq!(loops, 11, "the first request and ten redirects");
}
