//! THE place where orange runs a tmux command ([`Tmux::exec`]), what one run did ([`Ran`]),
//! an escaped trailing `;` in every argument, and a pane target resolved with `list-panes`
//! (which fails on a missing target) rather than `display-message` (which does not).

use std::borrow::Cow;
use std::process::Stdio;

use tmux_interface as ti;
use tmux_interface::{TmuxCommand, TmuxCommands};

use super::handle::{Server, Tmux, TMUX};
use super::parse::Format;
use super::target::pane_target;
use crate::error::{OrangeError, Result};

/// A command of our own, for what the builders cannot express.
pub(super) fn raw(name: &'static str) -> TmuxCommand<'static> {
    TmuxCommand::new_full(name)
}

/// What one tmux invocation did.
pub(super) struct Ran {
    pub(super) success: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    shown: String,
}

impl Ran {
    /// The target (or the whole server) does not exist.
    pub(super) fn missing(&self) -> bool {
        !self.success && (self.no_server() || is_missing_target(&self.stderr))
    }

    pub(super) fn no_server(&self) -> bool {
        !self.success
            && (self.stderr.contains("no server running")
                || self.stderr.contains("error connecting to")
                || self.stderr.contains("server exited unexpectedly"))
    }

    pub(super) fn error(&self) -> OrangeError {
        let why = match self.stderr.trim() {
            "" => match self.code {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            },
            s => s.to_string(),
        };
        OrangeError::BackendCommandFailed(format!("tmux {} failed: {why}", self.shown))
    }

    /// `new-session` found its name taken (tmux 3.3a stops the sequence there and leaves
    /// the other session as it was).
    pub(super) fn taken(&self) -> bool {
        !self.success && self.stderr.contains("duplicate session")
    }

    /// What it printed, whether it worked or not (a sequence that stopped half-way printed
    /// what the commands before the failing one printed).
    pub(super) fn stdout(&self) -> &str {
        &self.stdout
    }

    pub(super) fn ok(self) -> Result<String> {
        if self.success {
            Ok(self.stdout)
        } else {
            Err(self.error())
        }
    }
}

fn is_missing_target(stderr: &str) -> bool {
    [
        "can't find session",
        "can't find window",
        "can't find pane",
        "no such session",
        "no such window",
        "no such pane",
        "session not found",
        "window not found",
        "pane not found",
    ]
    .iter()
    .any(|p| stderr.contains(p))
}

/// `cmds` as one command sequence, each trailing `;` escaped.
fn sequence(cmds: Vec<TmuxCommand<'_>>) -> TmuxCommands<'_> {
    let mut list = TmuxCommands::new();
    for mut cmd in cmds {
        if let Some(args) = cmd.args.as_mut() {
            args.iter_mut().for_each(escape_trailing_semicolon);
        }
        list.push(cmd);
    }
    list
}

/// The most a command sequence may weigh in one tmux call ([`sequence_size`]): tmux 3.3a
/// sends the client's command in one message of at most 16 KB (16,384 bytes less its
/// headers: 16,364 bytes of arguments went through, 16,370 were "failed to send
/// command"), with room to spare.
pub(super) const MAX_SEQUENCE: usize = 16_000;

/// What `cmds` weigh as one command sequence, as tmux counts it: each argument with its
/// terminating NUL, the `;` between commands included.
pub(super) fn sequence_size(cmds: &[TmuxCommand<'_>]) -> usize {
    sequence(cmds.to_vec())
        .to_vec()
        .iter()
        .map(|a| a.len() + 1)
        .sum()
}

/// An argv for error messages: long elements shortened, odd ones debug-quoted.
fn show_args(args: &[Cow<'_, str>]) -> String {
    args.iter()
        .map(|a| {
            let short: String = if a.chars().count() > 60 {
                a.chars().take(57).chain("…".chars()).collect()
            } else {
                a.to_string()
            };
            if short.is_empty() || short.chars().any(|c| c.is_whitespace() || c.is_control()) {
                format!("{short:?}")
            } else {
                short
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// tmux takes an argv element ending in `;` as a command separator: escape it as `\;`, which
/// tmux turns back into `;` (and `a\;` into `a\\;` → `a\;`).
fn escape_trailing_semicolon(arg: &mut Cow<'_, str>) {
    if arg.ends_with(';') {
        let mut s = arg.to_string();
        s.insert(s.len() - 1, '\\');
        *arg = Cow::Owned(s);
    }
}

// Running tmux, and resolving a pane target.
impl Tmux {
    /// THE place where orange runs a tmux command (besides `attach`, which execs tmux in
    /// place of orange). Runs `cmds` as one command sequence in one invocation (tmux stops at
    /// the first failing command). Only a failure to start tmux is an `Err` here; callers
    /// decide what a non-zero exit means ([`Ran::ok`] unless a missing target is fine).
    pub(super) fn exec(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<Ran> {
        self.exec_with_path(cmds, None)
    }

    /// [`Tmux::exec`] with `PATH` set for the tmux client: a new session's panes take the
    /// PATH of the client that made them, whatever `new-session -e PATH=…` says.
    pub(super) fn exec_with_path(
        &self,
        cmds: Vec<TmuxCommand<'_>>,
        path: Option<&str>,
    ) -> Result<Ran> {
        let args = self.argv(cmds);
        let shown = show_args(&args);
        let mut command = std::process::Command::new(TMUX);
        command
            .args(args.iter().map(|a| a.as_ref()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(p) = path {
            command.env("PATH", p);
        }
        let out = command.output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                self.not_found()
            } else {
                OrangeError::io(format!("running tmux {shown}"), e)
            }
        })?;
        Ok(Ran {
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            shown,
        })
    }

    /// The arguments of one tmux invocation running `cmds` in sequence: global flags, then
    /// the commands joined by `;` elements (tmux_interface keeps them apart from `args`).
    fn argv<'a>(&self, cmds: Vec<TmuxCommand<'a>>) -> Vec<Cow<'a, str>> {
        let list = sequence(cmds);
        let mut tmux = ti::Tmux::new();
        match &self.server {
            Server::Default => {}
            Server::Name(n) => tmux = tmux.socket_name(n.clone()),
            Server::Path(p) => tmux = tmux.socket_path(p.to_string_lossy().into_owned()),
        }
        if let Some(conf) = &self.config {
            tmux = tmux.file(conf.to_string_lossy().into_owned());
        }
        let built = tmux.commands(list).build();
        let mut args = built.args.clone().unwrap_or_default();
        // `-u`: without a UTF-8 locale (cron, systemd, a command over ssh) tmux writes every
        // control and non-ASCII character of its output as `_`, our field separators too.
        args.insert(0, "-u".into());
        if let Some(cmds) = &built.subcommands {
            args.extend(cmds.to_vec());
        }
        args
    }

    /// Run a command about one target: `Ok(true)` when it worked, `Ok(false)` when the
    /// target (or the server) does not exist, an error otherwise.
    pub(super) fn exec_found(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<bool> {
        let ran = self.exec(cmds)?;
        if ran.success {
            Ok(true)
        } else if ran.missing() {
            Ok(false)
        } else {
            Err(ran.error())
        }
    }

    /// Run and require success; the error carries tmux's stderr.
    pub(super) fn run(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<String> {
        self.exec(cmds)?.ok()
    }

    /// `fields` of the target pane (a pane id, or the active pane of the target's current
    /// window); `None` when there is no such pane. Read with `list-panes`, which fails on a
    /// missing target: `display-message -p -t` would succeed with empty fields instead, and
    /// a send to that empty pane id would type into whatever pane tmux picks.
    pub(super) fn pane_fields(&self, target: &str, fields: &[&str]) -> Result<Option<Vec<String>>> {
        let fmt = Format::of(&["pane_id", "pane_active"]).and(fields);
        let ran = self.exec(vec![ti::ListPanes::new()
            .target(pane_target(target))
            .format(fmt.arg())
            .build()])?;
        if ran.missing() {
            return Ok(None);
        }
        let out = ran.ok()?;
        let row = fmt.rows(&out)?.into_iter().find(|r| {
            if target.starts_with('%') {
                r[0] == target
            } else {
                r[1] == "1"
            }
        });
        Ok(row.map(|r| r[2..].iter().map(|f| f.to_string()).collect()))
    }

    /// [`Tmux::pane_fields`], a missing pane an error.
    pub(super) fn require_pane_fields(&self, target: &str, fields: &[&str]) -> Result<Vec<String>> {
        self.pane_fields(target, fields)?.ok_or_else(|| {
            OrangeError::BackendCommandFailed(format!(
                "tmux: no pane for target {:?} (session, window or pane not found)",
                target
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_semicolons_are_escaped() {
        for (input, want) in [
            ("a;", "a\\;"),
            ("a\\;", "a\\\\;"),
            (";", "\\;"),
            ("a;b", "a;b"),
        ] {
            let mut c = Cow::Borrowed(input);
            escape_trailing_semicolon(&mut c);
            assert_eq!(c, want);
        }
    }
}
