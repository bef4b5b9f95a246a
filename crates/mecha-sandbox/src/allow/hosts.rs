//! `allow_hosts`: the destinations a confined command may reach through
//! the proxy, and the one check a requested destination passes.
//!
//! Both sides are held to a strict spelling before anything is compared:
//! a name is lowercase ASCII letters, digits, `-` and `_` in non-empty
//! labels, an address is an IP literal in its canonical form. Anything else
//! (a NUL, CR or LF, a `%`, userinfo, an IP address in another spelling)
//! is refused outright, so no trick of encoding can make a suffix match
//! say yes to a host it was not written for.

use std::fmt;
use std::net::IpAddr;

/// The ports an entry without one allows.
const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The checked `allow_hosts` list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: Pattern,
    /// `None`: ports 80 and 443.
    port: Option<u16>,
    /// As the user wrote it, for messages.
    written: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// This name exactly.
    Name(String),
    /// Every name under this one (`*.packages.example`), not the name itself.
    Under(String),
    /// This address, written as an IP literal.
    Address(IpAddr),
}

/// A requested destination in its checked spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Address(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Address(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Address(v4) => write!(f, "{v4}"),
        }
    }
}

impl Allowlist {
    /// The list as configured; an entry that is not a host, a `*.` wildcard
    /// or an IP literal (each with an optional `:PORT`) is an error naming
    /// it.
    pub fn parse(written: &[String]) -> Result<Self, String> {
        let entries = written
            .iter()
            .map(|entry| parse_entry(entry).map_err(|why| format!("`{entry}` {why}")))
            .collect::<Result<_, _>>()?;
        Ok(Self { entries })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries as the user wrote them.
    pub fn written(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.written.as_str())
    }

    /// Whether some entry allows `host` on `port`. A name entry never
    /// allows an IP literal, even of the address the name resolves to.
    pub fn allows(&self, host: &Host, port: u16) -> bool {
        self.entries.iter().any(|entry| {
            let port_ok = match entry.port {
                Some(p) => p == port,
                None => DEFAULT_PORTS.contains(&port),
            };
            port_ok
                && match (&entry.host, host) {
                    (Pattern::Name(n), Host::Name(h)) => n == h,
                    (Pattern::Under(parent), Host::Name(h)) => h
                        .strip_suffix(parent.as_str())
                        .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                    (Pattern::Address(a), Host::Address(h)) => a == h,
                    _ => false,
                }
        })
    }

    /// Whether this list allows every destination `entry` (another
    /// list's entry) allows: how a project's `allow_hosts` is checked to
    /// narrow the user's and never widen it. An entry that does not parse
    /// is covered by nothing.
    pub fn covers(&self, entry: &str) -> bool {
        let Ok(theirs) = parse_entry(entry) else {
            return false;
        };
        let ports = theirs.port.map_or(DEFAULT_PORTS.to_vec(), |p| vec![p]);
        match &theirs.host {
            Pattern::Name(n) => ports
                .iter()
                .all(|&p| self.allows(&Host::Name(n.clone()), p)),
            Pattern::Address(a) => ports.iter().all(|&p| self.allows(&Host::Address(*a), p)),
            Pattern::Under(parent) => ports.iter().all(|&p| {
                self.entries.iter().any(|mine| {
                    let port_ok = mine.port.map_or(DEFAULT_PORTS.contains(&p), |m| m == p);
                    let under = match &mine.host {
                        Pattern::Under(q) => {
                            parent == q
                                || parent
                                    .strip_suffix(q.as_str())
                                    .is_some_and(|r| r.ends_with('.'))
                        }
                        _ => false,
                    };
                    port_ok && under
                })
            }),
        }
    }

    /// Whether an entry names `addr` literally (on `port`): then a name
    /// that resolves to it may reach it even where the address check
    /// refuses it (a registry mirror on the office network).
    pub fn names_address(&self, addr: IpAddr, port: u16) -> bool {
        self.allows(&Host::Address(addr), port)
    }

