//! Rendering a sidebar [`Model`]: pure (model in, lines out; ages are computed against
//! [`Model::now`]), for a width and an optional height (REFERENCE.md §3 and seed 002's
//! "Sidebar" section). Text is measured by display width (CJK and emoji take two columns),
//! never wraps, never leaves trailing spaces, and reaches the terminal only through
//! [`crate::text::safe_line`]. Snapshot-tested in `tests/sidebar/render.rs`.

use unicode_width::UnicodeWidthStr;

use crate::ui::sidebar::model::{HistoryEntry, Model};

/// Files listed before `+N more`.
pub const MAX_FILES: usize = 10;
/// History entries shown, newest first.
pub const MAX_HISTORY: usize = 5;
/// Lines of TASK.md shown.
pub const MAX_TASK_LINES: usize = 10;
/// Longest text kept from one line of input: nobody sees past the pane's width, and the
/// truncation below is quadratic in the length it has to scan.
const MAX_INPUT_CHARS: usize = 1024;

/// `30s ago`, `5m ago`, `2h ago`, `2d ago`.
pub fn age(now: i64, at: Option<i64>) -> String {
    let Some(at) = at else {
        return "?".into();
    };
    let d = (now - at).max(0);
    match d {
        0..60 => format!("{d}s ago"),
        60..3600 => format!("{}m ago", d / 60),
        3600..86400 => format!("{}h ago", d / 3600),
        _ => format!("{}d ago", d / 86400),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Bold,
    Dim,
    Green,
    Red,
    Yellow,
    Cyan,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Bold => "\x1b[1m",
            Style::Dim => "\x1b[2m",
            Style::Green => "\x1b[32m",
            Style::Red => "\x1b[31m",
            Style::Yellow => "\x1b[33m",
            Style::Cyan => "\x1b[36m",
        }
    }
}

#[derive(Debug, Clone)]
struct Span {
    text: String,
    style: Style,
    /// Truncate from the left (`…/auth/callback.ts`): the end of a path says the most.
    keep_tail: bool,
}

#[derive(Debug, Clone, Default)]
struct Line(Vec<Span>);

impl Line {
    fn new() -> Line {
        Line(vec![])
    }
    fn text(s: impl AsRef<str>, style: Style) -> Line {
        Line::new().push(s, style)
    }
    fn push(mut self, s: impl AsRef<str>, style: Style) -> Line {
        self.0.push(Span {
            text: sanitize(s.as_ref()),
            style,
            keep_tail: false,
        });
        self
    }
    fn push_tail(mut self, s: impl AsRef<str>, style: Style) -> Line {
        self.0.push(Span {
            text: sanitize(s.as_ref()),
            style,
            keep_tail: true,
        });
        self
    }
    fn plain(&self) -> String {
        self.0.iter().map(|s| s.text.as_str()).collect()
    }
    fn ansi(&self) -> String {
        let mut out = String::new();
        for s in &self.0 {
            if s.style == Style::Plain || s.text.is_empty() {
                out.push_str(&s.text);
            } else {
                out.push_str(s.style.sgr());
                out.push_str(&s.text);
                out.push_str("\x1b[0m");
            }
        }
        out
    }
}

/// Text as one terminal line ([`crate::text::safe_line`]: control characters and escapes
/// shown, never interpreted), tabs two spaces; overlong input is cut.
fn sanitize(s: &str) -> String {
    let head: String = s.chars().take(MAX_INPUT_CHARS).collect();
    crate::text::safe_line(&head.replace('\t', "  ")).into_owned()
}

/// The longest prefix of `s` at most `cols` columns wide (never half a wide character).
fn head(s: &str, cols: usize) -> &str {
    let mut best = 0;
    for (i, c) in s.char_indices() {
        let end = i + c.len_utf8();
        if s[..end].width() > cols {
            break;
        }
        best = end;
    }
    &s[..best]
}

/// The longest suffix of `s` at most `cols` columns wide.
fn tail(s: &str, cols: usize) -> &str {
    let mut best = s.len();
    for (i, _) in s.char_indices().rev() {
        if s[i..].width() > cols {
            break;
        }
        best = i;
    }
    &s[best..]
}

