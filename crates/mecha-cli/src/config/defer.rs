//! `[tools] defer_schemas_over_bytes`: how large MCP tools' schemas may
//! grow, all told, before they are deferred behind `tool_search`. A number
//! of bytes (0: always defer) or `"never"`. A project may only lower it: a
//! smaller prompt is never less safe, and a project has no say in what the
//! user pays for.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// When MCP tools' schemas are deferred. Ordered so that a lower value
/// defers more (`Never` is the highest), as a project's narrowing wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeferSchemas {
    /// Deferred while their serialized definitions add up to more than this.
    Over(usize),
    /// Always sent whole.
    Never,
}

/// The default: a server or two with modest schemas go whole; several
/// large ones (the README's five: about 140 KB) are deferred.
pub const DEFAULT_DEFER_SCHEMAS: DeferSchemas = DeferSchemas::Over(24_000);

impl DeferSchemas {
    /// The threshold the agent takes (`None`: never defer).
    pub fn over_bytes(self) -> Option<usize> {
        match self {
            Self::Over(bytes) => Some(bytes),
            Self::Never => None,
        }
    }
}

impl fmt::Display for DeferSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Over(bytes) => write!(f, "{bytes}"),
            Self::Never => f.write_str("\"never\""),
        }
    }
}

impl serde::Serialize for DeferSchemas {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Over(bytes) => serializer.serialize_u64(*bytes as u64),
            Self::Never => serializer.serialize_str("never"),
        }
    }
}

impl<'de> Deserialize<'de> for DeferSchemas {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DeferVisitor)
    }
}

struct DeferVisitor;

const EXPECTED: &str = "a number of bytes (0 defers every MCP tool's schema) or \"never\"";

impl Visitor<'_> for DeferVisitor {
    type Value = DeferSchemas;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<DeferSchemas, E> {
        usize::try_from(v)
            .map(DeferSchemas::Over)
            .map_err(|_| E::custom(format!("{v} is too large; use {EXPECTED}")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<DeferSchemas, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format!("{v} is negative; use {EXPECTED}"))),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DeferSchemas, E> {
        match v {
            "never" => Ok(DeferSchemas::Never),
            other => Err(E::custom(format!("\"{other}\" is not {EXPECTED}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, Deserialize)]
    struct T {
        v: DeferSchemas,
    }

    fn parse(text: &str) -> Result<DeferSchemas, String> {
        toml::from_str::<T>(text)
            .map(|t| t.v)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bytes_and_never_are_the_spellings() {
        assert_eq!(parse("v = 0").unwrap(), DeferSchemas::Over(0));
        assert_eq!(parse("v = 5000").unwrap(), DeferSchemas::Over(5000));
        assert_eq!(parse("v = \"never\"").unwrap(), DeferSchemas::Never);
        let bad = parse("v = \"always\"").unwrap_err();
        assert!(bad.contains("\"always\" is not a number of bytes"), "{bad}");
        let negative = parse("v = -1").unwrap_err();
        assert!(negative.contains("-1 is negative"), "{negative}");
    }

    #[test]
    fn never_is_above_every_threshold() {
        assert!(DeferSchemas::Over(usize::MAX) < DeferSchemas::Never);
        assert!(DeferSchemas::Over(1) < DeferSchemas::Over(2));
    }
}
