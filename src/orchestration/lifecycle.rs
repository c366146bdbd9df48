//! What happens to a task: create, spawn, respawn, update, merge, cancel, delete, and the
//! FIFO queue. Built from the workspace pool (`pool`), the session layer (`tmux`), git
//! and the task store; it owns no worktree or tmux code of its own.

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{self, NewSession, PaneInfo, Tmux};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{Conversation, Harness, Launch};
use crate::execution::pool;
use crate::execution::sandbox;
use crate::execution::session::Mux;
use crate::orchestration::project::{self, Project};
use crate::orchestration::task::{self, Status, Task, TaskStore};
use crate::{adapters::gh, adapters::git};

pub use crate::orchestration::attention::{agent_pane, agent_state, SessionView};

/// A task as commands print it: task.json plus its session state.
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    #[serde(flatten)]
    pub task: Task,
    pub session: SessionView,
    /// What the agent is doing (`agent.json`, kept by the monitor and agent hooks).
    pub agent: crate::orchestration::agent::AgentInfo,
    /// Token use from the agent's log (`usage.json`); `null` when its harness does not
    /// report it.
    pub tokens: Option<crate::orchestration::usage::Tokens>,
}

pub struct Tasks<'a> {
    pub home: &'a Home,
    pub store: TaskStore,
    pub tmux: Tmux,
    config: Option<Config>,
    recovery: Option<Recovery>,
}

/// A policy's message for a respawned agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    Prompt(String),
    Append(String),
}

