//! The clients attached to the server (the people looking): listing them, moving them
//! between sessions, messages on their status line, a bell in their pane.

use std::path::PathBuf;

use tmux_interface as ti;

use super::exec::raw;
use super::handle::Tmux;
use super::parse::Format;
use super::sessions::SessionRow;
use super::target::{pane_target, session_target};
use crate::adapters::mux::NewSession;
use crate::error::{OrangeError, Result};

/// One client attached to the server ([`Tmux::clients`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// What `-c` takes (`/dev/pts/3`).
    pub name: String,
    /// The terminal the client draws on: what is written there reaches the person's
    /// terminal emulator, past tmux.
    pub tty: String,
    /// The session it shows: its name and id.
    pub session: String,
    pub session_id: String,
    /// The active pane of that session's current window: what the person looks at.
    pub pane_id: String,
    /// A control-mode client (`tmux -CC`): its terminal speaks tmux's protocol, nothing
    /// may be written to it.
    pub control: bool,
}

/// The fields of a client, once: those of [`ClientInfo`], then its last session.
const CLIENT: &[&str] = &[
    "client_name",
    "client_tty",
    "client_session",
    "session_id",
    "pane_id",
    "client_control_mode",
    "client_last_session",
];

/// A row of [`CLIENT`]: the client, and the session it showed before this one.
fn client_of(r: &[&str]) -> (ClientInfo, String) {
    let info = ClientInfo {
        name: r[0].to_string(),
        tty: r[1].to_string(),
        session: r[2].to_string(),
        session_id: r[3].to_string(),
        pane_id: r[4].to_string(),
        control: r[5] == "1",
    };
    (info, r[6].to_string())
}

// The people looking: clients.
impl Tmux {
    /// Every client attached to this server (none when no server runs), in ONE call.
    pub fn clients(&self) -> Result<Vec<ClientInfo>> {
        Ok(self
            .client_rows(None)?
            .into_iter()
            .map(|(c, _)| c)
            .collect())
    }

    /// The names of the clients attached to a session (none when it does not exist).
    pub fn clients_of(&self, target: &str) -> Result<Vec<String>> {
        Ok(self
            .client_rows(Some(target))?
            .into_iter()
            .map(|(c, _)| c.name)
            .collect())
    }

    /// The clients attached to `target` (every client: `None`) with their last session;
    /// none when the session or the server does not exist.
    fn client_rows(&self, target: Option<&str>) -> Result<Vec<(ClientInfo, String)>> {
        let fmt = Format::of(CLIENT);
        let mut cmd = raw("list-clients");
        if let Some(t) = target {
            cmd.push_option("-t", session_target(t));
        }
        cmd.push_option("-F", fmt.arg());
        let ran = self.exec(vec![cmd])?;
        if ran.missing() || ran.no_server() {
            return Ok(vec![]);
        }
        let out = ran.ok()?;
        Ok(fmt.rows(&out)?.iter().map(|r| client_of(r)).collect())
    }

    /// Move the clients attached to `target` to another session before it ends: each to
    /// its last session, else to the most recently used other one, else to a new session
    /// `orange` in the home directory. (tmux would otherwise detach them: `[exited]`.)
    pub fn rescue_clients(&self, target: &str) -> Result<()> {
        let clients = self.client_rows(Some(target))?;
        if clients.is_empty() {
            return Ok(());
        }
        let mut others: Vec<SessionRow> = self.list_sessions()?;
        others.sort_by_key(|o| std::cmp::Reverse(o.activity));
        for (client, last) in clients {
            let current = &client.session;
            let dest = others
                .iter()
                .find(|o| o.name == last && o.name != *current)
                .or_else(|| others.iter().find(|o| o.name != *current))
                .map(|o| o.id.clone());
            let dest = match dest {
                Some(d) => d,
                None => {
                    let home = std::env::var("HOME").unwrap_or_else(|_| "/".into());
                    let info = self.new_session(&NewSession {
                        name: "orange".into(),
                        cwd: PathBuf::from(home),
                        ..Default::default()
                    })?;
                    others.push(SessionRow {
                        id: info.id.clone(),
                        name: info.name,
                        attached: false,
                        activity: 0,
                        windows: 1,
                    });
                    info.id
                }
            };
            // It may have detached meanwhile: the others are still moved.
            let _ = self.switch_client_of(Some(&client.name), &dest);
        }
        Ok(())
    }

    /// Switch the current client (orange runs inside tmux) to the session.
    pub fn switch_client(&self, target: &str) -> Result<()> {
        self.switch_client_of(None, target)
    }

    /// Switch `client` (default: the current client) to the session (exact name or id).
    pub fn switch_client_of(&self, client: Option<&str>, target: &str) -> Result<()> {
        let mut b = ti::SwitchClient::new().target_session(session_target(target));
        if let Some(c) = client.filter(|c| !c.is_empty()) {
            b = b.target_client(c);
        }
        self.run(vec![b.build()])?;
        Ok(())
    }

