//! The queue: a project's pending tasks start in the order they were created (FIFO),
//! each as soon as a workspace is free and the caps on running agents allow (`cap.rs`). A queued task that cannot start becomes `failed`
//! (with its reason) and the next one is tried: the queue never jams.

use serde::Serialize;
use serde_json::json;

use crate::error::{OrangeError, Result};
use crate::orchestration::task::cap;
use crate::orchestration::task::model::{Status, Task};
use crate::orchestration::task::service::TaskService;

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
    /// More queued tasks started after it (a cap raised, several agents ended).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<String>,
    /// Queued tasks that could not start on the way (now `failed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedStart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TaskService<'_> {
    /// Start the oldest pending tasks while a workspace is free and the caps allow (FIFO:
    /// the project's queue; with a `[fleet] max_running`, every project's, oldest first,
    /// since a slot of the fleet is anyone's). Never fails the command that called it. A
    /// queued task that cannot start becomes `failed` (with its reason) and the next one is
    /// tried: the queue never jams.
    pub fn spawn_next(&mut self, project: &str) -> NextSpawn {
        let mut next = NextSpawn::default();
        let result = (|| -> Result<()> {
            // No tmux: no task could start; none is failed for it.
            self.tmux.preflight()?;
            let fleet = self.config()?.fleet.max_running.is_some();
            let queued: Vec<Task> = self
                .store
                .list_open(if fleet { None } else { Some(project) })?
                .into_iter()
                .filter(|t| t.status == Status::Pending)
                .collect();
            // A harness at the account's usage limit starts no new agent until the reset.
            let now = crate::orchestration::limits::clock();
            let limited = crate::orchestration::limits::all(self.home, now);
            let mut full: std::collections::BTreeSet<String> = Default::default();
            for t in queued
                .into_iter()
                .filter(|t| !limited.contains_key(&t.harness))
            {
                if full.contains(&t.project) {
                    continue;
                }
                let _lock = self.store.lock(&t.project)?;
                match self.spawn_locked(&t.project, &t.id) {
                    Ok(t) => {
                        self.store.append_history(
                            &t,
                            "auto.spawned",
                            json!({"reason": "a workspace was released or an agent ended"}),
                        )?;
                        match next.spawned {
                            None => next.spawned = Some(t.id),
                            Some(_) => next.more.push(t.id),
                        }
                    }
                    Err(OrangeError::CapReached { scope, .. }) if scope == super::cap::FLEET => {
                        return Ok(())
                    }
                    Err(OrangeError::PoolExhausted { .. } | OrangeError::CapReached { .. }) => {
                        full.insert(t.project.clone());
                    }
                    // Started or cancelled meanwhile by another command.
                    Err(OrangeError::InvalidTransition(_) | OrangeError::TaskNotFound(_)) => {}
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
}

impl TaskService<'_> {
    /// Under the project's lock, before an agent of `project` starts: is there room for
    /// it? The fleet lock comes back, to hold while the agent starts (`None`: no cap
    /// applies, nothing to hold); `cap_reached` when a cap is full. `except`: the task
    /// whose own agent is being started (a respawn), not counted.
    pub(super) fn room_for(
        &mut self,
        project: &str,
        except: &str,
    ) -> Result<Option<crate::adapters::store::LockGuard>> {
        let fleet = self.config()?.fleet.max_running;
        let mine = crate::orchestration::project::get(self.home, project)?.max_running;
        if mine.is_none() && fleet.is_none() {
            return Ok(None);
        }
        let lock = cap::fleet_lock(self.home)?;
        let (open, _) = self.store.list_open_lenient();
        let counts = cap::Counts::of(
            open.iter()
                .filter(|t| t.id != except && cap::running_on_record(&self.store, t))
                .map(|t| t.project.as_str()),
        );
        if let Some(full) = counts.full(project, mine, fleet) {
            return Err(full.error());
        }
        crate::adapters::fault::point("cap.counted");
        Ok(Some(lock))
    }

    /// [`Self::room_for`] for `n` agents of `project` started together (a group's
    /// members): how many of them the caps leave room for, why the rest wait (`None`: all
    /// fit), and the fleet lock to hold while they start.
    pub(super) fn room_for_many(
        &mut self,
        project: &str,
        n: usize,
    ) -> Result<(
        usize,
        Option<OrangeError>,
        Option<crate::adapters::store::LockGuard>,
    )> {
        let fleet = self.config()?.fleet.max_running;
        let mine = crate::orchestration::project::get(self.home, project)?.max_running;
        if mine.is_none() && fleet.is_none() {
            return Ok((n, None, None));
        }
        let lock = cap::fleet_lock(self.home)?;
        let (open, _) = self.store.list_open_lenient();
        let mut counts = cap::Counts::of(
            open.iter()
                .filter(|t| cap::running_on_record(&self.store, t))
                .map(|t| t.project.as_str()),
        );
        for k in 0..n {
            if let Some(full) = counts.full(project, mine, fleet) {
                return Ok((k, Some(full.error()), Some(lock)));
            }
            counts.running += 1;
            *counts.per_project.entry(project.to_string()).or_default() += 1;
        }
        crate::adapters::fault::point("cap.counted");
        Ok((n, None, Some(lock)))
    }
}
