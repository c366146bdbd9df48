//! Which open task (or lane) needs you: the buckets of the status widgets, the picker's
//! "next waiting" and the sidebar's notice all come from [`classify`], the one place that
//! decides it. Nothing else in orange re-derives these definitions. Done and cancelled
//! tasks are not counted.
//!
//! | bucket | icon | a task is in it when |
//! |---|---|---|
//! | `working` | `⚙` | status `planning`, `working` or `agent-review`, its session's agent pane is live, and the agent is not known to wait (below); an agent `retrying` an API error by itself is working |
//! | `waiting` (for you) | `⚑` | status `stuck` or `failed`; or status `clarification` with a live agent; or a live agent whose last known agent state (`agent.json`) is `waiting`, `blocked` (a dialog or an approval prompt) or `error`, or that the monitor escalated |
//! | `dead` | `✗` | status `planning`, `clarification`, `working` or `agent-review` and the agent pane is dead (the agent exited; exit status or signal kept) or the session is gone; or a live pane whose agent the monitor saw exit |
//! | `review` (ready for review) | `✓` | status `reviewing`, whatever its session (an agent that reported `complete` may exit) |
//! | `queued` | `⏸` | status `pending`: no agent yet (`--no-spawn`, or waiting for a workspace) |
//!
//! An agent started without a prompt (`task create` with no summary) that waits for its
//! first one is `waiting` with the reason `waiting for a first prompt`, and does not need
//! you ([`needs_you`]): no notification, not in the picker's "next waiting".
//!
//! `agent.json` is only believed when it was written after the task's last change
//! (`updated_at`): a respawn or a status change makes an older observation stale. The pane
//! is the ground truth for life and death: `agent.json` never makes a dead pane live.
//! Task files that cannot be read or parsed are counted as `unreadable`, never silently
//! skipped. Only open tasks are read (through the index of open tasks): the cost does not
//! grow with finished ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::adapters::store::Home;
use crate::adapters::tmux::{PaneExit, PaneInfo};
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::task::{Status, Task, TaskStore};

/// Where a task's session stands, as tmux reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionView {
    /// `live` (agent running), `dead` (agent exited; the pane is kept), `none`.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
}

/// The agent's pane of a task: by pane id when known (a sidebar may share its window),
/// else the first pane of its session (by id, else by exact name).
pub fn agent_pane<'p>(task: &Task, panes: &'p [PaneInfo]) -> Option<&'p PaneInfo> {
    if let Some(pid) = task.tmux_pane_id.as_deref() {
        // Known pane: that one or none (never a sidebar left in its session).
        return panes.iter().find(|p| {
            p.pane_id == pid
                && task
                    .tmux_session_id
                    .as_deref()
                    .is_none_or(|s| s == p.session_id)
        });
    }
    panes.iter().find(|p| {
        task.tmux_session_id.as_deref() == Some(p.session_id.as_str())
            || (task.tmux_session_id.is_none()
                && task.tmux_session.as_deref() == Some(p.session_name.as_str()))
    })
}

impl SessionView {
    pub const NONE: SessionView = SessionView {
        state: "none",
        exit_status: None,
        exit_signal: None,
    };

    pub fn of(task: &Task, panes: &[PaneInfo]) -> SessionView {
        let pane = agent_pane(task, panes);
        match pane {
            None => SessionView::NONE,
            Some(p) => match p.exit() {
                None => SessionView {
                    state: "live",
                    exit_status: None,
                    exit_signal: None,
                },
                Some(PaneExit::Status(c)) => SessionView {
                    state: "dead",
                    exit_status: Some(c),
                    exit_signal: None,
                },
                Some(PaneExit::Signal(s)) => SessionView {
                    state: "dead",
                    exit_status: None,
                    exit_signal: Some(s),
                },
            },
        }
    }

    pub fn icon(&self) -> &'static str {
        match self.state {
            "live" => "●",
            "dead" => "✗",
            _ => "○",
        }
    }
}

