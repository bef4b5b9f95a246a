//! Two confined jobs that overlap in one workspace (a subagent's shell
//! beside the main one, or two mechas): the first makes a repository, the
//! second starts while it exists and so counts it as known, and the first
//! hands the second a descriptor for its hooks directory over a unix
//! socket. After the first job's sweep has cleaned the repository, the
//! second plants a hook through that descriptor. Its own sweep must still
//! find the hook, although the repository was there when it started.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{bwrap, confine};

/// The first job: a new repository, and its hooks directory's descriptor
/// for whoever connects to `sock`.
const MAKER: &str = r#"
import os, socket
os.makedirs('X/.git/hooks'); os.makedirs('X/.git/objects'); os.makedirs('X/.git/refs')
open('X/.git/HEAD', 'w').write('ref: refs/heads/main\n')
open('X/.git/config', 'w').write('[core]\n\trepositoryformatversion = 0\n')
hooks = os.open('X/.git/hooks', os.O_RDONLY | os.O_DIRECTORY)
server = socket.socket(socket.AF_UNIX)
server.bind('sock')
server.listen(1)
open('ready', 'w').close()
conn, _ = server.accept()
socket.send_fds(conn, [b'x'], [hooks])
conn.recv(1)
"#;

/// The second job: takes the descriptor, waits for `go`, plants a hook.
const PLANTER: &str = r#"
import os, socket, time
client = socket.socket(socket.AF_UNIX)
client.connect('sock')
_, fds, _, _ = socket.recv_fds(client, 1, 1)
client.send(b'k')
while not os.path.exists('go'):
    time.sleep(0.02)
hook = os.open('pre-commit', os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=fds[0])
os.write(hook, b'#!/bin/sh\necho planted\n')
print('planted')
"#;

fn python(code: &str) -> String {
    format!("python3 - <<'PY'\n{code}\nPY\n")
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_hook_planted_through_another_jobs_descriptor_is_swept() {
    let Some(sandbox) = bwrap() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();

    let mut maker = confine(&sandbox, ws, &python(MAKER), false);
    let mut maker_child = maker.command.spawn().unwrap();
    wait_for(&ws.join("ready"));
    let mut planter = confine(&sandbox, ws, &python(PLANTER), false);
    let planter_child = planter.command.spawn().unwrap();
    let made = maker_child.wait().await.unwrap();
    assert!(made.success(), "the first job failed");
    let first = maker.lease.finish();
    assert!(
        !ws.join("X/.git/hooks/pre-commit").exists(),
        "nothing is planted yet"
    );

    std::fs::write(ws.join("go"), "").unwrap();
    let out = planter_child.wait_with_output().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "planted",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = planter.lease.finish();

    assert!(
        !ws.join("X/.git/hooks/pre-commit").exists(),
        "the planted hook is still where git runs it; the first sweep said {:?}, the second {:?}",
        first.undone,
        second.undone
    );
    assert!(
        second.undone.iter().any(|line| line.contains("pre-commit")),
        "{:?}",
        second.undone
    );
}
