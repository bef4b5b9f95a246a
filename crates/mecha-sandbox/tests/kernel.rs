//! The kernel's own state, which no mount namespace hides: sysctls, the
//! magic SysRq key, and the keyrings. mecha often runs as root (containers,
//! CI, devcontainers), where the sandbox's uid 0 is the host's uid 0, and
//! the kernel decides a sysctl write by uid alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bwrap, run};

/// Every file under /proc/sys, the SysRq trigger and `kernel.core_pattern`
/// (which would have the host kernel run a workspace program as host root):
/// none writable, none written. Run as root in CI, which is where it bites.
#[tokio::test]
async fn no_kernel_state_under_proc_is_writable() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let script = "n=0; for f in $(find /proc/sys -type f 2>/dev/null) /proc/sysrq-trigger; do \
                    [ -w \"$f\" ] && { echo \"WRITABLE $f\"; n=$((n+1)); }; done; \
                  echo \"checked=$(find /proc/sys -type f 2>/dev/null | wc -l)\"; \
                  old=$(cat /proc/sys/kernel/core_pattern); \
                  printf '%s' \"$old\" > /proc/sys/kernel/core_pattern 2>/dev/null && echo WROTE-CORE; \
                  v=$(cat /proc/sys/kernel/printk_ratelimit); \
                  echo \"$v\" > /proc/sys/kernel/printk_ratelimit 2>/dev/null && echo WROTE-PRINTK; \
                  echo h > /proc/sysrq-trigger 2>/dev/null && echo WROTE-SYSRQ; \
                  [ -e /sys/kernel ] && echo SYS-VISIBLE; true";
    let out = run(&sandbox, ws.path(), script, false).await;
    assert!(out.status.success(), "{out:?}");
    let checked: usize = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("checked="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(checked > 100, "/proc/sys was not there to check: {out:?}");
    for bad in ["WRITABLE", "WROTE-", "SYS-VISIBLE"] {
        assert!(!out.stdout.contains(bad), "{bad}: {out:?}");
    }
}

/// What the read-only /proc must not take away: writing through the
/// descriptors in /proc/self/fd (`> /dev/stdout` is everywhere in scripts).
#[tokio::test]
async fn writing_through_proc_self_fd_still_works() {
    let Some(sandbox) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let script = "echo one > /dev/stdout; echo two >> /proc/self/fd/1; \
                  exec 3> out.txt; echo three > /proc/self/fd/3; cat out.txt";
    let out = run(&sandbox, ws.path(), script, false).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "one\ntwo\nthree\n", "{out:?}");
}

/// The keyring calls by number, for the architectures the filter covers.
#[cfg(target_arch = "x86_64")]
const KEY_CALLS: &str = "ADD_KEY, REQUEST_KEY, KEYCTL = 248, 249, 250";
#[cfg(target_arch = "aarch64")]
const KEY_CALLS: &str = "ADD_KEY, REQUEST_KEY, KEYCTL = 217, 218, 219";

/// This process puts a secret in its session keyring, which every child
/// inherits; a confined command can neither read it nor reach any keyring
/// (EPERM from the seccomp layer), while the same program outside reads it.
#[tokio::test]
async fn the_keyrings_are_out_of_reach() {
    let Some(sandbox) = bwrap() else { return };
    let program = format!(
        r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
{KEY_CALLS}
SESSION, KEYCTL_READ = -3, 11
def err(r): return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
key = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if key == 0:
    key = libc.syscall(ADD_KEY, b"user", b"mecha-test-secret", b"sk-keyring-Zq8", 14, SESSION)
    print("KEY", key)
buf = ctypes.create_string_buffer(64)
n = libc.syscall(KEYCTL, KEYCTL_READ, key, buf, 64)
print("read", buf.raw[:n].decode() if n > 0 else err(n))
print("add", err(libc.syscall(ADD_KEY, b"user", b"x", b"y", 1, SESSION)))
print("request", err(libc.syscall(REQUEST_KEY, b"user", b"mecha-test-secret", None, 0)))
"#
    );
    // Outside: the key goes in, and reads back.
    let host = std::process::Command::new("python3")
        .args(["-c", &program])
        .output()
        .unwrap();
    let host_out = String::from_utf8_lossy(&host.stdout);
    let Some(key) = host_out
        .lines()
        .find_map(|l| l.strip_prefix("KEY "))
        .filter(|k| !k.starts_with('-'))
    else {
        panic!("this machine gives no session keyring to test with: {host_out}");
    };
    assert!(host_out.contains("read sk-keyring-Zq8"), "{host_out}");
    let ws = tempfile::tempdir().unwrap();
    let script = format!("python3 - {key} <<'PY'\n{program}\nPY");
    for network in [false, true] {
        let out = run(&sandbox, ws.path(), &script, network).await;
        assert!(!out.stdout.contains("sk-keyring"), "{out:?}");
        for call in ["read", "add", "request"] {
            assert!(
                out.stdout
                    .contains(&format!("{call} Operation not permitted")),
                "{call}: {out:?}"
            );
        }
    }
}
