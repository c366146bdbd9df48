//! Crash leftovers, repaired. A command killed at any point (SIGKILL, a closed terminal)
//! leaves state the next command can use:
//!
//! - Every session orange starts carries marks: its task (or lane), project, workspace and
//!   `ORANGE_HOME`, set in the same tmux command that creates the session, so no session
//!   exists without them.
//! - Each intent is on disk before its side effect: a workspace is bound to the task before
//!   the session starts; a task is recorded cancelled or done before its session is killed
//!   and its workspace released.
//! - [`reconcile`] runs first in every mutating command and every monitor pass, under each
//!   project's task lock (so never in the middle of another command's spawn or cancel):
//!   a session whose task is active is adopted (the record points to it); one whose record
//!   is missing or ended is stopped, and the workspace it held released; a workspace bound
//!   to a task that holds nothing (pending, failed, done, cancelled) is released (kept,
//!   as always, when it has uncommitted work); a lane left `creating` by a dead creator
//!   becomes `running` or `error`. Each repair is logged (`orange.log`) and, for a task,
//!   in its history.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{Marked, MarkedSession, ServerId, Tmux};
use crate::error::{OrangeError, Result};
use crate::execution::pool::{self, PoolFile};
use crate::orchestration::project;
use crate::orchestration::task::{self, Status, Task, TaskStore};

use crate::execution::session::{
    home_key, HOME_MARK, LANE_MARK, MARKS, PROJECT_MARK, TASK_MARK, WORKSPACE_MARK,
};

/// Workspace name → the session of this ORANGE_HOME's agent that runs in it.
pub fn agent_workspaces(home: &Home, tmux: &Tmux) -> Result<HashMap<String, String>> {
    let root = home_key(home);
    Ok(tmux
        .marked_sessions(MARKS)
        .or_else(|e| match e {
            OrangeError::BackendNotFound(_) => Ok(Marked::default()),
            e => Err(e),
        })?
        .sessions
        .into_iter()
        .filter(|s| s.mark(HOME_MARK) == Some(root.as_str()))
        .filter_map(|s| Some((s.mark(WORKSPACE_MARK)?.to_string(), s.name.clone())))
        .collect())
}

pub use crate::orchestration::repair::Repair;

/// Repair what crashed commands left behind (see the module documentation). No tmux
/// server (or no tmux at all): only the workspaces and lanes are looked at. `thorough`
/// (the monitor's passes): also look again at workspaces cancel kept for their
/// uncommitted work, and release those that are clean by now (a `git status` each, too
/// slow for every command).
pub fn reconcile(home: &Home, tmux: &Tmux, thorough: bool) -> Result<Vec<Repair>> {
    if !home.root.exists() {
        return Ok(vec![]);
    }
    let marked = match tmux.marked_sessions(MARKS) {
        Ok(m) => m,
        Err(OrangeError::BackendNotFound(_)) => Marked::default(),
        Err(e) => return Err(e),
    };
    reconcile_seen(home, tmux, marked, thorough, &Known::default())
}

/// What the caller of [`reconcile_seen`] has already read (the monitor's pass reads them
/// anyway), so the repair reads none of it again.
#[derive(Default)]
pub struct Known<'a> {
    /// The open tasks by `(project, id)`, as they were when the count of pokes was
    /// `pokes`. A workspace bound to an active one is its own. Under a project's lock,
    /// while the count has not moved since, they are the task files (every save of a task
    /// pokes, under that lock).
    tasks: HashMap<(&'a str, &'a str), &'a Task>,
    pokes: Option<u64>,
    /// The pool file (read when `None`).
    pool: Option<&'a PoolFile>,
}

