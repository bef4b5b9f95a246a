use proptest::prelude::*;

use super::*;

fn list(entries: &[&str]) -> Allowlist {
    Allowlist::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
}

fn name(n: &str) -> Host {
    Host::Name(n.into())
}

#[test]
fn an_entry_without_a_port_allows_80_and_443_only() {
    let l = list(&["crates.example"]);
    assert!(l.allows(&name("crates.example"), 443));
    assert!(l.allows(&name("crates.example"), 80));
    assert!(!l.allows(&name("crates.example"), 8080));
    let l = list(&["npm.example:8443"]);
    assert!(l.allows(&name("npm.example"), 8443));
    assert!(!l.allows(&name("npm.example"), 443));
}

#[test]
fn a_wildcard_covers_names_under_it_and_not_the_name_or_look_alikes() {
    let l = list(&["*.packages.example"]);
    assert!(l.allows(&name("a.packages.example"), 443));
    assert!(l.allows(&name("a.b.packages.example"), 443));
    for refused in [
        "packages.example",
        "evilpackages.example",
        "packages.example.evil.example",
        "a.packages.example.evil",
    ] {
        assert!(!l.allows(&name(refused), 443), "{refused}");
    }
}

#[test]
fn a_name_entry_never_allows_an_address_and_an_address_entry_only_itself() {
    let l = list(&["crates.example", "10.1.2.3", "[2001:db8::1]:8080"]);
    assert!(!l.allows(&Host::Address("93.184.215.14".parse().unwrap()), 443));
    assert!(l.allows(&Host::Address("10.1.2.3".parse().unwrap()), 443));
    assert!(l.names_address("10.1.2.3".parse().unwrap(), 80));
    assert!(!l.names_address("10.1.2.4".parse().unwrap(), 80));
    assert!(l.names_address("2001:db8::1".parse().unwrap(), 8080));
    assert!(!l.allows(&name("10.1.2.3.nip.example"), 443));
}

#[test]
fn entries_are_checked_when_the_config_is_read() {
    for (entry, why) in [
        ("*.com", "a whole top-level domain"),
        ("a..example", "empty or overlong label"),
        ("host.example:0", "a number from 1 to 65535"),
        ("host.example:http", "a number from 1 to 65535"),
        ("host example", "a space"),
        ("user@host.example", "userinfo"),
        ("[::1", "never closes"),
        ("127.1", "unusual spelling"),
    ] {
        let err = Allowlist::parse(&[entry.to_string()]).unwrap_err();
        assert!(err.contains(why), "{entry}: {err}");
        assert!(err.starts_with(&format!("`{entry}`")), "{err}");
    }
    let l = list(&["Crates.Example.", "[::1]", "::2", "1.2.3.4:8080"]);
    assert!(l.allows(&name("crates.example"), 443));
    assert!(l.names_address("::1".parse().unwrap(), 443));
    assert!(l.names_address("::2".parse().unwrap(), 80));
    assert!(l.names_address("1.2.3.4".parse().unwrap(), 8080));
    assert_eq!(l.len(), 4);
}

#[test]
fn a_list_covers_only_what_it_allows_itself() {
    let mine = list(&["crates.example", "*.corp.example", "npm.example:8443"]);
    for narrower in [
        "crates.example",
        "crates.example:443",
        "a.corp.example",
        "*.b.corp.example",
        "*.corp.example",
        "npm.example:8443",
    ] {
        assert!(mine.covers(narrower), "{narrower}");
    }
    for wider in [
        "evil.example",
        "crates.example:8080",
        "*.example",
        "corp.example",
        "npm.example",
        "not an entry",
    ] {
        assert!(!mine.covers(wider), "{wider}");
    }
}

#[test]
fn the_hostname_tricks_are_refused_before_any_match() {
    for trick in [
        "evil.example\0.allowed.example",
        "allowed.example\r\nX: y",
        "allowed.example\n",
        "user@allowed.example",
        "allowed.example%2f.evil",
        "evil.example%00.allowed.example",
        "allowed.example..",
        ".allowed.example",
        "2130706433",
        "0x7f.0.0.1",
        "127.1",
        "allowed.example/evil",
        "allowed.exampleé",
        "",
    ] {
        assert!(parse_host(trick).is_err(), "{trick:?} parsed");
    }
    assert_eq!(parse_host("ALLOWED.example."), Ok(name("allowed.example")));
    assert_eq!(
        parse_host("::ffff:127.0.0.1"),
        Ok(Host::Address("::ffff:127.0.0.1".parse().unwrap()))
    );
}

proptest! {
    /// Whatever the requested spelling, a wildcard says yes only to a clean
    /// name that really lies under its domain.
    #[test]
    fn a_wildcard_allows_only_clean_names_under_it(raw in "[a-zA-Z0-9._%@\\-\\x00\\r\\n ]{0,30}(\\.allowed\\.example)?\\.?") {
        let l = list(&["*.allowed.example"]);
        if let Ok(host) = parse_host(&raw)
            && l.allows(&host, 443)
        {
            let Host::Name(n) = host else { panic!("an address allowed by a wildcard") };
            prop_assert!(n.ends_with(".allowed.example"));
            prop_assert!(n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b)));
            prop_assert!(!n.contains(".."));
        }
    }

    /// Anything spliced in with a NUL, a line break, `%` or `@` is refused.
    #[test]
    fn a_spliced_name_is_refused(before in "[a-z.]{0,12}", glue in "[\\x00\\r\\n%@]", after in "[a-z.]{0,12}") {
        let raw = format!("{before}{glue}{after}.allowed.example");
        prop_assert!(parse_host(&raw).is_err());
    }
}
