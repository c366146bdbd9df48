//! Reading Claude Code's own words: one line of its JSONL transcript (a turn in
//! progress, its end — on a question or not —, an API error), the state of a whole
//! transcript, the first prompt a person typed, whether a conversation can be resumed, and
//! what each of its hook events says.

use std::path::Path;

use crate::adapters::store;
use crate::execution::harness::state::{
    classify_api_error, question_in, Blocker, HookSays, LogState, State,
};

/// One line of Claude Code's JSONL log → a state, or `None` for lines that say nothing
/// about the turn (summaries, system lines, invalid JSON).
pub fn state_of_line(line: &str) -> Option<LogState> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let status = v
        .get("apiErrorStatus")
        .and_then(|s| s.as_u64())
        .and_then(|s| u16::try_from(s).ok());
    let err = v.get("error").and_then(error_text).or_else(|| {
        v.get("message")
            .and_then(|m| m.get("error"))
            .and_then(error_text)
    });
    let api_error = v.get("isApiErrorMessage").and_then(|b| b.as_bool()) == Some(true);
    if err.is_some() || api_error {
        // The message text ("API Error: 529 Overloaded …") is the detail; the `error`
        // string ("server_error") only helps the classification.
        let text = content_text(&v).filter(|t| !t.trim().is_empty());
        let both = format!(
            "{} {}",
            text.as_deref().unwrap_or(""),
            err.as_deref().unwrap_or("")
        );
        let kind = classify_api_error(status, &both);
        let detail = text.or(err).unwrap_or_else(|| "API error".into());
        return Some(LogState::Error(kind, detail));
    }
    match v.get("type").and_then(|t| t.as_str())? {
        // A prompt or a tool result: a turn in progress. Meta lines (a local command such
        // as `/exit`, its output) are bookkeeping, not work.
        "user" if v.get("isMeta").and_then(|m| m.as_bool()) == Some(true) => None,
        "user" if is_local_command(&v) => None,
        // The summary a compaction (`/compact`, or the resume dialog's "Resume from
        // summary") puts at the head of the conversation: no turn.
        "user" if v.get("isCompactSummary").and_then(|m| m.as_bool()) == Some(true) => None,
        // Esc during a request or a tool, or a rejected tool call: the turn ended and no
        // Stop hook fires.
        "user" if content_text_any(&v).contains("[Request interrupted by user") => {
            Some(LogState::Waiting { question: None })
        }
        "user" => Some(LogState::Working { tool: false }),
        "assistant" => {
            let msg = v.get("message")?;
            let blocks = msg.get("content").and_then(|c| c.as_array());
            let kinds: Vec<&str> = blocks
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("type").and_then(|t| t.as_str()))
                .collect();
            let tool = kinds
                .iter()
                .any(|k| matches!(*k, "tool_use" | "server_tool_use"));
            let waiting = || LogState::Waiting {
                question: content_text(&v).as_deref().and_then(question_in),
            };
            match msg.get("stop_reason").and_then(|s| s.as_str()) {
                Some("tool_use") => return Some(LogState::Working { tool: true }),
                Some("end_turn") | Some("stop_sequence") => return Some(waiting()),
                Some("max_tokens") => return Some(LogState::Working { tool }),
                _ => {}
            }
            // stop_reason is often null in real logs: the content decides.
            if tool
                || kinds
                    .iter()
                    .any(|k| matches!(*k, "thinking" | "redacted_thinking"))
            {
                Some(LogState::Working { tool })
            } else if kinds.contains(&"text") {
                Some(waiting())
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Every text of a line's message, string content or blocks (tool results included).
fn content_text_any(v: &serde_json::Value) -> String {
    let mut out = String::new();
    fn walk(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => out.push_str(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => {
                for k in ["text", "content"] {
                    if let Some(x) = o.get(k) {
                        walk(x, out);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(c) = v.get("message").and_then(|m| m.get("content")) {
        walk(c, &mut out);
    }
    out
}

/// A user line that records a local slash command or its output (`<command-name>/exit…`).
fn is_local_command(v: &serde_json::Value) -> bool {
    let content = v.get("message").and_then(|m| m.get("content"));
    let text = match content {
        Some(serde_json::Value::String(s)) => s.as_str(),
        Some(serde_json::Value::Array(a)) => a
            .first()
            .and_then(|b| b.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or(""),
        _ => "",
    };
    let t = text.trim_start();
    t.starts_with("<command-name>")
        || t.starts_with("<local-command")
        || t.starts_with("<command-message>")
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
    state_of_log_at(text).map(|(s, _)| s)
}

/// The `timestamp` of a transcript line (Claude Code writes one on every message line).
pub fn line_time(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    v.get("timestamp")?.as_str().map(str::to_string)
}

/// [`state_of_log`], and where the line that decided it ends in `text` (bytes): what
/// follows it is bookkeeping (Claude Code 2.1 writes an `api-request` line per attempt
/// while it retries, and mode, cost-state, attachment… lines after a turn).
pub fn state_of_log_at(text: &str) -> Option<(LogState, usize)> {
    let mut end = text.len();
    let mut seen = 0;
    for line in text[..end].rsplit('\n') {
        let line_end = end;
        end = end.saturating_sub(line.len() + 1);
        if line.trim().is_empty() {
            continue;
        }
        seen += 1;
        if seen > 400 {
            return None;
        }
        if let Some(s) = state_of_line(line) {
            return Some((s, line_end));
        }
    }
    None
}

/// Claude saved a conversation it can `--resume`: its transcript holds a message (a
/// transcript of bookkeeping lines only, what a SIGKILL can leave, is "No conversation
/// found" to claude).
pub fn has_conversation(path: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = store::open_regular(path) else {
        return false;
    };
    std::io::BufReader::new(f)
        .lines()
        .map_while(|l| l.ok())
        .any(|l| l.contains("\"type\":\"user\"") || l.contains("\"type\":\"assistant\""))
}

/// The first prompt a person gave a claude, from its transcript: the first user line that
/// is not bookkeeping (meta lines, a sub-agent's, a local slash command and its output, a
/// tool result). Only the first MiB is read (the first prompt comes first). `None`: no
/// prompt yet (or no transcript).
pub fn first_prompt_in_log(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let f = store::open_regular(path).ok()?;
    for line in std::io::BufReader::new(f.take(1 << 20))
        .lines()
        .map_while(|l| l.ok())
    {
        if !line.contains("\"user\"") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let flag = |k: &str| v.get(k).and_then(|x| x.as_bool()) == Some(true);
        if v.get("type").and_then(|t| t.as_str()) != Some("user")
            || flag("isMeta")
            || flag("isSidechain")
            || is_local_command(&v)
        {
            continue;
        }
        let text = match v.get("message").and_then(|m| m.get("content")) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
                .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if !text.trim().is_empty() {
            return Some(text);
        }
    }
    None
}

/// The last answer of a claude, from its transcript: the text blocks of the last main
/// assistant line that has any (its final message; a tool call's line has none). Only the
/// last 4 MiB are read. `None`: no answer (or no transcript).
pub fn last_answer_in_log(path: &Path) -> Option<String> {
    log_tail(path)?.lines().rev().find_map(|line| {
        if !line.contains("\"assistant\"") {
            return None;
        }
        let v = serde_json::from_str::<serde_json::Value>(line).ok()?;
        let sidechain = v.get("isSidechain").and_then(|x| x.as_bool()) == Some(true);
        if v.get("type").and_then(|t| t.as_str()) != Some("assistant") || sidechain {
            return None;
        }
        let blocks = v.get("message")?.get("content")?.as_array()?;
        let said: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect();
        (!said.is_empty()).then(|| said.join("\n"))
    })
}

/// The last 4 MiB of a transcript (its first line there may be cut). `None`: no transcript.
pub fn log_tail(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = store::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(4 << 20);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    f.take(4 << 20).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first string among `keys` in a hook's JSON payload.
fn payload_str<'p>(payload: &'p serde_json::Value, keys: &[&str]) -> Option<&'p str> {
    keys.iter()
        .find_map(|k| payload.get(*k).and_then(|v| v.as_str()))
        .filter(|s| !s.trim().is_empty())
}

/// What a Claude Code hook event means (`payload`: the hook's JSON on standard input, or
/// `Null`), or `None` for events that say nothing about the agent's turn.
///
/// - SessionStart: the agent is up and idle (a claude started without a prompt does no
///   work; with a prompt, UserPromptSubmit follows).
/// - UserPromptSubmit, PreToolUse, PostToolUse: working (a tool call is progress).
/// - Stop: its turn ended. Notification: `permission_prompt` → blocked (approval),
///   `idle_prompt` → waiting, others say nothing. PermissionRequest → blocked (approval).
/// - StopFailure (an API error or an interrupt, where Stop does not fire) → error.
/// - SubagentStop, SessionEnd, anything else: nothing (a sub-agent's end says nothing
///   about its parent; the pane tells the exit).
pub fn state_of_hook(event: &str, payload: &serde_json::Value) -> Option<HookSays> {
    match event {
        // A compaction (auto-compaction mid-turn too) restarts no session.
        "SessionStart" if payload_str(payload, &["source"]) == Some("compact") => None,
        "SessionStart" => Some(HookSays::state(State::Waiting)),
        "UserPromptSubmit" => Some(HookSays::state(State::Working)),
        "PreToolUse" | "PostToolUse" => Some(HookSays {
            progress: true,
            ..HookSays::state(State::Working)
        }),
        "Stop" => Some(HookSays {
            detail: payload_str(payload, &["last_assistant_message"]).and_then(question_in),
            ..HookSays::state(State::Waiting)
        }),
        "Notification" => {
            let message = payload_str(payload, &["message"]).map(str::to_string);
            let kind = payload_str(payload, &["notification_type"]).unwrap_or("");
            let lower = message.as_deref().unwrap_or("").to_ascii_lowercase();
            // `agent_needs_input`: auto mode cannot check a tool call and asks.
            if matches!(kind, "permission_prompt" | "agent_needs_input")
                || (kind.is_empty() && lower.contains("permission"))
            {
                Some(HookSays {
                    blocker: Some(Blocker::Approval),
                    detail: message,
                    ..HookSays::state(State::Blocked)
                })
            } else if kind == "idle_prompt"
                || (kind.is_empty() && lower.contains("waiting for your input"))
            {
                Some(HookSays::state(State::Waiting))
            } else {
                None
            }
        }
        "PermissionRequest" => {
            let tool = payload_str(payload, &["tool_name"]).unwrap_or("a tool");
            Some(HookSays {
                blocker: Some(Blocker::Approval),
                detail: Some(format!("asks to use {tool}")),
                ..HookSays::state(State::Blocked)
            })
        }
        "StopFailure" => {
            let status = ["status", "apiErrorStatus", "status_code"]
                .iter()
                .find_map(|k| payload.get(*k).and_then(|v| v.as_u64()))
                .and_then(|s| u16::try_from(s).ok());
            // Claude Code 2.1: `error` is a code (authentication_failed, rate_limit,
            // server_error for 500 and 529 alike) and `last_assistant_message` the message
            // ("API Error: 529 Overloaded. …"): both classify, the message is the detail.
            let code = payload_str(payload, &["error", "error_type"]).unwrap_or("");
            let message = payload_str(
                payload,
                &[
                    "last_assistant_message",
                    "error_message",
                    "message",
                    "reason",
                ],
            );
            let text = format!("{} {code}", message.unwrap_or(""));
            let detail = message
                .map(str::to_string)
                .or_else(|| (!code.is_empty()).then(|| code.to_string()))
                .unwrap_or_else(|| "the turn failed (StopFailure)".to_string());
            Some(HookSays {
                error: Some(classify_api_error(status, &text)),
                detail: Some(detail),
                ..HookSays::state(State::Error)
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::state::ErrorKind;

    #[test]
    fn the_first_prompt_is_the_first_typed_user_line_of_the_transcript() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
        assert_eq!(
            first_prompt_in_log(
                &fixtures.join("transcripts/bypass-tool-turn-exit-resume-sigterm.jsonl")
            )
            .as_deref(),
            Some("please touch x")
        );
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("c.jsonl");
        std::fs::write(
            &log,
            concat!(
                "{\"type\":\"mode\",\"mode\":\"normal\"}\n",
                "{\"type\":\"user\",\"isMeta\":true,\"message\":{\"content\":\"caveat\"}}\n",
                "{\"type\":\"user\",\"message\":{\"content\":\"<command-name>/model</command-name>\"}}\n",
                "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"x\"}]}}\n",
                "not json \"user\"\n",
                "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Fix it\"}]}}\n",
                "{\"type\":\"user\",\"message\":{\"content\":\"later\"}}\n",
            ),
        )
        .unwrap();
        assert_eq!(first_prompt_in_log(&log).as_deref(), Some("Fix it"));
        assert_eq!(first_prompt_in_log(&d.path().join("none.jsonl")), None);
        std::fs::write(&log, "{\"type\":\"mode\"}\n").unwrap();
        assert_eq!(first_prompt_in_log(&log), None);
    }

    #[test]
    fn hooks_say_what_this_claude_means() {
        let null = serde_json::Value::Null;
        assert_eq!(
            state_of_hook("SessionStart", &null).unwrap().state,
            State::Waiting
        );
        assert!(state_of_hook("PostToolUse", &null).unwrap().progress);
        let perm = state_of_hook(
            "Notification",
            &serde_json::json!({"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"}),
        )
        .unwrap();
        assert_eq!(
            (perm.state, perm.blocker),
            (State::Blocked, Some(Blocker::Approval))
        );
        let idle = state_of_hook(
            "Notification",
            &serde_json::json!({"notification_type": "idle_prompt", "message": "Claude is waiting for your input"}),
        )
        .unwrap();
        assert_eq!(idle.state, State::Waiting);
        assert!(state_of_hook(
            "Notification",
            &serde_json::json!({"notification_type": "auth_success"})
        )
        .is_none());
        let fail = state_of_hook(
            "StopFailure",
            &serde_json::json!({"error": "API Error: 529 Overloaded"}),
        )
        .unwrap();
        assert_eq!(
            (fail.state, fail.error),
            (State::Error, Some(ErrorKind::Overloaded))
        );
        assert!(state_of_hook("SubagentStop", &null).is_none());
    }

    #[test]
    fn the_deciding_line_ends_before_bookkeeping_lines() {
        let turn = r#"{"type":"user","message":{"content":"go"}}"#;
        let text =
            format!("{turn}\n{{\"type\":\"api-request\"}}\n{{\"type\":\"api-request\"}}\n\n");
        let (state, end) = state_of_log_at(&text).unwrap();
        assert_eq!(state, LogState::Working { tool: false });
        assert_eq!(end, turn.len());
        assert_eq!(state_of_log_at("{\"type\":\"mode\"}\n"), None);
    }

    #[test]
    fn a_compaction_s_summary_is_no_turn() {
        // What Claude Code 2.1.330 writes after `/compact` (or "Resume from summary"): the
        // summary, then the command and its output; then it waits at its prompt.
        let log = [
            r#"{"type":"system","subtype":"compact_boundary"}"#,
            r#"{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued from a previous conversation."}}"#,
            r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>The command below was run directly in Claude Code</local-command-caveat>"}}"#,
            r#"{"type":"user","message":{"role":"user","content":"<command-name>/compact</command-name>"}}"#,
            r#"{"type":"user","message":{"role":"user","content":"<local-command-stdout>Compacted</local-command-stdout>"}}"#,
        ]
        .join("\n");
        assert_eq!(state_of_line(log.lines().nth(1).unwrap()), None);
        assert_eq!(state_of_log(&log), None);
    }
}
