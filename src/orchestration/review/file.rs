//! The review file: the task's diff as the person's editor shows it, with comments written
//! under any line, and what the saved file says (pure: text in, comments out).
//!
//! A comment is a line starting with [`MARKER`] (`>>`); several in a row are one comment.
//! It belongs to the diff line above it: a `+` line or a context line anchors to the new
//! file (`side: new`), a `-` line to the old one (`side: old`); under a file's header
//! (`diff --git`, `---`, `+++`, `@@`) it is about the whole file. The code line is kept with
//! the anchor, so it can be found again once the agent changed the file. Lines of the
//! header (before the first `diff --git`) starting with `#` are help, ignored.
//!
//! The person may edit the diff by mistake: those edits are ignored (the comments keep
//! the place they were written at, found by the diff lines around them), with a warning.

use super::{Comment, Side};

/// What starts a comment line.
pub const MARKER: &str = ">>";

/// The file the editor opens: help, then the diff.
pub fn render(title: &str, diff: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!("# orange review: {title}\n"));
    s.push_str(&format!(
        "# Write a comment on a line of its own starting with \"{MARKER}\", under the line it is about\n"
    ));
    s.push_str("# (under a file's header: about the whole file). Several such lines in a row are one comment.\n");
    s.push_str("# Save and quit to record the round; no comment, or an editor that fails, records nothing.\n");
    s.push_str("# Changes to the diff itself are ignored.\n");
    s.push('\n');
    if diff.is_empty() {
        s.push_str("# (no changes against the base)\n");
    }
    s.push_str(diff);
    if !diff.is_empty() && !diff.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The review file with `comments` (a reviewer's round, to edit) written in it, each
/// under its line (a comment about a whole file, or about a line the diff does not show,
/// under its file's `diff --git` line); and the comments it could not place (their file
/// is not in the diff), kept as they are.
pub fn render_with(title: &str, diff: &str, comments: &[Comment]) -> (String, Vec<Comment>) {
    let places = places(diff);
    let mut placed = vec![false; comments.len()];
    let mut body = String::new();
    let write = |c: &Comment, prefix: &str, body: &mut String| {
        for (i, l) in c.text.lines().enumerate() {
            let lead = if i == 0 { prefix } else { "" };
            body.push_str(&format!("{MARKER} {lead}{l}\n"));
        }
    };
    for (line, place) in diff.lines().zip(&places) {
        body.push_str(line);
        body.push('\n');
        let Some(place) = place else { continue };
        for (i, c) in comments.iter().enumerate() {
            if placed[i] || c.path != place.path {
                continue;
            }
            let here = match (place.at, c.side, c.line) {
                (Some((side, n)), Some(cs), Some(cl)) => side == cs && n == cl,
                // The file's header: whole-file comments, and lines outside every hunk.
                (None, _, _) if line.starts_with("diff --git ") => {
                    c.line.is_none() || !shown(&places, &c.path, c.side, c.line)
                }
                _ => false,
            };
            if here {
                placed[i] = true;
                let prefix = match (place.at, c.line) {
                    (None, Some(n)) => format!("(line {n}) "),
                    _ => String::new(),
                };
                write(c, &prefix, &mut body);
            }
        }
    }
    let mut text = render(title, "");
    if !diff.is_empty() {
        // `render` said "no changes": the diff with the comments instead.
        text = text.replace("# (no changes against the base)\n", "");
    }
    let unplaced: Vec<Comment> = comments
        .iter()
        .zip(&placed)
        .filter(|(_, p)| !**p)
        .map(|(c, _)| c.clone())
        .collect();
    if !unplaced.is_empty() {
        text.push_str(&format!(
            "# {} comment(s) on files not in this diff are kept as they are.\n\n",
            unplaced.len()
        ));
    }
    text.push_str(&body);
    (text, unplaced)
}

/// Does the diff show this line of this file?
fn shown(places: &[Option<Place>], path: &str, side: Option<Side>, line: Option<u32>) -> bool {
    places.iter().flatten().any(|p| {
        p.path == path && matches!((p.at, side, line), (Some((s, n)), Some(cs), Some(cl)) if s == cs && n == cl)
    })
}

/// What a saved review file says.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    pub comments: Vec<Comment>,
    /// The diff part was changed (those changes are ignored).
    pub diff_edited: bool,
}

/// Where a line of the diff is: its file, and the side and line number of a hunk's line.
#[derive(Debug, Clone, PartialEq)]
struct Place {
    path: String,
    /// `None`: a header line (the comment is about the whole file).
    at: Option<(Side, u32)>,
    code: String,
}

