//! The tmux adapter: every tmux process orange starts is started by `Tmux::exec` in
//! exec.rs (the only other is [`Tmux::attach`], which replaces orange with
//! `tmux attach-session`). Commands are built with `tmux_interface` builders where they fit;
//! where a builder cannot express what we need (`--` before a literal argument, several
//! shell-command arguments) we push the extra argv elements onto the built command, and it
//! still runs through `exec`. Every exit status is checked: `tmux_interface`'s own `output()`
//! reports success even when tmux failed, so it is not used.
//!
//! Targets. Every method taking a `target` accepts:
//! - a session id (`$3`), a window id (`@4`) or a pane id (`%5`): exact by construction;
//! - anything else is an exact session name, sent as `=name` (session commands) or `=name:`
//!   (window and pane commands: the session's current window and its active pane, whatever
//!   `base-index`/`pane-base-index` say). tmux never prefix-matches such a target, so
//!   `p/feat` can never hit `p/feature-x`.
//!
//! tmux 3.3a facts this module designs around:
//! - an argv element ending in `;` ends a command; `exec` escapes it (`x;` → `x\;`, which
//!   tmux turns back into `x;`), so text, option values and commands may end in `;`;
//! - a session's command given as several argv elements is `execvp`ed by tmux, one element
//!   goes through the user's `default-shell -c` (fish, zsh…). Agent commands are run as
//!   `/bin/sh -c 'exec <argv quoted for sh>'`: never the user's shell, argv arrives intact,
//!   and a missing program is a visible `exit 127`;
//! - `set-option -t`/`show-options -t` take a *pane* target: `=name` alone is refused there,
//!   `=name:` works; `show-options -q` also hides a missing target;
//! - `display-message -p -t <missing>` succeeds with empty fields, so it is never used to
//!   resolve a target (a send to the empty pane id would go to whatever pane tmux picks):
//!   `list-panes -t` is, as it fails on a missing target;
//! - Debian's tmux (built with libutempter) sometimes never collects the exit status of a
//!   program that exits at once: see `Tmux::nudge_reaper`.
//!
//! The files, one `impl Tmux` block each: this one (which server, attaching), exec.rs
//! (running tmux, targets), parse.rs (the formats and the ONE list of pane fields),
//! observe.rs (the whole server in one call), sessions.rs, panes.rs (capture, typing),
//! options.rs, clients.rs, layout.rs (the plugin's panes and windows).

mod clients;
mod exec;
mod layout;
mod observe;
mod options;
mod panes;
mod parse;
mod sessions;

use std::path::PathBuf;

use crate::error::{OrangeError, Result};

pub use self::clients::ClientInfo;
pub use self::observe::{Marked, MarkedSession, Observed};
pub use self::options::OptionScope;
pub use self::parse::{PaneExit, PaneInfo, ServerId, SessionInfo};
pub use self::sessions::SessionRow;
pub use crate::adapters::mux::{submit_pause, NewSession};
pub use crate::adapters::shell::join as shell_join;
pub use crate::adapters::shell::quote as shell_quote;

use self::exec::session_target;
use self::parse::{Format, SERVER};

/// The tmux executable, looked up on `PATH`.
const TMUX: &str = "tmux";

/// Which tmux server orange talks to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Server {
    /// tmux's default server (no `-L`/`-S`).
    Default,
    /// `-L name`: a socket named `name` in tmux's socket directory.
    Name(String),
    /// `-S path`: a socket at an explicit path.
    Path(PathBuf),
}

/// A handle on one tmux server. Cheap to clone; holds no connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tmux {
    server: Server,
    /// Passed as `-f` so a server this handle starts reads this config file.
    config: Option<PathBuf>,
}

/// The session name for a task or lane: `<project>/<branch>`, every character outside
/// `[A-Za-z0-9_/-]` replaced by `_` (tmux itself would rewrite `.` and `:`).
pub fn session_name(project: &str, branch: &str) -> String {
    format!("{project}/{branch}")
        .chars()
        .map(|c| if session_char_ok(c) { c } else { '_' })
        .collect()
}

fn session_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-')
}

impl Default for Tmux {
    fn default() -> Self {
        Tmux::new(Server::Default)
    }
}

// Which server, and attaching to it.
impl Tmux {
    pub fn new(server: Server) -> Self {
        Tmux {
            server,
            config: None,
        }
    }

    /// The server named by the environment: `ORANGE_TMUX_SOCKET` (a name → `-L`, an absolute
    /// path → `-S`); unset or empty, the server of `$TMUX`; else tmux's default server.
    pub fn from_env() -> Self {
        let orange = std::env::var("ORANGE_TMUX_SOCKET").ok();
        let tmux = std::env::var("TMUX").ok();
        Tmux::new(Self::server_from(orange.as_deref(), tmux.as_deref()))
    }

