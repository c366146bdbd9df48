//! Agent state (seed 003): what an agent is doing, read from the best signal available —
//! agent hooks, Claude Code's JSONL session log, pane liveness and exit status, screen
//! activity — and kept in `tasks/<project>/<id>/agent.json` (system-owned).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Working,
    /// Waiting for the user (its turn ended, or it asked something).
    Waiting,
    /// The agent process exited (see `exit_status`).
    Dead,
    Error,
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Working => "working",
            State::Waiting => "waiting",
            State::Dead => "dead",
            State::Error => "error",
            State::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Unauthorized,
    OutOfCredits,
    RateLimited,
    NoNetwork,
    Other,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::OutOfCredits => "out_of_credits",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::NoNetwork => "no_network",
            ErrorKind::Other => "other",
        }
    }
}

/// Which signal decided a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    Hook,
    Log,
    Pane,
    Screen,
    None,
}

/// `agent.json`: the last observation and what the monitor did about it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub state: Option<State>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub signal: Option<Signal>,
    /// When the state was observed (RFC 3339).
    #[serde(default)]
    pub at: String,
    /// When the current state began (unchanged across observations of the same state).
    #[serde(default)]
    pub since: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// The last state an agent hook reported, and when (hooks outrank the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_state: Option<State>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event: Option<String>,
    /// The idle period (its `since`) that was already nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudged_for: Option<String>,
    #[serde(default)]
    pub nudges: u32,
    /// The death (`<session id>:<pane pid>`) already handled by the exit policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_death: Option<String>,
    /// The error (its `since`) already handled by the error policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated: Option<Escalation>,
    /// Size of the Claude log at the last pass (the idle debounce: a log that grew is not idle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_len: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    pub reason: String,
    pub at: String,
}

pub fn info_path(task_dir: &Path) -> PathBuf {
    task_dir.join("agent.json")
}