/// The place of each line of `diff` (same index), `None` before the first file.
fn places(diff: &str) -> Vec<Option<Place>> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let (mut old, mut new) = (0u32, 0u32);
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `diff --git a/x b/x`: the b/ path, until `+++` or `---` says better.
            path = rest
                .rsplit_once(" b/")
                .map(|(_, p)| p.to_string())
                .or_else(|| Some(rest.to_string()));
            in_hunk = false;
            out.push(path.clone().map(|p| Place {
                path: p,
                at: None,
                code: String::new(),
            }));
            continue;
        }
        if !in_hunk {
            if let Some(p) = line.strip_prefix("+++ ") {
                if let Some(p) = p.strip_prefix("b/") {
                    path = Some(p.to_string());
                }
            } else if let Some(p) = line.strip_prefix("--- ") {
                // A deleted file: `+++ /dev/null` follows, the path is the old one.
                if let Some(p) = p.strip_prefix("a/") {
                    path = Some(p.to_string());
                }
            }
        }
        if let Some(h) = line.strip_prefix("@@ ") {
            if let Some((o, n)) = hunk_starts(h) {
                old = o;
                new = n;
                in_hunk = true;
            }
            out.push(path.clone().map(|p| Place {
                path: p,
                at: None,
                code: String::new(),
            }));
            continue;
        }
        let place = match (in_hunk, line.chars().next()) {
            (true, Some('+')) => {
                new += 1;
                Some((Side::New, new))
            }
            (true, Some('-')) => {
                old += 1;
                Some((Side::Old, old))
            }
            (true, Some(' ')) | (true, None) => {
                old += 1;
                new += 1;
                Some((Side::New, new))
            }
            _ => None,
        };
        let code = if place.is_some() {
            line.get(1..).unwrap_or("").to_string()
        } else {
            String::new()
        };
        out.push(path.clone().map(|p| Place {
            path: p,
            at: place,
            code,
        }));
    }
    out
}

/// `-a,b +c,d @@ …` → the first old and new line numbers, less one (the counters before
/// the hunk's first line).
fn hunk_starts(h: &str) -> Option<(u32, u32)> {
    let mut parts = h.split_whitespace();
    let start = |s: &str| -> Option<u32> {
        let n: u32 = s.split(',').next()?.parse().ok()?;
        Some(n.saturating_sub(1))
    };
    let old = start(parts.next()?.strip_prefix('-')?)?;
    let new = start(parts.next()?.strip_prefix('+')?)?;
    Some((old, new))
}