/// The agent's state as `agent.json` (kept by the monitor and agent hooks) tells it,
/// corrected by the pane: the pane is the ground truth for life and death, whatever was
/// last recorded. THE agent loader for display (`task list`, the sidebar).
pub fn agent_state(store: &TaskStore, task: &Task, session: &SessionView) -> AgentInfo {
    let mut agent = agent::load(&store.dir(&task.project, &task.id)).current();
    // One vocabulary: an agent that reported its task ready for review, stuck or asking
    // ended its turn by doing so. A `working` seen before that report is stale, and one
    // guessed from screen activity alone in the moments after it (its last words scrolling
    // in) says nothing more: never shown beside `Status: reviewing`. A hook or the
    // transcript saying it works after the report, or its screen busy later (a person
    // answered it in its pane), is believed.
    let seen_at = match agent.signal {
        Some(agent::Signal::Hook) => agent.hook_at.clone().unwrap_or_default(),
        _ => agent.at.clone(),
    };
    if agent.state == Some(agent::State::Working)
        && matches!(
            task.status,
            Status::Reviewing | Status::Stuck | Status::Clarification
        )
        && ((agent.signal == Some(agent::Signal::Screen)
            && !seen_after_change_by(&seen_at, &task.updated_at, REPORT_SETTLES))
            || !seen_after_change(&seen_at, &task.updated_at))
    {
        agent.state = Some(agent::State::Waiting);
    }
    if session.state == "dead" || (session.state == "none" && task.status.is_active()) {
        agent.state = Some(agent::State::Dead);
        agent.exit_status = session.exit_status;
    } else if session.state == "none" {
        agent.state = None;
    }
    agent
}

/// An observation at `seen` (precise) came after a task change at `changed` (whole
/// seconds): after the end of that second, so that one in the same second counts as before.
fn seen_after_change(seen: &str, changed: &str) -> bool {
    seen_after_change_by(seen, changed, 1)
}

/// How long after an agent reported its task its screen's activity is taken for its last
/// words scrolling in, not for new work (a person typing to it later is new work).
const REPORT_SETTLES: i64 = 20;

/// `seen` is more than `secs` seconds after `changed`.
fn seen_after_change_by(seen: &str, changed: &str, secs: i64) -> bool {
    match chrono::DateTime::parse_from_rfc3339(changed) {
        Ok(c) => agent::after(
            seen,
            &(c + chrono::Duration::seconds(secs))
                .to_utc()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        ),
        Err(_) => agent::after(seen, changed),
    }
}

/// Which count an open task (or lane) adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    Working,
    Waiting,
    Dead,
    Review,
    Queued,
}

/// The buckets in display order.
pub const BUCKETS: [Bucket; 5] = [
    Bucket::Working,
    Bucket::Waiting,
    Bucket::Dead,
    Bucket::Review,
    Bucket::Queued,
];

impl Bucket {
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Working => "working",
            Bucket::Waiting => "waiting",
            Bucket::Dead => "dead",
            Bucket::Review => "review",
            Bucket::Queued => "queued",
        }
    }

    /// One column wide in every terminal (no emoji presentation): status lines stay aligned.
    pub fn icon(self) -> &'static str {
        match self {
            Bucket::Working => "⚙",
            Bucket::Waiting => "⚑",
            Bucket::Dead => "✗",
            Bucket::Review => "✓",
            Bucket::Queued => "⏸",
        }
    }

    /// tmux style of the bucket's text.
    pub fn style(self) -> &'static str {
        match self {
            Bucket::Working => "fg=yellow",
            Bucket::Waiting => "fg=magenta,bold",
            Bucket::Dead => "fg=red,bold",
            Bucket::Review => "fg=green",
            Bucket::Queued => "dim",
        }
    }
}

/// How many open tasks (or lanes) are in each bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub working: u32,
    pub waiting: u32,
    pub dead: u32,
    pub review: u32,
    pub queued: u32,
}

impl Counts {
    pub fn get(&self, b: Bucket) -> u32 {
        match b {
            Bucket::Working => self.working,
            Bucket::Waiting => self.waiting,
            Bucket::Dead => self.dead,
            Bucket::Review => self.review,
            Bucket::Queued => self.queued,
        }
    }

    pub fn add(&mut self, b: Bucket) {
        match b {
            Bucket::Working => self.working += 1,
            Bucket::Waiting => self.waiting += 1,
            Bucket::Dead => self.dead += 1,
            Bucket::Review => self.review += 1,
            Bucket::Queued => self.queued += 1,
        }
    }

