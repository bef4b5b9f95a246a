//! Which IP addresses are public internet addresses.
//!
//! Written against `std` by hand rather than with `Ipv4Addr::is_global`
//! (still unstable) because the std predicates miss ranges that matter for
//! SSRF: `100.64.0.1.is_private()` is false, and `IpAddr::to_canonical()`
//! unwraps only `::ffff:`-mapped addresses, not the IPv4-compatible, SIIT or
//! NAT64 forms that reach the same IPv4 host. Every IPv6 form that embeds an
//! IPv4 address is judged by the embedded address, so `64:ff9b::a9fe:a9fe`
//! is the metadata endpoint it translates to (Bifrost GHSA-w98g-5w9p-p3rc).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not a public internet address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Blocked {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16.
    Private,
    /// 169.254/16 (cloud metadata lives here), fe80::/10.
    LinkLocal,
    /// 100.64.0.0/10, carrier-grade NAT: the provider's side of the network.
    SharedCgnat,
    /// 0.0.0.0, `::`; connecting to 0.0.0.0 reaches this machine on Linux.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// 224/4, ff00::/8.
    Multicast,
    /// 0/8, 240/4, 192.0.0/24, 192.88.99/24: not assigned for public use.
    Reserved,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18/15, 2001:2::/48.
    Benchmarking,
    /// fc00::/7, the IPv6 counterpart of private space.
    UniqueLocal,
    /// fec0::/10, deprecated but still routed locally by some stacks.
    SiteLocal,
    /// 100::/64, the discard-only prefix.
    Discard,
    /// 2001::/32: the IPv4 endpoint is encoded (obfuscated) in the address.
    Teredo,
    /// 2002::/16: embeds an IPv4 address and reaches it through a relay.
    SixToFour,
    /// 64:ff9b:1::/48, NAT64 inside one operator's network.
    LocalNat64,
    /// Outside 2000::/3, the only IPv6 space allocated for global unicast.
    NotGlobalUnicast,
}

impl Blocked {
    /// The kind of address, phrased to follow "points at 10.0.0.1, ".
    pub fn describe(self) -> &'static str {
        match self {
            Blocked::Loopback => "a loopback address (this machine)",
            Blocked::Private => "a private-network address",
            Blocked::LinkLocal => "a link-local address (where cloud metadata services live)",
            Blocked::SharedCgnat => "a carrier-grade NAT (100.64.0.0/10) address",
            Blocked::Unspecified => "the unspecified address (reaches this machine)",
            Blocked::Broadcast => "the broadcast address",
            Blocked::Multicast => "a multicast address",
            Blocked::Reserved => "a reserved address",
            Blocked::Documentation => "a documentation-only address",
            Blocked::Benchmarking => "a benchmarking-only address",
            Blocked::UniqueLocal => "a unique-local (private) IPv6 address",
            Blocked::SiteLocal => "a site-local IPv6 address",
            Blocked::Discard => "an IPv6 discard-only address",
            Blocked::Teredo => "a Teredo tunnel address",
            Blocked::SixToFour => "a 6to4 tunnel address",
            Blocked::LocalNat64 => "a local-use NAT64 address",
            Blocked::NotGlobalUnicast => "an IPv6 address outside global unicast space",
        }
    }
}

/// An address that failed the check, with enough detail to say why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// The address as it was given or resolved.
    pub addr: IpAddr,
    /// The IPv4 address it was judged by, when it embeds one.
    pub embedded: Option<Ipv4Addr>,
    pub why: Blocked,
}

impl fmt::Display for Refused {
    /// `10.0.0.1, a private-network address`, or for an embedded form
    /// `::ffff:127.0.0.1 (which carries 127.0.0.1), a loopback address`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.embedded {
            Some(v4) => write!(
                f,
                "{} (which carries {v4}), {}",
                self.addr,
                self.why.describe()
            ),
            None => write!(f, "{}, {}", self.addr, self.why.describe()),
        }
    }
}

/// Judges one address: `Ok` only for a public internet address.
pub fn classify(addr: IpAddr) -> Result<(), Refused> {
    let refuse = |why, embedded| Refused {
        addr,
        embedded,
        why,
    };
    match addr {
        IpAddr::V4(v4) => classify_v4(v4).map_or(Ok(()), |why| Err(refuse(why, None))),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            // The embedded address decides: a NAT64 gateway or a dual-stack
            // socket delivers the packet to it.
            Some(v4) => classify_v4(v4).map_or(Ok(()), |why| Err(refuse(why, Some(v4)))),
            None => classify_v6(v6).map_or(Ok(()), |why| Err(refuse(why, None))),
        },
    }
}

