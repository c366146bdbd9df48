//! Names and targets: what a session name may hold, targets that tmux never
//! prefix-matches (`=name`, `=name:`), and the checks a name passes before it reaches tmux.

use crate::error::{OrangeError, Result};

/// What a session name orange makes may hold (`execution::launch::session_name` makes
/// them): tmux itself would rewrite `.` and `:`.
pub fn session_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-')
}

/// `=name` for session commands; ids and already-exact targets pass through.
pub(super) fn session_target(target: &str) -> String {
    if target.starts_with(['$', '=', '@', '%']) {
        target.to_string()
    } else {
        format!("={target}")
    }
}

/// `=name:` for window and pane commands (the session's current window, its active pane).
pub(super) fn pane_target(target: &str) -> String {
    if target.starts_with(['%', '@']) {
        target.to_string()
    } else if target.starts_with(['$', '=']) {
        if target.contains(':') {
            target.to_string()
        } else {
            format!("{target}:")
        }
    } else {
        format!("={target}:")
    }
}

/// A name tmux takes as one plain word: not empty, no `=`, no leading `-` (a flag).
pub(super) fn validate_word(what: &str, word: &str) -> Result<()> {
    if word.is_empty() || word.starts_with('-') || word.contains(['=', '\0']) {
        return Err(OrangeError::invalid(format!("invalid {what} {word:?}")));
    }
    Ok(())
}

pub(super) fn validate_session_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(session_char_ok) {
        return Err(OrangeError::invalid(format!(
            "invalid tmux session name {name:?}: only [A-Za-z0-9_/-]"
        )));
    }
    Ok(())
}

/// A program for a new pane or session: run by `/bin/sh -c 'exec …'`, its name must not
/// read as an option of `sh`.
pub(super) fn validate_program(command: &[String]) -> Result<()> {
    if command.first().is_some_and(|p| p.starts_with('-')) {
        return Err(OrangeError::invalid(format!(
            "program name {:?} starts with '-'",
            command[0]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::shell::{join as shell_join, quote as shell_quote};

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("plain-word_1.txt"), "plain-word_1.txt");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a;"), "'a;'");
        assert_eq!(shell_join(&["a b", "c"]), "'a b' c");
    }

    #[test]
    fn targets_are_exact() {
        assert_eq!(session_target("p/feat"), "=p/feat");
        assert_eq!(session_target("$3"), "$3");
        assert_eq!(pane_target("p/feat"), "=p/feat:");
        assert_eq!(pane_target("$3"), "$3:");
        assert_eq!(pane_target("%7"), "%7");
        assert_eq!(pane_target("@2"), "@2");
    }
}
