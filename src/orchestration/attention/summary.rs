//! The summary of every open task and lane: each one an [`Item`] in its bucket
//! ([`classify`]), counted per project, with the remote hosts' merged in. Built from files
//! (the open tasks through their index, their `agent.json`, the lane registry) and the
//! panes a look saw: no process.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::adapters::store::Home;
use crate::adapters::tmux::PaneInfo;
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::task::{cap, Status, Task, TaskStore};

use super::classify::{classify, Bucket, Counts, Item, ItemKind, FIRST_PROMPT, WAITING_FOR_INPUT};
use super::next;
use super::session::{Panes, SessionState, SessionView};

/// Counts over every project's open tasks (and lanes), per project, and the items.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Tasks and lanes together.
    #[serde(flatten)]
    pub total: Counts,
    /// `task.json` files that could not be read or parsed.
    pub unreadable: u32,
    pub tasks: Counts,
    /// Lanes: zero until [`lane_items`] returns them.
    pub lanes: Counts,
    /// Per project (the status line groups by project); only projects with open tasks or lanes.
    pub projects: BTreeMap<String, Counts>,
    /// Every open task (and lane), by project, oldest first.
    pub items: Vec<Item>,
    /// Remote hosts with projects: reachable or not, and how old their view is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostView>,
}

/// A remote host as the widgets show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostView {
    pub name: String,
    pub reachable: bool,
    /// Seconds since its last snapshot was fetched; `None` when never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Summary {
    /// Nothing to show: no open task or lane, no unreadable file.
    pub fn is_empty(&self) -> bool {
        self.total.open() == 0 && self.unreadable == 0
    }
}

/// `agent.json` if it says something about the task's current agent: observed (or the
/// last hook heard, or the escalation made) at or after the task's last change.
fn fresh_agent_info(task: &Task, mut info: AgentInfo) -> Option<AgentInfo> {
    let since = task.updated_at.as_str();
    let observed = info.state.is_some() && agent::at_or_after(&info.at, since);
    let hooked = info.hook_state.is_some()
        && info
            .hook_at
            .as_deref()
            .is_some_and(|at| agent::at_or_after(at, since));
    if !observed {
        info.state = None;
    }
    if !hooked {
        info.hook_state = None;
        info.hook_at = None;
    }
    if info
        .escalated
        .as_ref()
        .is_some_and(|e| !agent::at_or_after(&e.at, since))
    {
        info.escalated = None;
    }
    if info.state.is_none() && info.hook_state.is_none() && info.escalated.is_none() {
        return None;
    }
    Some(info)
}

/// Lanes as items: one [`Item`] of kind `lane` per open lane, bucketed like tasks:
/// running with a live agent → working; running with a dead or missing session, or
/// `error` → dead; `finished` → review. Read straight from `lanes/registry.json` and the
/// panes already listed: no extra process. An unreadable registry shows no lanes (the lane
/// commands report it).
pub fn lane_items(home: &Home, panes: &[PaneInfo]) -> Vec<Item> {
    use crate::orchestration::lane::{LaneState, Lanes};
    let Ok(lanes) = Lanes::new(home).list(false) else {
        return Vec::new();
    };
    lanes
        .into_iter()
        .filter_map(|l| {
            let t = l.as_task();
            let mut session = SessionView::of(&t, panes);
            // zellij lanes are not in tmux's pane list: trust the registry.
            if session.state == SessionState::None && l.mux_backend == "zellij" {
                session.state = SessionState::Live;
            }
            let (bucket, reason) = match l.state {
                // A lane's error is its own account of a dead agent.
                LaneState::Error => (
                    Bucket::Dead,
                    l.last_error.clone().unwrap_or_else(|| "error".into()),
                ),
                LaneState::Finished => (Bucket::Review, "finished".into()),
                // Being created: its session is starting.
                LaneState::Creating if session.state == SessionState::Live => {
                    (Bucket::Working, "working".into())
                }
                // Running (or still creating, its session not live): judged like a working task.
                _ => classify(Status::Working, &session, None)?,
            };
            let (exit_status, exit_signal) = match l.state {
                LaneState::Error | LaneState::Finished => (l.exit_status, None),
                _ => (session.exit_status, session.exit_signal),
            };
            Some(Item {
                kind: ItemKind::Lane,
                id: l.lane_id.clone(),
                project: l.project.clone(),
                branch: l.branch_name.clone(),
                status: l.state.as_str().to_string(),
                bucket,
                reason,
                session: Some(l.mux_target.clone()),
                session_id: l.mux_session_id.clone(),
                exit_status,
                exit_signal,
                created_at: l.created_at.clone(),
                host: None,
                harness: String::new(),
                // A lane's agent is its caller's: orange names no step for it.
                next: None,
            })
        })
        .collect()
}