impl<'a> Known<'a> {
    /// The open tasks as read when the count of pokes was `pokes`, and the pool file.
    pub fn new(tasks: &'a [Task], pokes: u64, pool: &'a PoolFile) -> Known<'a> {
        Known {
            tasks: tasks
                .iter()
                .map(|t| ((t.project.as_str(), t.id.as_str()), t))
                .collect(),
            pokes: Some(pokes),
            pool: Some(pool),
        }
    }

    /// Are the caller's copies still the task files? Asked under a project's lock (no
    /// command saves its tasks meanwhile; a repair of this one may: ask again after it).
    fn trusted(&self, home: &Home) -> bool {
        self.pokes.is_some_and(|p| p == store::pokes(home))
    }

    /// The task `project`/`id` (its project's lock held): the caller's copy when
    /// `trusted` ([`Known::trusted`]), else its file.
    fn task(
        &self,
        store: &TaskStore,
        trusted: bool,
        project: &str,
        id: &str,
    ) -> Result<Cow<'a, Task>> {
        let copy = match trusted {
            true => self.tasks.get(&(project, id)).copied(),
            false => None,
        };
        match copy {
            Some(t) => Ok(Cow::Borrowed(t)),
            None => store.load(project, id).map(Cow::Owned),
        }
    }

    /// `(project, id)` of a task the caller read as active.
    fn active(&self, project: &str, id: &str) -> bool {
        self.tasks
            .get(&(project, id))
            .is_some_and(|t| t.status.is_active())
    }
}

/// [`reconcile`] on sessions already listed (the observer's one tmux call lists them with
/// their marks; tmux is asked again only to confirm a session before acting on it), with
/// what the caller already read ([`Known`]).
pub fn reconcile_seen(
    home: &Home,
    tmux: &Tmux,
    marked: Marked,
    thorough: bool,
    known: &Known<'_>,
) -> Result<Vec<Repair>> {
    if !home.root.exists() {
        return Ok(vec![]);
    }
    let read;
    let pool = match known.pool {
        Some(p) => p,
        None => {
            read = pool::load(home)?;
            &read
        }
    };
    let Marked { server, sessions } = marked;
    let root = home_key(home);
    let ours: Vec<&MarkedSession> = sessions
        .iter()
        .filter(|s| s.mark(HOME_MARK) == Some(root.as_str()))
        .collect();
    let mut repairs = vec![];
    let store = TaskStore::new(home);
    let mut projects: BTreeSet<String> = ours
        .iter()
        .filter(|s| s.mark(TASK_MARK).is_some())
        .filter_map(|s| s.mark(PROJECT_MARK).map(str::to_string))
        .collect();
    projects.extend(
        pool.workspaces
            .values()
            .filter(|s| s.task.is_some())
            .map(|s| s.project.clone()),
    );
    for name in projects {
        // Busy: the command holding it is alive and finishes its own work (a crashed
        // one holds no lock). Never wait: `task list` must not stall behind a merge.
        let Some(_lock) = store.try_lock(&name)? else {
            continue;
        };
        let mut on = Project {
            name: &name,
            known,
            trusted: known.trusted(home),
        };
        let mine: Vec<&MarkedSession> = ours
            .iter()
            .copied()
            .filter(|s| s.mark(PROJECT_MARK) == Some(name.as_str()))
            .collect();
        for s in &mine {
            if let Some(id) = s.mark(TASK_MARK) {
                let seen = Seen {
                    session: s,
                    server: server.as_ref(),
                };
                let repair = task_session(home, tmux, &store, &on, id, &seen)?;
                // A repair may have saved a task: the copies are checked again.
                if repair.is_some() {
                    on.trusted = known.trusted(home);
                }
                repairs.extend(repair);
            }
        }
        repairs.extend(bindings(home, &store, &mut on, pool, thorough)?);
    }
    let lanes: Vec<&MarkedSession> = ours
        .iter()
        .copied()
        .filter(|s| s.mark(LANE_MARK).is_some())
        .collect();
    repairs.extend(crate::orchestration::lane::Lanes::new(home).reconcile(tmux, &lanes)?);
    for r in &repairs {
        store::log(home, "warn", "reconciled", json!({"repair": r}));
    }
    Ok(repairs)
}

/// The project being repaired (its lock held), what the caller already read, and whether
/// its copies are still the task files ([`Known::trusted`]).
struct Project<'a> {
    name: &'a str,
    known: &'a Known<'a>,
    trusted: bool,
}

