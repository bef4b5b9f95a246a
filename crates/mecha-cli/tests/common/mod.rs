//! Running the real `mecha` binary against the mock model server.
#![allow(dead_code)]

pub mod netns;
pub mod ordinary;
pub mod pty;
pub mod remote;
pub mod standin;
pub mod tui;

use std::path::{Path, PathBuf};
use std::process::Output;

use mecha_provider::script::{ScriptToolCall, ScriptTurn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::Value;

#[derive(Clone, Copy, Debug)]
pub enum Api {
    Anthropic,
    OpenAi,
}

pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub ws: PathBuf,
    /// Appended to the generated config.toml (e.g. `[[mcp]]` entries).
    pub extra_config: String,
    /// More `[provider]` keys, right after the generated ones.
    pub provider_config: String,
    /// Added to mecha's otherwise clean environment.
    pub extra_env: Vec<(String, String)>,
}

pub fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    Env {
        _tmp: tmp,
        home,
        ws,
        extra_config: String::new(),
        provider_config: String::new(),
        extra_env: Vec::new(),
    }
}

impl Env {
    /// Runs `mecha run` pointed at `mock` through `api`, with a clean
    /// environment (no real keys, no proxies) and stdin closed.
    pub async fn run(&self, api: Api, mock: &MockModel, key: &str, args: &[&str]) -> Output {
        self.mecha(api, mock, key, "run", args, "").await
    }

    /// `mecha <command>` as [`Env::mecha`] runs it, to spawn and manage by
    /// hand (stdin, stdout and stderr piped).
    pub fn command(
        &self,
        api: Api,
        mock: &MockModel,
        key: &str,
        command: &str,
        args: &[&str],
    ) -> std::process::Command {
        let config = match api {
            Api::Anthropic => "[provider]\nkind = \"anthropic\"\n".to_owned(),
            Api::OpenAi => "[provider]\nkind = \"openai\"\nmodel = \"test-model\"\n".to_owned(),
        };
        let config = config + &self.provider_config + &self.extra_config;
        std::fs::write(self.home.join("config.toml"), config).unwrap();
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .env("HOME", &self.home)
            .env("MECHA_HOME", &self.home)
            .current_dir(&self.ws)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)))
            .arg(command)
            .args(args);
        match api {
            Api::Anthropic => cmd
                .env("ANTHROPIC_API_KEY", key)
                .env("ANTHROPIC_BASE_URL", mock.anthropic_url()),
            Api::OpenAi => cmd
                .env("OPENAI_API_KEY", key)
                .env("OPENAI_BASE_URL", mock.openai_url()),
        };
        cmd
    }

    /// Runs `mecha <command>` with `input` on stdin.
    pub async fn mecha(
        &self,
        api: Api,
        mock: &MockModel,
        key: &str,
        command: &str,
        args: &[&str],
        input: &str,
    ) -> Output {
        let mut cmd = self.command(api, mock, key, command, args);
        let input = input.to_owned();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = cmd.spawn().unwrap();
            // Dropping stdin after the input is what a closed terminal sends.
            let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }
}

/// The names of the tools an OpenAI-style request offered, in its order.
pub fn openai_tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `mecha ARGS` for a pseudo-terminal: `e`'s config with the Anthropic
/// provider pointed at `mock`, a clean environment plus `e.extra_env`.
pub fn at_terminal(e: &Env, mock: &MockModel, args: &[&str]) -> std::process::Command {
    std::fs::write(
        e.home.join("config.toml"),
        format!("[provider]\nkind = \"anthropic\"\n{}", e.extra_config),
    )
    .unwrap();
    let mut mecha = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"));
    mecha
        .arg("-C")
        .arg(&e.ws)
        .args(args)
        .env("MECHA_HOME", &e.home)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .env("TERM", "xterm")
        .env_remove("OPENAI_API_KEY")
        .envs(e.extra_env.iter().map(|(k, v)| (k, v)));
    mecha
}

