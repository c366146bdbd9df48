//! A second agent beside a task's own, in a window of the task's session (a reviewer):
//! started detached, so the person's focus stays where it is, with `remain-on-exit on` so
//! its exit status stays observable, and renamed as its state changes (the picker shows a
//! session's windows as its child rows).

use super::exec::raw;
use super::handle::Tmux;
use super::target::{pane_target, session_target, validate_program, validate_word};
use crate::error::{OrangeError, Result};

/// The window a second agent was started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentWindow {
    pub window_id: String,
    pub pane_id: String,
}

// Windows of agents beside a task's own.
impl Tmux {
    /// A new window named `name` at the end of `session` (an id or exact name), not made
    /// current (`-d`), running `command` (argv, through `/bin/sh -c 'exec …'` like
    /// [`Tmux::new_session`]) in `cwd` with `env` set for it; `remain-on-exit on` for
    /// that window in the same command sequence.
    pub fn new_agent_window(
        &self,
        session: &str,
        name: &str,
        cwd: &std::path::Path,
        env: &[(String, String)],
        command: &[String],
    ) -> Result<AgentWindow> {
        for (k, _) in env {
            validate_word("environment variable name", k)?;
        }
        validate_program(command)?;
        // Made under a name no other window has, so the same command sequence can keep its
        // pane (`remain-on-exit`) and then name it: applied before the server can notice
        // the program's exit (set by a later call, a program that ends at once took its
        // window with it: "no such window").
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let temp = format!("orange-new-{}-{nanos}", std::process::id());
        let made = format!("{}:={temp}", session_target(session));
        let mut w = raw("new-window");
        w.push_flag("-d")
            .push_flag("-P")
            .push_option("-F", "#{window_id} #{pane_id}")
            .push_option("-t", format!("{}:", session_target(session)))
            .push_option("-n", temp);
        if let Some(dir) = cwd.to_str().filter(|d| !d.is_empty()) {
            w.push_option("-c", dir.to_string());
        }
        for (k, v) in env {
            w.push_option("-e", format!("{k}={v}"));
        }
        for arg in super::pane_argv(command) {
            w.push_param(arg);
        }
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let mut keep = raw("set-option");
        keep.push_flag("-w")
            .push_option("-t", made.clone())
            .push_param("remain-on-exit")
            .push_param("on");
        let mut named = raw("rename-window");
        named.push_option("-t", made).push_param(name.to_string());
        let out = self.exec_with_path(vec![w, keep, named], path)?.ok()?;
        let mut words = out.split_whitespace();
        let (Some(window_id), Some(pane_id)) = (words.next(), words.next()) else {
            return Err(OrangeError::BackendCommandFailed(format!(
                "unexpected tmux output from new-window: {out:?}"
            )));
        };
        Ok(AgentWindow {
            window_id: window_id.to_string(),
            pane_id: pane_id.to_string(),
        })
    }

    /// Rename a window (its id); `Ok(false)` when it is gone. The name is shown by the
    /// picker: the caller makes it safe.
    pub fn rename_window(&self, window_id: &str, name: &str) -> Result<bool> {
        let mut cmd = raw("rename-window");
        cmd.push_option("-t", pane_target(window_id))
            .push_param(name.to_string());
        self.exec_found(vec![cmd])
    }

    /// The windows of `session` named exactly `name` (a window a command made before it
    /// was killed, found again), each with its first pane. Empty when none, or no session.
    pub fn windows_named(&self, session: &str, name: &str) -> Result<Vec<AgentWindow>> {
        let mut cmd = raw("list-panes");
        cmd.push_flag("-s")
            .push_option("-t", session_target(session))
            .push_option("-F", "#{window_id} #{pane_id} #{window_name}");
        let ran = self.exec(vec![cmd])?;
        if ran.missing() {
            return Ok(vec![]);
        }
        let out = ran.ok()?;
        let mut found: Vec<AgentWindow> = vec![];
        for l in out.lines() {
            let mut parts = l.splitn(3, ' ');
            let (Some(w), Some(p), Some(n)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if n == name && !found.iter().any(|f| f.window_id == w) {
                found.push(AgentWindow {
                    window_id: w.to_string(),
                    pane_id: p.to_string(),
                });
            }
        }
        Ok(found)
    }

    /// Kill a window (its id); `Ok(false)` when it was gone.
    pub fn kill_window(&self, window_id: &str) -> Result<bool> {
        let mut cmd = raw("kill-window");
        cmd.push_option("-t", pane_target(window_id));
        self.exec_found(vec![cmd])
    }
}
