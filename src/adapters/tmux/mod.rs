//! The tmux adapter: every tmux process orange starts is started by `Tmux::exec`, the one
//! private function below (the only other is [`Tmux::attach`], which replaces orange with
//! `tmux attach-session`). Commands are built with `tmux_interface` builders where they fit;
//! where a builder cannot express what we need (`--` before a literal argument, several
//! shell-command arguments) we push the extra argv elements onto the built command, and it
//! still runs through `exec`. Every exit status is checked: `tmux_interface`'s own `output()`
//! reports success even when tmux failed, so it is not used.
//!
//! Targets. Every method taking a `target` accepts:
//! - a session id (`$3`), a window id (`@4`) or a pane id (`%5`): exact by construction;
//! - anything else is an exact session name, sent as `=name` (session commands) or `=name:`
//!   (window and pane commands: the session's current window and its active pane, whatever
//!   `base-index`/`pane-base-index` say). tmux never prefix-matches such a target, so
//!   `p/feat` can never hit `p/feature-x`.
//!
//! tmux 3.3a facts this module designs around:
//! - an argv element ending in `;` ends a command; `exec` escapes it (`x;` → `x\;`, which
//!   tmux turns back into `x;`), so text, option values and commands may end in `;`;
//! - a session's command given as several argv elements is `execvp`ed by tmux, one element
//!   goes through the user's `default-shell -c` (fish, zsh…). Agent commands are run as
//!   `/bin/sh -c 'exec <argv quoted for sh>'`: never the user's shell, argv arrives intact,
//!   and a missing program is a visible `exit 127`;
//! - `set-option -t`/`show-options -t` take a *pane* target: `=name` alone is refused there,
//!   `=name:` works; `show-options -q` also hides a missing target;
//! - `display-message -p -t <missing>` succeeds with empty fields, so it is never used to
//!   resolve a target (a send to the empty pane id would go to whatever pane tmux picks):
//!   `list-panes -t` is, as it fails on a missing target;
//! - Debian's tmux (built with libutempter) sometimes never collects the exit status of a
//!   program that exits at once: see `Tmux::nudge_reaper`.

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tmux_interface as ti;
use tmux_interface::{TmuxCommand, TmuxCommands};

use crate::error::{OrangeError, Result};

/// Field separator in format output: cannot occur in session names (see [`session_name`]) and
/// tmux 3.3a passes it through unescaped.
const FS: char = '\x1f';
/// Record terminator in format output, so a path containing a newline cannot split a row.
const RS: char = '\x1e';

/// How often a read retries a dead pane without exit status, and how long it waits after
/// each nudge (see `Tmux::nudge_reaper`).
const REAP_RETRIES: u32 = 3;
const REAP_WAIT: Duration = Duration::from_millis(15);

/// Pause after keys sent before a text (such as `C-u`), so the program does not read them
/// together with the text (an `Escape` followed at once by text reads as Alt+key).
const ESCAPE_SETTLE: Duration = Duration::from_millis(100);

/// Which tmux server orange talks to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Server {
    /// tmux's default server (no `-L`/`-S`).
    Default,
    /// `-L name`: a socket named `name` in tmux's socket directory.
    Name(String),
    /// `-S path`: a socket at an explicit path.
    Path(PathBuf),
}

/// A handle on one tmux server. Cheap to clone; holds no connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tmux {
    server: Server,
    /// Passed as `-f` so a server this handle starts reads this config file.
    config: Option<PathBuf>,
    /// The tmux executable: a name looked up on `PATH`, or a path.
    binary: OsString,
}

pub use crate::adapters::mux::{submit_pause, NewSession};

/// One tmux server instance: its socket, and the pid and start time that tell it from a
/// later server on the same socket.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct ServerId {
    pub socket: String,
    pub pid: u32,
    pub start_time: u64,
}

impl ServerId {
    /// From tmux's `#{socket_path}`, `#{pid}` and `#{start_time}`.
    fn parse(socket: &str, pid: &str, start_time: &str) -> Result<ServerId> {
        Ok(ServerId {
            socket: socket.to_string(),
            pid: num(pid, "pid")?,
            start_time: num(start_time, "start_time")?,
        })
    }
}

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
    /// Each session once, with the options asked for.
    pub sessions: Vec<MarkedSession>,
}

/// A session and orange's marks on it (empty when unset): see [`Tmux::marked_sessions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MarkedSession {
    pub id: String,
    pub name: String,
    /// The active pane of its current window.
    pub pane_id: String,
    /// `(mark name, value)` for each mark asked for, in order.
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
}

/// A session as tmux created or reports it. Prefer `id` (`$3`) for later calls: it stays
/// exact even if the session is renamed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub name: String,
    pub window_id: String,
    pub pane_id: String,
    pub pane_pid: u32,
}

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

/// One pane of [`Tmux::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PaneInfo {
    pub session_id: String,
    pub session_name: String,
    /// At least one client is attached to the session.
    pub session_attached: bool,
    pub window_id: String,
    pub window_index: u32,
    /// Unix time of the window's last activity.
    pub window_activity: u64,
    pub pane_id: String,
    pub pane_index: u32,
    pub pane_active: bool,
    pub pane_pid: u32,
    /// The pane's terminal is closed: its program has exited (the pane is kept by
    /// `remain-on-exit`), or, rarely, it closed its terminal and runs on.
    pub pane_dead: bool,
    /// Exit status of a dead pane whose program exited normally.
    pub pane_dead_status: Option<i32>,
    /// Signal that killed a dead pane's program.
    pub pane_dead_signal: Option<i32>,
    pub pane_current_command: String,
    pub pane_current_path: String,
    pub pane_width: u32,
    pub pane_height: u32,
}

impl PaneInfo {
    /// How the pane's program ended; `None` while it runs (or while tmux has not collected
    /// the exit status of a dead pane: [`Tmux::snapshot`] already retried that).
    pub fn exit(&self) -> Option<PaneExit> {
        pane_exit_from(self.pane_dead, self.pane_dead_status, self.pane_dead_signal)
    }
}