    /// Open tasks (and lanes) in all buckets.
    pub fn open(&self) -> u32 {
        BUCKETS.iter().map(|b| self.get(*b)).sum()
    }
}

/// One open task (or lane) as the widgets see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// `task` or `lane`.
    pub kind: String,
    pub id: String,
    pub project: String,
    pub branch: String,
    /// The task's status (a lane's state).
    pub status: String,
    pub bucket: Bucket,
    /// Why it is in its bucket, in a few words: `working`, `clarification`, `stuck`,
    /// `waiting for input`, `error: rate_limited`, `exited 3`, `killed (signal 9)`,
    /// `no session`, `review`, `queued`.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// When the task (lane) was created: the picker cycles in this order.
    #[serde(default)]
    pub created_at: String,
    /// The remote host it runs on; absent for this machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The task's harness (what a remote task's sidebar shows); empty for a lane.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub harness: String,
}

impl Item {
    /// The per-session text without styles: `⚙ working`, `✗ exited 3`, `✓ review`.
    pub fn label(&self) -> String {
        format!("{} {}", self.bucket.icon(), self.reason)
    }
}

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

/// THE definition of the buckets (see the module documentation): the bucket of a task and
/// the reason shown for it, or `None` for a done or cancelled task. `agent` is the task's
/// `agent.json` (the monitor and the agent's hooks write it) when it is newer than the task's last
/// change; `None` when unknown.
pub fn classify(
    status: Status,
    session: &SessionView,
    agent: Option<&AgentInfo>,
) -> Option<(Bucket, String)> {
    let dead_reason = |s: &SessionView| match (s.state, s.exit_status, s.exit_signal) {
        ("dead", _, Some(sig)) => signal_reason(sig),
        ("dead", Some(code), None) => format!("exited {code}"),
        ("dead", None, None) => "exited".to_string(),
        _ => "no session".to_string(),
    };
    Some(match status {
        Status::Done | Status::Cancelled => return None,
        Status::Pending => (Bucket::Queued, "queued".into()),
        Status::Failed => (Bucket::Waiting, "failed to start".into()),
        Status::Reviewing => (Bucket::Review, "review".into()),
        Status::Stuck => (Bucket::Waiting, "stuck".into()),
        Status::Planning | Status::Clarification | Status::Working | Status::AgentReview => {
            if session.state != "live" {
                return Some((Bucket::Dead, dead_reason(session)));
            }
            if let Some(info) = agent {
                let info = &info.current();
                let state = info.state;
                // An escalation says more than the state only while the agent waits or
                // works (idle without progress, a question); a dialog, an error or a death
                // says it better itself. (`current()` drops one the agent moved on from.)
                if let Some(esc) = info.escalated.as_ref().filter(|_| {
                    !matches!(
                        state,
                        Some(agent::State::Blocked | agent::State::Error | agent::State::Dead)
                    )
                }) {
                    return Some((Bucket::Waiting, format!("escalated: {}", esc.reason)));
                }
                match state {
                    Some(agent::State::Dead) => {
                        let reason = match info.exit_status {
                            Some(c) => format!("exited {c}"),
                            None => "exited".into(),
                        };
                        return Some((Bucket::Dead, reason));
                    }
                    Some(agent::State::Error) => {
                        let kind = info.error_kind.map(|k| k.as_str()).unwrap_or("other");
                        return Some((Bucket::Waiting, format!("error: {kind}")));
                    }
                    Some(agent::State::Blocked) => {
                        let what = info.blocker.map(|b| b.label()).unwrap_or("dialog");
                        return Some((Bucket::Waiting, format!("blocked: {what}")));
                    }
                    Some(agent::State::Retrying) => {
                        return Some((Bucket::Working, "retrying".into()));
                    }
                    Some(agent::State::Waiting) if status != Status::Clarification => {
                        let what = if info.asked.is_some() {
                            QUESTION
                        } else {
                            WAITING_FOR_INPUT
                        };
                        return Some((Bucket::Waiting, what.into()));
                    }
                    _ => {}
                }
            }
            if status == Status::Clarification {
                (Bucket::Waiting, "clarification".into())
            } else {
                (Bucket::Working, status.as_str().into())
            }
        }
    })
}

