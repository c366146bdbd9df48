//! Gathering a sidebar's [`Model`]: the task's files (task.json, TASK.md, history, the
//! agent's state), its session from the observer's snapshot and its changes against the
//! default branch (`ui::changes`, the one change list every view shows).

use chrono::{DateTime, Utc};

use crate::adapters::store::Home;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::orchestration::agent::{AgentInfo, State};
use crate::orchestration::attention::next::NextStep;
use crate::orchestration::attention::session::SessionView;
use crate::orchestration::attention::summary::{item_of, Agents};
use crate::orchestration::task::{Status, Task, TaskStore};
pub use crate::ui::changes::{git_part, line_cache_path, GitPart};
use crate::ui::sidebar::model::{history_entry, pr_text, task_lines, Model};
use crate::{execution::pool, orchestration::project};

/// The model of `task` from its files (task.json as given, TASK.md, history), a session
/// state and a git part: no process is started here.
pub fn assemble(
    home: &Home,
    task: &Task,
    session: &SessionView,
    git: &GitPart,
    now: DateTime<Utc>,
) -> Model {
    let store = TaskStore::new(home);
    // One invalid byte must not drop the whole text: shown lossily.
    let md = crate::text::lossy(
        std::fs::read(store.task_md(&task.project, &task.id)).unwrap_or_default(),
    );
    let history = store.history(&task.project, &task.id);
    let mut m = Model::empty(&task.id, &task.project, &task.branch, now.timestamp());
    m.status = task.status.to_string();
    m.session = session.state.to_string();
    m.exit_status = session.exit_status;
    m.exit_signal = session.exit_signal;
    m.harness = task.harness.clone();
    // No PR known: "none" only when gh could have told; without gh it is unknown.
    m.pr = task.pr.as_ref().and_then(pr_text).or_else(|| {
        (!crate::adapters::shell::on_path("gh")).then(|| "unknown (gh not installed)".into())
    });
    m.history = history.iter().rev().map(history_entry).collect();
    m.task = task_lines(&md);
    if let Some(d) = &git.diff {
        m.commits = Some(d.commits);
        m.added = d.added;
        m.removed = d.removed;
        m.files = d.files.clone();
    }
    let agent = crate::orchestration::attention::agent_state(&store, task, session);
    m.agent = agent
        .state
        .map(|s| match (s, agent.error_kind, agent.blocker) {
            (State::Error, Some(k), _) => {
                format!("error: {}", k.as_str())
            }
            (State::Blocked, _, Some(b)) => {
                format!("blocked: {}", b.label())
            }
            (State::Dead, _, _) if agent.killed_at_limit.is_some() => {
                crate::orchestration::agent::killed_reason(
                    agent.killed_at_limit.unwrap_or_default(),
                )
            }
            (State::Limited, _, _) => format!(
                "⏸ {}",
                crate::orchestration::limits::label(
                    agent.limit.as_ref(),
                    crate::orchestration::limits::clock()
                )
            ),
            (s, _, _) => s.as_str().to_string(),
        });
    m.teammates = crate::orchestration::teammates::load(&store.dir(&task.project, &task.id))
        .iter()
        .map(crate::orchestration::teammates::line)
        .collect();
    m.reviewer = crate::orchestration::review::record::load(&store.dir(&task.project, &task.id))
        .as_ref()
        .map(crate::orchestration::review::record::line);
    m.group = group_lines(home, task);
    m.tokens =
        crate::orchestration::usage::tokens(&store.dir(&task.project, &task.id), &task.harness);
    m.usage = (session.state == crate::orchestration::attention::session::SessionState::Live)
        .then(|| crate::orchestration::footprint::load(&store.dir(&task.project, &task.id)))
        .flatten();
    m.port = port_of(home, task);
    m.notice = notice(task, &agent, git);
    // Queued behind a full cap on running agents: why it waits, not the pool.
    if task.status == Status::Pending {
        if let Some(full) = crate::orchestration::task::cap::now(home, &store)
            .and_then(|(caps, counts)| caps.full(&counts, &task.project))
        {
            m.notice = Some(format!(
                "Queued: {} running of {} (max_running); starts when one ends.",
                full.running, full.cap
            ));
        }
    }
    let now = crate::orchestration::limits::clock();
    if let (Status::Pending, Some(until)) = (
        task.status,
        crate::orchestration::limits::held(home, &task.harness, now),
    ) {
        m.notice = Some(format!(
            "Held: {} is at its usage limit until {}; the task starts after the reset.",
            task.harness,
            crate::execution::harness::limit::short(until, now)
        ));
    }
    // Judged as the widgets and the notifications judge it: the same step everywhere.
    m.next_step =
        item_of(&store, task, session, &Agents::new()).and_then(|i| NextStep::of_item(&i, None));
    m
}

