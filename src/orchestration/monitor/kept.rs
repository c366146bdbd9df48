//! What a monitor keeps between its passes, and when it reads each again. The running
//! monitor (`run::watch`) makes all its passes with one [`Monitor`]; a pass reads a record
//! only when it may have changed since the last one:
//!
//! - the open tasks and their agents' records (`task.json`, `agent.json`): not at all while
//!   nothing was poked (`store::pokes`): every save of a task pokes, and so does every
//!   agent hook after it wrote `agent.json` (respawn and restore write it before saving the
//!   task); what the monitor writes itself, it keeps as it wrote it. After pokes that say
//!   which tasks changed (`store::poke_task`; `store::poke_other`: none), those tasks'
//!   files; after one that does not say (`.`), each file whose [`Stamp`] (inode, size,
//!   time: files are replaced by rename) changed since it was read, one `stat` each;
//! - the pool file and `config.toml`: when their [`Stamp`] changed (one `stat` each);
//! - the sessions' marks, which never change: asked of tmux once per session
//!   ([`SeenMarks`]);
//! - everything, at least every [`KEEP_FOR`], whatever the pokes and stamps say: a file
//!   changed by hand, or a hook killed between its write and its poke, is seen within
//!   that time.
//!
//! A monitor made for one pass (`monitor --once`, a hook's pass) keeps nothing yet: it
//! reads everything, as before.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::adapters::store::{self, Home, Stamp};
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::pool::{self, PoolFile};
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::attention::summary::Agents;
use crate::orchestration::observe::snapshot::SeenMarks;
use crate::orchestration::task::model::valid_id;
use crate::orchestration::task::Task;

use super::Monitor;

/// The longest a kept record is trusted without reading it again.
pub const KEEP_FOR: Duration = Duration::from_secs(30);

/// What a [`Monitor`] read in its last passes (see the module documentation).
#[derive(Default)]
pub(super) struct Kept {
    /// When every record was last read from its file, whatever pokes and stamps said.
    read_all_at: Option<Instant>,
    /// The size of the poke file before `open` was read.
    tasks_at: Option<u64>,
    /// The tasks poked since the last pass (ids by project), when the pokes said which.
    poked: Option<Poked>,
    open: Rc<[Task]>,
    unreadable: u32,
    /// Each open task as read (by project, then id), with the version of its file.
    task_files: HashMap<String, HashMap<String, (Option<Stamp>, Task)>>,
    /// The agents' records as the last pass left them, the count of pokes they go with, and
    /// the version of each `agent.json` the record was read from.
    agents: Agents,
    agents_at: Option<u64>,
    agent_files: HashMap<(String, String), Stamp>,
    /// The pool file, its version and when it was read, and each workspace's path.
    pool: PoolFile,
    pool_at: Option<(Stamp, Instant)>,
    pub(super) workspaces: HashMap<String, PathBuf>,
    /// The version of `config.toml` the monitor's config was read from.
    config: Option<Stamp>,
    /// The sessions' marks, asked of tmux once per session (see [`SeenMarks`]).
    pub(super) marks: SeenMarks,
}

/// Tasks poked: their ids by project.
#[derive(Default)]
pub(super) struct Poked(HashMap<String, HashSet<String>>);

impl Poked {
    fn names(&self, project: &str, id: &str) -> bool {
        self.0.get(project).is_some_and(|ids| ids.contains(id))
    }

    fn add(&mut self, other: Poked) {
        for (project, ids) in other.0 {
            self.0.entry(project).or_default().extend(ids);
        }
    }
}

/// The tasks the pokes between the sizes `from` and `to` of the poke file name (`-`: none);
/// `None` when one of them does not say (`.`, or the file started again).
fn poked_tasks(home: &Home, from: u64, to: u64) -> Option<Poked> {
    let lines = store::pokes_between(home, from, to)?;
    let mut poked = Poked::default();
    for line in lines.lines() {
        if line == "-" {
            continue;
        }
        let (project, id) = line.split_once('/')?;
        if project.is_empty() || !valid_id(id) {
            return None;
        }
        poked
            .0
            .entry(project.to_string())
            .or_default()
            .insert(id.to_string());
    }
    Some(poked)
}

impl Kept {
    /// Nothing kept yet; the monitor's config read from this version of `config.toml`.
    pub(super) fn of_config(config: Option<Stamp>) -> Kept {
        Kept {
            config,
            ..Kept::default()
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the pokes since a size say: the tasks named (none for `-`); nothing known once
    /// one does not say, or the file started again.
    #[test]
    fn pokes_name_the_tasks_that_changed() {
        let d = tempfile::tempdir().unwrap();
        let home = Home {
            root: d.path().to_path_buf(),
        };
        store::poke_task(&home, "shop", "abc123");
        let from = store::pokes(&home);
        store::poke_other(&home);
        store::poke_task(&home, "shop", "def456");
        store::poke_task(&home, "blog", "abc123");
        let to = store::pokes(&home);
        let poked = poked_tasks(&home, from, to).expect("the pokes say which tasks");
        assert!(poked.names("shop", "def456") && poked.names("blog", "abc123"));
        assert!(!poked.names("shop", "abc123"), "poked before `from`");
        assert_eq!(
            poked_tasks(&home, to, to).map(|p| p.0.is_empty()),
            Some(true)
        );
        store::poke(&home);
        assert!(poked_tasks(&home, from, store::pokes(&home)).is_none());
        assert!(
            poked_tasks(&home, to + 100, to + 200).is_none(),
            "started again"
        );
    }
}
