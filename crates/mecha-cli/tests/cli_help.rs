//! Shell completions and `--help` through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

fn mecha(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", home.path())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn completions_generate_for_each_shell_and_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let o = mecha(&["completions", shell]);
        assert!(
            o.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let script = String::from_utf8_lossy(&o.stdout);
        for word in ["run", "chat", "doctor", "config", "max-turns"] {
            assert!(script.contains(word), "{shell} script lacks {word}");
        }
    }
    let o = mecha(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn mecha_alone_without_a_terminal_prints_the_help_and_exits_2() {
    // stdin and stdout are not terminals here: there is no screen to open.
    let o = mecha(&[]);
    assert_eq!(o.status.code(), Some(2));
    let help = String::from_utf8_lossy(&o.stderr);
    for word in ["Usage: mecha", "tui", "chat", "Exit codes:"] {
        assert!(help.contains(word), "the help lacks {word}: {help}");
    }
    assert!(o.stdout.is_empty());
    // Asked for by name, the TUI says what to use instead.
    let o = mecha(&["tui"]);
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("needs a terminal"), "{said}");
    assert!(said.contains("mecha chat"), "{said}");
}

#[test]
fn every_help_names_the_files_the_environment_and_the_exit_codes() {
    let o = mecha(&["--help"]);
    assert!(o.status.success());
    let top = String::from_utf8_lossy(&o.stdout).into_owned();
    let subcommands = [
        "run",
        "chat",
        "tui",
        "tools",
        "skills",
        "hooks",
        "mcp",
        "sessions",
        "config",
        "doctor",
        "completions",
    ];
    let mut helps = vec![top];
    for sub in subcommands {
        let o = mecha(&[sub, "--help"]);
        assert!(o.status.success(), "{sub}");
        helps.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    let o = mecha(&["mcp", "check", "--help"]);
    helps.push(String::from_utf8_lossy(&o.stdout).into_owned());
    for help in &helps {
        for needle in [
            "MECHA_HOME",
            "config.toml",
            "mecha.toml",
            "MECHA_LOG",
            "ANTHROPIC_API_KEY",
            "Exit codes:",
            "130",
            "141",
        ] {
            assert!(help.contains(needle), "no {needle} in:\n{help}");
        }
    }
}

/// The bare command's options belong to it alone: given before another
/// command they would be dropped, so that is refused with where they go;
/// a prompt without a terminal says what to use instead of the help.
#[test]
fn the_screens_options_before_a_command_are_refused_with_where_they_go() {
    let o = mecha(&["--yes", "run", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("`mecha run --yes …`"), "{said}");
    let o = mecha(&["fix the failing test"]);
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("needs a terminal"), "{said}");
    assert!(said.contains("mecha run"), "{said}");
    assert!(!said.contains("Usage:"), "{said}");
}

/// `--max-turns 0` would still make a request; it is refused as usage.
#[test]
fn max_turns_zero_is_refused() {
    let o = mecha(&["run", "--max-turns", "0", "hello"]);
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("--max-turns"), "{said}");
    assert!(said.contains("1.."), "{said}");
}

/// An Anthropic endpoint without a key names the key, not "no provider".
#[test]
fn a_base_url_without_its_key_names_the_key() {
    let home = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", home.path())
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .args(["run", "hello"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("ANTHROPIC_BASE_URL is set but ANTHROPIC_API_KEY is not"),
        "{said}"
    );
    assert!(!said.contains("no model provider is configured"), "{said}");
}

/// The scripted provider's `script` is read beside the config file, not
/// from wherever mecha was started; a broken one names the path it tried.
#[test]
fn a_scripts_relative_path_is_the_config_files_neighbour() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[provider]\nkind = \"scripted\"\nscript = \"turns.json\"\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("turns.json"),
        r#"{"turns": [{"text": "from the script"}]}"#,
    )
    .unwrap();
    let run = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .env("MECHA_HOME", home.path())
            .current_dir(elsewhere.path())
            .args(["run", "hello"])
            .output()
            .unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("from the script"));
    std::fs::write(home.path().join("turns.json"), "{not json").unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    let tried = home.path().join("turns.json");
    assert!(said.contains(&tried.display().to_string()), "{said}");
}

/// `mecha rn` is a command misspelt, not a first prompt for the screen.
#[test]
fn a_misspelt_command_names_the_command_meant() {
    let o = mecha(&["rn"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("`rn` is not a mecha command: did you mean `mecha run`?"),
        "{stderr}"
    );
    let o = mecha(&["sesions"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("did you mean `mecha sessions`?"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A word that is no near miss is a prompt (here: no terminal for it).
    let o = mecha(&["refactor"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("needs a terminal"), "{stderr}");
}