/// The id of the one session stored in `e`'s home.
pub fn only_session(e: &Env) -> String {
    let ids: Vec<String> = std::fs::read_dir(e.home.join("sessions"))
        .unwrap()
        .flatten()
        .filter_map(|d| {
            let name = d.file_name().into_string().unwrap();
            name.strip_suffix(".jsonl").map(str::to_owned)
        })
        .collect();
    assert_eq!(ids.len(), 1, "one stored session: {ids:?}");
    ids.into_iter().next().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A model turn that makes these tool calls.
pub fn tool_turn(calls: &[(&str, Value)]) -> MockReply {
    MockReply::Turn(ScriptTurn {
        tool_calls: calls
            .iter()
            .map(|(name, input)| ScriptToolCall {
                name: (*name).into(),
                input: Some(input.clone()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

/// The tool results the model was sent in request `n`, whichever API.
pub fn results_in(mock: &MockModel, n: usize) -> Vec<(String, bool)> {
    let body = &mock.requests()[n].body;
    let messages = body["messages"].as_array().unwrap();
    let mut out = Vec::new();
    for m in messages {
        if m["role"] == "tool" {
            let content = m["content"].as_str().unwrap_or_default().to_owned();
            out.push((content.clone(), content.starts_with("Error")));
        } else if let Some(blocks) = m["content"].as_array() {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                let content = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push((content, b["is_error"].as_bool().unwrap_or(false)));
            }
        }
    }
    out
}

/// `mecha run --output-format json` on a scripted `sleep 5` call,
/// interrupted with SIGINT once the call has had time to start.
pub fn interrupted_json_run(e: &Env) -> Output {
    let call = serde_json::json!({"name": "shell", "input": {"command": "sleep 5"}});
    scripted_home(&e.home, &[call], "never reached", "");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", &e.home)
        .current_dir(&e.ws)
        .args(["run", "--yes", "--output-format", "json", "go"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    out
}

/// Checks that request `n` carries on from an interrupted turn whose one
/// call was running: the call closed with a result saying the user stopped
/// it, the model told of the interrupt, then `prompt`.
pub fn assert_interrupt_kept(mock: &MockModel, n: usize, prompt: &str) {
    let results = results_in(mock, n);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1, "an interrupted call's result is an error");
    assert!(
        results[0].0.contains("the user interrupted this call"),
        "{results:?}"
    );
    let body = &mock.requests()[n].body;
    let sent = body["messages"].to_string();
    let note = sent
        .find("[mecha: the user interrupted this turn]")
        .unwrap_or_else(|| panic!("the model was not told: {sent}"));
    let asked = sent.rfind(prompt).unwrap();
    assert!(
        note < asked,
        "the note comes before the next prompt: {sent}"
    );
}

/// Makes `home` a MECHA_HOME whose model is a script, played offline: one
/// turn per tool call in `calls`, then a turn that answers `closing`.
pub fn scripted_home(home: &Path, calls: &[Value], closing: &str, extra_config: &str) {
    let mut turns: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::json!({"tool_calls": [c]}))
        .collect();
    turns.push(serde_json::json!({ "text": closing }));
    let script = home.join("turns.json");
    std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[provider]\nkind = \"scripted\"\nscript = {:?}\n{extra_config}",
            script.display().to_string()
        ),
    )
    .unwrap();
}

/// Whether util-linux `script`, which gives a child a pseudo-terminal, is
/// here. Missing it is a failure in CI and a loud skip elsewhere.
pub fn have_script() -> bool {
    have(
        "script",
        "the terminal tests",
        "`script` from util-linux (apt-get install util-linux)",
    )
}

/// Whether util-linux `setsid` is here, which [`pty::Terminal`] starts
/// programs with.
pub fn have_setsid() -> bool {
    have(
        "setsid",
        "the terminal tests",
        "`setsid` from util-linux (apt-get install util-linux)",
    )
}

/// Whether `program` runs (`program --version`). A test that needs it
/// fails in CI without it, and skips loudly elsewhere.
pub fn have(program: &str, tests: &str, package: &str) -> bool {
    let found = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        assert!(std::env::var_os("CI").is_none(), "{tests} need {package}");
        eprintln!("SKIPPED: {program} is not installed");
    }
    found
}

/// Whether a Docker engine answers, with the test image built; a failure
/// in CI, a loud skip elsewhere.
pub fn docker_ready() -> bool {
    let answers = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !answers {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs a Docker engine"
        );
        eprintln!("SKIPPED: no Docker engine");
        return false;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mecha-sandbox/tests/docker-image.sh");
    let built = std::process::Command::new("bash")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    true
}

/// The reference servers from npm, installed by .ci/run.
pub fn npm_server(bin: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("MECHA_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"));
    let path = dir.join("node_modules/.bin").join(bin);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: npm install --prefix target/mcp-servers @modelcontextprotocol/server-everything \
         @modelcontextprotocol/server-filesystem",
        path.display()
    );
    eprintln!("SKIPPED: {} is not installed", path.display());
    None
}