/// The task's group (when it is a member of one): its base branch, then each member and
/// its state, this one marked.
fn group_lines(home: &Home, task: &Task) -> Vec<String> {
    use crate::orchestration::group::{members::members, GroupStore};
    let Some(g) = task
        .group
        .as_deref()
        .and_then(|id| GroupStore::new(home).load(&task.project, id).ok())
    else {
        return vec![];
    };
    let tasks = crate::orchestration::task::service::TaskService::new(home);
    let mut out = vec![g.base.clone()];
    for m in members(&tasks, &g) {
        let me = m.member.task.as_deref() == Some(task.id.as_str());
        out.push(format!(
            "/{} {}{}",
            m.member.label,
            m.state,
            if me { " ◂" } else { "" }
        ));
    }
    if g.judging().is_some() {
        let agent = g.judgement.as_ref().and_then(|j| j.agent.clone());
        out.push(format!(
            "judge {}: judging",
            agent.as_deref().unwrap_or("agent")
        ));
    }
    out
}

/// The line worth the user's attention: the task ended or waits for a workspace, the agent
/// needs the user (what happened and what to do), died, or git failed.
fn notice(task: &Task, agent: &AgentInfo, git: &GitPart) -> Option<String> {
    match task.status {
        Status::Done => Some("Task done: merged, workspace released.".into()),
        Status::Cancelled => Some("Task cancelled.".into()),
        // What to do is its next step's line.
        Status::Failed => Some(format!(
            "Failed to start: {}.",
            task.failure.as_deref().unwrap_or("unknown reason"),
        )),
        Status::Pending if task.workspace.is_none() => {
            Some("Pending: starts when a workspace is free.".into())
        }
        // Started without a prompt: what it waits for is not trouble.
        _ if task.awaiting_prompt
            && agent.escalated.is_none()
            && agent.state == Some(State::Waiting) =>
        {
            Some("No prompt yet: type the first one in the agent's pane.".into())
        }
        _ => match (&agent.escalated, &git.error) {
            // A dialog, an error, a death: its detail says what happened and what to do.
            (Some(e), _) => Some(match &agent.detail {
                // A blocker's reason (`label — advice`) and a death's detail (`how: advice`)
                // end alike: the advice once.
                Some(d)
                    if e.reason
                        .split_once(" — ")
                        .is_some_and(|(_, a)| d.ends_with(a)) =>
                {
                    let label = e.reason.split_once(" — ").map_or("", |(l, _)| l);
                    format!("Needs you: {label} — {d}")
                }
                Some(d)
                    if !matches!(agent.state, Some(State::Working) | None)
                        && !e.reason.contains(d.as_str()) =>
                {
                    format!("Needs you: {} ({d})", e.reason)
                }
                _ => format!("Needs you: {}", e.reason),
            }),
            (None, _) if agent.state == Some(State::Dead) && agent.detail.is_some() => {
                agent.detail.clone().map(|d| format!("Agent {d}"))
            }
            (None, Some(e)) => Some(format!("git: {e}")),
            (None, None) => None,
        },
    }
}

/// The task's `ORANGE_PORT`: the project's port base plus its workspace's slot number.
fn port_of(home: &Home, task: &Task) -> Option<u16> {
    let (_, index) = pool::parse_name(task.workspace.as_deref()?)?;
    project::port_for(&project::get(home, &task.project).ok()?, index)
}

/// A lane seen as a task, so the sidebar shows lanes like tasks: its worktree (by absolute
/// path) as the workspace, its state as the status (running → working, finished →
/// reviewing, error → stuck, closed → done), its task key as the summary.
pub fn lane_task(home: &Home, lane_id: &str) -> Result<Task> {
    Ok(crate::orchestration::lane::Lanes::new(home)
        .get(lane_id)?
        .as_task())
}

/// Gather the model of `task`: its files, its session (one tmux call) and its diff.
pub fn model_for_task(home: &Home, task: &Task, now: DateTime<Utc>) -> Result<Model> {
    let tmux = Tmux::from_env();
    // The snapshot (a tmux call when stale) and the git diff do not depend on each other:
    // run them side by side.
    let (panes, git) = std::thread::scope(|s| {
        let panes = s.spawn(|| {
            crate::orchestration::observe::snapshot::current(home, &tmux)
                .map(|snap| snap.panes)
                .unwrap_or_default()
        });
        let git = git_part(home, task);
        (panes.join().unwrap_or_default(), git)
    });
    let session = SessionView::of(task, &panes);
    Ok(assemble(home, task, &session, &git, now))
}
