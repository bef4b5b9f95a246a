use super::*;

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn dirs(global: Option<&str>, project: Option<&str>) -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    if let Some(g) = global {
        std::fs::write(home.join("config.toml"), g).unwrap();
    }
    if let Some(p) = project {
        std::fs::write(ws.join("mecha.toml"), p).unwrap();
    }
    Dirs {
        _tmp: tmp,
        home,
        ws,
    }
}

pub(super) fn load(global: Option<&str>, project: Option<&str>) -> Result<Settings, ConfigError> {
    let d = dirs(global, project);
    Settings::load(&d.home, &d.ws)
}

#[test]
fn no_files_means_defaults() {
    let s = load(None, None).unwrap();
    assert!(s.tool_filter(false).keeps_name("shell"));
    assert_eq!(s.turn_budget, FALLBACK_TURN_BUDGET);
    assert!(s.project_file.is_none());
}

#[test]
fn disabled_wins_over_enabled() {
    let s = load(
        Some("[tools]\nenabled = [\"fs_read\", \"shell\"]\ndisabled = [\"shell\"]\n"),
        None,
    )
    .unwrap();
    assert!(s.tool_filter(false).keeps_name("fs_read"));
    assert!(!s.tool_filter(false).keeps_name("shell"));
    assert!(!s.tool_filter(false).keeps_name("fs_write"));
}

#[test]
fn a_project_can_narrow_but_never_widen() {
    let s = load(
        Some("[tools]\nenabled = [\"fs_read\", \"fs_list\"]\noutput_budget_bytes = 50000\n[tools.shell]\nmax_timeout_s = 100\ndefault_timeout_s = 50\n"),
        Some("[tools]\nenabled = [\"fs_read\", \"shell\"]\noutput_budget_bytes = 900000\n[tools.shell]\nmax_timeout_s = 9999\ndefault_timeout_s = 10\n"),
    )
    .unwrap();
    assert!(s.tool_filter(false).keeps_name("fs_read"));
    assert!(
        !s.tool_filter(false).keeps_name("shell"),
        "a project enabled a tool the user did not"
    );
    assert!(
        !s.tool_filter(false).keeps_name("fs_list"),
        "the intersection drops fs_list"
    );
    assert_eq!(s.turn_budget, 50_000, "a project cannot raise the budget");
    assert_eq!(s.builtins.shell.max_timeout, Duration::from_secs(100));
    assert_eq!(s.builtins.shell.default_timeout, Duration::from_secs(10));
}

#[test]
fn a_project_disable_adds_to_the_user_disable() {
    let s = load(
        Some("[tools]\ndisabled = [\"shell\"]\n"),
        Some("[tools]\ndisabled = [\"http_fetch\"]\n"),
    )
    .unwrap();
    assert!(
        !s.tool_filter(false).keeps_name("shell") && !s.tool_filter(false).keeps_name("http_fetch")
    );
    assert!(s.tool_filter(false).keeps_name("fs_read"));
}

#[test]
fn what_a_project_may_not_set_is_ignored_with_a_warning_naming_file_and_setting() {
    let global = "[provider]\nmodel = \"mine\"\n\n[agent]\ntimezone = \"Europe/Paris\"\n";
    let project = "mcp_files = [\"x.json\"]\n\n[provider]\nmodel = \"theirs\"\n\n\
                   [agent]\ntimezone = \"Asia/Tokyo\"\n\n[sandbox]\nreadable = [\"/\"]\n\n\
                   [[mcp]]\nname = \"x\"\ncommand = \"/bin/x\"\n\n\
                   [[subagent]]\nname = \"y\"\ndescription = \"d\"\ntools = []\n";
    let s = load(Some(global), Some(project)).unwrap();
    // The user's own values stay.
    assert_eq!(s.provider.model.as_deref(), Some("mine"));
    assert_eq!(s.timezone.as_deref(), Some("Europe/Paris"));
    assert!(s.mcp.is_empty() && s.subagents.is_empty());
    assert!(s.sandbox.readable.is_empty());
    for setting in [
        "[provider] model = \"theirs\"",
        "[agent] timezone",
        "[sandbox] readable",
        "an MCP server ([[mcp]] or mcp_files)",
        "[[subagent]]",
    ] {
        let found: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.contains(&format!("mecha.toml: {setting} has no effect")))
            .collect();
        assert_eq!(found.len(), 1, "{setting}: {:?}", s.warnings);
        assert!(found[0].contains("config.toml)"), "{}", found[0]);
    }
    assert_eq!(s.warnings.len(), 5, "{:?}", s.warnings);
}

