//! The address classifier, table-tested against every range the egress guard
//! must refuse and every IPv6 form that embeds an IPv4 address, plus
//! property tests over whole ranges.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use mecha_tools::egress::{Blocked, EgressGuard, classify, embedded_v4};
use proptest::prelude::*;

use Blocked::*;

/// (address, expected verdict); `None` means a public address.
const TABLE: &[(&str, Option<Blocked>)] = &[
    // IPv4, refused.
    ("127.0.0.1", Some(Loopback)),
    ("127.255.255.254", Some(Loopback)),
    ("10.0.0.1", Some(Private)),
    ("10.255.255.255", Some(Private)),
    ("172.16.0.1", Some(Private)),
    ("172.31.255.255", Some(Private)),
    ("192.168.0.1", Some(Private)),
    ("192.168.255.255", Some(Private)),
    ("169.254.169.254", Some(LinkLocal)),
    ("169.254.0.1", Some(LinkLocal)),
    ("100.64.0.1", Some(SharedCgnat)),
    ("100.127.255.255", Some(SharedCgnat)),
    ("0.0.0.0", Some(Unspecified)),
    ("0.1.2.3", Some(Reserved)),
    ("255.255.255.255", Some(Broadcast)),
    ("224.0.0.1", Some(Multicast)),
    ("239.255.255.250", Some(Multicast)),
    ("240.0.0.1", Some(Reserved)),
    ("254.255.255.255", Some(Reserved)),
    ("192.0.0.1", Some(Reserved)),
    ("192.0.0.192", Some(Reserved)),
    ("192.88.99.1", Some(Reserved)),
    ("198.18.0.1", Some(Benchmarking)),
    ("198.19.255.255", Some(Benchmarking)),
    ("192.0.2.1", Some(Documentation)),
    ("198.51.100.7", Some(Documentation)),
    ("203.0.113.9", Some(Documentation)),
    // IPv4, the neighbours of refused ranges are public.
    ("172.15.255.255", None),
    ("172.32.0.0", None),
    ("100.63.255.255", None),
    ("100.128.0.0", None),
    ("198.17.255.255", None),
    ("198.20.0.0", None),
    ("192.0.1.1", None),
    ("192.88.98.1", None),
    ("169.253.255.255", None),
    ("1.0.0.0", None),
    ("223.255.255.255", None),
    ("8.8.8.8", None),
    ("1.1.1.1", None),
    // IPv6, refused.
    ("::1", Some(Loopback)),
    ("::", Some(Unspecified)),
    ("fc00::1", Some(UniqueLocal)),
    ("fdff:ffff::1", Some(UniqueLocal)),
    ("fe80::1", Some(LinkLocal)),
    ("fe81::1", Some(LinkLocal)),
    ("febf:ffff::1", Some(LinkLocal)),
    ("fec0::1", Some(SiteLocal)),
    ("feff::1", Some(SiteLocal)),
    ("ff02::1", Some(Multicast)),
    ("ff0e::1", Some(Multicast)),
    ("2001:db8::1", Some(Documentation)),
    ("2001:db8:ffff::1", Some(Documentation)),
    ("3fff::1", Some(Documentation)),
    ("3fff:fff:ffff::1", Some(Documentation)),
    ("100::1", Some(Discard)),
    ("100::ffff:ffff:ffff:ffff", Some(Discard)),
    ("2001:2::1", Some(Benchmarking)),
    ("2001::1", Some(Teredo)),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some(Teredo)),
    ("2002:c000:204::1", Some(SixToFour)),
    ("2002:7f00:1::1", Some(SixToFour)),
    ("64:ff9b:1::1", Some(LocalNat64)),
    ("64:ff9b:1:ffff::1", Some(LocalNat64)),
    ("100:0:0:1::1", Some(NotGlobalUnicast)),
    ("1::1", Some(NotGlobalUnicast)),
    ("4000::1", Some(NotGlobalUnicast)),
    ("e000::1", Some(NotGlobalUnicast)),
    ("64:ff9b:0:0:1::1", Some(NotGlobalUnicast)),
    // IPv6, public.
    ("2606:4700:4700::1111", None),
    ("2001:4860:4860::8888", None),
    ("2a00:1450::1", None),
    ("3fff:1000::1", None),
    ("2001:3::1", None),
    ("2003::1", None),
    // Embedded IPv4, judged by the embedded address.
    ("::ffff:127.0.0.1", Some(Loopback)),
    ("::127.0.0.1", Some(Loopback)),
    ("::ffff:0:127.0.0.1", Some(Loopback)),
    ("64:ff9b::127.0.0.1", Some(Loopback)),
    ("::ffff:10.1.2.3", Some(Private)),
    ("::ffff:0:192.168.1.1", Some(Private)),
    ("::ffff:169.254.169.254", Some(LinkLocal)),
    ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
    ("::169.254.169.254", Some(LinkLocal)),
    ("::ffff:100.64.0.1", Some(SharedCgnat)),
    ("64:ff9b::100.100.100.200", Some(SharedCgnat)),
    ("::ffff:0.0.0.0", Some(Unspecified)),
    ("::0.0.0.2", Some(Reserved)),
    ("::ffff:255.255.255.255", Some(Broadcast)),
    ("::ffff:8.8.8.8", None),
    ("::8.8.8.8", None),
    ("::ffff:0:8.8.8.8", None),
    ("64:ff9b::8.8.8.8", None),
];

