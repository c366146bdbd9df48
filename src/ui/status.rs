//! The status-line widgets: counts of tasks by state, and publishing them as tmux options.
//!
//! # What is counted
//!
//! Every open task (and, once issue 5 wires them in, every open lane: see [`lane_items`])
//! falls in exactly one bucket. [`classify`] is the one place that decides it; nothing else
//! in orange re-derives these definitions. Done and cancelled tasks are not counted.
//!
//! | bucket | icon | a task is in it when |
//! |---|---|---|
//! | `working` | `⚙` | status `planning`, `working` or `agent-review`, its session's agent pane is live, and the agent is not known to wait (below); an agent `retrying` an API error by itself is working |
//! | `waiting` (for you) | `⚑` | status `stuck` (whatever its session: the agent gave up and said so); or status `clarification` with a live agent; or a live agent whose last known agent state (`agent.json`, the monitor and agent hooks of issue 6) is `waiting`, `blocked` (a dialog or an approval prompt) or `error`, or that the monitor escalated |
//! | `dead` | `✗` | status `planning`, `clarification`, `working` or `agent-review` and the agent pane is dead (the agent exited; exit status or signal kept) or the session is gone; or a live pane whose agent the monitor saw exit |
//! | `review` (ready for review) | `✓` | status `reviewing`, whatever its session (an agent that reported `complete` may exit) |
//! | `queued` | `⏸` | status `pending`: no agent yet (`--no-spawn`, or waiting for a workspace) |
//!
//! `agent.json` is only believed when it was written after the task's last change
//! (`updated_at`): a respawn or a status change makes an older observation stale. The pane
//! is the ground truth for life and death: `agent.json` never makes a dead pane live.
//! Task files that cannot be read or parsed are counted as `unreadable` (`⚠`), never
//! silently skipped and never an error of the widget.
//!
//! # Publishing
//!
//! [`publish`] sets the global user option `@orange_summary` ([`render_tmux`]) and, on every
//! task session, `@orange_status` ([`render_session_tmux`]), writing only the values that
//! changed. It reads the current values in the same single tmux call that lists the panes, so
//! an unchanged state costs one tmux process, and a changed one two. `@orange_status` is
//! owned by `publish`: a value of ours left on a session that no longer belongs to an open
//! task is unset.
//!
//! # `orange status` and its cache
//!
//! `orange status` runs in status lines every few seconds. It always reads the task files
//! (four system calls each) and the `agent.json` of live agents, but takes the tmux part
//! (which panes are live or dead) from `$ORANGE_HOME/run/status-cache.json`, written by
//! every `publish` and every `orange status` that had to ask tmux, as long as it is still
//! right:
//! - it was taken for the same tmux server (`ORANGE_TMUX_SOCKET` / `$TMUX`);
//! - no `task.json` changed since (mtime + [`CHANGE_SLACK`] before the snapshot): spawn and
//!   respawn, the only ways a task gets a new session, rewrite it;
//! - every agent pane it saw live still runs (not exited, not a zombie), and so does the
//!   tmux server (checked in `/proc` without a fork; where there is no `/proc`, tmux is
//!   asked);
//! - it is younger than [`CACHE_MAX_AGE`] (a safety net for what the checks cannot see,
//!   such as a session renamed by hand).
//!
//! Otherwise it asks tmux once ([`Tmux::liveness_snapshot`]) and rewrites the cache.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::adapters::store::Home;
use crate::adapters::tmux::{OptionScope, PaneInfo, Tmux};
use crate::error::Result;
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::lifecycle::SessionView;
use crate::orchestration::task::{self, Status, Task};

/// The global user option holding [`render_tmux`]'s text.
pub const SUMMARY_OPTION: &str = "@orange_summary";
/// The per-session user option holding [`render_session_tmux`]'s text.
pub const SESSION_OPTION: &str = "@orange_status";

/// The cached tmux snapshot is not trusted past this age.
pub const CACHE_MAX_AGE: Duration = Duration::from_secs(60);
/// A task file changed less than this before a snapshot may have changed during it
/// (file times come from a coarse clock): such a snapshot is not trusted.
pub const CHANGE_SLACK: Duration = Duration::from_millis(50);

const CACHE_VERSION: u32 = 1;

/// Every value we set starts with this: it keeps the user's colours around our text.
const STYLE_OPEN: &str = "#[push-default]";
const STYLE_CLOSE: &str = "#[pop-default]";

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