#[test]
fn a_projects_search_backends_are_ignored_and_search_keys_are_hidden_from_the_shell() {
    let global = "[[search]]\nkind = \"brave\"\napi_key_env = \"MY_BRAVE\"\n";
    let project = "[[search]]\nkind = \"searxng\"\nurl = \"http://evil.example\"\n";
    let s = load(Some(global), Some(project)).unwrap();
    let backends = &s.search.as_ref().unwrap().backends;
    assert_eq!(backends.len(), 1);
    assert_eq!(backends[0].spec.kind(), "brave");
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("mecha.toml: [[search]] has no effect")),
        "{:?}",
        s.warnings
    );
    assert!(s.builtins.shell.hidden_env.contains(&"MY_BRAVE".to_owned()));
}

#[test]
fn budget_derives_from_the_context_window_unless_set() {
    let s = load(Some("[provider]\ncontext_window = 32000\n"), None).unwrap();
    assert_eq!(s.turn_budget, 12_000);
    let s = load(
        Some("[provider]\ncontext_window = 32000\n[tools]\noutput_budget_bytes = 9000\n"),
        None,
    )
    .unwrap();
    assert_eq!(s.turn_budget, 9000);
}

#[test]
fn a_project_budget_only_lowers_what_the_window_derives() {
    // The user set nothing, so the provider's window decides; a project
    // asking for more must not switch that derivation off.
    let mut s = load(None, Some("[tools]\noutput_budget_bytes = 100000\n")).unwrap();
    s.adopt_context_window(Some(32_000));
    assert_eq!(s.turn_budget, 12_000, "a project raised the derived budget");
    let mut s = load(None, Some("[tools]\noutput_budget_bytes = 9000\n")).unwrap();
    s.adopt_context_window(Some(32_000));
    assert_eq!(s.turn_budget, 9000, "a project may lower it");
    let mut s = load(
        Some("[provider]\ncontext_window = 32000\n"),
        Some("[tools]\noutput_budget_bytes = 100000\n"),
    )
    .unwrap();
    s.adopt_context_window(Some(200_000));
    assert_eq!(s.turn_budget, 12_000);
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let err = load(Some("[tools]\nenabled = [\"a\"\n"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("config.toml:2:"), "{err}");
}

#[test]
fn an_unknown_key_names_file_line_and_key() {
    let err = load(Some("[tools]\nenabled = []\nenabeld = [\"shell\"]\n"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("config.toml:3:1"), "{err}");
    assert!(err.contains("unknown field `enabeld`"), "{err}");
}

#[test]
fn a_wrong_type_names_file_line_and_key() {
    let err = load(None, Some("[tools]\n\n output_budget_bytes = \"lots\"\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("mecha.toml:3:"), "{err}");
    assert!(err.contains("output_budget_bytes = \"lots\""), "{err}");
}

#[test]
fn an_unknown_section_is_an_error() {
    let err = load(Some("[tool]\nenabled = []\n"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `tool`"), "{err}");
}

#[test]
fn inconsistent_limits_say_how_to_fix_them() {
    let err = load(
        Some("[tools.shell]\ndefault_timeout_s = 900\nmax_timeout_s = 60\n"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("raise max_timeout_s"), "{err}");
    let err = load(Some("[tools]\noutput_budget_bytes = 10\n"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("too small"), "{err}");
}

#[test]
fn a_project_can_tighten_the_agent_but_not_loosen_it() {
    let s = load(
        Some("[agent]\npermission_mode = \"ask\"\nmax_turns = 10\n"),
        Some("[agent]\npermission_mode = \"allow\"\nmax_turns = 50\nblock_sends_after_private = true\n"),
    )
    .unwrap();
    assert_eq!(s.permission_mode, PermissionMode::Ask);
    assert_eq!(s.max_turns, 10);
    assert!(s.block_sends_after_private);
    let s = load(None, Some("[agent]\npermission_mode = \"read-only\"\n")).unwrap();
    assert_eq!(s.permission_mode, PermissionMode::ReadOnly);
}

#[test]
fn a_project_may_forbid_but_not_allow() {
    let s = load(
        None,
        Some("[[rule]]\ntool = \"shell\"\ncommand = \"git push\"\naction = \"forbid\"\n"),
    )
    .unwrap();
    assert_eq!(s.rules.len(), 1);
    let s = load(
        None,
        Some(
            "[[rule]]\ntool = \"shell\"\naction = \"allow\"\n\n\
             [[rule]]\ntool = \"shell\"\ncommand = \"git push\"\naction = \"forbid\"\n",
        ),
    )
    .unwrap();
    assert_eq!(s.rules.len(), 1);
    assert_eq!(s.rules[0].action, RuleAction::Forbid);
    assert!(
        s.warnings[0].contains("an `allow` [[rule]] for `shell` has no effect; it is left out"),
        "{:?}",
        s.warnings
    );
}

#[test]
fn a_bad_rule_is_a_config_error() {
    let err = load(
        Some("[[rule]]\ntool = \"shell\"\ncommand = \"a && b\"\naction = \"allow\"\n"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("one simple command"), "{err}");
    let err = load(
        Some("[[rule]]\ntool = \"shell\"\naction = \"maybe\"\n"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("config.toml:3:"), "{err}");
}

#[test]
fn shell_commands_never_see_the_model_api_keys() {
    let s = load(Some("[provider]\napi_key_env = \"MY_GATEWAY_KEY\"\n"), None).unwrap();
    let hidden = &s.builtins.shell.hidden_env;
    for name in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MY_GATEWAY_KEY"] {
        assert!(
            hidden.iter().any(|h| h == name),
            "{name} reaches shell: {hidden:?}"
        );
    }
}

#[test]
fn an_absurd_shell_timeout_is_refused() {
    let err = load(
        Some("[tools.shell]\nmax_timeout_s = 18446744073709551615\n"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("more than a day"), "{err}");
}

#[test]
fn mcp_files_expand_the_home_directory() {
    let d = dirs(
        Some("mcp_files = [\"~/definitely-missing-mecha-test.json\"]\n"),
        None,
    );
    let err = Settings::load(&d.home, &d.ws).unwrap_err().to_string();
    let home = std::env::var("HOME").unwrap();
    assert!(
        err.contains(&format!("{home}/definitely-missing-mecha-test.json")),
        "{err}"
    );
}

/// The warnings a project file earns over a user file.
fn warnings(global: &str, project: &str) -> Vec<String> {
    load(Some(global), Some(project)).unwrap().warnings
}

/// Exactly one warning, and it names the project file, the key, the value
/// asked for and the value that stays.
pub(super) fn one_warning(global: &str, project: &str, says: &[&str]) {
    let w = warnings(global, project);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("mecha.toml: "), "{}", w[0]);
    assert!(w[0].contains("config.toml"), "{}", w[0]);
    for needle in says {
        assert!(w[0].contains(needle), "missing {needle:?} in {}", w[0]);
    }
}

#[test]
fn a_wider_mode_in_a_project_is_named_with_the_mode_that_stays() {
    one_warning(
        "[agent]\npermission_mode = \"ask\"\n",
        "[agent]\npermission_mode = \"allow\"\n",
        &[
            "[agent] permission_mode = \"allow\" has no effect",
            "stays \"ask\"",
            "stricter",
        ],
    );
    assert!(warnings("", "[agent]\npermission_mode = \"read-only\"\n").is_empty());
    assert!(warnings("", "[agent]\npermission_mode = \"ask\"\n").is_empty());
}

#[test]
fn a_higher_limit_in_a_project_is_named_with_the_limit_that_stays() {
    one_warning(
        "[agent]\nmax_turns = 10\n",
        "[agent]\nmax_turns = 50\n",
        &["[agent] max_turns = 50 has no effect", "stays 10", "lower"],
    );
    one_warning(
        "[tools.shell]\nmax_timeout_s = 100\ndefault_timeout_s = 50\n",
        "[tools.shell]\nmax_timeout_s = 9999\n",
        &["[tools.shell] max_timeout_s = 9999", "stays 100"],
    );
    one_warning(
        "[tools.shell]\ndefault_timeout_s = 30\n",
        "[tools.shell]\ndefault_timeout_s = 60\n",
        &["[tools.shell] default_timeout_s = 60", "stays 30"],
    );
    one_warning(
        "[tools.http_fetch]\ntimeout_s = 5\n",
        "[tools.http_fetch]\ntimeout_s = 50\n",
        &["[tools.http_fetch] timeout_s = 50", "stays 5"],
    );
    one_warning(
        "[tools.http_fetch]\nmax_body_bytes = 1000\n",
        "[tools.http_fetch]\nmax_body_bytes = 2000\n",
        &["[tools.http_fetch] max_body_bytes = 2000", "stays 1000"],
    );
    // Lowering, or asking for what is already there, says nothing.
    assert!(warnings("[agent]\nmax_turns = 10\n", "[agent]\nmax_turns = 5\n").is_empty());
    assert!(warnings("[agent]\nmax_turns = 10\n", "[agent]\nmax_turns = 10\n").is_empty());
}

#[test]
fn a_project_cannot_switch_off_the_send_block_and_is_told() {
    one_warning(
        "[agent]\nblock_sends_after_private = true\n",
        "[agent]\nblock_sends_after_private = false\n",
        &[
            "[agent] block_sends_after_private = false has no effect",
            "stays true",
        ],
    );
    let s = load(
        Some("[agent]\nblock_sends_after_private = true\n"),
        Some("[agent]\nblock_sends_after_private = false\n"),
    )
    .unwrap();
    assert!(s.block_sends_after_private);
    assert!(warnings("", "[agent]\nblock_sends_after_private = false\n").is_empty());
}

#[test]
fn enabling_a_tool_the_user_left_off_is_named() {
    one_warning(
        "[tools]\ndisabled = [\"shell\"]\n",
        "[tools]\nenabled = [\"shell\", \"fs_read\"]\n",
        &[
            "[tools] enabled naming `shell` has no effect",
            "stays off",
            "disabled",
        ],
    );
    one_warning(
        "[tools]\nenabled = [\"fs_read\"]\n",
        "[tools]\nenabled = [\"fs_read\", \"fs_write\"]\n",
        &["`fs_write`", "not enabled"],
    );
    assert!(warnings("", "[tools]\nenabled = [\"fs_read\"]\n").is_empty());
}

#[test]
fn a_relative_mcp_command_resolves_against_the_file_that_names_it() {
    let d = dirs(
        Some(
            "mcp_files = [\"servers/desk.json\"]\n[[mcp]]\nname = \"inline\"\ncommand = \
             \"./bin/server\"\n[[mcp]]\nname = \"bare\"\ncommand = \"npx\"\n",
        ),
        None,
    );
    std::fs::create_dir_all(d.home.join("servers")).unwrap();
    std::fs::write(
        d.home.join("servers/desk.json"),
        r#"{"mcpServers": {"desk": {"command": "bin/desk-server"}}}"#,
    )
    .unwrap();
    let s = Settings::load(&d.home, &d.ws).unwrap();
    let command = |name: &str| {
        s.mcp
            .iter()
            .find(|m| m.config.name == name)
            .unwrap()
            .config
            .command
            .clone()
    };
    assert_eq!(
        PathBuf::from(command("inline")),
        d.home.join("./bin/server")
    );
    assert_eq!(
        PathBuf::from(command("desk")),
        d.home.join("servers/bin/desk-server")
    );
    assert_eq!(command("bare"), "npx");
}

#[test]
fn spill_max_bytes_defaults_high_narrows_in_a_project_and_is_checked() {
    let s = load(None, None).unwrap();
    assert_eq!(s.spill_max_bytes, DEFAULT_SPILL_MAX_BYTES);
    let s = load(
        Some("[tools]\nspill_max_bytes = 10000000\n"),
        Some("[tools]\nspill_max_bytes = 99000000\n"),
    )
    .unwrap();
    assert_eq!(s.spill_max_bytes, 10_000_000, "a project cannot raise it");
    let s = load(
        Some("[tools]\nspill_max_bytes = 10000000\n"),
        Some("[tools]\nspill_max_bytes = 5000000\n"),
    )
    .unwrap();
    assert_eq!(s.spill_max_bytes, 5_000_000, "but may lower it");
    let err = load(
        Some("[tools]\noutput_budget_bytes = 50000\nspill_max_bytes = 4000\n"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("spill_max_bytes = 4000 is smaller than"),
        "{err}"
    );
    assert!(err.contains("raise spill_max_bytes"), "{err}");
}
