//! The queue behind the caps on running agents (`max_running`, [`cap`]): a death frees a
//! place without freeing a workspace, so no command starts the next task; the monitor
//! does, at the start of a pass, from what earlier passes recorded (a death is in
//! agent.json). It is also the repair after a command killed between recording a task
//! and starting it: a queued task with room is started by the next pass. So does the
//! end of a usage limit ([`limits::released`]): the queued tasks of its harness start in
//! every project, not only in those of the limited tasks it resumes.

use std::collections::BTreeMap;

use serde_json::json;

use crate::execution::pool::SlotStatus;
use crate::orchestration::task::{cap, Status, Task};
use crate::orchestration::{limits, project};

use super::{Monitor, PassReport};

impl Monitor<'_> {
    /// Start what waits behind a cap when there is room now (and a workspace to take),
    /// and what waited on a usage limit whose reset has passed. Whether anything started.
    /// Costs nothing without a queued task, or one read without a cap.
    pub(super) fn start_queued(&mut self, open: &[Task], report: &mut PassReport) -> bool {
        if !open.iter().any(|t| t.status == Status::Pending) {
            return false;
        }
        let released = match limits::released(self.home, limits::clock()) {
            Ok(r) => r,
            Err(e) => {
                report
                    .actions
                    .push(json!({"action": "error", "error": format!("the usage limits: {e}")}));
                vec![]
            }
        };
        let caps = cap::Caps::read(self.home);
        if !caps.any() && released.is_empty() {
            return false;
        }
        let counts = cap::Counts::of(
            open.iter()
                .filter(|t| cap::running_on_record(&self.tasks.store, t))
                .map(|t| t.project.as_str()),
        );
        let registry = project::load(self.home).ok();
        let mut waiting = BTreeMap::new();
        for t in open.iter().filter(|t| t.status == Status::Pending) {
            // Only the queues that a cap or a limit held (others wait for a workspace,
            // as ever).
            let capped = caps.fleet.is_some() || caps.projects.contains_key(&t.project);
            let reason = if released.contains(&t.harness) {
                "the usage limit reset"
            } else if capped {
                "a place under max_running came free"
            } else {
                continue;
            };
            if caps.full(&counts, &t.project).is_none()
                && self.has_room(registry.as_ref(), &t.project)
            {
                waiting.entry(t.project.clone()).or_insert(reason);
            }
        }
        let mut started = false;
        for (p, reason) in waiting {
            let next = self.tasks.spawn_next(&p);
            for id in next.spawned.iter().chain(&next.more) {
                started = true;
                report
                    .actions
                    .push(json!({"task": id, "action": "spawned", "reason": reason}));
            }
            if let Some(e) = next.error {
                report
                    .actions
                    .push(json!({"project": p, "action": "error", "error": e}));
            }
            // The fleet's queue is one: the first call went through all of it.
            if caps.fleet.is_some() {
                break;
            }
        }
        started
    }

    /// Has `project` a free workspace, or room in its pool for one more?
    fn has_room(&self, registry: Option<&project::Registry>, project: &str) -> bool {
        let slots = self
            .pool()
            .workspaces
            .values()
            .filter(|s| s.project == project);
        let (mut count, mut free) = (0, false);
        for s in slots {
            count += 1;
            free |= s.status == SlotStatus::Available && s.task.is_none();
        }
        let size = registry
            .and_then(|r| r.projects.get(project))
            .map_or(usize::MAX, |p| p.pool_size);
        free || count < size
    }
}
