//! Where a task's session stands, as tmux reports it ([`SessionView`]: live, dead or none),
//! and its agent's state corrected by it ([`agent_state`]): the pane is the ground truth
//! for life and death, whatever `agent.json` last recorded.

use std::cell::OnceCell;
use std::collections::HashMap;

use serde::Serialize;

use crate::adapters::tmux::{PaneExit, PaneInfo};
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::task::{Status, Task, TaskStore};

/// Whether a task's agent pane runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// Its agent runs.
    Live,
    /// Its agent exited; the pane is kept (its exit status or signal with it).
    Dead,
    /// No pane: the session is gone, or was never started.
    None,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Live => "live",
            SessionState::Dead => "dead",
            SessionState::None => "none",
        }
    }
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a task's session stands, as tmux reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionView {
    pub state: SessionState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
}

/// The panes of one look, indexed to find each task's agent pane without a scan of them
/// all ([`Panes::agent_pane`], the same answer as [`agent_pane`]).
pub struct Panes<'p> {
    panes: &'p [PaneInfo],
    by_id: HashMap<&'p str, &'p PaneInfo>,
    /// The first pane of each session by session id, and by name (made when first needed:
    /// tasks name their agent's pane).
    first_by_session: OnceCell<HashMap<&'p str, &'p PaneInfo>>,
    first_by_name: OnceCell<HashMap<&'p str, &'p PaneInfo>>,
}

impl<'p> Panes<'p> {
    pub fn new(panes: &'p [PaneInfo]) -> Panes<'p> {
        let mut by_id = HashMap::with_capacity(panes.len());
        for p in panes {
            by_id.entry(p.pane_id.as_str()).or_insert(p);
        }
        Panes {
            panes,
            by_id,
            first_by_session: OnceCell::new(),
            first_by_name: OnceCell::new(),
        }
    }

    /// Every pane, in tmux's order.
    pub fn all(&self) -> &'p [PaneInfo] {
        self.panes
    }

    /// [`agent_pane`], looked up.
    pub fn agent_pane(&self, task: &Task) -> Option<&'p PaneInfo> {
        let sid = task.tmux_session_id.as_deref();
        if let Some(pid) = task.tmux_pane_id.as_deref() {
            return self
                .by_id
                .get(pid)
                .copied()
                .filter(|p| sid.is_none_or(|s| s == p.session_id));
        }
        let first = |key: fn(&PaneInfo) -> &str| {
            let mut m = HashMap::new();
            for p in self.panes {
                m.entry(key(p)).or_insert(p);
            }
            m
        };
        match (sid, task.tmux_session.as_deref()) {
            (Some(s), _) => self
                .first_by_session
                .get_or_init(|| first(|p| &p.session_id))
                .get(s)
                .copied(),
            (None, Some(name)) => self
                .first_by_name
                .get_or_init(|| first(|p| &p.session_name))
                .get(name)
                .copied(),
            (None, None) => None,
        }
    }
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
        state: SessionState::None,
        exit_status: None,
        exit_signal: None,
    };

    pub fn of(task: &Task, panes: &[PaneInfo]) -> SessionView {
        Self::of_pane(agent_pane(task, panes))
    }

    /// The view of a task whose agent pane is `pane` (see [`agent_pane`]).
    pub fn of_pane(pane: Option<&PaneInfo>) -> SessionView {
        match pane {
            None => SessionView::NONE,
            Some(p) => match p.exit() {
                None => SessionView {
                    state: SessionState::Live,
                    exit_status: None,
                    exit_signal: None,
                },
                Some(PaneExit::Status(c)) => SessionView {
                    state: SessionState::Dead,
                    exit_status: Some(c),
                    exit_signal: None,
                },
                Some(PaneExit::Signal(s)) => SessionView {
                    state: SessionState::Dead,
                    exit_status: None,
                    exit_signal: Some(s),
                },
            },
        }
    }

    pub fn icon(&self) -> &'static str {
        match self.state {
            SessionState::Live => "●",
            SessionState::Dead => "✗",
            SessionState::None => "○",
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
    if session.state == SessionState::Dead
        || (session.state == SessionState::None && task.status.is_active())
    {
        agent.state = Some(agent::State::Dead);
        agent.exit_status = session.exit_status;
    } else if session.state == SessionState::None {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_states_keep_their_json_and_display_words() {
        for (state, word) in [
            (SessionState::Live, "live"),
            (SessionState::Dead, "dead"),
            (SessionState::None, "none"),
        ] {
            assert_eq!(serde_json::to_value(state).unwrap(), word);
            assert_eq!(state.to_string(), word);
        }
        let view = SessionView {
            state: SessionState::Dead,
            exit_status: Some(3),
            exit_signal: None,
        };
        assert_eq!(
            serde_json::to_value(view).unwrap(),
            serde_json::json!({"state": "dead", "exit_status": 3})
        );
    }

    /// The index finds the pane the scan finds, for every way a task names its pane.
    #[test]
    fn indexed_panes_agree_with_the_scan() {
        let pane = |sid: &str, name: &str, pid: &str| PaneInfo {
            session_id: sid.into(),
            session_name: name.into(),
            pane_id: pid.into(),
            ..PaneInfo::default()
        };
        let panes = vec![
            pane("$1", "p/a", "%1"),
            pane("$1", "p/a", "%2"),
            pane("$2", "p/b", "%3"),
            pane("$3", "p/c", "%4"),
        ];
        let index = Panes::new(&panes);
        let task = |sid: Option<&str>, name: Option<&str>, pid: Option<&str>| Task {
            tmux_session_id: sid.map(Into::into),
            tmux_session: name.map(Into::into),
            tmux_pane_id: pid.map(Into::into),
            ..Task::default()
        };
        let tasks = [
            task(Some("$1"), None, Some("%2")),
            task(Some("$2"), None, Some("%2")),
            task(None, None, Some("%4")),
            task(Some("$1"), Some("p/c"), None),
            task(None, Some("p/b"), None),
            task(None, Some("p/x"), None),
            task(Some("$9"), None, None),
            task(None, None, None),
            task(None, None, Some("%9")),
        ];
        for t in &tasks {
            assert_eq!(
                index.agent_pane(t).map(|p| &p.pane_id),
                agent_pane(t, &panes).map(|p| &p.pane_id),
                "{t:?}"
            );
        }
        assert_eq!(index.agent_pane(&tasks[0]).unwrap().pane_id, "%2");
        assert_eq!(index.agent_pane(&tasks[3]).unwrap().pane_id, "%1");
        assert!(
            index.agent_pane(&tasks[1]).is_none(),
            "its pane, in another session"
        );
    }
}
