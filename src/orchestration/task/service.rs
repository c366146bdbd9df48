//! The task service ([`TaskService`]): a task's record and its session state, and the
//! changes that need no agent started or stopped (status, crash count, summary, branch).
//! Starting agents is `start.rs`, the queue `queue.rs`, merge, cancel and delete
//! `merge.rs` (more `impl TaskService` blocks). Built from the workspace pool, the
//! session layer, git and the task store; it owns no worktree or tmux code of its own.

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::adapters::git;
use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{PaneInfo, Tmux};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::Harness;
use crate::execution::pool;
use crate::execution::resources::Limits;
use crate::orchestration::attention::next::NextStep;
use crate::orchestration::attention::session::SessionState;
use crate::orchestration::attention::summary::{item_of, Agents};
use crate::orchestration::attention::{agent_state, SessionView};
use crate::orchestration::task::model::{self, validate_branch, validate_summary, Status, Task};
use crate::orchestration::task::store::TaskStore;

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
    /// When it needs you, what moves it on (`attention::next`); `null` otherwise.
    pub next_step: Option<NextStep>,
    /// The usage limit that holds it: `limited until 15:00` (its agent stopped on it) or
    /// `held: limit until 15:00` (queued while its harness is limited); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// The panes its agent split off its window (Claude Code's agent teams), each with
    /// its state; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub teammates: Vec<crate::orchestration::teammates::Teammate>,
    /// Its reviewer agent (`task review --agent`, `[review] on_complete`), the last one;
    /// absent when it never had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<crate::orchestration::review::record::Reviewer>,
    /// What its agent's process tree uses (memory, CPU), as the monitor last read it;
    /// absent while no agent runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::orchestration::footprint::Usage>,
    /// Why its agent never started (joining its cgroup failed); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_started: Option<String>,
}

/// What happens to tasks: the one service every command and the monitor go through.
pub struct TaskService<'a> {
    pub home: &'a Home,
    pub store: TaskStore,
    pub tmux: Tmux,
    pub(super) config: Option<Config>,
    pub(super) recovery: Option<Recovery>,
    /// The limits this command proved already ([`TaskService::check_limits`]), with
    /// their warning: a group's members are proved once, not once per member.
    proved: Vec<(Limits, Option<String>)>,
}

/// A policy's message for a respawned agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    Prompt(String),
    Append(String),
}

