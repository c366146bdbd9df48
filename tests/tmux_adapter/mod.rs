//! The tmux adapter against a REAL tmux server: each test runs its own server on a private
//! socket with a hostile user config, and kills it when done, even on panic.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common;
use orange::adapters::tmux::{NewSession, Server, Tmux};
use tempfile::TempDir;

mod batch;
mod options;
mod screens;
mod sessions;

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// What a user might have in ~/.tmux.conf, all of it hostile to naive adapters.
const HOSTILE_CONF: &str = r##"
set -g base-index 1
setw -g pane-base-index 1
set -g renumber-windows on
set -g status-right '#[fg=red]#{session_name} %H:%M ;'
set -g history-limit 5000
setw -g remain-on-exit off
set -g default-shell "@SHELL@"
"##;

/// A default shell that mangles whatever it is asked to run: a command that went through
/// the user's shell instead of reaching its program directly fails loudly.
const HOSTILE_SHELL: &str = "#!/bin/sh\necho \"hostile shell ran: $*\"\nexit 99\n";

/// A private tmux server, killed on drop (and its socket file removed).
struct TestServer {
    socket: String,
    socket_path: Option<PathBuf>,
    dir: TempDir,
    conf: PathBuf,
}

impl TestServer {
    fn start() -> TestServer {
        let socket = format!(
            "orange-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("hostile-shell");
        common::write_script(&shell, HOSTILE_SHELL);
        let conf = dir.path().join("tmux.conf");
        std::fs::write(
            &conf,
            HOSTILE_CONF.replace("@SHELL@", shell.to_str().unwrap()),
        )
        .unwrap();
        let mut server = TestServer {
            socket,
            socket_path: None,
            dir,
            conf,
        };
        // A session of our own keeps the server (and its config) up for the whole test.
        server.raw(&["new-session", "-d", "-s", "keepalive", "sleep", "3600"]);
        let path = server.raw(&["display-message", "-p", "#{socket_path}"]);
        server.socket_path = Some(PathBuf::from(path.trim_end()));
        server
    }

    fn tmux(&self) -> Tmux {
        Tmux::new(Server::Name(self.socket.clone())).with_config(&self.conf)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// tmux called directly (not through the adapter), for setup and cross-checks.
    fn raw(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg(&self.conf)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A session running `command` in the test dir.
    fn session(&self, name: &str, command: &[&str]) -> orange::adapters::tmux::SessionInfo {
        self.tmux()
            .new_session(&NewSession {
                name: name.to_string(),
                cwd: self.dir.path().to_path_buf(),
                command: command.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            })
            .unwrap()
    }

    /// A session whose program appends every line it reads to `file`.
    fn cat_session(&self, name: &str, file: &Path) -> orange::adapters::tmux::SessionInfo {
        self.session(
            name,
            &["sh", "-c", "exec cat > \"$0\"", file.to_str().unwrap()],
        )
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
        // tmux 3.3a leaves the socket file behind.
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

const WAIT: Duration = Duration::from_secs(5);

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}
