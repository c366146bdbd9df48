//! A task's end: merge (its branch into the default branch, or nothing when its PR is
//! merged), cancel, and delete. The end is recorded first (a crash after it leaves what
//! `reconcile` finishes), then its session is killed and its workspace returned, and the
//! next queued task starts.

use serde_json::json;

use crate::adapters::store;
use crate::error::{OrangeError, Result};
use crate::execution::pool;
use crate::orchestration::project::{self, Project};
use crate::orchestration::task::model::{Status, Task};
use crate::orchestration::task::queue::NextSpawn;
use crate::orchestration::task::service::TaskService;
use crate::{adapters::gh, adapters::git};

impl TaskService<'_> {
    /// Merge the task's branch (or its open PR with gh, then nothing locally; skip when its
    /// PR is merged), then return its workspace, kill its session, mark it done and start
    /// the next queued task.
    pub fn merge(
        &mut self,
        id: &str,
        project: Option<&str>,
        ff_only: bool,
        local: bool,
        force: bool,
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
            self.check_no_unsaved_work(&project, &task)?;
            let pr = if local {
                gh::Pr::Unknown {
                    reason: "--local: PR not checked".into(),
                }
            } else {
                // Its open PR merged on GitHub (when ready, or forced) first.
                self.land_pr(&project, &mut task, force)?
            };
            let (via, commit) = merge_branch(&project, &task, &pr, ff_only)?;
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

    /// Why [`merge`](Self::merge) would refuse the task now (its status, unsaved work in
    /// its workspace), or none: what a dry run says, changing nothing.
    pub fn merge_check(&self, id: &str, project: Option<&str>) -> Result<(Task, Option<String>)> {
        let task = self.get(id, project)?;
        if !task.status.can_become(Status::Done) {
            let why = format!(
                "it is {}; only a working, reviewing or stuck task can be merged",
                task.status
            );
            return Ok((task, Some(why)));
        }
        let project = project::get(self.home, &task.project)?;
        let why = match self.check_no_unsaved_work(&project, &task) {
            Ok(()) => None,
            Err(OrangeError::WorktreeDirty { path, detail }) => Some(format!(
                "its workspace {} has unsaved work ({detail})",
                path.display()
            )),
            Err(e) => return Err(e),
        };
        Ok((task, why))
    }

    /// A task is merged from what is committed: its workspace holds no unsaved work
    /// (what its pool entry keeps aside).
    fn check_no_unsaved_work(&self, project: &Project, task: &Task) -> Result<()> {
        let Some(w) = &task.workspace else {
            return Ok(());
        };
        let ws = pool::find(self.home, w)?;
        if !git::is_worktree_of(&project.path, &ws.path) {
            return Ok(());
        }
        match pool::unsaved_work(self.home, &ws.name, &ws.path, "HEAD")? {
            Some(detail) => Err(OrangeError::WorktreeDirty {
                path: ws.path.clone(),
                detail,
            }),
            None => Ok(()),
        }
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
        // Its agent's cgroup (one still emptying is left to the monitor's sweep).
        let name = crate::execution::resources::cgroup_name(&self.home.root, &task.id);
        if let Some(d) = crate::execution::resources::agent_cgroup(&name) {
            d.remove();
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
}

/// Merge the task's branch into the default branch, unless its PR is merged or the branch
/// already is: how (`pr`, `already-merged`, `ff`, `merge`) and the merge commit.
fn merge_branch(
    project: &Project,
    task: &Task,
    pr: &gh::Pr,
    ff_only: bool,
) -> Result<(&'static str, Option<String>)> {
    if pr.is_merged() {
        return Ok(("pr", None));
    }
    if git::is_merged(&project.path, &task.branch, &project.default_branch)? {
        return Ok(("already-merged", None));
    }
    let commit = git::merge_into(
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
    })?;
    Ok((if ff_only { "ff" } else { "merge" }, Some(commit)))
}
