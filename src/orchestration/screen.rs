//! What an agent's screen says when its hooks and log cannot: a dialog or a prompt that
//! needs the person (blocked), an error, an API error it is retrying by itself, or — for an
//! agent with no hooks — whether it works or waits. Every harness reads its screen through
//! the same [`Rules`]: patterns (regular expressions, case-insensitive, matched line by
//! line near the bottom of the screen). The built-in values are what a harness knows of
//! its program's screens (Claude Code 2.1's: `execution::harness::claude`); a harness in
//! config.toml declares its own (`[harness.NAME.screen]`), added before the built-in ones
//! of the same name.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::execution::config::{Config, ScreenPatterns, BUILTIN};
use crate::execution::harness::kind::ScreenTexts;
use crate::execution::harness::kind_of;
use crate::execution::harness::state::Blocker;

/// What a screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// A dialog or a prompt that needs the person; the line that says so.
    Blocked(Blocker, String),
    /// `Retrying in 4 seconds… (attempt 2/10)`: the detail, e.g. `attempt 2/10`.
    Retrying(String),
    /// An error the agent stopped on (a declared `error` pattern); the line.
    Error(String),
    /// The account's usage limit (a declared `limit` pattern); the line, and the reset
    /// time it names when the pattern captured one.
    Limited(String, Option<String>),
    /// A declared `waiting` pattern is the latest thing on screen; the line.
    Waiting(String),
    /// A declared `working` pattern is the latest thing on screen; the line.
    Working(String),
}

/// One kind of dialog: any of `any` on screen, and — when `with` is not empty — one of
/// `with` too (an approval question counts only inside a prompt, with its choices).
#[derive(Debug, Clone)]
pub struct BlockRule {
    pub blocker: Blocker,
    pub any: Vec<Regex>,
    pub with: Vec<Regex>,
}

/// How to read one harness's screen.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Dialogs a full-screen program draws over everything (Claude Code's): one anywhere
    /// near the bottom blocks; the first rule that matches wins, so the more specific
    /// dialogs come first.
    pub blocked: Vec<BlockRule>,
    /// A line that asks the person (config.toml's `blocked`): it blocks while it is the
    /// lowest line that says anything (an answered prompt scrolls up and is over).
    pub prompt: Vec<Regex>,
    pub retrying: Vec<Regex>,
    pub error: Vec<Regex>,
    /// A usage limit (config.toml's `limit`), its reset time captured.
    pub limit: Vec<Regex>,
    pub waiting: Vec<Regex>,
    pub working: Vec<Regex>,
}

/// A pattern from config.toml, compiled case-insensitive; the error says which.
pub fn pattern(p: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(p)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("invalid pattern {p:?}: {e}"))
}

/// A literal text as a pattern.
fn text(t: &str) -> Regex {
    pattern(&regex::escape(t)).expect("an escaped text is a valid pattern")
}

fn texts(ts: &[&str]) -> Vec<Regex> {
    ts.iter().map(|t| text(t)).collect()
}

/// How many lines from the bottom of the screen are read: dialogs and prompts are drawn
/// at the bottom; older text above (the agent's own output, a file it printed) must not
/// look like a dialog.
const LOOK_LINES: usize = 30;

