//! Lanes (seed 001): one dedicated worktree on `lane/<id>` and one multiplexer session
//! (tmux or zellij) per autonomous run, with a minimal create/list/status/close/gc API.
//! The registry is `lanes/registry.json`, changed only under `lanes/.registry.lock`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{new_uuid, Harness, Start};
use crate::execution::launch::{self, Launch, Owner, Workspace};
use crate::execution::sandbox;
use crate::execution::session::{Liveness, Mux};
use crate::orchestration::project::Project;
use crate::{adapters::git, orchestration::task};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaneState {
    Creating,
    Running,
    Finished,
    Error,
    Closed,
}

impl LaneState {
    pub fn as_str(self) -> &'static str {
        match self {
            LaneState::Creating => "creating",
            LaneState::Running => "running",
            LaneState::Finished => "finished",
            LaneState::Error => "error",
            LaneState::Closed => "closed",
        }
    }
}

/// Seed 001 §7's `LaneRecord`, plus the project, harness and base it was made from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaneRecord {
    pub lane_id: String,
    pub task_id: String,
    pub state: LaneState,
    pub mux_backend: String,
    pub mux_target: String,
    pub worktree_path: PathBuf,
    pub branch_name: String,
    pub session_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub last_activity_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub harness: String,
    #[serde(default)]
    pub base_ref: String,
    /// tmux's session id, for exact addressing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mux_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default)]
    pub worktree_removed: bool,
    /// The sandbox its agent runs in (chosen as a task's is: the project's, the
    /// harness's, config.toml's).
    #[serde(default)]
    pub sandbox: sandbox::Kind,
}