pub fn load(task_dir: &Path) -> AgentInfo {
    // agent.json is advisory: a missing or unreadable one is "nothing known yet".
    std::fs::read(info_path(task_dir))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn save(task_dir: &Path, info: &AgentInfo) -> Result<()> {
    store::write_json_atomic(&info_path(task_dir), info)
}

/// What one log line says.
#[derive(Debug, Clone, PartialEq)]
pub enum LogState {
    Working,
    Waiting,
    Error(ErrorKind, String),
}

/// Classify an API error message.
pub fn classify_error(msg: &str) -> ErrorKind {
    let m = msg.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if has(&[
        "credit",
        "quota",
        "billing",
        "insufficient_quota",
        "payment",
        "usage limit",
    ]) {
        ErrorKind::OutOfCredits
    } else if has(&[
        "401",
        "403",
        "unauthorized",
        "authentication",
        "invalid api key",
        "invalid x-api-key",
        "not logged in",
        "oauth token",
        "permission_error",
    ]) {
        ErrorKind::Unauthorized
    } else if has(&[
        "429",
        "rate limit",
        "rate_limit",
        "too many requests",
        "overloaded",
        "529",
    ]) {
        ErrorKind::RateLimited
    } else if has(&[
        "network",
        "econnrefused",
        "enotfound",
        "econnreset",
        "etimedout",
        "fetch failed",
        "connection",
        "getaddrinfo",
        "offline",
        "dns",
    ]) {
        ErrorKind::NoNetwork
    } else {
        ErrorKind::Other
    }
}

/// One line of Claude Code's JSONL log → a state, or `None` for lines that say nothing
/// about the turn (summaries, system lines, invalid JSON).
pub fn state_of_line(line: &str) -> Option<LogState> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let err = v.get("error").and_then(error_text).or_else(|| {
        v.get("message")
            .and_then(|m| m.get("error"))
            .and_then(error_text)
    });
    if let Some(e) = err {
        return Some(LogState::Error(classify_error(&e), e));
    }
    if v.get("isApiErrorMessage").and_then(|b| b.as_bool()) == Some(true) {
        let text = content_text(&v).unwrap_or_default();
        return Some(LogState::Error(classify_error(&text), text));
    }
    match v.get("type").and_then(|t| t.as_str())? {
        "user" => Some(LogState::Working),
        "assistant" => {
            let msg = v.get("message")?;
            match msg.get("stop_reason").and_then(|s| s.as_str()) {
                Some("tool_use") => return Some(LogState::Working),
                Some("end_turn") | Some("stop_sequence") => return Some(LogState::Waiting),
                Some("max_tokens") => return Some(LogState::Working),
                _ => {}
            }
            // stop_reason is often null in real logs: the content decides.
            let blocks = msg.get("content").and_then(|c| c.as_array())?;
            let kinds: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("type").and_then(|t| t.as_str()))
                .collect();
            if kinds.iter().any(|k| {
                matches!(
                    *k,
                    "tool_use" | "thinking" | "redacted_thinking" | "server_tool_use"
                )
            }) {
                Some(LogState::Working)
            } else if kinds.contains(&"text") {
                Some(LogState::Waiting)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn error_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Object(o) => o
            .get("message")
            .and_then(|m| m.as_str())
            .or_else(|| o.get("type").and_then(|t| t.as_str()))
            .map(str::to_string)
            .or_else(|| Some(v.to_string())),
        _ => None,
    }
}

fn content_text(v: &serde_json::Value) -> Option<String> {
    let blocks = v.get("message")?.get("content")?.as_array()?;
    Some(
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The state of a whole log: the last line that says something (a truncated last line,
/// trailing blank lines and bookkeeping lines are passed over). `None`: unknown.
pub fn state_of_log(text: &str) -> Option<LogState> {
    text.lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(50)
        .find_map(state_of_line)
}

/// Claude Code's log of a session: `<config>/projects/<cwd with / and . as ->/<id>.jsonl`.
pub fn claude_log_path(cwd: &Path, session_id: &str) -> PathBuf {
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .unwrap_or_else(|| PathBuf::from(".claude"));
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let dir: String = canonical
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    config
        .join("projects")
        .join(dir)
        .join(format!("{session_id}.jsonl"))
}

/// Read the tail of a (possibly large) log file: the last 64 KiB.
pub fn read_log_tail(path: &Path) -> Option<(String, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        // Drop the partial first line.
        if let Some(i) = text.find('\n') {
            text = text[i + 1..].to_string();
        }
    }
    Some((text, len))
}

/// The state a Claude Code hook event means, or `None` for events that change nothing.
pub fn state_of_hook(event: &str) -> Option<State> {
    match event {
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "SessionStart" => Some(State::Working),
        "Stop" | "Notification" => Some(State::Waiting),
        // A sub-agent finishing says nothing about its parent.
        "SubagentStop" => None,
        _ => None,
    }
}

/// The hooks orange adds to a workspace's `.claude/settings.local.json`, merged into
/// whatever the project's settings already hold.
pub fn claude_settings_with_hooks(
    existing: Option<serde_json::Value>,
    orange_bin: &str,
) -> serde_json::Value {
    let mut settings = match existing {
        Some(serde_json::Value::Object(o)) => serde_json::Value::Object(o),
        _ => serde_json::json!({}),
    };
    let hooks = settings
        .as_object_mut()
        .unwrap()
        .entry("hooks")
        .or_insert_with(|| serde_json::json!({}));
    if !hooks.is_object() {
        *hooks = serde_json::json!({});
    }
    for event in [
        "UserPromptSubmit",
        "PreToolUse",
        "Stop",
        "Notification",
        "SessionStart",
    ] {
        let cmd = format!("{} hook agent {event}", crate::shell::quote(orange_bin));
        let entry = serde_json::json!({"hooks": [{"type": "command", "command": cmd}]});
        let list = hooks
            .as_object_mut()
            .unwrap()
            .entry(event)
            .or_insert_with(|| serde_json::json!([]));
        if let Some(arr) = list.as_array_mut() {
            if !arr.iter().any(|e| e.to_string().contains("hook agent")) {
                arr.push(entry);
            }
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified() {
        assert_eq!(
            classify_error("API Error: 401 {\"type\":\"authentication_error\"}"),
            ErrorKind::Unauthorized
        );
        assert_eq!(
            classify_error("Invalid API key · Please run /login"),
            ErrorKind::Unauthorized
        );
        assert_eq!(
            classify_error("Credit balance is too low"),
            ErrorKind::OutOfCredits
        );
        assert_eq!(
            classify_error("API Error: 429 rate_limit_error"),
            ErrorKind::RateLimited
        );
        assert_eq!(
            classify_error("Connection error: fetch failed (ECONNREFUSED)"),
            ErrorKind::NoNetwork
        );
        assert_eq!(classify_error("something odd"), ErrorKind::Other);
    }

    #[test]
    fn hooks_merge_into_existing_settings_once() {
        let s = claude_settings_with_hooks(
            Some(
                serde_json::json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}),
            ),
            "/o/orange",
        );
        assert_eq!(s["model"], "x");
        assert_eq!(s["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["command"], "mine");
        let again = claude_settings_with_hooks(Some(s.clone()), "/o/orange");
        assert_eq!(again, s, "merging twice adds nothing");
        assert!(s["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook agent UserPromptSubmit"));
    }

    #[test]
    fn claude_log_path_replaces_slashes_and_dots() {
        std::env::set_var("CLAUDE_CONFIG_DIR", "/cfg");
        let p = claude_log_path(Path::new("/nonexistent/my.app/ws--1"), "abc");
        assert_eq!(
            p,
            PathBuf::from("/cfg/projects/-nonexistent-my-app-ws--1/abc.jsonl")
        );
    }
}
