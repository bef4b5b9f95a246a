//! Loading SKILL.md files from disk: what real-world files look like, what
//! is refused and how, the lenient fallback, and hostile YAML.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{simple, skill};
use mecha_skills::{LoadFailure, Store, level1_block};

fn load_one(folder: &str, bytes: &[u8]) -> Store {
    let store = tempfile::tempdir().unwrap();
    skill(store.path(), folder, bytes);
    Store::load(store.path())
}

fn loaded(folder: &str, bytes: &[u8]) -> mecha_skills::Skill {
    let store = load_one(folder, bytes);
    assert!(store.failures.is_empty(), "{:?}", store.failures);
    assert_eq!(store.skills.len(), 1);
    store.skills.into_iter().next().unwrap()
}

fn refused(folder: &str, bytes: &[u8]) -> LoadFailure {
    let store = load_one(folder, bytes);
    assert!(store.skills.is_empty(), "{:?}", store.skills);
    store
        .failures
        .into_iter()
        .next()
        .expect("no failure reported")
}

#[test]
fn the_spec_example_loads_with_its_triggers() {
    let s = loaded(
        "rec-letter",
        b"---\nname: rec-letter\ndescription: How to handle a request for a recommendation letter. Use whenever\n  someone asks for a letter, a reference, or an endorsement.\ntriggers: [letter, reference, recommendation]\n---\n\n# Answering a letter request\n\n1. Check.\n",
    );
    assert_eq!(s.dir_name, "rec-letter");
    assert_eq!(
        s.description,
        "How to handle a request for a recommendation letter. Use whenever someone asks for a \
         letter, a reference, or an endorsement."
    );
    assert_eq!(s.triggers, ["letter", "reference", "recommendation"]);
    assert_eq!(s.tools, None);
    assert_eq!(s.body, "# Answering a letter request\n\n1. Check.");
    assert!(s.dir.is_absolute());
}

#[test]
fn block_scalars_load() {
    let s = loaded(
        "a",
        b"---\nname: a\ndescription: |-\n  line one\n  line two\n---\nb\n",
    );
    assert_eq!(s.description, "line one\nline two");
    let s = loaded(
        "a",
        b"---\nname: a\ndescription: >\n  folded\n  text\n---\nb\n",
    );
    assert_eq!(s.description, "folded text\n");
}

#[test]
fn quoted_strings_with_escapes_load() {
    let s = loaded(
        "a",
        b"---\nname: \"a\"\ndescription: \"Use when: \\\"x\\\"\\ttab \\u00e9\"\n---\nb\n",
    );
    assert_eq!(s.description, "Use when: \"x\"\ttab \u{e9}");
}

#[test]
fn crlf_bom_trailing_whitespace_and_non_ascii_load() {
    let s = loaded(
        "a",
        "\u{feff}---  \r\nname: a   \r\ndescription: Écrire — une lettre 信 \t\r\ntriggers: [lettre]  \r\n---\r\n# Corps\r\n"
            .as_bytes(),
    );
    assert_eq!(s.description, "Écrire — une lettre 信");
    assert_eq!(s.triggers, ["lettre"]);
    assert_eq!(s.body, "# Corps");
}

#[test]
fn a_description_over_1024_characters_loads_with_a_warning() {
    let long = "x".repeat(2000);
    let store = load_one(
        "a",
        format!("---\nname: a\ndescription: {long}\n---\nb\n").as_bytes(),
    );
    assert_eq!(store.skills[0].description, long);
    assert!(
        store.warnings.iter().any(|w| w.contains("2000 characters")),
        "{:?}",
        store.warnings
    );
}

#[test]
fn the_standards_keys_and_unknown_keys_are_accepted() {
    let s = loaded(
        "a",
        b"---\nname: a\ndescription: d\nlicense: Proprietary. LICENSE.txt has complete terms\ncompatibility: needs git\nmetadata:\n  author: me\n  version: \"1.0\"\nallowed-tools: Bash(git:*) Read\nwhen_to_use: later\ncontext: fork\n---\nb\n",
    );
    assert_eq!(s.name, "a");
}

#[test]
fn bundled_folders_binaries_and_executables_beside_skill_md_load() {
    let store = tempfile::tempdir().unwrap();
    skill(store.path(), "a", simple("a", "", "body").as_bytes());
    let dir = store.path().join("a");
    for sub in ["scripts", "reference", "examples", "core", "weird name"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("f.md"), "text").unwrap();
    }
    std::fs::write(dir.join("font.ttf"), [0u8, 1, 2, 0, 255]).unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let loaded = Store::load(store.path());
    assert!(loaded.failures.is_empty(), "{:?}", loaded.failures);
    assert_eq!(loaded.skills.len(), 1);
}

#[test]
fn tools_narrowing_is_read() {
    let s = loaded(
        "a",
        simple("a", "tools:\n  - fs_read\n  - fs_list\n", "b").as_bytes(),
    );
    assert_eq!(
        s.tools,
        Some(vec!["fs_read".to_owned(), "fs_list".to_owned()])
    );
}

