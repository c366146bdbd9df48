//! Agent state (seed 003): what an agent is doing, read from the best signal available —
//! agent hooks, Claude Code's JSONL session log, pane liveness and exit status, screen
//! activity — and kept in `tasks/<project>/<id>/agent.json` (system-owned).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Working,
    /// Waiting for the user (its turn ended, or it asked something).
    Waiting,
    /// A dialog or a tool-approval prompt is on screen ([`Blocker`] says which): it needs
    /// the person, never a keystroke from orange.
    Blocked,
    /// An API error the agent is retrying by itself (`Retrying … attempt k/N`).
    Retrying,
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
            State::Blocked => "blocked",
            State::Retrying => "retrying",
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
    /// HTTP 529: the API is overloaded.
    Overloaded,
    /// HTTP 5xx other than 529.
    Server,
    NoNetwork,
    Other,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::OutOfCredits => "out_of_credits",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Server => "server",
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

/// What holds a blocked agent: a first-run screen, a dialog, or a tool-approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    /// Claude Code's first-run setup (theme, welcome).
    Onboarding,
    /// It asks the person to log in.
    Login,
    /// "Do you trust the files in this folder?"
    FolderTrust,
    /// "Do you want to use this API key?"
    ApiKey,
    /// The Bypass Permissions warning (default "No, exit").
    BypassWarning,
    /// A tool-approval prompt ("Do you want to proceed?").
    Approval,
    /// claude refuses `--dangerously-skip-permissions` as root (it exits).
    RootRefusal,
    /// A prompt a harness's `blocked` screen patterns (config.toml) recognize.
    Prompt,
    /// The agent's program (or one it runs) was not found inside its sandbox: it exited
    /// 127, or bwrap could not start it.
    NotInSandbox,
}

impl Blocker {
    pub fn as_str(self) -> &'static str {
        match self {
            Blocker::Onboarding => "onboarding",
            Blocker::Login => "login",
            Blocker::FolderTrust => "folder_trust",
            Blocker::ApiKey => "api_key",
            Blocker::BypassWarning => "bypass_warning",
            Blocker::Approval => "approval",
            Blocker::RootRefusal => "root_refusal",
            Blocker::Prompt => "prompt",
            Blocker::NotInSandbox => "not_in_sandbox",
        }
    }

    /// A short label for the status line: `blocked: folder trust`.
    pub fn label(self) -> &'static str {
        match self {
            Blocker::Onboarding => "first-run setup",
            Blocker::Login => "login",
            Blocker::FolderTrust => "folder trust",
            Blocker::ApiKey => "API key",
            Blocker::BypassWarning => "bypass warning",
            Blocker::Approval => "approval",
            Blocker::RootRefusal => "root refused",
            Blocker::Prompt => "prompt",
            Blocker::NotInSandbox => "not found in sandbox",
        }
    }

    /// Exactly what the person must do (shown by `task explain`, the sidebar, the detail).
    pub fn advice(self, task: &str) -> String {
        match self {
            Blocker::Onboarding => format!(
                "Claude Code's first-run setup is on screen, or it could not reach Anthropic's service during it: attach (`orange task attach {task}`) and finish it once, or run `claude` once in a terminal (with ANTHROPIC_API_KEY, approving the key there skips the connectivity check); `orange doctor` tells when it is done"
            ),
            Blocker::Login => format!(
                "Claude Code asks you to log in: attach (`orange task attach {task}`) and log in, or give it ANTHROPIC_API_KEY"
            ),
            Blocker::FolderTrust => format!(
                "Claude Code asks whether to trust this folder: run `orange doctor --trust` in the repository (records the trust once for every worktree), or attach (`orange task attach {task}`) and answer"
            ),
            Blocker::ApiKey => format!(
                "Claude Code asks whether to use ANTHROPIC_API_KEY (default No): attach (`orange task attach {task}`) and choose Yes; it asks once per key"
            ),
            Blocker::BypassWarning => format!(
                "Claude Code shows its Bypass Permissions warning (default \"No, exit\"): attach (`orange task attach {task}`) and accept it; orange writes skipDangerousModePermissionPrompt into the workspace settings so this should not come back"
            ),
            Blocker::Approval => format!(
                "the agent waits for you to approve a tool call: attach (`orange task attach {task}`) and answer"
            ),
            Blocker::Prompt => format!(
                "the agent shows a prompt that waits for you (one of its harness's `blocked` screen patterns): attach (`orange task attach {task}`) and answer"
            ),
            Blocker::NotInSandbox => format!(
                "the program was not found inside the sandbox (/tmp and /run are private there): add its directory to sandbox_readable in config.toml, then `orange task respawn {task}`"
            ),
            Blocker::RootRefusal => format!(
                "claude refuses --dangerously-skip-permissions when run as root: run orange as a normal user, or, inside a sandbox, set IS_SANDBOX=1 in the tmux environment (`tmux set-environment -g IS_SANDBOX 1`), then `orange task respawn {task}`"
            ),
        }
    }
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
    /// What the last hook said beyond its state: a dialog, an error kind, a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_blocker: Option<Blocker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_error: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_detail: Option<String>,
    /// What holds a blocked agent (with `state: blocked`, and for a root refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<Blocker>,
    /// The last lines of a dead agent's pane (scrollback included): why it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_lines: Vec<String>,
    /// The last question the agent asked (its turn ended on one): never nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// When the agent last did work (a tool call), and the nudges sent since then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_at: Option<String>,
    #[serde(default)]
    pub idle_nudges: u32,
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

