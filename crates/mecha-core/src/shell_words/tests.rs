//! Unit tests of `shell_words` (kept beside the rules that rely on it).

use super::*;

fn words(line: &str) -> Vec<Vec<String>> {
    split_commands(line).into_iter().map(|c| c.words).collect()
}

fn opaque(line: &str) -> bool {
    split_commands(line).iter().any(|c| c.opaque)
}

#[test]
fn splits_on_every_operator() {
    assert_eq!(
        words("a 1 && b 2 || c; d | e & f\ng |& h"),
        vec![
            vec!["a", "1"],
            vec!["b", "2"],
            vec!["c"],
            vec!["d"],
            vec!["e"],
            vec!["f"],
            vec!["g"],
            vec!["h"]
        ]
    );
}

#[test]
fn quotes_hide_operators() {
    assert_eq!(
        words("echo 'a && b' \"c; d\""),
        vec![vec!["echo", "a && b", "c; d"]]
    );
}

#[test]
fn ansi_c_quotes_are_words_and_their_escaped_quote_does_not_end_them() {
    let parts = split_commands("git status $'\\'' ; echo PWNED > pwned.txt");
    let w: Vec<_> = parts.iter().map(|c| c.words.join(" ")).collect();
    assert_eq!(w, vec!["git status '", "echo PWNED"]);
    assert!(!parts[0].opaque);
    assert_eq!(
        words("echo $'a\\tb' $\"c d\""),
        vec![vec!["echo", "a\tb", "c d"]]
    );
    // Any character can be spelt in octal or hex: not modelled.
    assert!(opaque("$'\\x67'it status"));
}

#[test]
fn backslashes_in_double_quotes_are_kept_unless_they_escape() {
    assert_eq!(
        words(r#"echo "a\b" "\$x" "\"" "\\""#),
        vec![vec!["echo", "a\\b", "$x", "\"", "\\"]]
    );
}

#[test]
fn what_is_not_modelled_is_opaque() {
    for line in [
        "cat <<EOF\nx\nEOF",
        "cat <<-EOF\nx\nEOF",
        "cat <<< x",
        "echo 'unterminated",
        "echo \"unterminated",
        "echo $'unterminated",
        "echo $(unterminated",
        "echo `unterminated",
        "echo ${x:-'a'}",
        "echo ${x:-${y}}",
        "echo ${!x}",
        "echo $((1 + 2))",
        "echo $[1 + 2]",
        "((x = 1))",
        "! git status",
        "git status !x",
        "if git status; then ls; fi",
        "{ git status; }",
        "for x in a; do ls; done",
        "while ls; do ls; done",
        "case x in x) ls;; esac",
        "function f { ls; }",
        "f() { ls; }",
        "time ls",
        "[[ -n x ]]",
        "coproc ls",
        "echo \"a\\\nb\"",
        "echo a\\\nb",
        "echo a\0b",
        "echo a\rb",
        "echo a\u{1b}b",
        "echo a)",
        "echo x >",
        "echo x >#y",
        "echo x\\",
        "x=(a b)",
    ] {
        assert!(opaque(line), "{line:?}");
    }
    for line in [
        "git status",
        "git status --short 'a b' \"c\" $'d' $\"e\" \\f",
        "echo $HOME ${HOME} ${x:-y} $1 $@",
        "ls *.rs a?b [ab] {a,b}",
        "git status # a comment with 'quotes",
        "git status \\\n  --short",
        "(git status) && (ls)",
        "echo $(ls) `ls` <(ls)",
        "echo x > out 2>&1",
        "echo a#b",
        "echo \"don't!\"",
    ] {
        assert!(!opaque(line), "{line:?}");
    }
}

#[test]
fn reserved_words_are_dropped_so_the_command_after_them_is_seen() {
    let w = words("if git push; then x; fi; { git push; }; ! git push; f() { git push; }");
    assert_eq!(
        w.iter().filter(|c| *c == &["git", "push"]).count(),
        4,
        "{w:?}"
    );
}

#[test]
fn expanding_words_are_marked() {
    let parts = split_commands("a 'b' $c \"$d\" *.rs {x,y} $(e) `f` \"g\" ~");
    assert_eq!(
        parts[0].expands,
        vec![
            false, false, true, true, true, true, true, true, false, true
        ]
    );
}

#[test]
fn substitutions_are_commands_too() {
    let parts = split_commands("echo $(curl evil) `rm -rf x` \"$(id)\"");
    let w: Vec<_> = parts.iter().map(|c| c.words.join(" ")).collect();
    assert_eq!(
        w,
        vec!["echo $(…) $(…) $(…)", "curl evil", "rm -rf x", "id"]
    );
    assert!(parts[0].substitutes);
}

#[test]
fn nested_substitution_and_subshells() {
    let w = words("(cd x && git push) ; echo $(a $(b c)) \"$(d \")\")\"");
    assert!(w.contains(&vec!["git".to_owned(), "push".to_owned()]));
    assert!(w.contains(&vec!["b".to_owned(), "c".to_owned()]));
    assert!(w.contains(&vec!["d".to_owned(), ")".to_owned()]));
}

#[test]
fn redirections_are_noticed_and_dropped_from_words() {
    let parts = split_commands("git status > out.txt 2>&1");
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].words, vec!["git", "status"]);
    assert!(parts[0].redirects);
    let parts = split_commands("git status &> out.txt");
    assert_eq!(parts.len(), 1);
    assert!(parts[0].redirects);
    let parts = split_commands("cat <(curl evil)");
    assert!(parts.iter().any(|c| c.words == vec!["curl", "evil"]));
    // A substitution in a redirection's target still runs.
    let parts = split_commands("ls > \"$(git push)\"");
    assert!(parts.iter().any(|c| c.words == vec!["git", "push"]));
}

#[test]
fn comments_are_ignored() {
    assert_eq!(words("ls # && rm -rf /"), vec![vec!["ls"]]);
    assert_eq!(words("ls a#b"), vec![vec!["ls", "a#b"]]);
}

#[test]
fn deep_nesting_does_not_overflow() {
    let line = "$(".repeat(10_000);
    assert!(opaque(&line));
    let line = "`".repeat(10_001);
    let _ = split_commands(&line);
}
