//! Everything orange knows of pi (`pi`, the pi coding agent 0.73): its command line, its
//! own event channel, where it keeps its state, and the first prompt in its session file.
//!
//! - Interactive by default: `pi [--session FILE] [-e EXT] [PROMPT]`, its interface in the
//!   task's pane with the task prompt as the first message; one-shot (`-p`) on request
//!   ([`Options::headless`]). pi has no `--`: an argument starting with `-` is an option,
//!   one starting with `@` a file to attach. A prompt starting with `-`, `@` or a space is
//!   handed over after one more space (`PromptAfter::Bare`), and orange's extension takes
//!   exactly that space away again before the model sees the text.
//! - The conversation is a session file orange chooses up front (`--session FILE`, in
//!   pi's own sessions directory of the workspace): respawn and restore pass the same
//!   file, never `--continue` (the last session of the directory, maybe another task's).
//! - The channel: an extension (`-e`, written into the agent's own directory, never into
//!   the user's pi config) that runs `orange hook agent EVENT` with a JSON payload for
//!   session, input, agent, turn, message and tool events ([`EXTENSION`]); [`Pi::hook_says`]
//!   maps them to states. Stock pi has no tool approvals and no question event.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::execution::harness::files::{content_text, home, json_lines, same_dir, written_since};
use crate::execution::harness::kind::{
    new_uuid, AgentKind, Conversation, Options, PromptAfter, Start,
};
use crate::execution::harness::state::{classify_api_error, question_in, Blocker, HookSays, State};

/// The extension orange writes for each pi it starts (TypeScript, loaded by pi's own
/// loader): every event it forwards runs `$ORANGE_BIN hook agent EVENT` (else `orange`)
/// with `{"harness":"pi","pi_event":…,"available":N,…}` on standard input, one at a time
/// and in order; while one runs, only the newest waiting event is kept (a state is
/// last-writer-wins; a tool event on the way marks `progress`).
pub const EXTENSION: &str = include_str!("pi_events.ts");

/// The extension's file name in the agent's directory.
const EXTENSION_FILE: &str = "pi-orange-events.ts";

pub struct Pi;

impl AgentKind for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn package(&self) -> &'static str {
        "@mariozechner/pi-coding-agent"
    }

    /// `-p` (one-shot, with a prompt), `--session FILE` (its conversation), `-e EXT` (the
    /// channel; written here into the agent's directory: without it, no `-e`, and orange
    /// reads the screen).
    fn options(&self, o: &Options) -> Vec<String> {
        let mut v = vec![];
        if o.headless && o.prompt {
            v.push("-p".into());
        }
        if let Some(c) = o.conversation {
            v.extend(["--session".into(), c.id().to_string()]);
        }
        if let Some(ext) = o.agent_dir.and_then(write_extension) {
            v.extend(["-e".into(), ext.display().to_string()]);
        }
        v
    }

    /// pi has no `--`.
    fn prompt_after(&self, _headless: bool) -> PromptAfter {
        PromptAfter::Bare
    }

    /// A session file chosen now (first start, or a respawn that knows none), else the one
    /// it had: its absolute path is the conversation's id.
    fn conversation(
        &self,
        start: Start,
        known: Option<&str>,
        workspace: &Path,
    ) -> Option<Conversation> {
        match (start, known) {
            (Start::Respawn, Some(file)) => Some(Conversation::Resume(file.to_string())),
            _ => new_session_file(workspace).map(|f| Conversation::New(f.display().to_string())),
        }
    }

    /// The first user message of its session file, else of a session of the workspace
    /// written since the task was created (pi writes its session when the first answer
    /// comes).
    fn first_prompt(
        &self,
        conversation: Option<&str>,
        workspace: &Path,
        since: Option<SystemTime>,
    ) -> Option<String> {
        if let Some(text) = conversation.and_then(|c| first_prompt_in(Path::new(c), None)) {
            return Some(text);
        }
        first_prompt(&session_dirs(workspace), workspace, since?)
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (vec![home.join(".pi")], vec![])
    }

    /// pi's spinner moves the screen all through a turn (a slow answer, a long tool call):
    /// "working" with a quiet screen and no event for 10 s is a channel gone silent.
    fn channel(&self) -> Option<(&'static str, std::time::Duration)> {
        Some((
            "pi's channel (orange's extension)",
            std::time::Duration::from_secs(10),
        ))
    }

    fn announces_start(&self, event: &str, _payload: &Value) -> bool {
        event == "session_start"
    }

    fn hook_says(&self, event: &str, payload: &Value) -> Option<HookSays> {
        says(
            event,
            payload,
            &retry_settings(&std::env::current_dir().unwrap_or_default()),
        )
    }
}