/// Agent states already read, by (project, task id): the monitor's pass knows them.
pub type Agents = std::collections::HashMap<(String, String), AgentInfo>;

fn task_item(store: &TaskStore, task: &Task, panes: &Panes<'_>, agents: &Agents) -> Option<Item> {
    let session = SessionView::of_pane(panes.agent_pane(task));
    item_of(store, task, &session, agents)
}

/// A task as an [`Item`] (what the widgets, the notifications and its sidebar judge it
/// by), its session as given: `None` when it is done or cancelled. `agents`: its agent
/// state when already read, else read from `agent.json`.
pub fn item_of(
    store: &TaskStore,
    task: &Task,
    session: &SessionView,
    agents: &Agents,
) -> Option<Item> {
    let agent = if session.state == SessionState::Live && task.status.is_active() {
        let info = match agents.get(&(task.project.clone(), task.id.clone())) {
            Some(info) => info.clone(),
            None => agent::load(&store.dir(&task.project, &task.id)),
        };
        fresh_agent_info(task, info)
    } else {
        None
    };
    let (mut bucket, mut reason) = classify(task.status, session, agent.as_ref())?;
    // Its agent killed by the kernel at its memory limit (the monitor saw it die): said so,
    // not its plain exit.
    if bucket == Bucket::Dead && agent.is_none() && task.status.is_active() {
        let info = match agents.get(&(task.project.clone(), task.id.clone())) {
            Some(info) => Some(info.clone()),
            None => Some(agent::load(&store.dir(&task.project, &task.id))),
        };
        if let Some(limit) = info
            .filter(|i| i.killed_at_limit.is_some())
            .and_then(|i| fresh_agent_info(task, i))
            .filter(|i| i.state == Some(agent::State::Dead))
            .and_then(|i| i.killed_at_limit)
        {
            reason = agent::killed_reason(limit);
        }
    }
    // Queued while its harness is at the account's usage limit: it starts after the reset.
    if task.status == Status::Pending {
        let now = crate::orchestration::limits::clock();
        if let Some(until) = crate::orchestration::limits::held(store.home(), &task.harness, now) {
            reason = format!(
                "held: limit until {}",
                crate::execution::harness::limit::short(until, now)
            );
        }
    }
    // Started without a prompt, it waits for the first one: its person knows.
    if task.awaiting_prompt && reason == WAITING_FOR_INPUT {
        reason = FIRST_PROMPT.into();
    }
    let mut next = next::action(task.status, session, agent.as_ref(), bucket, &reason);
    // Its pull request's checks failed or changes are requested: that needs you.
    if let Some(r) = super::classify::pr_reason(bucket, &reason, task.pr.as_ref()) {
        (bucket, reason) = (Bucket::Waiting, r);
        next = Some(super::step::Action::PrFeedback);
    }
    Some(Item {
        kind: ItemKind::Task,
        id: task.id.clone(),
        project: task.project.clone(),
        branch: task.branch.clone(),
        status: task.status.as_str().into(),
        bucket,
        reason,
        session: task.tmux_session.clone(),
        session_id: task.tmux_session_id.clone(),
        exit_status: session.exit_status,
        exit_signal: session.exit_signal,
        created_at: task.created_at.clone(),
        host: None,
        harness: task.harness.clone(),
        next,
    })
}

