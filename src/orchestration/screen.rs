//! What an agent's screen says when its hooks and log cannot: a first-run screen, a dialog
//! or a tool-approval prompt (the agent is blocked and needs the person), or an API error
//! it is retrying by itself. Pure functions over the text of `capture-pane`; the patterns
//! are the ones Claude Code 2.1 really shows (tests/fixtures/claude/screens/).

use crate::orchestration::agent::Blocker;

/// What a screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// A dialog or a prompt that needs the person; the line that says so.
    Blocked(Blocker, String),
    /// `Retrying in 4 seconds… (attempt 2/10)`: the detail, e.g. `attempt 2/10`.
    Retrying(String),
}

/// Distinctive text of each blocking screen, by harness. The first match wins, so the
/// more specific screens come first. Matching is case-insensitive.
const CLAUDE_BLOCKERS: &[(Blocker, &[&str])] = &[
    (
        Blocker::RootRefusal,
        &["cannot be used with root/sudo privileges"],
    ),
    (
        Blocker::BypassWarning,
        &["running in bypass permissions mode", "yes, i accept"],
    ),
    (
        Blocker::FolderTrust,
        &[
            "is this a project you created or one you trust",
            "yes, i trust this folder",
            "do you trust the files in this folder",
        ],
    ),
    (
        Blocker::ApiKey,
        &[
            "detected a custom api key",
            "do you want to use this api key",
        ],
    ),
    (
        Blocker::Login,
        &[
            "select login method",
            "not logged in · please run /login",
            "not logged in · run /login",
            "claude account with subscription",
            "anthropic console account",
        ],
    ),
    (
        Blocker::Onboarding,
        &[
            "choose the text style that looks best",
            "security notes:",
            "unable to connect to anthropic services",
            "failed to connect to api.anthropic.com",
            "let's get started",
        ],
    ),
    (
        Blocker::Approval,
        &[
            "do you want to proceed?",
            "do you want to make this edit",
            "do you want to create",
            "do you want to allow",
            "do you want to run",
            "auto mode can't check actions",
        ],
    ),
];

/// An approval question counts only inside a prompt: with its choices (`1. Yes`) or its
/// key hints (`Esc to cancel`) below it. The same words in the agent's own text ("Do you
/// want to create a PR?") are no dialog.
const DIALOG_MARKS: &[&str] = &["1. yes", "esc to cancel", "enter to stay in auto mode"];

/// How many lines from the bottom of the screen are read: dialogs and prompts are drawn
/// at the bottom; older text above (the agent's own output, a file it printed) must not
/// look like a dialog.
const LOOK_LINES: usize = 30;

/// Classify the screen of an agent of `harness` (`text`: `capture-pane -p -J`).
pub fn classify(harness: &str, text: &str) -> Option<Screen> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let bottom = &lines[lines.len().saturating_sub(LOOK_LINES)..];
    if harness != "claude" {
        return None;
    }
    for (blocker, needles) in CLAUDE_BLOCKERS {
        if let Some(line) = find_line(bottom, needles) {
            if *blocker == Blocker::Approval && find_line(bottom, DIALOG_MARKS).is_none() {
                continue;
            }
            return Some(Screen::Blocked(*blocker, line));
        }
    }
    retrying(bottom).map(Screen::Retrying)
}

/// The first of `lines` (trimmed) that contains one of `needles`, case-insensitively.
fn find_line(lines: &[&str], needles: &[&str]) -> Option<String> {
    lines.iter().find_map(|l| {
        let lower = l.to_lowercase();
        needles.iter().any(|n| lower.contains(n)).then(|| clean(l))
    })
}

/// A screen line without box drawing and selection marks around it.
fn clean(line: &str) -> String {
    line.trim()
        .trim_matches(|c: char| "│╭╮╰╯─❯>›*⎿ ".contains(c))
        .trim()
        .to_string()
}

/// A retry line → its error and attempt: `✻ 529 Overloaded · retrying in 6s · attempt
/// 5/10` → `529 Overloaded, attempt 5/10` (the last such line on screen).
fn retrying(lines: &[&str]) -> Option<String> {
    lines.iter().rev().find_map(|l| {
        // ASCII lowercase keeps the byte offsets of `l` (slicing `l` with them is safe).
        let lower = l.to_ascii_lowercase();
        let at = lower.find("retrying")?;
        let attempt = lower[at..].find("attempt").map(|i| {
            lower[at + i..]
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .to_string()
        });
        // What failed: the text before "retrying", without the spinner and separators.
        let what = clean(&l[..at])
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches(|c: char| c == '·' || c == '(' || c == '-' || c.is_whitespace())
            .to_string();
        Some(match (what.is_empty(), attempt) {
            (false, Some(a)) => format!("{what}, {a}"),
            (true, Some(a)) => a,
            (false, None) => what,
            (true, None) => clean(&l[at..]),
        })
    })
}

/// The last `n` non-empty lines of a pane's text (a dead agent's last words).
pub fn last_lines(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.trim().is_empty())
        // tmux's own `remain-on-exit` line says nothing of why.
        .filter(|l| !l.starts_with("Pane is dead ("))
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogs_and_retries() {
        let trust = "╭────╮\n│ Do you trust the files in this folder? │\n│ ❯ 1. Yes, proceed │\n│   2. No, exit │\n╰────╯";
        assert!(matches!(
            classify("claude", trust),
            Some(Screen::Blocked(Blocker::FolderTrust, _))
        ));
        assert_eq!(
            classify("pi", trust),
            None,
            "claude's dialogs only for claude"
        );
        let retry = "❯ say hi\n✻ 529 Overloaded · retrying in 6s · attempt 5/10\n  ⎿  If it persists, check your inference gateway (127.0.0.1:38787).\n";
        assert_eq!(
            classify("claude", retry),
            Some(Screen::Retrying("529 Overloaded, attempt 5/10".into()))
        );
        assert_eq!(classify("claude", "> hello\n\nall good"), None);
        // Text whose lowercase is shorter than itself (the Kelvin sign) before the retry:
        // no panic, the right detail.
        assert_eq!(
            classify("claude", "\u{212a} ✻ 529 · retrying in 3s · attempt 2/10"),
            Some(Screen::Retrying("\u{212a} ✻ 529, attempt 2/10".into()))
        );
        // An agent's own question is no approval prompt.
        assert_eq!(
            classify(
                "claude",
                "● I opened the branch.\n\nDo you want to create a PR?\n❯ "
            ),
            None
        );
        assert_eq!(classify("pi", "retrying in 3s · attempt 2/10"), None);
        // Text far above the bottom of the screen is history, not a dialog.
        let old = format!(
            "Do you want to proceed?\n{}",
            "line\n".repeat(LOOK_LINES + 5)
        );
        assert_eq!(classify("claude", &old), None);
    }

    #[test]
    fn last_lines_skip_blanks() {
        assert_eq!(last_lines("a\n\nb\nc  \n\n", 2), ["b", "c"]);
        assert_eq!(
            last_lines(
                "why\nPane is dead (status 1, Mon Nov 23 08:32:20 2026)\n",
                3
            ),
            ["why"]
        );
        assert!(last_lines("", 3).is_empty());
    }
}
