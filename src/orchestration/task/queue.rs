//! The queue: a project's pending tasks start in the order they were created (FIFO),
//! each as soon as a workspace is free. A queued task that cannot start becomes `failed`
//! (with its reason) and the next one is tried: the queue never jams.

use serde::Serialize;
use serde_json::json;

use crate::error::{OrangeError, Result};
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
    /// Queued tasks that could not start on the way (now `failed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedStart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TaskService<'_> {
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
            // A harness at the account's usage limit starts no new agent until the reset.
            let now = crate::orchestration::limits::clock();
            let limited = crate::orchestration::limits::all(self.home, now);
            for t in queued
                .into_iter()
                .filter(|t| !limited.contains_key(&t.harness))
            {
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
}