#[test]
fn a_name_that_differs_from_its_folder_is_refused_with_the_spec_message() {
    let f = refused("broken", simple("mismatch", "", "b").as_bytes());
    assert_eq!(
        f.to_string(),
        "skill `broken` did not load — frontmatter says `name = mismatch` but the directory is \
         `broken` — they have to match"
    );
}

#[test]
fn a_description_that_is_a_list_is_refused() {
    let f = refused(
        "a",
        b"---\nname: a\ndescription:\n  - one\n  - two\n---\nb\n",
    );
    assert_eq!(
        f.reason,
        "`description` is a list, but it has to be one string — write it as sentences (a `>` \
         block folds several lines into one)"
    );
}

#[test]
fn an_empty_tools_is_refused() {
    for tools in ["tools: []\n", "tools:\n"] {
        let f = refused("a", simple("a", tools, "b").as_bytes());
        assert_eq!(
            f.reason,
            "`tools` is empty, which would leave the procedure no tools — list the tools it \
             needs, or remove the key for no narrowing",
            "{tools:?}"
        );
    }
}

#[test]
fn tools_that_are_not_a_list_are_refused() {
    let f = refused("a", simple("a", "tools: {fs_read: yes}\n", "b").as_bytes());
    assert_eq!(
        f.reason,
        "`tools` is a mapping, but it has to be a list of names — write `tools: [a, b]`"
    );
}

#[test]
fn no_frontmatter_is_refused() {
    let f = refused("a", b"# Just markdown\n\nname: a\n");
    assert!(f.reason.starts_with("SKILL.md has no frontmatter"), "{f}");
    let f = refused("a", b"---\nname: a\ndescription: d\n");
    assert!(f.reason.contains("never closed"), "{f}");
}

#[test]
fn missing_name_or_description_is_refused() {
    let f = refused("a", b"---\ndescription: d\n---\nb\n");
    assert_eq!(
        f.reason,
        "the frontmatter has no `name` — add `name: a` (the folder's name)"
    );
    let f = refused("a", b"---\nname: a\ndescription: \"\"\n---\nb\n");
    assert!(
        f.reason.starts_with("the frontmatter has no `description`"),
        "{f}"
    );
}

#[test]
fn unreadable_frontmatter_is_refused_with_the_line() {
    let f = refused("a", b"---\n- name: a\n- [unclosed\n---\nb\n");
    assert!(
        f.reason
            .starts_with("the frontmatter is not YAML mecha can read (line "),
        "{f}"
    );
}

#[test]
fn a_folder_without_skill_md_is_a_failure_and_hidden_entries_are_not_skills() {
    let store = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(store.path().join("empty")).unwrap();
    std::fs::create_dir_all(store.path().join(".git")).unwrap();
    std::fs::write(store.path().join("notes.md"), "x").unwrap();
    let loaded = Store::load(store.path());
    assert_eq!(loaded.failures.len(), 1, "{:?}", loaded.failures);
    assert_eq!(loaded.failures[0].dir_name, "empty");
    assert!(loaded.failures[0].reason.contains("no SKILL.md"));
}

#[test]
fn a_missing_store_is_empty() {
    let store = tempfile::tempdir().unwrap();
    let loaded = Store::load(&store.path().join("nope"));
    assert!(loaded.skills.is_empty() && loaded.failures.is_empty() && loaded.warnings.is_empty());
}

#[test]
fn a_symlinked_skill_loads_and_one_that_leads_nowhere_is_a_failure() {
    let root = tempfile::tempdir().unwrap();
    let (store, elsewhere) = (root.path().join("store"), root.path().join("repo"));
    std::fs::create_dir_all(&store).unwrap();
    skill(&elsewhere, "linked", simple("linked", "", "Go.").as_bytes());
    std::os::unix::fs::symlink(elsewhere.join("linked"), store.join("linked")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("moved"), store.join("moved")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("linked/SKILL.md"), store.join("file")).unwrap();
    let loaded = Store::load(&store);
    assert_eq!(loaded.skills.len(), 1, "{:?}", loaded.failures);
    assert_eq!(loaded.skills[0].name, "linked");
    assert_eq!(loaded.failures.len(), 1, "{:?}", loaded.failures);
    assert_eq!(loaded.failures[0].dir_name, "moved");
    assert!(
        loaded.failures[0]
            .reason
            .contains("a symlink to something that does not exist"),
        "{}",
        loaded.failures[0]
    );
    assert!(loaded.unreadable.is_none());
}

#[test]
fn a_store_that_cannot_be_read_says_so_rather_than_holding_nothing() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("skills");
    std::fs::write(&file, "not a folder").unwrap();
    let dangling = root.path().join("dangling");
    std::os::unix::fs::symlink(root.path().join("gone"), &dangling).unwrap();
    for (store, said) in [
        (file, "Not a directory"),
        (dangling, "a symlink to something that does not exist"),
    ] {
        let loaded = Store::load(&store);
        let why = loaded
            .unreadable
            .expect("an unreadable store passed for an empty one");
        assert!(why.contains(said) && why.contains("[skills] dir"), "{why}");
    }
}

