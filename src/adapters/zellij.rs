//! The zellij adapter (lanes may run in zellij instead of tmux): create, kill, exists,
//! send text. Every zellij call goes through `Zellij::run`. zellij reports no exit status
//! for a pane's program, so `create` wraps the command to write it to a file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::adapters::mux::{submit_pause, NewSession};
use crate::adapters::shell;
use crate::adapters::shell::join as shell_join;
use crate::error::{OrangeError, Result};

#[derive(Debug, Clone)]
pub struct Zellij {
    binary: OsString,
}

impl Default for Zellij {
    fn default() -> Self {
        Zellij {
            binary: "zellij".into(),
        }
    }
}

impl Zellij {
    pub fn with_binary(binary: impl Into<OsString>) -> Zellij {
        Zellij {
            binary: binary.into(),
        }
    }

    pub fn is_available(&self) -> bool {
        shell::on_path(&self.binary.to_string_lossy())
    }

    /// `backend_not_found` when zellij is not installed: checked before any mutation.
    pub fn preflight(&self) -> Result<()> {
        if self.is_available() {
            Ok(())
        } else {
            Err(OrangeError::BackendNotFound(
                "zellij is not installed (not on PATH); install it (e.g. `cargo install --locked zellij`) or use --mux tmux"
                    .to_string(),
            ))
        }
    }