/// How a pane's program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PaneExit {
    /// Exited with this status (0 = success).
    Status(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// Where an option lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionScope<'a> {
    /// Global session options (`-g`): what `#{@name}` falls back to everywhere.
    Global,
    /// One session's options.
    Session(&'a str),
    /// The window options of the target's window.
    Window(&'a str),
    /// The pane options of the target pane.
    Pane(&'a str),
}

/// The session name for a task or lane: `<project>/<branch>`, every character outside
/// `[A-Za-z0-9_/-]` replaced by `_` (tmux itself would rewrite `.` and `:`).
pub fn session_name(project: &str, branch: &str) -> String {
    format!("{project}/{branch}")
        .chars()
        .map(|c| if session_char_ok(c) { c } else { '_' })
        .collect()
}

fn session_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-')
}

pub use crate::adapters::shell::quote as shell_quote;

pub use crate::adapters::shell::join as shell_join;

/// `=name` for session commands; ids and already-exact targets pass through.
fn session_target(target: &str) -> String {
    if target.starts_with(['$', '=', '@', '%']) {
        target.to_string()
    } else {
        format!("={target}")
    }
}

/// `=name:` for window and pane commands (the session's current window, its active pane).
fn pane_target(target: &str) -> String {
    if target.starts_with(['%', '@']) {
        target.to_string()
    } else if target.starts_with(['$', '=']) {
        if target.contains(':') {
            target.to_string()
        } else {
            format!("{target}:")
        }
    } else {
        format!("={target}:")
    }
}

fn pane_exit_from(dead: bool, status: Option<i32>, signal: Option<i32>) -> Option<PaneExit> {
    if !dead {
        return None;
    }
    match (status, signal) {
        (_, Some(sig)) => Some(PaneExit::Signal(sig)),
        (Some(code), None) => Some(PaneExit::Status(code)),
        // The pty is closed but tmux has not reaped the process yet: not known yet.
        (None, None) => None,
    }
}

/// A tmux format listing `fields`, separated by [`FS`] and terminated by [`RS`].
fn format_of(fields: &[&str]) -> String {
    let mut f = fields
        .iter()
        .map(|name| format!("#{{{name}}}"))
        .collect::<Vec<_>>()
        .join(&FS.to_string());
    f.push(RS);
    f
}

/// Rows of `format_of` output, each split into `n` fields.
fn records(out: &str, n: usize) -> Result<Vec<Vec<&str>>> {
    let mut rows = Vec::new();
    for rec in out.split(RS) {
        let rec = rec.strip_prefix('\n').unwrap_or(rec);
        if rec.is_empty() {
            continue;
        }
        let fields: Vec<&str> = rec.split(FS).collect();
        if fields.len() != n {
            return Err(OrangeError::BackendCommandFailed(format!(
                "unexpected tmux output: {} fields instead of {n} in {rec:?}",
                fields.len()
            )));
        }
        rows.push(fields);
    }
    Ok(rows)
}

fn num<T: std::str::FromStr>(field: &str, what: &str) -> Result<T> {
    field.parse().map_err(|_| {
        OrangeError::BackendCommandFailed(format!("unexpected tmux output: {what} = {field:?}"))
    })
}

fn opt_num(field: &str, what: &str) -> Result<Option<i32>> {
    if field.is_empty() {
        Ok(None)
    } else {
        num(field, what).map(Some)
    }
}

const SESSION_FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "window_id",
    "pane_id",
    "pane_pid",
];

fn parse_session_info(out: &str) -> Result<SessionInfo> {
    let rows = records(out, SESSION_FIELDS.len())?;
    let r = rows.first().ok_or_else(|| {
        OrangeError::BackendCommandFailed(format!("unexpected tmux output: {out:?}"))
    })?;
    Ok(SessionInfo {
        id: r[0].to_string(),
        name: r[1].to_string(),
        window_id: r[2].to_string(),
        pane_id: r[3].to_string(),
        pane_pid: num(r[4], "pane_pid")?,
    })
}

const PANE_FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "session_attached",
    "window_id",
    "window_index",
    "window_activity",
    "pane_id",
    "pane_index",
    "pane_active",
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_current_command",
    "pane_current_path",
    "pane_width",
    "pane_height",
    // The server's pid, last and not part of PaneInfo: see `nudge_reaper`.
    "pid",
];

/// The first 13 of [`PANE_FIELDS`] (what every pane listing asks first), the rest empty.
fn parse_pane_head(r: &[&str]) -> Result<PaneInfo> {
    Ok(PaneInfo {
        session_id: r[0].to_string(),
        session_name: r[1].to_string(),
        session_attached: num::<u32>(r[2], "session_attached")? > 0,
        window_id: r[3].to_string(),
        window_index: num(r[4], "window_index")?,
        window_activity: num(r[5], "window_activity")?,
        pane_id: r[6].to_string(),
        pane_index: num(r[7], "pane_index")?,
        pane_active: r[8] == "1",
        pane_pid: num(r[9], "pane_pid")?,
        pane_dead: r[10] == "1",
        pane_dead_status: opt_num(r[11], "pane_dead_status")?,
        pane_dead_signal: opt_num(r[12], "pane_dead_signal")?,
        pane_current_command: String::new(),
        pane_current_path: String::new(),
        pane_width: 0,
        pane_height: 0,
    })
}

fn parse_pane(r: &[&str]) -> Result<PaneInfo> {
    Ok(PaneInfo {
        pane_current_command: r[13].to_string(),
        pane_current_path: r[14].to_string(),
        pane_width: num(r[15], "pane_width")?,
        pane_height: num(r[16], "pane_height")?,
        ..parse_pane_head(r)?
    })
}

