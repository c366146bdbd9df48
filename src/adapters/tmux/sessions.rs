//! Sessions: creating one that runs an agent's argv intact ([`Tmux::new_session`]), finding,
//! listing and killing them, and the server itself.

use serde::Serialize;
use tmux_interface as ti;

use super::handle::Tmux;
use super::parse::{num, Format, PaneFields, SessionInfo};
use super::target::{
    pane_target, session_target, validate_program, validate_session_name, validate_word,
};
use crate::adapters::mux::NewSession;
use crate::adapters::shell::join as shell_join;
use crate::error::{OrangeError, Result};

/// One row of [`Tmux::list_sessions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionRow {
    pub id: String,
    pub name: String,
    pub attached: bool,
    /// Unix time of the session's last activity.
    pub activity: u64,
    pub windows: u32,
}

// Sessions and the server.
impl Tmux {
    /// Create a detached session running `spec.command` (argv, never parsed by a shell) with
    /// `remain-on-exit on` on its window, so the pane stays readable and its exit status
    /// observable after the program ends.
    pub fn new_session(&self, spec: &NewSession) -> Result<SessionInfo> {
        validate_session_name(&spec.name)?;
        for (k, _) in &spec.env {
            validate_word("environment variable name", k)?;
        }
        for (k, _) in &spec.marks {
            validate_word("option name", k)?;
        }
        validate_program(&spec.command)?;
        let cwd = spec.cwd.to_str().ok_or_else(|| {
            OrangeError::invalid(format!("{} is not valid UTF-8", spec.cwd.display()))
        })?;
        let fmt = Format::panes(PaneFields::Placed);
        let mut cmds = vec![new_session_cmd(spec, cwd, &fmt)];
        // Same command sequence: applied before the server can notice the program's exit.
        cmds.push(
            ti::SetOption::new()
                .window()
                .target_pane(pane_target(&spec.name))
                .option("remain-on-exit")
                .value("on")
                .build(),
        );
        for (k, v) in &spec.marks {
            cmds.push(
                ti::SetOption::new()
                    .target_pane(pane_target(&spec.name))
                    .option(k.clone())
                    .value(v.clone())
                    .build(),
            );
        }
        let path = spec
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let out = self.exec_with_path(cmds, path)?.ok()?;
        let info = match fmt.rows(&out)?.first() {
            Some(r) => SessionInfo::from(fmt.pane(r)?),
            None => {
                return Err(OrangeError::BackendCommandFailed(format!(
                    "unexpected tmux output: {out:?}"
                )))
            }
        };
        if info.name != spec.name {
            return Err(OrangeError::BackendCommandFailed(format!(
                "tmux named the session {:?} instead of {:?}",
                info.name, spec.name
            )));
        }
        Ok(info)
    }

    /// Kill a session (exact name or id). `Ok(false)` when there was no such session. The
    /// clients attached to it are moved elsewhere first (see [`Tmux::rescue_clients`]): a
    /// person whose session ends (a menu's Merge or Cancel run inside it) stays in tmux.
    pub fn kill_session(&self, target: &str) -> Result<bool> {
        // Best effort: a client that cannot be moved must not keep the session alive.
        let _ = self.rescue_clients(target);
        self.exec_found(vec![ti::KillSession::new()
            .target_session(session_target(target))
            .build()])
    }

    /// Does this exact session (name or id) exist? `false` also when no server runs.
    pub fn has_session(&self, target: &str) -> Result<bool> {
        self.exec_found(vec![ti::HasSession::new()
            .target_session(session_target(target))
            .build()])
    }

    /// Ids of a session and of its active pane (or of the session holding a pane/window
    /// target); `None` when it does not exist.
    pub fn session_info(&self, target: &str) -> Result<Option<SessionInfo>> {
        let fmt = Format::panes(PaneFields::Placed);
        match self.pane_fields(target, fmt.fields())? {
            Some(r) => Ok(Some(SessionInfo::from(fmt.pane(&r)?))),
            None => Ok(None),
        }
    }

    /// Every session, in one tmux call. Empty when no server runs.
    pub fn list_sessions(&self) -> Result<Vec<SessionRow>> {
        let fmt = Format::of(&[
            "session_id",
            "session_name",
            "session_attached",
            "session_activity",
            "session_windows",
        ]);
        let ran = self.exec(vec![ti::ListSessions::new().format(fmt.arg()).build()])?;
        if ran.no_server() {
            return Ok(Vec::new());
        }
        let out = ran.ok()?;
        fmt.rows(&out)?
            .iter()
            .map(|r| {
                Ok(SessionRow {
                    id: r[0].to_string(),
                    name: r[1].to_string(),
                    attached: num::<u32>(r[2], "session_attached")? > 0,
                    activity: num(r[3], "session_activity")?,
                    windows: num(r[4], "session_windows")?,
                })
            })
            .collect()
    }

    /// Kill the whole server. Fine when none runs.
    pub fn kill_server(&self) -> Result<()> {
        let ran = self.exec(vec![ti::KillServer::new().build()])?;
        if ran.success || ran.no_server() {
            Ok(())
        } else {
            Err(ran.error())
        }
    }
}

/// `new-session -d -P -F fmt` for `spec`, its program run as `/bin/sh -c 'exec <argv>'`.
fn new_session_cmd<'a>(
    spec: &'a NewSession,
    cwd: &'a str,
    fmt: &Format,
) -> tmux_interface::TmuxCommand<'a> {
    let mut b = ti::NewSession::new()
        .detached()
        .print()
        .format(fmt.arg())
        .session_name(spec.name.as_str());
    if !cwd.is_empty() {
        b = b.start_directory(cwd);
    }
    for (k, v) in &spec.env {
        b = b.environment(k.as_str(), v.as_str());
    }
    if let Some(w) = spec.width {
        b = b.width(usize::from(w));
    }
    if let Some(h) = spec.height {
        b = b.height(usize::from(h));
    }
    if !spec.command.is_empty() {
        b = b.shell_command("/bin/sh");
    }
    let mut new = b.build();
    if !spec.command.is_empty() {
        // Three argv elements: tmux execvp's them; /bin/sh parses only our quoting.
        new.push_param("-c");
        new.push_param(format!("exec {}", shell_join(&spec.command)));
    }
    new
}
