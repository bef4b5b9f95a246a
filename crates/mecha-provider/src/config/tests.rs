use std::collections::HashMap;

use super::*;
use crate::ANTHROPIC_CONTEXT_WINDOW;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

fn settings(toml_text: &str) -> ProviderSettings {
    toml_from(toml_text).unwrap_or_else(|e| panic!("{e}"))
}

fn toml_from(text: &str) -> Result<ProviderSettings, String> {
    // serde_json stands in for toml here: the crate does not parse files.
    serde_json::from_str(text).map_err(|e| e.to_string())
}

fn describe(settings: &ProviderSettings, env: &[(&str, &str)]) -> Result<String, String> {
    build(settings, &env_of(env))
        .map(|p| p.describe())
        .map_err(|e| e.to_string())
}

#[test]
fn nothing_configured_explains_every_option() {
    let error = describe(&ProviderSettings::default(), &[]).unwrap_err();
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "kind = \"anthropic\"",
        "kind = \"openai\"",
        "http://localhost:11434/v1",
        "kind = \"scripted\"",
        "[provider]",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn kind_is_inferred_from_the_environment() {
    let s = ProviderSettings::default();
    let anthropic = describe(&s, &[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")]);
    assert_eq!(
        anthropic.as_deref(),
        Ok("anthropic claude-sonnet-4-5 at https://api.anthropic.com/v1/messages")
    );
    let with_model = ProviderSettings {
        model: Some("gpt-x".into()),
        ..ProviderSettings::default()
    };
    assert_eq!(
        describe(&with_model, &[("OPENAI_API_KEY", "o")]).as_deref(),
        Ok("openai gpt-x at https://api.openai.com/v1/chat/completions")
    );
    assert_eq!(
        describe(
            &with_model,
            &[("OPENAI_BASE_URL", "http://localhost:11434/v1/")]
        )
        .as_deref(),
        Ok("openai gpt-x at http://localhost:11434/v1/chat/completions")
    );
    // An empty key counts as unset.
    assert!(describe(&s, &[("ANTHROPIC_API_KEY", "")]).is_err());
}

#[test]
fn config_wins_over_environment() {
    let s = settings(
        r#"{"kind": "anthropic", "base_url": "http://127.0.0.1:9/", "model": "claude-test",
            "api_key_env": "MY_KEY"}"#,
    );
    let env = [
        ("ANTHROPIC_BASE_URL", "http://elsewhere"),
        ("MY_KEY", "k"),
        ("OPENAI_API_KEY", "o"),
    ];
    assert_eq!(
        describe(&s, &env).as_deref(),
        Ok("anthropic claude-test at http://127.0.0.1:9/v1/messages")
    );
    let error = describe(&s, &[("ANTHROPIC_API_KEY", "k")]).unwrap_err();
    assert!(error.contains("MY_KEY"), "{error}");
}

#[test]
fn anthropic_defaults() {
    let p = build(
        &ProviderSettings::default(),
        &env_of(&[("ANTHROPIC_API_KEY", "k")]),
    );
    let p = p.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.context_window(), Some(ANTHROPIC_CONTEXT_WINDOW));
    let s = settings(r#"{"kind": "anthropic"}"#);
    let error = describe(&s, &[]).unwrap_err();
    assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");
}

#[test]
fn openai_needs_a_model_and_a_key_only_for_openai_itself() {
    let s = settings(r#"{"kind": "openai"}"#);
    let error = describe(&s, &[("OPENAI_API_KEY", "o")]).unwrap_err();
    assert!(error.contains("needs a model"), "{error}");

    let no_key = settings(r#"{"kind": "openai", "model": "m"}"#);
    let error = describe(&no_key, &[]).unwrap_err();
    assert!(error.contains("OPENAI_API_KEY"), "{error}");

    let local = settings(
        r#"{"kind": "openai", "model": "qwen3", "base_url": "http://localhost:11434/v1",
            "context_window": 32768}"#,
    );
    let p = build(&local, &env_of(&[])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.context_window(), Some(32768));
    assert_eq!(
        build(
            &settings(r#"{"kind": "openai", "model": "m", "base_url": "http://x/v1"}"#),
            &env_of(&[])
        )
        .map(|p| p.context_window())
        .ok(),
        Some(None)
    );

    let named = settings(r#"{"kind": "openai", "model": "m", "api_key_env": "LOCAL_KEY"}"#);
    let error = describe(&named, &[("OPENAI_API_KEY", "o")]).unwrap_err();
    assert!(error.contains("LOCAL_KEY"), "{error}");
}

#[test]
fn bad_base_url_and_unknown_fields() {
    let s = settings(r#"{"kind": "openai", "model": "m", "base_url": "localhost:11434"}"#);
    let error = describe(&s, &[]).unwrap_err();
    assert!(error.contains("base_url"), "{error}");
    assert!(toml_from(r#"{"kind": "openai", "modle": "m"}"#).is_err());
    assert!(toml_from(r#"{"kind": "gemini"}"#).is_err());
}

#[test]
fn scripted_loads_its_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("turns.json");
    std::fs::write(&path, r#"{"turns": [{"text": "hi"}]}"#).unwrap_or_else(|e| panic!("{e}"));
    let s = ProviderSettings {
        kind: Some(Kind::Scripted),
        script: Some(path.clone()),
        ..ProviderSettings::default()
    };
    let described = describe(&s, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(described.starts_with("scripted"), "{described}");

    let missing = ProviderSettings {
        kind: Some(Kind::Scripted),
        ..ProviderSettings::default()
    };
    assert!(describe(&missing, &[]).unwrap_err().contains("script"));

    std::fs::write(&path, r#"{"turns": [{"txt": "typo"}]}"#).unwrap_or_else(|e| panic!("{e}"));
    let error = describe(&s, &[]).unwrap_err();
    assert!(
        error.contains("turns.json") && error.contains("not valid"),
        "{error}"
    );
}

#[test]
fn idle_timeout_setting_parses() {
    let s = settings(r#"{"idle_timeout_secs": 600}"#);
    assert_eq!(s.idle_timeout_secs, Some(600));
}

#[test]
fn the_model_comes_from_the_environment_when_config_names_none() {
    let nothing = ProviderSettings::default();
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "o"),
        ("OPENAI_MODEL", "from-env"),
    ];
    assert_eq!(
        describe(&nothing, &env).as_deref(),
        Ok("openai from-env at http://127.0.0.1:9/v1/chat/completions")
    );
    let anthropic = [
        ("ANTHROPIC_API_KEY", "k"),
        ("ANTHROPIC_MODEL", "claude-env"),
    ];
    assert_eq!(
        describe(&nothing, &anthropic).as_deref(),
        Ok("anthropic claude-env at https://api.anthropic.com/v1/messages")
    );
    // Config (and --model, which the CLI writes into it) wins.
    let configured = settings(r#"{"model": "from-config"}"#);
    assert_eq!(
        describe(&configured, &env).as_deref(),
        Ok("openai from-config at http://127.0.0.1:9/v1/chat/completions")
    );
    assert_eq!(
        describe(&configured, &anthropic).as_deref(),
        Ok("anthropic from-config at https://api.anthropic.com/v1/messages")
    );
}

#[test]
fn a_missing_openai_model_names_every_place_to_set_one() {
    let error = describe(
        &ProviderSettings::default(),
        &[
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("OPENAI_API_KEY", "o"),
        ],
    )
    .unwrap_err();
    for needle in ["--model", "OPENAI_MODEL", "`model` in [provider]"] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn max_tokens_field_parses_and_a_bad_value_names_the_choices() {
    let s = settings(r#"{"kind": "openai", "max_tokens_field": "max_completion_tokens"}"#);
    assert_eq!(
        s.max_tokens_field,
        Some(MaxTokensField::MaxCompletionTokens)
    );
    let s = settings(r#"{"max_tokens_field": "max_tokens"}"#);
    assert_eq!(s.max_tokens_field, Some(MaxTokensField::MaxTokens));
    let error = toml_from(r#"{"max_tokens_field": "max_output_tokens"}"#).unwrap_err();
    for needle in [
        "max_output_tokens",
        "`max_tokens`",
        "`max_completion_tokens`",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
    // Where it cannot be honoured it is an error, not ignored.
    let anthropic = settings(r#"{"kind": "anthropic", "max_tokens_field": "max_tokens"}"#);
    let error = describe(&anthropic, &[("ANTHROPIC_API_KEY", "k")]).unwrap_err();
    assert!(
        error.contains("max_tokens_field") && error.contains("openai"),
        "{error}"
    );
}

fn anthropic(settings_json: &str) -> Result<String, String> {
    describe(&settings(settings_json), &[("ANTHROPIC_API_KEY", "k")])
}

#[test]
fn thinking_parses_from_toml_in_both_forms() {
    let parse = |text: &str| toml::from_str::<ProviderSettings>(text).map_err(|e| e.to_string());
    assert_eq!(
        parse("thinking = { budget_tokens = 4096 }").map(|s| s.thinking),
        Ok(Some(Thinking::Budget(4096)))
    );
    assert_eq!(
        parse("thinking = \"adaptive\"").map(|s| s.thinking),
        Ok(Some(Thinking::Adaptive))
    );
    let error = parse("thinking = { budget_tokens = 512 }").unwrap_err();
    assert!(error.contains("at least 1024"), "{error}");
    let error = parse("thinking = \"max\"").unwrap_err();
    assert!(error.contains("\"adaptive\""), "{error}");
}

#[test]
fn thinking_is_checked_against_the_model_and_max_tokens() {
    assert!(
        anthropic(r#"{"model": "claude-sonnet-4-5", "thinking": {"budget_tokens": 8192}}"#).is_ok()
    );
    assert!(anthropic(r#"{"model": "claude-opus-4-7", "thinking": "adaptive"}"#).is_ok());
    let error = anthropic(
        r#"{"model": "claude-sonnet-4-5", "max_tokens": 4096, "thinking": {"budget_tokens": 8192}}"#,
    )
    .unwrap_err();
    assert!(
        error.contains("must be less than max_tokens (4096)"),
        "{error}"
    );
    let error = anthropic(r#"{"model": "claude-opus-4-7", "thinking": {"budget_tokens": 8192}}"#)
        .unwrap_err();
    assert!(error.contains("thinking = \"adaptive\""), "{error}");
}

#[test]
fn thinking_for_an_openai_provider_says_why_not() {
    let s = settings(
        r#"{"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
            "thinking": {"budget_tokens": 2048}}"#,
    );
    let error = describe(&s, &[]).unwrap_err();
    assert!(error.contains("kind = \"anthropic\""), "{error}");
    assert!(error.contains("remove `thinking`"), "{error}");
}

#[test]
fn the_context_window_comes_from_the_model_unless_configured() {
    let window = |json: &str| {
        build(&settings(json), &env_of(&[("ANTHROPIC_API_KEY", "k")]))
            .map(|p| p.context_window())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        window(r#"{"model": "claude-sonnet-4-6"}"#),
        Ok(Some(1_000_000))
    );
    assert_eq!(
        window(r#"{"model": "claude-haiku-4-5"}"#),
        Ok(Some(200_000))
    );
    assert_eq!(
        window(r#"{"model": "claude-sonnet-4-6", "context_window": 150000}"#),
        Ok(Some(150_000))
    );
    assert_eq!(
        window(r#"{"model": "claude-test"}"#),
        Ok(Some(ANTHROPIC_CONTEXT_WINDOW))
    );
}

#[test]
fn max_tokens_above_what_the_model_writes_is_refused() {
    let error = anthropic(r#"{"model": "claude-sonnet-4-5", "max_tokens": 100000}"#).unwrap_err();
    assert!(error.contains("at most 64000"), "{error}");
    assert!(error.contains("lower it, or remove it"), "{error}");
    assert!(anthropic(r#"{"model": "claude-sonnet-4-5", "max_tokens": 64000}"#).is_ok());
    // Unknown models are the API's to judge.
    assert!(anthropic(r#"{"model": "claude-test", "max_tokens": 500000}"#).is_ok());
}

#[test]
fn images_are_on_unless_turned_off_and_a_script_cannot_take_them() {
    let accepts = |json: &str, env: &[(&str, &str)]| {
        build(&settings(json), &env_of(env))
            .map(|p| p.accepts_images())
            .map_err(|e| e.to_string())
    };
    let key = [("ANTHROPIC_API_KEY", "k")];
    assert_eq!(accepts(r#"{"kind": "anthropic"}"#, &key), Ok(true));
    let local =
        r#"{"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "images": false}"#;
    assert_eq!(accepts(local, &[]), Ok(false));

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("turns.json");
    std::fs::write(&path, r#"{"turns": [{"text": "hi"}]}"#).unwrap_or_else(|e| panic!("{e}"));
    let scripted = |images: &str| {
        format!(
            r#"{{"kind": "scripted", "script": {:?}{images}}}"#,
            path.display().to_string()
        )
    };
    assert_eq!(accepts(&scripted(""), &[]), Ok(false));
    let error = accepts(&scripted(r#", "images": true"#), &[]).unwrap_err();
    assert!(error.contains("images = true cannot apply"), "{error}");
}

#[test]
fn max_output_tokens_is_the_max_tokens_the_request_carries() {
    let max = |json: &str, env: &[(&str, &str)]| {
        build(&settings(json), &env_of(env))
            .map(|p| p.max_output_tokens())
            .map_err(|e| e.to_string())
    };
    let key = [("ANTHROPIC_API_KEY", "k")];
    // Anthropic: the configured value, else the model's own limit, else the
    // default for a model mecha does not know.
    assert_eq!(
        max(r#"{"kind": "anthropic", "max_tokens": 4096}"#, &key),
        Ok(Some(4096))
    );
    assert_eq!(
        max(r#"{"kind": "anthropic", "model": "claude-opus-4-1"}"#, &key),
        Ok(Some(32_000))
    );
    assert_eq!(
        max(r#"{"kind": "anthropic", "model": "claude-test"}"#, &key),
        Ok(Some(u64::from(crate::anthropic::DEFAULT_MAX_TOKENS)))
    );
    // OpenAI-compatible: only what is configured; none is sent otherwise.
    let local = r#"{"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1""#;
    assert_eq!(max(&format!("{local}}}"), &[]), Ok(None));
    assert_eq!(
        max(&format!(r#"{local}, "max_tokens": 2048}}"#), &[]),
        Ok(Some(2048))
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("turns.json");
    std::fs::write(&path, r#"{"turns": [{"text": "hi"}]}"#).unwrap_or_else(|e| panic!("{e}"));
    let scripted = format!(
        r#"{{"kind": "scripted", "script": {:?}}}"#,
        path.display().to_string()
    );
    assert_eq!(max(&scripted, &[]), Ok(None));
}

#[test]
fn compact_at_tokens_parses_beside_the_context_window() {
    let parse = |text: &str| toml::from_str::<ProviderSettings>(text).map_err(|e| e.to_string());
    let s = parse("context_window = 32000\ncompact_at_tokens = 20000")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (s.context_window, s.compact_at_tokens),
        (Some(32_000), Some(20_000))
    );
    assert_eq!(parse("").map(|s| s.compact_at_tokens), Ok(None));
    // Unknown keys are still refused, a near miss included.
    let error = parse("compact_at_token = 20000").unwrap_err();
    assert!(
        error.contains("unknown field `compact_at_token`"),
        "{error}"
    );
    assert!(parse("compact_at_tokens = -1").is_err());
}

#[test]
fn the_idle_timeout_hint_names_the_key_the_file_and_the_default() {
    let mut s = ProviderSettings {
        config_file: Some(PathBuf::from("/h/config.toml")),
        ..ProviderSettings::default()
    };
    let default = Duration::from_secs(120);
    assert_eq!(
        super::idle_timeout_hint(&s, default),
        "[provider] idle_timeout_secs in /h/config.toml (unset: the default of 120s applies)"
    );
    s.idle_timeout_secs = Some(7);
    assert_eq!(
        super::idle_timeout_hint(&s, default),
        "[provider] idle_timeout_secs (set to 7 in /h/config.toml)"
    );
}
