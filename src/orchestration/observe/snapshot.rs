//! The snapshot: what one observation saw of tmux (panes, sessions and their marks and
//! options, the server) and, from it and the files, the summary of every open task and
//! lane; kept in one file per tmux server (`run/snapshot-<socket>.json`). How it is taken
//! ([`look`], [`summarize`], [`take`]) and read ([`current`], [`fresh`]): see the
//! [module documentation](super).
//!
//! # When a snapshot is fresh
//! - it was taken for the same tmux server (socket), and that server still runs (its pid,
//!   checked in `/proc` without a fork);
//! - nothing was poked since it was taken (every task and lane record change pokes; the
//!   count of pokes is exact where file times are too coarse);
//! - every program it saw live in an open task's or lane's session still runs (not gone,
//!   not a zombie): an agent that dies without any hook is noticed;
//! - it is younger than [`MAX_AGE`] (a safety net for what the checks cannot see, such as
//!   a session renamed by hand).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{Marked, MarkedSession, Observed, PaneInfo, ServerId, Tmux};
use crate::error::{OrangeError, Result};
use crate::execution::session::MARKS;
use crate::orchestration::task::Task;

use crate::orchestration::attention::next;
use crate::orchestration::attention::summary::{self, Agents, Summary};

/// The global user option the status widget publishes (`#{@orange_summary}`).
pub const SUMMARY_OPTION: &str = "@orange_summary";
/// The per-session user option the status widget publishes (`#{@orange_status}`).
pub const SESSION_OPTION: &str = "@orange_status";
/// The host of a remote task's local session (`task attach`): its picker label says when
/// that host cannot be reached.
pub const REMOTE_MARK: &str = "@orange_remote";

/// The user option that says how orange notifies (`bell,message` when unset): read in the
/// observation's one call (once, as a global option), so a pass pays nothing more to know it.
pub const NOTIFY_OPTION: &str = "@orange-notify";

/// The plugin's key options the sidebar's footer names (read in the same call).
pub const KEY_OPTIONS: [&str; 4] = [
    "@orange-sidebar-key",
    "@orange-zoom-key",
    "@orange-key",
    "@orange_bound_keys",
];

/// A snapshot is not trusted past this age.
pub const MAX_AGE: Duration = Duration::from_secs(60);

const VERSION: u32 = 3;

/// What one observation saw: tmux (panes, sessions and their marks and options, the
/// server) and, from it and the files, the classification of every open task and lane.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub version: u32,
    /// The socket it was taken on (see [`server_key`]).
    pub server: String,
    /// The server instance that answered; `None` when no server ran.
    pub server_id: Option<ServerId>,
    /// Before the tmux call (ms since the epoch).
    pub taken_at_ms: u64,
    /// The count of pokes ([`store::pokes`]) before the tmux call.
    pub pokes: u64,
    pub panes: Vec<PaneInfo>,
    /// Each session once, with orange's marks, `@orange_status` and `@orange_remote`.
    pub sessions: Vec<MarkedSession>,
    /// The global options read with it: `@orange_summary`, `@orange-notify` and
    /// [`KEY_OPTIONS`], `(name, value)` (empty when unset).
    #[serde(default)]
    pub options: Vec<(String, String)>,
    pub summary: Summary,
}

impl Snapshot {
    /// `@orange_status` as the session holds it (empty when unset).
    pub fn session_value(&self, session_id: &str) -> &str {
        self.sessions
            .iter()
            .find(|s| s.id == session_id)
            .and_then(|s| s.mark(SESSION_OPTION))
            .unwrap_or("")
    }

    /// `@orange_summary` as the server holds it (empty when unset).
    pub fn summary_value(&self) -> &str {
        self.option(SUMMARY_OPTION).unwrap_or("")
    }

    /// `@orange-notify` as the server holds it (`None` when unset).
    pub fn notify_value(&self) -> Option<&str> {
        self.option(NOTIFY_OPTION)
    }

