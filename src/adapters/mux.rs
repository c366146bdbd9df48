//! What the multiplexer adapters (tmux, zellij) share, so that neither is built on the
//! other: the session to start, and the pace of typed input.

use std::path::PathBuf;
use std::time::Duration;

/// The session to start (`Tmux::new_session`, `Zellij::create`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSession {
    /// Exact session name; see `tmux::session_name`. Only `[A-Za-z0-9_/-]`, so tmux never rewrites it.
    pub name: String,
    /// Start directory of the session's first pane.
    pub cwd: PathBuf,
    /// Environment of the session (`new-session -e`), visible to the command.
    pub env: Vec<(String, String)>,
    /// The program and its arguments, passed unchanged (no shell parsing). Empty: the user's
    /// default shell.
    pub command: Vec<String>,
    pub width: Option<u16>,
    pub height: Option<u16>,
    /// Session user options (`@name`, value) set in the same tmux command as the session:
    /// a session is never seen without them, even by a command killed half-way.
    pub marks: Vec<(String, String)>,
}

/// How long `send_text` waits between the text and `Enter`: programs that read a burst of
/// input as a paste swallow an `Enter` arriving inside it.
pub fn submit_pause(text_len: usize) -> Duration {
    Duration::from_millis((60 + text_len as u64 / 4).min(2000))
}