const UNREADABLE_ICON: &str = "⚠";
const UNREADABLE_STYLE: &str = "fg=red";

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
    /// `task` (`lane` once issue 5 adds them).
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
    #[serde(skip)]
    created_at: String,
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
    /// Lanes (issue 5): zero until [`lane_items`] returns them.
    pub lanes: Counts,
    /// Per project (issue 7's grouping); only projects with open tasks or lanes.
    pub projects: BTreeMap<String, Counts>,
    /// Every open task (and lane), by project, oldest first.
    pub items: Vec<Item>,
}

impl Summary {
    /// Nothing to show: no open task or lane, no unreadable file.
    pub fn is_empty(&self) -> bool {
        self.total.open() == 0 && self.unreadable == 0
    }
}

/// THE definition of the buckets (see the module documentation): the bucket of a task and
/// the reason shown for it, or `None` for a done or cancelled task. `agent` is the task's
/// `agent.json` (issue 6's monitor and agent hooks) when it is newer than the task's last
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
                            "question for you"
                        } else {
                            "waiting for input"
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

// ---------------------------------------------------------------------------------------
// Rendering (pure)
// ---------------------------------------------------------------------------------------

/// Make text safe inside a tmux format value: `#` is doubled, so user data can never open a
/// style (`#[`) or a format (`#{`). Today no rendered text carries user data (only counts,
/// icons and fixed words); anything that ever does must go through this.
pub fn escape_tmux(text: &str) -> String {
    text.replace('#', "##")
}

fn styled(style: &str, text: &str) -> String {
    format!("#[{style}]{}#[default]", escape_tmux(text))
}

/// The status-line text: the non-zero counts with icons and colours, e.g.
/// `#[push-default]#[fg=yellow]⚙ 3#[default] #[fg=red,bold]✗ 1#[default]#[pop-default]`;
/// empty when there is nothing open. The push/pop keeps the user's own colours for the text
/// around it. It holds no user data, so it means the same whether tmux inserts it raw
/// (`#{@orange_summary}`) or expands it again (`#(orange status --format tmux)`).
pub fn render_tmux(summary: &Summary) -> String {
    let mut parts: Vec<String> = BUCKETS
        .iter()
        .filter(|b| summary.total.get(**b) > 0)
        .map(|b| {
            styled(
                b.style(),
                &format!("{} {}", b.icon(), summary.total.get(*b)),
            )
        })
        .collect();
    if summary.unreadable > 0 {
        parts.push(styled(
            UNREADABLE_STYLE,
            &format!("{UNREADABLE_ICON} {}", summary.unreadable),
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("{STYLE_OPEN}{}{STYLE_CLOSE}", parts.join(" "))
}

/// Longest per-session text (an escalation reason can be long; status lines are short).
const SESSION_TEXT_MAX: usize = 40;

/// `@orange_status` of the item's session: e.g. `⚙ working`, `✗ exited 3`, `✓ review`,
/// coloured like its bucket, at most 40 characters.
pub fn render_session_tmux(item: &Item) -> String {
    let mut label = item.label();
    if label.chars().count() > SESSION_TEXT_MAX {
        label = label.chars().take(SESSION_TEXT_MAX - 1).collect::<String>() + "…";
    }
    format!(
        "{STYLE_OPEN}{}{STYLE_CLOSE}",
        styled(item.bucket.style(), &label)
    )
}

fn counts_plain(c: &Counts, unreadable: u32) -> String {
    let mut s: Vec<String> = BUCKETS[..4]
        .iter()
        .map(|b| format!("{} {}", b.as_str(), c.get(*b)))
        .collect();
    if c.queued > 0 {
        s.push(format!("queued {}", c.queued));
    }
    if unreadable > 0 {
        s.push(format!("unreadable {unreadable}"));
    }
    s.join(" · ")
}

/// One line for people, scripts and status lines, no colours and no styles: the four
/// counts always, `queued` and `unreadable` when non-zero, e.g.
/// `working 2 · waiting 1 · dead 0 · review 1 · queued 1`. One line because a status line
/// (`#(orange status --format plain)`) shows only one; per-project counts are in the JSON.
pub fn render_plain(summary: &Summary) -> String {
    let mut out = counts_plain(&summary.total, summary.unreadable);
    out.push('\n');
    out
}

/// The summary as one JSON value (what `--format json` and `--json` print).
pub fn render_json(summary: &Summary) -> serde_json::Value {
    serde_json::to_value(summary).expect("a summary serializes")
}

// ---------------------------------------------------------------------------------------
// Computing
// ---------------------------------------------------------------------------------------

/// The task files, read leniently.
struct Loaded {
    tasks: Vec<Task>,
    unreadable: u32,
    /// Newest `task.json` modification time.
    newest: Option<SystemTime>,
}

/// Read every `tasks/<project>/<id>/task.json`: one `read_dir` per project and one open per
/// task, nothing else.
fn load_tasks(home: &Home) -> Loaded {
    let mut loaded = Loaded {
        tasks: Vec::new(),
        unreadable: 0,
        newest: None,
    };
    let Ok(projects) = std::fs::read_dir(home.tasks_dir()) else {
        return loaded;
    };
    let mut buf = Vec::with_capacity(2048);
    for project in projects.flatten() {
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_some_and(task::valid_id) {
                continue;
            }
            let path = entry.path().join("task.json");
            let modified = match read_small(&path, &mut buf) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => {
                    loaded.unreadable += 1;
                    continue;
                }
            };
            if let Some(m) = modified {
                loaded.newest = Some(loaded.newest.map_or(m, |n| n.max(m)));
            }
            match serde_json::from_slice::<Task>(&buf) {
                Ok(t) => loaded.tasks.push(t),
                Err(_) => loaded.unreadable += 1,
            }
        }
    }
    loaded
}

/// Read a small file into `buf` with as few system calls as the kernel allows (open, one
/// `statx` for its size and time, one `read`, close: `std::fs::read` makes six or seven,
/// which shows at a hundred files per status line). Returns its modification time.
fn read_small(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<Option<SystemTime>> {
    let mut f = File::open(path)?;
    let meta = f.metadata()?;
    let len = meta.len() as usize;
    buf.clear();
    buf.resize(len + 1, 0);
    let mut filled = 0;
    loop {
        let n = f.read(&mut buf[filled..])?;
        filled += n;
        if n == 0 || filled < buf.len() {
            // A short read of a regular file is its end (or, rarely, a concurrent write:
            // the next read sees the whole new file, as files are replaced by rename).
            break;
        }
        // The file grew since statx: read on.
        buf.resize(buf.len() * 2, 0);
    }
    buf.truncate(filled);
    Ok(meta.modified().ok())
}

/// `agent.json` of a task (issue 6), read like the task files; default when absent or
/// unreadable, as `agent::load` does.
fn load_agent(dir: &Path, buf: &mut Vec<u8>) -> AgentInfo {
    match read_small(&agent::info_path(dir), buf) {
        Ok(_) => serde_json::from_slice(buf).unwrap_or_default(),
        Err(_) => AgentInfo::default(),
    }
}

/// Lanes as items: one [`Item`] of kind `lane` per open lane, bucketed like tasks:
/// running with a live agent → working; running with a dead or missing session, or
/// `error` → dead; `finished` → review. Read straight from `lanes/registry.json` and the
/// panes already listed: no extra process. An unreadable registry shows no lanes (the lane
/// commands report it).
pub fn lane_items(home: &Home, panes: &[PaneInfo]) -> Vec<Item> {
    let Ok(reg) = crate::adapters::store::read_json::<crate::orchestration::lane::Registry>(
        &home.root.join("lanes/registry.json"),
    ) else {
        return Vec::new();
    };
    use crate::orchestration::lane::LaneState;
    reg.lanes
        .into_values()
        .filter(|l| !matches!(l.state, LaneState::Closed))
        .map(|l| {
            let target = l.mux_session_id.clone().unwrap_or(l.mux_target.clone());
            let pane = panes
                .iter()
                .find(|p| p.session_id == target || p.session_name == target);
            let (bucket, reason, exit_status, exit_signal) = match (l.state, pane) {
                (LaneState::Finished, _) => {
                    (Bucket::Review, "finished".to_string(), l.exit_status, None)
                }
                (LaneState::Error, _) => (
                    Bucket::Dead,
                    l.last_error.clone().unwrap_or_else(|| "error".into()),
                    l.exit_status,
                    None,
                ),
                (_, Some(p)) if !p.pane_dead => {
                    (Bucket::Working, "working".to_string(), None, None)
                }
                (_, Some(p)) => match p.exit() {
                    Some(crate::adapters::tmux::PaneExit::Status(c)) => {
                        (Bucket::Dead, format!("exited {c}"), Some(c), None)
                    }
                    Some(crate::adapters::tmux::PaneExit::Signal(sig)) => (
                        Bucket::Dead,
                        format!("killed (signal {sig})"),
                        None,
                        Some(sig),
                    ),
                    None => (Bucket::Dead, "exited".to_string(), None, None),
                },
                // zellij lanes are not in tmux's pane list: trust the registry.
                (_, None) if l.mux_backend == "zellij" => {
                    (Bucket::Working, "working".to_string(), None, None)
                }
                (_, None) => (Bucket::Dead, "no session".to_string(), None, None),
            };
            Item {
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
            }
        })
        .collect()
}

fn task_item(home: &Home, task: &Task, panes: &[PaneInfo], buf: &mut Vec<u8>) -> Option<Item> {
    let session = SessionView::of(task, panes);
    let agent = if session.state == "live" && task.status.is_active() {
        let dir = home.tasks_dir().join(&task.project).join(&task.id);
        fresh_agent_info(task, load_agent(&dir, buf))
    } else {
        None
    };
    let (bucket, reason) = classify(task.status, &session, agent.as_ref())?;
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
    })
}

fn summary_from(home: &Home, loaded: &Loaded, panes: &[PaneInfo]) -> Summary {
    let mut s = Summary {
        unreadable: loaded.unreadable,
        ..Summary::default()
    };
    let mut buf = Vec::new();
    let mut items: Vec<Item> = loaded
        .tasks
        .iter()
        .filter_map(|t| task_item(home, t, panes, &mut buf))
        .collect();
    items.extend(lane_items(home, panes));
    for item in &items {
        s.total.add(item.bucket);
        if item.kind == "lane" {
            s.lanes.add(item.bucket);
        } else {
            s.tasks.add(item.bucket);
        }
        s.projects
            .entry(item.project.clone())
            .or_default()
            .add(item.bucket);
    }
    items.sort_by(|a, b| {
        (&a.project, &a.created_at, &a.id).cmp(&(&b.project, &b.created_at, &b.id))
    });
    s.items = items;
    s
}

/// The summary for these panes (one [`Tmux::snapshot`]; empty when no server runs).
pub fn summarize(home: &Home, panes: &[PaneInfo]) -> Summary {
    summary_from(home, &load_tasks(home), panes)
}

// ---------------------------------------------------------------------------------------
// The tmux snapshot and its cache
// ---------------------------------------------------------------------------------------

/// What one tmux call told us: the panes, the server's pid, and the values of our options.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub panes: Vec<PaneInfo>,
    pub server_pid: Option<u32>,
    /// Before the call (ms since the epoch).
    pub taken_at_ms: u64,
    /// `@orange_status` as each session sees it (session id → value; empty when unset).
    pub session_values: HashMap<String, String>,
    /// `@orange_summary` as the server holds it.
    pub summary_value: String,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One tmux call: every pane, the server pid and our options. `None` when no server runs
/// (or tmux is not installed).
pub fn take_snapshot(tmux: &Tmux) -> Result<Option<Snapshot>> {
    // No socket file, no server: not even a failed connection to pay for.
    if !tmux.is_available() || tmux.socket_path().is_some_and(|p| !p.exists()) {
        return Ok(None);
    }
    let taken_at_ms = now_ms();
    let rows = tmux.liveness_snapshot(&[SESSION_OPTION, SUMMARY_OPTION])?;
    if rows.is_empty() {
        return Ok(None);
    }
    let mut snap = Snapshot {
        taken_at_ms,
        ..Snapshot::default()
    };
    for (p, mut x) in rows {
        let summary = x.pop().unwrap_or_default();
        let status = x.pop().unwrap_or_default();
        snap.server_pid = snap.server_pid.or_else(|| x.pop()?.parse().ok());
        snap.session_values
            .entry(p.session_id.clone())
            .or_insert(status);
        if snap.summary_value.is_empty() {
            snap.summary_value = summary;
        }
        snap.panes.push(p);
    }
    Ok(Some(snap))
}

/// `run/status-cache.json`: the tmux part of the last computation (the summary itself is
/// always computed from the task files, so a task change never waits for a cache).
#[derive(Debug, Serialize, Deserialize)]
struct Cache {
    version: u32,
    server: String,
    taken_at_ms: u64,
    server_pid: Option<u32>,
    /// The first pane of each session (the one [`SessionView::of`] looks at).
    panes: Vec<CachedPane>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CachedPane {
    session_id: String,
    session_name: String,
    pane_id: String,
    pane_pid: u32,
    dead: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
}

impl CachedPane {
    fn of(p: &PaneInfo) -> CachedPane {
        CachedPane {
            session_id: p.session_id.clone(),
            session_name: p.session_name.clone(),
            pane_id: p.pane_id.clone(),
            pane_pid: p.pane_pid,
            dead: p.pane_dead,
            status: p.pane_dead_status,
            signal: p.pane_dead_signal,
        }
    }

    fn pane(&self) -> PaneInfo {
        PaneInfo {
            session_id: self.session_id.clone(),
            session_name: self.session_name.clone(),
            session_attached: false,
            window_id: String::new(),
            window_index: 0,
            window_activity: 0,
            pane_id: self.pane_id.clone(),
            pane_index: 0,
            pane_active: true,
            pane_pid: self.pane_pid,
            pane_dead: self.dead,
            pane_dead_status: self.status,
            pane_dead_signal: self.signal,
            pane_current_command: String::new(),
            pane_current_path: String::new(),
            pane_width: 0,
            pane_height: 0,
        }
    }
}

pub fn run_dir(home: &Home) -> PathBuf {
    home.root.join("run")
}

pub fn cache_path(home: &Home) -> PathBuf {
    run_dir(home).join("status-cache.json")
}

/// Which server a cache describes: its socket (so `-L name`, `$TMUX` and the default
/// server agree when they are the same one).
fn server_key(tmux: &Tmux) -> String {
    match tmux.socket_path() {
        Some(p) => p.to_string_lossy().into_owned(),
        None => format!("{:?}", tmux.server()),
    }
}

fn write_cache(home: &Home, tmux: &Tmux, snap: &Snapshot) {
    let mut seen = HashSet::new();
    let cache = Cache {
        version: CACHE_VERSION,
        server: server_key(tmux),
        taken_at_ms: snap.taken_at_ms,
        server_pid: snap.server_pid,
        panes: snap
            .panes
            .iter()
            .filter(|p| seen.insert(p.session_id.as_str()))
            .map(CachedPane::of)
            .collect(),
    };
    // A cache: no fsync, and any failure only means the next call asks tmux.
    let _ = crate::adapters::store::write_cache(
        &cache_path(home),
        &serde_json::to_vec(&cache).unwrap_or_default(),
    );
}

fn read_cache(home: &Home) -> Option<Cache> {
    let bytes = std::fs::read(cache_path(home)).ok()?;
    serde_json::from_slice::<Cache>(&bytes)
        .ok()
        .filter(|c| c.version == CACHE_VERSION)
}

/// Is the process running, neither gone nor a zombie? One `readlink` of `/proc/<pid>/exe`
/// (a zombie has no executable left); `None` when this system has no `/proc`. A zombie
/// agent matters: Debian's tmux sometimes never reaps a pane's program, and then never
/// runs `pane-died` either; the snapshot this check triggers nudges tmux's reaper (see
/// `Tmux::snapshot`), after which tmux records the exit and runs its hooks.
fn pid_running(pid: u32) -> Option<bool> {
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(_) => Some(true),
        // Another user's process: it exists, whatever its state.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(true),
        Err(_) if Path::new("/proc/self/exe").exists() => Some(false),
        Err(_) => None,
    }
}

/// The cached panes, if the cache still describes tmux (see the module documentation).
fn cached_panes(home: &Home, tmux: &Tmux, loaded: &Loaded) -> Option<Vec<PaneInfo>> {
    let cache = read_cache(home)?;
    let now = now_ms();
    if cache.server != server_key(tmux)
        || now < cache.taken_at_ms
        || now - cache.taken_at_ms > CACHE_MAX_AGE.as_millis() as u64
    {
        return None;
    }
    if let Some(newest) = loaded.newest {
        let newest_ms = newest
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(u64::MAX);
        if newest_ms.saturating_add(CHANGE_SLACK.as_millis() as u64) >= cache.taken_at_ms {
            return None;
        }
    }
    if let Some(pid) = cache.server_pid {
        if pid_running(pid) != Some(true) {
            return None;
        }
    }
    let panes: Vec<PaneInfo> = cache.panes.iter().map(CachedPane::pane).collect();
    // Every agent the cache saw live must still run.
    for task in loaded.tasks.iter().filter(|t| t.status.is_active()) {
        let Some(pane) = agent_pane(task, &panes) else {
            continue;
        };
        if !pane.pane_dead && pid_running(pane.pane_pid) != Some(true) {
            return None;
        }
    }
    Some(panes)
}

/// The summary as `orange status` shows it: the tmux part from the cache when it is still
/// right, else from one tmux call (which refreshes the cache). At most one tmux process.
pub fn current(home: &Home, tmux: &Tmux) -> Result<Summary> {
    let loaded = load_tasks(home);
    if let Some(panes) = cached_panes(home, tmux, &loaded) {
        return Ok(summary_from(home, &loaded, &panes));
    }
    let snap = take_snapshot(tmux)?.unwrap_or_else(|| Snapshot {
        taken_at_ms: now_ms(),
        ..Snapshot::default()
    });
    let summary = summary_from(home, &loaded, &snap.panes);
    write_cache(home, tmux, &snap);
    Ok(summary)
}

// ---------------------------------------------------------------------------------------
// Publishing
// ---------------------------------------------------------------------------------------

/// Compute the summary and publish it as tmux options: `@orange_summary` (global) and
/// `@orange_status` on every open task's session, writing only values that changed; then
/// refresh the cache and poke the sidebars ([`poke`]).
///
/// Callers (lifecycle after every state change, `orange hook`) IGNORE its errors: a status
/// line must never fail a command. A no-op when no tmux server runs: one `stat` of its
/// socket, or one failed connection when a stale socket file is left.
/// After a state change: republish the status widgets and poke sidebars. Never fails
/// the caller (no tmux server, a slow one: the next change or monitor pass catches up).
pub fn changed(home: &Home, tmux: &Tmux) {
    let _ = publish(home, tmux);
    poke(home);
}

pub fn publish(home: &Home, tmux: &Tmux) -> Result<()> {
    let Some(snap) = take_snapshot(tmux)? else {
        return Ok(());
    };
    publish_snapshot(home, tmux, &snap).map(|_| ())
}

/// [`publish`] with a snapshot already taken (the hooks take one to reconcile first).
pub fn publish_snapshot(home: &Home, tmux: &Tmux, snap: &Snapshot) -> Result<Summary> {
    let summary = summarize(home, &snap.panes);
    write_cache(home, tmux, snap);
    let changes = option_changes(&summary, snap);
    let scoped: Vec<(OptionScope<'_>, &str, Option<&str>)> = changes
        .iter()
        .map(|(target, name, value)| {
            let scope = match target {
                Some(t) => OptionScope::Session(t.as_str()),
                None => OptionScope::Global,
            };
            (scope, *name, value.as_deref())
        })
        .collect();
    let result = tmux.set_options(&scoped);
    poke(home);
    result.map(|_| summary)
}

/// Which options to set (`Some`) or unset (`None`): (session id or `None` for global,
/// option, value).
type Change = (Option<String>, &'static str, Option<String>);

fn option_changes(summary: &Summary, snap: &Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    let text = render_tmux(summary);
    if text != snap.summary_value {
        changes.push((None, SUMMARY_OPTION, Some(text)));
    }
    let mut wanted: HashMap<&str, String> = HashMap::new();
    for item in &summary.items {
        let session = pane_of(
            item.session_id.as_deref(),
            item.session.as_deref(),
            &snap.panes,
        );
        if let Some(p) = session {
            wanted.insert(p.session_id.as_str(), render_session_tmux(item));
        }
    }
    let mut sessions: Vec<&String> = snap.session_values.keys().collect();
    sessions.sort();
    for sid in sessions {
        let have = &snap.session_values[sid];
        match wanted.get(sid.as_str()) {
            Some(want) if want != have => {
                changes.push((Some(sid.clone()), SESSION_OPTION, Some(want.clone())))
            }
            // Ours (only we write values starting so), on a session no open item owns.
            None if have.starts_with(STYLE_OPEN) => {
                changes.push((Some(sid.clone()), SESSION_OPTION, None))
            }
            _ => {}
        }
    }
    changes
}

// ---------------------------------------------------------------------------------------
// Liveness: history events for agents that exited and sessions that closed
// ---------------------------------------------------------------------------------------

/// The task's agent pane, by the one rule [`SessionView::of`] uses (the stored pane id, so
/// a sidebar split into the window never stands in for the agent).
fn agent_pane<'a>(task: &Task, panes: &'a [PaneInfo]) -> Option<&'a PaneInfo> {
    crate::orchestration::lifecycle::agent_pane(task, panes)
}

/// The first pane of the session with this id (or, without an id, this name): where a
/// session's option goes.
fn pane_of<'a>(
    id: Option<&str>,
    name: Option<&str>,
    panes: &'a [PaneInfo],
) -> Option<&'a PaneInfo> {
    panes.iter().find(|p| {
        id == Some(p.session_id.as_str()) || (id.is_none() && name == Some(p.session_name.as_str()))
    })
}

