//! What a monitor keeps between its passes ([`Kept`]), and when it reads each again (the
//! methods that do are in `reread.rs`). The running monitor (`run::watch`) makes all its
//! passes with one `Monitor`; a pass reads a record only when it may have changed since
//! the last one:
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
use crate::execution::pool::PoolFile;
use crate::orchestration::attention::summary::Agents;
use crate::orchestration::observe::snapshot::SeenMarks;
use crate::orchestration::task::model::valid_id;
use crate::orchestration::task::Task;

/// The longest a kept record is trusted without reading it again.
pub const KEEP_FOR: Duration = Duration::from_secs(30);

/// What a [`Monitor`] read in its last passes (see the module documentation).
#[derive(Default)]
pub(super) struct Kept {
    /// When every record was last read from its file, whatever pokes and stamps said.
    pub(super) read_all_at: Option<Instant>,
    /// The size of the poke file before `open` was read.
    pub(super) tasks_at: Option<u64>,
    /// The tasks poked since the last pass (ids by project), when the pokes said which.
    pub(super) poked: Option<Poked>,
    pub(super) open: Rc<[Task]>,
    pub(super) unreadable: u32,
    /// Each open task as read (by project, then id), with the version of its file.
    pub(super) task_files: HashMap<String, HashMap<String, (Option<Stamp>, Task)>>,
    /// The agents' records as the last pass left them, the count of pokes they go with, and
    /// the version of each `agent.json` the record was read from.
    pub(super) agents: Agents,
    pub(super) agents_at: Option<u64>,
    pub(super) agent_files: HashMap<(String, String), Stamp>,
    /// The pool file, its version and when it was read, and each workspace's path.
    pub(super) pool: PoolFile,
    pub(super) pool_at: Option<(Stamp, Instant)>,
    pub(super) workspaces: HashMap<String, PathBuf>,
    /// The version of `config.toml` the monitor's config was read from.
    pub(super) config: Option<Stamp>,
    /// The sessions' marks, asked of tmux once per session (see [`SeenMarks`]).
    pub(super) marks: SeenMarks,
}

/// Tasks poked: their ids by project.
#[derive(Default)]
pub(super) struct Poked(pub(super) HashMap<String, HashSet<String>>);

impl Poked {
    pub(super) fn names(&self, project: &str, id: &str) -> bool {
        self.0.get(project).is_some_and(|ids| ids.contains(id))
    }

    pub(super) fn add(&mut self, other: Poked) {
        for (project, ids) in other.0 {
            self.0.entry(project).or_default().extend(ids);
        }
    }
}

/// The tasks the pokes between the sizes `from` and `to` of the poke file name (`-`: none);
/// `None` when one of them does not say (`.`, or the file started again).
pub(super) fn poked_tasks(home: &Home, from: u64, to: u64) -> Option<Poked> {
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