/// The comments of a saved review file written on `diff` (the diff it was rendered with).
pub fn parse(saved: &str, diff: &str) -> Parsed {
    let original: Vec<&str> = diff.lines().collect();
    let places = places(diff);
    let mut parsed = Parsed::default();
    // Index in `original` of the last diff line matched, and the next one to match.
    let mut last: Option<usize> = None;
    let mut next = 0usize;
    let mut pending: Vec<String> = Vec::new();
    let mut pending_at: Option<usize> = None;
    let mut seen_diff = false;
    let flush = |pending: &mut Vec<String>, at: Option<usize>, parsed: &mut Parsed| {
        if pending.is_empty() {
            return;
        }
        let text = pending.join("\n").trim().to_string();
        pending.clear();
        if text.is_empty() {
            return;
        }
        if let Some(Some(place)) = at.and_then(|i| places.get(i)) {
            parsed.comments.push(Comment {
                path: place.path.clone(),
                side: place.at.map(|a| a.0),
                line: place.at.map(|a| a.1),
                code: place.code.clone(),
                text,
                moved_from: None,
                lost: false,
            });
        }
    };
    for line in saved.lines() {
        if let Some(c) = line.strip_prefix(MARKER) {
            if pending.is_empty() {
                pending_at = last;
            }
            pending.push(c.strip_prefix(' ').unwrap_or(c).to_string());
            continue;
        }
        flush(&mut pending, pending_at, &mut parsed);
        if !seen_diff {
            // The help above the diff.
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            seen_diff = true;
        }
        // This line of the diff as it was rendered: the next one that matches.
        match original[next.min(original.len())..]
            .iter()
            .position(|o| *o == line)
        {
            Some(k) => {
                if k > 0 {
                    parsed.diff_edited = true;
                }
                last = Some(next + k);
                next += k + 1;
            }
            None => parsed.diff_edited = true,
        }
    }
    flush(&mut pending, pending_at, &mut parsed);
    if next < original.len() {
        parsed.diff_edited = true;
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reviewer_s_round_is_written_under_its_lines_and_read_back() {
        let diff = "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1,2 +1,3 @@\n one\n+two\n three\n";
        let c = |line: Option<u32>, text: &str, path: &str| Comment {
            path: path.into(),
            side: line.map(|_| Side::New),
            line,
            code: String::new(),
            text: text.into(),
            moved_from: None,
            lost: false,
        };
        let comments = vec![
            c(Some(2), "no two\nreally", "a.rs"),
            c(Some(40), "far away", "a.rs"),
            c(None, "whole", "a.rs"),
            c(Some(1), "elsewhere", "b.rs"),
        ];
        let (text, unplaced) = render_with("t", diff, &comments);
        assert!(
            text.contains("+two\n>> no two\n>> really\n three"),
            "{text}"
        );
        assert!(
            text.contains("diff --git a/a.rs b/a.rs\n>> (line 40) far away\n>> whole\n"),
            "{text}"
        );
        assert_eq!(unplaced.len(), 1);
        assert_eq!(unplaced[0].path, "b.rs");
        let back = parse(&text, diff);
        assert!(!back.diff_edited, "{text}");
        // Comments under one line are one (the file's rule), in the file's order.
        assert_eq!(back.comments.len(), 2, "{:?}", back.comments);
        assert_eq!(back.comments[0].text, "(line 40) far away\nwhole");
        assert_eq!(
            (back.comments[1].line, back.comments[1].code.as_str()),
            (Some(2), "two")
        );
        assert_eq!(back.comments[1].text, "no two\nreally");
    }

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs
index 1111111..2222222 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,4 @@
 fn a() {
-    old();
+    new();
+    more();
 }
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";

    fn with_comments(after: &[(&str, &str)]) -> String {
        let mut s = render("task 1", DIFF);
        for (line, comment) in after {
            s = s.replacen(&format!("{line}\n"), &format!("{line}\n{comment}\n"), 1);
        }
        s
    }

    #[test]
    fn comments_anchor_to_side_line_and_code() {
        let saved = with_comments(&[
            ("+    new();", ">> why new?\n>> and not old"),
            ("-    old();", ">>was fine"),
            (" }", ">> brace"),
            ("-bye", ">> keep it"),
            ("+++ b/src/a.rs", ">> whole file"),
        ]);
        let p = parse(&saved, DIFF);
        assert!(!p.diff_edited);
        type Row = (String, Option<Side>, Option<u32>, String, String);
        let got: Vec<Row> = p
            .comments
            .iter()
            .map(|c| {
                (
                    c.path.clone(),
                    c.side,
                    c.line,
                    c.code.clone(),
                    c.text.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "src/a.rs".into(),
                    None,
                    None,
                    "".into(),
                    "whole file".into()
                ),
                (
                    "src/a.rs".into(),
                    Some(Side::Old),
                    Some(2),
                    "    old();".into(),
                    "was fine".into()
                ),
                (
                    "src/a.rs".into(),
                    Some(Side::New),
                    Some(2),
                    "    new();".into(),
                    "why new?\nand not old".into()
                ),
                (
                    "src/a.rs".into(),
                    Some(Side::New),
                    Some(4),
                    "}".into(),
                    "brace".into()
                ),
                (
                    "gone.txt".into(),
                    Some(Side::Old),
                    Some(1),
                    "bye".into(),
                    "keep it".into()
                ),
            ]
        );
    }

    #[test]
    fn no_comment_is_nothing_and_help_is_ignored() {
        let p = parse(&render("t", DIFF), DIFF);
        assert_eq!(p, Parsed::default());
        let p = parse(&format!("# >> not a comment\n{}", render("t", DIFF)), DIFF);
        assert!(p.comments.is_empty());
    }

    #[test]
    fn edits_to_the_diff_are_ignored_and_said() {
        let saved = with_comments(&[("+    more();", ">> needed?")])
            .replace("+    new();\n", "+    NEW EDIT();\n");
        let p = parse(&saved, DIFF);
        assert!(p.diff_edited);
        assert_eq!(p.comments.len(), 1);
        assert_eq!(p.comments[0].line, Some(3));
        assert_eq!(p.comments[0].code, "    more();");
        // A deleted diff line is an edit too; comments keep their place.
        let saved = with_comments(&[(" }", ">> end")]).replace("-    old();\n", "");
        let p = parse(&saved, DIFF);
        assert!(p.diff_edited);
        assert_eq!(p.comments[0].line, Some(4));
    }

    #[test]
    fn hostile_text_stays_text() {
        let saved = with_comments(&[("+    new();", ">> $(rm -rf /); `x` \"q\" \x1b]0;PWNED\x07")]);
        let p = parse(&saved, DIFF);
        assert_eq!(
            p.comments[0].text,
            "$(rm -rf /); `x` \"q\" \x1b]0;PWNED\x07"
        );
    }
}