    /// Whether an entry names `addr` literally, on any port.
    pub fn lists_address(&self, addr: IpAddr) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.host == Pattern::Address(addr))
    }
}

fn parse_entry(entry: &str) -> Result<Entry, String> {
    let (host, port) = split_port(entry)?;
    let host = host.to_ascii_lowercase();
    let pattern = if let Some(parent) = host.strip_prefix("*.") {
        let name = checked_name(parent)?;
        if !name.contains('.') {
            return Err(format!(
                "would allow every name under `.{name}`, a whole top-level domain; \
                 name the registry's own domain (`*.example.{name}`)"
            ));
        }
        Pattern::Under(name)
    } else {
        match parse_host(&host)? {
            Host::Name(name) => Pattern::Name(name),
            Host::Address(addr) => Pattern::Address(addr),
        }
    };
    Ok(Entry {
        host: pattern,
        port,
        written: entry.to_owned(),
    })
}

/// `host`, `host:PORT`, `[v6]`, `[v6]:PORT`, or a bare IPv6 literal.
fn split_port(entry: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| {
        parse_port(p)
            .ok_or_else(|| format!("has `{p}` as its port; a port is a number from 1 to 65535"))
    };
    if let Some(rest) = entry.strip_prefix('[') {
        let (v6, after) = rest
            .split_once(']')
            .ok_or("opens a `[` for an IPv6 address and never closes it")?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((v6, Some(port(p)?))),
            None if after.is_empty() => Ok((v6, None)),
            None => Err("has text after its `]`".into()),
        };
    }
    match entry.matches(':').count() {
        0 => Ok((entry, None)),
        1 => {
            let (host, p) = entry.split_once(':').unwrap_or((entry, ""));
            Ok((host, Some(port(p)?)))
        }
        // An IPv6 address without brackets cannot carry a port.
        _ => Ok((entry, None)),
    }
}

/// A port written in plain digits, 1 to 65535 (no sign, no spaces).
pub fn parse_port(p: &str) -> Option<u16> {
    Some(p)
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse::<u16>().ok())
        .filter(|&p| p != 0)
}

/// A requested host (from a CONNECT line or an absolute URI, brackets
/// already taken off an IPv6 literal) in its checked spelling, or why it
/// is refused.
pub fn parse_host(host: &str) -> Result<Host, String> {
    if let Ok(addr) = host.parse::<IpAddr>() {
        // `Ipv4Addr`'s parser takes only the canonical dotted quad, so
        // `127.1`, `0x7f.0.0.1` and `2130706433` are left to the name check,
        // which refuses them.
        return Ok(Host::Address(addr));
    }
    checked_name(host).map(Host::Name)
}

/// A host name, lowercased, with one trailing dot (the root) taken off.
fn checked_name(name: &str) -> Result<String, String> {
    if let Some(bad) = name.chars().find(|c| !is_name_char(*c)) {
        return Err(format!(
            "contains {}, which no host name has",
            match bad {
                '\0' => "a NUL byte".to_owned(),
                '\r' | '\n' => "a line break".to_owned(),
                '@' => "`@` (userinfo before a host is not allowed)".to_owned(),
                ' ' | '\t' => "a space".to_owned(),
                c if c.is_ascii_graphic() => format!("`{c}`"),
                c => format!(
                    "the character U+{:04X} (write a non-ASCII name in its xn-- form)",
                    c as u32
                ),
            }
        ));
    }
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix('.').unwrap_or(&name);
    if name.is_empty() || name.len() > 253 {
        return Err("is not a host name".into());
    }
    if name
        .split('.')
        .any(|label| label.is_empty() || label.len() > 63)
    {
        return Err(
            "has an empty or overlong label (`..`, a leading or a second trailing dot)".into(),
        );
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x") {
        return Err("is an IP address in an unusual spelling; write it as a dotted quad".into());
    }
    Ok(name.to_owned())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