/// A session as one reconciliation saw it.
struct Seen<'a> {
    session: &'a MarkedSession,
    server: Option<&'a ServerId>,
}

/// One task session (the project's lock held).
fn task_session(
    home: &Home,
    tmux: &Tmux,
    store: &TaskStore,
    project: &Project<'_>,
    id: &str,
    on: &Seen<'_>,
) -> Result<Option<Repair>> {
    let one = OneSession {
        home,
        tmux,
        store,
        project: project.name,
        id,
        on,
    };
    let s = on.session;
    let t = match project.known.task(store, project.trusted, project.name, id) {
        Ok(t) => t,
        Err(OrangeError::TaskNotFound(_)) => {
            return one.stop(format!("its task {id} no longer exists"), true);
        }
        // Unreadable: never act on a guess.
        Err(_) => return Ok(None),
    };
    if t.tmux_session_id.as_deref() == Some(s.id.as_str()) {
        // The record points to it: nothing to repair (an ended task's is stopped below).
        if t.status.is_active() {
            return Ok(None);
        }
    } else if t.status.is_active() || t.status == Status::Pending {
        // The list was read before the lock: look again before acting on it.
        if !tmux.has_session(&s.id)? {
            return Ok(None);
        }
    }
    match t.status {
        st if st.is_active() => one.adopt_active(t.into_owned()),
        Status::Pending => one.adopt_pending(t.into_owned()),
        st => {
            let r = one.stop(format!("its task {id} is {st}"), !t.workspace_kept)?;
            store.append_history(
                &t,
                "agent.stopped",
                json!({"tmux_session": s.name, "reason": format!("the task is {st}")}),
            )?;
            Ok(r)
        }
    }
}

/// What repairing one task session works with.
struct OneSession<'a> {
    home: &'a Home,
    tmux: &'a Tmux,
    store: &'a TaskStore,
    project: &'a str,
    id: &'a str,
    on: &'a Seen<'a>,
}

impl OneSession<'_> {
    /// Stop the session; `release`: give back the workspace it was started in (never for
    /// an active task's: its own agent works there).
    fn stop(&self, reason: String, release: bool) -> Result<Option<Repair>> {
        let s = self.on.session;
        self.tmux.kill_session(&s.id)?;
        let mut freed_in = None;
        if let (true, Some(ws), Ok(p)) = (
            release,
            s.mark(WORKSPACE_MARK),
            project::get(self.home, self.project),
        ) {
            if release_quietly(self.home, &p, ws, self.id) {
                freed_in = Some(self.project.to_string());
            }
        }
        Ok(Some(Repair {
            action: "stopped",
            target: format!("session {}", s.name),
            reason,
            freed_in,
        }))
    }

    /// The task's record points to this session.
    fn adopt(&self, t: &mut task::Task) {
        let s = self.on.session;
        t.tmux_session = Some(s.name.clone());
        t.tmux_session_id = Some(s.id.clone());
        t.tmux_pane_id = Some(s.pane_id.clone());
        t.tmux_server = self.on.server.cloned();
    }

    /// An active task's session its record does not point to: a respawn interrupted
    /// before it was recorded (adopted), or a second one (stopped).
    fn adopt_active(&self, mut t: task::Task) -> Result<Option<Repair>> {
        let (s, id) = (self.on.session, self.id);
        let recorded_lives = match t.tmux_session_id.as_deref() {
            Some(r) => self.tmux.has_session(r)?,
            None => false,
        };
        if recorded_lives {
            return self.stop(
                format!(
                    "a second session of task {id} (its own is {})",
                    t.tmux_session.as_deref().unwrap_or("?")
                ),
                false,
            );
        }
        self.adopt(&mut t);
        t.updated_at = store::now_rfc3339();
        self.store.save(&t)?;
        self.store.append_history(&t, "agent.adopted", json!({"tmux_session": s.name, "reason": "its record was not saved (a command was interrupted)"}))?;
        Ok(Some(Repair {
            action: "adopted",
            target: format!("session {}", s.name),
            reason: format!("task {id}'s agent (a respawn was interrupted before it was recorded)"),
            freed_in: None,
        }))
    }

    /// A pending task's session: a spawn interrupted before it was recorded (adopted when
    /// the task holds the session's workspace; else stopped).
    fn adopt_pending(&self, mut t: task::Task) -> Result<Option<Repair>> {
        let (s, id) = (self.on.session, self.id);
        let ws = s.mark(WORKSPACE_MARK).unwrap_or_default();
        let held = pool::bindings(self.home, self.project)?
            .iter()
            .any(|(n, l)| n == ws && l == id);
        if !held {
            return self.stop(
                format!("task {id} is pending and holds no workspace"),
                false,
            );
        }
        self.adopt(&mut t);
        t.workspace = Some(ws.to_string());
        t.status = Status::Working;
        t.failure = None;
        t.updated_at = store::now_rfc3339();
        self.store.save(&t)?;
        self.store.append_history(&t, "agent.adopted", json!({"tmux_session": s.name, "workspace": ws, "reason": "its spawn was interrupted before it was recorded"}))?;
        self.store.append_history(
            &t,
            "status.changed",
            json!({"from": Status::Pending, "to": Status::Working, "via": "reconcile"}),
        )?;
        Ok(Some(Repair {
            action: "adopted",
            target: format!("session {}", s.name),
            reason: format!("task {id} (its spawn was interrupted before it was recorded)"),
            freed_in: None,
        }))
    }
}

