//! The caps on running agents (`max_running` of a project, `[fleet] max_running` over
//! every project), apart from the pool size: a task beyond them waits in the queue
//! (pending, FIFO) and starts when a running one ends (done, cancelled, merged, or its
//! agent dead), saying why it waits (`queued: 4 running of 4`).
//!
//! Running = an active task whose agent is not known dead. The count and the start of an
//! agent happen under one lock (`run/fleet.lock`, taken inside the project's lock,
//! never the other way round), so parallel `task create`s never go over a cap. Nothing
//! about the cap is stored: the count is read from the tasks each time, so a command killed
//! anywhere leaves nothing to repair beyond what the pool and the queue already repair.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::adapters::store::{Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::state::State;
use crate::orchestration::agent;
use crate::orchestration::project;
use crate::orchestration::task::model::Task;
use crate::orchestration::task::TaskStore;

/// How `cap_reached` names the fleet's cap.
pub const FLEET: &str = "the fleet";

/// What a cap is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Project(String),
    Fleet,
}

impl Scope {
    fn name(&self) -> String {
        match self {
            Scope::Project(p) => format!("project {p}"),
            Scope::Fleet => FLEET.into(),
        }
    }
}

/// Why a queued task waits: a cap reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Full {
    pub scope: Scope,
    pub running: usize,
    pub cap: usize,
}

impl Full {
    /// `queued: 4 running of 4` (the scope is in the JSON).
    pub fn reason(&self) -> String {
        format!("queued: {} running of {}", self.running, self.cap)
    }

    pub fn error(&self) -> OrangeError {
        OrangeError::CapReached {
            scope: self.scope.name(),
            running: self.running,
            cap: self.cap,
        }
    }
}

/// Running agents, over the fleet and per project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub running: usize,
    pub per_project: BTreeMap<String, usize>,
}

impl Counts {
    /// Count the running agents, given the project of each.
    pub fn of<'p>(running: impl Iterator<Item = &'p str>) -> Counts {
        let mut c = Counts::default();
        for p in running {
            c.running += 1;
            *c.per_project.entry(p.to_string()).or_default() += 1;
        }
        c
    }

    /// The first cap that a new agent of `project` would go over: the project's, then
    /// the fleet's.
    pub fn full(
        &self,
        project: &str,
        project_cap: Option<usize>,
        fleet_cap: Option<usize>,
    ) -> Option<Full> {
        let mine = self.per_project.get(project).copied().unwrap_or(0);
        if let Some(cap) = project_cap.filter(|c| mine >= *c) {
            return Some(Full {
                scope: Scope::Project(project.to_string()),
                running: mine,
                cap,
            });
        }
        fleet_cap.filter(|c| self.running >= *c).map(|cap| Full {
            scope: Scope::Fleet,
            running: self.running,
            cap,
        })
    }
}

/// Does the task's agent count as running, as its record says (no look at tmux: the
/// monitor records a death in agent.json)?
pub fn running_on_record(store: &TaskStore, task: &Task) -> bool {
    task.status.is_active()
        && agent::load(&store.dir(&task.project, &task.id)).state != Some(State::Dead)
}

/// The caps that apply to `project`: its own and the fleet's (`None`: none).
pub fn caps_of(home: &Home, config: &Config, project: &str) -> (Option<usize>, Option<usize>) {
    let mine = project::get(home, project).ok().and_then(|p| p.max_running);
    (mine, config.fleet.max_running)
}

/// `run/fleet.lock`: taken inside a project's lock to count and start under it.
pub fn fleet_lock(home: &Home) -> Result<LockGuard> {
    crate::adapters::store::ensure_dir(&home.run_dir())?;
    LockGuard::acquire(&home.run_dir().join("fleet.lock"))
}

/// The caps as config.toml and the projects say, read once for many tasks.
#[derive(Debug, Clone, Default)]
pub struct Caps {
    pub fleet: Option<usize>,
    pub projects: BTreeMap<String, usize>,
}

impl Caps {
    /// Read (best effort: what cannot be read is no cap; a reader must not fail on it).
    pub fn read(home: &Home) -> Caps {
        Caps {
            fleet: Config::load(home).ok().and_then(|c| c.fleet.max_running),
            projects: project::load(home)
                .map(|r| {
                    r.projects
                        .into_iter()
                        .filter_map(|(n, p)| p.max_running.map(|m| (n, m)))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    pub fn any(&self) -> bool {
        self.fleet.is_some() || !self.projects.is_empty()
    }

    /// Why a queued task of `project` waits, if a cap is full.
    pub fn full(&self, counts: &Counts, project: &str) -> Option<Full> {
        counts.full(project, self.projects.get(project).copied(), self.fleet)
    }
}

impl Full {
    /// What `task list --json` and `task show --json` carry for a queued task.
    pub fn json(&self) -> serde_json::Value {
        let (scope, project) = match &self.scope {
            Scope::Fleet => ("fleet", None),
            Scope::Project(p) => ("project", Some(p.as_str())),
        };
        serde_json::json!({
            "reason": self.reason(),
            "scope": scope,
            "project": project,
            "running": self.running,
            "cap": self.cap,
        })
    }
}

/// The caps and what runs now, as the task records say (`task list`, `task show`);
/// `None` when no cap applies.
pub fn now(home: &Home, store: &TaskStore) -> Option<(Caps, Counts)> {
    let caps = Caps::read(home);
    if !caps.any() {
        return None;
    }
    let (open, _) = store.list_open_lenient();
    let counts = Counts::of(
        open.iter()
            .filter(|t| running_on_record(store, t))
            .map(|t| t.project.as_str()),
    );
    Some((caps, counts))
}