impl Rules {
    /// The built-in values of a harness: what its harness knows of its screens (Claude
    /// Code's dialogs and retries); none for the others (their screens are read by
    /// activity unless config.toml says more).
    pub fn builtin(harness: &str) -> &'static Rules {
        static BUILT: OnceLock<HashMap<&'static str, Rules>> = OnceLock::new();
        static NONE: OnceLock<Rules> = OnceLock::new();
        let built = BUILT.get_or_init(|| {
            BUILTIN
                .iter()
                .filter_map(|name| {
                    let t = kind_of(name).screen()?;
                    Some((kind_of(name).name(), Rules::of_texts(t)))
                })
                .collect()
        });
        built
            .get(harness)
            .unwrap_or_else(|| NONE.get_or_init(Rules::default))
    }

    /// Rules made of a program's screen texts.
    fn of_texts(t: &ScreenTexts) -> Rules {
        Rules {
            blocked: t
                .blocked
                .iter()
                .map(|(b, needles)| BlockRule {
                    blocker: *b,
                    any: texts(needles),
                    with: if t.marked.contains(b) {
                        texts(t.dialog_marks)
                    } else {
                        vec![]
                    },
                })
                .collect(),
            retrying: texts(t.retrying),
            error: texts(t.error),
            working: texts(t.working),
            ..Rules::default()
        }
    }

    /// A harness's rules: what config.toml declares (`[harness.NAME.screen]`, already
    /// checked by `Config::parse`), then the built-in values of that name.
    pub fn of(harness: &str, config: &Config) -> Rules {
        let mut r = Rules::default();
        if let Some(p) = config.harness.get(harness).and_then(|h| h.screen.as_ref()) {
            r.add(p);
        }
        let b = Rules::builtin(harness);
        r.blocked.extend(b.blocked.iter().cloned());
        r.prompt.extend(b.prompt.iter().cloned());
        r.retrying.extend(b.retrying.iter().cloned());
        r.error.extend(b.error.iter().cloned());
        r.limit.extend(b.limit.iter().cloned());
        r.waiting.extend(b.waiting.iter().cloned());
        r.working.extend(b.working.iter().cloned());
        r
    }

    fn add(&mut self, p: &ScreenPatterns) {
        let compile =
            |v: &[String]| -> Vec<Regex> { v.iter().filter_map(|p| pattern(p).ok()).collect() };
        self.prompt.extend(compile(&p.blocked));
        self.retrying.extend(compile(&p.retrying));
        self.error.extend(compile(&p.error));
        self.limit.extend(compile(&p.limit));
        self.waiting.extend(compile(&p.waiting));
        self.working.extend(compile(&p.working));
    }

    /// Nothing to read on a screen.
    pub fn is_empty(&self) -> bool {
        self.blocked.is_empty()
            && self.prompt.is_empty()
            && self.retrying.is_empty()
            && self.error.is_empty()
            && self.limit.is_empty()
            && self.waiting.is_empty()
            && self.working.is_empty()
    }

    /// Classify a screen (`text`: `capture-pane -p -J`). A dialog anywhere near the bottom
    /// wins; otherwise the lowest line that matches a prompt, error, retry, waiting or
    /// working pattern says what the agent does now (what is above it is over).
    pub fn classify(&self, text: &str) -> Option<Screen> {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let bottom = &lines[lines.len().saturating_sub(LOOK_LINES)..];
        for rule in &self.blocked {
            if let Some(line) = find_line(bottom, &rule.any) {
                if !rule.with.is_empty() && find_line(bottom, &rule.with).is_none() {
                    continue;
                }
                return Some(Screen::Blocked(rule.blocker, line));
            }
        }
        bottom.iter().rev().find_map(|l| {
            let hit = |set: &[Regex]| set.iter().any(|r| r.is_match(l));
            if hit(&self.prompt) {
                Some(Screen::Blocked(Blocker::Prompt, clean(l)))
            } else if let Some(c) = self.limit.iter().find_map(|r| r.captures(l)) {
                let reset = c
                    .name("reset")
                    .or_else(|| c.get(1))
                    .map(|m| m.as_str().to_string());
                Some(Screen::Limited(clean(l), reset))
            } else if hit(&self.error) {
                Some(Screen::Error(clean(l)))
            } else if hit(&self.retrying) {
                Some(Screen::Retrying(retry_detail(l)))
            } else if hit(&self.waiting) {
                Some(Screen::Waiting(clean(l)))
            } else if hit(&self.working) {
                Some(Screen::Working(clean(l)))
            } else {
                None
            }
        })
    }
}

/// Classify the screen of an agent of a harness by its built-in rules alone.
pub fn classify(harness: &str, text: &str) -> Option<Screen> {
    Rules::builtin(harness).classify(text)
}

/// The first of `lines` (trimmed) that one of `patterns` matches.
fn find_line(lines: &[&str], patterns: &[Regex]) -> Option<String> {
    lines
        .iter()
        .find(|l| patterns.iter().any(|p| p.is_match(l)))
        .map(|l| clean(l))
}

/// A screen line without box drawing and selection marks around it.
fn clean(line: &str) -> String {
    line.trim()
        .trim_matches(|c: char| "│╭╮╰╯─❯>›*⎿ ".contains(c))
        .trim()
        .to_string()
}

/// A retry line → its error and attempt: `✻ 529 Overloaded · retrying in 6s · attempt
/// 5/10` → `529 Overloaded, attempt 5/10`; a line that does not say "retrying" (a
/// declared pattern) is its own detail.
fn retry_detail(l: &str) -> String {
    // ASCII lowercase keeps the byte offsets of `l` (slicing `l` with them is safe).
    let lower = l.to_ascii_lowercase();
    let Some(at) = lower.find("retrying") else {
        return clean(l);
    };
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
    match (what.is_empty(), attempt) {
        (false, Some(a)) => format!("{what}, {a}"),
        (true, Some(a)) => a,
        (false, None) => what,
        (true, None) => clean(&l[at..]),
    }
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

    /// What codex 0.169 draws: its dialogs, a retry, an error it gave up on.
    #[test]
    fn codex_s_screens() {
        let trust = "  Folder access\n  /w\n  Trust this folder? Codex can read, edit, and run files here\n› 1. Trust and continue\n  2. Back";
        assert!(matches!(
            classify("codex", trust),
            Some(Screen::Blocked(Blocker::FolderTrust, _))
        ));
        let login = "  Welcome to Codex, OpenAI's command-line coding agent\n> 1. Sign in with ChatGPT\n  2. Sign in with Device Code";
        assert!(matches!(
            classify("codex", login),
            Some(Screen::Blocked(Blocker::Login, _))
        ));
        let retry = "› do it\n• Reconnecting... 2/3 (2s • esc to interrupt)\n  └ We’re currently experiencing high demand";
        assert!(matches!(
            classify("codex", retry),
            Some(Screen::Retrying(_))
        ));
        let gave_up = "› do it\n■ {\"error\": {\"message\": \"boom\"}}\n› Ask Codex to do anything";
        assert!(matches!(classify("codex", gave_up), Some(Screen::Error(_))));
        let again = format!("{gave_up}\n› again\n• Working (1s • esc to interrupt)");
        assert!(matches!(
            classify("codex", &again),
            Some(Screen::Working(_))
        ));
    }

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