/// Cut a line to `width` columns, marking the cut with `…`; then drop trailing spaces.
fn fit(line: Line, width: usize) -> Line {
    let total: usize = line.0.iter().map(|s| s.text.width()).sum();
    let mut spans = if total <= width {
        line.0
    } else if width == 0 {
        vec![]
    } else {
        let budget = width - 1; // room for the `…`
        let mut out: Vec<Span> = vec![];
        let mut used = 0;
        let n = line.0.len();
        for (i, span) in line.0.into_iter().enumerate() {
            let w = span.text.width();
            if used + w <= budget {
                used += w;
                out.push(span);
                continue;
            }
            let room = budget - used;
            let text = if span.keep_tail && i + 1 == n {
                format!("…{}", tail(&span.text, room))
            } else {
                format!("{}…", head(&span.text, room))
            };
            out.push(Span { text, ..span });
            break;
        }
        out
    };
    // Trailing spaces: never printed (a pane shows them as nothing anyway).
    while let Some(last) = spans.last_mut() {
        let trimmed = last.text.trim_end_matches(' ').len();
        last.text.truncate(trimmed);
        if last.text.is_empty() {
            spans.pop();
        } else {
            break;
        }
    }
    let line = Line(spans);
    // Widths of spans add up for everything orange builds; if some exotic sequence made
    // them not, fall back to cutting the plain text.
    let plain = line.plain();
    if plain.width() <= width {
        return line;
    }
    let mut cut = head(&plain, width.saturating_sub(1)).to_string();
    while !cut.is_empty() && cut.width() + 1 > width {
        cut.pop();
    }
    cut.push('…');
    Line::text(cut.trim_end(), Style::Plain)
}

/// `── Title ─────` filling `width`.
fn rule(title: &str, width: usize) -> Line {
    let label = format!("── {title} ");
    let fill = width.saturating_sub(label.width());
    Line::text(format!("{label}{}", "─".repeat(fill)), Style::Dim)
}

fn status_style(status: &str) -> Style {
    match status {
        "working" | "planning" => Style::Yellow,
        "reviewing" | "agent-review" | "done" => Style::Green,
        "stuck" | "clarification" => Style::Red,
        _ => Style::Plain,
    }
}

/// `Mem: 312M · CPU 4%`: what the agent's process tree uses now; a narrow pane loses the
/// labels before the numbers.
fn usage_line(u: &crate::orchestration::footprint::Usage, width: usize) -> Line {
    first_fitting(
        vec![
            Line::text(u.text(), Style::Plain),
            Line::text(u.short(), Style::Plain),
        ],
        width,
    )
}

/// The first of `candidates` that fits `width` (the last one, to be cut, when none does).
fn first_fitting(candidates: Vec<Line>, width: usize) -> Line {
    let n = candidates.len();
    candidates
        .into_iter()
        .enumerate()
        .find(|(i, l)| i + 1 == n || l.plain().width() <= width)
        .map(|(_, l)| l)
        .unwrap_or_default()
}

/// The footer, shortened to fit: `^\` is how terminals write Ctrl+\; then single
/// spaces and shorter words.
fn footer_line(m: &Model, width: usize) -> Line {
    let short = m.footer.replace("Ctrl+", "^");
    let shorter = short
        .replace("  ", " ")
        .replace(" full screen", " full")
        .replace(" terminal", " term");
    let candidates = [m.footer.clone(), short, shorter]
        .into_iter()
        .map(|t| Line::text(t, Style::Dim))
        .collect();
    first_fitting(candidates, width)
}