#[test]
fn egress_table_of_addresses() {
    let mut wrong = Vec::new();
    for &(text, expected) in TABLE {
        let addr: IpAddr = text.parse().expect(text);
        let got = classify(addr).err().map(|r| r.why);
        if got != expected {
            wrong.push(format!("{text}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

#[test]
fn egress_embedded_forms_report_the_embedded_address() {
    let v4 = Ipv4Addr::new(127, 0, 0, 1);
    for text in [
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "::ffff:0:127.0.0.1",
        "64:ff9b::7f00:1",
    ] {
        let v6: Ipv6Addr = text.parse().unwrap();
        assert_eq!(embedded_v4(v6), Some(v4), "{text}");
        let refused = classify(IpAddr::V6(v6)).unwrap_err();
        assert_eq!(refused.embedded, Some(v4), "{text}");
        assert!(refused.to_string().contains("127.0.0.1"), "{refused}");
    }
    // `to_canonical` alone would miss three of the four forms; make sure
    // that stays the reason this classifier exists.
    let compat: IpAddr = "::127.0.0.1".parse().unwrap();
    assert!(!compat.to_canonical().is_loopback());
    // `::` and `::1` are themselves, not compatible-form 0.0.0.0 / 0.0.0.1.
    assert_eq!(embedded_v4(Ipv6Addr::UNSPECIFIED), None);
    assert_eq!(embedded_v4(Ipv6Addr::LOCALHOST), None);
}

#[test]
fn egress_exemption_is_exactly_the_range_given() {
    let guard = EgressGuard::new().allowing("127.0.0.2/32".parse().unwrap());
    assert!(guard.check("127.0.0.2".parse().unwrap()).is_ok());
    assert!(guard.check("127.0.0.1".parse().unwrap()).is_err());
    assert!(guard.check("127.0.0.3".parse().unwrap()).is_err());
    assert!(guard.check("::ffff:127.0.0.2".parse().unwrap()).is_err());
    assert!(
        EgressGuard::new()
            .check("127.0.0.2".parse().unwrap())
            .is_err()
    );
}

/// Every IPv4 range the guard refuses.
fn refused_v4_nets() -> Vec<Ipv4Net> {
    [
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

/// Every IPv6 range refused in its own right (no embedded IPv4).
fn refused_v6_nets() -> Vec<Ipv6Net> {
    [
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
        "2001:db8::/32",
        "3fff::/20",
        "100::/64",
        "2001:2::/48",
        "2001::/32",
        "2002::/16",
        "64:ff9b:1::/48",
        "4000::/2",
        "c000::/3",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

fn v4_in(net: Ipv4Net, offset: u32) -> Ipv4Addr {
    let host_bits = 32 - u32::from(net.prefix_len());
    let mask = if host_bits == 32 {
        u32::MAX
    } else {
        (1u32 << host_bits) - 1
    };
    Ipv4Addr::from(u32::from(net.network()) | (offset & mask))
}

fn v6_in(net: Ipv6Net, offset: u128) -> Ipv6Addr {
    let host_bits = 128 - u32::from(net.prefix_len());
    let mask = (1u128 << host_bits) - 1;
    Ipv6Addr::from(u128::from(net.network()) | (offset & mask))
}

/// The IPv6 forms that carry `v4`: mapped, compatible, SIIT, NAT64.
fn embeddings(v4: Ipv4Addr) -> [Ipv6Addr; 4] {
    let low = u128::from(u32::from(v4));
    [
        Ipv6Addr::from(0xffff_u128 << 32 | low),
        Ipv6Addr::from(low),
        Ipv6Addr::from(0xffff_u128 << 48 | low),
        Ipv6Addr::from(0x0064_ff9b_u128 << 96 | low),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every address in a refused IPv4 range is refused, and so is each of
    /// its IPv6 embeddings.
    #[test]
    fn egress_refused_v4_ranges_in_every_form(index in 0usize..15, offset in any::<u32>()) {
        let nets = refused_v4_nets();
        let v4 = v4_in(nets[index % nets.len()], offset);
        let verdict = classify(IpAddr::V4(v4));
        prop_assert!(verdict.is_err(), "{v4} allowed");
        for v6 in embeddings(v4) {
            prop_assert!(classify(IpAddr::V6(v6)).is_err(), "{v6} (carrying {v4}) allowed");
        }
    }

    /// Every address in a refused IPv6 range is refused.
    #[test]
    fn egress_refused_v6_ranges(index in 0usize..13, offset in any::<u128>()) {
        let nets = refused_v6_nets();
        let v6 = v6_in(nets[index % nets.len()], offset);
        prop_assert!(classify(IpAddr::V6(v6)).is_err(), "{v6} allowed");
    }

    /// An IPv4 address outside every refused range is public, and so is each
    /// of its embeddings: the guard judges by the embedded address, both ways.
    #[test]
    fn egress_public_v4_allowed_in_every_form(raw in any::<u32>()) {
        let v4 = Ipv4Addr::from(raw);
        let inside = refused_v4_nets().iter().any(|n| n.contains(&v4))
            || v4 == Ipv4Addr::BROADCAST;
        prop_assume!(!inside);
        prop_assert!(classify(IpAddr::V4(v4)).is_ok(), "{v4} refused");
        for v6 in embeddings(v4) {
            prop_assert!(classify(IpAddr::V6(v6)).is_ok(), "{v6} refused");
        }
    }

    /// Anything outside 2000::/3 that does not embed an IPv4 address is
    /// refused, whatever it is.
    #[test]
    fn egress_outside_global_unicast_refused(raw in any::<u128>()) {
        let v6 = Ipv6Addr::from(raw);
        let global = IpNet::V6("2000::/3".parse().unwrap());
        prop_assume!(!global.contains(&IpAddr::V6(v6)));
        prop_assume!(embedded_v4(v6).is_none());
        prop_assert!(classify(IpAddr::V6(v6)).is_err(), "{v6} allowed");
    }
}