/// How long a hook waits for another hook's reconcile before skipping its own.
const RECONCILE_LOCK_WAIT: Duration = Duration::from_millis(300);

/// Record in each open task's history what tmux shows happened to its agent, once:
/// `agent.exited` (with `exit_status` or `exit_signal`, `pane_pid`) when its pane is dead,
/// `session.closed` when its session is gone while the server runs. Each event carries the
/// session's name and id and `via` (what noticed it); an event already in the history for the
/// same session (and pane pid) is not written again, so every hook can call this. Task status
/// is not changed here: what an exit means (crash, outcome, policy) is the monitor's call.
/// Does nothing without a snapshot (no server: nothing can be told). Returns what it wrote.
pub fn record_exits(home: &Home, snap: Option<&Snapshot>, via: &str) -> Vec<serde_json::Value> {
    let Some(snap) = snap else {
        return Vec::new();
    };
    let lock_path = run_dir(home).join("hook.lock");
    // Serializes concurrent hooks (pane-died and session-closed fire together), briefly.
    let Ok(_lock) =
        crate::adapters::store::LockGuard::acquire_within(&lock_path, RECONCILE_LOCK_WAIT)
    else {
        log(
            home,
            "warn",
            "another hook holds the lock; exits not recorded this time",
            serde_json::json!({"component": "hook", "via": via}),
        );
        return Vec::new();
    };
    let store = task::TaskStore::new(home);
    let mut recorded = Vec::new();
    for t in load_tasks(home).tasks {
        if !t.status.is_active() || (t.tmux_session.is_none() && t.tmux_session_id.is_none()) {
            continue;
        }
        let mut data = serde_json::json!({
            "tmux_session": t.tmux_session,
            "tmux_session_id": t.tmux_session_id,
        });
        let event = match agent_pane(&t, &snap.panes) {
            Some(p) => match p.exit() {
                None => continue,
                Some(exit) => {
                    data["pane_id"] = p.pane_id.clone().into();
                    data["pane_pid"] = p.pane_pid.into();
                    match exit {
                        crate::adapters::tmux::PaneExit::Status(c) => {
                            data["exit_status"] = c.into()
                        }
                        crate::adapters::tmux::PaneExit::Signal(s) => {
                            data["exit_signal"] = s.into()
                        }
                    }
                    "agent.exited"
                }
            },
            None => "session.closed",
        };
        let same = |e: &task::Event| {
            e.event == event
                && e.data.get("tmux_session_id") == data.get("tmux_session_id")
                && e.data.get("tmux_session") == data.get("tmux_session")
                && e.data.get("pane_pid") == data.get("pane_pid")
        };
        if store.history(&t.project, &t.id).iter().any(same) {
            continue;
        }
        data["via"] = via.into();
        match store.append_history(&t, event, data.clone()) {
            Ok(()) => {
                data["task"] = t.id.clone().into();
                data["project"] = t.project.clone().into();
                data["event"] = event.into();
                recorded.push(data);
            }
            Err(e) => log(
                home,
                "error",
                "could not record a history event",
                serde_json::json!({"component": "hook", "task": t.id, "event": event, "error": e.to_string()}),
            ),
        }
    }
    recorded
}