    /// [`Tmux::from_env`]'s rule, given the two variables' values.
    pub fn server_from(orange_tmux_socket: Option<&str>, tmux: Option<&str>) -> Server {
        match orange_tmux_socket.map(str::trim) {
            Some(s) if s.starts_with('/') => return Server::Path(PathBuf::from(s)),
            Some(s) if !s.is_empty() => return Server::Name(s.to_string()),
            _ => {}
        }
        match tmux.and_then(|t| t.split(',').next()) {
            Some(path) if !path.is_empty() => Server::Path(PathBuf::from(path)),
            _ => Server::Default,
        }
    }

    /// A server this handle starts reads `path` (`-f`) instead of the user's config.
    pub fn with_config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = Some(path.into());
        self
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The server flags of a tmux command line (`-L name`, `-S path` or nothing).
    pub fn server_args(&self) -> Vec<String> {
        match &self.server {
            Server::Default => vec![],
            Server::Name(n) => vec!["-L".into(), n.clone()],
            Server::Path(p) => vec!["-S".into(), p.to_string_lossy().into_owned()],
        }
    }

    /// Is the tmux executable on `PATH`?
    pub fn is_available(&self) -> bool {
        crate::adapters::shell::on_path(TMUX)
    }

    /// `backend_not_found` unless tmux is installed: call before any mutation.
    pub fn preflight(&self) -> Result<()> {
        if self.is_available() {
            Ok(())
        } else {
            Err(self.not_found())
        }
    }

    fn not_found(&self) -> OrangeError {
        OrangeError::BackendNotFound(format!("tmux ({TMUX}) is not installed or not on PATH"))
    }

    /// The socket this handle talks to, as tmux would resolve it: the `-S` path, or
    /// `realpath($TMUX_TMPDIR or /tmp)/tmux-<uid>/<name or default>`. `None` when it cannot
    /// be told without asking tmux (no `/proc` to read our uid from). The file may be stale:
    /// tmux 3.3a leaves it behind after `kill-server`.
    pub fn socket_path(&self) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let name = match &self.server {
            Server::Path(p) => return Some(p.clone()),
            Server::Name(n) => n.as_str(),
            Server::Default => "default",
        };
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let dir = std::env::var_os("TMUX_TMPDIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let dir = dir.canonicalize().unwrap_or(dir);
        Some(dir.join(format!("tmux-{uid}")).join(name))
    }

    /// The argv to exec outside tmux to attach to the session.
    pub fn attach_command(&self, target: &str) -> Vec<String> {
        let mut argv = vec![TMUX.to_string()];
        argv.extend(self.server_args());
        argv.extend([
            "attach-session".to_string(),
            "-t".to_string(),
            session_target(target),
        ]);
        argv
    }

    /// Replace this process with `tmux attach-session` (outside tmux). Returns only when the
    /// exec failed, with the reason.
    pub fn attach(&self, target: &str) -> OrangeError {
        use std::os::unix::process::CommandExt;
        let argv = self.attach_command(target);
        let err = std::process::Command::new(TMUX).args(&argv[1..]).exec();
        if err.kind() == std::io::ErrorKind::NotFound {
            self.not_found()
        } else {
            OrangeError::io(format!("running {}", argv.join(" ")), err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_sanitized() {
        assert_eq!(session_name("my.app", "fix:1"), "my_app/fix_1");
        assert_eq!(session_name("p", "feat/x-1_2"), "p/feat/x-1_2");
        assert_eq!(session_name("p", "a b;c$é"), "p/a_b_c__");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("plain-word_1.txt"), "plain-word_1.txt");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a;"), "'a;'");
        assert_eq!(shell_join(&["a b", "c"]), "'a b' c");
    }

    #[test]
    fn server_from_env_values() {
        assert_eq!(
            Tmux::server_from(Some("orange"), Some("/tmp/x,1,0")),
            Server::Name("orange".into())
        );
        assert_eq!(
            Tmux::server_from(Some("/run/orange.sock"), None),
            Server::Path("/run/orange.sock".into())
        );
        assert_eq!(
            Tmux::server_from(None, Some("/tmp/tmux-0/default,123,0")),
            Server::Path("/tmp/tmux-0/default".into())
        );
        assert_eq!(
            Tmux::server_from(Some(""), Some("/tmp/tmux-0/default,123,0")),
            Server::Path("/tmp/tmux-0/default".into())
        );
        assert_eq!(Tmux::server_from(None, None), Server::Default);
        assert_eq!(Tmux::server_from(None, Some("")), Server::Default);
    }
}
