//! The tmux side of the fixtures: a private tmux server with the hostile user config, a
//! `tmux` that logs each call before it runs the real one, and an option's text without
//! its styles.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{user_home, XDG_HOMES};

/// The hostile user config every tmux test server starts with.
pub const HOSTILE_TMUX_CONF: &str = "set -g base-index 1\nsetw -g pane-base-index 1\nset -g status-right '#[fg=red]%H:%M #{session_name} custom'\nset -g default-shell /bin/sh\nset -g history-limit 5000\n";

/// What every test server's config says, so that no monitor starts by itself (a command
/// that starts an agent starts one on a server none watches, unless this is off).
pub const MONITOR_OFF: &str = "@orange-monitor off";

/// A private tmux server (`tmux -L <unique>`) with the hostile config and a private
/// `HOME` (`<dir>/user-home`, see [`user_home`]), killed on drop.
pub struct TmuxServer {
    pub socket: String,
    pub conf: PathBuf,
    pub socket_path: String,
    /// The `HOME` of the server and of every tmux command run through it.
    pub home: PathBuf,
    killed: bool,
}

impl TmuxServer {
    /// Start a server with a keep-alive session; `env` becomes its global environment
    /// (a `HOME` there replaces the private one).
    pub fn start(dir: &Path, env: &[(&str, &str)]) -> TmuxServer {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "orange-t{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let conf = dir.join(format!("{socket}.conf"));
        // A test asks for a monitor when it wants one (`monitor --once`, or turning this
        // on): none starts by itself beside its own passes.
        std::fs::write(&conf, format!("{HOSTILE_TMUX_CONF}set -g {MONITOR_OFF}\n")).unwrap();
        let home = env
            .iter()
            .find(|(k, _)| *k == "HOME")
            .map_or_else(|| user_home(dir), |(_, v)| PathBuf::from(v));
        let mut server = TmuxServer {
            socket,
            conf,
            socket_path: String::new(),
            home,
            killed: false,
        };
        let mut c = Command::new("tmux");
        c.args([
            "-L",
            &server.socket,
            "-f",
            server.conf.to_str().unwrap(),
            "new-session",
            "-d",
            "-s",
            "keepalive",
            "-x",
            "200",
            "-y",
            "50",
        ]);
        c.env_remove("TMUX").env("HOME", &server.home);
        for v in XDG_HOMES {
            c.env_remove(v);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "tmux server did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.socket_path = server.ok(&["display", "-p", "#{socket_path}"]);
        server
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .env_remove("TMUX")
            .env("HOME", &self.home)
            .output()
            .unwrap()
    }

    /// Run tmux and return trimmed stdout (panics on failure).
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// A detached session `name` of `width` × `height`; `rest`: what follows the size
    /// (`-e` settings, the command; none: the default shell).
    pub fn sized_session(&self, name: &str, (width, height): (u16, u16), rest: &[&str]) {
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["new-session", "-d", "-s", name, "-x", &w, "-y", &h];
        args.extend(rest);
        self.ok(&args);
    }

    pub fn has_session(&self, name: &str) -> bool {
        self.tmux(&["has-session", "-t", &format!("={name}")])
            .status
            .success()
    }

    pub fn sessions(&self) -> Vec<String> {
        self.ok(&["list-sessions", "-F", "#{session_name}"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Kill the server (once) and remove its files.
    pub fn kill(&mut self) {
        if std::mem::replace(&mut self.killed, true) {
            return;
        }
        let _ = self.tmux(&["kill-server"]);
        let _ = std::fs::remove_file(&self.conf);
        // tmux 3.3a leaves its socket file behind after kill-server.
        if !self.socket_path.is_empty() {
            let _ = std::fs::remove_file(&self.socket_path);
        }
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `tmux` that logs each call (its arguments, one line) and runs the real one.
pub fn counting_tmux(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("counting-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("tmux-calls.log");
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v tmux"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        real.trim()
    );
    let path = bin.join("tmux");
    super::write_script(&path, script);
    (bin, log)
}

pub fn calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The calls of [`counting_tmux`]'s log, each whole: a call is logged on one line, but an
/// argument holding newlines (a prompt) goes on over the next lines, which (unlike a call,
/// whose first argument is a flag) do not start with `-`.
pub fn whole_calls(log: &Path) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for line in calls(log) {
        match out.last_mut() {
            Some(call) if !line.starts_with('-') => {
                call.push('\n');
                call.push_str(&line);
            }
            _ => out.push(line),
        }
    }
    out
}

/// A tmux option's text without its `#[…]` styles.
pub fn strip_styles(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && chars.peek() == Some(&'[') {
            depth += 1;
            chars.next();
            continue;
        }
        if depth > 0 {
            if c == ']' {
                depth -= 1;
            }
            continue;
        }
        out.push(c);
    }
    out.trim().to_string()
}