/// What pi (0.73) does with a failed turn by itself: `retry.enabled`, `retry.maxRetries`
/// of its settings (the project's `.pi/settings.json` over the agent directory's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub enabled: bool,
    pub max: u64,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            enabled: true,
            max: 3,
        }
    }
}

/// pi's retry settings for a pi working in `cwd`.
pub fn retry_settings(cwd: &Path) -> Retry {
    let mut r = Retry::default();
    let files = agent_dir()
        .map(|d| d.join("settings.json"))
        .into_iter()
        .chain([cwd.join(".pi/settings.json")]);
    for f in files {
        let Some(v) = std::fs::read_to_string(&f)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        if let Some(e) = v["retry"]["enabled"].as_bool() {
            r.enabled = e;
        }
        if let Some(m) = v["retry"]["maxRetries"].as_u64() {
            r.max = m;
        }
    }
    r
}

/// An error pi 0.73 retries by itself (its `_isRetryableError`, spaces, `_` and `-`
/// ignored): overloaded, rate limits, 429/5xx, network and stream failures.
pub fn retryable(message: &str) -> bool {
    let m: String = message
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .collect();
    const WORDS: &[&str] = &[
        "overloaded",
        "providerreturnederror",
        "ratelimit",
        "toomanyrequests",
        "429",
        "500",
        "502",
        "503",
        "504",
        "serviceunavailable",
        "servererror",
        "internalerror",
        "networkerror",
        "connectionerror",
        "connectionrefused",
        "connectionlost",
        "websocketclosed",
        "websocketerror",
        "othersideclosed",
        "fetchfailed",
        "upstreamconnect",
        "resetbeforeheaders",
        "sockethangup",
        "endedwithout",
        "http2requestdidnotgetaresponse",
        "timedout",
        "timeout",
        "terminated",
        "retrydelay",
    ];
    WORDS.iter().any(|w| m.contains(w))
}

/// What one event of orange's pi extension says (see [`EXTENSION`]).
///
/// | event | state |
/// |---|---|
/// | any, with `available: 0` (no model with credentials) | blocked: login |
/// | `session_start` | waiting |
/// | `input`, `agent_start`, `turn_start`, `message_end` | working |
/// | `tool_execution_start`/`_end` | working (progress) |
/// | `agent_end`, the turn answered | waiting (a question when it ends with one) |
/// | `agent_end`, aborted (Esc) | waiting |
/// | `agent_end`, an error pi retries (attempt ≤ `retry.maxRetries`) | retrying |
/// | `agent_end`, an error it does not retry, or the last attempt | error (its kind) |
pub fn says(event: &str, payload: &Value, retry: &Retry) -> Option<HookSays> {
    let progress = payload["progress"].as_bool().unwrap_or(false) || event.starts_with("tool_");
    if payload["available"].as_u64() == Some(0) {
        return Some(HookSays {
            blocker: Some(Blocker::Login),
            detail: Some(NO_MODELS.to_string()),
            progress,
            ..HookSays::state(State::Blocked)
        });
    }
    let working = HookSays {
        progress,
        ..HookSays::state(State::Working)
    };
    match event {
        "session_start" => Some(HookSays::state(State::Waiting)),
        "input" | "agent_start" | "turn_start" | "tool_execution_start" | "tool_execution_end" => {
            Some(working)
        }
        "message_end" if payload["stop_reason"] != "error" => Some(working),
        "agent_end" => {
            let error = payload["error"].as_str().unwrap_or("");
            match payload["stop_reason"].as_str() {
                Some("error") => {
                    let attempt = payload["attempt"].as_u64().unwrap_or(1);
                    let detail = if error.is_empty() {
                        "the turn failed"
                    } else {
                        error
                    };
                    if retry.enabled && retryable(error) && attempt <= retry.max {
                        Some(HookSays {
                            detail: Some(format!("attempt {attempt}/{}: {detail}", retry.max)),
                            ..HookSays::state(State::Retrying)
                        })
                    } else {
                        Some(HookSays {
                            error: Some(classify_api_error(leading_status(error), error)),
                            detail: Some(detail.to_string()),
                            ..HookSays::state(State::Error)
                        })
                    }
                }
                _ => Some(HookSays {
                    detail: payload["text"].as_str().and_then(question_in),
                    progress,
                    ..HookSays::state(State::Waiting)
                }),
            }
        }
        _ => None,
    }
}

/// The HTTP status pi puts first in an API error's message (`503 The engine is …`).
fn leading_status(error: &str) -> Option<u16> {
    let digits: String = error.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() == 3 && error[3..].starts_with(' '))
        .then(|| digits.parse().ok())
        .flatten()
}

/// What a pi without credentials says, and what to do.
pub const NO_MODELS: &str = "pi has no model it can use (\"No models available. Use /login…\")";