/// A command of our own, for what the builders cannot express.
fn raw(name: &'static str) -> TmuxCommand<'static> {
    TmuxCommand::new_full(name)
}

/// What one tmux invocation did.
struct Ran {
    success: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    shown: String,
}

impl Ran {
    /// The target (or the whole server) does not exist.
    fn missing(&self) -> bool {
        !self.success && (self.no_server() || is_missing_target(&self.stderr))
    }

    fn no_server(&self) -> bool {
        !self.success
            && (self.stderr.contains("no server running")
                || self.stderr.contains("error connecting to")
                || self.stderr.contains("server exited unexpectedly"))
    }

    fn error(&self) -> OrangeError {
        let why = match self.stderr.trim() {
            "" => match self.code {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            },
            s => s.to_string(),
        };
        OrangeError::BackendCommandFailed(format!("tmux {} failed: {why}", self.shown))
    }

    fn ok(self) -> Result<String> {
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

static BUFFER_SEQ: AtomicU64 = AtomicU64::new(0);

impl Default for Tmux {
    fn default() -> Self {
        Tmux::new(Server::Default)
    }
}

impl Tmux {
    pub fn new(server: Server) -> Self {
        Tmux {
            server,
            config: None,
            binary: OsString::from("tmux"),
        }
    }

    /// The server named by the environment: `ORANGE_TMUX_SOCKET` (a name → `-L`, an absolute
    /// path → `-S`); unset or empty, the server of `$TMUX`; else tmux's default server.
    pub fn from_env() -> Self {
        let orange = std::env::var("ORANGE_TMUX_SOCKET").ok();
        let tmux = std::env::var("TMUX").ok();
        Tmux::new(Self::server_from(orange.as_deref(), tmux.as_deref()))
    }

    /// [`Tmux::from_env`]'s rule, given the two variables' values.
    pub fn server_from(orange_tmux_socket: Option<&str>, tmux: Option<&str>) -> Server {
        match orange_tmux_socket.map(str::trim) {
            Some(s) if s.starts_with('/') => return Server::Path(PathBuf::from(s)),
            Some(s) if !s.is_empty() => return Server::Name(s.to_string()),
            _ => {}
        }
        match tmux.and_then(|t| t.split(',').next()) {
            Some(path) if !path.is_empty() => Server::Path(PathBuf::from(path)),
            _ => Server::Default,
        }
    }

    /// A private server `-L name` (tests, sandboxes).
    pub fn with_socket_name(name: impl Into<String>) -> Self {
        Tmux::new(Server::Name(name.into()))
    }

    /// A server this handle starts reads `path` (`-f`) instead of the user's config.
    pub fn with_config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = Some(path.into());
        self
    }

    /// Use another tmux executable (a name on `PATH` or a path).
    pub fn with_binary(mut self, binary: impl Into<OsString>) -> Self {
        self.binary = binary.into();
        self
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The server flags of a tmux command line (`-L name`, `-S path` or nothing).
    pub fn server_args(&self) -> Vec<String> {
        match &self.server {
            Server::Default => vec![],
            Server::Name(n) => vec!["-L".into(), n.clone()],
            Server::Path(p) => vec!["-S".into(), p.to_string_lossy().into_owned()],
        }
    }

    /// Is the tmux executable there (on `PATH`, or at the configured path)?
    pub fn is_available(&self) -> bool {
        crate::adapters::shell::on_path(&self.binary.to_string_lossy())
    }

    /// `backend_not_found` unless tmux is installed: call before any mutation.
    pub fn preflight(&self) -> Result<()> {
        if self.is_available() {
            Ok(())
        } else {
            Err(self.not_found())
        }
    }

    fn not_found(&self) -> OrangeError {
        OrangeError::BackendNotFound(format!(
            "tmux ({}) is not installed or not on PATH",
            self.binary.to_string_lossy()
        ))
    }

    /// THE place where orange runs a tmux command (besides `attach`, which execs tmux in
    /// place of orange). Runs `cmds` as one command sequence in one invocation (tmux stops at
    /// the first failing command). Only a failure to start tmux is an `Err` here; callers
    /// decide what a non-zero exit means ([`Ran::ok`] unless a missing target is fine).
    fn exec(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<Ran> {
        self.exec_with_path(cmds, None)
    }

    /// [`Tmux::exec`] with `PATH` set for the tmux client: a new session's panes take the
    /// PATH of the client that made them, whatever `new-session -e PATH=…` says.
    fn exec_with_path(&self, cmds: Vec<TmuxCommand<'_>>, path: Option<&str>) -> Result<Ran> {
        let mut list = TmuxCommands::new();
        for mut cmd in cmds {
            if let Some(args) = cmd.args.as_mut() {
                args.iter_mut().for_each(escape_trailing_semicolon);
            }
            list.push(cmd);
        }
        let mut tmux = ti::Tmux::new();
        match &self.server {
            Server::Default => {}
            Server::Name(n) => tmux = tmux.socket_name(n.as_str()),
            Server::Path(p) => tmux = tmux.socket_path(p.to_string_lossy()),
        }
        if let Some(conf) = &self.config {
            tmux = tmux.file(conf.to_string_lossy());
        }
        let built = tmux.commands(list).build();
        // Global flags, then the commands joined by ";" elements (tmux_interface keeps them
        // apart from `args`); the program name is ours.
        let mut args = built.args.clone().unwrap_or_default();
        // `-u`: without a UTF-8 locale (cron, systemd, a command over ssh) tmux writes every
        // control and non-ASCII character of its output as `_`, our field separators too.
        args.insert(0, "-u".into());
        if let Some(cmds) = &built.subcommands {
            args.extend(cmds.to_vec());
        }
        let shown = show_args(&args);
        let mut command = std::process::Command::new(&self.binary);
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

    /// Run a command about one target: `Ok(true)` when it worked, `Ok(false)` when the
    /// target (or the server) does not exist, an error otherwise.
    fn exec_found(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<bool> {
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
    fn run(&self, cmds: Vec<TmuxCommand<'_>>) -> Result<String> {
        self.exec(cmds)?.ok()
    }

    /// Create a detached session running `spec.command` (argv, never parsed by a shell) with
    /// `remain-on-exit on` on its window, so the pane stays readable and its exit status
    /// observable after the program ends.
    pub fn new_session(&self, spec: &NewSession) -> Result<SessionInfo> {
        validate_session_name(&spec.name)?;
        for (k, _) in &spec.env {
            validate_word("environment variable name", k)?;
        }
        if spec.command.first().is_some_and(|p| p.starts_with('-')) {
            return Err(OrangeError::invalid(format!(
                "program name {:?} starts with '-'",
                spec.command[0]
            )));
        }
        let cwd = spec.cwd.to_str().ok_or_else(|| {
            OrangeError::invalid(format!("{} is not valid UTF-8", spec.cwd.display()))
        })?;
        let mut b = ti::NewSession::new()
            .detached()
            .print()
            .format(format_of(SESSION_FIELDS))
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
        // Same command sequence: applied before the server can notice the program's exit.
        let remain = ti::SetOption::new()
            .window()
            .target_pane(pane_target(&spec.name))
            .option("remain-on-exit")
            .value("on")
            .build();
        let mut cmds = vec![new, remain];
        for (k, v) in &spec.marks {
            validate_word("option name", k)?;
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
        let info = parse_session_info(&out)?;
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

    /// The names of the clients attached to a session (none when it does not exist).
    pub fn clients_of(&self, target: &str) -> Result<Vec<String>> {
        Ok(self.client_rows(target)?.into_iter().map(|r| r.0).collect())
    }

    /// `(client name, its last session, its session)` of the clients attached to `target`.
    fn client_rows(&self, target: &str) -> Result<Vec<(String, String, String)>> {
        let fields = ["client_name", "client_last_session", "client_session"];
        let mut cmd = raw("list-clients");
        cmd.push_option("-t", session_target(target));
        cmd.push_option("-F", format_of(&fields));
        let ran = self.exec(vec![cmd])?;
        if ran.missing() || ran.no_server() {
            return Ok(vec![]);
        }
        let out = ran.ok()?;
        Ok(records(&out, fields.len())?
            .into_iter()
            .map(|r| (r[0].to_string(), r[1].to_string(), r[2].to_string()))
            .collect())
    }

    /// Move the clients attached to `target` to another session before it ends: each to
    /// its last session, else to the most recently used other one, else to a new session
    /// `orange` in the home directory. (tmux would otherwise detach them: `[exited]`.)
    pub fn rescue_clients(&self, target: &str) -> Result<()> {
        let clients = self.client_rows(target)?;
        if clients.is_empty() {
            return Ok(());
        }
        let mut others: Vec<SessionRow> = self.list_sessions()?;
        others.sort_by_key(|o| std::cmp::Reverse(o.activity));
        for (client, last, current) in clients {
            let dest = others
                .iter()
                .find(|o| o.name == last && o.name != current)
                .or_else(|| others.iter().find(|o| o.name != current))
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
            let _ = self.switch_client_of(Some(&client), &dest);
        }
        Ok(())
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
        let Some(r) = self.pane_fields(target, SESSION_FIELDS)? else {
            return Ok(None);
        };
        Ok(Some(SessionInfo {
            id: r[0].clone(),
            name: r[1].clone(),
            window_id: r[2].clone(),
            pane_id: r[3].clone(),
            pane_pid: num(&r[4], "pane_pid")?,
        }))
    }

    /// `fields` of the target pane (a pane id, or the active pane of the target's current
    /// window); `None` when there is no such pane. Read with `list-panes`, which fails on a
    /// missing target: `display-message -p -t` would succeed with empty fields instead, and
    /// a send to that empty pane id would type into whatever pane tmux picks.
    fn pane_fields(&self, target: &str, fields: &[&str]) -> Result<Option<Vec<String>>> {
        let mut all = vec!["pane_id", "pane_active"];
        all.extend_from_slice(fields);
        let ran = self.exec(vec![ti::ListPanes::new()
            .target(pane_target(target))
            .format(format_of(&all))
            .build()])?;
        if ran.missing() {
            return Ok(None);
        }
        let out = ran.ok()?;
        let row = records(&out, all.len())?.into_iter().find(|r| {
            if target.starts_with('%') {
                r[0] == target
            } else {
                r[1] == "1"
            }
        });
        Ok(row.map(|r| r[2..].iter().map(|f| f.to_string()).collect()))
    }

    fn require_pane_fields(&self, target: &str, fields: &[&str]) -> Result<Vec<String>> {
        self.pane_fields(target, fields)?.ok_or_else(|| {
            OrangeError::BackendCommandFailed(format!(
                "tmux: no pane for target {:?} (session, window or pane not found)",
                target
            ))
        })
    }

    /// The pane's text (`capture-pane -p -J`) with `scrollback_lines` of history above the
    /// visible screen. Trailing spaces of each line and trailing blank lines are removed.
    pub fn capture_pane(&self, target: &str, scrollback_lines: usize) -> Result<String> {
        let mut b = ti::CapturePane::new()
            .stdout()
            .join()
            .target_pane(pane_target(target));
        if scrollback_lines > 0 {
            b = b.start_line(format!("-{scrollback_lines}"));
        }
        let out = self.run(vec![b.build()])?;
        let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
        Ok(lines.join("\n").trim_end_matches('\n').to_string())
    }

    /// The visible text of several panes (`capture-pane -p -J` each) in ONE tmux process,
    /// in the order given; `None` for a pane that is gone (then each is read alone).
    pub fn capture_panes(&self, panes: &[&str]) -> Result<Vec<Option<String>>> {
        if panes.is_empty() {
            return Ok(Vec::new());
        }
        let mark = format!("{RS}orange-capture-end{RS}");
        let mut cmds = Vec::new();
        for p in panes {
            cmds.push(
                ti::CapturePane::new()
                    .stdout()
                    .join()
                    .target_pane(pane_target(p))
                    .build(),
            );
            cmds.push(
                ti::DisplayMessage::new()
                    .print()
                    .message(mark.as_str())
                    .build(),
            );
        }
        let ran = self.exec(cmds)?;
        if !ran.success {
            // One pane went away between the snapshot and now: tmux stopped at it.
            return Ok(panes.iter().map(|p| self.capture_pane(p, 0).ok()).collect());
        }
        let out = ran.ok()?;
        let mut texts: Vec<Option<String>> = out
            .split(&format!("{mark}\n"))
            .map(|t| {
                let lines: Vec<&str> = t.lines().map(str::trim_end).collect();
                Some(lines.join("\n").trim_end_matches('\n').to_string())
            })
            .collect();
        texts.truncate(panes.len());
        texts.resize(panes.len(), None);
        Ok(texts)
    }

    /// Type `text` into a pane and submit it, as reliably as tmux allows (an error for a
    /// missing or dead pane, never a fallback to another one): leave copy mode if
    /// the pane is in it, `keys_before` first (a harness's own way to clear a half-typed
    /// prompt, e.g. `C-u`; never `Escape` for Claude Code, where it means "No, exit" on a
    /// dialog and rejects a pending tool call), the text literally (`send-keys -l`; text
    /// with a newline is pasted as one bracketed paste so it arrives whole), a pause growing
    /// with the text's length ([`submit_pause`]), then `Enter` as a separate key.
    pub fn send_text(&self, target: &str, text: &str, keys_before: &[&str]) -> Result<()> {
        self.send_text_then(target, text, keys_before, "Enter")
    }

    /// [`Tmux::send_text`], submitted with `submit` (a tmux key name) instead of `Enter`.
    pub fn send_text_then(
        &self,
        target: &str,
        text: &str,
        keys_before: &[&str],
        submit: &str,
    ) -> Result<()> {
        // Resolve once: every later step goes to this pane id, never to a name again.
        let row = self.require_pane_fields(target, &["pane_id", "pane_in_mode", "pane_dead"])?;
        let pane = row[0].clone();
        if row[2] == "1" {
            // tmux would accept the keys and drop them.
            return Err(OrangeError::BackendCommandFailed(format!(
                "tmux pane {pane} ({target}) is dead: its program has exited"
            )));
        }
        if row[1] == "1" {
            let mut cancel = ti::SendKeys::new().target_pane(pane.as_str()).build();
            cancel.push_flag("-X");
            cancel.push_param("cancel");
            self.run(vec![cancel])?;
        }
        if !keys_before.is_empty() {
            let mut keys = ti::SendKeys::new().target_pane(pane.as_str()).build();
            for k in keys_before {
                keys.push_param(*k);
            }
            self.run(vec![keys])?;
            std::thread::sleep(ESCAPE_SETTLE);
        }
        let text = text.replace("\r\n", "\n");
        if text.contains(['\n', '\r']) {
            self.paste(&pane, &text)?;
        } else if !text.is_empty() {
            let mut keys = ti::SendKeys::new()
                .disable_lookup()
                .target_pane(pane.as_str())
                .build();
            keys.push_param("--");
            keys.push_param(text.as_str());
            self.run(vec![keys])?;
        }
        if !text.is_empty() {
            std::thread::sleep(submit_pause(text.len()));
        }
        self.run(vec![ti::SendKeys::new()
            .target_pane(pane.as_str())
            .key(submit)
            .build()])?;
        Ok(())
    }

    /// Paste `text` into `pane` through a private buffer: bracketed (`-p`) when the program
    /// asked for bracketed paste, newlines kept as they are (`-r`), buffer deleted (`-d`).
    fn paste(&self, pane: &str, text: &str) -> Result<()> {
        let buffer = format!(
            "orange-send-{}-{}",
            std::process::id(),
            BUFFER_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut set = ti::SetBuffer::new().buffer_name(buffer.as_str()).build();
        set.push_param("--");
        set.push_param(text);
        let paste = ti::PasteBuffer::new()
            .delete()
            .bracket_codes()
            .no_replacement()
            .buffer_name(buffer.as_str())
            .target_pane(pane)
            .build();
        let ran = self.exec(vec![set, paste])?;
        if !ran.success {
            // The paste failed after the buffer was set: do not leave the text behind. Its
            // own failure (buffer never created) changes nothing, so its status is moot.
            let _ = self.exec(vec![ti::DeleteBuffer::new()
                .buffer_name(buffer.as_str())
                .build()]);
            return Err(ran.error());
        }
        Ok(())
    }

    /// Every pane of every session, in ONE tmux call (repeated only when tmux has not
    /// collected a dead pane's exit status yet: see `nudge_reaper`). Empty when no server
    /// runs.
    pub fn snapshot(&self) -> Result<Vec<PaneInfo>> {
        let mut attempt = 0;
        loop {
            let ran = self.exec(vec![ti::ListPanes::new()
                .all()
                .format(format_of(PANE_FIELDS))
                .build()])?;
            if ran.no_server() {
                return Ok(Vec::new());
            }
            let out = ran.ok()?;
            let rows = records(&out, PANE_FIELDS.len())?;
            let panes = rows
                .iter()
                .map(|r| parse_pane(r))
                .collect::<Result<Vec<_>>>()?;
            let unreaped = panes.iter().any(|p| {
                p.pane_dead && p.pane_dead_status.is_none() && p.pane_dead_signal.is_none()
            });
            if !unreaped || attempt == REAP_RETRIES {
                return Ok(panes);
            }
            let server_pid = rows.first().map(|r| r[PANE_FIELDS.len() - 1]).unwrap_or("");
            self.nudge_reaper(server_pid);
            attempt += 1;
        }
    }

    /// Every session, in one tmux call. Empty when no server runs.
    pub fn list_sessions(&self) -> Result<Vec<SessionRow>> {
        let fields = [
            "session_id",
            "session_name",
            "session_attached",
            "session_activity",
            "session_windows",
        ];
        let out = self.list_sessions_as(&fields)?;
        records(&out, fields.len())?
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

    /// `list-sessions` with `fields` (see [`records`]); empty when no server runs.
    fn list_sessions_as(&self, fields: &[&str]) -> Result<String> {
        let ran = self.exec(vec![ti::ListSessions::new()
            .format(format_of(fields))
            .build()])?;
        if ran.no_server() {
            return Ok(String::new());
        }
        ran.ok()
    }

    /// Every session with the session options `marks` (`@orange_task`…), and the server
    /// instance that answered, in one tmux call. Empty when no server runs.
    pub fn marked_sessions(&self, marks: &[&str]) -> Result<Marked> {
        for m in marks {
            validate_word("option name", m)?;
        }
        let mut fields = vec![
            "session_id",
            "session_name",
            "pane_id",
            "socket_path",
            "pid",
            "start_time",
        ];
        fields.extend(marks.iter());
        let out = self.list_sessions_as(&fields)?;
        let rows = records(&out, fields.len())?;
        let server = match rows.first() {
            Some(r) => Some(ServerId::parse(r[3], r[4], r[5])?),
            None => None,
        };
        let sessions = rows
            .iter()
            .map(|r| MarkedSession {
                id: r[0].to_string(),
                name: r[1].to_string(),
                pane_id: r[2].to_string(),
                marks: marks
                    .iter()
                    .zip(&r[6..])
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect();
        Ok(Marked { server, sessions })
    }

    /// How the target pane's program ended: `None` while it runs. With `remain-on-exit` (set
    /// by [`Tmux::new_session`]) the dead pane stays until the session is killed.
    pub fn pane_exit(&self, target: &str) -> Result<Option<PaneExit>> {
        let mut attempt = 0;
        loop {
            let r = self.require_pane_fields(
                target,
                &["pane_dead", "pane_dead_status", "pane_dead_signal", "pid"],
            )?;
            let dead = r[0] == "1";
            let exit = pane_exit_from(
                dead,
                opt_num(&r[1], "pane_dead_status")?,
                opt_num(&r[2], "pane_dead_signal")?,
            );
            if !dead || exit.is_some() || attempt == REAP_RETRIES {
                return Ok(exit);
            }
            self.nudge_reaper(&r[3]);
            attempt += 1;
        }
    }

    /// A pane whose pty closed but whose exit status tmux never collected: tmux built with
    /// libutempter (Debian's 3.3a is) misses the SIGCHLD of a program that exits while a
    /// pane is being set up, and the program stays a zombie with `pane_dead=1` and no
    /// status, forever (tmux/tmux#311, #2679). A SIGCHLD sent to the server makes it reap
    /// every exited child. Then wait a little for the server to handle it. (A program that
    /// closed its terminal but still runs also looks like this; it stays "running".)
    fn nudge_reaper(&self, server_pid: &str) {
        if let Ok(pid) = server_pid.parse::<u32>() {
            // Best effort by design: if the signal cannot be sent, the next read retries.
            let _ = std::process::Command::new("kill")
                .args(["-s", "CHLD", &pid.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        std::thread::sleep(REAP_WAIT);
    }

    /// `set-option` and `show-options` builders aimed at `scope`.
    fn option_cmds(scope: OptionScope<'_>) -> (ti::SetOption<'static>, ti::ShowOptions<'static>) {
        let (mut s, mut g) = (ti::SetOption::new(), ti::ShowOptions::new());
        match scope {
            OptionScope::Global => {
                s = s.global();
                g = g.global();
            }
            OptionScope::Session(t) => {
                s = s.target_pane(pane_target(t));
                g = g.target_pane(pane_target(t));
            }
            OptionScope::Window(t) => {
                s = s.window().target_pane(pane_target(t));
                g = g.window().target_pane(pane_target(t));
            }
            OptionScope::Pane(t) => {
                s = s.pane().target_pane(pane_target(t));
                g = g.pane().target_pane(pane_target(t));
            }
        }
        (s, g)
    }

    /// `set-option` in `scope`. The value reaches tmux verbatim (a trailing `;` included).
    pub fn set_option(&self, scope: OptionScope<'_>, name: &str, value: &str) -> Result<()> {
        validate_word("option name", name)?;
        let (s, _) = Self::option_cmds(scope);
        self.run(vec![s
            .option(name.to_string())
            .value(value.to_string())
            .build()])?;
        Ok(())
    }

    /// The option's own value in `scope` (no inheritance from global); `None` when unset or
    /// when no server runs. A missing session is an error.
    pub fn get_option(&self, scope: OptionScope<'_>, name: &str) -> Result<Option<String>> {
        let (_, g) = Self::option_cmds(scope);
        let mut cmds = Vec::new();
        // `show-options -q` also hides a missing target: check it in the same sequence.
        if let OptionScope::Session(t) | OptionScope::Window(t) | OptionScope::Pane(t) = scope {
            cmds.push(ti::HasSession::new().target_session(pane_target(t)).build());
        }
        cmds.push(g.quiet().value().option(name.to_string()).build());
        let ran = self.exec(cmds)?;
        if ran.no_server() {
            return Ok(None);
        }
        let out = ran.ok()?;
        // `-qv` prints nothing for an unset option and "value\n" for a set one, even empty.
        if out.is_empty() {
            return Ok(None);
        }
        Ok(Some(out.strip_suffix('\n').unwrap_or(&out).to_string()))
    }

    /// Unset the option in `scope`. Idempotent: fine when it is not set, or when the
    /// session or the server is gone.
    pub fn unset_option(&self, scope: OptionScope<'_>, name: &str) -> Result<()> {
        let (s, _) = Self::option_cmds(scope);
        let ran = self.exec(vec![s.unset().option(name.to_string()).build()])?;
        if ran.success || ran.missing() {
            Ok(())
        } else {
            Err(ran.error())
        }
    }

    /// Set a variable in a session's environment (seen by panes started later).
    pub fn set_environment(&self, session: &str, key: &str, value: &str) -> Result<()> {
        validate_word("environment variable name", key)?;
        self.run(vec![ti::SetEnvironment::new()
            .target_session(session_target(session))
            .name(key.to_string())
            .value(value.to_string())
            .build()])?;
        Ok(())
    }

    /// Switch the current client (orange runs inside tmux) to the session.
    pub fn switch_client(&self, target: &str) -> Result<()> {
        self.run(vec![ti::SwitchClient::new()
            .target_session(session_target(target))
            .build()])?;
        Ok(())
    }

    /// The argv to exec outside tmux to attach to the session.
    pub fn attach_command(&self, target: &str) -> Vec<String> {
        let mut argv = vec![self.binary.to_string_lossy().into_owned()];
        argv.extend(self.server_args());
        argv.extend([
            "attach-session".to_string(),
            "-t".to_string(),
            session_target(target),
        ]);
        argv
    }

    /// Replace this process with `tmux attach-session` (outside tmux). Returns only when the
    /// exec failed, with the reason.
    pub fn attach(&self, target: &str) -> OrangeError {
        use std::os::unix::process::CommandExt;
        let argv = self.attach_command(target);
        let err = std::process::Command::new(&self.binary)
            .args(&argv[1..])
            .exec();
        if err.kind() == std::io::ErrorKind::NotFound {
            self.not_found()
        } else {
            OrangeError::io(format!("running {}", argv.join(" ")), err)
        }
    }

    /// Show `msg` on the current client's status line, literally (`#` is not a format).
    pub fn display_message(&self, msg: &str) -> Result<()> {
        let mut cmd = raw("display-message");
        cmd.push_param("--");
        cmd.push_param(crate::text::for_tmux(msg));
        self.run(vec![cmd])?;
        Ok(())
    }

    /// Which server instance answers on this socket; `None` when none runs.
    pub fn server_identity(&self) -> Result<Option<ServerId>> {
        let fields = ["socket_path", "pid", "start_time"];
        let mut cmd = raw("display-message");
        cmd.push_flag("-p");
        cmd.push_param(format_of(&fields));
        let ran = self.exec(vec![cmd])?;
        if ran.no_server() {
            return Ok(None);
        }
        let out = ran.ok()?;
        let r = records(&out, fields.len())?;
        let Some(r) = r.first() else {
            return Ok(None);
        };
        Ok(Some(ServerId::parse(r[0], r[1], r[2])?))
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

/// A name tmux takes as one plain word: not empty, no `=`, no leading `-` (a flag).
fn validate_word(what: &str, word: &str) -> Result<()> {
    if word.is_empty() || word.starts_with('-') || word.contains(['=', '\0']) {
        return Err(OrangeError::invalid(format!("invalid {what} {word:?}")));
    }
    Ok(())
}

fn validate_session_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(session_char_ok) {
        return Err(OrangeError::invalid(format!(
            "invalid tmux session name {name:?}: only [A-Za-z0-9_/-] (see tmux::session_name)"
        )));
    }
    Ok(())
}

// Operations for the tmux plugin (keys, hooks, panes, menus). Add new ones inside this block.
impl Tmux {
    // @@ plugin-additions @@

    /// `fields` (format names such as `"window_width"` or `"@orange_sidebar"`, each read as
    /// `#{field}`) of the target pane: a pane id, or the active pane of the target's current
    /// window. `None` when there is no such pane (or no server).
    pub fn pane_values(&self, target: &str, fields: &[&str]) -> Result<Option<Vec<String>>> {
        self.pane_fields(target, fields)
    }

    /// `fields` of every pane in the window of `target` (a pane or window id, or a session's
    /// current window), in one call. Empty when the target does not exist.
    pub fn window_pane_values(&self, target: &str, fields: &[&str]) -> Result<Vec<Vec<String>>> {
        let ran = self.exec(vec![ti::ListPanes::new()
            .target(pane_target(target))
            .format(format_of(fields))
            .build()])?;
        if ran.missing() {
            return Ok(Vec::new());
        }
        let out = ran.ok()?;
        Ok(records(&out, fields.len())?
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
        if command.first().is_some_and(|p| p.starts_with('-')) {
            return Err(OrangeError::invalid(format!(
                "program name {:?} starts with '-'",
                command[0]
            )));
        }
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
            split
                .push_param("/bin/sh")
                .push_param("-c")
                .push_param(format!("exec {}", shell_join(command)));
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

    /// Switch `client` (default: the current client) to the session (exact name or id).
    pub fn switch_client_of(&self, client: Option<&str>, target: &str) -> Result<()> {
        let mut b = ti::SwitchClient::new().target_session(session_target(target));
        if let Some(c) = client.filter(|c| !c.is_empty()) {
            b = b.target_client(c);
        }
        self.run(vec![b.build()])?;
        Ok(())
    }

    /// Set a variable in the server's global environment (seen by sessions, hooks and
    /// `run-shell` jobs started later).
    pub fn set_global_environment(&self, key: &str, value: &str) -> Result<()> {
        validate_word("environment variable name", key)?;
        self.run(vec![ti::SetEnvironment::new()
            .global()
            .name(key.to_string())
            .value(value.to_string())
            .build()])?;
        Ok(())
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
        w.push_option("-n", name.to_string())
            .push_param("/bin/sh")
            .push_param("-c")
            .push_param(format!("exec {}", shell_join(command)));
        self.run(vec![w])?;
        Ok(())
    }

    /// Where a new window beside `pane`'s goes: `$session:index+1` when that index is
    /// free, else `$session:` (tmux picks the first free index from `base-index`).
    fn window_slot_after(&self, pane: &str) -> Result<String> {
        let fields = ["session_id", "window_index"];
        let mut ask = raw("display-message");
        ask.push_flag("-p")
            .push_option("-t", pane_target(pane))
            .push_param(format_of(&fields));
        let out = self.run(vec![ask])?;
        let rows = records(&out, fields.len())?;
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
}

// Operations for the status widgets and hooks. Add new ones inside this block.
impl Tmux {
    // @@ status-additions @@

    /// The socket this handle talks to, as tmux would resolve it: the `-S` path, or
    /// `realpath($TMUX_TMPDIR or /tmp)/tmux-<uid>/<name or default>`. `None` when it cannot
    /// be told without asking tmux (no `/proc` to read our uid from). The file may be stale:
    /// tmux 3.3a leaves it behind after `kill-server`.
    pub fn socket_path(&self) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let name = match &self.server {
            Server::Path(p) => return Some(p.clone()),
            Server::Name(n) => n.as_str(),
            Server::Default => "default",
        };
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let dir = std::env::var_os("TMUX_TMPDIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let dir = dir.canonicalize().unwrap_or(dir);
        Some(dir.join(format!("tmux-{uid}")).join(name))
    }

    /// Everything the observer needs, in ONE tmux call (repeated only while a dead pane's
    /// exit status is not collected, like [`Tmux::snapshot`]): every pane (all of
    /// [`PaneInfo`] but `pane_current_command` and `pane_current_path`, which make the
    /// server read `/proc` for every pane), the server instance, and for each session the
    /// `extra` user options (`@orange_task`…, each read as `#{name}`: a session's value, else
    /// the global one). `server` is `None` when no server runs (a running server always has a
    /// pane).
    pub fn observe(&self, extra: &[&str]) -> Result<Observed> {
        for m in extra {
            validate_word("option name", m)?;
        }
        const FIELDS: &[&str] = &[
            "session_id",
            "session_name",
            "session_attached",
            "window_id",
            "window_index",
            "window_activity",
            "pane_id",
            "pane_index",
            "pane_active",
            "pane_pid",
            "pane_dead",
            "pane_dead_status",
            "pane_dead_signal",
            "pane_width",
            "pane_height",
            "window_active",
            "socket_path",
            "start_time",
            // The server's pid, last of ours: see `nudge_reaper`.
            "pid",
        ];
        let mut fields: Vec<&str> = FIELDS.to_vec();
        fields.extend_from_slice(extra);
        let base = FIELDS.len();
        let mut attempt = 0;
        loop {
            let ran = self.exec(vec![ti::ListPanes::new()
                .all()
                .format(format_of(&fields))
                .build()])?;
            if ran.no_server() {
                return Ok(Observed::default());
            }
            let out = ran.ok()?;
            let rows = records(&out, fields.len())?;
            let panes = rows
                .iter()
                .map(|r| {
                    Ok(PaneInfo {
                        pane_width: num(r[13], "pane_width")?,
                        pane_height: num(r[14], "pane_height")?,
                        ..parse_pane_head(r)?
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let unreaped = panes.iter().any(|p| {
                p.pane_dead && p.pane_dead_status.is_none() && p.pane_dead_signal.is_none()
            });
            if unreaped && attempt < REAP_RETRIES {
                let server_pid = rows.first().map(|r| r[base - 1]).unwrap_or("");
                self.nudge_reaper(server_pid);
                attempt += 1;
                continue;
            }
            let server = match rows.first() {
                Some(r) => Some(ServerId::parse(r[16], r[18], r[17])?),
                None => None,
            };
            // Each session once: the active pane of its current window stands for it.
            let mut sessions: Vec<MarkedSession> = Vec::new();
            for (p, r) in panes.iter().zip(&rows) {
                let front = r[15] == "1" && p.pane_active;
                let row = MarkedSession {
                    id: p.session_id.clone(),
                    name: p.session_name.clone(),
                    pane_id: p.pane_id.clone(),
                    marks: extra
                        .iter()
                        .zip(&r[base..])
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                };
                match sessions.iter_mut().find(|s| s.id == p.session_id) {
                    Some(s) if front => *s = row,
                    Some(_) => {}
                    None => sessions.push(row),
                }
            }
            return Ok(Observed {
                server,
                panes,
                sessions,
            });
        }
    }

    /// Set (`Some(value)`) or unset (`None`) several options in ONE tmux call. tmux stops a
    /// command sequence at the first failure (a session closed meanwhile), so after a
    /// failure the changes are applied one by one, a missing session skipped. Nothing to do
    /// when no server runs.
    pub fn set_options(&self, changes: &[(OptionScope<'_>, &str, Option<&str>)]) -> Result<()> {
        for (_, name, _) in changes {
            validate_word("option name", name)?;
        }
        let build = |(scope, name, value): &(OptionScope<'_>, &str, Option<&str>)| {
            let (s, _) = Self::option_cmds(*scope);
            match value {
                Some(v) => s.option(name.to_string()).value(v.to_string()).build(),
                None => s.unset().option(name.to_string()).build(),
            }
        };
        if changes.is_empty() {
            return Ok(());
        }
        let ran = self.exec(changes.iter().map(build).collect())?;
        if ran.success || ran.no_server() {
            return Ok(());
        }
        let mut first_error = None;
        for change in changes {
            let ran = self.exec(vec![build(change)])?;
            if !ran.success && !ran.missing() && first_error.is_none() {
                first_error = Some(ran.error());
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

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

// Operations for the agent monitor. Add new ones inside this block.
impl Tmux {
    /// Every client attached to this server (none when no server runs), in ONE call.
    pub fn clients(&self) -> Result<Vec<ClientInfo>> {
        let fields = [
            "client_name",
            "client_tty",
            "client_session",
            "session_id",
            "pane_id",
            "client_control_mode",
        ];
        let mut cmd = raw("list-clients");
        cmd.push_option("-F", format_of(&fields));
        let ran = self.exec(vec![cmd])?;
        if ran.no_server() {
            return Ok(vec![]);
        }
        let out = ran.ok()?;
        Ok(records(&out, fields.len())?
            .into_iter()
            .map(|r| ClientInfo {
                name: r[0].to_string(),
                tty: r[1].to_string(),
                session: r[2].to_string(),
                session_id: r[3].to_string(),
                pane_id: r[4].to_string(),
                control: r[5] == "1",
            })
            .collect())
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

    /// Ring the bell in a pane's window: a BEL written to the pane's terminal, as if its
    /// program had printed it (tmux flags the window and alerts per the user's settings).
    pub fn ring_bell(&self, target: &str) -> Result<()> {
        let out = self.run(vec![ti::DisplayMessage::new()
            .print()
            .target_pane(pane_target(target))
            .message("#{pane_tty}")
            .build()])?;
        let tty = out.trim();
        if tty.is_empty() {
            return Err(OrangeError::BackendCommandFailed(format!(
                "no terminal for pane {target}"
            )));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(tty)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"\x07"))
            .map_err(|e| OrangeError::io(format!("ringing the bell on {tty}"), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_sanitized() {
        assert_eq!(session_name("my.app", "fix:1"), "my_app/fix_1");
        assert_eq!(session_name("p", "feat/x-1_2"), "p/feat/x-1_2");
        assert_eq!(session_name("p", "a b;c$é"), "p/a_b_c__");
    }

    #[test]
    fn targets_are_exact() {
        assert_eq!(session_target("p/feat"), "=p/feat");
        assert_eq!(session_target("$3"), "$3");
        assert_eq!(pane_target("p/feat"), "=p/feat:");
        assert_eq!(pane_target("$3"), "$3:");
        assert_eq!(pane_target("%7"), "%7");
        assert_eq!(pane_target("@2"), "@2");
    }

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

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("plain-word_1.txt"), "plain-word_1.txt");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a;"), "'a;'");
        assert_eq!(shell_join(&["a b", "c"]), "'a b' c");
    }

    #[test]
    fn server_from_env_values() {
        assert_eq!(
            Tmux::server_from(Some("orange"), Some("/tmp/x,1,0")),
            Server::Name("orange".into())
        );
        assert_eq!(
            Tmux::server_from(Some("/run/orange.sock"), None),
            Server::Path("/run/orange.sock".into())
        );
        assert_eq!(
            Tmux::server_from(None, Some("/tmp/tmux-0/default,123,0")),
            Server::Path("/tmp/tmux-0/default".into())
        );
        assert_eq!(
            Tmux::server_from(Some(""), Some("/tmp/tmux-0/default,123,0")),
            Server::Path("/tmp/tmux-0/default".into())
        );
        assert_eq!(Tmux::server_from(None, None), Server::Default);
        assert_eq!(Tmux::server_from(None, Some("")), Server::Default);
    }

    #[test]
    fn dead_without_status_is_not_an_exit_yet() {
        assert_eq!(pane_exit_from(false, None, None), None);
        assert_eq!(pane_exit_from(true, None, None), None);
        assert_eq!(
            pane_exit_from(true, Some(3), None),
            Some(PaneExit::Status(3))
        );
        assert_eq!(
            pane_exit_from(true, None, Some(9)),
            Some(PaneExit::Signal(9))
        );
    }

    #[test]
    fn records_split_on_separators() {
        let out = format!("a{FS}b{RS}\nc{FS}d\ne{RS}\n");
        let rows = records(&out, 2).unwrap();
        assert_eq!(rows, vec![vec!["a", "b"], vec!["c", "d\ne"]]);
        assert!(records(&format!("a{RS}\n"), 2).is_err());
    }
}
