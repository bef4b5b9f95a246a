use super::*;

fn scope(ws: &Path) -> Scope<'_> {
    Scope {
        host: ws,
        inside: Path::new("/in"),
        writable: &[],
        caller: &[],
        home: None,
        search_path: std::ffi::OsStr::new(""),
        records: None,
        listings: Box::leak(Box::default()),
    }
}

fn plan_in(ws: &Path) -> (Vec<Mount>, Lease) {
    let mut lease = Lease::default();
    let (mounts, _) = plan(&scope(ws), &mut lease).unwrap();
    (mounts, lease)
}

fn pin(rel: &str, host: &Path) -> Mount {
    Mount::Pin {
        source: host.join(rel),
        dest: Path::new("/in").join(rel),
    }
}

fn ro(rel: &str, host: &Path) -> Mount {
    Mount::ReadOnly {
        source: host.join(rel),
        dest: Path::new("/in").join(rel),
    }
}

#[test]
fn a_repository_pins_dot_git_before_its_hooks_and_config() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    fs::write(ws.join(".git/config"), "").unwrap();
    fs::write(ws.join("mecha.toml"), "").unwrap();
    let (mounts, _lease) = plan_in(ws);
    assert_eq!(
        mounts,
        [
            pin(".git", ws),
            ro("mecha.toml", ws),
            ro(".git/hooks", ws),
            ro(".git/config", ws),
            ro(".git/config.worktree", ws),
            ro(".git/commondir", ws),
            ro(".git/modules", ws),
            ro(".git/worktrees", ws),
        ]
    );
    assert!(ws.join(".git/commondir").is_file(), "masked while missing");
    assert!(ws.join(".git/modules").is_dir(), "masked while missing");
}

#[test]
fn missing_paths_get_placeholders_removed_by_the_last_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    let (first, lease) = plan_in(ws);
    assert_eq!(first, [ro(".git", ws)]);
    assert!(ws.join(".git").is_dir() && !ws.join("mecha.toml").exists());
    let (second, other) = plan_in(ws);
    assert_eq!(
        second, first,
        "a placeholder is protected like the real thing"
    );
    drop(lease);
    assert!(ws.join(".git").is_dir(), "still held by the second job");
    drop(other);
    assert_eq!(fs::read_dir(ws).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn a_placeholder_is_not_taken_for_a_repository_the_job_made() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let records = tmp.path().join("records");
    let mut lease = Lease::default();
    let scope = Scope {
        records: Some(&records),
        ..scope(&ws)
    };
    let (mounts, baseline) = plan(&scope, &mut lease).unwrap();
    assert_eq!(mounts, [ro(".git", &ws)]);
    assert!(baseline.sweep().is_empty());
    // Written down, it would be one more line per shell call, each read
    // back by every later sweep.
    assert!(
        !records.join("made-repositories").exists(),
        "the placeholder was written down as made"
    );
}

#[test]
fn a_placeholder_someone_filled_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir(ws.join(".git")).unwrap();
    let (_, lease) = plan_in(ws);
    fs::write(ws.join(".git/hooks/keep"), "x").unwrap();
    fs::write(ws.join("mecha.toml"), "[agent]").unwrap();
    drop(lease);
    assert!(ws.join(".git/hooks/keep").is_file());
    assert!(ws.join("mecha.toml").is_file());
    for gone in [
        ".git/config",
        ".git/config.worktree",
        ".git/commondir",
        ".git/modules",
        ".git/worktrees",
    ] {
        assert!(!ws.join(gone).exists(), "the empty {gone} is removed");
    }
}