impl LaneRecord {
    /// THE one mapping of a lane onto what orange shows for tasks (the sidebar, the
    /// widgets): its worktree (by absolute path) as the workspace, its state as a status
    /// (creating → pending, running → working, finished → reviewing, error → stuck,
    /// closed → done), its task key as the summary.
    pub fn as_task(&self) -> task::Task {
        use task::Status;
        let status = match self.state {
            LaneState::Creating => Status::Pending,
            LaneState::Running => Status::Working,
            LaneState::Finished => Status::Reviewing,
            LaneState::Error => Status::Stuck,
            LaneState::Closed => Status::Done,
        };
        task::Task {
            id: self.lane_id.clone(),
            project: self.project.clone(),
            branch: self.branch_name.clone(),
            harness: self.harness.clone(),
            status,
            workspace: (!self.worktree_removed).then(|| self.worktree_path.display().to_string()),
            tmux_session: Some(self.mux_target.clone()),
            tmux_session_id: self.mux_session_id.clone(),
            tmux_pane_id: None,
            summary: format!("lane for {}", self.task_id),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            ..task::Task::default()
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    /// Required (a missing file is the empty registry; `{}` is corrupt).
    pub lanes: BTreeMap<String, LaneRecord>,
}

pub struct CreateRequest {
    pub task_id: String,
    pub base_ref: Option<String>,
    pub worktree_path: Option<PathBuf>,
    pub mux: Option<String>,
    pub harness: Option<String>,
    pub seed_context: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Created {
    pub lane: LaneRecord,
    /// Seed 001 §8.1 step 6: commands that work for the chosen backend.
    pub hints: Hints,
}

#[derive(Debug, Serialize)]
pub struct Hints {
    pub attach: String,
    pub status: String,
    pub close: String,
    pub worktree: String,
}

#[derive(Debug, Default, Serialize)]
pub struct GcReport {
    pub checked: usize,
    pub closed: Vec<String>,
    pub skipped: Vec<serde_json::Value>,
    pub errors: Vec<serde_json::Value>,
}

/// What `create` checked before writing anything.
struct Checked {
    mux: Mux,
    config: Config,
    harness: Harness,
    sandbox: sandbox::Kind,
    base_ref: String,
}

pub struct Lanes<'a> {
    home: &'a Home,
    /// tmux's pane list, taken once per command however many lanes it looks at.
    panes: std::cell::RefCell<Option<Vec<crate::adapters::tmux::PaneInfo>>>,
}

fn registry_file(home: &Home) -> PathBuf {
    home.root.join("lanes/registry.json")
}

fn lock(home: &Home) -> Result<LockGuard> {
    LockGuard::acquire(&home.root.join("lanes/.registry.lock"))
}

/// Held by the command creating a lane for as long as the lane is `creating`: a lane left
/// `creating` whose lock is free was left by a command that died.
fn creating_lock(home: &Home, lane_id: &str) -> PathBuf {
    home.root
        .join("lanes/.creating")
        .join(format!("{lane_id}.lock"))
}

fn exit_file(home: &Home, lane_id: &str) -> PathBuf {
    home.root.join("lanes/.exit").join(lane_id)
}

/// `<task-slug>-<lane-id>`: the task id made safe for a directory name.
fn slug(task_id: &str) -> String {
    let s: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').chars().take(40).collect::<String>();
    if s.is_empty() {
        "lane".to_string()
    } else {
        s
    }
}

impl<'a> Lanes<'a> {
    pub fn new(home: &'a Home) -> Lanes<'a> {
        Lanes {
            home,
            panes: Default::default(),
        }
    }

    pub fn load(&self) -> Result<Registry> {
        store::read_json(&registry_file(self.home))
    }

    fn save(&self, reg: &Registry) -> Result<()> {
        store::write_json_atomic(&registry_file(self.home), reg)?;
        // Every observation taken before this is stale; the monitor looks again.
        store::poke_other(self.home);
        Ok(())
    }

    /// Update one record under the lock.
    fn update(&self, id: &str, f: impl FnOnce(&mut LaneRecord)) -> Result<LaneRecord> {
        let _l = lock(self.home)?;
        let mut reg = self.load()?;
        let rec = reg
            .lanes
            .get_mut(id)
            .ok_or_else(|| OrangeError::LaneNotFound(id.to_string()))?;
        f(rec);
        rec.updated_at = store::now_rfc3339();
        let out = rec.clone();
        self.save(&reg)?;
        Ok(out)
    }

    pub fn create(&self, project: &Project, req: CreateRequest) -> Result<Created> {
        // Validation and preflight: nothing is written before these pass.
        let checked = self.check(project, &req)?;
        let (rec, exit, creator) = self.record(project, &req, &checked)?;
        crate::adapters::fault::point("lane.recorded");
        let result = self.start(project, &rec, &checked, req.seed_context.as_deref(), &exit);
        if result.is_ok() {
            crate::adapters::fault::point("lane.started");
        }
        let settled = match result {
            Ok(started) => self.update(&rec.lane_id, |r| {
                r.state = LaneState::Running;
                r.mux_target = started.session.target.clone();
                r.mux_session_id = started.session.id.clone();
            }),
            Err(e) => {
                let msg = e.to_string();
                self.update(&rec.lane_id, |r| {
                    r.state = LaneState::Error;
                    r.last_error = Some(msg);
                })
                .and(Err(e))
            }
        };
        let _ = std::fs::remove_file(creator.path());
        drop(creator);
        let rec = settled?;
        let hints = Hints {
            attach: checked.mux.attach_hint(&rec.mux_target),
            status: format!("orange lane status {}", rec.lane_id),
            close: format!("orange lane close {}", rec.lane_id),
            worktree: format!(
                "cd {}",
                crate::adapters::shell::quote(&rec.worktree_path.to_string_lossy())
            ),
        };
        Ok(Created { lane: rec, hints })
    }

    /// Everything a new lane needs, checked before anything is written: its task id and
    /// seed, its backend, its harness's program, its sandbox, its base, its worktree path.
    fn check(&self, project: &Project, req: &CreateRequest) -> Result<Checked> {
        if req.task_id.trim().is_empty() {
            return Err(OrangeError::invalid("task id must not be blank"));
        }
        if req.task_id.chars().any(|c| c.is_control()) {
            return Err(OrangeError::invalid("task id contains control characters"));
        }
        // The seed context is the agent's prompt: nothing with control characters is ever
        // typed into an agent (newlines and tabs are text).
        if req
            .seed_context
            .as_deref()
            .is_some_and(crate::text::has_controls)
        {
            return Err(OrangeError::invalid(
                "--seed-context contains control characters (escape sequences, carriage returns…); only newlines and tabs are taken",
            ));
        }
        let mux = Mux::named(req.mux.as_deref().unwrap_or("tmux"))?;
        mux.preflight()?;
        let config = Config::load(self.home)?;
        let harness = Harness::resolve(req.harness.as_deref(), &config)?;
        harness.preflight()?;
        // A lane's agent runs in the sandbox a task's would (the project's, the harness's,
        // config.toml's).
        let sandbox = sandbox::choose(None, project, &config, &harness.name)?;
        launch::check_sandbox(self.home, &config, project, &harness, sandbox)?;
        let base_ref = match &req.base_ref {
            Some(b) => {
                git::rev_parse(&project.path, b)?;
                b.clone()
            }
            None => git::base_ref(&project.path, &project.default_branch)?,
        };
        if let Some(p) = &req.worktree_path {
            if p.exists()
                && std::fs::read_dir(p)
                    .map(|mut d| d.next().is_some())
                    .unwrap_or(true)
            {
                return Err(OrangeError::invalid(format!(
                    "worktree path {} exists and is not empty",
                    p.display()
                )));
            }
        }
        Ok(Checked {
            mux,
            config,
            harness,
            sandbox,
            base_ref,
        })
    }

    /// Record the new lane (`creating`, its creator's lock held): the record, where its
    /// exit status goes, the lock.
    fn record(
        &self,
        project: &Project,
        req: &CreateRequest,
        checked: &Checked,
    ) -> Result<(LaneRecord, PathBuf, LockGuard)> {
        let now = store::now_rfc3339();
        let _l = lock(self.home)?;
        let mut reg = self.load()?;
        let lane_id = {
            let mut id = task::new_id(|id| reg.lanes.contains_key(id));
            id.truncate(8);
            id
        };
        let worktree_path = match &req.worktree_path {
            Some(p) if p.is_absolute() => p.clone(),
            Some(p) => std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or(p.clone()),
            None => {
                self.home
                    .root
                    .join("lanes")
                    .join(format!("{}-{}", slug(&req.task_id), lane_id))
            }
        };
        let branch_name = format!("lane/{lane_id}");
        let rec = LaneRecord {
            lane_id: lane_id.clone(),
            task_id: req.task_id.clone(),
            state: LaneState::Creating,
            mux_backend: checked.mux.name().to_string(),
            mux_target: launch::session_name(&checked.mux, &project.name, &branch_name),
            worktree_path,
            branch_name,
            session_id: new_uuid(),
            created_at: now.clone(),
            updated_at: now.clone(),
            last_activity_at: now,
            last_error: None,
            project: project.name.clone(),
            harness: checked.harness.name.clone(),
            base_ref: checked.base_ref.clone(),
            mux_session_id: None,
            exit_status: None,
            worktree_removed: false,
            sandbox: checked.sandbox,
        };
        let creator = LockGuard::acquire(&creating_lock(self.home, &lane_id))?;
        reg.lanes.insert(lane_id.clone(), rec.clone());
        self.save(&reg)?;
        Ok((rec, exit_file(self.home, &lane_id), creator))
    }

    /// Make the lane's worktree on its new branch and start its agent through the
    /// launcher: the environment, sandbox and session a task's agent gets.
    fn start(
        &self,
        project: &Project,
        rec: &LaneRecord,
        checked: &Checked,
        seed: Option<&str>,
        exit: &Path,
    ) -> Result<launch::Started> {
        if let Some(parent) = rec.worktree_path.parent() {
            store::ensure_dir(parent)?;
        }
        if let Some(parent) = exit.parent() {
            store::ensure_dir(parent)?;
        }
        git::worktree_add_branch(
            &project.path,
            &rec.worktree_path,
            &rec.branch_name,
            &rec.base_ref,
        )?;
        let agent_dir = launch::lane_agent_dir(self.home, &rec.lane_id);
        Launch {
            home: self.home,
            config: &checked.config,
            project,
            owner: Owner::Lane(&rec.lane_id),
            branch: &rec.branch_name,
            workspace: Workspace {
                path: &rec.worktree_path,
                name: None,
            },
            harness: &checked.harness,
            start: Start::First,
            prompt: seed.map(str::to_string),
            conversation: Some(&rec.session_id),
            permission_mode: None,
            sandbox: rec.sandbox,
            limits: Default::default(),
            agent_dir: &agent_dir,
            task_md: None,
            mux: &checked.mux,
            exit_file: Some(exit),
            marks: crate::execution::session::lane_marks(self.home, &rec.project, &rec.lane_id),
        }
        .prepare()?
        .start()
    }

    fn target(rec: &LaneRecord) -> String {
        rec.mux_session_id.clone().unwrap_or(rec.mux_target.clone())
    }

    /// Ask the backend about a lane.
    pub fn liveness(&self, rec: &LaneRecord) -> Result<Liveness> {
        let mux = Mux::named(&rec.mux_backend)?;
        let exit = exit_file(self.home, &rec.lane_id);
        match &mux {
            Mux::Tmux(t) => {
                let mut cached = self.panes.borrow_mut();
                if cached.is_none() {
                    *cached = Some(t.snapshot()?);
                }
                mux.liveness(&Self::target(rec), &exit, cached.as_deref())
            }
            Mux::Zellij(_) => mux.liveness(&Self::target(rec), &exit, None),
        }
    }

    /// Move a running lane to finished/error when its agent has exited (or its session is
    /// gone); refresh its last activity. Returns the (possibly updated) record.
    pub fn refresh(&self, rec: LaneRecord) -> Result<(LaneRecord, Option<Liveness>)> {
        if rec.state != LaneState::Running {
            return Ok((rec, None));
        }
        let live = match self.liveness(&rec) {
            Ok(l) => l,
            // The backend binary went away: report, do not guess a state.
            Err(OrangeError::BackendNotFound(_)) => return Ok((rec, None)),
            Err(e) => return Err(e),
        };
        let activity = live
            .last_activity
            .and_then(|t| chrono::DateTime::from_timestamp(t as i64, 0))
            .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        let (state, error, code) = if live.agent_running {
            (LaneState::Running, None, None)
        } else if let Some(c) = live.exit_status {
            if c == 0 {
                (LaneState::Finished, None, Some(c))
            } else {
                (
                    LaneState::Error,
                    Some(format!("agent exited with status {c}")),
                    Some(c),
                )
            }
        } else if let Some(s) = live.exit_signal {
            (
                LaneState::Error,
                Some(format!("agent was killed by signal {s}")),
                None,
            )
        } else if live.session_exists {
            // tmux has not collected the status yet: look again next time.
            (LaneState::Running, None, None)
        } else {
            (
                LaneState::Error,
                Some("the session disappeared before the agent's exit was observed".to_string()),
                None,
            )
        };
        let changed_activity = activity.as_ref().is_some_and(|a| a > &rec.last_activity_at);
        if state == rec.state && !changed_activity {
            return Ok((rec, Some(live)));
        }
        let now = store::now_rfc3339();
        let updated = self.update(&rec.lane_id, |r| {
            if r.state == LaneState::Running {
                r.state = state;
                if state != LaneState::Running {
                    r.last_error = error.clone();
                    r.exit_status = code;
                    r.last_activity_at = now.clone();
                }
            }
            if let Some(a) = &activity {
                if a > &r.last_activity_at {
                    r.last_activity_at = a.clone();
                }
            }
        })?;
        Ok((updated, Some(live)))
    }

    pub fn get(&self, id: &str) -> Result<LaneRecord> {
        self.load()?
            .lanes
            .remove(id)
            .ok_or_else(|| OrangeError::LaneNotFound(id.to_string()))
    }

    pub fn list(&self, include_closed: bool) -> Result<Vec<LaneRecord>> {
        let mut out = vec![];
        for rec in self.load()?.lanes.into_values() {
            let (rec, _) = self.refresh(rec)?;
            if include_closed || rec.state != LaneState::Closed {
                out.push(rec);
            }
        }
        out.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.lane_id.cmp(&b.lane_id))
        });
        Ok(out)
    }

