#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use super::*;

fn spill() -> SpillDir {
    SpillDir::new(DEFAULT_SPILL_MAX_BYTES)
}

fn only_file(dir: &SpillDir) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn binary_output_stays_within_the_budget() {
    let spill = spill();
    let call = CallSpills::default();
    let mut sink = SpillingSink::new(&spill, &call, "shell", 1, 4096);
    let line: Vec<u8> = [vec![0xffu8; 99], vec![b'\n']].concat();
    sink.push(&line.repeat(500));
    let text = sink.finish();
    assert!(text.len() <= 4096, "{} bytes", text.len());
    assert!(text.contains("of 50000 bytes"), "{text}");
}

#[test]
fn small_output_passes_through_untouched() {
    let spill = spill();
    let call = CallSpills::default();
    let mut sink = SpillingSink::new(&spill, &call, "shell", 1, 4096);
    sink.push(b"hello\n");
    assert_eq!(sink.finish(), "hello\n");
    assert!(spill.jail().is_none(), "no directory was made for nothing");
    let call = CallSpills::default();
    fit_text(&"line\n".repeat(2000), &spill, &call, "fs_read", 1, 4096);
    assert_eq!(only_file(&spill).parent(), spill.jail().map(Jail::root));
}

#[test]
fn the_directory_and_its_files_are_the_users_alone() {
    let spill = spill();
    assert_eq!(mode(spill.path().unwrap()), 0o700, "spill directory");
    let call = CallSpills::default();
    let text = "private line\n".repeat(1000);
    fit_text(&text, &spill, &call, "fs_read", 1, 4096);
    let file = only_file(&spill);
    // At most 0600: a stricter umask may take more away, never add.
    assert_eq!(mode(&file) & !0o600, 0, "{:o}", mode(&file));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// Pushes `chunks` lines of 100 bytes, ten at a time, through a sink over a
/// directory whose files keep at most `max` bytes.
fn capped(max: u64, chunks: usize, budget: usize) -> (SpillDir, String, Vec<u8>) {
    let spill = SpillDir::new(max);
    let call = CallSpills::default();
    let mut sink = SpillingSink::new(&spill, &call, "shell", 1, budget);
    let mut all = Vec::new();
    for i in 0..chunks {
        let chunk: Vec<u8> = (0..10)
            .flat_map(|j| format!("{:>99}\n", i * 10 + j).into_bytes())
            .collect();
        sink.push(&chunk);
        all.extend_from_slice(&chunk);
    }
    let text = sink.finish();
    (spill, text, all)
}

#[test]
fn a_spill_file_stops_at_its_cap_and_the_marker_says_where() {
    let (spill, text, all) = capped(10_000, 100, 4096);
    let file = only_file(&spill);
    let saved = std::fs::read(&file).unwrap();
    assert_eq!(saved.len(), 10_000, "the file stops at the cap");
    assert_eq!(saved, all[..10_000], "and holds the start of the output");
    assert!(text.len() <= 4096, "{} bytes", text.len());
    assert!(
        text.contains("of 100000 bytes"),
        "still counts it all: {text}"
    );
    assert!(
        text.contains("holds only the first 10000 bytes (the spill cap); the rest was not kept"),
        "{text}"
    );
    assert!(!text.contains("full output"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
}

#[test]
fn a_cap_below_what_is_shown_promises_no_file() {
    let (_spill, text, _) = capped(100, 100, 4096);
    assert!(
        text.contains("the rest was not kept, because spill files are capped at 100 bytes"),
        "{text}"
    );
    assert!(!text.contains("mecha-spill"), "promised a path: {text}");
    assert!(!text.contains("fs_read"), "{text}");
}

#[test]
fn external_labels_follow_the_call_and_the_file_not_its_name() {
    let spill = spill();
    let big = "x\n".repeat(10_000);
    let fetched = CallSpills::default();
    fit_text(&big, &spill, &fetched, "http_fetch", 1, 4096);
    let local = CallSpills::default();
    fit_text(&big, &spill, &local, "shell", 1, 4096);
    spill.label_external(&fetched);
    let mut labelled = Vec::new();
    for entry in std::fs::read_dir(spill.path().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        let is_fetch = path.display().to_string().contains("http_fetch-");
        assert_eq!(
            spill.holds_external(&File::open(&path).unwrap()),
            is_fetch,
            "{path:?}"
        );
        if is_fetch {
            labelled.push(path);
        }
    }
    assert_eq!(labelled.len(), 1);
    // Another name for the same file is the same file.
    let alias = spill.path().unwrap().join("alias");
    std::fs::hard_link(&labelled[0], &alias).unwrap();
    assert!(spill.holds_external(&File::open(&alias).unwrap()));
}
