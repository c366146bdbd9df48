//! Starting a task's agent: create (everything checked before anything is recorded),
//! spawn (a workspace, the branch, TASK.md, then the agent through the launcher),
//! respawn (the same workspace and branch, the conversation continued where the program
//! can; `--force` first stops a live agent's whole process tree). A task that cannot
//! start is `failed`, holding nothing; a full pool queues it.

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::adapters::git;
use crate::adapters::process::{self, Stopped};
use crate::adapters::store;
use crate::adapters::tmux::PaneInfo;
use crate::error::{OrangeError, Result};
use crate::execution::config::HEADLESS;
use crate::execution::harness::{Harness, Mode, Start};
use crate::execution::launch::{self, Launch, Owner, Workspace};
use crate::execution::pool;
use crate::execution::resources::Limits;
use crate::execution::sandbox;
use crate::execution::session::{self, Mux};
use crate::orchestration::attention::session::{agent_pane, SessionState};
use crate::orchestration::attention::SessionView;
use crate::orchestration::project::{self, Project};
use crate::orchestration::task::model::{
    self, first_prompt, respawn_prompt, validate_branch, validate_summary, SendKind, Status, Task,
};
use crate::orchestration::task::service::{Recovery, TaskService};

/// Where a task started together with others hands its session to be made with theirs
/// (`fanout.rs`), and gets it back made.
pub(super) type Hand<'a> = dyn Fn(launch::Prepared) -> Result<session::Started> + 'a;

/// How long a live agent stopped by `task respawn --force` has after SIGTERM before the
/// processes left get SIGKILL.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

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
    /// `--headless`: one-shot, whatever config.toml's `mode` says.
    pub headless: bool,
    /// The group it is a member of (`orchestration::group`).
    pub group: Option<String>,
    /// `--memory/--cpu/--pids` as typed (over the project's and the harness's).
    pub limits: crate::execution::resources::LimitConfig,
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
    /// Its resource limits are only partly enforced here (prlimit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What the checks of several tasks created together ([`TaskService::check_create`]) read
/// once for all of them.
pub(super) struct Shared {
    /// The project's worktrees and their branches (one `git worktree list`).
    checked_out: git::CheckedOut,
}

impl Shared {
    /// `checked_out`: the worktrees when the caller has just read them (`None`: read
    /// here). `spawn`: some of the tasks start now, so the project's base is resolved
    /// (once: it must name a commit).
    pub(super) fn read(
        project: &Project,
        checked_out: Option<git::CheckedOut>,
        spawn: bool,
    ) -> Result<Shared> {
        let checked_out = match checked_out {
            Some(c) => c,
            None => git::checked_out_branches(&project.path)?,
        };
        if spawn {
            git::base_ref(&project.path, &project.default_branch)?;
        }
        Ok(Shared { checked_out })
    }
}

