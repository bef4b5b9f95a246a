//! The hook's environment: an allowlist plus the workspace, never a model
//! key. Alone in its binary, because it sets variables of the process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{hook, script};
use mecha_hooks::{Decision, HookSet};

#[tokio::test]
#[allow(unsafe_code)]
async fn model_keys_never_reach_a_hook() {
    // SAFETY: the only test of this binary, before any thread reads the
    // environment concurrently.
    unsafe {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-secret");
        std::env::set_var("OPENAI_API_KEY", "sk-openai-secret");
        std::env::set_var("MECHA_SOMETHING_ELSE", "x");
    }
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "env > env.txt");
    let set = HookSet::compile(&[hook(&s, None)], dir.path()).unwrap();
    let v = set
        .pre_tool(
            &common::context(dir.path()),
            "shell",
            &serde_json::json!({}),
            "t",
        )
        .await;
    assert_eq!(v.decision, Decision::Pass);
    let env = std::fs::read_to_string(dir.path().join("env.txt")).unwrap();
    assert!(!env.contains("secret"), "{env}");
    assert!(!env.contains("API_KEY"), "{env}");
    assert!(!env.contains("MECHA_SOMETHING_ELSE"), "{env}");
    assert!(
        env.lines()
            .any(|l| l == format!("MECHA_PROJECT_DIR={}", dir.path().display())),
        "{env}"
    );
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
}
