//! Locating the fixture MCP server binary from another package's tests.
//!
//! Only tests call this, and a fixture that cannot be built is a failed
//! test, so it panics with the reason rather than returning an error.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fixture MCP server binary (`mecha-fixture-mcp`), built once per
/// test process. Tests of other packages need it, and Cargo builds another
/// package's binaries only when asked, so this asks.
pub fn fixture_mcp() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // target/<profile>/deps/<this test> -> target/<profile>
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_owned();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args([
            "build",
            "--quiet",
            "-p",
            "mecha-testkit",
            "--bin",
            "mecha-fixture-mcp",
        ]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        // Cargo sets these for the test process. Passed on, they reach build
        // scripts that track them (ring's tracks CARGO_MANIFEST_DIR), and the
        // outer and inner builds would keep rebuilding each other's crates.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let per_package = [
                "CARGO_MANIFEST_",
                "CARGO_PKG_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
            ]
            .iter()
            .any(|p| key.starts_with(p))
                || [
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                ]
                .contains(&key.as_ref());
            if per_package {
                build.env_remove(key.as_ref());
            }
        }
        let status = build.status().expect("run cargo build for the fixture");
        assert!(status.success(), "building mecha-fixture-mcp failed");
        let bin = profile_dir.join("mecha-fixture-mcp");
        assert!(bin.exists(), "{} missing after build", bin.display());
        bin
    })
}