impl AgentInfo {
    /// What is known now: the monitor's last observation, or the last agent hook when it
    /// came at or after that observation (hooks arrive between monitor passes). The one
    /// rule every reader (status line, `task show`, sidebar, picker) applies.
    pub fn current(&self) -> AgentInfo {
        let mut v = self.clone();
        let Some(h) = self.hook_state else {
            return v;
        };
        let hook_is_newer = match (self.hook_at.as_deref(), self.state) {
            (_, None) => true,
            (Some(at), Some(_)) => at_or_after(at, &self.at),
            (None, Some(_)) => false,
        };
        if !hook_is_newer || self.state == Some(State::Dead) {
            return v;
        }
        // The agent moved on since the escalation (a hook after it): it is over.
        if v.escalated
            .as_ref()
            .is_some_and(|e| self.hook_at.as_deref().is_some_and(|h| after(h, &e.at)))
        {
            v.escalated = None;
        }
        v.state = Some(h);
        v.signal = Some(Signal::Hook);
        v.blocker = None;
        v.error_kind = None;
        v.asked = None;
        v.detail = None;
        match h {
            State::Blocked => {
                v.blocker = self.hook_blocker;
                v.detail = self.hook_detail.clone();
            }
            State::Error => {
                v.error_kind = self.hook_error;
                v.detail = self.hook_detail.clone();
            }
            State::Waiting => {
                v.asked = self.hook_detail.clone();
                v.detail = v.asked.as_ref().map(|q| format!("asked: {q}"));
            }
            _ => {}
        }
        v
    }
}

/// How RFC 3339 times `a` and `b` compare: an unparsable `b` is earlier than any `a`, an
/// unparsable `a` later than nothing.
fn cmp_times(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => Some(a.cmp(&b)),
        (Ok(_), Err(_)) => Some(std::cmp::Ordering::Greater),
        _ => None,
    }
}

/// `a` is at or after `b` (RFC 3339).
pub fn at_or_after(a: &str, b: &str) -> bool {
    cmp_times(a, b).is_some_and(|o| o.is_ge())
}

/// `a` is strictly after `b` (RFC 3339).
pub fn after(a: &str, b: &str) -> bool {
    cmp_times(a, b).is_some_and(|o| o.is_gt())
}

/// The part of a task's directory its agent writes (its hooks' `agent.json` and lock, the
/// requests of a sandboxed agent, a sandboxed claude's sessions): a sandbox makes this
/// directory writable, not the task's own files.
pub fn agent_dir(task_dir: &Path) -> PathBuf {
    task_dir.join("agent")
}