    fn run(&self, args: &[&str], env: &[(String, String)], cwd: Option<&Path>) -> Result<String> {
        let mut c = Command::new(&self.binary);
        c.args(args).stdin(Stdio::null());
        // Outside any zellij session, whatever the caller runs in.
        c.env_remove("ZELLIJ")
            .env_remove("ZELLIJ_SESSION_NAME")
            .env_remove("ZELLIJ_PANE_ID");
        for (k, v) in env {
            c.env(k, v);
        }
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        let out = c.output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                OrangeError::BackendNotFound("zellij is not on PATH".into())
            } else {
                OrangeError::io("running zellij", e)
            }
        })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(OrangeError::BackendCommandFailed(format!(
                "zellij {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// Live (not exited) sessions, by exact name.
    pub fn sessions(&self) -> Result<Vec<String>> {
        let out = match self.run(&["list-sessions", "--no-formatting"], &[], None) {
            Ok(o) => o,
            // "No active zellij sessions found." is an error exit.
            Err(OrangeError::BackendCommandFailed(m))
                if m.contains("No active") || m.contains("No sessions") =>
            {
                return Ok(vec![])
            }
            Err(e) => return Err(e),
        };
        Ok(out
            .lines()
            .filter(|l| !l.contains("EXITED"))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect())
    }

    /// Is a session of that name running? `list-sessions` probes each session's socket
    /// (zellij's `assert_socket`: a `ConnStatus` that must be answered `Connected`) and
    /// leaves out, or shows as EXITED, a live session whose probe got another answer:
    /// seen once in a soak on a loaded machine, for a session listed a moment before. One
    /// not listed is asked directly: an action on a session succeeds only when its server
    /// runs ("There is no active session!" otherwise).
    pub fn exists(&self, name: &str) -> Result<bool> {
        if self.sessions()?.iter().any(|s| s == name) {
            return Ok(true);
        }
        Ok(self
            .run(&["--session", name, "action", "query-tab-names"], &[], None)
            .is_ok())
    }

    /// Create a background session whose one pane runs `spec.command` in `spec.cwd`.
    /// The program's exit status is written to `exit_file` when it ends.
    pub fn create(&self, spec: &NewSession, exit_file: &Path) -> Result<()> {
        if self.exists(&spec.name)? {
            return Err(OrangeError::invalid(format!(
                "a zellij session named {:?} already exists",
                spec.name
            )));
        }
        let layout = layout_file(spec, exit_file)?;
        let layout_s = layout.to_string_lossy().into_owned();
        // The server reads the layout after `attach` returns: the file stays (next to the
        // exit file) until the session is gone.
        self.run(
            &[
                "--layout",
                &layout_s,
                "attach",
                "--create-background",
                &spec.name,
            ],
            &spec.env,
            Some(&spec.cwd),
        )?;
        // The server starts asynchronously: wait until it lists the session.
        let start = Instant::now();
        while !self.exists(&spec.name)? {
            if start.elapsed() > Duration::from_secs(10) {
                return Err(OrangeError::BackendCommandFailed(format!(
                    "zellij session {} did not start",
                    spec.name
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Kill the session and forget it (no resurrection). `Ok(false)` when there was none.
    pub fn kill(&self, name: &str) -> Result<bool> {
        let existed = self.exists(name)?;
        if existed {
            self.run(&["kill-session", name], &[], None)?;
        }
        let _ = self.run(&["delete-session", "--force", name], &[], None);
        Ok(existed)
    }

    /// The session's first terminal pane (`terminal_N`): actions name it explicitly, since
    /// the focused pane may be a plugin (zellij's "about" popup, for one).
    /// The session's terminal pane. A session just created may list none for a moment (its
    /// layout is still being applied, slower on a loaded machine): asked again for up to 5 s.
    fn terminal_pane(&self, name: &str) -> Result<String> {
        let start = std::time::Instant::now();
        loop {
            let out = self.run(&["--session", name, "action", "list-panes"], &[], None)?;
            if let Some(id) = out
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .find(|id| id.starts_with("terminal_"))
            {
                return Ok(id.to_string());
            }
            if start.elapsed() > std::time::Duration::from_secs(5) {
                return Err(OrangeError::BackendCommandFailed(format!(
                    "zellij session {name:?} has no terminal pane"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Type `text` into the session's terminal pane and submit it with Enter.
    pub fn send_text(&self, name: &str, text: &str) -> Result<()> {
        if !self.exists(name)? {
            return Err(OrangeError::BackendCommandFailed(format!(
                "no zellij session {name:?}"
            )));
        }
        let pane = self.terminal_pane(name)?;
        self.run(
            &[
                "--session",
                name,
                "action",
                "write-chars",
                "--pane-id",
                &pane,
                "--",
                text,
            ],
            &[],
            None,
        )?;
        std::thread::sleep(submit_pause(text.len()));
        self.run(
            &[
                "--session",
                name,
                "action",
                "write",
                "--pane-id",
                &pane,
                "13",
            ],
            &[],
            None,
        )?;
        Ok(())
    }

    pub fn attach_command(&self, name: &str) -> Vec<String> {
        vec![
            self.binary.to_string_lossy().into_owned(),
            "attach".into(),
            name.into(),
        ]
    }
}

/// A KDL layout with one pane running the command through `sh`, recording its exit status.
fn layout_file(spec: &NewSession, exit_file: &Path) -> Result<PathBuf> {
    let script = format!(
        "{}; echo $? > {}",
        if spec.command.is_empty() {
            "${SHELL:-sh}".to_string()
        } else {
            shell_join(&spec.command)
        },
        shell::quote(&exit_file.to_string_lossy())
    );
    let kdl = format!(
        "layout {{\n    pane command=\"sh\" cwd={} close_on_exit=false {{\n        args \"-c\" {}\n    }}\n}}\n",
        kdl_string(&spec.cwd.to_string_lossy()),
        kdl_string(&script)
    );
    let file = exit_file.with_extension("kdl");
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| OrangeError::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(&file, kdl)
        .map_err(|e| OrangeError::io(format!("writing {}", file.display()), e))?;
    Ok(file)
}

/// A KDL string literal.
fn kdl_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kdl_strings_escape_quotes_backslashes_and_newlines() {
        assert_eq!(kdl_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }

    #[test]
    fn missing_zellij_is_backend_not_found() {
        let z = Zellij::with_binary("zellij-that-does-not-exist");
        assert_eq!(z.preflight().unwrap_err().code(), "backend_not_found");
    }
}