    /// Show `msg` literally (`#` is not a format) on `client`'s status line (default: the
    /// client tmux finds current); `target` gives the pane whose client is meant when no
    /// client is named.
    pub fn display_message_to(
        &self,
        client: Option<&str>,
        target: Option<&str>,
        msg: &str,
    ) -> Result<()> {
        let mut cmd = raw("display-message");
        if let Some(c) = client.filter(|c| !c.is_empty()) {
            cmd.push_option("-c", c.to_string());
        }
        if let Some(t) = target.filter(|t| !t.is_empty()) {
            cmd.push_option("-t", pane_target(t));
        }
        cmd.push_param("--");
        cmd.push_param(crate::text::for_tmux(msg));
        self.run(vec![cmd])?;
        Ok(())
    }

    /// Show `msg` literally (`#` is not a format) on each client's status line, in ONE
    /// call; one by one after a failure (a client that detached meanwhile is skipped).
    pub fn display_to_clients(&self, clients: &[&str], msg: &str) -> Result<()> {
        let build = |client: &str| {
            let mut cmd = raw("display-message");
            cmd.push_option("-c", client.to_string());
            cmd.push_param("--");
            cmd.push_param(crate::text::for_tmux(msg));
            cmd
        };
        if clients.is_empty() {
            return Ok(());
        }
        let ran = self.exec(clients.iter().map(|c| build(c)).collect())?;
        if ran.success || ran.no_server() || clients.len() == 1 {
            return Ok(());
        }
        for c in clients {
            let _ = self.exec(vec![build(c)])?;
        }
        Ok(())
    }

    /// Ask `client` (default: the one tmux finds current) for one line in tmux's
    /// `command-prompt`, showing `prompt`; `then` runs with the answer. `then` is tmux
    /// syntax, run as a `{ … }` block: tmux puts the answer into a block's arguments as
    /// they are (`%1`, see `ui::plugin::send_prompt`) and never parses them again, so what
    /// the person typed stays one argument, whatever its quotes, `;`, `$`, `#` or `%`. Does
    /// not wait for the answer (`-b`).
    pub fn prompt_then(&self, client: Option<&str>, prompt: &str, then: &str) -> Result<()> {
        // Only a command string that tmux parses makes a block (an argv element `{` is a
        // plain word): `if-shell -F 1` parses its command.
        let mut line = "command-prompt -b".to_string();
        if let Some(c) = client.filter(|c| !c.is_empty()) {
            line.push_str(&format!(" -t {}", quote(c)));
        }
        line.push_str(&format!(" -p {} {{ {then} }}", quote(prompt)));
        let mut cmd = raw("if-shell");
        cmd.push_flag("-F");
        cmd.push_param("1");
        cmd.push_param(line);
        self.run(vec![cmd])?;
        Ok(())
    }

    /// Ring the bell in a pane's window: a BEL written to the pane's terminal, as if its
    /// program had printed it (tmux flags the window and alerts per the user's settings).
    /// Written only while the pane lives: its terminal is asked for, opened, and the pane
    /// asked again — a pane that ended in between freed its terminal's name, which the
    /// next terminal opened on the machine takes (seen in the suite: the bell rang in
    /// another program's terminal). Ok(false): the pane had ended, nothing written.
    pub fn ring_bell(&self, target: &str) -> Result<bool> {
        let ask = || {
            self.run(vec![ti::DisplayMessage::new()
                .print()
                .target_pane(pane_target(target))
                .message("#{pane_dead} #{pane_tty}")
                .build()])
                .map(|out| out.trim().to_string())
        };
        let before = ask()?;
        let Some(tty) = before.strip_prefix("0 ").filter(|t| !t.is_empty()) else {
            return Ok(false);
        };
        let mut f = crate::adapters::terminal::open_tty(tty)
            .map_err(|e| OrangeError::io(format!("ringing the bell on {tty}"), e))?;
        if ask().ok().as_deref() != Some(before.as_str()) {
            return Ok(false);
        }
        std::io::Write::write_all(&mut f, b"\x07")
            .map_err(|e| OrangeError::io(format!("ringing the bell on {tty}"), e))?;
        Ok(true)
    }

    /// Write `bytes` (a bell, OSC notifications) to the terminals of `clients` (never a
    /// control-mode client's): each terminal is opened, then the clients are listed again
    /// and only those still attached on the same terminal are written to — a client that
    /// left in between freed its terminal's name for the next terminal opened on the
    /// machine, a stranger's. The terminals that could not be written, with why.
    pub fn write_to_clients(
        &self,
        clients: &[ClientInfo],
        bytes: &[u8],
    ) -> Vec<(String, std::io::Error)> {
        let mut failed = Vec::new();
        let opened: Vec<(&ClientInfo, std::fs::File)> = clients
            .iter()
            .filter(|c| !c.control)
            .filter_map(|c| match crate::adapters::terminal::open_tty(&c.tty) {
                Ok(f) => Some((c, f)),
                Err(e) => {
                    failed.push((c.tty.clone(), e));
                    None
                }
            })
            .collect();
        if opened.is_empty() {
            return failed;
        }
        let still = self.clients().unwrap_or_default();
        for (c, mut f) in opened {
            if !still.iter().any(|s| s.name == c.name && s.tty == c.tty) {
                continue;
            }
            if let Err(e) = std::io::Write::write_all(&mut f, bytes) {
                failed.push((c.tty.clone(), e));
            }
        }
        failed
    }
}

/// `s` as one argument of a tmux command string: double-quoted, with the characters tmux
/// reads there (`\`, `"`, `$`) escaped and a newline as `\n`. Formats (`#{…}`) are left
/// to the command that expands them.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' | '"' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