/// Workspaces bound to tasks of `project` that hold nothing (the project's lock held), as
/// `pool` (read before the lock) binds them: a binding made since is an active task's, one
/// undone since is not released twice ([`pool::release_held_by`] checks under the pool's
/// lock).
fn bindings(
    home: &Home,
    store: &TaskStore,
    on: &mut Project<'_>,
    pool: &PoolFile,
    thorough: bool,
) -> Result<Vec<Repair>> {
    let project = on.name;
    let mut repairs = vec![];
    for (ws, label) in pool::bindings_in(pool, project) {
        if on.known.active(project, &label) {
            continue;
        }
        // A label that is no task is an outside tool's binding (`workspace gc` judges it).
        let Ok(t) = on.known.task(store, on.trusted, project, &label) else {
            continue;
        };
        let mut t = t.into_owned();
        // Active: its own. Kept by cancel for its uncommitted work: on purpose (looked at
        // again only by the thorough pass).
        let kept = t.workspace_kept && t.workspace.as_deref() == Some(ws.as_str());
        if t.status.is_active() || (kept && !thorough) {
            continue;
        }
        let Ok(p) = project::get(home, project) else {
            continue;
        };
        if release_quietly(home, &p, &ws, &label) {
            if t.workspace.as_deref() == Some(ws.as_str()) {
                t.workspace = None;
                store.save(&t)?;
                on.trusted = false;
            }
            store.append_history(
                &t,
                "workspace.released",
                json!({"workspace": ws, "reason": format!("the task is {}", t.status)}),
            )?;
            repairs.push(Repair {
                action: "released",
                target: format!("workspace {ws}"),
                reason: format!("its task {label} is {} and holds no workspace", t.status),
                freed_in: Some(project.to_string()),
            });
        }
    }
    Ok(repairs)
}

/// Release `ws` if it is still bound to `label`; kept (false) when it has uncommitted work
/// (a cancelled task keeps such a workspace on purpose) or cannot be released now.
fn release_quietly(home: &Home, project: &project::Project, ws: &str, label: &str) -> bool {
    if let Ok(w) = pool::find(home, ws) {
        if w.path.exists() && !matches!(pool::unsaved_work(home, ws, &w.path, "HEAD"), Ok(None)) {
            return false;
        }
    }
    match pool::release_held_by(home, project, ws, label, false) {
        Ok(Some(_)) => true,
        Ok(None) => false,
        Err(e) => {
            store::log(
                home,
                "warn",
                "reconcile: workspace kept",
                json!({"workspace": ws, "task": label, "error": e.to_string()}),
            );
            false
        }
    }
}
