//! What a reviewer agent is asked and what it answers (pure: text in, text out).
//!
//! - [`prompt`]: the task's summary and its diff, where to write the findings, and their
//!   format: one per line, `path:line: comment` (`path` relative to the workspace, `line`
//!   a line of the file as the workspace has it now).
//! - [`parse`]: the findings in a reviewer's answer: each line in that format is one; a
//!   bullet (`-`, `*`) or backquotes around the path are allowed; every other line is
//!   ignored. Control characters are removed from the comment (what a hostile answer
//!   holds never reaches a terminal or the agent raw).

use crate::text;

/// A diff longer than this is cut in the prompt (the reviewer reads the rest itself).
const MAX_DIFF: usize = 200_000;

/// One finding as the reviewer wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub text: String,
}

/// The reviewer's prompt.
pub fn prompt(
    summary: &str,
    diff: Option<&str>,
    findings_file: &str,
    extra: Option<&str>,
) -> String {
    let mut s = String::new();
    s.push_str(
        "You are reviewing another agent's work in this git worktree. Do not change any file: \
         read the code and report what is wrong or missing.\n\n",
    );
    s.push_str("The task it was given:\n");
    for line in summary.lines() {
        s.push_str(&format!("> {line}\n"));
    }
    s.push('\n');
    if let Some(extra) = extra.filter(|e| !e.trim().is_empty()) {
        s.push_str("What to look at in particular:\n");
        s.push_str(extra.trim_end());
        s.push_str("\n\n");
    }
    match diff {
        Some(d) if d.trim().is_empty() => s.push_str("Its changes against the base: none.\n\n"),
        Some(d) => {
            s.push_str("Its changes against the base (git diff):\n```diff\n");
            if d.len() > MAX_DIFF {
                let mut cut = MAX_DIFF;
                while !d.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.push_str(&d[..cut]);
                s.push_str("\n… (cut: run `git diff` for the rest)\n");
            } else {
                s.push_str(d);
            }
            if !d.ends_with('\n') {
                s.push('\n');
            }
            s.push_str("```\n\n");
        }
        None => {
            s.push_str("Run `git diff` and `git status` to see its changes against the base.\n\n")
        }
    }
    s.push_str(&format!(
        "Write your findings to the file {findings_file} (it is outside the worktree), one per \
         line, in this format:\n\
         path/to/file.rs:42: what is wrong there and what to do instead\n\
         The path is relative to the worktree and the line is a line of that file as it is now. \
         If you cannot write that file, answer with the findings alone, in the same format. \
         No finding: write nothing.\n"
    ));
    s
}

/// The findings in `answer` (see the module's header), in order.
pub fn parse(answer: &str) -> Vec<Finding> {
    answer.lines().filter_map(finding).collect()
}

fn finding(line: &str) -> Option<Finding> {
    let line = line.trim();
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line)
        .trim_start();
    // `path:line: comment`, the path the text before the first `:<digits>:`.
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find(':') {
        let colon = i + off;
        let digits = bytes[colon + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let after = colon + 1 + digits;
        if digits > 0 && bytes.get(after) == Some(&b':') {
            let path = line[..colon].trim().trim_matches('`').trim();
            let n: u32 = line[colon + 1..after].parse().ok()?;
            let text = text::for_agent(line[after + 1..].trim());
            let text = text.trim();
            if path.is_empty() || path.contains(char::is_whitespace) || n == 0 || text.is_empty() {
                return None;
            }
            return Some(Finding {
                path: path.trim_start_matches("./").to_string(),
                line: n,
                text: text.to_string(),
            });
        }
        i = colon + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_the_lines_in_the_format() {
        let answer = "Here is what I found:\n\
             src/a.rs:12: no unwrap here\n\
             - `lib/b.rs`:3: off by one\n\
             * ./c.py:7: name: shadowed: twice\n\
             not a finding: 12\n\
             x.rs:0: zero is no line\n\
             y.rs:4:\n\
             with space.rs:2: no\n";
        let f = parse(answer);
        assert_eq!(
            f,
            vec![
                Finding {
                    path: "src/a.rs".into(),
                    line: 12,
                    text: "no unwrap here".into()
                },
                Finding {
                    path: "lib/b.rs".into(),
                    line: 3,
                    text: "off by one".into()
                },
                Finding {
                    path: "c.py".into(),
                    line: 7,
                    text: "name: shadowed: twice".into()
                },
            ]
        );
    }

    #[test]
    fn hostile_text_loses_its_controls() {
        let f = parse("a.rs:1: \u{1b}]52;c;aGk=\u{7}evil $(rm -rf /) \u{1b}[31mred\n");
        assert_eq!(f.len(), 1);
        assert!(!text::has_controls(&f[0].text), "{:?}", f[0].text);
        assert!(f[0].text.contains("$(rm -rf /)"), "{:?}", f[0].text);
    }

    #[test]
    fn the_prompt_names_the_file_the_format_and_the_diff() {
        let p = prompt(
            "Fix the parser",
            Some("diff --git a/x b/x\n"),
            "/o/f.txt",
            Some("security"),
        );
        assert!(p.contains("> Fix the parser"));
        assert!(p.contains("/o/f.txt"));
        assert!(p.contains("path/to/file.rs:42: "));
        assert!(p.contains("```diff\ndiff --git a/x b/x\n```"));
        assert!(p.contains("security"));
    }
}
