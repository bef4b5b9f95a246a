//! Forbid and prompt rules judge what a tool will act on: properties over
//! many spellings of one path or URL. (The listed attacks run through the
//! gate with the real tools in mecha-agent's `tests/gate_paths.rs`.)

use std::collections::BTreeMap;

use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{ArgKind, Tool, ToolCtx, ToolOutput, parse_url};

/// A tool that declares one argument of one kind, and is never called.
struct Declares(ArgKind);

#[async_trait]
impl Tool for Declares {
    fn name(&self) -> &str {
        "t"
    }
    fn description(&self) -> &str {
        "declares one argument"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        match self.0 {
            ArgKind::ReadPath => &[("path", ArgKind::ReadPath)],
            ArgKind::WritePath => &[("path", ArgKind::WritePath)],
            ArgKind::Url => &[("url", ArgKind::Url)],
        }
    }
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::refusal("never called"))
    }
}

fn rule(key: &str, pattern: &str, action: RuleAction) -> Rules {
    Rules::compile(&[RuleConfig {
        tool: "t".into(),
        command: None,
        input: BTreeMap::from([(key.to_owned(), pattern.to_owned())]),
        action,
    }])
    .unwrap()
}

/// What the rules say about `input` once its declared arguments are
/// spelled out; `Err` when the jail refuses a path first.
fn judged(
    rules: &Rules,
    kind: ArgKind,
    input: &Value,
    ctx: &ToolCtx,
) -> Result<Option<RuleAction>, String> {
    let tool = Declares(kind);
    let spellings = Spellings::of(&tool, input, ctx).map_err(|e| e.to_string())?;
    Ok(rules.evaluate("t", input, &spellings))
}

/// A random spelling of an http(s) URL: any case, whitespace around it,
/// any run of slashes and backslashes, host forms, ports, paths.
fn url_spelling() -> impl Strategy<Value = String> {
    let ws = prop::sample::select(vec!["", " ", "\t", "\n", " \t"]);
    let scheme = prop::sample::select(vec!["http", "https"]);
    let case = prop::collection::vec(any::<bool>(), 5);
    let slashes = prop::sample::select(vec!["", "/", "//", "\\\\", "/\\", "\\/", "///", "\\"]);
    let host = prop::sample::select(vec![
        "example.com",
        "EXAMPLE.com.",
        "93.184.215.14",
        "0x5db8d70e",
        "[::1]",
        "Ex%41mple.com",
    ]);
    let port = prop::sample::select(vec!["", ":80", ":443", ":8080"]);
    let path = prop::sample::select(vec!["", "/", "/a", "\\a\\b", "/a?q=1#f"]);
    (ws.clone(), scheme, case, slashes, host, port, path, ws).prop_map(
        |(pre, scheme, case, slashes, host, port, path, post)| {
            let scheme: String = scheme
                .chars()
                .zip(case)
                .map(|(c, up)| if up { c.to_ascii_uppercase() } else { c })
                .collect();
            format!("{pre}{scheme}:{slashes}{host}{port}{path}{post}")
        },
    )
}

proptest! {
    /// `forbid url = "http://*"` fires on exactly the spellings the tool
    /// would fetch over plain http, and a prompt rule on the same.
    #[test]
    fn a_forbidden_scheme_is_forbidden_however_it_is_spelt(raw in url_spelling()) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 1024).unwrap();
        let input = json!({ "url": raw });
        let fetched_over_http = parse_url(&raw).is_ok_and(|u| u.scheme() == "http");
        for action in [RuleAction::Forbid, RuleAction::Prompt] {
            let got = judged(&rule("url", "http://*", action), ArgKind::Url, &input, &ctx).unwrap();
            prop_assert_eq!(got == Some(action), fetched_over_http, "{:?} {:?}", raw, action);
        }
    }

    /// A path that names a file under `secrets/` is either refused by the
    /// jail or forbidden, whatever detour it takes.
    #[test]
    fn a_forbidden_directory_is_forbidden_by_any_detour(
        parts in prop::collection::vec(
            prop::sample::select(vec![".", "..", "notes", "secrets", "link", "key", ""]),
            1..6,
        ),
        absolute in any::<bool>(),
        kind in prop::sample::select(vec![ArgKind::ReadPath, ArgKind::WritePath]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(ws.join("secrets")).unwrap();
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::write(ws.join("secrets/key"), "k").unwrap();
        std::os::unix::fs::symlink(ws.join("secrets"), ws.join("link")).unwrap();
        let ctx = ToolCtx::new(&ws, 1024).unwrap();
        let relative = parts.join("/");
        let raw = if absolute { format!("{}/{relative}", ws.display()) } else { relative };
        // The oracle is the filesystem's own answer, not the jail's.
        let Ok(target) = std::fs::canonicalize(ws.join(&raw)) else {
            return Ok(());
        };
        let names_a_secret = target.starts_with(ws.join("secrets")) && target != ws.join("secrets");
        let rules = rule("path", "secrets/*", RuleAction::Forbid);
        match judged(&rules, kind, &json!({ "path": raw }), &ctx) {
            Err(refused) => prop_assert!(!names_a_secret, "{raw}: {refused}"),
            // The raw text may match as well (`secrets/.`): erring toward
            // the stronger action is allowed, missing a secret is not.
            Ok(got) => prop_assert!(got == Some(RuleAction::Forbid) || !names_a_secret, "{}", raw),
        }
    }
}

