//! Reading the whole server in one call: every pane ([`Tmux::snapshot`]), everything the
//! observer needs ([`Tmux::observe`]), the sessions orange marked ([`Tmux::marked_sessions`]),
//! which server instance answers ([`Tmux::server_identity`]). A dead pane whose exit status
//! tmux has not collected yet is retried after a nudge ([`Tmux::nudge_reaper`]).

use std::time::Duration;

use serde::Serialize;
use tmux_interface as ti;

use super::exec::raw;
use super::handle::Tmux;
use super::parse::{Format, PaneFields, PaneInfo, ServerId, RS, SERVER};
use super::target::validate_word;
use crate::error::Result;

/// How often a read retries a dead pane without exit status, and how long it waits after
/// each nudge (see `Tmux::nudge_reaper`).
const REAP_RETRIES: u32 = 3;
const REAP_WAIT: Duration = Duration::from_millis(15);

/// What [`Tmux::marked_sessions`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marked {
    /// The server instance that answered (`None`: no server, or no session).
    pub server: Option<ServerId>,
    pub sessions: Vec<MarkedSession>,
}

/// What [`Tmux::observe`] saw in its one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// The server instance that answered (`None`: no server runs).
    pub server: Option<ServerId>,
    pub panes: Vec<PaneInfo>,
    /// Each session once, with the session options asked for.
    pub sessions: Vec<MarkedSession>,
    /// `(name, value)` of each global option asked for, in order (empty when unset).
    pub options: Vec<(String, String)>,
}

/// A session and orange's marks on it (empty when unset): see [`Tmux::marked_sessions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MarkedSession {
    pub id: String,
    pub name: String,
    /// The active pane of its current window.
    pub pane_id: String,
    /// `(mark name, value)` for each mark asked for that is set, in order.
    pub marks: Vec<(String, String)>,
}

