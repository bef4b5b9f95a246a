//! The fallback for frontmatter that strict YAML rejects. The common slip
//! in published skills is an unquoted `: ` inside a plain value
//! (`description: Use when: (1) …`), which every YAML parser refuses and
//! every human reads fine. Each top-level `key: value` entry is parsed on
//! its own; an entry that still fails is read as plain text, and the line
//! is reported so the author can quote it.

use crate::yaml::{self, Failure, Raw};

/// A line read as plain text instead of YAML.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Slip {
    /// The frontmatter line (1-based) the entry starts on.
    pub line: usize,
    pub key: String,
}

/// One top-level entry: its key, first line (1-based) and its lines.
struct Entry<'a> {
    key: &'a str,
    line: usize,
    lines: Vec<&'a str>,
}

/// Reads `yaml` entry by entry. `None` when it is not a list of top-level
/// `key: value` lines at all, so there is nothing to fall back to; a
/// budget breach or a known key of the wrong shape is refused as it is.
pub(crate) fn parse(yaml: &str) -> Result<Option<(Raw, Vec<Slip>)>, Failure> {
    let Some(entries) = entries(yaml) else {
        return Ok(None);
    };
    let mut raw = Raw::default();
    let mut slips = Vec::new();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for entry in entries {
        let known = matches!(entry.key, "name" | "description" | "triggers" | "tools");
        if let Some((_, first)) = seen.iter().find(|(k, _)| known && *k == entry.key) {
            return Err(Failure::Shape(format!(
                "`{}` is given twice (frontmatter lines {first} and {}) — keep one",
                entry.key, entry.line
            )));
        }
        seen.push((entry.key, entry.line));
        let one = match yaml::parse(&entry.lines.join("\n")) {
            Ok(one) => one,
            Err(Failure::Syntax { message, .. }) => {
                let Some(one) = plain(&entry, &message)? else {
                    continue;
                };
                slips.push(Slip {
                    line: entry.line,
                    key: entry.key.to_owned(),
                });
                one
            }
            Err(other) => return Err(other),
        };
        raw.name = raw.name.or(one.name);
        raw.description = raw.description.or(one.description);
        raw.triggers = raw.triggers.or(one.triggers);
        raw.tools = raw.tools.or(one.tools);
    }
    Ok(Some((raw, slips)))
}

/// The entry's value as plain text, continuation lines folded with single
/// spaces as YAML folds a plain scalar. Only `name` and `description` can
/// be plain text: a list that does not parse is refused rather than
/// guessed at (a dropped trigger or tool is a procedure changed), and keys
/// mecha ignores are skipped.
fn plain(entry: &Entry<'_>, message: &str) -> Result<Option<Raw>, Failure> {
    let Some(first) = entry.lines.first() else {
        return Ok(None);
    };
    let value = first[entry.key.len() + 1..].trim();
    let text = std::iter::once(value)
        .chain(entry.lines[1..].iter().map(|l| l.trim()))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut raw = Raw::default();
    match entry.key {
        "name" => raw.name = Some(Some(text)),
        "description" => raw.description = Some(Some(text)),
        "triggers" | "tools" => {
            return Err(Failure::Shape(format!(
                "`{key}` (frontmatter line {line}) cannot be read ({message}) — write it as a \
                 list of names: `{key}: [a, b]`",
                key = entry.key,
                line = entry.line
            )));
        }
        _ => return Ok(None),
    }
    Ok(Some(raw))
}

/// Groups the lines into top-level entries; `None` if a top-level line is
/// not `key:` (a list, a quoted or complex key), which is beyond a slip.
fn entries(yaml: &str) -> Option<Vec<Entry<'_>>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    for (i, line) in yaml.lines().enumerate() {
        let top = !line.starts_with([' ', '\t']);
        if top && (line.trim().is_empty() || line.starts_with('#')) {
            continue;
        }
        if !top {
            out.last_mut()?.lines.push(line);
            continue;
        }
        let (key, rest) = line.split_once(':')?;
        let well_formed = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && (rest.is_empty() || rest.starts_with([' ', '\t']));
        if !well_formed {
            return None;
        }
        out.push(Entry {
            key,
            line: i + 1,
            lines: vec![line],
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn only_the_broken_entry_is_read_as_plain_text() {
        let yaml = "name: a\ndescription: Use when: (1) x\n  and: y\ntriggers: [p, q]\n";
        let (raw, slips) = parse(yaml).unwrap().unwrap();
        assert_eq!(raw.name, Some(Some("a".into())));
        assert_eq!(raw.description, Some(Some("Use when: (1) x and: y".into())));
        assert_eq!(raw.triggers, Some(Some(vec!["p".into(), "q".into()])));
        assert_eq!(
            slips,
            vec![Slip {
                line: 2,
                key: "description".into()
            }]
        );
    }

    #[test]
    fn a_list_that_cannot_be_read_is_refused_not_dropped() {
        let Err(Failure::Shape(why)) = parse("name: a\ntriggers: [a, [b]]\nx: y: z\n") else {
            panic!("an unreadable trigger list was accepted");
        };
        assert!(
            why.starts_with("`triggers` (frontmatter line 2) cannot be read ("),
            "{why}"
        );
    }

    #[test]
    fn a_top_level_list_is_beyond_a_slip() {
        assert!(parse("- a\n- b\n").unwrap().is_none());
    }

    #[test]
    fn a_known_key_twice_is_refused() {
        let Err(Failure::Shape(why)) = parse("name: a\nname: b\n") else {
            panic!("a duplicate name was accepted");
        };
        assert!(
            why.contains("given twice (frontmatter lines 1 and 2)"),
            "{why}"
        );
    }
}
