//! The catalogue of deferred tools in `tool_search`'s description: one
//! line each, the tool's name and as much of its first sentence as a fixed
//! budget leaves. Every name is always there (the model calls by name);
//! the sentences share what the names leave of the budget, short ones
//! whole and long ones cut to one common length, so a large surface still
//! costs about [`CATALOGUE_BYTES`] and not its schemas. The same tools
//! always give the same bytes.

use mecha_core::{ToolDefinition, first_sentence};

/// What the lines may take, names and sentences, before sentences are cut.
/// About 1,400 tokens: the five servers of the README (127 tools) fit with
/// a few words each.
pub(super) const CATALOGUE_BYTES: usize = 5_500;

/// A longer first sentence is cut even when the budget has room.
const MAX_SENTENCE: usize = 90;

/// Below this a cut sentence says too little to be worth its bytes: the
/// lines are names alone.
const MIN_SENTENCE: usize = 12;

const HEAD: &str = "Loads the full schemas of the deferred tools listed below (name: what it \
                    does). Call it with names or keywords before using one; each tool it returns \
                    is in your tool list from the next request on. A listed tool called before it \
                    is loaded only returns its schema.\n";

/// `tool_search`'s description for these deferred tools (in name order).
pub(super) fn describe<'d>(deferred: impl Iterator<Item = &'d ToolDefinition>) -> String {
    let lines: Vec<(&str, &str)> = deferred
        .map(|d| (d.name.as_str(), first_sentence(&d.description)))
        .collect();
    let names: usize = lines.iter().map(|(name, _)| name.len() + 1).sum();
    let lengths: Vec<usize> = lines.iter().map(|(_, s)| s.len()).collect();
    let cap = sentence_cap(&lengths, CATALOGUE_BYTES.saturating_sub(names));
    let mut out = String::from(HEAD);
    for (name, sentence) in lines {
        out.push_str(name);
        let sentence = cut(sentence, cap);
        if !sentence.is_empty() {
            out.push_str(": ");
            out.push_str(&sentence);
        }
        out.push('\n');
    }
    out
}

/// The longest a sentence may be for all of them (each with its ": ") to
/// fit `room`; 0 when even [`MIN_SENTENCE`] does not.
fn sentence_cap(lengths: &[usize], room: usize) -> usize {
    let cost = |cap: usize| -> usize {
        lengths
            .iter()
            .map(|&l| match l.min(cap) {
                0 => 0,
                kept => kept + 2,
            })
            .sum()
    };
    // The cost only grows with the cap: the largest that fits.
    let (mut low, mut high) = (0, MAX_SENTENCE);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if cost(mid) <= room {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    if low < MIN_SENTENCE { 0 } else { low }
}

/// `sentence` in at most `cap` bytes: whole, or cut (after a word when
/// one ends in the second half, else at a character boundary) and ended
/// with "…" so the model knows there was more. A cap of 0 keeps nothing.
fn cut(sentence: &str, cap: usize) -> String {
    if cap == 0 {
        return String::new();
    }
    if sentence.len() <= cap {
        return sentence.to_owned();
    }
    let mut end = cap.saturating_sub('…'.len_utf8());
    while !sentence.is_char_boundary(end) {
        end -= 1;
    }
    let kept = &sentence[..end];
    let kept = match kept.rfind(' ') {
        Some(space) if space >= end / 2 => &kept[..space],
        _ => kept,
    };
    format!("{}…", kept.trim_end())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn definition(name: String, description: &str) -> ToolDefinition {
        ToolDefinition {
            name,
            description: description.to_owned(),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn a_few_tools_keep_their_first_sentences_whole() {
        let tools = [
            definition("a__one".into(), "Does one thing. And more."),
            definition("a__two".into(), "Does two things\nover lines."),
        ];
        let text = describe(tools.iter());
        assert!(
            text.ends_with("\na__one: Does one thing.\na__two: Does two things\n"),
            "{text}"
        );
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn many_tools_share_the_budget_and_keep_every_name() {
        let long = "Reads a thing from somewhere far away and returns it in pieces. Then more.";
        let tools: Vec<ToolDefinition> = (0..130)
            .map(|n| definition(format!("server__tool_{n:03}"), long))
            .chain([definition("server__zz".into(), "Short.")])
            .collect();
        let text = describe(tools.iter());
        let lines = &text[HEAD.len()..];
        assert!(lines.len() <= CATALOGUE_BYTES + 200, "{}", lines.len());
        assert_eq!(lines.lines().count(), 131);
        let cut = lines
            .lines()
            .find(|l| l.starts_with("server__tool_129: "))
            .unwrap();
        assert!(cut.starts_with("server__tool_129: Reads a thing"), "{cut}");
        // Cut after a word.
        assert!(cut.ends_with('…') && !cut.ends_with(" …"), "{cut}");
        assert!(long.contains(&cut["server__tool_129: ".len()..cut.len() - '…'.len_utf8()]));
        assert!(lines.ends_with("server__zz: Short.\n"), "{lines}");
    }

    #[test]
    fn too_many_for_any_sentence_gives_names_alone() {
        let tools: Vec<ToolDefinition> = (0..400)
            .map(|n| definition(format!("server__tool_{n:03}"), "Does a thing well."))
            .collect();
        let text = describe(tools.iter());
        assert!(text.ends_with("\nserver__tool_399\n"), "{text}");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let cut = cut(&"é".repeat(50), 20);
        assert!(cut.len() <= 20 && cut.ends_with('…'), "{cut}");
    }
}
