//! The tmux plugin against real tmux: `orange.tmux` loaded into a private server with a
//! hostile user config, then its keys pressed through a real client (a client of the test
//! server running in a pane of a second, outer server: `send-keys` to the outer pane is
//! typing on the inner client's terminal, so the keys go through the inner key tables).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{bin, id, poll, wait_for, TaskEnv, TmuxServer};
use serde_json::Value;

mod demo;
mod install;
mod keys;
mod menus;

fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

const EVENTS: [&str; 4] = [
    "pane-died",
    "pane-exited",
    "session-closed",
    "client-session-changed",
];

/// The plugin loaded on a test server. Dropped (before the server), it removes the hooks:
/// killing the server fires them, and an `orange hook` started then would write into the
/// test's state after its temp dir is gone.
#[must_use]
pub(crate) struct Loaded<'a> {
    server: &'a TmuxServer,
    took: Duration,
}

impl Drop for Loaded<'_> {
    fn drop(&mut self) {
        for e in EVENTS {
            let _ = self.server.tmux(&["set-hook", "-gu", e]);
        }
    }
}

/// `run-shell orange.tmux` with `@orange-bin` set to `orange_bin` (how a user loads it
/// without TPM).
fn load_plugin_with<'a>(server: &'a TmuxServer, orange_bin: &Path) -> Loaded<'a> {
    server.ok(&["set", "-g", "@orange-bin", orange_bin.to_str().unwrap()]);
    // No background monitor unless a test asks for one (it would outlive the test's
    // temp dir by a few seconds): `monitor_starts_once_per_server` does.
    if server
        .tmux(&["show", "-gv", "@orange-monitor"])
        .stdout
        .is_empty()
    {
        server.ok(&["set", "-g", "@orange-monitor", "off"]);
    }
    let script = plugin_dir().join("orange.tmux");
    let start = Instant::now();
    server.ok(&["run-shell", &sh_quote(script.to_str().unwrap())]);
    Loaded {
        server,
        took: start.elapsed(),
    }
}

pub(crate) fn load_plugin(server: &TmuxServer) -> Loaded<'_> {
    load_plugin_with(server, &bin())
}

/// The server's global environment gets the test's ORANGE_HOME, as a user's tmux has it
/// from the shell that started it: the keys' `orange` must see the same state.
pub(crate) fn tell_server_home(env: &TaskEnv) {
    env.tmux.ok(&[
        "set-environment",
        "-g",
        "ORANGE_HOME",
        env.home.to_str().unwrap(),
    ]);
}

/// The task's session id; lifecycle marks the session with `@orange_task` = the task id,
/// which the plugin's session-scoped keys rely on.
fn task_session(env: &TaskEnv, task: &Value) -> String {
    let sid = task["tmux_session_id"].as_str().unwrap().to_string();
    let marked = env.tmux.ok(&[
        "show-options",
        "-t",
        &format!("{sid}:"),
        "-qv",
        "@orange_task",
    ]);
    assert_eq!(
        marked,
        id(task),
        "session {sid} is not marked with its task"
    );
    sid
}

/// A real client on `inner`, running in a pane of a second (outer) server.
struct Client {
    outer: TmuxServer,
    name: String,
}

impl Client {
    /// Attach to `target` (`=name` or a session id).
    fn attach(root: &Path, inner: &TmuxServer, target: &str) -> Client {
        let outer = TmuxServer::start(root, &[]);
        let cmd = format!(
            "unset TMUX; exec tmux -L {} attach-session -t {}",
            inner.socket,
            sh_quote(target)
        );
        outer.sized_session("term", (160, 45), &["sh", "-c", &cmd]);
        let mut name = String::new();
        wait_for("a client on the test server", 10, || {
            name = inner.ok(&["list-clients", "-F", "#{client_name}"]);
            !name.is_empty()
        });
        // Attached and drawn (its status line at least): keys typed now reach it.
        wait_for("the client to draw", 10, || {
            !outer
                .ok(&["capture-pane", "-p", "-t", "=term:"])
                .trim()
                .is_empty()
        });
        Client { outer, name }
    }

    /// Press keys one by one, as a person does (a key-table switch takes effect only after
    /// the key that asked for it has been handled).
    fn press(&self, keys: &[&str]) {
        for k in keys {
            self.outer.ok(&["send-keys", "-t", "=term:", k]);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn type_text(&self, text: &str) {
        // An argument ending in `;` would end the command: tmux reads `\;` as `;`.
        let text = match text.strip_suffix(';') {
            Some(t) => format!("{t}\\;"),
            None => text.to_string(),
        };
        self.outer
            .ok(&["send-keys", "-t", "=term:", "-l", "--", &text]);
        std::thread::sleep(Duration::from_millis(200));
    }

    /// What the client's terminal shows.
    fn screen(&self) -> String {
        self.outer.ok(&["capture-pane", "-p", "-t", "=term:"])
    }

    fn wait_screen(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        poll(Duration::from_secs(10), || {
            last = self.screen();
            f(&last).then(|| last.clone())
        })
        .unwrap_or_else(|| panic!("timed out waiting for {what}; the client shows:\n{last}"))
    }

    fn session(&self, inner: &TmuxServer) -> String {
        inner.ok(&["display", "-p", "-c", &self.name, "#{session_name}"])
    }

    fn switch_to(&self, inner: &TmuxServer, target: &str) {
        inner.ok(&["switch-client", "-c", &self.name, "-t", target]);
        std::thread::sleep(Duration::from_millis(200));
    }

    /// The client's message log (what display-message showed it).
    fn messages(&self, inner: &TmuxServer) -> String {
        inner.ok(&["show-messages", "-t", &self.name])
    }
}

/// `(pane_id, active, @orange_sidebar, pane_left, pane_width)` of the window's panes.
pub(crate) fn window_panes(
    server: &TmuxServer,
    target: &str,
) -> Vec<(String, bool, bool, u32, u32)> {
    server
        .ok(&[
            "list-panes",
            "-t",
            target,
            "-F",
            "#{pane_id} #{pane_active} #{?@orange_sidebar,1,0} #{pane_left} #{pane_width}",
        ])
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].to_string(),
                f[1] == "1",
                f[2] == "1",
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}