    /// A global user option read with the observation (one of [`KEY_OPTIONS`], the notify
    /// option, the summary); `None` when unset or empty.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// The keys of the plugin's key table as bound on this server, for a next step to
    /// name ([`next::Keys`]).
    pub fn step_keys(&self) -> next::Keys {
        next::Keys::from_options(self.option(KEY_OPTIONS[2]), self.option(KEY_OPTIONS[3]))
    }

    /// Says all that `other` says: everything but the time it was taken.
    pub fn same_as(&self, other: &Snapshot) -> bool {
        let Snapshot {
            version,
            server,
            server_id,
            taken_at_ms: _,
            pokes,
            panes,
            sessions,
            options,
            summary,
        } = self;
        *version == other.version
            && *pokes == other.pokes
            && *server == other.server
            && *server_id == other.server_id
            && *panes == other.panes
            && *sessions == other.sessions
            && *options == other.options
            && *summary == other.summary
    }

    /// Says all that the status widgets are made from as `other` does: the summary, the
    /// sessions (their marks and `@orange_status`), the global options and which session
    /// each pane is in.
    pub fn same_for_widgets(&self, other: &Snapshot) -> bool {
        self.server_id == other.server_id
            && self.summary == other.summary
            && self.sessions == other.sessions
            && self.options == other.options
            && self.panes.len() == other.panes.len()
            && self
                .panes
                .iter()
                .zip(&other.panes)
                .all(|(a, b)| a.session_id == b.session_id && a.session_name == b.session_name)
    }

    /// The sessions and their marks (what a reconciliation works on).
    pub fn marked(&self) -> Marked {
        Marked {
            server: self.server_id.clone(),
            sessions: self.sessions.clone(),
        }
    }
}

pub fn now_ms() -> u64 {
    ms_of(SystemTime::now())
}

fn ms_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Which server a snapshot describes: its socket, so that `-L name`, `$TMUX` and the
/// default server agree when they are the same one.
pub fn server_key(tmux: &Tmux) -> String {
    match tmux.socket_path() {
        Some(p) => p.to_string_lossy().into_owned(),
        None => format!("{:?}", tmux.server()),
    }
}

/// The marks of the sessions a monitor has looked at, by session id, on one server
/// instance. Orange sets a session's marks (its task or lane, home, project, workspace,
/// remote host) in the command that creates it and never changes them after, and tmux
/// never gives a session id twice: a look that keeps them ([`look_keeping`]) asks tmux for
/// a session's marks once. `@orange_status` is no mark: every look reads it.
#[derive(Debug, Default)]
pub struct SeenMarks {
    server: Option<ServerId>,
    by_session: HashMap<String, Vec<(String, String)>>,
}

/// The marks a session keeps for life (see [`SeenMarks`]).
fn lasting_marks() -> Vec<&'static str> {
    let mut marks = MARKS.to_vec();
    marks.push(REMOTE_MARK);
    marks
}

/// Look at tmux: ONE call (none when tmux is missing or its socket does not exist). The
/// summary is left empty: [`summarize`] fills it.
pub fn look(home: &Home, tmux: &Tmux) -> Result<Snapshot> {
    look_keeping(home, tmux, &mut SeenMarks::default())
}

