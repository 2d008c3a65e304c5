//! Tables padded into columns under a rule of dashes: `pip list`, `pip list --outdated`.
//! The padding is runs of blanks, which cost tokens and say only how wide each column is,
//! and the rule already says that. From Standard up each row's cells are joined by one
//! blank (`aiohttp 3.14.5`); the header and the rule stay, and [`expand`] pads the rows
//! again from the rule, byte for byte. A table with a cell that holds a blank or overflows
//! its column is left as sent.

use super::lines::{join, Row};
use super::Level;

/// Fewest rows worth a rewrite.
const MIN_ROWS: usize = 3;

/// The widths of a rule's columns: `------- -----` → [7, 5]. At least two columns.
fn rule_widths(line: &str) -> Option<Vec<usize>> {
    let widths: Vec<usize> = line.split(' ').map(str::len).collect();
    let dashes = line.bytes().all(|b| b == b'-' || b == b' ');
    (dashes && widths.len() >= 2 && widths.iter().all(|&w| w > 0)).then_some(widths)
}

/// Whether `header` names the columns `widths` draws: one word at the start of each.
fn heads(header: &str, widths: &[usize]) -> bool {
    let mut at = 0;
    let mut cells = header.split_whitespace();
    for (i, &width) in widths.iter().enumerate() {
        let Some(cell) = cells.next() else {
            return false;
        };
        let starts = header.get(at..).is_some_and(|rest| rest.starts_with(cell));
        let fits = i + 1 == widths.len() || cell.len() <= width;
        if !starts || !fits {
            return false;
        }
        at += width + 1;
    }
    cells.next().is_none()
}

/// A row's cells padded to `widths`, the last one not.
fn pad(cells: &[&str], widths: &[usize]) -> String {
    let mut out = String::new();
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(cell);
        if i + 1 < widths.len() {
            out.extend(std::iter::repeat_n(' ', width.saturating_sub(cell.len())));
        }
    }
    out
}

/// A row's cells if padding them again gives the row back.
fn cells<'a>(row: &'a str, widths: &[usize]) -> Option<Vec<&'a str>> {
    let cells: Vec<&str> = row.split_whitespace().collect();
    (cells.len() == widths.len() && pad(&cells, widths) == row).then_some(cells)
}

/// Where a table starts in `lines`: the header's index and the rule's widths.
fn table_at(lines: &[&str], i: usize) -> Option<Vec<usize>> {
    let header = lines.get(i)?;
    let widths = rule_widths(lines.get(i + 1)?)?;
    heads(header, &widths).then_some(widths)
}

/// Whether a text is such a table (for the classifier): a header, a rule, rows that fit.
pub(crate) fn is_table(text: &str) -> bool {
    let mut lines = text.trim().lines();
    let (Some(header), Some(rule)) = (lines.next(), lines.next()) else {
        return false;
    };
    let Some(widths) = table_at(&[header, rule], 0) else {
        return false;
    };
    let mut rows = 0;
    for line in lines {
        if cells(line, &widths).is_none() {
            return false;
        }
        rows += 1;
    }
    rows >= MIN_ROWS
}

/// Rows with one blank between cells. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let out = join_cells(&rows);
    // A row that overflows its column would be padded as if it fitted: such a table
    // stays as sent.
    if expand(&join(&out)) == join(&rows) {
        out
    } else {
        rows
    }
}

/// Each table's header and rule as they are, its rows' cells joined by one blank.
fn join_cells(rows: &[Row]) -> Vec<Row> {
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let mut out = Vec::with_capacity(rows.len());
    let mut widths: Option<Vec<usize>> = None;
    let mut i = 0;
    while let Some(row) = rows.get(i) {
        if let Some(w) = table_at(&texts, i) {
            out.extend(rows.get(i..i + 2).unwrap_or_default().iter().cloned());
            widths = Some(w);
            i += 2;
            continue;
        }
        let cells = widths
            .as_deref()
            .filter(|_| !row.is_marker())
            .and_then(|w| cells(&row.text, w));
        match cells {
            Some(cells) => out.push(Row::plain(cells.join(" "))),
            None => {
                // a row that does not fit ends the table
                widths = None;
                out.push(row.clone());
            }
        }
        i += 1;
    }
    out
}

/// Pads the rows under each header and rule again.
pub fn expand(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut widths: Option<Vec<usize>> = None;
    let mut rule_next = false;
    for (i, line) in lines.iter().enumerate() {
        if rule_next {
            rule_next = false;
            out.push((*line).to_owned());
            continue;
        }
        if let Some(w) = table_at(&lines, i) {
            widths = Some(w);
            rule_next = true;
            out.push((*line).to_owned());
            continue;
        }
        let cells: Option<Vec<&str>> = widths.as_ref().and_then(|w| {
            let cells: Vec<&str> = line.split(' ').collect();
            (cells.len() == w.len() && cells.iter().all(|c| !c.is_empty())).then_some(cells)
        });
        match (&widths, cells) {
            (Some(w), Some(cells)) => out.push(pad(&cells, w)),
            _ => {
                widths = None;
                out.push((*line).to_owned());
            }
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::rows;

    const PIP_LIST: &str = include_str!("fixtures/pip_list.txt");
    const PIP_OUTDATED: &str = include_str!("fixtures/pip_list_outdated.txt");

    /// `pip list` and `pip list --outdated` (real outputs): read as tables, shorter, the
    /// same each time, padded back line for line.
    #[test]
    fn pip_tables_lose_their_padding_and_get_it_back() {
        use crate::compact::{classify, compact, expand_listings};
        for text in [PIP_LIST, PIP_OUTDATED] {
            assert_eq!(classify::classify(text), classify::Kind::Columns);
            let out = compact(text, Level::Auto).unwrap();
            assert!(out.len() * 3 < text.len() * 2, "{out}");
            assert_eq!(compact(text, Level::Auto), Some(out.clone()));
            assert_eq!(expand_listings(&out).trim_end(), text.trim_end());
        }
        let out = compact(PIP_OUTDATED, Level::Auto).unwrap();
        assert!(
            out.contains("\ncertifi 2026.5.20 2026.10.19.post1 wheel\n"),
            "{out}"
        );
    }

    #[test]
    fn rows_join_with_one_blank() {
        let text = "Package    Version\n---------- -------\nanyio      4.16.0\nattrs      26.1.0\nzipp       4.1.2";
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(
            out,
            "Package    Version\n---------- -------\nanyio 4.16.0\nattrs 26.1.0\nzipp 4.1.2"
        );
        assert_eq!(expand(&out), text);
    }

    /// A cell with a blank in it, a rule without a header, text after the table.
    #[test]
    fn what_does_not_fit_stays_and_comes_back() {
        for text in [
            "Package    Location\n---------- --------\nanyio      /my dir/x\nattrs      /y\nzipp       /z\nmore       /w",
            "---------- -------\nanyio      4.16.0\nattrs      26.1.0\nzipp       4.1.2",
            "Name Size\n---- ----\na    1\nb    2\nc    3\n\nTotal: 3 files",
        ] {
            let out = join(&compact(rows(text), Level::Standard));
            assert_eq!(expand(&out), text, "{out}");
        }
        assert!(!is_table("Package    Location\n---------- --------\nanyio      /my dir/x\nattrs      /y\nzipp       /z"));
    }
}