#[test]
fn an_allow_rule_still_sees_only_the_raw_text() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    let ctx = ToolCtx::new(&ws, 1024).unwrap();
    let allow = rule("path", "src/*", RuleAction::Allow);
    let absolute = ws.join("src/a.rs").display().to_string();
    let at = |raw: &str| judged(&allow, ArgKind::WritePath, &json!({ "path": raw }), &ctx);
    assert_eq!(at("src/a.rs"), Ok(Some(RuleAction::Allow)));
    for other in [
        "./src/a.rs",
        "SRC/a.rs",
        absolute.as_str(),
        "src/../src/a.rs",
    ] {
        assert_eq!(at(other), Ok(None), "{other}");
    }
    let allow = rule("url", "https://docs.rs/*", RuleAction::Allow);
    let at = |raw: &str| judged(&allow, ArgKind::Url, &json!({ "url": raw }), &ctx);
    assert_eq!(at("https://docs.rs/x"), Ok(Some(RuleAction::Allow)));
    for other in [
        "HTTPS://docs.rs/x",
        " https://docs.rs/x",
        "https:\\\\docs.rs\\x",
    ] {
        assert_eq!(at(other), Ok(None), "{other}");
    }
}

#[test]
fn url_forms_drop_the_trailing_dot_the_default_port_and_a_lone_slash() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 1024).unwrap();
    let forbid = rule("url", "https://evil.example", RuleAction::Forbid);
    for raw in [
        "https://evil.example",
        "HTTPS://EVIL.EXAMPLE/",
        "https://evil.example.:443",
        "  https:evil.example.  ",
    ] {
        assert_eq!(
            judged(&forbid, ArgKind::Url, &json!({ "url": raw }), &ctx),
            Ok(Some(RuleAction::Forbid)),
            "{raw}"
        );
    }
    for other in ["https://evil.example/x", "https://evil.example.org/"] {
        assert_eq!(
            judged(&forbid, ArgKind::Url, &json!({ "url": other }), &ctx),
            Ok(None),
            "{other}"
        );
    }
}

#[test]
fn a_user_part_in_front_of_the_host_does_not_hide_it() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 1024).unwrap();
    let forbid = rule("url", "https://evil.example/*", RuleAction::Forbid);
    for raw in [
        "https://x@evil.example/p",
        "https://evil.example:pw@evil.example/p",
        "https://user:pass@evil.example./p",
    ] {
        assert_eq!(
            judged(&forbid, ArgKind::Url, &json!({ "url": raw }), &ctx),
            Ok(Some(RuleAction::Forbid)),
            "{raw}"
        );
    }
}

#[test]
fn an_undeclared_argument_is_judged_raw() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 1024).unwrap();
    let forbid = rule("target", "http://*", RuleAction::Forbid);
    let input = json!({ "target": "HTTP://x/" });
    assert_eq!(
        judged(&forbid, ArgKind::Url, &input, &ctx),
        Ok(Some(RuleAction::Forbid)),
        "case"
    );
    let input = json!({ "target": " http://x/" });
    assert_eq!(
        judged(&forbid, ArgKind::Url, &input, &ctx),
        Ok(None),
        "not a declared URL"
    );
}