/// [`look`], the sessions' marks kept in `seen` from one look to the next: each pane, each
/// session's `@orange_status` and the global options in ONE call, which asks the sessions'
/// marks too while `seen` knows none; after that, a session not seen before has its marks
/// asked in a second call (a look that sees no new session makes one). Each mark is a
/// field tmux works out for every pane of every session: asked once, not every pass.
pub fn look_keeping(home: &Home, tmux: &Tmux, seen: &mut SeenMarks) -> Result<Snapshot> {
    let mut snap = Snapshot {
        version: VERSION,
        server: server_key(tmux),
        pokes: store::pokes(home),
        taken_at_ms: now_ms(),
        ..Snapshot::default()
    };
    // No socket file, no server: not even a failed connection to pay for.
    if !tmux.is_available() || tmux.socket_path().is_some_and(|p| !p.exists()) {
        return Ok(snap);
    }
    let lasting = lasting_marks();
    let all = seen.by_session.is_empty();
    let mut marks: Vec<&str> = if all { lasting.clone() } else { Vec::new() };
    marks.push(SESSION_OPTION);
    let mut globals = vec![SUMMARY_OPTION, NOTIFY_OPTION];
    // The keys the sidebar's footer names, as bound now (no call of the sidebar's own).
    globals.extend(KEY_OPTIONS);
    let Observed {
        server,
        panes,
        mut sessions,
        options,
    } = match tmux.observe(&marks, &globals) {
        Ok(o) => o,
        Err(OrangeError::BackendNotFound(_)) => Observed::default(),
        Err(e) => return Err(e),
    };
    if server != seen.server {
        seen.by_session.clear();
        seen.server = server.clone();
    }
    let status = |s: &mut MarkedSession| {
        let at = s.marks.iter().position(|(k, _)| k == SESSION_OPTION);
        at.map(|i| s.marks.remove(i))
    };
    if all
        || sessions
            .iter()
            .any(|s| !seen.by_session.contains_key(&s.id))
    {
        let mut known: Vec<MarkedSession> = if all {
            sessions.clone()
        } else {
            // New sessions: every session's marks, in one more call (errors: the next
            // look asks again).
            tmux.marked_sessions(&lasting)
                .map(|m| m.sessions)
                .unwrap_or_default()
        };
        for s in &mut known {
            status(s);
            seen.by_session
                .insert(s.id.clone(), std::mem::take(&mut s.marks));
        }
    }
    let here: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    seen.by_session.retain(|id, _| here.contains(id.as_str()));
    // Each session: its marks, then `@orange_status`.
    for s in &mut sessions {
        let now = status(s);
        s.marks = seen.by_session.get(&s.id).cloned().unwrap_or_default();
        s.marks.extend(now);
    }
    snap.server_id = server;
    snap.panes = panes;
    snap.sessions = sessions;
    snap.options = options;
    Ok(snap)
}

/// Classify every open task and lane on what the snapshot saw (files only), remote hosts
/// merged in.
pub fn summarize(home: &Home, snap: &mut Snapshot) {
    snap.summary = summary::read(home, &snap.panes);
    crate::orchestration::host::merge(home, &mut snap.summary);
}

/// [`summarize`] with the open tasks (and, for some, their agent state) already read.
pub fn summarize_tasks(
    home: &Home,
    snap: &mut Snapshot,
    tasks: &[Task],
    unreadable: u32,
    agents: &Agents,
) {
    snap.summary = summary::of_tasks(home, tasks, unreadable, &snap.panes, agents);
    crate::orchestration::host::merge(home, &mut snap.summary);
}

/// Take a whole snapshot: [`look`] and [`summarize`] (what a reader does when no monitor
/// renews the snapshot file).
pub fn take(home: &Home, tmux: &Tmux) -> Result<Snapshot> {
    let mut snap = look(home, tmux)?;
    summarize(home, &mut snap);
    Ok(snap)
}

/// `run/snapshot-<socket>.json`.
pub fn path(home: &Home, tmux: &Tmux) -> PathBuf {
    home.run_dir()
        .join(format!("snapshot-{}.json", file_key(&server_key(tmux))))
}

