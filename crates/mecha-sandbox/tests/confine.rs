//! What a confined command can reach: no network, no host socket, nothing
//! writable outside the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;

use common::{bwrap, python, run, sandbox};
use mecha_sandbox::{HostEnv, SandboxConfig, SandboxError};

fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn connected(listener: &TcpListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("{e}"),
    }
}

fn loopback_script(port: u16) -> String {
    let mut script = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo BASH-SENT; ");
    if Path::new("/usr/bin/curl").exists() {
        script.push_str(&format!(
            "curl -sS -m 2 http://127.0.0.1:{port}/ && echo CURL-SENT; "
        ));
    }
    script.push_str("true");
    script
}

#[tokio::test]
async fn without_network_a_loopback_listener_sees_no_connection() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let (listener, port) = listener();
    let out = run(&sandbox, ws.path(), &loopback_script(port), false).await;
    assert!(!out.stdout.contains("SENT"), "{out:?}");
    assert!(
        !connected(&listener),
        "a confined command reached the host: {out:?}"
    );
}

#[tokio::test]
async fn with_network_the_same_listener_is_reached() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let (listener, port) = listener();
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo BASH-SENT");
    let out = run(&sandbox, ws.path(), &script, true).await;
    assert!(out.stdout.contains("BASH-SENT"), "{out:?}");
    assert!(connected(&listener));
}

/// A host socket in the workspace's parent and in the host /tmp, and an
/// abstract one: none of them reachable, with network or without.
#[tokio::test]
async fn host_unix_sockets_are_unreachable() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let beside = tmp.path().join("host.sock");
    let _beside = UnixListener::bind(&beside).unwrap();
    let in_tmp = Path::new("/tmp").join(format!("mecha-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&in_tmp);
    let _in_tmp = UnixListener::bind(&in_tmp).unwrap();
    let _remove = RemoveOnDrop(in_tmp.clone());
    let name = format!("mecha-test-abstract-{}", std::process::id());
    let _abstract =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    let program = format!(
        r#"
import socket
for target in [{beside:?}, {in_tmp:?}, "\0{name}"]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(target)
        print("CONNECTED", repr(target))
    except OSError as e:
        print("refused", repr(target), e.errno)
"#
    );
    for network in [false, true] {
        let out = python(&sandbox, &ws, &program, network).await;
        assert_eq!(
            out.stdout.matches("refused").count(),
            3,
            "network {network}: {out:?}"
        );
        assert!(!out.stdout.contains("CONNECTED"), "{out:?}");
    }
    // The listeners are real: the same program unconfined connects.
    let host = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &program])
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&host.stdout);
    assert_eq!(host.matches("CONNECTED").count(), 3, "{host}");
}

/// The socket in the host /tmp goes even when the test fails.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn only_the_workspace_and_a_private_tmp_are_writable() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let marker = format!("mecha-test-tmp-{}", std::process::id());
    let parent = tmp.path().join("outside");
    let script = format!(
        "for p in /etc/mecha-x /usr/mecha-x /opt/mecha-x /root/mecha-x /run/mecha-x; do \
           (echo x > $p) 2>/dev/null && echo WROTE $p; done; \
         for d in /root /run /var/run /home; do [ -e $d ] && echo SEES $d; done; \
         echo x > /tmp/{marker} && echo TMP-OK; echo x > inside && echo WS-OK; \
         echo x > {parent} 2>/dev/null; true",
        parent = parent.display()
    );
    let out = run(&sandbox, &ws, &script, false).await;
    assert!(!out.stdout.contains("WROTE"), "{out:?}");
    assert!(!out.stdout.contains("SEES"), "{out:?}");
    assert!(
        out.stdout.contains("TMP-OK") && out.stdout.contains("WS-OK"),
        "{out:?}"
    );
    assert!(ws.join("inside").is_file());
    // Beside the workspace is the private /tmp too, whatever lands there.
    assert!(!parent.exists());
    assert!(
        !Path::new("/tmp").join(&marker).exists(),
        "/tmp inside is not the host's"
    );
}

