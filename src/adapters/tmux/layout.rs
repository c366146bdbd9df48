//! Panes and windows orange opens beside the person's own (the sidebar's split, a window
//! for a menu's command), closes, and reads any format of; and `run-shell`. The plugin's
//! operations.

use std::path::Path;

use tmux_interface as ti;

use super::exec::raw;
use super::handle::Tmux;
use super::parse::Format;
use super::target::{pane_target, validate_program, validate_word};
use crate::error::{OrangeError, Result};

// The plugin's panes and windows.
impl Tmux {
    /// `fields` (format names such as `"window_width"` or `"@orange_sidebar"`, each read as
    /// `#{field}`) of the target pane: a pane id, or the active pane of the target's current
    /// window. `None` when there is no such pane (or no server).
    pub fn pane_values(&self, target: &str, fields: &[&str]) -> Result<Option<Vec<String>>> {
        self.pane_fields(target, fields)
    }

    /// `fields` of every pane in the window of `target` (a pane or window id, or a session's
    /// current window), in one call. Empty when the target does not exist.
    pub fn window_pane_values(&self, target: &str, fields: &[&str]) -> Result<Vec<Vec<String>>> {
        let fmt = Format::of(fields);
        let ran = self.exec(vec![ti::ListPanes::new()
            .target(pane_target(target))
            .format(fmt.arg())
            .build()])?;
        if ran.missing() {
            return Ok(Vec::new());
        }
        let out = ran.ok()?;
        Ok(fmt
            .rows(&out)?
            .into_iter()
            .map(|r| r.into_iter().map(str::to_string).collect())
            .collect())
    }

    /// Split the target pane side by side (`split-window -h -d`: the target keeps the focus)
    /// and run `command` (argv, through `/bin/sh -c 'exec …'` like [`Tmux::new_session`]) in
    /// the new pane, `before` (left) or after (right) it, `size` wide (`30%` or columns), in
    /// `cwd`, with `env` set for it. Returns the new pane's id.
    pub fn split_pane(
        &self,
        target: &str,
        before: bool,
        size: &str,
        cwd: Option<&Path>,
        env: &[(String, String)],
        command: &[String],
    ) -> Result<String> {
        for (k, _) in env {
            validate_word("environment variable name", k)?;
        }
        validate_program(command)?;
        let mut split = raw("split-window");
        split.push_flag("-h").push_flag("-d").push_flag("-P");
        if before {
            split.push_flag("-b");
        }
        split
            .push_option("-F", "#{pane_id}")
            .push_option("-l", size.to_string())
            .push_option("-t", pane_target(target));
        if let Some(dir) = cwd.and_then(Path::to_str).filter(|d| !d.is_empty()) {
            split.push_option("-c", dir.to_string());
        }
        for (k, v) in env {
            split.push_option("-e", format!("{k}={v}"));
        }
        if !command.is_empty() {
            for arg in super::pane_argv(command) {
                split.push_param(arg);
            }
        }
        let out = self.run(vec![split])?;
        let pane = out.trim().to_string();
        if !pane.starts_with('%') {
            return Err(OrangeError::BackendCommandFailed(format!(
                "unexpected tmux output from split-window: {out:?}"
            )));
        }
        Ok(pane)
    }

    /// Kill one pane (an id, or the active pane of a session's current window). `Ok(false)`
    /// when it did not exist.
    pub fn kill_pane(&self, target: &str) -> Result<bool> {
        self.exec_found(vec![ti::KillPane::new()
            .target_pane(pane_target(target))
            .build()])
    }

    /// Make `pane` the active pane of its window (`select-pane -t`). `Ok(false)` when it
    /// does not exist.
    pub fn select_pane(&self, pane: &str) -> Result<bool> {
        let mut cmd = raw("select-pane");
        cmd.push_option("-t", pane_target(pane));
        self.exec_found(vec![cmd])
    }

    /// Back to the pane that was active before in the window of `pane` (`last-pane -t`).
    /// `Ok(false)` when that window has no last pane (or is gone).
    pub fn last_pane(&self, pane: &str) -> Result<bool> {
        let mut cmd = raw("last-pane");
        cmd.push_option("-t", pane_target(pane));
        Ok(self.exec(vec![cmd])?.success)
    }

    /// A new window named `name` running `command` (argv; run by `sh -c exec …` so that a
    /// variable such as `TMUX=` can come first), made the current window; `beside`: a pane
    /// whose session gets it, right after that pane's window when that index is free, else
    /// at the session's first free index (else tmux's current session). The person's own
    /// windows keep their indexes: no `-a`, which moves the windows after it up. A pane id
    /// is never the target of `new-window` (tmux 3.3a: "can't specify pane here").
    pub fn open_window(&self, name: &str, command: &[String], beside: Option<&str>) -> Result<()> {
        let mut w = raw("new-window");
        if let Some(pane) = beside {
            w.push_option("-t", self.window_slot_after(pane)?);
        }
        w.push_option("-n", name.to_string());
        for arg in super::pane_argv(command) {
            w.push_param(arg);
        }
        self.run(vec![w])?;
        Ok(())
    }

    /// Where a new window beside `pane`'s goes: `$session:index+1` when that index is
    /// free, else `$session:` (tmux picks the first free index from `base-index`).
    fn window_slot_after(&self, pane: &str) -> Result<String> {
        let fmt = Format::of(&["session_id", "window_index"]);
        let mut ask = raw("display-message");
        ask.push_flag("-p")
            .push_option("-t", pane_target(pane))
            .push_param(fmt.arg());
        let out = self.run(vec![ask])?;
        let rows = fmt.rows(&out)?;
        let Some(r) = rows.first() else {
            return Err(OrangeError::BackendCommandFailed(format!(
                "tmux did not describe pane {pane}"
            )));
        };
        let (session, index) = (r[0].to_string(), r[1].parse::<u32>().ok());
        let mut list = raw("list-windows");
        list.push_option("-t", session.clone())
            .push_option("-F", "#{window_index}".to_string());
        let taken: Vec<u32> = self
            .run(vec![list])?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        Ok(match index.map(|i| i + 1) {
            Some(next) if !taken.contains(&next) => format!("{session}:{next}"),
            _ => format!("{session}:"),
        })
    }

    /// `run-shell` `command` (a shell command line, run by tmux's `default-shell`, formats
    /// expanded) on the server and wait for it. Its output goes where tmux puts it (a pane's
    /// view mode), not here: use it for commands that talk back through tmux.
    pub fn run_shell(&self, command: &str) -> Result<()> {
        let mut cmd = raw("run-shell");
        cmd.push_param(command.to_string());
        self.run(vec![cmd])?;
        Ok(())
    }

    /// `run-shell -b` `command` (a shell command line, run by tmux's `default-shell`):
    /// started on the server, not waited for; it lives as long as the server lets it. A
    /// `#` in it is kept as it is (tmux would expand it as a format).
    pub fn run_shell_background(&self, command: &str) -> Result<()> {
        let mut cmd = raw("run-shell");
        cmd.push_flag("-b");
        cmd.push_param(command.replace('#', "##"));
        self.run(vec![cmd])?;
        Ok(())
    }
}
