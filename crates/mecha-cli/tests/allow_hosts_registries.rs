//! The point of `[sandbox] allow_hosts`: a confined build fetches its
//! dependencies from the registries the config lists, and nothing else.
//! `npm install` and `cargo fetch` run through the real binary and the
//! real bwrap against registry stand-ins inside a private network
//! namespace, reached by name as listed hosts through mecha's proxy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::netns::{Netns, PUBLIC};
use serde_json::{Value, json};

const HOSTS: &[(&str, &str)] = &[
    (PUBLIC, "npm.test.example"),
    (PUBLIC, "crates.test.example"),
];

fn shell(command: &str) -> Value {
    json!({"name": "shell", "input": {"command": command, "timeout_s": 120}})
}

/// `dir`'s contents as a gzipped tarball whose top folder is `top`.
fn tarball(dir: &Path, top: &str) -> Vec<u8> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new("tar")
        .arg("czf")
        .arg(out.path())
        .arg("-C")
        .arg(dir)
        .arg(top)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(out.path()).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let out = Command::new("sha256sum").arg(file.path()).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// A registry stand-in: each path's body, 404 for any other. Returns the
/// paths it was asked for.
fn files_server(ns: &Netns, files: HashMap<String, Vec<u8>>) -> Arc<Mutex<Vec<String>>> {
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    ns.serve_with(&format!("{PUBLIC}:80"), move |line| {
        let path = line.split(' ').nth(1).unwrap_or_default().to_string();
        log.lock().unwrap().push(path.clone());
        match files.get(&path) {
            Some(body) => (200, body.clone()),
            None => (404, b"not here\n".to_vec()),
        }
    });
    asked
}

fn fetched(asked: &Mutex<Vec<String>>, path: &str) -> bool {
    asked.lock().unwrap().iter().any(|p| p == path)
}

fn have_tools(programs: &[(&str, &str)]) -> bool {
    programs
        .iter()
        .all(|(program, package)| common::have(program, "the registry tests", package))
}

#[test]
fn npm_install_fetches_a_package_from_a_listed_registry() {
    if !have_tools(&[
        ("bwrap", "bubblewrap (apt-get install bubblewrap)"),
        ("npm", "npm (apt-get install npm)"),
    ]) {
        return;
    }
    let Some(ns) = Netns::create("npm", HOSTS) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    let package = src.path().join("package");
    std::fs::create_dir(&package).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name":"mecha-pad","version":"1.0.0","main":"index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        package.join("index.js"),
        "module.exports = 'padded by mecha';\n",
    )
    .unwrap();
    let tgz = tarball(src.path(), "package");
    let metadata = json!({
        "name": "mecha-pad",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {
            "name": "mecha-pad",
            "version": "1.0.0",
            "dist": {"tarball": "http://npm.test.example/mecha-pad/-/mecha-pad-1.0.0.tgz"}
        }}
    });
    let asked = files_server(
        &ns,
        HashMap::from([
            ("/mecha-pad".to_string(), metadata.to_string().into_bytes()),
            ("/mecha-pad/-/mecha-pad-1.0.0.tgz".to_string(), tgz),
        ]),
    );
    let e = common::env();
    std::fs::write(
        e.ws.join("package.json"),
        r#"{"name":"app","version":"1.0.0","dependencies":{"mecha-pad":"1.0.0"}}"#,
    )
    .unwrap();
    std::fs::write(e.ws.join(".npmrc"), "registry=http://npm.test.example/\n").unwrap();
    let calls = [shell(
        "HOME=/tmp npm_config_cache=/tmp/npm-cache npm install --no-audit --no-fund \
         --no-update-notifier 2>&1; node -e \"console.log(require('mecha-pad'))\"",
    )];
    let config = "[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"npm.test.example\"]\n";
    let (out, session) = ns.run_mecha(&e, &calls, config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(session.contains("padded by mecha"), "{session}");
    assert!(
        e.ws.join("node_modules/mecha-pad/index.js").is_file(),
        "{session}"
    );
    assert!(
        session.contains("mecha's sandbox proxy let through: npm.test.example:80"),
        "{session}"
    );
    assert!(
        fetched(&asked, "/mecha-pad/-/mecha-pad-1.0.0.tgz"),
        "{asked:?}"
    );
}

/// The toolchain folder the test's own cargo comes from, and that cargo.
fn toolchain() -> (PathBuf, PathBuf) {
    let cargo = PathBuf::from(std::env::var("CARGO").unwrap());
    let cargo = cargo.canonicalize().unwrap_or(cargo);
    let root = cargo.parent().unwrap().parent().unwrap().to_path_buf();
    (root, cargo)
}

#[test]
fn cargo_fetch_downloads_a_crate_from_a_listed_mirror() {
    if !have_tools(&[("bwrap", "bubblewrap (apt-get install bubblewrap)")]) {
        return;
    }
    let Some(ns) = Netns::create("cargo", HOSTS) else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    let top = src.path().join("mecha-demo-0.1.0");
    std::fs::create_dir_all(top.join("src")).unwrap();
    std::fs::write(
        top.join("Cargo.toml"),
        "[package]\nname = \"mecha-demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(top.join("src/lib.rs"), "pub fn demo() {}\n").unwrap();
    let crate_file = tarball(src.path(), "mecha-demo-0.1.0");
    let entry = json!({
        "name": "mecha-demo", "vers": "0.1.0", "deps": [], "features": {},
        "cksum": sha256_hex(&crate_file), "yanked": false
    });
    let asked = files_server(
        &ns,
        HashMap::from([
            (
                "/index/config.json".to_string(),
                br#"{"dl":"http://crates.test.example/dl"}"#.to_vec(),
            ),
            (
                "/index/me/ch/mecha-demo".to_string(),
                format!("{entry}\n").into_bytes(),
            ),
            ("/dl/mecha-demo/0.1.0/download".to_string(), crate_file),
        ]),
    );
    let e = common::env();
    std::fs::create_dir_all(e.ws.join("src")).unwrap();
    std::fs::create_dir_all(e.ws.join(".cargo")).unwrap();
    std::fs::write(
        e.ws.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nmecha-demo = \"0.1\"\n",
    )
    .unwrap();
    std::fs::write(e.ws.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        e.ws.join(".cargo/config.toml"),
        "[source.crates-io]\nreplace-with = \"mirror\"\n\n\
         [source.mirror]\nregistry = \"sparse+http://crates.test.example/index/\"\n",
    )
    .unwrap();
    let (root, cargo) = toolchain();
    let calls = [shell(&format!(
        "PATH={}/bin:$PATH CARGO_HOME=$PWD/.cargo-home {} fetch 2>&1; \
         ls .cargo-home/registry/cache/*/",
        root.display(),
        cargo.display()
    ))];
    let config = format!(
        "[sandbox]\nkind = \"bwrap\"\nreadable = [{:?}]\n\
         allow_hosts = [\"crates.test.example\"]\n",
        root.display().to_string()
    );
    let (out, session) = ns.run_mecha(&e, &calls, &config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(session.contains("mecha-demo-0.1.0.crate"), "{session}");
    assert!(
        session.contains("mecha's sandbox proxy let through: crates.test.example:80"),
        "{session}"
    );
    assert!(
        fetched(&asked, "/dl/mecha-demo/0.1.0/download"),
        "{asked:?}"
    );
    let lock = std::fs::read_to_string(e.ws.join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"mecha-demo\""), "{lock}");
}
