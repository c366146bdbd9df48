//! Sessions: creating one that runs an agent's argv intact ([`Tmux::new_session`]), finding,
//! listing and killing them, and the server itself.

use serde::Serialize;
use tmux_interface as ti;
use tmux_interface::TmuxCommand;

use super::exec::{sequence_size, MAX_SEQUENCE};
use super::handle::Tmux;
use super::parse::{num, Format, PaneFields, ServerId, SessionInfo, SERVER};
use super::target::{
    pane_target, session_target, validate_program, validate_session_name, validate_word,
};
use crate::adapters::mux::NewSession;
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

/// A session `new-session` made: its ids, and the server instance that made it (asked in
/// the same call: no other call to learn which server runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    pub info: SessionInfo,
    pub server: ServerId,
}

// Sessions and the server.
impl Tmux {
    /// Create a detached session running `spec.command` (argv, never parsed by a shell) with
    /// `remain-on-exit on` on its window, so the pane stays readable and its exit status
    /// observable after the program ends. A name taken is an error.
    pub fn new_session(&self, spec: &NewSession) -> Result<SessionInfo> {
        match self.new_session_unless_taken(spec)? {
            Some(made) => Ok(made.info),
            None => Err(OrangeError::BackendCommandFailed(format!(
                "tmux new-session failed: duplicate session: {}",
                spec.name
            ))),
        }
    }

    /// [`Tmux::new_session`] in one tmux call, no `has-session` first: `None` when another
    /// session has the name (left as it was).
    pub fn new_session_unless_taken(&self, spec: &NewSession) -> Result<Option<Made>> {
        let mut answers = self.new_sessions_unless_taken(std::slice::from_ref(spec));
        answers.pop().expect("one answer per session")
    }

    /// Each of `specs` made as [`Tmux::new_session`] makes one, in order, in as few tmux
    /// calls as can be: each `new-session`, its `remain-on-exit` and its marks in one
    /// command sequence, the sequences of consecutive sessions of one `PATH` (a session's
    /// panes take the PATH of the client that made them) in one call, under tmux's limit
    /// of a call ([`MAX_SEQUENCE`]). One answer per spec, in order: `None` when another
    /// session has its name — tmux 3.3a stops a sequence at `duplicate session`, the
    /// sessions before it made and the other one left as it was; the specs after it go on
    /// in another call. A call that fails otherwise answers the spec it stopped at with its
    /// error; the rest go on too. (A failing `set-option` of the session before would be
    /// told as the next one's failure: they cannot fail on a session the same sequence
    /// just made.)
    pub fn new_sessions_unless_taken(&self, specs: &[NewSession]) -> Vec<Result<Option<Made>>> {
        let fmt = Format::panes(PaneFields::Placed).and(SERVER);
        let mut answers: Vec<Option<Result<Option<Made>>>> = specs.iter().map(|_| None).collect();
        // Each spec's commands; one that fails its checks is answered now.
        let mut ready: Vec<(usize, Vec<TmuxCommand<'_>>, usize)> = vec![];
        for (i, spec) in specs.iter().enumerate() {
            match session_cmds(spec, &fmt) {
                Ok(cmds) => {
                    // Its commands and the `;` before them.
                    let size = sequence_size(&cmds) + 2;
                    ready.push((i, cmds, size));
                }
                Err(e) => answers[i] = Some(Err(e)),
            }
        }
        let mut next = 0;
        while next < ready.len() {
            let path = path_of(&specs[ready[next].0]);
            let (mut take, mut size) = (0, 0);
            for (i, _, s) in &ready[next..] {
                if path_of(&specs[*i]) != path || (take > 0 && size + s > MAX_SEQUENCE) {
                    break;
                }
                size += s;
                take += 1;
            }
            let call = &ready[next..next + take];
            let cmds = call
                .iter()
                .flat_map(|(_, c, _)| c.iter().cloned())
                .collect();
            let got = self.sessions_call(cmds, path, &fmt, call.len());
            next += got.len();
            for ((i, _, _), answer) in call.iter().zip(got) {
                let spec = &specs[*i];
                answers[*i] = Some(answer.and_then(|made| match made {
                    Some(m) if m.info.name != spec.name => {
                        Err(OrangeError::BackendCommandFailed(format!(
                            "tmux named the session {:?} instead of {:?}",
                            m.info.name, spec.name
                        )))
                    }
                    made => Ok(made),
                }));
            }
        }
        answers
            .into_iter()
            .map(|a| a.expect("every spec answered"))
            .collect()
    }

    /// One tmux call making `n` sessions (`cmds`): the answers of the sessions it got to,
    /// in order from the first (fewer than `n` when it stopped at a taken name or a
    /// failure; at least one).
    fn sessions_call(
        &self,
        cmds: Vec<TmuxCommand<'_>>,
        path: Option<&str>,
        fmt: &Format,
        n: usize,
    ) -> Vec<Result<Option<Made>>> {
        let ran = match self.exec_with_path(cmds, path) {
            Ok(ran) => ran,
            Err(e) => return vec![Err(e)],
        };
        let made: Result<Vec<Made>> = fmt.rows(ran.stdout()).and_then(|rows| {
            rows.iter()
                .map(|r| {
                    Ok(Made {
                        info: SessionInfo::from(fmt.pane(r)?),
                        server: fmt.server(r)?,
                    })
                })
                .collect()
        });
        let made = match made {
            Ok(m) => m,
            Err(e) => {
                // Which sessions it made cannot be told: each is told so.
                return (0..n)
                    .map(|_| Err(OrangeError::BackendCommandFailed(e.to_string())))
                    .collect();
            }
        };
        let mut answers: Vec<Result<Option<Made>>> =
            made.into_iter().take(n).map(|m| Ok(Some(m))).collect();
        let at = answers.len();
        if at == n && !ran.success {
            // Every session made, the last one's options not all set.
            answers[n - 1] = Err(ran.error());
        } else if at < n {
            let why = if ran.taken() {
                Ok(None)
            } else if ran.success {
                Err(OrangeError::BackendCommandFailed(format!(
                    "unexpected tmux output: {} sessions told of {n} made: {:?}",
                    at,
                    ran.stdout()
                )))
            } else {
                Err(ran.error())
            };
            answers.push(why);
        }
        answers
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

/// The `PATH` a session's panes get (its client's).
fn path_of(spec: &NewSession) -> Option<&str> {
    spec.env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
}

/// The command sequence of one new session (its names and program checked first): its
/// `new-session -P -F fmt`, then, in the same sequence so that they hold before the server
/// can notice the program's exit, `remain-on-exit on` and its marks.
fn session_cmds<'a>(spec: &'a NewSession, fmt: &Format) -> Result<Vec<TmuxCommand<'a>>> {
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
    let mut cmds = vec![new_session_cmd(spec, cwd, fmt)];
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
    Ok(cmds)
}

/// `new-session -d -P -F fmt` for `spec`, its program run as [`super::pane_argv`] says.
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
    let mut new = b.build();
    if !spec.command.is_empty() {
        for arg in super::pane_argv(&spec.command) {
            new.push_param(arg);
        }
    }
    new
}