    pub fn status(&self, id: &str) -> Result<(LaneRecord, serde_json::Value)> {
        let rec = self.get(id)?;
        let (rec, live) = self.refresh(rec)?;
        let backend = match live {
            Some(l) => serde_json::to_value(l).unwrap(),
            None if rec.state == LaneState::Closed => {
                json!({"session_exists": false, "agent_running": false})
            }
            None => match self.liveness(&rec) {
                Ok(l) => serde_json::to_value(l).unwrap(),
                Err(e) => json!({"error": e.to_string(), "code": e.code()}),
            },
        };
        Ok((rec, backend))
    }

    /// Close a lane: refuse a running one and a dirty worktree without `force`; closing a
    /// closed lane returns it unchanged.
    pub fn close(&self, id: &str, remove_worktree: bool, force: bool) -> Result<LaneRecord> {
        let rec = self.get(id)?;
        if rec.state == LaneState::Closed {
            return Ok(rec);
        }
        let (rec, _) = self.refresh(rec)?;
        if matches!(rec.state, LaneState::Running | LaneState::Creating) && !force {
            return Err(OrangeError::LaneRunning(rec.lane_id.clone()));
        }
        let project = crate::orchestration::project::get(self.home, &rec.project).ok();
        let wt_exists = rec.worktree_path.exists();
        if remove_worktree && wt_exists && !force {
            if let Some(detail) = git::unsaved_work(&rec.worktree_path, "HEAD", &[], None)? {
                return Err(OrangeError::WorktreeDirty {
                    path: rec.worktree_path.clone(),
                    detail,
                });
            }
        }
        let mux = Mux::named(&rec.mux_backend)?;
        match mux.kill(&Self::target(&rec)) {
            Ok(_) | Err(OrangeError::BackendNotFound(_)) => {}
            Err(e) => return Err(e),
        }
        let mut removed = false;
        if remove_worktree && wt_exists {
            let repo = project.as_ref().map(|p| p.path.clone()).ok_or_else(|| {
                OrangeError::ProjectNotFound(format!(
                    "{} (needed to remove the lane's worktree)",
                    rec.project
                ))
            })?;
            git::worktree_remove(&repo, &rec.worktree_path)?;
            removed = true;
        }
        let _ = std::fs::remove_file(exit_file(self.home, &rec.lane_id));
        let _ = std::fs::remove_file(exit_file(self.home, &rec.lane_id).with_extension("kdl"));
        let _ = std::fs::remove_dir_all(launch::lane_agent_dir(self.home, &rec.lane_id));
        self.update(&rec.lane_id, |r| {
            r.state = LaneState::Closed;
            r.worktree_removed = r.worktree_removed || removed;
        })
    }