pub struct CreateRequest {
    pub branch: Option<String>,
    /// The agent's first prompt. `None`: the agent starts interactive, with no prompt, and
    /// the first prompt typed in its pane becomes the summary (`Some("")` is refused).
    pub summary: Option<String>,
    pub harness: Option<String>,
    pub context: Option<String>,
    pub spawn: bool,
    /// `--sandbox`: overrides the project's, the harness's and config.toml's.
    pub sandbox: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Created {
    #[serde(flatten)]
    pub task: Task,
    /// `spawned`, `pending` (--no-spawn) or `queued` (the pool is full: it starts when a
    /// workspace frees).
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FailedStart {
    pub id: String,
    pub error: String,
}

/// What a release-triggering command did about the queue.
#[derive(Debug, Default, Serialize)]
pub struct NextSpawn {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawned: Option<String>,
    /// Queued tasks that could not start on the way (now `failed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedStart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl<'a> Tasks<'a> {
    pub fn new(home: &'a Home) -> Tasks<'a> {
        Tasks {
            home,
            store: TaskStore::new(home),
            tmux: Tmux::from_env(),
            config: None,
            recovery: None,
        }
    }

    pub fn with_tmux(mut self, tmux: Tmux) -> Self {
        self.tmux = tmux;
        self
    }

    fn config(&mut self) -> Result<&Config> {
        if self.config.is_none() {
            self.config = Some(Config::load(self.home)?);
        }
        Ok(self.config.as_ref().unwrap())
    }

    /// Find a task by id (any project, or the given one).
    pub fn get(&self, id: &str, project: Option<&str>) -> Result<Task> {
        self.store.find(id, project)
    }

    /// The task meant when no id is given: `$ORANGE_TASK_ID`, else the task bound to the
    /// workspace that contains `cwd`.
    pub fn infer(&self, cwd: &Path) -> Result<Task> {
        if let Some(id) = task::id_from_env() {
            return self.get(&id, None);
        }
        if let Some(w) = pool::containing(self.home, cwd)? {
            if let Some(label) = &w.task {
                return self.get(label, Some(&w.project));
            }
        }
        Err(OrangeError::invalid(
            "no task id given, ORANGE_TASK_ID is not set and the current directory is in no bound workspace",
        ))
    }

    pub fn view(&self, task: Task, panes: &[PaneInfo]) -> TaskView {
        let session = SessionView::of(&task, panes);
        let agent = agent_state(&self.store, &task, &session);
        let tokens = crate::orchestration::usage::tokens(
            &self.store.dir(&task.project, &task.id),
            &task.harness,
        );
        TaskView {
            task,
            session,
            agent,
            tokens,
        }
    }

    /// Read what the task's Claude conversation appended to its transcripts since the last
    /// update (`usage.json`; cheap: only the new bytes). Nothing for other harnesses or a
    /// task without a workspace.
    pub fn update_usage(&self, task: &Task) -> Result<()> {
        let (Some(conv), Some(ws)) = (&task.agent_session_id, &task.workspace) else {
            return Ok(());
        };
        let ws = if ws.starts_with('/') {
            std::path::PathBuf::from(ws)
        } else {
            pool::find(self.home, ws)?.path
        };
        crate::orchestration::usage::update(&self.store.dir(&task.project, &task.id), &ws, conv)?;
        Ok(())
    }

    /// One tmux call for every task's session state (empty when no server runs).
    pub fn panes(&self) -> Vec<PaneInfo> {
        if !self.tmux.is_available() {
            return vec![];
        }
        self.tmux.snapshot().unwrap_or_default()
    }

    /// Every task (of a project, in a status) with its session state, which comes from the
    /// observer's snapshot (no process while it is fresh).
    pub fn list(&self, project: Option<&str>, status: Option<Status>) -> Result<Vec<TaskView>> {
        let panes = crate::orchestration::observer::current(self.home, &self.tmux)?.panes;
        Ok(self
            .store
            .list(project)?
            .into_iter()
            .filter(|t| status.is_none_or(|s| t.status == s))
            .map(|t| self.view(t, &panes))
            .collect())
    }

    fn check_branch_free(&self, project: &str, branch: &str, except: Option<&str>) -> Result<()> {
        for t in self.store.list_open(Some(project))? {
            if t.branch == branch && !t.status.is_final() && Some(t.id.as_str()) != except {
                let hint = match t.status {
                    Status::Failed | Status::Pending => format!(
                        "; start it with `orange task {} {}` or remove it with `orange task cancel {}`",
                        if t.status == Status::Failed { "respawn" } else { "spawn" },
                        t.id,
                        t.id
                    ),
                    _ => String::new(),
                };
                return Err(OrangeError::invalid(format!(
                    "branch {branch:?} already belongs to task {} ({}) in project {project}{hint}",
                    t.id, t.status
                )));
            }
        }
        Ok(())
    }

    pub fn create(&mut self, project: &Project, req: CreateRequest) -> Result<Created> {
        if let Some(b) = &req.branch {
            validate_branch(b)?;
            if *b == project.default_branch {
                return Err(OrangeError::invalid(format!(
                    "{b:?} is project {}'s default branch: a task works on a branch of its own and is merged into it",
                    project.name
                )));
            }
            if let Some(at) = git::branch_checked_out_at(&project.path, b)? {
                return Err(OrangeError::invalid(format!(
                    "branch {b:?} is checked out in {}; a branch can be checked out in one worktree only (switch that worktree to another branch first)",
                    at.display()
                )));
            }
        }
        if let Some(s) = &req.summary {
            if s.trim().is_empty() {
                return Err(OrangeError::invalid(
                    "the summary is empty: give the agent's prompt, or leave the summary out to start the agent interactive, with no prompt (you type the first one in its pane)",
                ));
            }
            validate_summary(s)?;
        }
        let harness = Harness::resolve(req.harness.as_deref(), self.config()?)?;
        // Everything that can be checked is checked before anything is recorded: a task
        // that cannot start must not be left behind, pending and hidden. A sandbox that
        // cannot run here is such a thing, even for a task not started yet.
        let sandbox = sandbox::choose(
            req.sandbox.as_deref(),
            project,
            self.config()?,
            &harness.name,
        )?;
        sandbox.preflight()?;
        if sandbox == sandbox::Kind::Bwrap {
            let (w, r) = sandbox::extra_paths(self.config()?, &project.name, &harness.name);
            sandbox::check_visible(self.home, &project.path, &harness, &w, &r)?;
        }
        if req.spawn {
            self.preflight(&harness)?;
            git::base_ref(&project.path, &project.default_branch)?;
        }
        crate::adapters::fault::point("create.checked");
        let task = {
            let _lock = self.store.lock(&project.name)?;
            let id = task::new_id(|id| self.store.dir(&project.name, id).exists());
            let branch = req
                .branch
                .clone()
                .unwrap_or_else(|| format!("orange-tasks/{id}"));
            self.check_branch_free(&project.name, &branch, None)?;
            let now = store::now_precise();
            // No prompt: the branch stands for the summary until the first prompt is known.
            let summary = req.summary.clone().unwrap_or_else(|| branch.clone());
            let task = Task {
                id,
                project: project.name.clone(),
                branch,
                harness: harness.name.clone(),
                status: Status::Pending,
                sandbox,
                summary,
                awaiting_prompt: req.summary.is_none(),
                created_at: now.clone(),
                updated_at: now,
                ..Task::default()
            };
            let dir = self.store.dir(&project.name, &task.id);
            store::ensure_dir(&dir)?;
            let md = self.store.task_md(&project.name, &task.id);
            std::fs::write(
                &md,
                task::task_md(req.summary.as_deref().unwrap_or(""), req.context.as_deref()),
            )
            .map_err(|e| OrangeError::io(format!("writing {}", md.display()), e))?;
            self.store.save(&task)?;
            self.store.append_history(
                &task,
                "task.created",
                json!({"branch": task.branch, "harness": task.harness, "sandbox": task.sandbox, "prompt": !task.awaiting_prompt}),
            )?;
            task
        };
        if !req.spawn {
            return Ok(Created {
                task,
                outcome: "pending",
                note: None,
            });
        }
        match self.spawn(&task.id, Some(&project.name)) {
            Ok(task) => Ok(Created {
                task,
                outcome: "spawned",
                note: None,
            }),
            Err(OrangeError::PoolExhausted { bound, size, .. }) => {
                let task = self.store.load(&project.name, &task.id)?;
                Ok(Created {
                    task,
                    outcome: "queued",
                    note: Some(format!("the pool is full ({bound}/{size}); the task starts when a workspace is released")),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Start the agent of a pending task: workspace, branch, TASK.md, harness setup, session.
    pub fn spawn(&mut self, id: &str, project: Option<&str>) -> Result<Task> {
        let task = self.get(id, project)?;
        let _lock = self.store.lock(&task.project)?;
        self.spawn_locked(&task.project, &task.id)
    }

    /// Start a pending task (the project lock held). A failure that is not transient
    /// (a full pool waits in the queue) leaves the task `failed` with its reason, its
    /// workspace released and no session: never pending and hidden.
    fn spawn_locked(&mut self, project_name: &str, id: &str) -> Result<Task> {
        let mut task = self.store.load(project_name, id)?;
        if task.status != Status::Pending {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} is {}, only a pending task can be spawned (use `orange task respawn` for a dead session)",
                task.id, task.status
            )));
        }
        match self.start_pending(&mut task) {
            Ok(ws_name) => {
                let from = task.status;
                task.status = Status::Working;
                task.failure = None;
                task.updated_at = store::now_rfc3339();
                self.store.save(&task)?;
                self.store.append_history(
                    &task,
                    "agent.spawned",
                    json!({"workspace": ws_name, "tmux_session": task.tmux_session, "harness": task.harness}),
                )?;
                self.store.append_history(
                    &task,
                    "status.changed",
                    json!({"from": from, "to": task.status}),
                )?;
                Ok(task)
            }
            Err(e) if !e.fails_the_task() => Err(e),
            Err(e) => {
                self.fail(project_name, id, &e)?;
                Err(OrangeError::TaskFailed {
                    id: id.to_string(),
                    source: Box::new(e),
                })
            }
        }
    }

    /// Workspace, branch, session for a pending task; on failure nothing is left behind
    /// (the session killed, the workspace given back).
    fn start_pending(&mut self, task: &mut Task) -> Result<String> {
        let project = project::get(self.home, &task.project)?;
        let harness = Harness::named(&task.harness, self.config()?)?;
        self.preflight(&harness)?;
        let ws = pool::acquire(self.home, &project, &task.id, None, &self.store)?;
        crate::adapters::fault::point("spawn.acquired");
        let started =
            self.start_in_workspace(&project, task, &harness, &ws.name, &ws.path, Launch::First);
        if started.is_ok() {
            crate::adapters::fault::point("spawn.started");
        }
        if let Err(e) = started {
            // Its session, if it started, goes first; if it cannot be stopped, the
            // workspace stays bound to the task (the crash repair finishes both).
            let stopped = match task.tmux_session_id.take() {
                Some(s) => self.tmux.kill_session(&s).is_ok(),
                None => true,
            };
            if stopped {
                let _ = pool::release(self.home, &project, &ws.name, true);
            }
            return Err(e);
        }
        Ok(ws.name)
    }

    /// Record that a task could not start: `failed`, with the reason, holding nothing.
    fn fail(&mut self, project: &str, id: &str, e: &OrangeError) -> Result<()> {
        let mut task = self.store.load(project, id)?;
        let from = task.status;
        task.status = Status::Failed;
        task.failure = Some(e.to_string());
        task.workspace = None;
        task.tmux_session = None;
        task.tmux_session_id = None;
        task.tmux_pane_id = None;
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "task.failed",
            json!({"error": e.to_string(), "code": e.code()}),
        )?;
        self.store.append_history(
            &task,
            "status.changed",
            json!({"from": from, "to": task.status}),
        )
    }

    fn preflight(&self, harness: &Harness) -> Result<()> {
        self.tmux.preflight()?;
        if let Some(program) = harness.program().or_else(|| harness.command_program()) {
            if !crate::adapters::shell::on_path(program) {
                return Err(OrangeError::BackendNotFound(format!(
                    "harness {:?}: {program:?} is not installed (not on PATH); install it or pass --harness",
                    harness.name
                )));
            }
        }
        Ok(())
    }

    /// Check out the branch, link TASK.md, set up the harness, start the session.
    fn start_in_workspace(
        &mut self,
        project: &Project,
        task: &mut Task,
        harness: &Harness,
        ws_name: &str,
        ws_path: &Path,
        launch: Launch,
    ) -> Result<()> {
        if launch == Launch::First {
            if let Some(at) = git::branch_checked_out_at(&project.path, &task.branch)? {
                let at_c = at.canonicalize().unwrap_or(at.clone());
                if at_c != ws_path.canonicalize().unwrap_or(ws_path.to_path_buf()) {
                    return Err(OrangeError::invalid(format!(
                        "branch {:?} is checked out in {}; a branch can be checked out in one worktree only (switch that worktree to another branch first)",
                        task.branch,
                        at.display()
                    )));
                }
            }
            git::checkout_task_branch(&project.path, ws_path, &task.branch)?;
        }
        let link = ws_path.join("TASK.md");
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(self.store.task_md(&task.project, &task.id), &link)
                .map_err(|e| OrangeError::io(format!("linking {}", link.display()), e))?;
        }
        // Projects registered by an older orange may lack the newer exclude entries.
        git::ensure_excluded(&project.path, pool::EXCLUDED_FILES)?;

        // Claude's conversation: a new one, or on respawn the same one — when claude saved
        // it. A claude killed early (SIGKILL) may not have written it, and `--resume` of an
        // unknown id exits at once ("No conversation found"): then a new one.
        let resumable = |id: &String| {
            crate::orchestration::agent::claude_has_conversation(
                &crate::orchestration::agent::claude_log_path(ws_path, id),
            )
        };
        let (conv_id, resume) = match (harness.name.as_str(), launch) {
            ("claude", Launch::Respawn)
                if task.agent_session_id.as_ref().is_some_and(resumable) =>
            {
                (task.agent_session_id.clone(), true)
            }
            ("claude", _) if harness.is_builtin() => {
                let id = task::new_uuid();
                task.agent_session_id = Some(id.clone());
                (Some(id), false)
            }
            _ => (None, false),
        };
        let conversation = conv_id.as_deref().map(|id| {
            if resume {
                Conversation::Resume(id)
            } else {
                Conversation::New(id)
            }
        });
        // Started without a prompt and none known yet: still none (a resume prompt or a
        // policy's message would be the agent's first task).
        let prompt = match (launch, &self.recovery) {
            _ if task.awaiting_prompt => None,
            (Launch::First, _) => first_prompt(task),
            (Launch::Respawn, None) => Some(respawn_prompt(task)),
            (Launch::Respawn, Some(Recovery::Prompt(m))) => Some(m.clone()),
            (Launch::Respawn, Some(Recovery::Append(m))) => {
                Some(format!("{}\n\n{m}", respawn_prompt(task)))
            }
        };
        // Respawn keeps the first launch's permission mode, whatever config says now.
        // (A task from before this was recorded ran with claude's default here: bypass.)
        let mut harness = harness.clone();
        if harness.is_builtin() && harness.name == "claude" {
            match launch {
                Launch::First => {
                    task.permission_mode = Some(
                        harness
                            .permission_mode
                            .clone()
                            .unwrap_or_else(|| "bypassPermissions".into()),
                    )
                }
                Launch::Respawn => {
                    harness.permission_mode = Some(
                        task.permission_mode
                            .clone()
                            .unwrap_or_else(|| "bypassPermissions".into()),
                    )
                }
            }
        }
        harness.setup_workspace(&project.path, ws_path)?;
        let mut argv = harness.argv(prompt.as_deref(), launch, conversation);
        let dir = self.store.dir(&task.project, &task.id);
        if task.sandbox != sandbox::Kind::None {
            task.sandbox.preflight()?;
            let (writable, readable) =
                sandbox::extra_paths(self.config()?, &project.name, &harness.name);
            sandbox::check_visible(self.home, &project.path, &harness, &writable, &readable)?;
            argv = sandbox::wrap(
                &sandbox::Context {
                    home: self.home,
                    harness: &harness.name,
                    workspace: ws_path,
                    task_dir: &dir,
                    project_path: &project.path,
                    tmux_socket: self.tmux.socket_path(),
                    extra_writable: &writable,
                    extra_readable: &readable,
                },
                &argv,
            )?;
        }
        // A new agent: what the last one's hooks said, its dialogs and last words are not
        // its own (the total of nudges is kept).
        let before = crate::orchestration::agent::load(&dir);
        crate::orchestration::agent::save(
            &dir,
            &crate::orchestration::agent::AgentInfo {
                nudges: before.nudges,
                ..Default::default()
            },
        )?;
        // The intent first: what the agent is started with (its conversation, its
        // permission mode) is on disk before it runs, for a repair to adopt it with.
        self.store.save(task)?;
        let mut name = tmux::session_name(&task.project, &task.branch);
        if self.tmux.has_session(&name)? {
            name = format!("{name}-{}", task.id);
        }
        // Tasks run in tmux, started through the session layer as lanes are.
        let mux = Mux::Tmux(self.tmux.clone());
        let started = mux.start(
            &NewSession {
                name,
                cwd: ws_path.to_path_buf(),
                env: session_env(self.home, project, task, ws_name, ws_path),
                command: argv,
                width: None,
                height: None,
                // The task's mark (for the plugin's keys, picker, Ctrl+\\ and Ctrl+]) and what
                // the next command needs to adopt or stop it if this one dies before saving.
                marks: crate::execution::session::task_marks(
                    self.home,
                    &task.project,
                    &task.id,
                    ws_name,
                ),
            },
            // tmux keeps a dead pane's exit status itself: no exit file.
            Path::new(""),
        )?;
        task.workspace = Some(ws_name.to_string());
        task.tmux_session = Some(started.target);
        task.tmux_session_id = started.id;
        task.tmux_server = self.tmux.server_identity()?;
        task.tmux_pane_id = started.pane;
        Ok(())
    }

    /// Restart the agent of an active task whose session is gone or whose agent exited,
    /// in the same workspace and branch.
    pub fn respawn(&mut self, id: &str, project: Option<&str>) -> Result<Task> {
        self.respawn_with(id, project, None)
    }

    /// Respawn with a policy message: `Recovery::Prompt` replaces the resume prompt,
    /// `Recovery::Append` adds to it.
    pub fn respawn_with(
        &mut self,
        id: &str,
        project: Option<&str>,
        message: Option<Recovery>,
    ) -> Result<Task> {
        let task = self.get(id, project)?;
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        if task.status == Status::Failed {
            // It never started (or could not restart): try again from the start.
            task.status = Status::Pending;
            task.updated_at = store::now_rfc3339();
            self.store.save(&task)?;
            self.store.append_history(
                &task,
                "status.changed",
                json!({"from": Status::Failed, "to": Status::Pending, "via": "task.respawn"}),
            )?;
            return match self.spawn_locked(&task.project, &task.id) {
                // Queued again: it starts when a workspace is released.
                Err(OrangeError::PoolExhausted { .. }) => Ok(task),
                other => other,
            };
        }
        if !task.status.is_active() {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} is {}: only an active task can be respawned{}",
                task.id,
                task.status,
                if task.status == Status::Pending {
                    " (use `orange task spawn`)"
                } else {
                    ""
                }
            )));
        }
        let view = SessionView::of(&task, &self.panes());
        if view.state == crate::orchestration::attention::session::SessionState::Live {
            return Err(OrangeError::InvalidTransition(format!(
                "task {}'s agent is still running in {}; attach to it or cancel the task",
                task.id,
                task.tmux_session.as_deref().unwrap_or("?")
            )));
        }
        let project = project::get(self.home, &task.project)?;
        let harness = Harness::named(&task.harness, self.config()?)?;
        self.preflight(&harness)?;
        // The people looking at the dead agent are taken to the new one.
        let mut watchers = vec![];
        if let Some(old) = task.tmux_session_id.clone() {
            watchers = self.tmux.clients_of(&old)?;
            self.tmux.kill_session(&old)?;
        }
        let (ws_name, ws_path) = match &task.workspace {
            Some(w) => {
                let ws = pool::find(self.home, w)?;
                (ws.name, ws.path)
            }
            None => {
                return Err(OrangeError::invalid(format!(
                    "task {} has no workspace to respawn in",
                    task.id
                )))
            }
        };
        if !git::is_worktree_of(&project.path, &ws_path) {
            return Err(OrangeError::WorkspaceNotFound(format!(
                "{ws_name}: its directory is gone; cancel the task (its branch {} is kept) and create it again",
                task.branch
            )));
        }
        self.recovery = message;
        let started = self.start_in_workspace(
            &project,
            &mut task,
            &harness,
            &ws_name,
            &ws_path,
            Launch::Respawn,
        );
        self.recovery = None;
        started?;
        crate::adapters::fault::point("respawn.started");
        if let Some(new) = &task.tmux_session_id {
            for c in &watchers {
                let _ = self.tmux.switch_client_of(Some(c), new);
            }
        }
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "agent.respawned",
            json!({"workspace": ws_name, "tmux_session": task.tmux_session}),
        )?;
        Ok(task)
    }

    /// Change status (on the map; done/cancelled only through merge/cancel).
    pub fn set_status(&mut self, task: &Task, to: Status, via: &str) -> Result<Task> {
        if to == Status::Failed {
            return Err(OrangeError::InvalidTransition(
                "a task becomes failed only when it cannot start".into(),
            ));
        }
        if to.is_final() {
            return Err(OrangeError::InvalidTransition(format!(
                "a task becomes {to} only through `orange task {}`",
                if to == Status::Done {
                    "merge"
                } else {
                    "cancel"
                }
            )));
        }
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        if task.status == to {
            return Ok(task);
        }
        if !task.status.can_become(to) {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} cannot go from {} to {to}",
                task.id, task.status
            )));
        }
        let from = task.status;
        task.status = to;
        // Progress resets the crash count; becoming stuck keeps it (it says why).
        if to != Status::Stuck {
            task.crash_count = 0;
        }
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "status.changed",
            json!({"from": from, "to": to, "via": via}),
        )?;
        if matches!(to, Status::Reviewing | Status::Stuck) {
            self.write_outcome(&task, to.as_str());
        }
        Ok(task)
    }

    /// Count a crash (the agent exited without reporting an outcome); returns the count.
    pub fn record_crash(&mut self, task: &Task, reason: &str) -> Result<u32> {
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        // Cancelled or merged meanwhile: its agent's end is no crash.
        if !task.status.is_active() {
            return Ok(task.crash_count);
        }
        task.crash_count += 1;
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "agent.crashed",
            json!({"crash_count": task.crash_count, "reason": reason}),
        )?;
        Ok(task.crash_count)
    }

    /// Active tasks whose session is gone (after a reboot or a tmux server restart).
    pub fn orphaned(&self) -> Result<Vec<Task>> {
        let panes = self.panes();
        Ok(self
            .store
            .list_open(None)?
            .into_iter()
            .filter(|t| {
                t.status.is_active()
                    && t.workspace.is_some()
                    && SessionView::of(t, &panes).state
                        == crate::orchestration::attention::session::SessionState::None
            })
            .collect())
    }

    /// `.orange-outcome` in the workspace: the agent reported a result (the monitor's
    /// "required outcome").
    fn write_outcome(&self, task: &Task, outcome: &str) {
        if let Some(w) = &task.workspace {
            if let Ok(ws) = pool::find(self.home, w) {
                // Replaced, never written through: the agent may have left a symbolic
                // link there.
                let _ = store::write_bytes_atomic(
                    &ws.path.join(".orange-outcome"),
                    format!("{outcome}\n").as_bytes(),
                );
            }
        }
    }

    pub fn set_summary(&mut self, task: &Task, summary: &str) -> Result<Task> {
        validate_summary(summary)?;
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        task.summary = summary.to_string();
        // A summary given is the task's prompt: no longer waiting for one.
        task.awaiting_prompt = false;
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store
            .append_history(&task, "summary.changed", json!({}))?;
        Ok(task)
    }

    /// Rename the task's branch (`Some`), or record the branch the agent switched to (`None`).
    pub fn set_branch(&mut self, task: &Task, new: Option<&str>) -> Result<Task> {
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        let ws_path = match &task.workspace {
            Some(w) => Some(pool::find(self.home, w)?.path),
            None => None,
        };
        let new = match (new, &ws_path) {
            (Some(b), _) => {
                validate_branch(b)?;
                b.to_string()
            }
            (None, Some(p)) => git::current_branch(p)?.ok_or_else(|| {
                OrangeError::invalid("the workspace is on a detached HEAD; pass --branch NAME")
            })?,
            (None, None) => {
                return Err(OrangeError::invalid(
                    "the task has no workspace yet; pass --branch NAME",
                ))
            }
        };
        if new == task.branch {
            return Ok(task);
        }
        self.check_branch_free(&task.project, &new, Some(&task.id))?;
        if let Some(p) = &ws_path {
            if git::current_branch(p)?.as_deref() == Some(task.branch.as_str()) {
                git::rename_branch(p, &task.branch, &new)?;
            }
        }
        let old = std::mem::replace(&mut task.branch, new);
        // The branch stands for the summary until the first prompt is known.
        if task.awaiting_prompt && task.summary == old {
            task.summary = task.branch.clone();
        }
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "branch.changed",
            json!({"from": old, "to": task.branch}),
        )?;
        Ok(task)
    }

    /// Merge the task's branch (or skip when its PR is merged), then return its workspace,
    /// kill its session, mark it done and start the next queued task.
    pub fn merge(
        &mut self,
        id: &str,
        project: Option<&str>,
        ff_only: bool,
        local: bool,
    ) -> Result<(Task, serde_json::Value, NextSpawn)> {
        let task = self.get(id, project)?;
        let project = project::get(self.home, &task.project)?;
        let (task, info) = {
            let _lock = self.store.lock(&task.project)?;
            let mut task = self.store.load(&task.project, &task.id)?;
            if !task.status.can_become(Status::Done) {
                return Err(OrangeError::InvalidTransition(format!(
                    "task {} is {}; only a working, reviewing or stuck task can be merged",
                    task.id, task.status
                )));
            }
            let ws = match &task.workspace {
                Some(w) => Some(pool::find(self.home, w)?),
                None => None,
            };
            if let Some(ws) = &ws {
                if git::is_worktree_of(&project.path, &ws.path) {
                    let keep = pool::load(self.home)?
                        .workspaces
                        .get(&ws.name)
                        .map(|s| s.keep.clone())
                        .unwrap_or_default();
                    if let Some(detail) = git::unsaved_work(&ws.path, "HEAD", &keep)? {
                        return Err(OrangeError::WorktreeDirty {
                            path: ws.path.clone(),
                            detail,
                        });
                    }
                }
            }
            let pr = if local {
                gh::Pr::Unknown {
                    reason: "--local: PR not checked".into(),
                }
            } else {
                gh::pr_for_branch(&project.path, &task.branch)
            };
            let via;
            let commit;
            if pr.is_merged() {
                via = "pr";
                commit = None;
            } else if git::is_merged(&project.path, &task.branch, &project.default_branch)? {
                via = "already-merged";
                commit = None;
            } else {
                via = if ff_only { "ff" } else { "merge" };
                commit = Some(
                    git::merge_into(
                        &project.path,
                        &project.default_branch,
                        &task.branch,
                        ff_only,
                    )
                    .map_err(|e| match e {
                        OrangeError::BackendCommandFailed(m) if ff_only => {
                            OrangeError::BackendCommandFailed(format!(
                                "{m}; rebase the task branch on {} or use --strategy merge",
                                project.default_branch
                            ))
                        }
                        other => other,
                    })?,
                );
            }
            if let gh::Pr::Found { .. } = &pr {
                task.pr = serde_json::to_value(&pr).ok();
            }
            let info = json!({"via": via, "commit": commit, "pr": pr});
            crate::adapters::fault::point("merge.merged");
            self.end(&mut task, Status::Done, "task.merged", info.clone())?;
            crate::adapters::fault::point("merge.recorded");
            self.finish(&mut task, &project)?;
            (task, info)
        };
        let next = self.spawn_next(&project.name);
        Ok((task, info, next))
    }

    /// The last status change of a task (done or cancelled): saved, with its event and
    /// the status change in history.
    fn end(
        &mut self,
        task: &mut Task,
        to: Status,
        event: &str,
        info: serde_json::Value,
    ) -> Result<()> {
        let from = task.status;
        task.status = to;
        task.updated_at = store::now_rfc3339();
        self.store.save(task)?;
        self.store.append_history(task, event, info)?;
        self.store
            .append_history(task, "status.changed", json!({"from": from, "to": to}))
    }

    /// After a task is recorded done or cancelled (the intent first, so that a crash here
    /// leaves what `reconcile` finishes): kill its session and return its workspace, kept
    /// bound with a note when it holds uncommitted work (nothing is lost). Saves the task.
    fn finish(&mut self, task: &mut Task, project: &Project) -> Result<Option<String>> {
        if let Some(s) = task.tmux_session_id.clone().or(task.tmux_session.clone()) {
            self.tmux.kill_session(&s)?;
        }
        let mut kept = None;
        if let Some(w) = task.workspace.clone() {
            // Only while it is still this task's (a crash may have released it already).
            match pool::release_held_by(self.home, project, &w, &task.id, false) {
                Ok(_) | Err(OrangeError::WorkspaceNotFound(_)) => {
                    task.workspace = None;
                    self.store.save(task)?;
                }
                Err(OrangeError::WorktreeDirty { detail, .. }) => {
                    task.workspace_kept = true;
                    self.store.save(task)?;
                    kept = Some(format!(
                        "workspace {w} kept bound: it has uncommitted work ({detail}); release it with `orange workspace release {w} --force` when you are done with it"
                    ));
                    self.store.append_history(
                        task,
                        "workspace.kept",
                        json!({"workspace": w, "reason": detail}),
                    )?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(kept)
    }

    pub fn cancel(
        &mut self,
        id: &str,
        project: Option<&str>,
    ) -> Result<(Task, Option<String>, NextSpawn)> {
        let task = self.get(id, project)?;
        let project = project::get(self.home, &task.project)?;
        let (task, note) = {
            let _lock = self.store.lock(&task.project)?;
            let mut task = self.store.load(&task.project, &task.id)?;
            if !task.status.can_become(Status::Cancelled) {
                return Err(OrangeError::InvalidTransition(format!(
                    "task {} is already {}",
                    task.id, task.status
                )));
            }
            self.end(&mut task, Status::Cancelled, "task.cancelled", json!({}))?;
            crate::adapters::fault::point("cancel.recorded");
            let note = self.finish(&mut task, &project)?;
            (task, note)
        };
        let next = self.spawn_next(&project.name);
        Ok((task, note, next))
    }

    pub fn delete(&mut self, id: &str, project: Option<&str>) -> Result<Task> {
        let task = self.get(id, project)?;
        let _lock = self.store.lock(&task.project)?;
        let task = self.store.load(&task.project, &task.id)?;
        if !task.status.is_deletable() {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} is {}; only done, cancelled or failed tasks can be deleted (cancel it first)",
                task.id, task.status
            )));
        }
        // A cancelled task keeps a workspace with uncommitted work: deleting the record would
        // leave that workspace bound to a task that no longer exists.
        if let Some(w) = &task.workspace {
            if pool::bindings(self.home, &task.project)?
                .iter()
                .any(|(n, l)| n == w && *l == task.id)
            {
                return Err(OrangeError::InvalidTransition(format!(
                    "task {} still holds workspace {w} (kept for its uncommitted work); save that work, then `orange workspace release {w} --force`, then delete the task",
                    task.id
                )));
            }
        }
        self.store.remove(&task)?;
        let _ = std::fs::remove_file(self.home.sidebar_cache(&task.project, &task.id));
        Ok(task)
    }

    /// Start the project's oldest pending task, if a workspace is free (FIFO). Never
    /// fails the command that called it. A queued task that cannot start becomes `failed`
    /// (with its reason) and the next one is tried: the queue never jams.
    pub fn spawn_next(&mut self, project: &str) -> NextSpawn {
        let mut next = NextSpawn::default();
        let result = (|| -> Result<()> {
            let _lock = self.store.lock(project)?;
            // No tmux: no task could start; none is failed for it.
            self.tmux.preflight()?;
            let queued: Vec<Task> = self
                .store
                .list_open(Some(project))?
                .into_iter()
                .filter(|t| t.status == Status::Pending)
                .collect();
            for t in queued {
                match self.spawn_locked(project, &t.id) {
                    Ok(t) => {
                        self.store.append_history(
                            &t,
                            "auto.spawned",
                            json!({"reason": "a workspace was released"}),
                        )?;
                        next.spawned = Some(t.id);
                        return Ok(());
                    }
                    Err(OrangeError::PoolExhausted { .. }) => return Ok(()),
                    Err(e @ OrangeError::TaskFailed { .. }) => next.failed.push(FailedStart {
                        id: t.id.clone(),
                        error: e.to_string(),
                    }),
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            next.error = Some(e.to_string());
        }
        next
    }

    /// After crash repairs that freed workspaces: start what waits in those projects'
    /// queues.
    pub fn after_repairs(
        &mut self,
        repairs: &[crate::orchestration::repair::Repair],
    ) -> Vec<NextSpawn> {
        let projects: std::collections::BTreeSet<&str> = repairs
            .iter()
            .filter_map(|r| r.freed_in.as_deref())
            .collect();
        projects.into_iter().map(|p| self.spawn_next(p)).collect()
    }

    /// The session target of a task with a session.
    pub fn session_target(&self, task: &Task) -> Result<String> {
        task.tmux_session_id
            .clone()
            .or(task.tmux_session.clone())
            .ok_or_else(|| {
                OrangeError::invalid(format!(
                    "task {} has no session (status {})",
                    task.id, task.status
                ))
            })
    }
}

/// The longest branch name orange takes (bytes): it becomes a tmux session name and a
/// line of every listing.
pub const MAX_BRANCH: usize = 200;
/// The longest summary orange takes (characters); longer text belongs in TASK.md
/// (`--context -`).
pub const MAX_SUMMARY: usize = 2000;

/// A summary: no control characters but newlines and tabs, at most [`MAX_SUMMARY`].
pub fn validate_summary(s: &str) -> Result<()> {
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(OrangeError::invalid("summary contains control characters"));
    }
    let n = s.chars().count();
    if n > MAX_SUMMARY {
        return Err(OrangeError::invalid(format!(
            "summary is {n} characters long; at most {MAX_SUMMARY} (put the details in TASK.md with --context -)"
        )));
    }
    Ok(())
}

/// Branch names: what git accepts as a branch, and never a leading `-`.
pub fn validate_branch(b: &str) -> Result<()> {
    if b.len() > MAX_BRANCH {
        return Err(OrangeError::invalid(format!(
            "branch name is {} bytes long; at most {MAX_BRANCH}",
            b.len()
        )));
    }
    if !git::valid_branch_name(b) {
        return Err(OrangeError::invalid(format!(
            "invalid branch name {b:?}: git refuses it (no spaces, '..', ':', '~', '^', '?', '*', '[', '\\', leading '-' or '.', trailing '/' or '.lock')"
        )));
    }
    Ok(())
}

fn session_env(
    home: &Home,
    project: &Project,
    task: &Task,
    ws_name: &str,
    ws_path: &Path,
) -> Vec<(String, String)> {
    let mut env = vec![];
    if let Some((_, index)) = pool::parse_name(ws_name) {
        env.push(("ORANGE_WORKSPACE_INDEX".to_string(), index.to_string()));
        if let Some(port) = project::port_for(project, index) {
            env.push(("ORANGE_PORT".to_string(), port.to_string()));
        }
    }
    env.extend([
        ("ORANGE_TASK_ID".to_string(), task.id.clone()),
        ("ORANGE_PROJECT".to_string(), task.project.clone()),
        ("ORANGE_BRANCH".to_string(), task.branch.clone()),
        (
            "ORANGE_WORKSPACE".to_string(),
            ws_path.display().to_string(),
        ),
        ("ORANGE_WORKSPACE_NAME".to_string(), ws_name.to_string()),
        ("ORANGE_HOME".to_string(), home.root.display().to_string()),
    ]);
    if let Ok(sock) = std::env::var("ORANGE_TMUX_SOCKET") {
        env.push(("ORANGE_TMUX_SOCKET".to_string(), sock));
    }
    // The agent and its hooks call `orange`: make this very binary the one they find.
    if let Ok(exe) = std::env::current_exe() {
        env.push(("ORANGE_BIN".to_string(), exe.display().to_string()));
        if let Some(dir) = exe.parent() {
            let path = std::env::var("PATH").unwrap_or_default();
            env.push(("PATH".to_string(), format!("{}:{path}", dir.display())));
        }
    }
    env
}

/// The first prompt: the summary verbatim, then how to report back.
pub fn first_prompt(task: &Task) -> Option<String> {
    if task.awaiting_prompt || task.summary.trim().is_empty() {
        return None;
    }
    Some(format!(
        "{}\n\n(orange task {}, project {}, branch {}. The full task is in TASK.md. Commit your work on this branch and do not push. When you are done run `orange task complete`; if you cannot go on, run `orange task stuck`.)",
        task.summary, task.id, task.project, task.branch
    ))
}

pub fn respawn_prompt(task: &Task) -> String {
    format!(
        "Resuming: {}\n\n(orange task {}, project {}, branch {}, status {}. Your previous session ended. Read TASK.md and `git log` of this branch for the progress so far, then continue. When you are done run `orange task complete`; if you cannot go on, run `orange task stuck`.)",
        task.summary, task.id, task.project, task.branch, task.status
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_waiting_for_its_first_prompt_has_none() {
        let task = Task {
            summary: "feat/x".into(),
            awaiting_prompt: true,
            ..Task::default()
        };
        assert_eq!(first_prompt(&task), None, "the branch is no prompt");
    }

    #[test]
    fn hostile_branch_names_are_refused() {
        for bad in [
            "a b", "a..b", "a:b", "-x", "--force", "a~1", "x^", "a?b", "a*", "a[b", "a\\b",
            ".hidden", "a/", "x.lock", "",
        ] {
            assert!(validate_branch(bad).is_err(), "{bad:?}");
        }
        for good in ["feature/x", "fix-1", "orange-tasks/abc123", "v1.2"] {
            assert!(validate_branch(good).is_ok(), "{good:?}");
        }
    }
}
