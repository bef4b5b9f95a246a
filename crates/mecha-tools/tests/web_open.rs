//! `web_open` against loopback servers, with a scripted resolver: each
//! redirect hop is looked up and vetted on its own (a second answer that
//! rebinds to a refused address is refused, and its trap never reached),
//! and a page larger than the call's budget is cut and spilled, external.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_fetch_support;

use std::sync::Arc;

use http_fetch_support::{Reply, Scripted, response, same_port_pair, serve, serve_on};
use mecha_core::ToolCtx;
use mecha_tools::{BackendSpec, Hit, SearchConfig, WebOpen, web_tools};
use serde_json::json;

/// `web_open` exempting 127.0.0.2, with `urls` as the session's results.
fn opener(resolver: Arc<Scripted>, urls: &[String]) -> WebOpen {
    let spec = BackendSpec::Searxng {
        url: "http://127.0.0.1:9".parse().unwrap(),
    };
    let (search, open) = web_tools(SearchConfig::new(vec![spec]), &|_| None).unwrap();
    let hits: Vec<Hit> = urls
        .iter()
        .map(|u| Hit {
            title: "a result".into(),
            url: u.parse().unwrap(),
            snippet: String::new(),
        })
        .collect();
    search.handles().add(&hits);
    open.with_resolver(resolver)
        .allowing("127.0.0.2/32".parse().unwrap())
}

#[tokio::test]
async fn a_redirect_hop_is_looked_up_again_and_a_rebound_answer_refused() {
    let (allowed, trap) = same_port_pair().await;
    let port = allowed.local_addr().unwrap().port();
    let page = serve_on(
        allowed,
        Reply::Fixed(response("302 Found", &[("location", "/next")], b"")),
    );
    let trap = serve_on(trap, http_fetch_support::trap_reply());
    // The first lookup passes; the second, for the hop, rebinds.
    let resolver = Scripted::new(&[&["127.0.0.2"], &["127.0.0.1"]]);
    let open = opener(
        resolver.clone(),
        &[format!("http://page.test.example:{port}/")],
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 16_000).unwrap();
    let out = mecha_core::Tool::call(&open, json!({"handle": 1}), &ctx)
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains(&format!(
            "refused: result [1] redirected to `http://page.test.example:{port}/next`, which names \
             `page.test.example`, which resolves to 127.0.0.1, a loopback address"
        )),
        "{}",
        out.content
    );
    assert_eq!(resolver.names().len(), 2, "each hop is looked up");
    assert_eq!(page.hits(), 1);
    assert_eq!(trap.hits(), 0, "the rebound address was reached");
}

#[tokio::test]
async fn a_page_larger_than_the_budget_is_cut_spilled_and_external() {
    let body = "a line of the page\n".repeat(2000);
    let page = serve(
        "127.0.0.2:0",
        Reply::Fixed(response(
            "200 OK",
            &[("content-type", "text/plain")],
            body.as_bytes(),
        )),
    )
    .await;
    let resolver = Scripted::new(&[]);
    let open = opener(resolver, &[format!("http://127.0.0.2:{}/big", page.port())]);
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 4_000).unwrap();
    let out = mecha_core::Tool::call(&open, json!({"handle": "[1]"}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.content);
    assert!(out.external);
    assert!(out.content.len() <= 4_000, "{} bytes", out.content.len());
    assert!(
        out.content.starts_with("[1] a result — http://127.0.0.2:"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("[truncated by the harness"),
        "{}",
        out.content
    );
    let spilled = std::fs::read_dir(ctx.spill().path().unwrap())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|text| text.contains("a line of the page"))
        .expect("a spill file with the page");
    assert!(spilled.len() > body.len(), "the whole page is saved");
}
