//! The verdict of a pass on one agent: what [`super::judge`] saw ([`Seen`]) written into
//! the agent's record (`agent.json`) before the policies act ([`super::act`]), and the
//! detail shown for it (its error, what blocks it, how it died).

use crate::adapters::tmux::PaneExit;
use crate::orchestration::agent::{self, AgentInfo, Signal, State};

use super::judge::Seen;

/// Write what was seen of one agent into its record (`info`, read at the pass's start):
/// its state and since when, its signal, the log's length, its exit, error, blocker,
/// question and last words, and the detail shown for it. `stamp`: when the pass looked.
/// The state recorded.
pub(super) fn record(info: &mut AgentInfo, seen: &Seen, stamp: &str, task: &str) -> State {
    let state = seen.state.unwrap_or(State::Unknown);
    let blocker = seen.blocker.as_ref().map(|(b, _)| *b);
    let log_grew = seen.log_grew(info);
    if info.state != Some(state) || (state == State::Blocked && info.blocker != blocker) {
        info.since = seen.since.clone().unwrap_or_else(|| stamp.to_string());
        // An escalation belongs to the state it was raised in (a dialog, an error, an
        // idle period): the agent moved on. A death's stays until a respawn.
        if state != State::Dead {
            info.escalated = None;
        }
    } else if state == State::Waiting {
        // Still waiting, but it did something in between that no pass saw (answered a
        // nudge, printed): a new idle period begins.
        let newer = |t: &str| agent::after(t, &info.since);
        let began = match seen.signal {
            Some(Signal::Hook) => info.hook_at.clone().filter(|t| newer(t)),
            Some(Signal::Screen | Signal::Osc) => seen.since.clone().filter(|t| newer(t)),
            _ if log_grew => Some(stamp.to_string()),
            _ => None,
        };
        if let Some(t) = began {
            info.since = t;
        }
    }
    if seen.progress {
        info.progress_at = Some(stamp.to_string());
        info.idle_nudges = 0;
    }
    info.state = Some(state);
    info.signal = seen.signal;
    info.report = seen.report.clone().filter(|_| state != State::Dead);
    info.at = stamp.to_string();
    info.log_len = seen.log_len;
    info.exit_status = match seen.exit {
        Some(PaneExit::Status(c)) => Some(c),
        _ => None,
    };
    info.error_kind = seen.error.as_ref().map(|(k, _)| *k);
    info.killed_at_limit = seen.oom.filter(|_| state == State::Dead);
    info.asked = seen.asked.clone().filter(|_| state == State::Waiting);
    if state != State::Dead {
        info.blocker = blocker;
        info.last_lines.clear();
    } else if seen.death.as_deref() != info.handled_death.as_deref()
        || (info.last_lines.is_empty() && !seen.last_lines.is_empty())
    {
        // A new death (or its words read late): its own last words and reason, kept
        // while it stays dead.
        info.blocker = blocker;
        info.last_lines = seen.last_lines.clone();
    }
    info.detail = detail(state, seen, info, task);
    info.channel_silent = seen
        .silent
        .clone()
        .filter(|_| seen.went_silent && state != State::Dead);
    state
}

/// The detail shown for an agent in `state`: its error, what blocks it and what to do,
/// its retry, its question, how it died.
fn detail(state: State, seen: &Seen, info: &AgentInfo, task: &str) -> Option<String> {
    match state {
        State::Error => seen.error.as_ref().map(|(_, m)| m.clone()),
        State::Limited => seen.limit.as_ref().map(|(m, _)| m.clone()),
        State::Blocked => seen.blocker.as_ref().map(|(b, line)| {
            let advice = b.advice(task);
            if line.is_empty() {
                advice
            } else {
                format!("{line} — {advice}")
            }
        }),
        State::Retrying => seen
            .retry
            .as_ref()
            .map(|r| format!("retrying an API error by itself ({r})")),
        State::Waiting => info
            .asked
            .as_ref()
            .map(|q| format!("asked: {q}"))
            .or_else(|| seen.silent.clone()),
        State::Working => seen.silent.clone(),
        State::Dead => Some(
            seen.never_started
                .clone()
                .unwrap_or_else(|| death_detail(seen.exit, info, task)),
        ),
        _ => None,
    }
}

/// A dead agent's detail: how it ended, and its last line (the reason is usually there).
fn death_detail(exit: Option<PaneExit>, info: &AgentInfo, task: &str) -> String {
    if let Some(limit) = info.killed_at_limit {
        return killed_detail(limit, task);
    }
    let how = match exit {
        Some(PaneExit::Signal(s)) => format!("killed by signal {s}"),
        Some(PaneExit::Status(c)) => format!("exited with status {c}"),
        None => "session gone".into(),
    };
    match (info.blocker, info.last_lines.last()) {
        // What was not found, in the program's words (a pane line: printers make it safe).
        (Some(b @ agent::Blocker::NotInSandbox), Some(line)) => {
            format!("{how} ({}): {}", line.trim(), b.advice(task))
        }
        (Some(b), _) => format!("{how}: {}", b.advice(task)),
        (None, Some(line)) => format!("{how}: {}", line.trim()),
        (None, None) => how,
    }
}

/// An agent the kernel killed at its memory limit: what happened, and what to do.
pub(super) fn killed_detail(limit: u64, task: &str) -> String {
    format!(
        "{}: the kernel killed its process tree at its memory limit (an OOM kill); \
         give it more with `orange task respawn {task} --memory SIZE` (or raise `memory` \
         in config.toml for its next tasks), or respawn it as it is",
        agent::killed_reason(limit)
    )
}