impl MarkedSession {
    pub fn mark(&self, name: &str) -> Option<&str> {
        self.marks
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// The session of a row of `fmt` (which asks `session_id`, `session_name`, `pane_id`
    /// and then the `marks`, last).
    fn of_row(fmt: &Format, row: &[&str], marks: &[&str]) -> MarkedSession {
        let first_mark = fmt.fields().len() - marks.len();
        MarkedSession {
            id: row[fmt.at("session_id")].to_string(),
            name: row[fmt.at("session_name")].to_string(),
            pane_id: row[fmt.at("pane_id")].to_string(),
            // An unset mark reads empty: not kept ([`MarkedSession::mark`] is `None` either way).
            marks: marks
                .iter()
                .zip(&row[first_mark..])
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

// Reading the whole server.
impl Tmux {
    /// Every pane of every session, in ONE tmux call (repeated only when tmux has not
    /// collected a dead pane's exit status yet: see `nudge_reaper`). Empty when no server
    /// runs.
    pub fn snapshot(&self) -> Result<Vec<PaneInfo>> {
        let fmt = Format::panes(PaneFields::All);
        Ok(self
            .all_panes(&Format::of(SERVER), &fmt, |_, panes, _| Ok(panes))?
            .unwrap_or_default())
    }

    /// Everything the observer needs, in ONE tmux call (repeated only while a dead pane's
    /// exit status is not collected, like [`Tmux::snapshot`]): every pane (what
    /// [`PaneFields::Observed`] names: the rest of a [`PaneInfo`] stays empty), for each
    /// session the session options `marks` (`@orange_task`…, each read as `#{name}`: a
    /// session's value, else the global one), and once the server instance and the global
    /// options `globals`. `server` is `None` when no server runs.
    ///
    /// What costs tmux is expanding fields, about the same for each field of each pane: the
    /// server's identity and the global options are asked once (`display-message`), not for
    /// every pane, and only the pane fields the observer reads are asked.
    pub fn observe(&self, marks: &[&str], globals: &[&str]) -> Result<Observed> {
        for m in marks.iter().chain(globals) {
            validate_word("option name", m)?;
        }
        let head = Format::of(SERVER).and(globals);
        let fmt = Format::panes(PaneFields::Observed)
            .and(&["window_active"])
            .and(marks);
        let observed = self.all_panes(&head, &fmt, |top, panes, rows| {
            let server = Some(head.server(top)?);
            let options = globals
                .iter()
                .zip(&top[SERVER.len()..])
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            // Each session once: the active pane of its current window stands for it.
            let front = fmt.at("window_active");
            let mut sessions: Vec<MarkedSession> = Vec::new();
            for (p, r) in panes.iter().zip(rows) {
                let row = MarkedSession::of_row(&fmt, r, marks);
                match sessions.iter_mut().find(|s| s.id == p.session_id) {
                    Some(s) if r[front] == "1" && p.pane_active => *s = row,
                    Some(_) => {}
                    None => sessions.push(row),
                }
            }
            Ok(Observed {
                server,
                panes,
                sessions,
                options,
            })
        })?;
        Ok(observed.unwrap_or_default())
    }

    /// `display-message -p` with `head` (which asks [`SERVER`]) then `list-panes -a` with
    /// `fmt` (made by [`Format::panes`]), in one call, retried after a nudge while a dead
    /// pane's exit status is not collected; then `then` with the row of `head`, the panes and
    /// the rows they were read from. `None` when no server runs.
    fn all_panes<T>(
        &self,
        head: &Format,
        fmt: &Format,
        then: impl FnOnce(&[&str], Vec<PaneInfo>, &[Vec<&str>]) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut attempt = 0;
        loop {
            let mut display = raw("display-message");
            display.push_flag("-p");
            display.push_param(head.arg());
            let list = ti::ListPanes::new().all().format(fmt.arg()).build();
            let ran = self.exec(vec![display, list])?;
            if ran.no_server() {
                return Ok(None);
            }
            let out = ran.ok()?;
            // The first record is display-message's, the others list-panes'.
            let cut = out.find(RS).map_or(out.len(), |i| i + RS.len_utf8());
            let top = head.rows(&out[..cut])?;
            let Some(top) = top.first() else {
                return Err(crate::error::OrangeError::BackendCommandFailed(
                    "unexpected tmux output: no server fields".into(),
                ));
            };
            let rows = fmt.rows(&out[cut..])?;
            let panes = rows
                .iter()
                .map(|r| fmt.pane(r))
                .collect::<Result<Vec<_>>>()?;
            if attempt < REAP_RETRIES && panes.iter().any(PaneInfo::unreaped) {
                self.nudge_reaper(top[head.at("pid")]);
                attempt += 1;
                continue;
            }
            return then(top, panes, &rows).map(Some);
        }
    }

    /// A pane whose pty closed but whose exit status tmux never collected: tmux built with
    /// libutempter (Debian's 3.3a is) misses the SIGCHLD of a program that exits while a
    /// pane is being set up, and the program stays a zombie with `pane_dead=1` and no
    /// status, forever (tmux/tmux#311, #2679). A SIGCHLD sent to the server makes it reap
    /// every exited child. Then wait a little for the server to handle it. (A program that
    /// closed its terminal but still runs also looks like this; it stays "running".)
    fn nudge_reaper(&self, server_pid: &str) {
        if let Ok(pid) = server_pid.parse::<libc::pid_t>() {
            // Best effort by design: if the signal cannot be sent, the next read retries.
            // SAFETY: kill(2) with a pid and a signal number; no memory is shared.
            unsafe {
                libc::kill(pid, libc::SIGCHLD);
            }
        }
        std::thread::sleep(REAP_WAIT);
    }

    /// Every session with the session options `marks` (`@orange_task`…), and the server
    /// instance that answered, in one tmux call. Empty when no server runs.
    pub fn marked_sessions(&self, marks: &[&str]) -> Result<Marked> {
        for m in marks {
            validate_word("option name", m)?;
        }
        let fmt = Format::of(&["session_id", "session_name", "pane_id"])
            .and(SERVER)
            .and(marks);
        let ran = self.exec(vec![ti::ListSessions::new().format(fmt.arg()).build()])?;
        if ran.no_server() {
            return Ok(Marked::default());
        }
        let out = ran.ok()?;
        let rows = fmt.rows(&out)?;
        let server = match rows.first() {
            Some(r) => Some(fmt.server(r)?),
            None => None,
        };
        let sessions = rows
            .iter()
            .map(|r| MarkedSession::of_row(&fmt, r, marks))
            .collect();
        Ok(Marked { server, sessions })
    }

    /// Which server instance answers on this socket; `None` when none runs.
    pub fn server_identity(&self) -> Result<Option<ServerId>> {
        let fmt = Format::of(SERVER);
        let mut cmd = raw("display-message");
        cmd.push_flag("-p");
        cmd.push_param(fmt.arg());
        let ran = self.exec(vec![cmd])?;
        if ran.no_server() {
            return Ok(None);
        }
        let out = ran.ok()?;
        match fmt.rows(&out)?.first() {
            Some(r) => Ok(Some(fmt.server(r)?)),
            None => Ok(None),
        }
    }
}