pub fn info_path(task_dir: &Path) -> PathBuf {
    agent_dir(task_dir).join("agent.json")
}

pub fn load(task_dir: &Path) -> AgentInfo {
    // agent.json is advisory: a missing or unreadable one is "nothing known yet" (and one
    // that is not a regular file — an agent may write this directory — too). A task from
    // before the agent directory keeps its agent.json beside task.json.
    let read = |p: &Path| {
        store::read_regular(p, 1 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    };
    read(&info_path(task_dir))
        .or_else(|| read(&task_dir.join("agent.json")))
        .unwrap_or_default()
}

pub fn save(task_dir: &Path, info: &AgentInfo) -> Result<()> {
    store::write_json_atomic(&info_path(task_dir), info)
}

/// The lock agent hooks and the monitor take to change `agent.json`.
pub fn lock(task_dir: &Path) -> Result<store::LockGuard> {
    store::LockGuard::acquire_within(
        &agent_dir(task_dir).join(".agent.lock"),
        std::time::Duration::from_secs(5),
    )
}

/// Save the monitor's observation without losing what agent hooks wrote since it read
/// `agent.json` (a pass can take seconds: a nudge pauses): the hook fields, and the
/// progress a hook reported, are taken from the file as it is now.
pub fn save_observation(task_dir: &Path, info: &AgentInfo, read: &AgentInfo) -> Result<()> {
    let _lock = lock(task_dir)?;
    let now = load(task_dir);
    let mut merged = info.clone();
    if now.hook_at != read.hook_at {
        merged.hook_state = now.hook_state;
        merged.hook_at = now.hook_at;
        merged.hook_event = now.hook_event;
        merged.hook_blocker = now.hook_blocker;
        merged.hook_error = now.hook_error;
        merged.hook_detail = now.hook_detail;
    }
    if now.progress_at != read.progress_at {
        merged.progress_at = now.progress_at;
        merged.idle_nudges = 0;
    }
    save(task_dir, &merged)
}

/// What one log line says.
#[derive(Debug, Clone, PartialEq)]
pub enum LogState {
    /// A turn in progress; `tool`: the agent called a tool (progress, not just a prompt).
    Working {
        tool: bool,
    },
    /// Its turn ended; `question`: the text it ended on asks the person something.
    Waiting {
        question: Option<String>,
    },
    Error(ErrorKind, String),
}

/// The HTTP status an error message names (`API Error: 529 …`, `status 401`), if any.
fn status_in(text: &str) -> Option<u16> {
    let m = text.to_ascii_lowercase();
    // "Request rejected (429)"
    for (i, _) in m.match_indices('(') {
        let inner: String = m[i + 1..].chars().take(4).collect();
        if inner.len() == 4
            && inner.ends_with(')')
            && inner[..3].bytes().all(|b| b.is_ascii_digit())
        {
            return inner[..3].parse().ok();
        }
    }
    for key in [
        "api error: ",
        "api error ",
        "status code ",
        "status: ",
        "status ",
    ] {
        if let Some(i) = m.find(key) {
            let digits: String = m[i + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if digits.len() == 3 {
                return digits.parse().ok();
            }
        }
    }
    None
}

/// Classify an API error by its HTTP status (when known: the transcript's
/// `apiErrorStatus`, or a status named in the text) and its message.
pub fn classify_api_error(status: Option<u16>, msg: &str) -> ErrorKind {
    let m = msg.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    // A credit problem comes with 400 or 402 and is named only in the text.
    if has(&[
        "credit balance",
        "credits",
        "quota",
        "billing",
        "insufficient_quota",
        "payment",
        "usage limit",
    ]) {
        return ErrorKind::OutOfCredits;
    }
    let network = || {
        has(&[
            "network",
            "econnrefused",
            "connection refused",
            "enotfound",
            "econnreset",
            "etimedout",
            "timed out",
            "timeout",
            "fetch failed",
            "getaddrinfo",
            "offline",
            "dns",
        ])
    };
    // The transcript's `apiErrorStatus`, then the message: Claude Code reports a refused
    // connection or a timeout with the code `server_error` and no status.
    match status {
        Some(s) => return kind_of_status(s).unwrap_or(ErrorKind::Other),
        None if network() => return ErrorKind::NoNetwork,
        None => {}
    }
    if let Some(k) = status_in(msg).and_then(kind_of_status) {
        return k;
    }
    if has(&[
        "unauthorized",
        "authentication",
        "invalid api key",
        "invalid x-api-key",
        "not logged in",
        "oauth token",
        "permission_error",
    ]) {
        ErrorKind::Unauthorized
    } else if has(&["overloaded"]) {
        ErrorKind::Overloaded
    } else if has(&["rate limit", "rate_limit", "too many requests"]) {
        ErrorKind::RateLimited
    } else if has(&[
        "internal server error",
        "api_error",
        "server_error",
        "bad gateway",
        "service unavailable",
    ]) {
        ErrorKind::Server
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

/// The kind an HTTP status means, if any.
fn kind_of_status(status: u16) -> Option<ErrorKind> {
    match status {
        401 | 403 => Some(ErrorKind::Unauthorized),
        402 => Some(ErrorKind::OutOfCredits),
        429 => Some(ErrorKind::RateLimited),
        529 => Some(ErrorKind::Overloaded),
        500..=599 => Some(ErrorKind::Server),
        _ => None,
    }
}

/// Classify an API error message alone.
pub fn classify_error(msg: &str) -> ErrorKind {
    classify_api_error(None, msg)
}

/// The question a turn ended on: its last paragraph, when that ends with `?`.
pub fn question_in(text: &str) -> Option<String> {
    let last = text
        .trim()
        .rsplit("\n\n")
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches(['*', '_', '`', ')', '"', ' ']);
    last.ends_with('?')
        .then(|| last.chars().take(300).collect::<String>())
}

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

/// Claude Code's own directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn claude_dir() -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .unwrap_or_else(|| PathBuf::from(".claude"))
}

/// What a running claude says of itself in `~/.claude/sessions/<pid>.json`: `idle`,
/// `busy` or `waiting` (Claude Code 2.1). The one source that sees a turn cut short by
/// Esc while its request waited (no hook fires, the transcript ends on the prompt).
pub fn claude_session_status(pid: u32) -> Option<String> {
    session_status_of(&claude_dir().join("sessions").join(format!("{pid}.json")))
}

/// [`claude_session_status`] of a claude in a sandbox: its pid there is not the one seen
/// here, and its `sessions/` is its task's own directory (`dir`): the newest file in it.
pub fn claude_session_status_in(dir: &Path) -> Option<String> {
    let newest = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())?;
    session_status_of(&newest.path())
}

fn session_status_of(path: &Path) -> Option<String> {
    let bytes = store::read_regular(path, 1 << 20).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("status")?.as_str().map(str::to_string)
}

/// Claude Code's log of a session: `<config>/projects/<cwd, every character but a-z A-Z
/// 0-9 as ->/<id>.jsonl` (a name longer than 200 characters is cut there and given a hash
/// of Claude Code's own: found by its first 200 characters).
pub fn claude_log_path(cwd: &Path, session_id: &str) -> PathBuf {
    claude_log_path_in(&claude_dir(), cwd, session_id)
}

/// The directory name Claude Code 2.1 gives a working directory under `projects/`: each
/// UTF-16 unit that is not an ASCII letter or digit becomes `-` (as its JavaScript does).
pub fn claude_project_dir_name(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let n = if c.is_ascii_alphanumeric() {
                0
            } else {
                c.len_utf16()
            };
            std::iter::repeat_n('-', n).chain((n == 0).then_some(c))
        })
        .collect()
}