impl TaskService<'_> {
    pub fn create(&mut self, project: &Project, req: CreateRequest) -> Result<Created> {
        let (harness, sandbox, limits) = self.check_create(project, &req, None)?;
        crate::adapters::fault::point("create.checked");
        // Limits nothing here can enforce, or a cgroup the kernel will not make with them,
        // are refused before anything is recorded.
        let warning = self.check_limits(&limits)?;
        let task = {
            let _lock = self.store.lock(&project.name)?;
            self.record_new(project, &req, &harness, sandbox, limits)?
        };
        if !req.spawn {
            return Ok(Created {
                task,
                outcome: "pending",
                note: None,
                warning,
            });
        }
        // Its harness is at the account's usage limit: no new agent of it starts now.
        let now = crate::orchestration::limits::clock();
        if let Some(until) = crate::orchestration::limits::held(self.home, &task.harness, now) {
            return Ok(Created {
                task,
                outcome: "queued",
                note: Some(format!(
                    "held: {} is at its usage limit until {}; the task starts after the reset",
                    harness.name,
                    crate::execution::harness::limit::short(until, now)
                )),
                warning,
            });
        }
        match self.spawn(&task.id, Some(&project.name)) {
            Ok(task) => Ok(Created {
                task,
                outcome: "spawned",
                note: None,
                warning: warning.clone(),
            }),
            Err(OrangeError::PoolExhausted { bound, size, .. }) => {
                let task = self.store.load(&project.name, &task.id)?;
                Ok(Created {
                    task,
                    outcome: "queued",
                    note: Some(format!("the pool is full ({bound}/{size}); the task starts when a workspace is released")),
                    warning,
                })
            }
            Err(e @ OrangeError::CapReached { .. }) => {
                let task = self.store.load(&project.name, &task.id)?;
                Ok(Created {
                    task,
                    outcome: "queued",
                    note: Some(e.to_string()),
                    warning,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Everything that can be checked before anything is recorded (a task that cannot
    /// start must not be left behind, pending and hidden): its branch, its summary, its
    /// harness, its sandbox (one that cannot run here, even for a task not started yet),
    /// and when it starts now, tmux, its program and the project's base. `shared`: what
    /// the caller read once for many tasks (`None`: read here).
    pub(super) fn check_create(
        &mut self,
        project: &Project,
        req: &CreateRequest,
        shared: Option<&Shared>,
    ) -> Result<(Harness, sandbox::Kind, Limits)> {
        if let Some(b) = &req.branch {
            check_new_branch(project, b, shared.map(|s| &s.checked_out[..]))?;
        }
        if let Some(s) = &req.summary {
            if s.trim().is_empty() {
                return Err(OrangeError::invalid(
                    "the summary is empty: give the agent's prompt, or leave the summary out to start the agent interactive, with no prompt (you type the first one in its pane)",
                ));
            }
            validate_summary(s)?;
        }
        let home = self.home;
        let config = self.config()?;
        let harness = Harness::resolve(req.harness.as_deref(), config)?;
        if req.headless && !(harness.is_builtin() && HEADLESS.contains(&harness.name.as_str())) {
            return Err(OrangeError::invalid(format!(
                "--headless: harness {:?} has no one-shot mode (only {} have one)",
                harness.name,
                HEADLESS.join(", ")
            )));
        }
        let sandbox = sandbox::choose(req.sandbox.as_deref(), project, config, &harness.name)?;
        launch::check_sandbox(home, config, project, &harness, sandbox)?;
        let limits = config.limits_for(&req.limits, &project.name, &harness.name)?;
        if req.spawn {
            self.preflight(&harness)?;
            if shared.is_none() {
                git::base_ref(&project.path, &project.default_branch)?;
            }
        }
        Ok((harness, sandbox, limits))
    }

    /// Record a new pending task (the project's lock held): its id, its branch, task.json,
    /// TASK.md and its first history event.
    pub(super) fn record_new(
        &mut self,
        project: &Project,
        req: &CreateRequest,
        harness: &Harness,
        sandbox: sandbox::Kind,
        limits: Limits,
    ) -> Result<Task> {
        let id = model::new_id(|id| self.store.dir(&project.name, id).exists());
        let task = new_task(project, req, harness, (sandbox, limits), id);
        self.check_branch_free(&project.name, &task.branch, None)?;
        self.write_new(&task, req)?;
        Ok(task)
    }

    /// Write a new task's files: its directory, TASK.md, task.json and its first history
    /// event (the project's lock held).
    pub(super) fn write_new(&self, task: &Task, req: &CreateRequest) -> Result<()> {
        let project = &task.project;
        let dir = self.store.dir(project, &task.id);
        store::ensure_dir(&dir)?;
        let md = self.store.task_md(project, &task.id);
        std::fs::write(
            &md,
            model::task_md(req.summary.as_deref().unwrap_or(""), req.context.as_deref()),
        )
        .map_err(|e| OrangeError::io(format!("writing {}", md.display()), e))?;
        self.store.save(task)?;
        self.store.append_history(
            task,
            "task.created",
            json!({"branch": task.branch, "harness": task.harness, "sandbox": task.sandbox, "limits": task.limits, "prompt": !task.awaiting_prompt, "headless": task.headless}),
        )
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
    pub(super) fn spawn_locked(&mut self, project_name: &str, id: &str) -> Result<Task> {
        let mut task = self.store.load(project_name, id)?;
        if task.status != Status::Pending {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} is {}, only a pending task can be spawned (use `orange task respawn` for a dead session)",
                task.id, task.status
            )));
        }
        // The cap counted and the agent started under one lock: never over it.
        let _room = self.room_for(project_name, id)?;
        match self.start_pending(&mut task) {
            Ok(ws_name) => self.record_started(task, &ws_name),
            Err(e) => Err(self.not_started(project_name, id, e)?),
        }
    }

    /// A pending task's agent started in `ws_name`: the task is `working` (the project
    /// lock held).
    pub(super) fn record_started(&self, mut task: Task, ws_name: &str) -> Result<Task> {
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

    /// A pending task whose start failed with `e` (nothing of it left running): the
    /// error to return — `e` itself when it is transient (a full pool: the task waits in
    /// the queue), else `task_failed`, the task recorded `failed` with its reason.
    pub(super) fn not_started(
        &mut self,
        project_name: &str,
        id: &str,
        e: OrangeError,
    ) -> Result<OrangeError> {
        if !e.fails_the_task() {
            return Ok(e);
        }
        self.fail(project_name, id, &e)?;
        Ok(OrangeError::TaskFailed {
            id: id.to_string(),
            source: Box::new(e),
        })
    }

    /// Workspace, branch, session for a pending task; on failure nothing is left behind
    /// (the session killed, the workspace given back).
    fn start_pending(&mut self, task: &mut Task) -> Result<String> {
        let project = project::get(self.home, &task.project)?;
        let harness = Harness::named(&task.harness, self.config()?)?;
        self.preflight(&harness)?;
        let ws = pool::acquire(self.home, &project, &task.id, None, &self.store)?;
        crate::adapters::fault::point("spawn.acquired");
        let config = self.config.as_ref().expect("loaded above");
        let started = self.start_in_workspace(
            config,
            &project,
            task,
            &harness,
            &ws.name,
            &ws.path,
            Start::First,
            None,
        );
        if started.is_ok() {
            crate::adapters::fault::point("spawn.started");
        }
        if let Err(e) = started {
            self.undo_start(&project, task, &ws.name);
            return Err(e);
        }
        Ok(ws.name)
    }

    /// After a failed first start: its session, if it started, goes first; if it cannot
    /// be stopped, the workspace stays bound to the task (the crash repair finishes both).
    pub(super) fn undo_start(&self, project: &Project, task: &mut Task, ws_name: &str) {
        let stopped = match task.tmux_session_id.take() {
            Some(s) => self.tmux.kill_session(&s).is_ok(),
            None => true,
        };
        if stopped {
            let _ = pool::release(self.home, project, ws_name, true);
        }
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

    /// Check out the branch, link TASK.md, then start the agent through the launcher
    /// (its workspace setup, conversation, sandbox, environment and session), its intent
    /// recorded before it runs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_in_workspace(
        &self,
        config: &crate::execution::config::Config,
        project: &Project,
        task: &mut Task,
        harness: &Harness,
        ws_name: &str,
        ws_path: &Path,
        start: Start,
        together: Option<&Hand>,
    ) -> Result<()> {
        // A first start's record is the one just read or written (see the save below).
        let recorded = (start == Start::First).then(|| task.clone());
        if start == Start::First {
            check_out_branch(project, task, ws_path)?;
        }
        // The mode recorded at creation, whatever config.toml says now.
        let mut harness = harness.clone();
        harness.mode = if task.headless {
            Mode::Headless
        } else {
            Mode::Interactive
        };
        let harness = &harness;
        self.link_task_md(project, task, ws_path)?;
        let prompt = self.prompt_for(task, start);
        let prompt = super::send::hold_resume_prompt(task, harness, start, ws_path, prompt);
        let dir = self.store.dir(&task.project, &task.id);
        let (id, branch) = (task.id.clone(), task.branch.clone());
        // The conversation to continue (a first start begins a new one), and the
        // permission mode of the first start, which a respawn keeps.
        let known = match start {
            Start::Respawn => task.agent_session_id.clone(),
            Start::First => None,
        };
        let first_mode = task.permission_mode.clone();
        let agent_dir = sandbox::agent_dir(&dir);
        let task_md = dir.join("TASK.md");
        let mux = Mux::Tmux(self.tmux.clone());
        let launch = Launch {
            home: self.home,
            config,
            project,
            owner: Owner::Task(&id),
            branch: &branch,
            workspace: Workspace {
                path: ws_path,
                name: Some(ws_name),
            },
            harness,
            start,
            prompt,
            conversation: known.as_deref(),
            permission_mode: first_mode.as_deref(),
            sandbox: task.sandbox,
            limits: task.limits,
            agent_dir: &agent_dir,
            task_md: Some(&task_md),
            mux: &mux,
            exit_file: None,
            // The task's mark (for the plugin's keys, picker, Ctrl+\\ and Ctrl+]) and what
            // the next command needs to adopt or stop it if this one dies before saving.
            marks: self.marks(task, ws_name),
        };
        let ready = launch.prepare()?;
        // The intent first: what the agent is started with (its conversation, its
        // permission mode) is on disk before it runs, for a repair to adopt it with.
        if let Some(c) = &ready.conversation {
            task.agent_session_id = Some(c.id().to_string());
        } else if start == Start::First {
            // A program that names its conversation itself (codex) tells it by its hook.
            task.agent_session_id = None;
        }
        if start == Start::First {
            if let Some(mode) = &ready.permission_mode {
                task.permission_mode = Some(mode.clone());
            }
        }
        fresh_agent_info(&dir)?;
        // Written only when it says more than the record (a first start whose agent names
        // no conversation and keeps the mode changes nothing): each durable write is two
        // fsyncs before the agent runs, three side by side for a group.
        if recorded.as_ref() != Some(task) {
            self.store.save(task)?;
        }
        if let Some(h) = task.held.first().filter(|h| h.kind == SendKind::Resume) {
            let data = json!({"text": h.text, "kind": "resume", "via": "respawn"});
            self.store.append_history(task, "message.held", data)?;
        }
        // Several started together: their sessions are made at once, in their order (the
        // picker lists sessions in the order they were made).
        let started = match together {
            Some(hand) => hand(ready.prepared())?,
            None => ready.start()?.session,
        };
        task.workspace = Some(ws_name.to_string());
        task.tmux_session = Some(started.target);
        task.tmux_session_id = started.id;
        task.tmux_server = started.server;
        task.tmux_pane_id = started.pane;
        Ok(())
    }

    /// The marks of the task's session (for the plugin's keys, picker, Ctrl+\\ and
    /// Ctrl+]); a group member's also says its place under its group in the picker. A
    /// group record that cannot be read costs the member only that place.
    fn marks(&self, task: &Task, ws_name: &str) -> Vec<(String, String)> {
        let mut marks = session::task_marks(self.home, &task.project, &task.id, ws_name);
        let group = task.group.as_ref().and_then(|g| {
            crate::orchestration::group::GroupStore::new(self.home)
                .load(&task.project, g)
                .ok()
        });
        if let Some(prefix) = group.and_then(|g| g.picker_prefix(&task.branch)) {
            marks.push((session::TREE_MARK.into(), prefix));
        }
        marks
    }

    /// TASK.md linked into the workspace; orange's files excluded from git there.
    fn link_task_md(&self, project: &Project, task: &Task, ws_path: &Path) -> Result<()> {
        let link = ws_path.join("TASK.md");
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(self.store.task_md(&task.project, &task.id), &link)
                .map_err(|e| OrangeError::io(format!("linking {}", link.display()), e))?;
        }
        // Projects registered by an older orange may lack the newer exclude entries.
        git::ensure_excluded(&project.path, pool::EXCLUDED_FILES)
    }

    /// The agent's prompt. Started without a prompt and none known yet: still none (a
    /// resume prompt or a policy's message would be the agent's first task).
    fn prompt_for(&self, task: &Task, start: Start) -> Option<String> {
        match (start, &self.recovery) {
            _ if task.awaiting_prompt => None,
            (Start::First, _) => first_prompt(task),
            (Start::Respawn, None) => Some(respawn_prompt(task)),
            (Start::Respawn, Some(Recovery::Prompt(m))) => Some(m.clone()),
            (Start::Respawn, Some(Recovery::Append(m))) => {
                Some(format!("{}\n\n{m}", respawn_prompt(task)))
            }
        }
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
        self.respawn_as(id, project, message, None).map(|(t, _)| t)
    }

    /// `task respawn --force`: a live agent (hung, wedged in a tool call) is stopped — its
    /// whole process tree, SIGTERM then SIGKILL after [`STOP_GRACE`] — and started again
    /// like any respawn (the same workspace, branch, launcher and conversation). An agent
    /// that is not running is simply respawned. How it was stopped (`None`: it was not
    /// running) comes back with the task.
    pub fn respawn_forced(
        &mut self,
        id: &str,
        project: Option<&str>,
        reason: Option<&str>,
    ) -> Result<(Task, Option<Stopped>)> {
        self.respawn_as(id, project, None, Some(reason.unwrap_or("")))
    }

    /// A respawn; `forced`: the reason of a `--force` one (may be empty).
    fn respawn_as(
        &mut self,
        id: &str,
        project: Option<&str>,
        message: Option<Recovery>,
        forced: Option<&str>,
    ) -> Result<(Task, Option<Stopped>)> {
        let task = self.get(id, project)?;
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        if task.status == Status::Failed {
            return self.retry_failed(task).map(|t| (t, None));
        }
        check_respawnable(&task)?;
        // A dead agent started again counts against the caps like a new one (checked
        // before a live one is stopped: a refusal leaves it running).
        let _room = self.room_for(&task.project, &task.id)?;
        let panes = self.panes();
        let mut stopped = None;
        if SessionView::of(&task, &panes).state == SessionState::Live {
            if forced.is_none() {
                return Err(OrangeError::InvalidTransition(format!(
                    "task {id}'s agent is still running in {}; attach to it (`orange task attach {id}`), stop and restart it (`orange task respawn {id} --force`), or cancel the task",
                    task.tmux_session.as_deref().unwrap_or("?"),
                    id = task.id,
                )));
            }
            stopped = Some(self.stop_agent(&task, &panes)?);
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
        let (ws_name, ws_path) = self.workspace_to_respawn_in(&project, &task)?;
        // The agent restarted by hand is told why (after the resume prompt).
        let why = forced
            .map(crate::text::for_agent)
            .filter(|r| !r.is_empty())
            .map(|r| Recovery::Append(format!("It was stopped and restarted by hand: {r}")));
        self.recovery = message.or(why);
        let config = self.config.as_ref().expect("loaded above");
        let started = self.start_in_workspace(
            config,
            &project,
            &mut task,
            &harness,
            &ws_name,
            &ws_path,
            Start::Respawn,
            None,
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
        let mut data = json!({"workspace": ws_name, "tmux_session": task.tmux_session});
        if let Some(reason) = forced {
            data["forced"] = true.into();
            data["reason"] = reason.into();
            data["stopped"] = serde_json::to_value(&stopped).unwrap_or_default();
        }
        self.store.append_history(&task, "agent.respawned", data)?;
        Ok((task, stopped))
    }

    /// Stop the live agent of `task` (its pane's process and all its descendants).
    fn stop_agent(&self, task: &Task, panes: &[PaneInfo]) -> Result<Stopped> {
        let pane = agent_pane(task, panes).ok_or_else(|| {
            OrangeError::invalid(format!("task {}'s agent pane is gone", task.id))
        })?;
        process::stop_tree(pane.pane_pid, STOP_GRACE)
    }

    /// A failed task never started (or could not restart): try again from the start
    /// (queued again when the pool is full).
    fn retry_failed(&mut self, mut task: Task) -> Result<Task> {
        task.status = Status::Pending;
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        self.store.append_history(
            &task,
            "status.changed",
            json!({"from": Status::Failed, "to": Status::Pending, "via": "task.respawn"}),
        )?;
        match self.spawn_locked(&task.project, &task.id) {
            // Queued again: it starts when a workspace is released.
            Err(OrangeError::PoolExhausted { .. } | OrangeError::CapReached { .. }) => Ok(task),
            other => other,
        }
    }

    /// The workspace a task's agent is respawned in: its own, still a worktree of the
    /// project.
    fn workspace_to_respawn_in(
        &self,
        project: &Project,
        task: &Task,
    ) -> Result<(String, std::path::PathBuf)> {
        let Some(w) = &task.workspace else {
            return Err(OrangeError::invalid(format!(
                "task {} has no workspace to respawn in",
                task.id
            )));
        };
        let ws = pool::find(self.home, w)?;
        if !git::is_worktree_of(&project.path, &ws.path) {
            return Err(OrangeError::WorkspaceNotFound(format!(
                "{}: its directory is gone; cancel the task (its branch {} is kept) and create it again",
                ws.name, task.branch
            )));
        }
        Ok((ws.name, ws.path))
    }
}

/// A new pending task's record, `id` given (nothing written).
pub(super) fn new_task(
    project: &Project,
    req: &CreateRequest,
    harness: &Harness,
    (sandbox, limits): (sandbox::Kind, Limits),
    id: String,
) -> Task {
    let branch = req
        .branch
        .clone()
        .unwrap_or_else(|| format!("orange-tasks/{id}"));
    let now = store::now_precise();
    // No prompt: the branch stands for the summary until the first prompt is known.
    let summary = req.summary.clone().unwrap_or_else(|| branch.clone());
    Task {
        id,
        project: project.name.clone(),
        branch,
        harness: harness.name.clone(),
        status: Status::Pending,
        sandbox,
        limits,
        summary,
        awaiting_prompt: req.summary.is_none(),
        headless: req.headless || harness.mode == Mode::Headless,
        created_at: now.clone(),
        updated_at: now,
        group: req.group.clone(),
        ..Task::default()
    }
}

/// Only an active task's agent is respawned (a pending one is spawned).
fn check_respawnable(task: &Task) -> Result<()> {
    if task.status.is_active() {
        return Ok(());
    }
    Err(OrangeError::InvalidTransition(format!(
        "task {} is {}: only an active task can be respawned{}",
        task.id,
        task.status,
        if task.status == Status::Pending {
            " (use `orange task spawn`)"
        } else {
            ""
        }
    )))
}

/// A branch a new task may take: a valid name, not the project's default branch, checked
/// out nowhere (`checked_out`: the worktrees' branches, when the caller has read them).
fn check_new_branch(
    project: &Project,
    b: &str,
    checked_out: Option<&[(std::path::PathBuf, String)]>,
) -> Result<()> {
    validate_branch(b)?;
    if *b == project.default_branch {
        return Err(OrangeError::invalid(format!(
            "{b:?} is project {}'s default branch: a task works on a branch of its own and is merged into it",
            project.name
        )));
    }
    let at = match checked_out {
        Some(list) => list.iter().find(|(_, br)| br == b).map(|(p, _)| p.clone()),
        None => git::branch_checked_out_at(&project.path, b)?,
    };
    if let Some(at) = at {
        return Err(OrangeError::invalid(format!(
            "branch {b:?} is checked out in {}; a branch can be checked out in one worktree only (switch that worktree to another branch first)",
            at.display()
        )));
    }
    Ok(())
}

/// The task's branch checked out in its workspace (a branch is checked out in one
/// worktree only; one not made yet is checked out nowhere: no `git worktree list` then).
fn check_out_branch(project: &Project, task: &Task, ws_path: &Path) -> Result<()> {
    let free = || {
        let Some(at) = git::branch_checked_out_at(&project.path, &task.branch)? else {
            return Ok(());
        };
        let at_c = at.canonicalize().unwrap_or(at.clone());
        if at_c == ws_path.canonicalize().unwrap_or(ws_path.to_path_buf()) {
            return Ok(());
        }
        Err(OrangeError::invalid(format!(
            "branch {:?} is checked out in {}; a branch can be checked out in one worktree only (switch that worktree to another branch first)",
            task.branch,
            at.display()
        )))
    };
    git::checkout_task_branch(ws_path, &task.branch, &free)?;
    Ok(())
}

/// A new agent: what the last one's hooks said, its dialogs and last words are not its
/// own (the total of nudges is kept). Nothing to forget when no agent ran yet (no record:
/// nothing written).
fn fresh_agent_info(task_dir: &Path) -> Result<()> {
    use crate::orchestration::agent;
    if !agent::info_path(task_dir).exists() && !task_dir.join("agent.json").exists() {
        return Ok(());
    }
    let before = agent::load(task_dir);
    agent::save(
        task_dir,
        &agent::AgentInfo {
            nudges: before.nudges,
            ..Default::default()
        },
    )
}
