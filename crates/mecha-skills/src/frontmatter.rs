//! Splitting SKILL.md into its YAML frontmatter and markdown body, by hand
//! and with a size cap, before any YAML parser sees a byte: a cap on the
//! whole file would not stop an alias bomb, but it bounds what the budgeted
//! parser is handed.

/// The most bytes the frontmatter may take.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// A SKILL.md split in two.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Split<'a> {
    /// The frontmatter's lines, `\r` stripped, joined by `\n`.
    pub yaml: String,
    /// The markdown after the closing `---` line, leading blank lines and
    /// trailing whitespace trimmed.
    pub body: &'a str,
}

/// Splits `text` (a BOM tolerated, CRLF or LF line ends). The frontmatter
/// opens with a `---` line as the first line and closes at the next `---`
/// (or YAML's `...`) line; trailing whitespace on either is tolerated.
pub(crate) fn split(text: &str) -> Result<Split<'_>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if !is_fence(first, "---") {
        return Err(
            "SKILL.md has no frontmatter — it has to start with a `---` line, then \
                    `name:` and `description:` lines, then a closing `---`"
                .to_owned(),
        );
    }
    let mut offset = first.len();
    let mut yaml = String::new();
    for line in lines {
        if is_fence(line, "---") || is_fence(line, "...") {
            let body = &text[offset + line.len()..];
            return Ok(Split {
                yaml,
                body: body.trim_start_matches(['\r', '\n']).trim_end(),
            });
        }
        offset += line.len();
        if offset > MAX_FRONTMATTER_BYTES {
            return Err(format!(
                "the frontmatter runs past {} KB without a closing `---` line — close it \
                 with `---` (the body goes after it)",
                MAX_FRONTMATTER_BYTES / 1024
            ));
        }
        yaml.push_str(line.trim_end_matches(['\n', '\r']));
        yaml.push('\n');
    }
    Err(
        "the frontmatter opened by the first `---` line is never closed — add a `---` line \
         after the last key"
            .to_owned(),
    )
}

fn is_fence(line: &str, fence: &str) -> bool {
    line.trim_end() == fence
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn bom_crlf_and_trailing_whitespace_on_the_fences() {
        let s = split("\u{feff}--- \r\nname: a\r\n---\t\r\n\r\n# Body\r\n").unwrap();
        assert_eq!(s.yaml, "name: a\n");
        assert_eq!(s.body, "# Body");
    }

    #[test]
    fn a_fence_that_is_not_first_is_no_frontmatter() {
        assert!(
            split("\n---\nname: a\n---\n")
                .unwrap_err()
                .contains("no frontmatter")
        );
        assert!(split("# Title\n").unwrap_err().contains("no frontmatter"));
        assert!(split("").unwrap_err().contains("no frontmatter"));
    }

    #[test]
    fn unclosed_and_oversized_frontmatter_are_refused() {
        assert!(
            split("---\nname: a\n")
                .unwrap_err()
                .contains("never closed")
        );
        let big = format!("---\n{}---\n", "k: v\n".repeat(20_000));
        assert!(split(&big).unwrap_err().contains("runs past 64 KB"));
    }

    #[test]
    fn a_dashed_line_inside_a_value_is_not_a_fence() {
        let s = split("---\nname: a\ndescription: x --- y\n---\nbody\n---\nmore").unwrap();
        assert_eq!(s.yaml, "name: a\ndescription: x --- y\n");
        assert_eq!(s.body, "body\n---\nmore");
    }
}