fn header_lines(m: &Model, width: usize) -> Vec<Line> {
    let mut out = vec![Line::text(
        format!("{}/{}", m.project, m.branch),
        Style::Bold,
    )];
    let (icon, icon_style) = match m.session.as_str() {
        "live" => ("●", Style::Green),
        "dead" => ("✗", Style::Red),
        s if s.starts_with("unreachable") => ("?", Style::Yellow),
        _ => ("○", Style::Dim),
    };
    let mut session = m.session.clone();
    match (m.exit_status, m.exit_signal) {
        (Some(c), _) => session.push_str(&format!(" (exit {c})")),
        (_, Some(s)) => session.push_str(&format!(" (signal {s})")),
        _ => {}
    }
    // Narrow panes lose the padding, then the label, before the session state.
    let status = |label: &str, gap: &str, session: &str| {
        Line::text(label, Style::Plain)
            .push(&m.status, status_style(&m.status))
            .push(gap, Style::Plain)
            .push(format!("{icon} {session}"), icon_style)
    };
    out.push(first_fitting(
        vec![
            status("Status: ", "   ", &session),
            status("Status: ", " ", &session),
            status("", " ", &session),
            status("", " ", &m.session),
            status("", " ", ""),
        ],
        width,
    ));
    if let Some(a) = &m.agent {
        let style = match a.as_str() {
            "working" => Style::Yellow,
            "waiting" => Style::Cyan,
            _ if a.starts_with("error")
                || a.starts_with("blocked")
                || a.starts_with("killed")
                || a == "dead" =>
            {
                Style::Red
            }
            _ => Style::Plain,
        };
        out.push(Line::text("Agent: ", Style::Plain).push(a, style));
    }
    for t in &m.teammates {
        let style = match t.rsplit(": ").next().unwrap_or("") {
            s if s.starts_with("working") => Style::Yellow,
            s if s.starts_with("waiting") => Style::Cyan,
            s if s.starts_with("blocked") || s.starts_with("error") || s == "dead" => Style::Red,
            _ => Style::Plain,
        };
        out.push(Line::text(format!("  {t}"), style));
    }
    if let Some(r) = &m.reviewer {
        let style = match r.split(": ").nth(1).unwrap_or("") {
            s if s.starts_with("working") || s.starts_with("starting") => Style::Yellow,
            s if s.starts_with("failed") || r.contains("changed the worktree") => Style::Red,
            _ => Style::Cyan,
        };
        out.push(Line::text(
            format!("  └ {}", crate::text::safe_line(r)),
            style,
        ));
    }
    if let Some((base, members)) = m.group.split_first() {
        out.push(Line::text("Group: ", Style::Plain).push(base, Style::Bold));
        for g in members {
            out.push(Line::text(format!("  └ {g}"), Style::Dim));
        }
    }
    out.push(Line::text(format!("Harness: {}", m.harness), Style::Plain));
    // Narrow panes lose the label before the numbers.
    out.push(match &m.tokens {
        Some(t) => {
            let numbers = crate::orchestration::usage::short_text(t);
            first_fitting(
                vec![
                    Line::text(format!("Tokens: {numbers}"), Style::Plain),
                    Line::text(numbers, Style::Plain),
                ],
                width,
            )
        }
        None => Line::text("Tokens: unknown", Style::Plain),
    });
    if let Some(u) = &m.usage {
        out.push(usage_line(u, width));
    }
    out.push(Line::text(
        format!("PR: {}", m.pr.as_deref().unwrap_or("none")),
        Style::Plain,
    ));
    out.push(match m.commits {
        Some(n) => Line::text(format!("Commits: {n}  "), Style::Plain)
            .push(format!("+{}", m.added), Style::Green)
            .push(" ", Style::Plain)
            .push(format!("-{}", m.removed), Style::Red),
        None => Line::text("Commits: -", Style::Plain),
    });
    if let Some(p) = m.port {
        out.push(Line::text(format!("Port: {p}"), Style::Plain));
    }
    if let Some(n) = &m.notice {
        // Why it needs you is the point of the notice: wrapped, not cut at the first line.
        for l in wrap(n, width, NOTICE_LINES) {
            out.push(Line::text(l, Style::Yellow));
        }
    }
    if let Some(step) = &m.next_step {
        // What moves it on; its command on one line where it fits (it is to be typed).
        let text = format!("Next: {}", step.text);
        let words: Vec<&str> = match text.strip_suffix(step.command.as_str()) {
            Some(head) if step.command.width() <= width => head
                .split_whitespace()
                .chain([step.command.as_str()])
                .collect(),
            _ => text.split_whitespace().collect(),
        };
        for l in wrap_words(&words, width, NOTICE_LINES) {
            out.push(Line::text(l, Style::Cyan));
        }
    }
    out
}

/// Lines a notice may take.
const NOTICE_LINES: usize = 4;

