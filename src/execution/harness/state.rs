//! What orange can say about an agent, whatever its program: its state, the kind of an
//! API error, what holds a blocked agent (and what the person must do), which signal
//! decided, what one log line or one hook event says. Every harness speaks this
//! vocabulary; `orchestration::agent` keeps it in `agent.json`.

use serde::{Deserialize, Serialize};

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
    /// It stopped on the account's usage limit (the agent record keeps the reset time):
    /// no new agent of its harness starts, and the monitor resumes it at the reset.
    Limited,
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
            State::Limited => "limited",
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
    /// The agent's own status report (OSC 7501), kept by orange's pty layer.
    Osc,
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
    /// Claude Code resumed a long, old conversation and asks how: "Resume from summary /
    /// Resume full session as-is / Don't ask again".
    ResumeChoice,
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
            Blocker::ResumeChoice => "resume_choice",
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
            Blocker::ResumeChoice => "resume choice",
        }
    }

    /// Exactly what the person must do (shown by `task explain`, the sidebar, the detail).
    pub fn advice(self, task: &str) -> String {
        match self {
            Blocker::Onboarding => format!(
                "Claude Code's first-run setup is on screen, or it could not reach Anthropic's service during it: attach (`orange task attach {task}`) and finish it once, or run `claude` once in a terminal (with ANTHROPIC_API_KEY, approving the key there skips the connectivity check); `orange doctor` tells when it is done"
            ),
            Blocker::Login => format!(
                "the agent asks you to log in: attach (`orange task attach {task}`) and log in (pi: /login; opencode: `/connect`, or `opencode auth login` in a terminal), or give it its key (claude: ANTHROPIC_API_KEY; codex: `codex login`, or a [model_providers] entry in its config.toml; pi: a provider's key or ~/.pi/agent/models.json), then `orange task respawn {task}` if it exited"
            ),
            Blocker::FolderTrust => format!(
                "the agent asks whether to trust this folder: run `orange doctor --trust --harness <claude|codex>` in the repository (records the trust of every worktree in the program's own config), or attach (`orange task attach {task}`) and answer"
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
            Blocker::ResumeChoice => format!(
                "Claude Code asks how to resume this long conversation (from a summary, or in full): attach (`orange task attach {task}`) and choose, or set `resume = \"summary\"` or `\"full\"` under [harness.claude] in config.toml and orange answers it"
            ),
            Blocker::RootRefusal => format!(
                "claude refuses --dangerously-skip-permissions when run as root: run orange as a normal user, or, inside a sandbox, set IS_SANDBOX=1 in the tmux environment (`tmux set-environment -g IS_SANDBOX 1`), then `orange task respawn {task}`"
            ),
        }
    }
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
    /// Only a state: no blocker, no error, no detail, no progress.
    pub fn state(state: State) -> HookSays {
        HookSays {
            state,
            blocker: None,
            error: None,
            detail: None,
            progress: false,
        }
    }
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
    } else if has(&["overloaded", "high demand"]) {
        // codex 0.169 words a 5xx it gave up on "We're currently experiencing high demand".
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
    fn a_turn_that_ends_on_a_question_is_a_question() {
        assert_eq!(
            question_in("I looked at it.\n\nShould I also update the tests?").as_deref(),
            Some("Should I also update the tests?")
        );
        assert_eq!(question_in("Is it? Yes. Done."), None);
    }
}