/// The summary of every open task and lane for these panes: the open tasks (through the
/// index, leniently), their `agent.json`, the lane registry. No process is started.
pub fn read(home: &Home, panes: &[PaneInfo]) -> Summary {
    let (tasks, unreadable) = TaskStore::new(home).list_open_lenient();
    of_tasks(home, &tasks, unreadable, panes, &Agents::new())
}

/// [`read`] with the open tasks already read (the monitor's pass has them).
pub fn of_tasks(
    home: &Home,
    tasks: &[Task],
    unreadable: u32,
    panes: &[PaneInfo],
    agents: &Agents,
) -> Summary {
    let mut s = Summary {
        unreadable,
        ..Summary::default()
    };
    let store = TaskStore::new(home);
    let index = Panes::new(panes);
    let mut items: Vec<Item> = tasks
        .iter()
        .filter_map(|t| task_item(&store, t, &index, agents))
        .collect();
    label_queued(home, &mut items);
    items.extend(lane_items(home, panes));
    s.add_items(items);
    s
}

/// A queued task says why it waits when a cap on running agents is full (`queued: 4
/// running of 4`): counted from the items themselves (active, agent not dead), so every
/// surface that reads the snapshot says the same. Costs nothing without a queued task.
fn label_queued(home: &Home, items: &mut [Item]) {
    if !items.iter().any(|i| i.bucket == Bucket::Queued) {
        return;
    }
    let caps = cap::Caps::read(home);
    if !caps.any() {
        return;
    }
    let counts = cap::Counts::of(
        items
            .iter()
            .filter(|i| is_running(i))
            .map(|i| i.project.as_str()),
    );
    for item in items.iter_mut().filter(|i| i.bucket == Bucket::Queued) {
        if let Some(full) = caps.full(&counts, &item.project) {
            item.reason = full.reason();
        }
    }
}

/// A local task item whose agent runs (what the caps count).
pub fn is_running(item: &Item) -> bool {
    item.kind == ItemKind::Task
        && item.host.is_none()
        && item.bucket != Bucket::Dead
        && Status::parse(&item.status).is_ok_and(|s| s.is_active())
}

impl Summary {
    /// Count `items` in and keep them in order (project, creation, id).
    pub fn add_items(&mut self, items: Vec<Item>) {
        for item in &items {
            self.total.add(item.bucket);
            if item.kind == ItemKind::Lane {
                self.lanes.add(item.bucket);
            } else {
                self.tasks.add(item.bucket);
            }
            self.projects
                .entry(item.project.clone())
                .or_default()
                .add(item.bucket);
        }
        self.items.extend(items);
        self.items.sort_by(|a, b| {
            (&a.project, &a.created_at, &a.id).cmp(&(&b.project, &b.created_at, &b.id))
        });
    }

    /// A remote host's view merged in: its items (marked with the host), its unreadable
    /// files, and the host itself. An unreachable host keeps its last items: its agents
    /// are never reported dead for want of a connection.
    pub fn add_host(&mut self, view: HostView, mut remote: Summary) {
        for item in &mut remote.items {
            item.host = Some(view.name.clone());
        }
        self.unreadable += remote.unreadable;
        self.add_items(remote.items);
        self.hosts.push(view);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_info_older_than_the_task_change_is_ignored() {
        let mut task: Task = serde_json::from_value(serde_json::json!({
            "id": "abc", "project": "p", "branch": "b", "harness": "h", "status": "working",
            "workspace": null, "tmux_session": null, "summary": "", "created_at": "2030-01-01T00:00:00Z",
            "updated_at": "2030-01-01T00:00:10Z"
        }))
        .unwrap();
        let info = AgentInfo {
            state: Some(agent::State::Waiting),
            at: "2030-01-01T00:00:05Z".into(),
            ..AgentInfo::default()
        };
        assert_eq!(fresh_agent_info(&task, info.clone()), None);
        task.updated_at = "2030-01-01T00:00:05Z".into();
        assert!(fresh_agent_info(&task, info).is_some());
    }
}