/// Longest project directory name Claude Code keeps whole.
const CLAUDE_NAME_MAX: usize = 200;

/// [`claude_log_path`] under the Claude config directory `config`.
pub fn claude_log_path_in(config: &Path, cwd: &Path, session_id: &str) -> PathBuf {
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let name = claude_project_dir_name(&canonical);
    let projects = config.join("projects");
    let file = format!("{session_id}.jsonl");
    if name.len() > CLAUDE_NAME_MAX {
        // The name is ASCII: cutting at a byte is cutting at a character.
        let prefix = format!("{}-", &name[..CLAUDE_NAME_MAX]);
        let found = std::fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .map(|p| p.join(&file))
            .find(|p| p.exists());
        if let Some(p) = found {
            return p;
        }
    }
    projects.join(name).join(file)
}

/// Claude saved a conversation it can `--resume`: its transcript holds a message (a
/// transcript of bookkeeping lines only, what a SIGKILL can leave, is "No conversation
/// found" to claude).
pub fn claude_has_conversation(path: &Path) -> bool {
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

/// Read the tail of a (possibly large) log file: its last 64 KiB (from a line start), and
/// where that text starts in the file (bytes).
pub fn read_log_tail(path: &Path) -> Option<(String, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = store::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut start = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    if start > 0 {
        // Drop the partial first line.
        let cut = buf
            .iter()
            .position(|b| *b == b'\n')
            .map_or(buf.len(), |i| i + 1);
        buf.drain(..cut);
        start += cut as u64;
    }
    // A line being written (no newline yet) is not read: it would be read again, whole, later.
    let whole = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    buf.truncate(whole);
    Some((String::from_utf8_lossy(&buf).into_owned(), start))
}

/// What a Claude Code hook event says about the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSays {
    pub state: State,
    pub blocker: Option<Blocker>,
    pub error: Option<ErrorKind>,
    pub detail: Option<String>,
    /// The agent did work (a tool call): resets the count of nudges without progress.
    pub progress: bool,
}