fn signal_reason(sig: i32) -> String {
    let name = match sig {
        1 => "hangup",
        2 => "interrupted",
        9 => "killed",
        15 => "terminated",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
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
            if session.state == "none" && l.mux_backend == "zellij" {
                session.state = "live";
            }
            let (bucket, reason) = match l.state {
                // A lane's error is its own account of a dead agent.
                LaneState::Error => (
                    Bucket::Dead,
                    l.last_error.clone().unwrap_or_else(|| "error".into()),
                ),
                LaneState::Finished => (Bucket::Review, "finished".into()),
                // Being created: its session is starting.
                LaneState::Creating if session.state == "live" => {
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
                kind: "lane".to_string(),
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
            })
        })
        .collect()
}

/// Agent states already read, by (project, task id): the monitor's pass knows them.
pub type Agents = std::collections::HashMap<(String, String), AgentInfo>;

fn task_item(home: &Home, task: &Task, panes: &[PaneInfo], agents: &Agents) -> Option<Item> {
    let session = SessionView::of(task, panes);
    let agent = if session.state == "live" && task.status.is_active() {
        let info = match agents.get(&(task.project.clone(), task.id.clone())) {
            Some(info) => info.clone(),
            None => agent::load(&TaskStore::new(home).dir(&task.project, &task.id)),
        };
        fresh_agent_info(task, info)
    } else {
        None
    };
    let (bucket, mut reason) = classify(task.status, &session, agent.as_ref())?;
    // Started without a prompt, it waits for the first one: its person knows.
    if task.awaiting_prompt && reason == WAITING_FOR_INPUT {
        reason = FIRST_PROMPT.into();
    }
    Some(Item {
        kind: "task".into(),
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
    })
}

/// The summary of every open task and lane for these panes: the open tasks (through the
/// index, leniently), their `agent.json`, the lane registry. No process is started.
pub fn summarize(home: &Home, panes: &[PaneInfo]) -> Summary {
    let (tasks, unreadable) = TaskStore::new(home).list_open_lenient();
    summarize_tasks(home, &tasks, unreadable, panes, &Agents::new())
}

/// [`summarize`] with the open tasks already read (the monitor's pass has them).
pub fn summarize_tasks(
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
    let mut items: Vec<Item> = tasks
        .iter()
        .filter_map(|t| task_item(home, t, panes, agents))
        .collect();
    items.extend(lane_items(home, panes));
    s.add_items(items);
    s
}