#[test]
fn an_unquoted_colon_loads_leniently_with_a_warning_naming_the_line() {
    let store = tempfile::tempdir().unwrap();
    skill(
        store.path(),
        "pdf",
        b"---\nname: pdf\ndescription: Use when: (1) filling forms, (2) merging\ntriggers: [pdf]\n---\nbody\n",
    );
    let loaded = Store::load(store.path());
    assert!(loaded.failures.is_empty(), "{:?}", loaded.failures);
    let s = &loaded.skills[0];
    assert_eq!(s.description, "Use when: (1) filling forms, (2) merging");
    assert_eq!(s.triggers, ["pdf"]);
    let file = store.path().join("pdf/SKILL.md");
    assert_eq!(
        loaded.warnings,
        [format!(
            "{}: line 3: the value of `description` is not valid YAML (most often an unquoted \
             `: ` inside it); mecha read it as plain text — put the value in quotes so every \
             parser reads it the same way",
            file.display()
        )]
    );
}

#[test]
fn a_lenient_read_still_refuses_a_mismatched_name() {
    let f = refused("a", b"---\nname: b\ndescription: Use when: x\n---\nbody\n");
    assert!(f.reason.contains("`name = b`"), "{f}");
}

/// Nine levels of nine-fold aliases in a few hundred bytes: expanded, a
/// billion nodes. Refused by the budget, quickly.
#[test]
fn an_alias_bomb_is_refused_fast() {
    let mut yaml = String::from("---\nname: a\ndescription: d\nl0: &l0 [x,x,x,x,x,x,x,x,x]\n");
    for i in 1..9 {
        let p = format!("*l{}", i - 1);
        yaml.push_str(&format!(
            "l{i}: &l{i} [{p},{p},{p},{p},{p},{p},{p},{p},{p}]\n"
        ));
    }
    yaml.push_str("---\nbody\n");
    assert!(yaml.len() < 600, "{} bytes", yaml.len());
    let started = Instant::now();
    let f = refused("a", yaml.as_bytes());
    let took = started.elapsed();
    assert!(f.reason.contains("alias bomb"), "{f}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn the_level1_block_is_sorted_and_byte_stable_across_creation_orders() {
    let names = ["zeta", "alpha", "mid", "beta"];
    let make = |order: &[&str]| {
        let store = tempfile::tempdir().unwrap();
        for name in order {
            skill(
                store.path(),
                name,
                simple(name, "triggers: [one, two]\n", "body").as_bytes(),
            );
        }
        let loaded = Store::load(store.path());
        (level1_block(&loaded.skills), store)
    };
    let (a, sa) = make(&names);
    let folders: Vec<String> = Store::load(sa.path())
        .skills
        .into_iter()
        .map(|s| s.dir_name)
        .collect();
    assert_eq!(folders, ["alpha", "beta", "mid", "zeta"]);
    let mut reversed = names;
    reversed.reverse();
    let (b, _sb) = make(&reversed);
    assert_eq!(a, b);
    let entries: Vec<&str> = a.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        entries,
        [
            "- alpha: Does alpha. (cues: one, two)",
            "- beta: Does beta. (cues: one, two)",
            "- mid: Does mid. (cues: one, two)",
            "- zeta: Does zeta. (cues: one, two)",
        ]
    );
    assert!(a.contains("call the `skill` tool with its name"), "{a}");
    assert!(!a.contains('/'), "a path leaked into the block: {a}");
    assert_eq!(level1_block(&[]), "");
}

#[test]
fn a_large_store_loads_in_folder_order_with_each_failure_and_warning_in_place() {
    let store = tempfile::tempdir().unwrap();
    for i in 0..300 {
        let name = format!("s{i:03}");
        let text = match i % 50 {
            7 => "---\nname: wrong\ndescription: d\n---\nbody\n".to_owned(),
            9 => format!("---\nname: {name}\ndescription: a: b\n---\nbody\n"),
            _ => simple(&name, "", "body"),
        };
        skill(store.path(), &name, text.as_bytes());
    }
    let loaded = Store::load(store.path());
    let names: Vec<&str> = loaded.skills.iter().map(|s| s.dir_name.as_str()).collect();
    let expected: Vec<String> = (0..300)
        .filter(|i| i % 50 != 7)
        .map(|i| format!("s{i:03}"))
        .collect();
    assert_eq!(names, expected);
    let failed: Vec<&str> = loaded
        .failures
        .iter()
        .map(|f| f.dir_name.as_str())
        .collect();
    assert_eq!(failed, ["s007", "s057", "s107", "s157", "s207", "s257"]);
    let warned: Vec<bool> = ["s009", "s059", "s109", "s159", "s209", "s259"]
        .iter()
        .zip(&loaded.warnings)
        .map(|(name, warning)| warning.contains(&format!("{name}/SKILL.md")))
        .collect();
    assert_eq!(warned, [true; 6], "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings.len(), 6);
}