/// Write the extension into `agent_dir` (when it differs); its path, or `None` when it
/// cannot be written (pi then runs without the channel).
fn write_extension(agent_dir: &Path) -> Option<PathBuf> {
    let file = agent_dir.join(EXTENSION_FILE);
    if std::fs::read_to_string(&file).ok().as_deref() != Some(EXTENSION) {
        std::fs::create_dir_all(agent_dir).ok()?;
        std::fs::write(&file, EXTENSION).ok()?;
    }
    Some(file)
}

/// A new session file for a pi in `workspace`, named as pi names its own
/// (`<time>_<uuid>.jsonl` in its sessions directory of the workspace).
fn new_session_file(workspace: &Path) -> Option<PathBuf> {
    let dir = session_dirs(workspace).into_iter().next()?;
    let at = chrono::Utc::now()
        .format("%Y-%m-%dT%H-%M-%S-%3fZ")
        .to_string();
    Some(dir.join(format!("{at}_{}.jsonl", new_uuid())))
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
fn agent_dir() -> Option<PathBuf> {
    std::env::var_os("PI_CODING_AGENT_DIR")
        .and_then(expand)
        .or_else(|| home().map(|h| h.join(".pi/agent")))
}

fn expand(v: std::ffi::OsString) -> Option<PathBuf> {
    let s = v.to_string_lossy().into_owned();
    match s.strip_prefix("~/") {
        Some(rest) => home().map(|h| h.join(rest)),
        None => Some(PathBuf::from(s)),
    }
}

/// Where pi keeps the sessions of `workspace`: `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`)
/// `/sessions/--<path, / as ->--`, and `$PI_CODING_AGENT_SESSION_DIR` when set.
pub fn session_dirs(workspace: &Path) -> Vec<PathBuf> {
    let cwd = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let cwd = cwd.to_string_lossy();
    let safe = format!(
        "--{}--",
        cwd.strip_prefix('/')
            .unwrap_or(&cwd)
            .replace(['/', '\\', ':'], "-")
    );
    let mut dirs: Vec<PathBuf> = agent_dir()
        .map(|d| d.join("sessions").join(safe))
        .into_iter()
        .collect();
    dirs.extend(std::env::var_os("PI_CODING_AGENT_SESSION_DIR").and_then(expand));
    dirs
}

/// The first user message of a pi session of `workspace` written since `since`: its header
/// line (`"type":"session"`) names the directory, its `message` lines hold the turns.
pub fn first_prompt(dirs: &[PathBuf], workspace: &Path, since: SystemTime) -> Option<String> {
    dirs.iter()
        .flat_map(|d| written_since(d, since))
        .find_map(|file| first_prompt_in(&file, Some(workspace)))
}

/// The first user message of the session `file` (of `workspace`, when given).
fn first_prompt_in(file: &Path, workspace: Option<&Path>) -> Option<String> {
    let mut lines = json_lines(file);
    let header = lines.next()?;
    if header.get("type").and_then(|t| t.as_str()) != Some("session")
        || workspace.is_some_and(|ws| {
            !header
                .get("cwd")
                .and_then(|c| c.as_str())
                .is_some_and(|c| same_dir(c, ws))
        })
    {
        return None;
    }
    lines.find_map(|v| {
        let m = v.get("message")?;
        if v.get("type").and_then(|t| t.as_str()) != Some("message")
            || m.get("role").and_then(|r| r.as_str()) != Some("user")
        {
            return None;
        }
        let text = content_text(m.get("content")?, &["text"]);
        (!text.trim().is_empty()).then_some(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::files::tests::write;
    use crate::execution::harness::state::ErrorKind;
    use serde_json::json;

    /// What pi 0.73 writes once the first answer (here an error) came.
    #[test]
    fn pi_s_first_prompt_is_the_first_user_message_of_a_session_of_this_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let before = SystemTime::now() - std::time::Duration::from_secs(60);
        let dir = d.path().join("sessions");
        let session = |cwd: &Path, text: &str| {
            vec![
                json!({"type":"session","version":3,"id":"s","cwd":cwd}),
                json!({"type":"model_change","id":"a","parentId":null}),
                json!({"type":"message","id":"b","message":{"role":"user","content":[{"type":"text","text":text}]}}),
                json!({"type":"message","id":"c","message":{"role":"assistant","content":[],"stopReason":"error"}}),
                json!({"type":"message","id":"d","message":{"role":"user","content":"later"}}),
            ]
        };
        write(
            &dir.join("2026-01-01T00-00-00-000Z_a.jsonl"),
            &session(&d.path().join("other"), "not this"),
        );
        assert_eq!(first_prompt(std::slice::from_ref(&dir), &ws, before), None);
        write(
            &dir.join("2026-01-01T00-00-01-000Z_b.jsonl"),
            &session(&ws, "Fix the login form"),
        );
        assert_eq!(
            first_prompt(std::slice::from_ref(&dir), &ws, before).as_deref(),
            Some("Fix the login form")
        );
        // Written before the task: another task's, in the same workspace.
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(first_prompt(&[dir], &ws, later), None);
        // The directory pi 0.73 makes for a workspace.
        let dirs = session_dirs(Path::new("/tmp/o-x/home/workspaces/app--1"));
        assert!(
            dirs[0].ends_with("sessions/--tmp-o-x-home-workspaces-app--1--"),
            "{dirs:?}"
        );
    }

    /// What orange's extension sends for each moment of a turn, as pi 0.73.1 really ran
    /// them (tests/real_pi.rs drives the real program through each).
    #[test]
    fn the_extension_s_events_say_what_pi_does() {
        let r = Retry::default();
        let s = |e: &str, p: Value| says(e, &p, &r);
        assert_eq!(
            s("session_start", json!({"available": 1})).unwrap().state,
            State::Waiting
        );
        for e in ["input", "agent_start", "turn_start", "message_end"] {
            assert_eq!(
                s(e, json!({"stop_reason": "stop"})).unwrap().state,
                State::Working,
                "{e}"
            );
        }
        let tool = s("tool_execution_start", json!({"tool": "bash"})).unwrap();
        assert!(tool.progress && tool.state == State::Working);
        // A coalesced event that had a tool call before it.
        assert!(
            s(
                "agent_end",
                json!({"stop_reason": "stop", "progress": true})
            )
            .unwrap()
            .progress
        );
        let done = s(
            "agent_end",
            json!({"stop_reason": "stop", "text": "Which file?"}),
        )
        .unwrap();
        assert_eq!(
            (done.state, done.detail.as_deref()),
            (State::Waiting, Some("Which file?"))
        );
        assert_eq!(
            s("agent_end", json!({"stop_reason": "aborted"}))
                .unwrap()
                .state,
            State::Waiting
        );
        // pi's own retries: attempts 1..=3 retry, the 4th is the last.
        let e503 = "503 The engine is currently overloaded, please try again later";
        let retry = s(
            "agent_end",
            json!({"stop_reason": "error", "error": e503, "attempt": 2}),
        )
        .unwrap();
        assert_eq!(retry.state, State::Retrying);
        assert_eq!(
            retry.detail.as_deref(),
            Some(format!("attempt 2/3: {e503}").as_str())
        );
        let last = s(
            "agent_end",
            json!({"stop_reason": "error", "error": e503, "attempt": 4}),
        )
        .unwrap();
        assert_eq!(
            (last.state, last.error),
            (State::Error, Some(ErrorKind::Server))
        );
        let off = says(
            "agent_end",
            &json!({"stop_reason": "error", "error": e503, "attempt": 1}),
            &Retry {
                enabled: false,
                max: 3,
            },
        )
        .unwrap();
        assert_eq!(off.state, State::Error);
        let auth = s("agent_end", json!({"stop_reason": "error", "error": "401 Incorrect API key provided", "attempt": 1})).unwrap();
        assert_eq!(
            (auth.state, auth.error),
            (State::Error, Some(ErrorKind::Unauthorized))
        );
        // No model with credentials, whatever the event.
        for e in ["session_start", "input"] {
            let b = s(e, json!({"available": 0})).unwrap();
            assert_eq!(
                (b.state, b.blocker),
                (State::Blocked, Some(Blocker::Login)),
                "{e}"
            );
        }
        assert!(s("session_shutdown", json!({})).is_none());
        assert!(s("message_end", json!({"stop_reason": "error"})).is_none());
        assert!(!retryable("400 Bad Request: invalid model"));
        assert!(retryable("rate_limit exceeded") && retryable("fetch failed"));
    }

    #[test]
    fn its_command_line_hands_over_any_prompt_and_names_its_session() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let conv = Pi.conversation(Start::First, None, &ws).unwrap();
        assert!(matches!(conv, Conversation::New(_)));
        assert!(conv.id().ends_with(".jsonl") && Path::new(conv.id()).is_absolute());
        let again = Pi
            .conversation(Start::Respawn, Some(conv.id()), &ws)
            .unwrap();
        assert_eq!(again, Conversation::Resume(conv.id().to_string()));
        let agent = d.path().join("agent");
        let o = |headless| Options {
            prompt: true,
            start: Start::First,
            conversation: Some(&conv),
            permission_mode: None,
            headless,
            agent_dir: Some(&agent),
        };
        let ext = agent.join(EXTENSION_FILE).display().to_string();
        assert_eq!(
            Pi.options(&o(false)),
            ["--session", conv.id(), "-e", ext.as_str()]
        );
        assert_eq!(std::fs::read_to_string(&ext).unwrap(), EXTENSION);
        assert_eq!(Pi.options(&o(true))[0], "-p");
    }
}