impl Summary {
    /// Count `items` in and keep them in order (project, creation, id).
    pub fn add_items(&mut self, items: Vec<Item>) {
        for item in &items {
            self.total.add(item.bucket);
            if item.kind == "lane" {
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

/// The reasons of an agent whose turn ended and that waits for input (see [`classify`]).
const WAITING_FOR_INPUT: &str = "waiting for input";
const QUESTION: &str = "question for you";
/// The reason of an agent started without a prompt that waits for its first one: waiting,
/// but not "needs you" (no notification, not in the picker's "next waiting"): the person
/// who started it that way is about to type it.
pub const FIRST_PROMPT: &str = "waiting for a first prompt";

/// Why an item needs you, in one word: what a notification names and keys on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// A dialog or an approval prompt.
    Blocked,
    /// An API error the agent does not retry by itself.
    Error,
    /// The agent exited, or its session is gone.
    Dead,
    /// The monitor escalated (idle without progress, a question, a crash).
    Escalated,
    /// Its turn ended and it waits for input ([`Need::after_a_turn`]), or the task is
    /// stuck, failed, or asks for clarification.
    Waiting,
    /// Work ready for review.
    Review,
}

impl Need {
    pub fn as_str(self) -> &'static str {
        match self {
            Need::Blocked => "blocked",
            Need::Error => "error",
            Need::Dead => "dead",
            Need::Escalated => "escalated",
            Need::Waiting => "waiting",
            Need::Review => "review",
        }
    }
}

/// Why `item` needs you ([`needs_you`] decides whether; this only names it from the
/// reason [`classify`] gave), `None` when it does not.
pub fn need(item: &Item) -> Option<Need> {
    if !needs_you(item) {
        return None;
    }
    Some(match item.bucket {
        Bucket::Dead => Need::Dead,
        Bucket::Review => Need::Review,
        _ if item.reason.starts_with("blocked") => Need::Blocked,
        _ if item.reason.starts_with("error") => Need::Error,
        _ if item.reason.starts_with("escalated") => Need::Escalated,
        _ => Need::Waiting,
    })
}

/// The item waits because its agent's turn ended (waiting for input, or a question): not
/// a stuck, failed or clarification task. Such an agent needs you only after it worked.
pub fn turn_ended(item: &Item) -> bool {
    item.bucket == Bucket::Waiting && (item.reason == WAITING_FOR_INPUT || item.reason == QUESTION)
}

/// Does this item need its person: a question, a dialog, an error, a stuck or failed task
/// (`waiting`), a dead agent (`dead`), work ready for review (`review`)? What the picker's
/// "next waiting" key cycles through. An agent started without a prompt that waits for its
/// first one does not: waiting is what it was started for.
pub fn needs_you(item: &Item) -> bool {
    matches!(item.bucket, Bucket::Waiting | Bucket::Dead | Bucket::Review)
        && item.reason != FIRST_PROMPT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> SessionView {
        SessionView {
            state: "live",
            exit_status: None,
            exit_signal: None,
        }
    }

    fn dead(code: Option<i32>, sig: Option<i32>) -> SessionView {
        SessionView {
            state: "dead",
            exit_status: code,
            exit_signal: sig,
        }
    }

    fn bucket(status: Status, s: &SessionView) -> Option<(Bucket, String)> {
        classify(status, s, None)
    }

    fn b(x: Bucket, r: &str) -> Option<(Bucket, String)> {
        Some((x, r.to_string()))
    }

    #[test]
    fn the_definitions() {
        let none = SessionView::NONE;
        use Bucket::*;
        use Status as S;
        assert_eq!(bucket(S::Working, &live()), b(Working, "working"));
        assert_eq!(bucket(S::Planning, &live()), b(Working, "planning"));
        assert_eq!(bucket(S::AgentReview, &live()), b(Working, "agent-review"));
        assert_eq!(
            bucket(S::Clarification, &live()),
            b(Waiting, "clarification")
        );
        assert_eq!(bucket(S::Stuck, &live()), b(Waiting, "stuck"));
        assert_eq!(bucket(S::Stuck, &none), b(Waiting, "stuck"));
        assert_eq!(
            bucket(S::Reviewing, &dead(Some(0), None)),
            b(Review, "review")
        );
        assert_eq!(bucket(S::Reviewing, &none), b(Review, "review"));
        assert_eq!(
            bucket(S::Working, &dead(Some(3), None)),
            b(Dead, "exited 3")
        );
        assert_eq!(
            bucket(S::Clarification, &dead(Some(0), None)),
            b(Dead, "exited 0")
        );
        assert_eq!(
            bucket(S::Working, &dead(None, Some(9))),
            b(Dead, "killed (signal 9)")
        );
        assert_eq!(
            bucket(S::Working, &dead(None, Some(6))),
            b(Dead, "signal 6")
        );
        assert_eq!(bucket(S::Working, &none), b(Dead, "no session"));
        assert_eq!(bucket(S::Pending, &none), b(Queued, "queued"));
        assert_eq!(bucket(S::Done, &live()), None);
        assert_eq!(bucket(S::Cancelled, &none), None);
    }

    #[test]
    fn agent_state_refines_a_live_agent_but_never_revives_a_dead_pane() {
        use Bucket::*;
        let info = |state: agent::State| AgentInfo {
            state: Some(state),
            at: "2030-01-01T00:00:00Z".into(),
            ..AgentInfo::default()
        };
        let waiting = info(agent::State::Waiting);
        assert_eq!(
            classify(Status::Working, &live(), Some(&waiting)),
            b(Waiting, "waiting for input")
        );
        assert_eq!(
            classify(Status::Clarification, &live(), Some(&waiting)),
            b(Waiting, "clarification")
        );
        let mut err = info(agent::State::Error);
        err.error_kind = Some(agent::ErrorKind::RateLimited);
        assert_eq!(
            classify(Status::Working, &live(), Some(&err)),
            b(Waiting, "error: rate_limited")
        );
        assert_eq!(
            classify(Status::Working, &live(), Some(&info(agent::State::Working))),
            b(Working, "working")
        );
        let mut gone = info(agent::State::Dead);
        gone.exit_status = Some(1);
        assert_eq!(
            classify(Status::Working, &live(), Some(&gone)),
            b(Dead, "exited 1")
        );
        assert_eq!(
            classify(Status::Working, &dead(Some(2), None), Some(&waiting)),
            b(Dead, "exited 2")
        );
        // A hook heard after the monitor's observation wins.
        let mut hooked = info(agent::State::Working);
        hooked.hook_state = Some(agent::State::Waiting);
        hooked.hook_at = Some("2030-01-01T00:00:05Z".into());
        assert_eq!(
            classify(Status::Working, &live(), Some(&hooked)),
            b(Waiting, "waiting for input")
        );
        hooked.hook_at = Some("2029-12-31T23:59:00Z".into());
        assert_eq!(
            classify(Status::Working, &live(), Some(&hooked)),
            b(Working, "working")
        );
        let mut esc = info(agent::State::Working);
        esc.escalated = Some(agent::Escalation {
            reason: "on_error".into(),
            at: "2030-01-01T00:00:00Z".into(),
        });
        assert_eq!(
            classify(Status::Working, &live(), Some(&esc)),
            b(Waiting, "escalated: on_error")
        );
    }

    #[test]
    fn the_need_of_an_item_is_named_from_its_classification() {
        let item = |status: Status, agent: Option<&AgentInfo>, s: &SessionView| {
            let (bucket, reason) = classify(status, s, agent).unwrap();
            Item {
                kind: "task".into(),
                id: "t".into(),
                project: "p".into(),
                branch: "b".into(),
                status: status.as_str().into(),
                bucket,
                reason,
                session: None,
                session_id: None,
                exit_status: None,
                exit_signal: None,
                created_at: String::new(),
                host: None,
                harness: String::new(),
            }
        };
        let info = |state: agent::State| AgentInfo {
            state: Some(state),
            at: "2030-01-01T00:00:00Z".into(),
            ..AgentInfo::default()
        };
        let waiting = item(Status::Working, Some(&info(agent::State::Waiting)), &live());
        assert_eq!(need(&waiting), Some(Need::Waiting));
        assert!(turn_ended(&waiting));
        let mut asked = info(agent::State::Waiting);
        asked.asked = Some("which one?".into());
        assert!(turn_ended(&item(Status::Working, Some(&asked), &live())));
        let stuck = item(Status::Stuck, None, &live());
        assert_eq!(need(&stuck), Some(Need::Waiting));
        assert!(!turn_ended(&stuck));
        let blocked = item(Status::Working, Some(&info(agent::State::Blocked)), &live());
        assert_eq!(need(&blocked), Some(Need::Blocked));
        let error = item(Status::Working, Some(&info(agent::State::Error)), &live());
        assert_eq!(need(&error), Some(Need::Error));
        let mut esc = info(agent::State::Waiting);
        esc.escalated = Some(agent::Escalation {
            reason: "idle".into(),
            at: "2030-01-01T00:00:00Z".into(),
        });
        assert_eq!(
            need(&item(Status::Working, Some(&esc), &live())),
            Some(Need::Escalated)
        );
        let dead = item(Status::Working, None, &dead(Some(1), None));
        assert_eq!(need(&dead), Some(Need::Dead));
        assert_eq!(
            need(&item(Status::Reviewing, None, &live())),
            Some(Need::Review)
        );
        let working = item(Status::Working, Some(&info(agent::State::Working)), &live());
        assert_eq!(need(&working), None);
        assert!(!turn_ended(&working));
        assert_eq!(need(&item(Status::Pending, None, &SessionView::NONE)), None);
        // Started without a prompt, waiting for the first one: waiting, and no need, even
        // after it was seen at work (its screen drew): nothing rings.
        let first = Item {
            reason: FIRST_PROMPT.into(),
            ..waiting.clone()
        };
        assert_eq!(first.bucket, Bucket::Waiting);
        assert_eq!(need(&first), None);
        assert!(!needs_you(&first));
    }

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
