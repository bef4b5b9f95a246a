//! The seccomp program bwrap installs in the confined program: a second
//! layer under the namespaces, for the system calls that reach past them.
//!
//! bwrap reads a compiled BPF program from a descriptor (`--seccomp FD`)
//! and installs it itself, so no code of ours runs between fork and exec.
//! The programs are compiled once per sandbox; each call only copies the
//! bytes into a fresh memfd, because bwrap reads the descriptor to its end
//! and a shared one would be empty for the second reader.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use crate::SandboxError;

/// The two programs a sandbox hands out: one for jobs without network and
/// one for jobs with it, which also refuses AF_UNIX sockets.
#[derive(Debug)]
pub(crate) struct Filters {
    offline: Vec<u8>,
    online: Vec<u8>,
}

impl Filters {
    pub(crate) fn compile() -> Result<Self, SandboxError> {
        Ok(Self {
            offline: program(false)?,
            online: program(true)?,
        })
    }

    /// A descriptor holding the program for a job, positioned at its start.
    pub(crate) fn fd(&self, network: bool) -> Result<OwnedFd, SandboxError> {
        let bytes = if network { &self.online } else { &self.offline };
        let fail =
            |e: std::io::Error| SandboxError::Seccomp(format!("cannot hand it to bwrap: {e}"));
        let fd = rustix::fs::memfd_create("mecha-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| fail(e.into()))?;
        let mut file = File::from(fd);
        file.write_all(bytes).map_err(fail)?;
        file.rewind().map_err(fail)?;
        Ok(file.into())
    }
}

/// The program, in the byte layout bwrap expects (`struct sock_filter[]`).
fn program(network: bool) -> Result<Vec<u8>, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|_| unsupported())?;
    let filter = SeccompFilter::new(
        rules(network)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let compiled =
        BpfProgram::try_from(filter).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let mut instructions = x32_guard();
    instructions.extend(compiled);
    Ok(instructions
        .iter()
        .flat_map(|i| {
            let mut bytes = Vec::with_capacity(8);
            bytes.extend(i.code.to_ne_bytes());
            bytes.extend([i.jt, i.jf]);
            bytes.extend(i.k.to_ne_bytes());
            bytes
        })
        .collect())
}

fn unsupported() -> SandboxError {
    SandboxError::Seccomp(format!(
        "there is no filter for {}; the bwrap sandbox supports x86_64 and aarch64",
        std::env::consts::ARCH
    ))
}

/// Which calls are refused (with EPERM; everything else is allowed).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn rules(network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SandboxError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // Reading or steering another process's memory, and io_uring, whose
    // operations (sockets included) bypass the checks on the calls below.
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        // The kernel's keyrings are not namespaced by anything bwrap sets
        // up: the session keyring is inherited, so a confined command could
        // read a key the user had put there. Refused as Flatpak and Docker
        // refuse them.
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ] {
        rules.insert(call, Vec::new());
    }
    // AF_VSOCK reaches the hypervisor's host (the WSL2 interop escape).
    // With the host's network namespace shared, AF_UNIX reaches the host's
    // abstract sockets, which no mount can hide.
    let mut families = vec![libc::AF_VSOCK];
    if network {
        families.push(libc::AF_UNIX);
    }
    let socket = families
        .into_iter()
        .map(|family| arg_is(0, family as u64))
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_socket, socket);
    // Typing into a terminal (TIOCSTI) and TIOCLINUX's selection paste.
    // Dword compares the low 32 bits only, as the kernel reads the request:
    // a full 64-bit compare is what CVE-2019-10063 slipped past.
    // libc's Ioctl is c_ulong with glibc and c_int with musl.
    #[allow(clippy::unnecessary_cast)]
    let requests = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];
    let ioctl = requests
        .into_iter()
        .map(|request| arg_is(1, request))
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl);
    Ok(rules)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn rules(_network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SandboxError> {
    Err(unsupported())
}

fn arg_is(index: u8, value: u64) -> Result<SeccompRule, SandboxError> {
    let fail = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let condition = SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(u64::from(u32::MAX)),
        value,
    )
    .map_err(fail)?;
    SeccompRule::new(vec![condition]).map_err(fail)
}

/// On x86_64, the x32 ABI numbers every call with bit 30 set under the
/// same audit arch, so `ptrace` as 0x40000000 + 521 would miss every rule
/// above. seccompiler does not check for it; refuse the whole x32 range
/// before its program runs (mecha runs no x32 binaries).
fn x32_guard() -> Vec<sock_filter> {
    if !cfg!(target_arch = "x86_64") {
        return Vec::new();
    }
    const LD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0: the call number
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    const X32_BIT: u32 = 0x4000_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_NR, 0, 0, 0),
        op(JGE, 0, 1, X32_BIT),
        op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_and_differ_by_the_unix_socket_rule() {
        let filters = Filters::compile().unwrap();
        assert!(!filters.offline.is_empty());
        assert_eq!(filters.offline.len() % 8, 0);
        assert!(filters.online.len() > filters.offline.len());
    }

    #[test]
    fn each_descriptor_starts_at_the_program() {
        use std::io::Read;
        let filters = Filters::compile().unwrap();
        for _ in 0..2 {
            let mut read = Vec::new();
            File::from(filters.fd(true).unwrap())
                .read_to_end(&mut read)
                .unwrap();
            assert_eq!(read, filters.online);
        }
    }
}
