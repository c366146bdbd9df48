//! What a monitor keeps between its passes, and when it reads each again. The running
//! monitor (`run::watch`) makes all its passes with one [`Monitor`]; a pass reads a record
//! only when it may have changed since the last one:
//!
//! - the open tasks and their agents' records (`task.json`, `agent.json`): when the count
//!   of pokes moved (`store::pokes`). Every save of a task pokes, and so does every agent
//!   hook after it wrote `agent.json` (respawn and restore write it before saving the
//!   task); what the monitor writes itself, it keeps as it wrote it. A poke anywhere reads
//!   them all again, as every pass did before;
//! - the pool file and `config.toml`: when their [`Stamp`] changed (one `stat` each);
//! - everything, at least every [`KEEP_FOR`], whatever the pokes say: a file changed by
//!   hand, or a hook killed between its write and its poke, is seen within that time.
//!
//! A monitor made for one pass (`monitor --once`, a hook's pass) keeps nothing yet: it
//! reads everything, as before.

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::adapters::store::{self, Stamp};
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::pool::{self, PoolFile};
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::attention::summary::Agents;
use crate::orchestration::task::Task;

use super::Monitor;

/// The longest a kept record is trusted without reading it again.
pub const KEEP_FOR: Duration = Duration::from_secs(30);

/// What a [`Monitor`] read in its last passes (see the module documentation).
#[derive(Default)]
pub(super) struct Kept {
    /// The count of pokes before `open` was read, and when.
    tasks_at: Option<(u64, Instant)>,
    open: Rc<[Task]>,
    unreadable: u32,
    /// The agents' records as the last pass left them, and the count of pokes they go with.
    agents: Agents,
    agents_at: Option<u64>,
    /// The pool file, its version and when it was read, and each workspace's path.
    pool: PoolFile,
    pool_at: Option<(Stamp, Instant)>,
    pub(super) workspaces: HashMap<String, PathBuf>,
    /// The version of `config.toml` the monitor's config was read from.
    config: Option<Stamp>,
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
    /// task was saved since): the kept ones while that count has not moved.
    pub(super) fn read_open(&mut self) -> (Rc<[Task]>, u32) {
        let pokes = store::pokes(self.home);
        self.tasks_read_at = pokes;
        let kept = &mut self.kept;
        if let Some((at, when)) = kept.tasks_at {
            if at == pokes && when.elapsed() < KEEP_FOR {
                return (kept.open.clone(), kept.unreadable);
            }
        }
        let (open, unreadable) = self.tasks.store.list_open_lenient();
        let open: Rc<[Task]> = open.into();
        kept.tasks_at = Some((pokes, Instant::now()));
        kept.open = open.clone();
        kept.unreadable = unreadable;
        // Read with the tasks, or not at all.
        kept.agents.clear();
        kept.agents_at = None;
        (open, unreadable)
    }

    /// The agent's record of `task` as the pass starts: the kept one while the count of
    /// pokes has not moved since the tasks were read ([`Self::read_open`]), else its file.
    pub(super) fn agent_record(&self, task: &Task, dir: &std::path::Path) -> AgentInfo {
        if self.kept.agents_at == Some(self.tasks_read_at) {
            if let Some(info) = self
                .kept
                .agents
                .get(&(task.project.clone(), task.id.clone()))
            {
                return info.clone();
            }
        }
        agent::load(dir)
    }

    /// Keep the agents' records as this pass left them (what it judged, recorded and
    /// wrote), for the next pass while nothing pokes.
    pub(super) fn keep_agents(&mut self, agents: Agents) {
        self.kept.agents = agents;
        self.kept.agents_at = Some(self.tasks_read_at);
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
