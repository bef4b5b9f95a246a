#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// Writes `<store>/<folder>/SKILL.md` with exactly these bytes.
pub fn skill(store: &Path, folder: &str, bytes: &[u8]) {
    let dir = store.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), bytes).unwrap();
}

/// A well-formed SKILL.md for `name`.
pub fn simple(name: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: Does {name}.\n{extra}---\n{body}\n")
}