/// A socket path as one file-name word.
pub fn file_key(socket: &str) -> String {
    socket
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Replace the snapshot file (derived data: no fsync; a lost one is observed again).
pub fn write(home: &Home, tmux: &Tmux, snap: &Snapshot) {
    if let Ok(data) = serde_json::to_vec(snap) {
        let _ = store::write_cache(&path(home, tmux), &data);
    }
}

/// The snapshot file as it is, fresh or not.
pub fn read(home: &Home, tmux: &Tmux) -> Option<Snapshot> {
    let mut buf = Vec::with_capacity(16 * 1024);
    store::read_small(&path(home, tmux), &mut buf).ok()?;
    serde_json::from_slice::<Snapshot>(&buf)
        .ok()
        .filter(|s| s.version == VERSION)
}

/// Is the process running, neither gone nor a zombie? One `readlink` of `/proc/<pid>/exe`
/// (a zombie has no executable left); `None` when this system has no `/proc`. A zombie
/// agent matters: Debian's tmux sometimes never reaps a pane's program, and then never
/// runs `pane-died` either; the observation this check triggers nudges tmux's reaper (see
/// `Tmux::snapshot`), after which tmux records the exit and runs its hooks.
pub fn pid_running(pid: u32) -> Option<bool> {
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(_) => Some(true),
        // Another user's process: it exists, whatever its state.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(true),
        Err(_) if Path::new("/proc/self/exe").exists() => Some(false),
        Err(_) => None,
    }
}

/// Does the snapshot still describe tmux and the files (see the module documentation)?
/// A few `stat`s and `readlink`s, no process.
pub fn is_fresh(home: &Home, tmux: &Tmux, snap: &Snapshot) -> bool {
    let now = now_ms();
    if snap.server != server_key(tmux)
        || now < snap.taken_at_ms
        || now - snap.taken_at_ms > MAX_AGE.as_millis() as u64
        || store::pokes(home) != snap.pokes
    {
        return false;
    }
    match &snap.server_id {
        Some(id) if pid_running(id.pid) == Some(false) => return false,
        // It saw no server: one may have started since (its socket tells).
        None if tmux.socket_path().is_some_and(|p| p.exists()) => return false,
        _ => {}
    }
    let watched: HashSet<&str> = snap
        .summary
        .items
        .iter()
        .filter_map(|i| i.session_id.as_deref())
        .collect();
    snap.panes
        .iter()
        .filter(|p| !p.pane_dead && watched.contains(p.session_id.as_str()))
        .all(|p| pid_running(p.pane_pid) != Some(false))
}

/// The snapshot file if it is fresh.
pub fn fresh(home: &Home, tmux: &Tmux) -> Option<Snapshot> {
    read(home, tmux).filter(|s| is_fresh(home, tmux, s))
}

/// What readers use: the fresh snapshot (no process), else a new observation (one tmux
/// call), written for the next reader.
pub fn current(home: &Home, tmux: &Tmux) -> Result<Snapshot> {
    if let Some(s) = fresh(home, tmux) {
        return Ok(s);
    }
    let snap = take(home, tmux)?;
    write(home, tmux, &snap);
    Ok(snap)
}

/// Does a monitor watch this tmux server now? Its lock (`run/monitor-<socket>-…lock`, see
/// `monitor::run::singleton`) is held. No process: a directory read and a try-lock.
pub fn monitor_running(home: &Home, tmux: &Tmux) -> bool {
    let prefix = format!("monitor-{}-", file_key(&server_key(tmux)));
    let Ok(dir) = std::fs::read_dir(home.run_dir()) else {
        return false;
    };
    dir.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with(&prefix) && name.ends_with(".lock") && store::is_locked(&e.path())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // the test runs a process on purpose
    fn pid_check_tells_running_from_gone_and_zombie() {
        if !Path::new("/proc/self/exe").exists() {
            return;
        }
        assert_eq!(pid_running(std::process::id()), Some(true));
        assert_eq!(pid_running(u32::MAX - 1), Some(false));
        // An exited child not reaped yet is a zombie.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let zombie = child.id();
        let start = std::time::Instant::now();
        while pid_running(zombie) == Some(true) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            Path::new(&format!("/proc/{zombie}")).exists(),
            "not reaped yet"
        );
        assert_eq!(pid_running(zombie), Some(false));
        child.wait().unwrap();
    }

    #[test]
    fn socket_paths_become_one_file_name_word() {
        assert_eq!(file_key("/tmp/tmux-1000/default"), "_tmp_tmux-1000_default");
    }
}