// ---------------------------------------------------------------------------------------
// Poke and log
// ---------------------------------------------------------------------------------------

/// Touch `$ORANGE_HOME/run/poke` (created if needed) so sidebars redraw at once.
pub fn poke(home: &Home) {
    let path = run_dir(home).join("poke");
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    };
    let file = open().or_else(|_| {
        std::fs::create_dir_all(run_dir(home))?;
        open()
    });
    if let Ok(f) = file {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Append one JSON line to `$ORANGE_HOME/orange.log`: `ts`, `level`, `pid`, `msg`, and the
/// fields of `extra` (an object). Never fails: logging is best effort.
pub fn log(home: &Home, level: &str, msg: &str, extra: serde_json::Value) {
    crate::adapters::store::log(home, level, msg, extra)
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

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

    fn summary(w: u32, wt: u32, d: u32, r: u32, q: u32, unreadable: u32) -> Summary {
        Summary {
            total: Counts {
                working: w,
                waiting: wt,
                dead: d,
                review: r,
                queued: q,
            },
            unreadable,
            ..Summary::default()
        }
    }

    #[test]
    fn tmux_rendering() {
        assert_eq!(render_tmux(&Summary::default()), "");
        assert_eq!(
            render_tmux(&summary(3, 1, 1, 2, 0, 0)),
            "#[push-default]#[fg=yellow]⚙ 3#[default] #[fg=magenta,bold]⚑ 1#[default] \
             #[fg=red,bold]✗ 1#[default] #[fg=green]✓ 2#[default]#[pop-default]"
        );
        assert_eq!(
            render_tmux(&summary(0, 0, 1, 0, 2, 1)),
            "#[push-default]#[fg=red,bold]✗ 1#[default] #[dim]⏸ 2#[default] \
             #[fg=red]⚠ 1#[default]#[pop-default]"
        );
    }

    /// Every `#` we emit opens a style: nothing tmux could read as a format or as text.
    fn only_styles(s: &str) -> bool {
        s.match_indices('#').all(|(i, _)| s[i..].starts_with("#["))
    }

    #[test]
    fn rendered_text_has_no_stray_hash() {
        for s in [
            summary(1, 2, 3, 4, 5, 6),
            summary(0, 0, 0, 0, 0, 1),
            summary(10, 0, 0, 0, 0, 0),
        ] {
            assert!(only_styles(&render_tmux(&s)), "{}", render_tmux(&s));
        }
        assert_eq!(escape_tmux("a#{b}#[c]"), "a##{b}##[c]");
    }

    #[test]
    fn icons_are_one_column_wide() {
        for b in BUCKETS {
            assert_eq!(b.icon().width(), 1, "{b:?}");
        }
        assert_eq!(UNREADABLE_ICON.width(), 1);
    }

    fn item(bucket: Bucket, reason: &str) -> Item {
        Item {
            kind: "task".into(),
            id: "abc".into(),
            project: "p".into(),
            branch: "b".into(),
            status: "working".into(),
            bucket,
            reason: reason.into(),
            session: None,
            session_id: None,
            exit_status: None,
            exit_signal: None,
            created_at: String::new(),
        }
    }

    #[test]
    fn session_rendering() {
        assert_eq!(
            render_session_tmux(&item(Bucket::Working, "working")),
            "#[push-default]#[fg=yellow]⚙ working#[default]#[pop-default]"
        );
        assert_eq!(item(Bucket::Dead, "exited 3").label(), "✗ exited 3");
        assert_eq!(item(Bucket::Review, "review").label(), "✓ review");
        let s = render_session_tmux(&item(Bucket::Waiting, "error: other"));
        assert!(only_styles(&s) && s.starts_with(STYLE_OPEN), "{s}");
        // Text from elsewhere (an escalation reason) is escaped and kept short.
        let long = render_session_tmux(&item(
            Bucket::Waiting,
            &format!("escalated: #[fg=red] #{{pane_id}} {}", "x".repeat(80)),
        ));
        assert!(only_styles(&long.replace("##", "")), "{long}");
        assert!(long.contains("…#[default]"), "{long}");
    }

    #[test]
    fn plain_rendering_is_one_line() {
        assert_eq!(
            render_plain(&Summary::default()),
            "working 0 · waiting 0 · dead 0 · review 0\n"
        );
        let mut s = summary(2, 1, 0, 1, 1, 1);
        s.projects.insert(
            "app".into(),
            Counts {
                working: 2,
                ..Counts::default()
            },
        );
        assert_eq!(
            render_plain(&s),
            "working 2 · waiting 1 · dead 0 · review 1 · queued 1 · unreadable 1\n"
        );
    }

    #[test]
    fn json_has_flat_totals_projects_and_items() {
        let mut s = summary(1, 0, 0, 0, 0, 0);
        s.items.push(item(Bucket::Working, "working"));
        let v = render_json(&s);
        assert_eq!(v["working"], 1);
        assert_eq!(v["unreadable"], 0);
        assert_eq!(v["lanes"]["working"], 0);
        assert_eq!(v["items"][0]["bucket"], "working");
        assert!(v["items"][0].get("created_at").is_none());
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back.total, s.total);
    }

    fn pane(sid: &str, name: &str) -> PaneInfo {
        CachedPane {
            session_id: sid.into(),
            session_name: name.into(),
            pane_id: "%1".into(),
            pane_pid: 1,
            dead: false,
            status: None,
            signal: None,
        }
        .pane()
    }

    #[test]
    fn only_changed_options_are_written_and_stale_ones_of_ours_unset() {
        let mut s = summary(1, 0, 0, 0, 0, 0);
        let mut it = item(Bucket::Working, "working");
        it.session_id = Some("$1".into());
        s.items.push(it.clone());
        let mut snap = Snapshot {
            panes: vec![pane("$1", "p/b"), pane("$2", "mine"), pane("$3", "old")],
            ..Snapshot::default()
        };
        snap.session_values.insert("$1".into(), String::new());
        snap.session_values
            .insert("$2".into(), "user's own value".into());
        snap.session_values
            .insert("$3".into(), render_session_tmux(&item(Bucket::Dead, "x")));
        let c = option_changes(&s, &snap);
        assert_eq!(
            c,
            vec![
                (None, SUMMARY_OPTION, Some(render_tmux(&s))),
                (
                    Some("$1".into()),
                    SESSION_OPTION,
                    Some(render_session_tmux(&it))
                ),
                (Some("$3".into()), SESSION_OPTION, None),
            ]
        );
        snap.summary_value = render_tmux(&s);
        snap.session_values
            .insert("$1".into(), render_session_tmux(&it));
        snap.session_values.remove("$3");
        assert_eq!(option_changes(&s, &snap), vec![]);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the test runs a shell on purpose
    fn pid_check_tells_running_from_gone_and_zombie() {
        if !Path::new("/proc/self/exe").exists() {
            return;
        }
        assert_eq!(pid_running(std::process::id()), Some(true));
        assert_eq!(pid_running(u32::MAX - 1), Some(false));
        // An exited child not reaped yet is a zombie.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let zombie = child.id();
        let start = std::time::Instant::now();
        while pid_running(zombie) == Some(true) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            Path::new(&format!("/proc/{zombie}")).exists(),
            "not reaped yet"
        );
        assert_eq!(pid_running(zombie), Some(false));
        child.wait().unwrap();
    }
}
