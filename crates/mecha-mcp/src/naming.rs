//! Model-visible names for a server's tools.
//!
//! The model APIs accept `^[a-zA-Z0-9_-]{1,64}$`; MCP allows more (`.`,
//! and up to 128 characters). Each name is sanitised, prefixed with
//! `<server>__` unless the config says otherwise, and where it must be cut
//! or would collide with another of the same server's tools, ends in `_`
//! and a short hash of the raw (server, tool) pair, so the result is the
//! same on every run whatever order the server lists its tools in. The raw
//! name is kept beside it: that is what the server receives, and the
//! model-visible name is never parsed back.

use std::collections::{BTreeMap, HashSet};

use mecha_core::sanitize_tool_name;

/// The model APIs' limit.
pub const MAX_TOOL_NAME_LEN: usize = 64;
const HASH_LEN: usize = 8;

/// `(raw, model-visible)` for each distinct raw name, in listing order. A
/// raw name the server lists twice is kept once.
pub(crate) fn assign(server: &str, prefix: bool, raw_names: &[&str]) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let raws: Vec<&str> = raw_names
        .iter()
        .copied()
        .filter(|raw| {
            let fresh = seen.insert(*raw);
            if !fresh {
                tracing::warn!(server, tool = raw, "the server lists this tool twice");
            }
            fresh
        })
        .collect();
    let candidates: Vec<String> = raws
        .iter()
        .map(|raw| {
            let safe = sanitize_tool_name(raw);
            if prefix {
                format!("{server}__{safe}")
            } else {
                safe
            }
        })
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &candidates {
        *counts.entry(c.as_str()).or_default() += 1;
    }
    let mut out: Vec<(String, String)> = raws
        .iter()
        .zip(&candidates)
        .map(|(raw, candidate)| {
            let fits = candidate.len() <= MAX_TOOL_NAME_LEN;
            // Of names that sanitise alike, one the server already spelt
            // safely keeps its plain name; the rest are told apart by hash.
            let unique =
                counts.get(candidate.as_str()) == Some(&1) || sanitize_tool_name(raw) == *raw;
            let name = if fits && unique {
                candidate.clone()
            } else {
                hashed(candidate, server, raw)
            };
            ((*raw).to_owned(), name)
        })
        .collect();
    // A hashed name could in theory equal another tool's plain one.
    let mut taken = HashSet::new();
    out.retain(|(raw, name)| {
        let fresh = taken.insert(name.clone());
        if !fresh {
            tracing::warn!(server, tool = %raw, name = %name, "tool name collision; tool left out");
        }
        fresh
    });
    out
}

fn hashed(candidate: &str, server: &str, raw: &str) -> String {
    let keep = MAX_TOOL_NAME_LEN - HASH_LEN - 1;
    // Sanitised names are ASCII, so any byte index is a char boundary.
    let base = candidate
        .get(..keep.min(candidate.len()))
        .unwrap_or(candidate);
    format!("{base}_{:08x}", short_hash(server, raw))
}

/// FNV-1a over `server \0 raw`, folded to 32 bits: stable across runs,
/// platforms and Rust versions, which `std`'s hasher does not promise.
fn short_hash(server: &str, raw: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0]).chain(raw.bytes()) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // Folding keeps bits from both halves; the truncation is the point.
    #[allow(clippy::cast_possible_truncation)]
    let folded = ((h >> 32) ^ h) as u32;
    folded
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    fn names(server: &str, prefix: bool, raws: &[&str]) -> Vec<String> {
        assign(server, prefix, raws)
            .into_iter()
            .map(|(_, n)| n)
            .collect()
    }

    #[test]
    fn prefixed_by_default_and_raw_kept() {
        let got = assign("fs", true, &["read_file", "list-dir"]);
        assert_eq!(
            got,
            [
                ("read_file".to_owned(), "fs__read_file".to_owned()),
                ("list-dir".to_owned(), "fs__list-dir".to_owned())
            ]
        );
        assert_eq!(names("graph", false, &["kg_search"]), ["kg_search"]);
    }

    #[test]
    fn odd_characters_are_replaced() {
        assert_eq!(
            names("s", true, &["get.weather", "a b", "ü"]),
            ["s__get_weather", "s__a_b", "s___"]
        );
        assert_eq!(names("s", false, &[""]), ["_"]);
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let raw = "x".repeat(100);
        let a = names("server", true, &[&raw]);
        assert_eq!(a[0].len(), 64);
        assert!(valid(&a[0]));
        assert!(a[0].starts_with("server__xxxx"));
        // Stable: same input, same name, on every run.
        assert_eq!(a, names("server", true, &[&raw]));
        // Two long names sharing their first 55 characters still differ.
        let raw2 = format!("{}y", "x".repeat(99));
        let b = names("server", true, &[&raw, &raw2]);
        assert_ne!(b[0], b[1]);
        // A name of exactly 64 is left alone.
        let exact = "y".repeat(64 - "s__".len());
        assert_eq!(names("s", true, &[&exact]), [format!("s__{exact}")]);
    }

    #[test]
    fn collisions_within_a_server_are_told_apart_in_any_order() {
        let one = assign("s", true, &["a.b", "a_b", "a:b"]);
        let two = assign("s", true, &["a:b", "a_b", "a.b"]);
        let find =
            |v: &[(String, String)], raw: &str| v.iter().find(|(r, _)| r == raw).unwrap().1.clone();
        // The one spelt safely keeps its plain name.
        assert_eq!(find(&one, "a_b"), "s__a_b");
        for raw in ["a.b", "a_b", "a:b"] {
            assert_eq!(find(&one, raw), find(&two, raw));
        }
        let all: HashSet<_> = one.iter().map(|(_, n)| n.clone()).collect();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|n| valid(n)));
        // prefix_tools = false is sanitised the same way.
        let bare = names("s", false, &["a.b", "a_b"]);
        assert_eq!(bare[1], "a_b");
        assert!(bare[0].starts_with("a_b_") && valid(&bare[0]));
    }

    #[test]
    fn duplicates_in_a_listing_are_kept_once() {
        assert_eq!(names("s", true, &["echo", "echo"]), ["s__echo"]);
    }

    #[test]
    fn hash_is_pinned() {
        // Changing the hash renames tools and re-pays every cached prefix.
        assert_eq!(format!("{:08x}", short_hash("server", "tool")), "4e75099d");
    }
}
