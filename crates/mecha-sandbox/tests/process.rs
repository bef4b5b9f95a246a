//! The confined process itself: its environment, what outlives it, and the
//! system calls the seccomp layer refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bwrap, confine, eventually, python, run, running};

const SECRET_VAR: &str = "MECHA_TEST_SECRET_API_KEY";
const SECRET: &str = "sk-test-Zq8vW2mecha";

/// mecha's own environment holds a secret (here: this test process's);
/// nothing of it is visible inside, neither in `env` nor in bwrap's own
/// environment at /proc/1/environ nor in its argv.
#[tokio::test]
async fn no_secret_of_mechas_environment_is_visible_inside() {
    if std::env::var_os(SECRET_VAR).is_none() {
        // The secret must be in this process's environment, which a test
        // cannot change safely: run this same test again with it.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "no_secret_of_mechas_environment_is_visible_inside",
                "--nocapture",
            ])
            .env(SECRET_VAR, SECRET)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("CHECKED-INSIDE") || stderr.contains("SKIPPED"),
            "{stdout}{stderr}"
        );
        return;
    }
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    // The separator is computed, so the script text (in the cmdline) does
    // not contain it.
    let script = "env; echo =$((1+1))=; tr '\\0' '\\n' < /proc/1/environ; echo =$((1+1))=; \
                  tr '\\0' ' ' < /proc/1/cmdline";
    let out = run(&sandbox, ws.path(), script, false).await;
    assert!(out.status.success(), "{out:?}");
    let parts: Vec<&str> = out.stdout.split("=2=").collect();
    assert_eq!(parts.len(), 3, "{out:?}");
    assert!(
        parts[0].contains("MECHA_TEST_VISIBLE=1"),
        "the job's env is there: {out:?}"
    );
    assert!(
        parts[1].contains("MECHA_TEST_VISIBLE=1"),
        "pid 1 is bwrap: {out:?}"
    );
    assert!(parts[2].contains("bwrap"), "{out:?}");
    assert!(!out.stdout.contains(SECRET), "{out:?}");
    assert!(!out.stdout.contains(SECRET_VAR), "{out:?}");
    println!("CHECKED-INSIDE");
}

/// A unique `sleep` argument, so pgrep on the host finds only this test's.
fn unique_sleep(tag: u32) -> String {
    format!("sleep 300.{}{tag}", std::process::id())
}

#[tokio::test]
async fn a_background_process_does_not_outlive_its_command() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let sleep = unique_sleep(1);
    let script = format!("{sleep} >/dev/null 2>&1 & echo started");
    let out = run(&sandbox, ws.path(), &script, false).await;
    assert!(out.stdout.contains("started"), "{out:?}");
    assert!(!running(&sleep), "`{sleep}` outlived the command");
}

/// What the shell's timeout does: kill bwrap's process group.
#[tokio::test]
async fn killing_the_process_group_kills_everything_inside() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let (first, second) = (unique_sleep(2), unique_sleep(3));
    let mut confined = confine(&sandbox, ws.path(), &format!("{first} & {second}"), false);
    let mut child = confined.command.process_group(0).spawn().unwrap();
    assert!(eventually(|| running(&first) && running(&second)).await);
    let group = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    child.wait().await.unwrap();
    assert!(eventually(|| !running(&first) && !running(&second)).await);
}

/// Killing bwrap alone (mecha dying, say) takes everything inside with it.
#[tokio::test]
async fn killing_bwrap_alone_kills_everything_inside() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let sleep = unique_sleep(4);
    let mut confined = confine(&sandbox, ws.path(), &format!("{sleep}; true"), false);
    let mut child = confined.command.spawn().unwrap();
    assert!(eventually(|| running(&sleep)).await);
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert!(
        eventually(|| !running(&sleep)).await,
        "`{sleep}` survived bwrap"
    );
}

/// Each refused call, from python3's ctypes: the errno it got.
const SYSCALLS: &str = r#"
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def report(name, result):
    print(name, "refused" if result == -1 and ctypes.get_errno() == 1 else f"ALLOWED {result} {ctypes.get_errno()}")
ctypes.set_errno(0)
report("ptrace", libc.ptrace(0, 0, None, None))
report("process_vm_readv", libc.process_vm_readv(os.getpid(), None, 0, None, 0, 0))
report("process_vm_writev", libc.process_vm_writev(os.getpid(), None, 0, None, 0, 0))
params = ctypes.create_string_buffer(120)
report("io_uring_setup", libc.syscall(425, 1, params))
for name, family in [("vsock", 40), ("unix", socket.AF_UNIX)]:
    try:
        socket.socket(family, socket.SOCK_STREAM).close()
        print(name, "ALLOWED")
    except OSError as e:
        print(name, "refused" if e.errno == 1 else f"ALLOWED-ERR {e.errno}")
if os.uname().machine == "x86_64":
    # ptrace by its x32 number
    report("x32", libc.syscall(0x40000000 + 521, 0, 0, 0, 0))
else:
    print("x32 refused")
"#;

#[tokio::test]
async fn ptrace_process_vm_io_uring_and_vsock_are_refused() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    for network in [false, true] {
        let out = python(&sandbox, ws.path(), SYSCALLS, network).await;
        for name in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "io_uring_setup",
            "vsock",
            "x32",
        ] {
            assert!(
                out.stdout.contains(&format!("{name} refused")),
                "{name}: {out:?}"
            );
        }
        // With the host's network namespace shared, unix sockets would
        // reach the host's abstract ones; without it they stay usable.
        let unix = if network {
            "unix refused"
        } else {
            "unix ALLOWED"
        };
        assert!(out.stdout.contains(unix), "{out:?}");
    }
}

/// TIOCSTI on the program's own controlling terminal (a pty made inside),
/// also with bits above 32 set in the request, which the kernel ignores.
#[tokio::test]
async fn tiocsti_is_refused_even_with_high_bits_set() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let program = r#"
import ctypes, fcntl, os, termios
libc = ctypes.CDLL(None, use_errno=True)
main, sub = os.openpty()
name = os.ttyname(sub)
os.close(sub)
os.setsid()
tty = os.open(name, os.O_RDWR)
for label, request in [("plain", termios.TIOCSTI), ("high", 0x100000000 | termios.TIOCSTI)]:
    ctypes.set_errno(0)
    result = libc.ioctl(tty, ctypes.c_ulong(request), ctypes.c_char_p(b"x"))
    print(label, "refused" if result == -1 and ctypes.get_errno() == 1 else f"ALLOWED {result} {ctypes.get_errno()}")
"#;
    let out = python(&sandbox, ws.path(), program, false).await;
    assert!(out.stdout.contains("plain refused"), "{out:?}");
    assert!(out.stdout.contains("high refused"), "{out:?}");
}

/// No capabilities (bwrap keeps them for root by default), no nested user
/// namespace, and a session of its own (no terminal to type into).
#[tokio::test]
async fn no_capabilities_no_user_namespaces_and_a_new_session() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let program = r#"
import ctypes, os
print([l for l in open("/proc/self/status") if l.startswith("CapEff")][0].strip())
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
print("userns", "refused" if libc.unshare(CLONE_NEWUSER) == -1 else "CREATED")
print("session", os.getsid(0))
"#;
    let out = python(&sandbox, ws.path(), program, false).await;
    assert!(out.stdout.contains("CapEff:\t0000000000000000"), "{out:?}");
    assert!(out.stdout.contains("userns refused"), "{out:?}");
    // A session led from outside the pid namespace shows as 0.
    assert!(
        out.stdout.contains("session ") && !out.stdout.contains("session 0\n"),
        "{out:?}"
    );
}