#[tokio::test]
async fn a_symlink_in_the_workspace_cannot_be_written_through() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("file"), "original").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("dir-link")).unwrap();
    std::os::unix::fs::symlink(outside.join("file"), ws.join("file-link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.join("etc-link")).unwrap();
    let script = "(echo x > dir-link/new) 2>/dev/null && echo WROTE-DIR; \
                  (echo x > file-link) 2>/dev/null && echo WROTE-FILE; \
                  (echo x >> etc-link) 2>/dev/null && echo WROTE-ETC; true";
    let out = run(&sandbox, &ws, script, false).await;
    assert!(!out.stdout.contains("WROTE"), "{out:?}");
    assert!(!outside.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("file")).unwrap(),
        "original"
    );
}

#[tokio::test]
async fn a_program_outside_gets_the_readable_line_that_brings_it_in() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bin = home.join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("mecha-test-tool");
    common::write_executable(&tool, "#!/bin/sh\necho TOOL-RAN\n");
    let host = HostEnv {
        path: std::env::join_paths([bin.as_os_str(), "/usr/bin".as_ref()]).unwrap(),
        home: Some(home.clone()),
        records: None,
        bridge: None,
    };
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let Some(sandbox) = sandbox(SandboxConfig::default(), host.clone()) else {
        return;
    };
    let out = run(&sandbox, &ws, "mecha-test-tool", false).await;
    assert!(
        out.stderr.contains("mecha-test-tool: command not found"),
        "{out:?}"
    );
    let hint = sandbox.missing_program_hint(&out.stderr).unwrap();
    assert!(
        hint.contains(r#"readable = ["~/.cargo", "~/.rustup"]"#),
        "{hint}"
    );

    // Following the hint works.
    let config = SandboxConfig {
        readable: vec!["~/.cargo".into(), "~/.rustup".into()],
        ..SandboxConfig::default()
    };
    let sandbox = common::sandbox(config, host).unwrap();
    let out = run(&sandbox, &ws, "mecha-test-tool", false).await;
    assert!(out.stdout.contains("TOOL-RAN"), "{out:?}");
    assert_eq!(sandbox.missing_program_hint(&out.both()), None);
}

#[test]
fn without_bwrap_on_path_start_names_the_package() {
    let config = SandboxConfig {
        kind: Some(mecha_sandbox::SandboxKind::Bwrap),
        ..SandboxConfig::default()
    };
    let host = HostEnv {
        path: "/nonexistent".into(),
        home: None,
        records: None,
        bridge: None,
    };
    let err = mecha_sandbox::Sandbox::start(&config, host).unwrap_err();
    assert_eq!(err, SandboxError::BwrapMissing);
    assert!(err.to_string().contains("apt-get install bubblewrap"));
}

/// A relative PATH entry names whatever directory a host shell is in,
/// most often the workspace: a program a command put there would run
/// unconfined. The sandbox refuses to start, naming the entry.
#[test]
fn a_relative_entry_on_path_is_refused_at_start() {
    let config = SandboxConfig {
        kind: Some(mecha_sandbox::SandboxKind::Bwrap),
        ..SandboxConfig::default()
    };
    for (path, entry) in [
        ("node_modules/.bin:/usr/bin", "node_modules/.bin"),
        ("/usr/bin::/bin", ""),
        ("/usr/bin:.", "."),
    ] {
        let host = HostEnv {
            path: path.into(),
            home: None,
            records: None,
            bridge: None,
        };
        let err = mecha_sandbox::Sandbox::start(&config, host).unwrap_err();
        assert_eq!(
            err,
            SandboxError::RelativeOnPath {
                entry: entry.into()
            },
            "{path}"
        );
        assert!(err.to_string().contains("take the entry off PATH"), "{err}");
    }
}

/// The start-up probe runs bwrap once and turns its failure into the
/// error naming the fix (here a bwrap that cannot mount /proc, as in a
/// container): no sandbox at all rather than one sharing the host's /proc.
#[test]
fn start_fails_where_bwrap_cannot_mount_a_fresh_proc() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("bwrap");
    let script = "#!/bin/sh\necho \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2\nexit 1\n";
    common::write_executable(&fake, script);
    let config = SandboxConfig {
        kind: Some(mecha_sandbox::SandboxKind::Bwrap),
        ..SandboxConfig::default()
    };
    let host = HostEnv {
        path: tmp.path().as_os_str().to_owned(),
        home: None,
        records: None,
        bridge: None,
    };
    let err = mecha_sandbox::Sandbox::start(&config, host).unwrap_err();
    assert!(matches!(err, SandboxError::ProcUnavailable { .. }), "{err}");
    assert!(err.to_string().contains("systempaths=unconfined"), "{err}");
}
