//! `egress::vet` and `egress::Pinned` without any network: the URL-level
//! decisions for addresses a test must never actually connect to (cloud
//! metadata, private networks, public hosts).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Mutex;

use async_trait::async_trait;
use mecha_tools::egress::{Blocked, EgressGuard, Pinned, Refusal, Resolver, Vetted, vet};
use reqwest::dns::{Name, Resolve};
use url::Url;

/// Answers every name with the same addresses and records the names.
struct Fixed {
    answer: Vec<IpAddr>,
    asked: Mutex<Vec<String>>,
}

impl Fixed {
    fn new(answer: &[&str]) -> Self {
        Self {
            answer: answer.iter().map(|s| s.parse().unwrap()).collect(),
            asked: Mutex::new(Vec::new()),
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Resolver for Fixed {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        self.asked.lock().unwrap().push(host.to_owned());
        Ok(self.answer.clone())
    }
}

async fn vet_str(url: &str, resolver: &Fixed) -> Result<Vetted, Refusal> {
    vet(&Url::parse(url).unwrap(), &EgressGuard::new(), resolver).await
}

fn literal_why(result: Result<Vetted, Refusal>) -> Blocked {
    match result {
        Err(Refusal::Literal(refused)) => refused.why,
        other => panic!("expected a literal refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn egress_vet_refuses_internal_literals() {
    let resolver = Fixed::new(&["93.184.216.34"]);
    for (url, why) in [
        (
            "http://169.254.169.254/latest/meta-data/",
            Blocked::LinkLocal,
        ),
        ("http://[::ffff:169.254.169.254]/", Blocked::LinkLocal),
        ("http://[::ffff:a9fe:a9fe]/", Blocked::LinkLocal),
        ("http://[64:ff9b::a9fe:a9fe]/", Blocked::LinkLocal),
        ("http://[::ffff:0:a9fe:a9fe]/", Blocked::LinkLocal),
        ("http://[::a9fe:a9fe]/", Blocked::LinkLocal),
        ("http://2852039166/", Blocked::LinkLocal),
        ("http://0xa9.0xfe.0xa9.0xfe/", Blocked::LinkLocal),
        ("http://10.0.0.1/", Blocked::Private),
        ("http://012.1/", Blocked::Private),
        ("http://172.16.5.4:8080/", Blocked::Private),
        ("http://192.168.1.1/", Blocked::Private),
        ("http://100.100.100.200/", Blocked::SharedCgnat),
        ("http://192.0.0.192/", Blocked::Reserved),
        ("http://[fd00::1]/", Blocked::UniqueLocal),
        ("http://[fe80::1]/", Blocked::LinkLocal),
        ("http://[fec0::1]/", Blocked::SiteLocal),
        ("http://[2002:a9fe:a9fe::1]/", Blocked::SixToFour),
        (
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            Blocked::Teredo,
        ),
        ("http://224.0.0.1/", Blocked::Multicast),
        ("http://255.255.255.255/", Blocked::Broadcast),
        ("https://[2001:db8::1]/", Blocked::Documentation),
    ] {
        assert_eq!(literal_why(vet_str(url, &resolver).await), why, "{url}");
    }
    assert!(resolver.asked().is_empty(), "an IP literal was looked up");
}

#[tokio::test]
async fn egress_vet_every_spelling_of_loopback_is_the_literal_127_0_0_1() {
    let resolver = Fixed::new(&["93.184.216.34"]);
    for url in [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://%31%32%37.0.0.1/",
        "http://127.0.0.1./",
        "http://[::ffff:127.0.0.1]/",
    ] {
        match vet_str(url, &resolver).await {
            Err(Refusal::Literal(refused)) => {
                let judged = refused.embedded.map_or(refused.addr, IpAddr::V4);
                assert_eq!(judged, IpAddr::from([127, 0, 0, 1]), "{url}");
                assert_eq!(refused.why, Blocked::Loopback, "{url}");
            }
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(matches!(
        vet_str("http://[::1]/", &resolver).await,
        Err(Refusal::Literal(r)) if r.why == Blocked::Loopback
    ));
    assert!(matches!(
        vet_str("http://0/", &resolver).await,
        Err(Refusal::Literal(r)) if r.why == Blocked::Unspecified
    ));
    assert!(resolver.asked().is_empty());
}

#[tokio::test]
async fn egress_vet_one_private_answer_refuses_the_name() {
    for answer in [
        &["93.184.216.34", "10.0.0.5"][..],
        &["10.0.0.5", "93.184.216.34"][..],
        &["2606:4700::1", "fd12::1"][..],
        &["93.184.216.34", "169.254.169.254"][..],
        &["93.184.216.34", "::ffff:127.0.0.1"][..],
    ] {
        let resolver = Fixed::new(answer);
        match vet_str("https://mixed.example/", &resolver).await {
            Err(Refusal::Name { host, .. }) => assert_eq!(host, "mixed.example"),
            other => panic!("{answer:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn egress_vet_all_public_answers_pass_and_are_all_kept() {
    let resolver = Fixed::new(&["93.184.216.34", "2606:2800:220:1::1"]);
    let vetted = vet_str("https://Example.COM:8443/path?q=1", &resolver)
        .await
        .unwrap();
    assert_eq!(vetted.host, "example.com");
    assert_eq!(vetted.addrs.len(), 2);
    assert!(!vetted.literal);
    assert_eq!(resolver.asked(), ["example.com"]);

    let vetted = vet_str("http://93.184.216.34/", &resolver).await.unwrap();
    assert!(vetted.literal);
    assert_eq!(vetted.addrs, [IpAddr::from([93, 184, 216, 34])]);
}

#[tokio::test]
async fn egress_vet_refuses_schemes_credentials_and_empty_answers() {
    let resolver = Fixed::new(&["93.184.216.34"]);
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/",
        "data:text/plain,x",
    ] {
        assert!(
            matches!(vet_str(url, &resolver).await, Err(Refusal::Scheme(_))),
            "{url}"
        );
    }
    match vet_str("http://user@127.0.0.1:80@evil.com/", &resolver).await {
        Err(Refusal::Credentials(host)) => assert_eq!(host, "evil.com"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        vet_str("http://:pw@example.com/", &resolver).await,
        Err(Refusal::Credentials(_))
    ));
    assert!(resolver.asked().is_empty());

    let empty = Fixed::new(&[]);
    let refusal = vet_str("http://example.com/", &empty).await.unwrap_err();
    assert!(matches!(refusal, Refusal::Lookup { .. }));
    assert!(
        !refusal.is_policy(),
        "a failed lookup is not the guard refusing"
    );
}

#[tokio::test]
async fn egress_pinned_answers_only_the_vetted_host() {
    let vetted = Vetted {
        host: "example.com".into(),
        addrs: vec!["93.184.216.34".parse().unwrap()],
        literal: false,
    };
    let pinned = Pinned::new(&vetted);

    let addrs: Vec<SocketAddr> = pinned
        .resolve(Name::from_str("example.com").unwrap())
        .await
        .unwrap()
        .collect();
    assert_eq!(addrs, [SocketAddr::from(([93, 184, 216, 34], 0))]);

    for other in ["internal.example.com", "localhost", "example.org"] {
        let answer = pinned.resolve(Name::from_str(other).unwrap()).await;
        assert!(answer.is_err(), "{other} resolved through the pin");
    }
}
