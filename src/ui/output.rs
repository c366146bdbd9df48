//! What a command hands back: one JSON value for `--json`, text for people.

use std::io::IsTerminal;

use owo_colors::OwoColorize;
use serde::Serialize;
use unicode_width::UnicodeWidthStr;

pub struct Out {
    pub json: serde_json::Value,
    pub text: String,
    /// The text carries orange's own terminal styles (colours), its other text made safe
    /// piece by piece; else it is plain and made safe whole when printed ([`Out::printed`]).
    styled: bool,
}

impl Out {
    pub fn new(value: impl Serialize, text: impl Into<String>) -> Out {
        Out {
            json: serde_json::to_value(value).expect("output serializes"),
            text: text.into(),
            styled: false,
        }
    }

    /// Text with orange's own colours, whose every other piece went through
    /// [`crate::text::safe`] where it was put together.
    pub fn styled(mut self) -> Out {
        self.styled = true;
        self
    }

    /// The text as it reaches the terminal: control characters and escape sequences
    /// from agents, workspaces and hosts shown, never interpreted
    /// ([`crate::text::safe`]). `--json` prints [`Out::json`] instead, exact.
    pub fn printed(&self) -> std::borrow::Cow<'_, str> {
        if self.styled {
            std::borrow::Cow::Borrowed(&self.text)
        } else {
            crate::text::safe(&self.text)
        }
    }
}

/// A JSON value as one line of text for a terminal or a pipe: the exact text of every
/// string, with DEL and the C1 controls escaped too (`\u009b`; JSON itself escapes only
/// C0), so that `--json` on a terminal interprets nothing an agent wrote. Outside strings
/// JSON has only ASCII, so the escape applies inside strings only.
pub fn json_text(v: &serde_json::Value) -> String {
    let s = serde_json::to_string(v).expect("a JSON value serializes");
    if !s.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `now`, `42s ago`, `5m ago`, `3h ago`, `2d ago` (a time in the future: `now`).
pub fn ago_secs(secs: i64) -> String {
    match secs {
        ..=0 => "now".into(),
        1..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

/// A task of a host that cannot be reached, where its session state would show:
/// `? unreachable (last seen 4m ago)` (`age_s`: since it was last seen; `None`: never).
pub fn unreachable_label(age_s: Option<u64>) -> String {
    match age_s {
        Some(a) => format!("? unreachable (last seen {})", ago_secs(a as i64)),
        None => "? unreachable (never seen)".to_string(),
    }
}

/// [`ago_secs`] of an RFC 3339 time; the text as it is when it does not parse.
pub fn ago(rfc3339: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => ago_secs((now - t.with_timezone(&chrono::Utc)).num_seconds()),
        Err(_) => rfc3339.to_string(),
    }
}

pub fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// A workspace status word coloured for a terminal (the `STATUS` column of [`table`]).
fn status_word(status: &str) -> String {
    match status {
        "available" => status.green().to_string(),
        "bound" => status.yellow().to_string(),
        "missing" | "creating" => status.red().to_string(),
        _ => status.to_string(),
    }
}

/// The widest a table cell is shown (display columns); longer text ends in `…`. The full
/// values are in `--json`.
pub const MAX_CELL: usize = 48;

/// `s` cut to at most `max` display columns, with `…` when cut.
pub fn fit_cell(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for ch in s.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(ch);
        w += cw;
    }
    out.push('…');
    out
}

/// A left-aligned text table sized by display width (CJK and emoji count double); a cell
/// wider than [`MAX_CELL`] is cut (`…`). Cells are data: each is made one safe line
/// ([`crate::text::safe_line`]) before it is measured. On a terminal the `STATUS` column
/// is coloured: the text then carries orange's own styles (print it as
/// [`Out::styled`], which [`table_colored`] says).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let color = table_colored();
    let status_col = header.iter().position(|h| *h == "STATUS");
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    let cell = fit_cell(&crate::text::safe_line(c), MAX_CELL);
                    if color && Some(i) == status_col {
                        status_word(&cell)
                    } else {
                        cell
                    }
                })
                .collect()
        })
        .collect();
    let rows = rows.as_slice();
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(strip_ansi_width(c));
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<String>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            l.push_str(c);
            if i + 1 < cells.len() {
                l.push_str(&" ".repeat(widths[i] - strip_ansi_width(c) + 2));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.iter().map(|s| s.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
    out
}

/// Whether [`table`] colours (stdout is a terminal and `NO_COLOR` is unset): an [`Out`]
/// that holds nothing but tables is then [`Out::styled`].
pub fn table_colored() -> bool {
    color_enabled()
}

fn strip_ansi_width(s: &str) -> usize {
    let mut plain = String::new();
    let mut in_esc = false;
    for ch in s.chars() {
        if in_esc {
            if ch.is_ascii_alphabetic() {
                in_esc = false;
            }
        } else if ch == '\u{1b}' {
            in_esc = true;
        } else {
            plain.push(ch);
        }
    }
    plain.width()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_escapes_c1_and_del_and_keeps_the_text() {
        let v = serde_json::json!({"s": "a\u{9b}2J\u{7f}\x1b\u{a0}é"});
        let t = json_text(&v);
        assert_eq!(t, "{\"s\":\"a\\u009b2J\\u007f\\u001b\u{a0}é\"}");
        assert!(!t.chars().any(char::is_control), "{t:?}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&t).unwrap(), v);
    }

    #[test]
    fn wide_cells_are_cut_by_display_width() {
        let long = "x".repeat(100_000);
        let t = table(&["ID", "SUMMARY"], &[vec!["a1".into(), long]]);
        assert!(
            t.lines().all(|l| l.width() <= 2 + 2 + MAX_CELL),
            "{}",
            t.len()
        );
        assert!(t.contains('…'));
        let cjk = fit_cell(&"名".repeat(40), 10);
        assert!(cjk.width() <= 10, "{cjk}");
        assert_eq!(fit_cell("short", 10), "short");
    }
}
