//! The approval box's body as it is drawn, and what of it has been on
//! screen.
//!
//! Each line is cut into rows at the box's width, grapheme by grapheme and
//! by display width (as ratatui measures a cell), so nothing is cut off at
//! the right border: a command padded with 400 spaces and then `; curl …`
//! shows its tail on a later row. Whitespace is kept exactly, never trimmed
//! or folded, so spaces take the rows they take and the text after them
//! lands where it belongs. Rows after a line's first start with the box's
//! indentation.
//!
//! What was seen is counted in positions of the body (every byte of every
//! line, and every line's end), not in rows: a resize wraps the rows anew
//! and what was drawn stays seen, and jumping to the end sees only the
//! end. A yes waits until every position has been drawn.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// What a row after a line's first starts with.
pub const INDENT: &str = "  ";

/// One row of the body at the current width: bytes `start..end` of line
/// `line`.
#[derive(Debug, Clone, Copy)]
struct Row {
    line: usize,
    start: usize,
    end: usize,
    /// The row holds a grapheme wider than the box: drawing it would cut it,
    /// so drawing the row does not count as seeing it.
    cut: bool,
}

#[derive(Debug)]
pub struct Body {
    lines: Vec<String>,
    /// Where each line starts among the body's positions.
    starts: Vec<usize>,
    total: usize,
    /// The width the rows were cut for, and the rows.
    width: usize,
    rows: Vec<Row>,
    /// The positions drawn so far: sorted, disjoint, merged ranges.
    seen: Vec<(usize, usize)>,
}