/// The IPv4 address an IPv6 address stands for, in the forms where a packet
/// sent to it reaches that IPv4 host: mapped `::ffff:a.b.c.d`, compatible
/// `::a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, and well-known NAT64
/// `64:ff9b::a.b.c.d`. `::` and `::1` are not compatible-form addresses;
/// they are judged as themselves.
pub fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let high = [s[0], s[1], s[2], s[3], s[4], s[5]];
    match high {
        [0, 0, 0, 0, 0, 0xffff] => Some(low),
        [0, 0, 0, 0, 0xffff, 0] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if s[6] != 0 || s[7] > 1 => Some(low),
        _ => None,
    }
}

/// `Some(reason)` when the IPv4 address is not public.
fn classify_v4(a: Ipv4Addr) -> Option<Blocked> {
    let [o0, o1, o2, _] = a.octets();
    // Specific ranges first so the reason is the most telling one: 0.0.0.0
    // is "unspecified" before it is "0/8 reserved".
    if a.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if a.is_broadcast() {
        return Some(Blocked::Broadcast);
    }
    if a.is_loopback() {
        return Some(Blocked::Loopback);
    }
    if a.is_private() {
        return Some(Blocked::Private);
    }
    if a.is_link_local() {
        return Some(Blocked::LinkLocal);
    }
    if o0 == 100 && (o1 & 0xc0) == 64 {
        return Some(Blocked::SharedCgnat);
    }
    if a.is_multicast() {
        return Some(Blocked::Multicast);
    }
    if a.is_documentation() {
        return Some(Blocked::Documentation);
    }
    if o0 == 198 && (o1 & 0xfe) == 18 {
        return Some(Blocked::Benchmarking);
    }
    // 0/8 is "this network", 240/4 future use, 192.0.0/24 the IETF
    // protocol assignments (192.0.0.192 is OCI's metadata service), and
    // 192.88.99/24 the deprecated 6to4 relay anycast.
    let reserved = o0 == 0
        || o0 >= 240
        || (o0 == 192 && o1 == 0 && o2 == 0)
        || (o0 == 192 && o1 == 88 && o2 == 99);
    reserved.then_some(Blocked::Reserved)
}

/// `Some(reason)` when the IPv6 address (one without an embedded IPv4) is
/// not public.
fn classify_v6(a: Ipv6Addr) -> Option<Blocked> {
    let s = a.segments();
    if a.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if a.is_loopback() {
        return Some(Blocked::Loopback);
    }
    if a.is_multicast() {
        return Some(Blocked::Multicast);
    }
    // Prefix checks by masking segments, never by string prefix (plunk #449):
    // fe80::/10 covers fe80 to febf, not just "fe80:".
    if (s[0] & 0xffc0) == 0xfe80 {
        return Some(Blocked::LinkLocal);
    }
    if (s[0] & 0xffc0) == 0xfec0 {
        return Some(Blocked::SiteLocal);
    }
    if (s[0] & 0xfe00) == 0xfc00 {
        return Some(Blocked::UniqueLocal);
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 0x0001 {
        return Some(Blocked::LocalNat64);
    }
    if s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0 {
        return Some(Blocked::Discard);
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some(Blocked::Documentation);
    }
    if s[0] == 0x3fff && (s[1] & 0xf000) == 0 {
        return Some(Blocked::Documentation);
    }
    if s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0 {
        return Some(Blocked::Benchmarking);
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some(Blocked::Teredo);
    }
    if s[0] == 0x2002 {
        return Some(Blocked::SixToFour);
    }
    // Everything else outside 2000::/3 is unallocated or special-purpose.
    if (s[0] & 0xe000) != 0x2000 {
        return Some(Blocked::NotGlobalUnicast);
    }
    None
}

#[cfg(test)]
mod tests {
    //! Smoke tests; the full table and the property tests live in
    //! `tests/egress_classify.rs`.
    use super::*;

    #[test]
    fn egress_metadata_endpoint_is_refused_in_every_form() {
        for s in [
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "::169.254.169.254",
            "::ffff:0:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            let addr: IpAddr = s.parse().unwrap();
            let refused = classify(addr).unwrap_err();
            assert_eq!(refused.why, Blocked::LinkLocal, "{s}");
        }
    }

    #[test]
    fn egress_public_addresses_pass() {
        for s in ["8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808"] {
            let addr: IpAddr = s.parse().unwrap();
            assert_eq!(classify(addr), Ok(()), "{s}");
        }
    }

    #[test]
    fn egress_refusal_names_the_embedded_address() {
        let addr: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let text = classify(addr).unwrap_err().to_string();
        assert!(text.contains("which carries 127.0.0.1"), "{text}");
        assert!(text.contains("loopback"), "{text}");
    }
}
