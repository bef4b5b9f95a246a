//! `[sandbox] allow_hosts` through the real binary and the real bwrap, in a
//! private network namespace that stands in for the internet: a listed
//! host answers through curl, and everything else (an unlisted host, the
//! IP literal of a listed one, a name that resolves to a private address,
//! a lookup, a direct connection, a spliced host name) is refused, with
//! the refusal named in the result the model gets and kept in the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::Ordering;

use common::netns::{Netns, PRIVATE, PUBLIC};
use serde_json::{Value, json};

const HOSTS: &[(&str, &str)] = &[
    (PUBLIC, "registry.test.example"),
    (PUBLIC, "other.test.example"),
    (PRIVATE, "db.inside.test.example"),
];

const SANDBOX: &str = "[sandbox]\nkind = \"bwrap\"\n\
    allow_hosts = [\"registry.test.example\", \"*.inside.test.example\"]\n";

fn shell(command: &str) -> Value {
    json!({"name": "shell", "input": {"command": command}})
}

fn have_bwrap_and_curl() -> bool {
    common::have(
        "bwrap",
        "the allow_hosts tests",
        "bubblewrap (apt-get install bubblewrap)",
    ) && common::have(
        "curl",
        "the allow_hosts tests",
        "curl (apt-get install curl)",
    )
}

#[test]
fn a_listed_host_answers_and_everything_else_is_refused_and_named() {
    if !have_bwrap_and_curl() {
        return;
    }
    let Some(ns) = Netns::create("allow", HOSTS) else {
        return;
    };
    let public = ns.serve(&format!("{PUBLIC}:80"), "hello from the registry");
    let private = ns.serve(&format!("{PRIVATE}:80"), "the private server");
    let e = common::env();
    let calls = [
        // Plain HTTP through the proxy (an absolute-URI request), and a
        // tunnel (CONNECT), both to the listed host.
        shell("curl -sS -m 5 http://registry.test.example/plain"),
        shell("curl -sS -m 5 -p http://registry.test.example/tunnel"),
        // Not listed; the listed host's own address; a listed wildcard
        // whose name resolves to a private address.
        shell("curl -sS -m 5 http://other.test.example/ ; echo"),
        shell(&format!("curl -sS -m 5 http://{PUBLIC}/ ; echo")),
        shell("curl -sS -m 5 http://db.inside.test.example/ ; echo"),
        // Around the proxy: straight to the address, and a DNS lookup.
        shell(&format!(
            "curl -sS -m 5 --noproxy '*' http://{PUBLIC}/ && echo LEAK''-direct; \
             (echo > /dev/tcp/{PUBLIC}/80) 2>/dev/null && echo LEAK''-tcp; \
             getent hosts leak.secret.example && echo LEAK''-dns; echo around-done"
        )),
        // Spliced names sent to the proxy by hand.
        shell(
            "for target in 'registry.test.example.evil.example:80' \
             'evil.example%00.registry.test.example:80' 'user@registry.test.example:80'; do \
             (exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT %s HTTP/1.1\\r\\n\\r\\n' \"$target\" >&3; \
             cat <&3) || echo \"no answer for $target\"; echo; done",
        ),
    ];
    let (out, session) = ns.run_mecha(&e, &calls, SANDBOX);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        session.contains("hello from the registry (GET /plain HTTP/1.1)"),
        "{session}"
    );
    assert!(
        session.contains("hello from the registry (GET /tunnel HTTP/1.1)"),
        "{session}"
    );
    assert_eq!(
        public.load(Ordering::SeqCst),
        2,
        "only the two listed requests"
    );
    assert_eq!(private.load(Ordering::SeqCst), 0, "the private address");
    for refused in [
        "mecha's sandbox proxy refused other.test.example:80: not in allow_hosts",
        &format!("mecha's sandbox proxy refused {PUBLIC}:80: not in allow_hosts"),
        &format!(
            "mecha's sandbox proxy refused db.inside.test.example:80: it resolves to {PRIVATE}"
        ),
        "mecha's sandbox proxy refused registry.test.example.evil.example:80: not in allow_hosts",
    ] {
        assert!(session.contains(refused), "{refused}\n{session}");
    }
    assert!(session.contains("contains `%`"), "{session}");
    assert!(session.contains("userinfo"), "{session}");
    assert!(
        session.contains("mecha's sandbox proxy let through: registry.test.example:80"),
        "{session}"
    );
    assert!(session.contains("around-done"), "{session}");
    assert!(!session.contains("LEAK-"), "{session}");
}

#[test]
fn a_sandboxed_server_with_its_own_list_reaches_only_that_list() {
    if !have_bwrap_and_curl() {
        return;
    }
    let Some(ns) = Netns::create("mcp", HOSTS) else {
        return;
    };
    let public = ns.serve(&format!("{PUBLIC}:80"), "hello from the registry");
    let e = common::env();
    let fixture = mecha_testkit::fixture_mcp();
    let dir = fixture.parent().unwrap().display().to_string();
    // The server's own list is narrower than [sandbox]'s network = true.
    let config = format!(
        "[sandbox]\nkind = \"bwrap\"\nnetwork = true\nreadable = [{dir:?}]\n\n\
         [[mcp]]\nname = \"web\"\ncommand = {:?}\nsandbox = true\n\
         allow_hosts = [\"registry.test.example\"]\n",
        fixture.display().to_string()
    );
    let fetch = |url: &str| json!({"name": "web__fetch", "input": {"url": url}});
    let calls = [
        fetch("http://registry.test.example/from-mcp"),
        fetch("http://other.test.example/"),
    ];
    let (out, session) = ns.run_mecha(&e, &calls, &config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        session.contains("hello from the registry (GET /from-mcp HTTP/1.0)"),
        "{session}"
    );
    assert!(
        session
            .contains("[mecha's sandbox proxy refused other.test.example:80: not in allow_hosts]"),
        "{session}"
    );
    assert!(
        session.contains("[mecha's sandbox proxy let through: registry.test.example:80]"),
        "{session}"
    );
    assert_eq!(public.load(Ordering::SeqCst), 1);
}

#[test]
fn a_docker_container_gets_the_same_list_through_the_same_proxy() {
    if !have_bwrap_and_curl() || !common::docker_ready() {
        return;
    }
    let Some(ns) = Netns::create("docker", HOSTS) else {
        return;
    };
    let public = ns.serve(&format!("{PUBLIC}:80"), "hello from the registry");
    let e = common::env();
    let config = "[sandbox]\nkind = \"docker\"\nimage = \"mecha-test:local\"\n\
                  allow_hosts = [\"registry.test.example\"]\n";
    let calls = [
        shell("curl -sS -m 5 http://registry.test.example/from-docker"),
        shell(&format!(
            "curl -sS -m 5 http://other.test.example/ ; echo; \
             curl -sS -m 5 --noproxy '*' http://{PUBLIC}/ && echo LEAK''-direct; echo done"
        )),
    ];
    let (out, session) = ns.run_mecha(&e, &calls, config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        session.contains("hello from the registry (GET /from-docker HTTP/1.1)"),
        "{session}"
    );
    assert!(
        session.contains("mecha's sandbox proxy refused other.test.example:80: not in allow_hosts"),
        "{session}"
    );
    assert!(!session.contains("LEAK-"), "{session}");
    assert!(session.contains("done"), "{session}");
    assert_eq!(public.load(Ordering::SeqCst), 1);
}