    /// Crash leftovers (see `reconcile`): a lane left `creating` by a command that died
    /// becomes `running` (its session lives) or `error`; a session of a lane that is gone
    /// or closed is stopped. `sessions`: the marked sessions of this ORANGE_HOME.
    pub fn reconcile(
        &self,
        tmux: &crate::adapters::tmux::Tmux,
        sessions: &[&crate::adapters::tmux::MarkedSession],
    ) -> Result<Vec<crate::orchestration::repair::Repair>> {
        use crate::execution::session::LANE_MARK;
        use crate::orchestration::repair::Repair;
        let mut repairs = vec![];
        if !registry_file(self.home).exists() {
            for s in sessions {
                tmux.kill_session(&s.id)?;
                repairs.push(Repair {
                    action: "stopped",
                    target: format!("session {}", s.name),
                    reason: "no lane is recorded".into(),
                    freed_in: None,
                });
            }
            return Ok(repairs);
        }
        let reg = self.load()?;
        for rec in reg
            .lanes
            .values()
            .filter(|r| r.state == LaneState::Creating)
        {
            let path = creating_lock(self.home, &rec.lane_id);
            // Its creator still works on it.
            let Ok(held) = LockGuard::acquire_within(&path, Duration::ZERO) else {
                continue;
            };
            let session = sessions
                .iter()
                .find(|s| s.mark(LANE_MARK) == Some(rec.lane_id.as_str()));
            let alive = match (session, rec.mux_backend.as_str()) {
                (Some(_), _) => true,
                (None, "zellij") => self.liveness(rec).is_ok_and(|l| l.session_exists),
                _ => false,
            };
            let mut settled = false;
            let updated = self.update(&rec.lane_id, |r| {
                if r.state != LaneState::Creating {
                    return;
                }
                settled = true;
                if alive {
                    r.state = LaneState::Running;
                    if let Some(s) = session {
                        r.mux_target = s.name.clone();
                        r.mux_session_id = Some(s.id.clone());
                    }
                } else {
                    r.state = LaneState::Error;
                    r.last_error = Some(
                        "interrupted while being created (the command creating it was killed)"
                            .into(),
                    );
                }
            })?;
            let _ = std::fs::remove_file(&path);
            drop(held);
            if !settled {
                continue;
            }
            repairs.push(Repair {
                action: "settled",
                target: format!("lane {}", rec.lane_id),
                reason: format!(
                    "left creating by a command that died: now {}",
                    updated.state.as_str()
                ),
                freed_in: None,
            });
        }
        for s in sessions {
            let id = s.mark(LANE_MARK).unwrap_or_default();
            let gone = match reg.lanes.get(id) {
                None => "no such lane is recorded".to_string(),
                Some(r) if r.state == LaneState::Closed => format!("lane {id} is closed"),
                Some(_) => continue,
            };
            tmux.kill_session(&s.id)?;
            repairs.push(Repair {
                action: "stopped",
                target: format!("session {}", s.name),
                reason: gone,
                freed_in: None,
            });
        }
        Ok(repairs)
    }