impl Body {
    /// A body of escaped lines; none at all is one empty line, which still
    /// has to be drawn before it counts as seen.
    pub fn new(mut lines: Vec<String>) -> Self {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let mut starts = Vec::with_capacity(lines.len());
        let mut total = 0;
        for line in &lines {
            starts.push(total);
            total += line.len() + 1;
        }
        Self {
            lines,
            starts,
            total,
            width: 0,
            rows: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Cuts the rows for `width` columns (if the width changed); how many
    /// there are.
    pub fn wrap(&mut self, width: usize) -> usize {
        let width = width.max(1);
        if width != self.width || self.rows.is_empty() {
            self.width = width;
            self.rows = self
                .lines
                .iter()
                .enumerate()
                .flat_map(|(i, line)| rows_of(i, line, width))
                .collect();
        }
        self.rows.len()
    }

    /// Rows at the last width.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Row `i`: the text of the line it belongs to (for its style), its own
    /// text, and whether it continues a line (and so is indented).
    pub fn row(&self, i: usize) -> Option<(&str, &str, bool)> {
        let row = self.rows.get(i)?;
        let line = self.lines.get(row.line)?;
        Some((line, line.get(row.start..row.end)?, row.start > 0))
    }

    /// A frame drew rows `top..top + count`.
    pub fn shown(&mut self, top: usize, count: usize) {
        let end = top.saturating_add(count).min(self.rows.len());
        for i in top..end {
            if let Some((from, to)) = self.span(i) {
                self.add(from, to);
            }
        }
    }

    /// Whether every position of the body has been drawn.
    pub fn seen_all(&self) -> bool {
        self.seen.first() == Some(&(0, self.total))
    }

    /// Rows at the current width not yet wholly drawn.
    pub fn unseen_rows(&self) -> usize {
        (0..self.rows.len())
            .filter(|&i| {
                let Some((from, to)) = self.span(i) else {
                    return true;
                };
                let k = self.seen.partition_point(|&(_, end)| end < to);
                !self
                    .seen
                    .get(k)
                    .is_some_and(|&(start, end)| start <= from && to <= end)
            })
            .count()
    }

    /// The positions row `i` shows; `None` for one drawing cannot show
    /// whole.
    fn span(&self, i: usize) -> Option<(usize, usize)> {
        let row = self.rows.get(i)?;
        if row.cut {
            return None;
        }
        let start = *self.starts.get(row.line)?;
        let len = self.lines.get(row.line)?.len();
        // A line's last row shows its end too.
        let end = if row.end == len { row.end + 1 } else { row.end };
        Some((start + row.start, start + end))
    }

    fn add(&mut self, from: usize, to: usize) {
        let k = self.seen.partition_point(|&(_, end)| end < from);
        let mut merged = (from, to);
        let mut last = k;
        while let Some(&(start, end)) = self.seen.get(last) {
            if start > to {
                break;
            }
            merged = (merged.0.min(start), merged.1.max(end));
            last += 1;
        }
        self.seen.splice(k..last, [merged]);
    }
}

/// The rows of line `i` at `width` columns: the first as wide as the box,
/// the rest narrower by the indentation (unless the box is too narrow to
/// indent).
fn rows_of(i: usize, line: &str, width: usize) -> Vec<Row> {
    let indent = if width > INDENT.len() * 2 {
        INDENT.len()
    } else {
        0
    };
    let mut rows = Vec::new();
    let mut row = Row {
        line: i,
        start: 0,
        end: 0,
        cut: false,
    };
    let mut room = width;
    for (at, grapheme) in line.grapheme_indices(true) {
        let w = grapheme.width();
        if w > room && row.end > row.start {
            rows.push(row);
            row = Row {
                line: i,
                start: at,
                end: at,
                cut: false,
            };
            room = width - indent;
        }
        row.cut |= w > room;
        row.end = at + grapheme.len();
        room = room.saturating_sub(w);
    }
    rows.push(row);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(body: &Body) -> Vec<String> {
        (0..body.len())
            .map(|i| {
                let (_, text, continued) = body.row(i).unwrap();
                format!("{}{text}", if continued { INDENT } else { "" })
            })
            .collect()
    }

    #[test]
    fn spaces_are_kept_and_the_tail_gets_a_row_of_its_own() {
        let line = format!("  $ echo ok{}; curl http://127.0.0.1:1/x", " ".repeat(400));
        let mut body = Body::new(vec![line.clone()]);
        let rows = body.wrap(40);
        assert_eq!(rows, 1 + (line.len() - 40).div_ceil(38));
        let shown = texts(&body);
        assert!(shown.iter().all(|r| r.width() <= 40), "{shown:?}");
        assert!(shown[1..].iter().all(|r| r.starts_with(INDENT)));
        let joined: String = (0..rows).map(|i| body.row(i).unwrap().1).collect();
        assert_eq!(joined, line, "every byte is on some row, spaces included");
        assert!(shown.iter().any(|r| r.contains("; curl ht")), "{shown:?}");
    }

    #[test]
    fn rows_are_cut_by_display_width() {
        let mut body = Body::new(vec!["日本語のコマンド".to_owned()]);
        body.wrap(7);
        let shown = texts(&body);
        assert_eq!(shown[0], "日本語");
        assert!(shown.iter().all(|r| r.width() <= 7), "{shown:?}");
    }

    #[test]
    fn only_what_was_drawn_is_seen_whatever_the_width() {
        let lines: Vec<String> = (0..10)
            .map(|i| format!("line {i} {}", "x".repeat(30)))
            .collect();
        let mut body = Body::new(lines);
        body.wrap(20);
        let rows = body.len();
        body.shown(rows - 4, 4);
        assert!(!body.seen_all(), "the end alone is not all");
        assert_eq!(body.unseen_rows(), rows - 4);
        body.wrap(80);
        assert_eq!(body.len(), 10);
        assert_eq!(body.unseen_rows(), 8, "the last two lines stay seen");
        body.shown(0, 8);
        assert!(body.seen_all());
    }

    #[test]
    fn a_grapheme_wider_than_the_box_is_never_seen_there() {
        let mut body = Body::new(vec!["日".to_owned()]);
        body.wrap(1);
        body.shown(0, 1);
        assert!(!body.seen_all());
        body.wrap(2);
        body.shown(0, 1);
        assert!(body.seen_all());
    }

    #[test]
    fn an_empty_body_is_seen_once_drawn() {
        let mut body = Body::new(Vec::new());
        body.wrap(10);
        assert!(!body.seen_all());
        body.shown(0, 1);
        assert!(body.seen_all());
    }
}
