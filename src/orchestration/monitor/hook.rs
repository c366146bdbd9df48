//! The agent hooks (`orange hook agent EVENT`): what an agent says of its own turn, recorded
//! in its task's `agent.json` for the next pass to weigh ([`super::judge`]): the best signal
//! the monitor has.

use std::path::Path;

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::error::Result;
use crate::orchestration::agent::{self, State};
use crate::orchestration::prompt;
use crate::orchestration::task::model::{SendKind, Task};
use crate::orchestration::task::service::TaskService;

use super::now_s;

/// An agent hook (`orange hook agent EVENT`, Claude Code's settings hooks): route it by
/// `$ORANGE_TASK_ID` (else by the cwd's workspace), ignore sub-agents' events, record the
/// state; a UserPromptSubmit's `prompt` is the first prompt of a task waiting for one
/// ([`prompt::from_hook`]). `payload` is the hook's JSON from standard input (may be empty).
pub fn agent_hook(
    home: &Home,
    event: &str,
    payload: &str,
    cwd: &Path,
) -> Result<serde_json::Value> {
    // A reviewer's hooks (it works in its task's workspace, with its settings) are its own.
    if let Some(id) = std::env::var(crate::execution::launch::REVIEWER_ENV)
        .ok()
        .filter(|s| !s.is_empty())
    {
        return crate::orchestration::review::reviewer::hook(home, &id, event, payload);
    }
    let tasks = TaskService::new(home);
    let mut task = tasks.infer(cwd)?;
    let payload: serde_json::Value =
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null);
    let kind = crate::execution::harness::kind_of(&task.harness);
    // A conversation the agent announces (opencode's session.created) is the task's from
    // now on: recorded before the check below, which would take it for a nested one.
    if let Some(id) = kind.hook_conversation(event, &payload) {
        if task.agent_session_id.as_deref() != Some(id.as_str()) {
            // (Inside a sandbox task.json is not writable: this start's events still
            // count; a respawn starts a new conversation.)
            if let Err(e) = learn_session(&tasks.store, &task, &id, true, "plugin") {
                store::log(
                    home,
                    "warn",
                    "agent conversation not recorded",
                    json!({"task": task.id, "conversation": id, "error": e.to_string(), "code": e.code()}),
                );
            }
            task.agent_session_id = Some(id);
        }
    }
    let Some(mut says) = kind.hook_says(event, &payload) else {
        return Ok(
            json!({"task": task.id, "event": event, "ignored": "event says nothing about the agent's turn"}),
        );
    };
    says.state = crate::orchestration::limits::state_of(kind, says.state, says.detail.as_deref());
    // A program that chooses its own conversation id (codex) tells it at its start: the
    // task keeps it, and respawn and restore resume that very conversation by its id.
    // After `/clear` the agent in the pane goes on in a new conversation (codex and
    // claude: SessionStart, source "clear", a new id): the task follows it.
    let sid = payload
        .get("session_id")
        .and_then(|s| s.as_str())
        .filter(|s| !s.is_empty());
    let cleared = payload.get("source").and_then(|s| s.as_str()) == Some("clear");
    let learned = match sid {
        Some(sid)
            if event == "SessionStart"
                && (task.agent_session_id.is_none() || cleared)
                && task.agent_session_id.as_deref() != Some(sid)
                && !crate::execution::sandbox::inside() =>
        {
            learn_session(
                &tasks.store,
                &task,
                sid,
                cleared,
                if cleared { "hook (/clear)" } else { "hook" },
            )?
        }
        _ => None,
    };
    if let Some(l) = &learned {
        task.agent_session_id = Some(l.clone());
    }
    // A nested agent runs its hooks with its own session id: it must not flip its parent.
    if let (Some(mine), Some(theirs)) = (
        task.agent_session_id.as_deref(),
        payload.get("session_id").and_then(|s| s.as_str()),
    ) {
        if mine != theirs {
            return Ok(
                json!({"task": task.id, "event": event, "ignored": "a different (nested) agent session"}),
            );
        }
    }
    let dir = tasks.store.dir(&task.project, &task.id);
    // The first prompt typed into an agent started without one becomes the summary: before
    // the state is written (a summary change makes older observations stale).
    let mut first_prompt = serde_json::Value::Null;
    if task.awaiting_prompt {
        if let Some(typed) = kind.typed_prompt(event, &payload) {
            first_prompt = match prompt::from_hook(home, &task, &typed) {
                Ok(v) => v,
                Err(e) => {
                    store::log(
                        home,
                        "warn",
                        "first prompt not recorded",
                        json!({"task": task.id, "error": e.to_string(), "code": e.code()}),
                    );
                    json!({"error": e.to_string()})
                }
            };
        }
    }
    let _lock = agent::lock(&dir)?;
    let mut info = agent::load(&dir);
    // Claude's reminder a minute after a turn ended (`idle_prompt`) is no new idle period.
    if event == "Notification"
        && says.state == State::Waiting
        && info.hook_state == Some(State::Waiting)
    {
        return Ok(json!({"task": task.id, "event": event, "ignored": "already waiting"}));
    }
    // Started with its prompt, the agent announces its start (claude: SessionStart) just
    // before that prompt's turn begins: it waits for no one in between. Its first event
    // only: a later start-up (`/resume` typed in the pane) is an idle agent's.
    if says.state == State::Waiting
        && info.hook_event.is_none()
        && kind.announces_start(event, &payload)
        && carries_its_prompt(&task)
    {
        says.state = State::Working;
    }
    let at = now_s();
    info.hook_state = Some(says.state);
    info.hook_at = Some(at.clone());
    info.hook_event = Some(event.to_string());
    info.hook_blocker = says.blocker;
    info.hook_error = says.error;
    info.hook_detail = says.detail.clone();
    if says.progress {
        info.progress_at = Some(at);
        info.idle_nudges = 0;
    }
    agent::save(&dir, &info)?;
    // Its agent's record changed: the monitor reads it again (and only it).
    store::poke_task(home, &task.project, &task.id);
    Ok(
        json!({"task": task.id, "event": event, "state": says.state, "blocker": says.blocker, "error": says.error, "detail": says.detail, "first_prompt": first_prompt, "session_id": learned}),
    )
}

/// Whether the task's agent was started with its prompt: not one started without a prompt
/// (it waits for the person's first), nor one whose respawn prompt is held until it is
/// idle (a claude that may first ask how to resume).
fn carries_its_prompt(task: &Task) -> bool {
    !task.awaiting_prompt && !task.held.iter().any(|h| h.kind == SendKind::Resume)
}

/// Record `sid`, the conversation its agent named (a SessionStart hook, opencode's
/// session.created), as the task's, under the project's lock: while it knows none, or
/// always with `replace` (after `/clear`, a plugin's announcement). `Some(sid)` when
/// recorded; history `agent.session` says `via` what.
pub(super) fn learn_session(
    store: &crate::orchestration::task::TaskStore,
    task: &crate::orchestration::task::Task,
    sid: &str,
    replace: bool,
    via: &str,
) -> Result<Option<String>> {
    let _lock = store.lock(&task.project)?;
    let mut t = store.load(&task.project, &task.id)?;
    if t.agent_session_id.is_some() && !replace {
        return Ok(None);
    }
    t.agent_session_id = Some(sid.to_string());
    store.save(&t)?;
    store.append_history(&t, "agent.session", json!({"session_id": sid, "via": via}))?;
    Ok(Some(sid.to_string()))
}
