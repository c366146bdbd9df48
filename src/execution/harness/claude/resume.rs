//! Whether Claude Code may ask how to resume a conversation (its resume dialog: "This
//! session is 2h 5m old and 150k tokens." — *Resume from summary* / *Resume full session
//! as-is* / *Don't ask again*), as far as orange can read it.
//!
//! Claude Code 2.1.330 asks only when it is started without a prompt (with one it sends
//! the prompt over the whole conversation at once), when the conversation's last message
//! is older than `CLAUDE_CODE_RESUME_THRESHOLD_MINUTES` (70) and its context is at least
//! `CLAUDE_CODE_RESUME_TOKEN_THRESHOLD` tokens (100 000: the last answer's usage, input,
//! cache and output together), when the person never chose "Don't ask again"
//! (`resumeReturnDismissed` in `~/.claude.json`) — and only behind server-side flags and a
//! compaction summary it precomputed, which orange cannot see. So this says "may": when it
//! does not ask, claude simply waits at its prompt.

use std::path::Path;
use std::time::SystemTime;

use crate::adapters::store;
use crate::execution::harness::claude::transcript;

/// Claude Code's default age (minutes) and size (tokens) past which it asks.
const MINUTES: u64 = 70;
const TOKENS: u64 = 100_000;

/// Whether claude may ask how to resume the conversation of transcript `log` (its user
/// file `user_file`) at `now`, with the thresholds of this environment.
pub fn may_ask(log: &Path, user_file: &Path, now: SystemTime) -> bool {
    let minutes = threshold("CLAUDE_CODE_RESUME_THRESHOLD_MINUTES", MINUTES);
    let tokens = threshold("CLAUDE_CODE_RESUME_TOKEN_THRESHOLD", TOKENS);
    !dismissed(user_file)
        && transcript::log_tail(log).is_some_and(|t| old_and_large(&t, now, minutes, tokens))
}

/// An environment variable's whole number, else `default`.
fn threshold(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The person chose "Don't ask again".
fn dismissed(user_file: &Path) -> bool {
    store::read_regular(user_file, 64 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("resumeReturnDismissed")?.as_bool())
        == Some(true)
}

/// The last user or assistant message of `tail` (a transcript's end) is at least
/// `minutes` old at `now`, and the last answer's usage at least `tokens`.
fn old_and_large(tail: &str, now: SystemTime, minutes: u64, tokens: u64) -> bool {
    let lines: Vec<serde_json::Value> = tail
        .lines()
        .rev()
        .filter(|l| l.contains("\"user\"") || l.contains("\"assistant\""))
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| {
            matches!(
                v.get("type").and_then(|t| t.as_str()),
                Some("user" | "assistant")
            ) && v.get("isSidechain").and_then(|s| s.as_bool()) != Some(true)
        })
        .collect();
    let last_at = lines
        .iter()
        .find_map(|v| v.get("timestamp")?.as_str())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let Some(last_at) = last_at else {
        return false;
    };
    let now: chrono::DateTime<chrono::Utc> = now.into();
    let age = now.signed_duration_since(last_at).num_seconds();
    let used = lines
        .iter()
        .filter(|v| v.get("type").and_then(|t| t.as_str()) == Some("assistant"))
        .find_map(|v| v.get("message")?.get("usage"))
        .map(|u| {
            [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            ]
            .iter()
            .filter_map(|k| u.get(*k).and_then(|n| n.as_u64()))
            .sum::<u64>()
        })
        .unwrap_or(0);
    age >= 0 && age as u64 >= minutes * 60 && used >= tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn line(kind: &str, at: &str, usage: Option<u64>) -> String {
        let mut v = serde_json::json!({"type": kind, "timestamp": at, "message": {"role": kind, "content": "x"}});
        if let Some(n) = usage {
            v["message"]["usage"] = serde_json::json!({"input_tokens": 11, "cache_creation_input_tokens": 7, "cache_read_input_tokens": n, "output_tokens": 5});
        }
        v.to_string()
    }

    #[test]
    fn only_an_old_and_large_conversation_may_be_asked_about() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |mins_ago: i64| {
            let t: chrono::DateTime<chrono::Utc> = now.into();
            (t - chrono::Duration::minutes(mins_ago)).to_rfc3339()
        };
        let log = |mins_ago: i64, cache: u64| {
            [
                line("user", &at(mins_ago + 1), None),
                line("assistant", &at(mins_ago), Some(cache)),
                r#"{"type":"last-prompt"}"#.to_string(),
            ]
            .join("\n")
        };
        // 11 + 7 + 99 977 + 5 = 100 000 tokens, 70 minutes: asked.
        assert!(old_and_large(&log(70, 99_977), now, 70, 100_000));
        assert!(!old_and_large(&log(69, 99_977), now, 70, 100_000));
        assert!(!old_and_large(&log(70, 99_976), now, 70, 100_000));
        // Its own thresholds: a small, recent one too.
        assert!(old_and_large(&log(2, 3), now, 1, 20));
        // No message, no usage: never.
        assert!(!old_and_large(r#"{"type":"mode"}"#, now, 0, 0));
        let no_usage = line("user", &at(500), None);
        assert!(!old_and_large(&no_usage, now, 70, 1));
    }

    #[test]
    fn the_person_s_dont_ask_again_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join(".claude.json");
        std::fs::write(&f, r#"{"resumeReturnDismissed": true}"#).unwrap();
        assert!(dismissed(&f));
        std::fs::write(&f, r#"{"hasCompletedOnboarding": true}"#).unwrap();
        assert!(!dismissed(&f));
        assert!(!dismissed(&d.path().join("missing.json")));
    }
}