impl<'a> TaskService<'a> {
    pub fn new(home: &'a Home) -> TaskService<'a> {
        TaskService {
            home,
            store: TaskStore::new(home),
            tmux: Tmux::from_env(),
            config: None,
            recovery: None,
            proved: vec![],
        }
    }

    pub fn with_tmux(mut self, tmux: Tmux) -> Self {
        self.tmux = tmux;
        self
    }

    pub(super) fn config(&mut self) -> Result<&Config> {
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
        if let Some(id) = model::id_from_env() {
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
        // Judged as the widgets and the notifications judge it: the same step everywhere.
        let item = item_of(&self.store, &task, &session, &Agents::new());
        let held = item
            .as_ref()
            .filter(|i| {
                i.bucket == crate::orchestration::attention::Bucket::Limited
                    || i.reason.starts_with("held:")
            })
            .map(|i| i.reason.clone());
        let next_step = item.and_then(|i| NextStep::of_item(&i, None));
        let teammates =
            crate::orchestration::teammates::load(&self.store.dir(&task.project, &task.id));
        let reviewer =
            crate::orchestration::review::record::load(&self.store.dir(&task.project, &task.id));
        let usage = Some(&session)
            .filter(|s| s.state == crate::orchestration::attention::session::SessionState::Live)
            .and_then(|_| {
                crate::orchestration::footprint::load(&self.store.dir(&task.project, &task.id))
            });
        let never_started = self.never_started(&task, session.exit_status);
        TaskView {
            usage,
            never_started,
            task,
            session,
            agent,
            tokens,
            next_step,
            held,
            teammates,
            reviewer,
        }
    }

    /// `task respawn --memory/--cpu/--pids`: the limits its next agent runs under, each
    /// flag's over the recorded one; checked (refused where nothing can enforce them)
    /// before anything is recorded, and the change in its history. The task, and a
    /// warning when the limits are only partly enforced here (prlimit).
    pub fn set_limits(
        &mut self,
        id: &str,
        project: Option<&str>,
        flags: &crate::execution::resources::LimitConfig,
    ) -> Result<(Task, Option<String>)> {
        let task = self.get(id, project)?;
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        let limits = flags.parse("--")?.or(task.limits);
        let warning = self.check_limits(&limits)?;
        if limits != task.limits {
            let from = task.limits;
            task.limits = limits;
            task.updated_at = store::now_rfc3339();
            self.store.save(&task)?;
            self.store.append_history(
                &task,
                "limits.changed",
                json!({"from": from, "to": limits}),
            )?;
        }
        Ok((task, warning))
    }

    /// Can an agent run under `limits` here? Refused where nothing can enforce them, or
    /// where the kernel will not make a cgroup with them (`cgroup_failed`: proved with a
    /// probe cgroup, `resources::check`); a warning when they are only partly enforced.
    /// Asked before anything is recorded; the same limits are proved once per command.
    pub fn check_limits(&mut self, limits: &Limits) -> Result<Option<String>> {
        if let Some((_, w)) = self.proved.iter().find(|(l, _)| l == limits) {
            return Ok(w.clone());
        }
        let warning = crate::execution::resources::check(&self.home.root, limits)?;
        self.proved.push((*limits, warning.clone()));
        Ok(warning)
    }

    /// Why the agent of `task`, whose pane ended with `exit_status`, never started: the
    /// step that joins its cgroup could not (it exits 125 and leaves its words in the
    /// agent's directory; an agent that exits 125 itself leaves none). The one reading of
    /// it, for the task's view and the monitor's pass.
    pub fn never_started(&self, task: &Task, exit_status: Option<i32>) -> Option<String> {
        if exit_status != Some(125) {
            return None;
        }
        let dir = crate::orchestration::agent::agent_dir(&self.store.dir(&task.project, &task.id));
        let words =
            store::read_regular(&dir.join(crate::execution::resources::JOIN_FAILED), 4096).ok()?;
        Some(format!(
            "the agent never started: joining its cgroup failed ({})",
            String::from_utf8_lossy(&words).trim()
        ))
    }

    /// Read what the task's Claude conversation appended to its transcripts since the last
    /// update (`usage.json`; cheap: only the new bytes). Nothing for other harnesses or a
    /// task without a workspace.
    pub fn update_usage(&self, task: &Task) -> Result<()> {
        let (Some(conv), Some(ws)) = (&task.agent_session_id, &task.workspace) else {
            return Ok(());
        };
        // pi's conversation is its session file: no transcript of claude's to read.
        if !crate::orchestration::usage::harness_reports(&task.harness) {
            return Ok(());
        }
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
        let panes = crate::orchestration::observe::snapshot::current(self.home, &self.tmux)?.panes;
        Ok(self
            .store
            .list(project)?
            .into_iter()
            .filter(|t| status.is_none_or(|s| t.status == s))
            .map(|t| self.view(t, &panes))
            .collect())
    }

    pub(super) fn check_branch_free(
        &self,
        project: &str,
        branch: &str,
        except: Option<&str>,
    ) -> Result<()> {
        branch_free_among(
            &self.store.list_open(Some(project))?,
            project,
            branch,
            except,
        )
    }

    /// Can an agent of `harness` start here: tmux, and its program on PATH.
    pub(super) fn preflight(&self, harness: &Harness) -> Result<()> {
        self.tmux.preflight()?;
        harness.preflight()
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
                    && SessionView::of(t, &panes).state == SessionState::None
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

/// Is `branch` free in `project`, as its open tasks `open` say (`except`: a task that may
/// hold it)?
pub(super) fn branch_free_among(
    open: &[Task],
    project: &str,
    branch: &str,
    except: Option<&str>,
) -> Result<()> {
    for t in open {
        if t.branch == branch && !t.status.is_final() && Some(t.id.as_str()) != except {
            let hint =
                match t.status {
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
