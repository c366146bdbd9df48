//! The [`Monitor`]'s reads that keep what they read between passes
//! ([`super::kept::Kept`], whose module says when each record is read again). Apart from
//! `kept.rs` so that the monitor's own module, which holds a `Kept`, and these methods on
//! it import no file that imports them back.

use std::rc::Rc;
use std::time::Instant;

use crate::adapters::store;
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::pool::{self, PoolFile};
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::attention::summary::Agents;
use crate::orchestration::task::Task;

use super::kept::{poked_tasks, Poked, KEEP_FOR};
use super::Monitor;

impl Monitor<'_> {
    /// A pass begins: nothing poked yet that it knows of.
    pub(super) fn begin_pass(&mut self) {
        self.kept.poked = Some(Poked::default());
    }

    /// `config.toml` read again when it changed since the monitor read it (its screen
    /// rules compiled again when a pass needs them). An error when it no longer parses.
    pub fn refresh_config(&mut self) -> Result<()> {
        let now = store::stamp(&self.home.config_file());
        if now != self.kept.config {
            self.config = Config::load(self.home)?;
            self.rules.clear();
            self.kept.config = now;
        }
        Ok(())
    }

    /// The open tasks (leniently: a damaged file is counted, not fatal), noting the count
    /// of pokes before they were read ([`Monitor::still_as_observed`] trusts them while no
    /// task was saved since): the kept ones while that count has not moved, else those
    /// whose file did not change and the others read again.
    pub(super) fn read_open(&mut self) -> (Rc<[Task]>, u32) {
        let pokes = store::pokes(self.home);
        self.tasks_read_at = pokes;
        let kept = &mut self.kept;
        let recent = kept.read_all_at.is_some_and(|t| t.elapsed() < KEEP_FOR);
        if recent && kept.tasks_at == Some(pokes) {
            return (kept.open.clone(), kept.unreadable);
        }
        // What was poked since the last read, with what this pass found poked before.
        let now = match (recent, kept.tasks_at) {
            (true, Some(from)) => poked_tasks(self.home, from, pokes),
            _ => None,
        };
        // Pokes that name no task (`-`): the open tasks are as kept.
        let none = now.as_ref().is_some_and(|p| p.0.is_empty());
        kept.poked = match (kept.poked.take(), now) {
            (Some(mut before), Some(now)) => {
                before.add(now);
                Some(before)
            }
            _ => None,
        };
        if none {
            kept.tasks_at = Some(pokes);
            return (kept.open.clone(), kept.unreadable);
        }
        if !recent {
            kept.task_files.clear();
            kept.agent_files.clear();
            kept.read_all_at = Some(Instant::now());
        }
        let mut before = std::mem::take(&mut kept.task_files);
        let files = &mut kept.task_files;
        let poked = kept.poked.as_ref();
        let (open, unreadable) = self.tasks.store.list_open_lenient_with(|store, p, id| {
            let was = before.get_mut(p).and_then(|ids| ids.remove(id));
            let unpoked = poked.is_some_and(|set| !set.names(p, id));
            let (stamp, task) = match was {
                // Not poked: as it was.
                Some(was) if unpoked => was,
                // Poked (or not said): read again unless its file is as it was.
                was => {
                    let now = store::stamp(&store.json_path(p, id));
                    match was {
                        Some((Some(stamp), t)) if now == Some(stamp) => (now, t),
                        _ => (now, store.load(p, id)?),
                    }
                }
            };
            files
                .entry(p.to_string())
                .or_default()
                .insert(id.to_string(), (stamp, task.clone()));
            Ok(task)
        });
        let open: Rc<[Task]> = open.into();
        kept.tasks_at = Some(pokes);
        kept.open = open.clone();
        kept.unreadable = unreadable;
        // Not trusted without a look at their files.
        kept.agents_at = None;
        (open, unreadable)
    }

    /// The agent's record of `task` as the pass starts: the kept one while nothing poked
    /// it since the tasks were read ([`Self::read_open`]), or while its file is the one it
    /// was read from; else its file.
    pub(super) fn agent_record(&mut self, task: &Task, dir: &std::path::Path) -> AgentInfo {
        let key = (task.project.clone(), task.id.clone());
        let kept = &mut self.kept;
        let unpoked = kept.agents_at == Some(self.tasks_read_at)
            || kept
                .poked
                .as_ref()
                .is_some_and(|set| !set.names(&task.project, &task.id));
        if unpoked {
            if let Some(info) = kept.agents.get(&key) {
                return info.clone();
            }
        }
        let now = store::stamp(&agent::info_path(dir));
        if let (Some(now), Some(was), Some(info)) =
            (now, kept.agent_files.get(&key), kept.agents.get(&key))
        {
            if *was == now {
                return info.clone();
            }
        }
        match now {
            Some(now) => kept.agent_files.insert(key, now),
            None => kept.agent_files.remove(&key),
        };
        agent::load(dir)
    }

    /// Keep the agents' records as this pass left them (what it judged, recorded and
    /// wrote), for the next pass while nothing pokes, and while their files are the ones
    /// they were read from (a record the pass wrote is read again after a poke).
    pub(super) fn keep_agents(&mut self, agents: Agents) {
        let kept = &mut self.kept;
        kept.agent_files.retain(|key, _| agents.contains_key(key));
        kept.agents = agents;
        kept.agents_at = Some(self.tasks_read_at);
    }

    /// The pool file read again when its stamp changed (or was kept [`KEEP_FOR`]), the
    /// workspaces' paths with it.
    pub(super) fn read_pool(&mut self) -> Result<()> {
        let now = store::stamp(&self.home.pool_file());
        if let (Some((was, when)), Some(now)) = (self.kept.pool_at, now) {
            if was == now && when.elapsed() < KEEP_FOR {
                return Ok(());
            }
        }
        let file = pool::load(self.home)?;
        // Workspace name → path, straight from the pool's file (no look at each one).
        self.kept.workspaces = file
            .workspaces
            .iter()
            .map(|(name, slot)| (name.clone(), slot.path_in(self.home, name)))
            .collect();
        self.kept.pool = file;
        self.kept.pool_at = now.map(|s| (s, Instant::now()));
        Ok(())
    }

    /// The pool file as the pass read it ([`Self::read_pool`]).
    pub(super) fn pool(&self) -> &PoolFile {
        &self.kept.pool
    }
}
