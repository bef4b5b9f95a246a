//! Reading the frontmatter's YAML with budgets, and saying precisely what
//! is wrong with a field mecha knows when it cannot be read.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Error;

/// The keys mecha reads. Every other key (the standard's `license`,
/// `compatibility`, `metadata`, `allowed-tools`, or another harness's) is
/// ignored, so a skill written for another tool still loads.
///
/// Each is `Some(None)` when the key is there with no value, so `tools:`
/// with nothing after it is told apart from no `tools` at all.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Raw {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub triggers: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "present")]
    pub tools: Option<Option<Vec<String>>>,
}

fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Why strict parsing failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The document expands far beyond its size (an alias bomb): refused,
    /// never retried leniently.
    Budget(String),
    /// A field mecha knows has the wrong shape (a description that is a
    /// list): an authoring mistake, refused with the fix.
    Shape(String),
    /// Anything else, with the frontmatter line it was found on (1-based).
    Syntax { line: usize, message: String },
}

/// Budgets far above any real frontmatter (a few dozen events) and far
/// below what a few hundred bytes of nested aliases would expand to.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 20_000,
            max_aliases: 200,
            max_anchors: 200,
            max_recorded_anchor_events: 20_000,
            flow_nesting_limit: 32,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 20_000,
            max_replay_stack_depth: 16,
        },
    }
}

/// Parses `yaml` strictly into the keys mecha reads.
pub(crate) fn parse(yaml: &str) -> Result<Raw, Failure> {
    if yaml.trim().is_empty() {
        return Ok(Raw::default());
    }
    let err = match serde_saphyr::from_str_with_options::<Raw>(yaml, options()) {
        Ok(raw) => return Ok(raw),
        Err(err) => err,
    };
    let root = root(&err);
    let message = root.to_string();
    if is_budget(root) {
        return Err(Failure::Budget(message));
    }
    if let Ok(shape) = serde_saphyr::from_str_with_options::<Shape>(yaml, options())
        && let Some(mistake) = shape.mistake()
    {
        return Err(Failure::Shape(mistake));
    }
    let line = err
        .location()
        .map_or(1, |l| usize::try_from(l.line()).unwrap_or(1));
    Err(Failure::Syntax { line, message })
}

/// The error beneath the wrappers that add snippets and alias locations.
fn root(mut err: &Error) -> &Error {
    while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = err {
        err = error;
    }
    err
}

fn is_budget(err: &Error) -> bool {
    matches!(
        err,
        Error::Budget { .. }
            | Error::AliasReplayLimitExceeded { .. }
            | Error::AliasExpansionLimitExceeded { .. }
            | Error::AliasReplayStackDepthExceeded { .. }
            | Error::AliasReplayCounterOverflow { .. }
    )
}

/// What kind of node each known key holds, read only when the typed parse
/// failed, to name the mistake instead of quoting a parser.
#[derive(Deserialize)]
struct Shape {
    name: Option<Kind>,
    description: Option<Kind>,
    triggers: Option<Kind>,
    tools: Option<Kind>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Scalar,
    List,
    Mapping,
}

impl Kind {
    fn article(self) -> &'static str {
        match self {
            Kind::Scalar => "a single value",
            Kind::List => "a list",
            Kind::Mapping => "a mapping",
        }
    }
}

impl Shape {
    fn mistake(&self) -> Option<String> {
        let wanted = [
            ("name", self.name, Kind::Scalar),
            ("description", self.description, Kind::Scalar),
            ("triggers", self.triggers, Kind::List),
            ("tools", self.tools, Kind::List),
        ];
        let (key, got, want) = wanted
            .into_iter()
            .find_map(|(key, got, want)| got.filter(|g| *g != want).map(|g| (key, g, want)))?;
        Some(match (key, want) {
            ("description", _) => format!(
                "`description` is {}, but it has to be one string — write it as sentences \
                 (a `>` block folds several lines into one)",
                got.article()
            ),
            (_, Kind::Scalar) => {
                format!("`{key}` is {}, but it has to be one string", got.article())
            }
            _ => format!(
                "`{key}` is {}, but it has to be a list of names — write `{key}: [a, b]`",
                got.article()
            ),
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Scalar)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Scalar)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Scalar)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Scalar)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::Scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Kind::List)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Kind::Mapping)
    }
}