impl HookSays {
    fn state(state: State) -> HookSays {
        HookSays {
            state,
            blocker: None,
            error: None,
            detail: None,
            progress: false,
        }
    }
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
        // Claude Code 2.1's transcript: `"error":"server_error"` for both, the status decides.
        assert_eq!(
            classify_api_error(Some(529), "API Error: 529 Overloaded server_error"),
            ErrorKind::Overloaded
        );
        assert_eq!(
            classify_api_error(None, "API Error: 529 {\"type\":\"overloaded_error\"}"),
            ErrorKind::Overloaded
        );
        assert_eq!(
            classify_api_error(Some(500), "API Error: 500 Internal server error"),
            ErrorKind::Server
        );
        assert_eq!(
            classify_api_error(Some(400), "Your credit balance is too low"),
            ErrorKind::OutOfCredits
        );
        assert_eq!(classify_error("read 5000 tokens"), ErrorKind::Other);
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
    fn a_turn_that_ends_on_a_question_is_a_question() {
        assert_eq!(
            question_in("I looked at it.\n\nShould I also update the tests?").as_deref(),
            Some("Should I also update the tests?")
        );
        assert_eq!(question_in("Is it? Yes. Done."), None);
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

    #[test]
    fn claude_project_names_are_what_claude_2_1_makes() {
        // Seen with the real CLI: `/tmp/nm/a_b c.d+e` → `-tmp-nm-a-b-c-d-e`.
        assert_eq!(
            claude_project_dir_name(Path::new("/tmp/nm/a_b c.d+e")),
            "-tmp-nm-a-b-c-d-e"
        );
        assert_eq!(claude_project_dir_name(Path::new("/h/é😀")), "-h----");
        // Longer than 200: cut, with a hash of Claude Code's; found by the prefix.
        let d = tempfile::tempdir().unwrap();
        let long = d.path().join("x".repeat(230));
        std::fs::create_dir_all(&long).unwrap();
        let name = claude_project_dir_name(&long.canonicalize().unwrap());
        let dir = d
            .path()
            .join("projects")
            .join(format!("{}-4gjse8", &name[..200]));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("c.jsonl"), "").unwrap();
        assert_eq!(
            claude_log_path_in(d.path(), &long, "c"),
            dir.join("c.jsonl")
        );
    }
}
