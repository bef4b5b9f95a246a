//! A remote MCP server behind TLS with a certificate from the user's own
//! authority (an intranet server, a company's inspecting proxy): reached
//! once `SSL_CERT_FILE` names the authority, refused with the fix when it
//! does not, and a variable naming nothing usable stops the run with the
//! fix instead of being ignored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::remote::{Server, free_port, sdk_python, start_sdk_server};
use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// The SDK's server over HTTPS on a free port, with the authority that
/// signed its certificate written to `dir/ca.pem`.
fn https_server(python: &Path, dir: &Path) -> (Server, u16) {
    let port = free_port();
    let server = start_sdk_server(
        python,
        port,
        "streamable-http",
        &["--tls-dir", dir.to_str().unwrap()],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.join("ca.pem").exists() {
        assert!(Instant::now() < deadline, "the server wrote no ca.pem");
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, port)
}

fn remote(e: &mut Env, port: u16) {
    e.extra_config = format!("[[mcp]]\nname = \"fx\"\nurl = \"https://127.0.0.1:{port}/mcp\"\n");
}

#[tokio::test]
async fn a_server_signed_by_the_authority_ssl_cert_file_names_is_reached() {
    let Some(python) = sdk_python() else {
        return;
    };
    let certs = tempfile::tempdir().unwrap();
    let (_server, port) = https_server(&python, certs.path());
    let mut e = env();
    remote(&mut e, port);
    let ca = certs.path().join("ca.pem");
    e.extra_env
        .push(("SSL_CERT_FILE".into(), ca.to_str().unwrap().into()));
    let mock = MockModel::start(vec![
        tool_turn(&[("fx__add", json!({"a": 40, "b": 2}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "add"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(!is_error && result.contains("42"), "{result}");
}

#[tokio::test]
async fn without_the_authority_the_server_is_refused_with_the_fix() {
    let Some(python) = sdk_python() else {
        return;
    };
    let certs = tempfile::tempdir().unwrap();
    let (_server, port) = https_server(&python, certs.path());
    let mut e = env();
    remote(&mut e, port);
    let mock = MockModel::start(vec![]).await;
    let check = e
        .mecha(Api::Anthropic, &mock, "k", "mcp", &["check", "fx"], "")
        .await;
    let said = format!("{}{}", stdout(&check), stderr(&check));
    assert!(!check.status.success(), "{said}");
    assert!(said.contains("certificate"), "{said}");
    assert!(said.contains("SSL_CERT_FILE"), "{said}");
}

#[tokio::test]
async fn an_ssl_cert_file_that_cannot_be_used_stops_the_run_with_the_fix() {
    let mut e = env();
    let missing = e.home.join("no-such-bundle.pem");
    e.extra_env
        .push(("SSL_CERT_FILE".into(), missing.to_str().unwrap().into()));
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["hello"]).await;
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("SSL_CERT_FILE names") && said.contains("cannot be read"),
        "{said}"
    );
    assert!(said.contains("or unset it"), "{said}");
    assert!(mock.requests().is_empty(), "a request went out anyway");
}