/// `text` in lines of at most `width` columns (display width), broken at spaces where it
/// can, at most `max` lines (the last one then ends in `…` through the usual fitting).
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    wrap_words(&text.split_whitespace().collect::<Vec<_>>(), width, max)
}

/// [`wrap`] of these words (one may hold spaces: it is kept on one line).
fn wrap_words(words: &[&str], width: usize, max: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in words.iter().copied() {
        let sep = usize::from(!cur.is_empty());
        if cur.width() + sep + word.width() > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max {
        let rest = lines.split_off(max - 1).join(" ");
        lines.push(rest);
    }
    lines
}

fn file_style(status: char) -> Style {
    match status {
        'A' => Style::Green,
        'D' => Style::Red,
        'R' => Style::Cyan,
        'U' => Style::Red,
        _ => Style::Yellow,
    }
}

/// The Files section in at most `limit` body lines.
fn files_lines(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let n = m.files.len();
    let mut out = vec![rule(&format!("Files ({n})"), width)];
    if n == 0 {
        // No diff read (git failed, or the task is on another host): not "no changes".
        let what = if m.commits.is_none() {
            " (not known here)"
        } else {
            " (no changes)"
        };
        out.push(Line::text(what, Style::Dim));
        return out;
    }
    let shown = if n <= limit {
        n
    } else {
        limit.saturating_sub(1)
    };
    for f in &m.files[..shown] {
        out.push(
            Line::text(" ", Style::Plain)
                .push(f.status.to_string(), file_style(f.status))
                .push(" ", Style::Plain)
                .push_tail(&f.path, Style::Plain),
        );
    }
    if shown < n {
        out.push(Line::text(format!(" +{} more", n - shown), Style::Dim));
    }
    out
}

fn history_lines(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let mut out = vec![rule("History", width)];
    if m.history.is_empty() {
        out.push(Line::text(" (none)", Style::Dim));
        return out;
    }
    let shown: Vec<(String, &HistoryEntry)> = m
        .history
        .iter()
        .take(limit)
        .map(|e| (age(m.now, e.at), e))
        .collect();
    let w = shown.iter().map(|(a, _)| a.width()).max().unwrap_or(0);
    for (a, e) in shown {
        out.push(Line::text(format!(" {a:>w$}  "), Style::Dim).push(&e.text, Style::Plain));
    }
    out
}

fn task_section(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let mut out = vec![rule("Task", width)];
    if m.task.is_empty() {
        out.push(Line::text(" (no description)", Style::Dim));
        return out;
    }
    let mut shown: Vec<&String> = m.task.iter().take(limit).collect();
    let cut = shown.len() < m.task.len();
    if cut {
        // Never end on a blank line: the `…` goes after the last line with text.
        while shown.len() > 1 && shown.last().is_some_and(|l| l.is_empty()) {
            shown.pop();
        }
    }
    let n = shown.len();
    for (i, l) in shown.into_iter().enumerate() {
        let text = if cut && i + 1 == n {
            format!(" {l} …")
        } else {
            format!(" {l}")
        };
        out.push(Line::text(text, Style::Plain));
    }
    out
}

/// The frame's lines, each fitted to `width`; with a height, exactly that many lines (the
/// footer on the last one), lower sections shortened or dropped first to make room.
fn layout(m: &Model, width: usize, height: Option<usize>) -> Vec<Line> {
    let header = header_lines(m, width);
    // Body-line limits of Files, History, Task; 0 = the section is dropped.
    let mut limits = [MAX_FILES + 1, MAX_HISTORY, MAX_TASK_LINES];
    let mut footer = true;
    let build = |limits: &[usize; 3], footer: bool| -> Vec<Line> {
        let mut lines = header.clone();
        let sections: [&dyn Fn(usize) -> Vec<Line>; 3] = [
            &|l| files_lines(m, width, l),
            &|l| history_lines(m, width, l),
            &|l| task_section(m, width, l),
        ];
        for (i, section) in sections.iter().enumerate() {
            if limits[i] > 0 {
                lines.push(Line::new());
                lines.extend(section(limits[i]));
            }
        }
        if footer {
            if height.is_none() {
                lines.push(Line::new());
            }
            lines.push(footer_line(m, width));
        }
        lines
    };
    let mut lines = build(&limits, footer);
    if let Some(h) = height {
        while lines.len() > h {
            // Shorten the lowest section down to one line, then drop it; the footer goes
            // before the Files section, the header last.
            if let Some(i) = (1..3).rev().find(|&i| limits[i] > 0) {
                limits[i] -= 1;
            } else if footer {
                footer = false;
            } else if limits[0] > 0 {
                limits[0] -= 1;
            } else {
                lines.truncate(h);
                break;
            }
            lines = build(&limits, footer);
        }
        if !footer && lines.len() < h {
            // The Files section went for want of room: the footer may still fit.
            let with = build(&limits, true);
            if with.len() <= h {
                footer = true;
                lines = with;
            }
        }
        if footer && lines.len() < h {
            let foot = lines.pop().expect("the footer line");
            lines.resize(h - 1, Line::new());
            lines.push(foot);
        }
        lines.resize(h, Line::new());
    }
    lines.into_iter().map(|l| fit(l, width)).collect()
}

fn join(lines: &[String]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// One frame as plain text: lines at most `width` columns, no trailing spaces, each ended
/// by `\n`. With `height`, exactly `height` lines.
pub fn render(model: &Model, width: usize, height: Option<usize>) -> String {
    let lines: Vec<String> = layout(model, width, height)
        .iter()
        .map(Line::plain)
        .collect();
    join(&lines)
}

/// [`render`] with ANSI colours (for a terminal).
pub fn render_ansi(model: &Model, width: usize, height: Option<usize>) -> String {
    let lines: Vec<String> = layout(model, width, height)
        .iter()
        .map(Line::ansi)
        .collect();
    join(&lines)
}

/// The frame shown when the task the sidebar follows no longer exists.
pub fn render_gone(id: &str, width: usize, height: Option<usize>) -> String {
    let mut lines = vec![
        Line::text(format!("task {id}"), Style::Bold),
        Line::new(),
        Line::text("This task was deleted.", Style::Yellow),
    ];
    if let Some(h) = height {
        lines.resize(h, Line::new());
    }
    let lines: Vec<String> = lines.into_iter().map(|l| fit(l, width).plain()).collect();
    join(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_use_the_largest_unit() {
        assert_eq!(age(100, Some(70)), "30s ago");
        assert_eq!(age(1000, Some(700)), "5m ago");
        assert_eq!(age(10_000, Some(10_000 - 2 * 3600 - 5)), "2h ago");
        assert_eq!(age(1_000_000, Some(1_000_000 - 2 * 86400)), "2d ago");
        assert_eq!(age(5, Some(10)), "0s ago");
        assert_eq!(age(5, None), "?");
    }

    #[test]
    fn truncation_respects_display_width() {
        let l = fit(Line::text("日本語のブランチ名", Style::Plain), 7);
        let p = l.plain();
        assert!(p.width() <= 7, "{p:?}");
        assert!(p.ends_with('…'));
        assert_eq!(p, "日本語…");
        let l = fit(
            Line::text(" M ", Style::Plain).push_tail("src/auth/callback.ts", Style::Plain),
            16,
        );
        assert_eq!(l.plain(), " M …/callback.ts");
        assert_eq!(fit(Line::text("abc   ", Style::Plain), 10).plain(), "abc");
        assert_eq!(fit(Line::text("abcdef", Style::Plain), 0).plain(), "");
        assert_eq!(fit(Line::text("abcdef", Style::Plain), 1).plain(), "…");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let l = fit(Line::text("a\x1b[2Jb\tc\r\u{202e}d", Style::Plain), 40);
        assert_eq!(l.plain(), "a␛[2Jb  c␍\u{fffd}d");
    }

    #[test]
    fn notices_wrap_at_spaces_within_the_width() {
        let w = wrap(
            "Needs you: agent exited with status 1: Error: the model refused the API key",
            20,
            4,
        );
        assert!(
            w.iter().all(|l| l.width() <= 20 || !l.contains(' ')),
            "{w:?}"
        );
        assert_eq!(
            w.join(" "),
            "Needs you: agent exited with status 1: Error: the model refused the API key"
        );
        assert_eq!(wrap("a b c d e f g h", 8, 2).len(), 2);
    }
}