    /// Close finished/error lanes idle longer than `ttl`; never running ones. Per-lane
    /// errors are collected and the others still processed.
    pub fn gc(
        &self,
        ttl: Duration,
        remove_worktree: bool,
        force: bool,
        dry_run: bool,
    ) -> Result<GcReport> {
        let mut report = GcReport::default();
        let now = chrono::Utc::now();
        for rec in self.load()?.lanes.into_values() {
            if rec.state == LaneState::Closed {
                continue;
            }
            report.checked += 1;
            let rec = match self.refresh(rec.clone()) {
                Ok((r, _)) => r,
                Err(e) => {
                    report.errors.push(
                        json!({"lane_id": rec.lane_id, "code": e.code(), "message": e.to_string()}),
                    );
                    continue;
                }
            };
            if !matches!(rec.state, LaneState::Finished | LaneState::Error) {
                report
                    .skipped
                    .push(json!({"lane_id": rec.lane_id, "reason": rec.state.as_str()}));
                continue;
            }
            let idle = chrono::DateTime::parse_from_rfc3339(&rec.last_activity_at)
                .map(|t| now.signed_duration_since(t).to_std().unwrap_or_default())
                .unwrap_or_default();
            if idle < ttl {
                report
                    .skipped
                    .push(json!({"lane_id": rec.lane_id, "reason": "fresh"}));
                continue;
            }
            if remove_worktree && !force {
                let blocked = match crate::execution::pool::in_use_or_unpushed(&rec.worktree_path) {
                    Ok(b) => b,
                    Err(e) => Some(e.to_string()),
                };
                if let Some(reason) = blocked {
                    report
                        .skipped
                        .push(json!({"lane_id": rec.lane_id, "reason": reason}));
                    continue;
                }
            }
            if dry_run {
                report.closed.push(rec.lane_id.clone());
                continue;
            }
            match self.close(&rec.lane_id, remove_worktree, force) {
                Ok(_) => report.closed.push(rec.lane_id.clone()),
                Err(e) => report.errors.push(
                    json!({"lane_id": rec.lane_id, "code": e.code(), "message": e.to_string()}),
                ),
            }
        }
        Ok(report)
    }
}
