//! The agent hooks (`orange hook agent EVENT`): what an agent says of its own turn, recorded
//! in its task's `agent.json` for the next pass to weigh ([`super::judge`]): the best signal
//! the monitor has.

use std::path::Path;

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::error::Result;
use crate::execution::harness;
use crate::orchestration::agent::{self, State};
use crate::orchestration::prompt;
use crate::orchestration::task::model::Task;
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
    let tasks = TaskService::new(home);
    let task = tasks.infer(cwd)?;
    let payload: serde_json::Value =
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null);
    let kind = harness::kind_of(&task.harness);
    // A conversation the agent announces (opencode's session.created) is the task's from
    // now on: recorded before the check below, which would take it for a nested one.
    let task = match kind.hook_conversation(event, &payload) {
        Some(id) if task.agent_session_id.as_deref() != Some(id.as_str()) => {
            match adopt_conversation(&tasks, &task, &id) {
                Ok(t) => t,
                // (Inside a sandbox task.json is not writable: this start's events still
                // count; a respawn starts a new conversation.)
                Err(e) => {
                    store::log(
                        home,
                        "warn",
                        "agent conversation not recorded",
                        json!({"task": task.id, "conversation": id, "error": e.to_string(), "code": e.code()}),
                    );
                    Task {
                        agent_session_id: Some(id),
                        ..task
                    }
                }
            }
        }
        _ => task,
    };
    let Some(says) = kind.hook_says(event, &payload) else {
        return Ok(
            json!({"task": task.id, "event": event, "ignored": "event says nothing about the agent's turn"}),
        );
    };
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
    if event == "UserPromptSubmit" && task.awaiting_prompt {
        if let Some(typed) = payload.get("prompt").and_then(|p| p.as_str()) {
            first_prompt = match prompt::from_hook(home, &task, typed) {
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
    Ok(
        json!({"task": task.id, "event": event, "state": says.state, "blocker": says.blocker, "error": says.error, "detail": says.detail, "first_prompt": first_prompt}),
    )
}

/// Record `id` as the conversation of `task` (under its project's lock, on the task as it
/// is on disk now): what a respawn and a restore continue.
fn adopt_conversation(tasks: &TaskService, task: &Task, id: &str) -> Result<Task> {
    let _lock = tasks.store.lock(&task.project)?;
    let mut now = tasks.store.load(&task.project, &task.id)?;
    now.agent_session_id = Some(id.to_string());
    tasks.store.save(&now)?;
    Ok(now)
}
