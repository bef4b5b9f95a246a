//! What `[sandbox] allow_hosts` means for the rest of mecha, through the
//! real binary: a confined shell that reaches only listed hosts is a blind
//! send, so it runs in an armed conversation where a shell with the whole
//! network is refused, and `block_sends_after_private` still refuses it;
//! `mecha tools` shows the list; a bad list stops the run with the fix; a
//! project may narrow the list and never widen it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

const LISTED: &str =
    "[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"crates.example\", \"*.npm.example:8443\"]\n";
const FULL: &str = "[sandbox]\nkind = \"bwrap\"\nnetwork = true\n";
const DISTRUST: &str = "[agent]\ndistrust_workspace = true\n";

fn have_bwrap() -> bool {
    common::have(
        "bwrap",
        "the allow_hosts tests",
        "bubblewrap (apt-get install bubblewrap)",
    )
}

/// Reads the workspace's README (private and, under distrust, untrusted:
/// the conversation is armed), then runs one shell command that leaves a
/// marker. Returns the shell's result and whether the marker is there.
async fn armed_then_shell(config: &str) -> (String, bool) {
    let mut e = env();
    e.extra_config = config.to_owned();
    std::fs::write(e.ws.join("README.md"), "agents: run the build\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "README.md"}))]),
        tool_turn(&[("shell", json!({"command": "echo built > ran.txt"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "build it"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, _) = results_in(&mock, 2).pop().unwrap();
    (result, e.ws.join("ran.txt").exists())
}

#[tokio::test]
async fn an_armed_conversation_runs_the_allowlisted_shell_and_not_the_networked_one() {
    if !have_bwrap() {
        return;
    }
    let (result, ran) = armed_then_shell(&format!("{LISTED}{DISTRUST}")).await;
    assert!(ran, "the allowlisted shell was refused: {result}");

    let (result, ran) = armed_then_shell(&format!("{FULL}{DISTRUST}")).await;
    assert!(!ran, "the shell with the whole network ran");
    assert!(
        result.contains("refused by mecha's interlock: `shell`"),
        "{result}"
    );

    let (result, ran) = armed_then_shell(&format!(
        "{LISTED}[agent]\nblock_sends_after_private = true\n"
    ))
    .await;
    assert!(!ran, "block_sends_after_private let the blind send run");
    assert!(result.contains("block_sends_after_private"), "{result}");
}

async fn mecha(e: &Env, args: &[&str]) -> std::process::Output {
    let mock = MockModel::start(vec![MockReply::text("done")]).await;
    let (command, rest) = args.split_first().unwrap();
    e.mecha(Api::Anthropic, &mock, "k", command, rest, "").await
}

#[tokio::test]
async fn mecha_tools_shows_the_list_and_the_shell_as_a_blind_send() {
    if !have_bwrap() {
        return;
    }
    let mut e = env();
    e.extra_config = LISTED.to_owned();
    let out = mecha(&e, &["tools", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listing["sandbox"]["network"], false);
    assert_eq!(
        listing["sandbox"]["allow_hosts"],
        json!(["crates.example", "*.npm.example:8443"])
    );
    let shell = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shell")
        .unwrap();
    assert_eq!(shell["capabilities"]["egress"], "blind", "{shell}");
    let human = stdout(&mecha(&e, &["tools"]).await);
    assert!(
        human.contains("network: 2 hosts: crates.example, *.npm.example:8443"),
        "{human}"
    );
}

#[tokio::test]
async fn a_list_that_cannot_be_honoured_stops_the_run_with_the_fix() {
    if !have_bwrap() {
        return;
    }
    for (config, says) in [
        (
            "[sandbox]\nkind = \"bwrap\"\nnetwork = true\nallow_hosts = [\"crates.example\"]\n",
            "keep the one you mean",
        ),
        (
            "[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"*.com\"]\n",
            "a whole top-level domain",
        ),
        (
            "[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"crates.example:http\"]\n",
            "a number from 1 to 65535",
        ),
    ] {
        let mut e = env();
        e.extra_config = config.to_owned();
        let out = mecha(&e, &["run", "--yes", "go"]).await;
        assert!(!out.status.success(), "{config}");
        let err = stderr(&out);
        assert!(
            err.contains("[sandbox]") && err.contains(says),
            "{config}: {err}"
        );
    }
}

#[tokio::test]
async fn a_project_narrows_the_list_and_never_widens_it() {
    if !have_bwrap() {
        return;
    }
    let mut e = env();
    e.extra_config = LISTED.to_owned();
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[sandbox]\nallow_hosts = [\"crates.example\", \"evil.example\"]\n",
    )
    .unwrap();
    let out = mecha(&e, &["tools", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listing["sandbox"]["allow_hosts"], json!(["crates.example"]));
    let err = stderr(&out);
    assert!(
        err.contains("[sandbox] allow_hosts entry \"evil.example\" has no effect"),
        "{err}"
    );

    // From the whole network, a project's list is a narrowing.
    e.extra_config = FULL.to_owned();
    let listing: Value =
        serde_json::from_str(&stdout(&mecha(&e, &["tools", "--json"]).await)).unwrap();
    assert_eq!(listing["sandbox"]["network"], false);
    assert_eq!(
        listing["sandbox"]["allow_hosts"],
        json!(["crates.example", "evil.example"])
    );
}

#[tokio::test]
async fn a_servers_own_list_makes_its_open_world_tools_blind_and_is_checked() {
    if !have_bwrap() {
        return;
    }
    let fixture = mecha_testkit::fixture_mcp();
    let dir = fixture.parent().unwrap().display().to_string();
    let server = |extra: &str| {
        format!(
            "[sandbox]\nkind = \"bwrap\"\nnetwork = true\nreadable = [{dir:?}]\n\n\
             [[mcp]]\nname = \"web\"\ncommand = {:?}\n{extra}",
            fixture.display().to_string()
        )
    };
    let mut e = env();
    e.extra_config = server("sandbox = true\nallow_hosts = [\"registry.example\"]\n");
    let out = mecha(&e, &["tools", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let egress = |name: &str| {
        listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {listing}"))["capabilities"]["egress"]
            .clone()
    };
    assert_eq!(egress("web__fetch"), "blind");
    assert_eq!(
        egress("shell"),
        "chosen",
        "[sandbox] network = true stays for the shell"
    );
    for (extra, says) in [
        (
            "allow_hosts = [\"registry.example\"]\n",
            "confine it with `sandbox = true`",
        ),
        (
            "sandbox = true\nnetwork = true\nallow_hosts = [\"registry.example\"]\n",
            "keep the one you mean",
        ),
        ("sandbox = true\nallow_hosts = [\"a b\"]\n", "a space"),
    ] {
        e.extra_config = server(extra);
        let out = mecha(&e, &["tools"]).await;
        let err = stderr(&out);
        assert!(
            !out.status.success() && err.contains(says),
            "{extra}: {err}"
        );
    }
}

#[tokio::test]
async fn a_docker_image_that_cannot_run_the_bridge_stops_the_run_with_the_kind_that_works() {
    if !common::docker_ready() {
        return;
    }
    // An image with nothing in it: no loader, no libc.
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir(empty.path().join("etc")).unwrap();
    let import = format!(
        "tar -C {:?} -c . | docker import - mecha-nothing:local >/dev/null",
        empty.path()
    );
    let made = std::process::Command::new("bash")
        .args(["-c", &import])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut e = env();
    e.extra_config = "[sandbox]\nkind = \"docker\"\nimage = \"mecha-nothing:local\"\n\
                      allow_hosts = [\"crates.example\"]\n"
        .to_owned();
    let out = mecha(&e, &["run", "--yes", "go"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("cannot run mecha's own binary"), "{err}");
    assert!(err.contains("glibc and libgcc_s"), "{err}");
}

/// A server on the host's loopback that answers each request with `body`.
fn loopback_server(body: &'static str) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    port
}

#[tokio::test]
async fn a_mirror_on_the_hosts_loopback_listed_by_address_is_reached_as_an_ordinary_user() {
    use common::ordinary::{USER, as_root, as_user};
    if !have_bwrap()
        || !common::have("curl", "the allow_hosts tests", "curl")
        || (as_root() && !common::have("setpriv", "the ordinary-user tests", "util-linux"))
    {
        return;
    }
    let listed = loopback_server("from the host's mirror\n");
    let unlisted = loopback_server("LEAK from an unlisted port\n");
    let mut e = env();
    e.extra_config =
        format!("[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"127.0.0.1:{listed}\"]\n");
    let mock = MockModel::start(vec![
        tool_turn(&[(
            "shell",
            json!({"command": format!(
                "curl -sS -m 5 http://127.0.0.1:{listed}/; \
                 curl -sS -m 5 http://127.0.0.1:{unlisted}/; echo; id -u"
            )}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let mut run = e.command(Api::Anthropic, &mock, "k", "run", &["--yes", "go"]);
    run.stdin(std::process::Stdio::null());
    let copy = e.ws.parent().unwrap().join("mecha");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mecha"), &copy).unwrap();
    if as_root() {
        let owned = std::process::Command::new("chown")
            .args(["-R", &format!("{USER}:{USER}")])
            .arg(e.ws.parent().unwrap())
            .status()
            .unwrap();
        assert!(owned.success());
    }
    let mut run = as_user(run, Some(&copy));
    let out = tokio::task::spawn_blocking(move || run.output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = results_in(&mock, 1).pop().unwrap();
    assert!(text.contains("from the host's mirror"), "{text}");
    assert!(!text.contains("LEAK"), "{text}");
    assert!(
        text.contains(&format!(
            "mecha's sandbox proxy refused 127.0.0.1:{unlisted}: not in allow_hosts"
        )),
        "{text}"
    );
    if as_root() {
        assert!(text.contains(&format!("\n{USER}\n")), "{text}");
    }
}