#[test]
fn a_symlinked_protected_component_is_refused() {
    for link in [".git", "mecha.toml"] {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        std::os::unix::fs::symlink("/tmp", ws.join(link)).unwrap();
        let err = plan(&scope(ws), &mut Lease::default()).unwrap_err();
        assert_eq!(
            err,
            SandboxError::ProtectedSymlink {
                path: ws.join(link)
            }
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir(ws.join(".git")).unwrap();
    std::os::unix::fs::symlink("/tmp", ws.join(".git/hooks")).unwrap();
    let err = plan(&scope(ws), &mut Lease::default()).unwrap_err();
    assert!(err.to_string().contains(".git/hooks"), "{err}");
}

#[test]
fn a_worktree_binds_its_gitdir_and_common_dir_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    let gitdir = main.join(".git/worktrees/wt");
    fs::create_dir_all(&gitdir).unwrap();
    fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    let ws = tmp.path().join("wt");
    fs::create_dir(&ws).unwrap();
    fs::write(ws.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
    let mut lease = Lease::default();
    let scope = Scope {
        inside: &ws,
        ..scope(&ws)
    };
    let (mounts, _) = plan(&scope, &mut lease).unwrap();
    let same = |p: PathBuf| Mount::ReadOnly {
        source: p.clone(),
        dest: p,
    };
    assert_eq!(
        mounts,
        [same(ws.join(".git")), same(main.join(".git")), same(gitdir)]
    );
}

#[test]
fn normalize_resolves_dots_lexically() {
    assert_eq!(normalize(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
}

#[test]
fn a_nested_repository_and_what_its_config_points_at_are_protected() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
    fs::write(
        ws.join(".git/config"),
        "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../shared.gitconfig\n",
    )
    .unwrap();
    let (mounts, _lease) = plan_in(ws);
    for expected in [
        pin("vendor", ws),
        pin("vendor/lib", ws),
        pin("vendor/lib/.git", ws),
        ro("vendor/lib/.git/hooks", ws),
        ro("vendor/lib/.git/config", ws),
        ro(".husky", ws),
        ro("shared.gitconfig", ws),
    ] {
        assert!(
            mounts.contains(&expected),
            "{expected:?} not in {mounts:#?}"
        );
    }
    let first_ro = mounts
        .iter()
        .position(|m| matches!(m, Mount::ReadOnly { .. }))
        .unwrap();
    assert!(
        mounts[first_ro..]
            .iter()
            .all(|m| matches!(m, Mount::ReadOnly { .. })),
        "every pin comes before the read-only mounts: {mounts:#?}"
    );
    assert!(ws.join(".husky").is_dir() && ws.join("shared.gitconfig").is_file());
}

#[test]
fn the_callers_paths_are_read_only_with_every_directory_above_pinned() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir_all(ws.join("tools/mcp")).unwrap();
    fs::write(ws.join("tools/mcp/server.js"), "").unwrap();
    let caller = [ws.join("tools/mcp/server.js"), ws.join("absent")];
    let scope = Scope {
        caller: &caller,
        ..scope(ws)
    };
    let (mounts, _) = plan(&scope, &mut Lease::default()).unwrap();
    let at = |m: &Mount| mounts.iter().position(|x| x == m).unwrap();
    let file = ro("tools/mcp/server.js", ws);
    assert!(at(&pin("tools", ws)) < at(&pin("tools/mcp", ws)));
    assert!(at(&pin("tools/mcp", ws)) < at(&file));
    assert!(
        !ws.join("absent").exists(),
        "a caller's path gets no placeholder"
    );
}

#[test]
fn a_home_workspace_keeps_the_start_up_files_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    fs::write(home.join(".bashrc"), "real").unwrap();
    fs::create_dir(home.join("dotfiles")).unwrap();
    fs::write(home.join("dotfiles/zshrc"), "").unwrap();
    std::os::unix::fs::symlink("dotfiles/zshrc", home.join(".zshrc")).unwrap();
    let scope = Scope {
        home: Some(home),
        ..scope(home)
    };
    let mut lease = Lease::default();
    let (mounts, _) = plan(&scope, &mut lease).unwrap();
    for expected in [
        ro(".bashrc", home),
        ro(".profile", home),
        ro(".ssh", home),
        ro(".config", home),
        ro("dotfiles/zshrc", home),
        ro(".cargo", home),
    ] {
        assert!(
            mounts.contains(&expected),
            "{expected:?} not in {mounts:#?}"
        );
    }
    let profile = fs::read_to_string(home.join(".bash_profile")).unwrap();
    assert!(
        profile.contains(".profile"),
        "absence is mimicked: {profile}"
    );
    drop(lease);
    for gone in [".profile", ".bash_profile", ".ssh", ".config", ".cargo"] {
        assert!(!home.join(gone).exists(), "{gone} is left behind");
    }
    assert_eq!(fs::read_to_string(home.join(".bashrc")).unwrap(), "real");
}

#[test]
fn the_walk_finds_what_git_would_below_and_beside_bare_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    let bare = |dir: &Path| {
        fs::create_dir_all(dir.join("objects/ab")).unwrap();
        fs::create_dir_all(dir.join("refs")).unwrap();
        fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    };
    bare(&ws.join("a"));
    fs::create_dir_all(ws.join("a/b/.git")).unwrap();
    // The fan-out of an object store is not entered; the rest of it is.
    fs::create_dir_all(ws.join("a/objects/ab/c/.git")).unwrap();
    fs::create_dir_all(ws.join("a/objects/lib/.git")).unwrap();
    // A symlinked HEAD, and objects and refs through symlinks.
    fs::create_dir_all(ws.join("store/objects")).unwrap();
    fs::create_dir_all(ws.join("store/refs")).unwrap();
    fs::create_dir(ws.join("linked")).unwrap();
    std::os::unix::fs::symlink("refs/heads/main", ws.join("linked/HEAD")).unwrap();
    std::os::unix::fs::symlink("../store/objects", ws.join("linked/objects")).unwrap();
    std::os::unix::fs::symlink("../store/refs", ws.join("linked/refs")).unwrap();
    // objects and refs in the directory commondir names.
    fs::create_dir(ws.join("shared")).unwrap();
    fs::write(ws.join("shared/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(ws.join("shared/commondir"), "../store\n").unwrap();
    // A HEAD alone is no git directory, nor is a HEAD directory.
    fs::create_dir_all(ws.join("plain/HEAD")).unwrap();
    fs::create_dir_all(ws.join("plain/objects")).unwrap();
    fs::create_dir_all(ws.join("plain/refs")).unwrap();
    fs::create_dir(ws.join("tools")).unwrap();
    std::os::unix::fs::symlink("../a", ws.join("tools/.git")).unwrap();
    let mut found = find(ws, &Listings::default());
    found.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    assert_eq!(
        found,
        [
            Found::Dir(ws.join("a")),
            Found::Dir(ws.join("a/b/.git")),
            Found::Dir(ws.join("a/objects/lib/.git")),
            Found::Dir(ws.join("linked")),
            Found::Dir(ws.join("shared")),
            Found::Link(ws.join("tools/.git")),
        ]
    );
}

#[test]
fn a_directory_on_path_that_is_a_writable_root_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    fs::create_dir(ws.join("bin")).unwrap();
    let path = std::env::join_paths([ws.join("bin"), "/usr/bin".into()]).unwrap();
    let on_path = Scope {
        search_path: &path,
        ..scope(ws)
    };
    let (mounts, _) = plan(&on_path, &mut Lease::default()).unwrap();
    assert!(mounts.contains(&ro("bin", ws)), "{mounts:#?}");
    let path = std::env::join_paths([ws, Path::new("/usr/bin")]).unwrap();
    let root_on_path = Scope {
        search_path: &path,
        ..scope(ws)
    };
    let err = plan(&root_on_path, &mut Lease::default()).unwrap_err();
    assert_eq!(
        err,
        SandboxError::WritableOnPath {
            path: ws.to_path_buf()
        }
    );
}
