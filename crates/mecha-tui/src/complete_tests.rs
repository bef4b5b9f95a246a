use super::*;

fn completion(ws: &Path) -> Completion {
    let commands = ["/help", "/mode", "/model", "/quit"].map(str::to_owned);
    Completion::new(commands.to_vec(), ws)
}

fn typed(text: &str) -> Editor {
    let mut editor = Editor::new();
    editor.paste(text);
    editor
}

#[test]
fn a_command_completes_at_the_start_of_the_prompt_only() {
    let ws = tempfile::tempdir().unwrap();
    let c = completion(ws.path());
    let mut e = typed("/he");
    assert_eq!(c.complete(&mut e), None);
    assert_eq!(e.text(), "/help ");
    let mut e = typed("/mo");
    assert_eq!(c.complete(&mut e).as_deref(), Some("/mode  /model"));
    assert_eq!(e.text(), "/mode", "the shared part is filled in");
    let mut e = typed("see /he");
    assert_eq!(c.complete(&mut e), None);
    assert_eq!(e.text(), "see /he");
    let mut e = typed("/zz");
    assert!(c.complete(&mut e).unwrap().contains("nothing"));
}

#[test]
fn a_path_completes_from_the_workspace_and_never_from_outside_it() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/main.rs"), "").unwrap();
    std::fs::write(ws.path().join("notes.txt"), "").unwrap();
    std::fs::write(ws.path().join(".hidden"), "").unwrap();
    std::os::unix::fs::symlink("/etc", ws.path().join("etc-link")).unwrap();
    let c = completion(ws.path());
    let mut e = typed("read @no");
    assert_eq!(c.complete(&mut e), None);
    assert_eq!(e.text(), "read @notes.txt ");
    let mut e = typed("@s");
    c.complete(&mut e);
    assert_eq!(e.text(), "@src/");
    c.complete(&mut e);
    assert_eq!(e.text(), "@src/main.rs ");
    let mut e = typed("@");
    assert_eq!(
        c.complete(&mut e).as_deref(),
        Some("@etc-link  @notes.txt  @src/")
    );
    for outside in ["@../", "@/etc/", "@src/../../", "@etc-link/"] {
        let mut e = typed(outside);
        assert!(
            c.complete(&mut e).unwrap().contains("nothing"),
            "{outside} offered something"
        );
        assert_eq!(e.text(), outside);
    }
}
