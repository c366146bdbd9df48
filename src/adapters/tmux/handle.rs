//! A handle on one tmux server ([`Tmux`]): which server it talks to (`-L`, `-S`, the
//! environment's), whether tmux is installed, and attaching a person's terminal to a session
//! (the one tmux process not run by exec.rs: it replaces orange).

use std::path::PathBuf;

use super::target::session_target;
use crate::error::{OrangeError, Result};

/// The tmux executable, looked up on `PATH`.
pub(super) const TMUX: &str = "tmux";

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
    pub(super) server: Server,
    /// Passed as `-f` so a server this handle starts reads this config file.
    pub(super) config: Option<PathBuf>,
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

    pub(super) fn not_found(&self) -> OrangeError {
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
