//! The first prompt of a task created without a summary (`awaiting_prompt`): its agent
//! started interactive, with no prompt, and its person types the first one in its pane.
//! Whoever hears that prompt hands it to [`adopt`]: the agent's own event (claude's and
//! codex's UserPromptSubmit hook, opencode's plugin `chat.message`: `typed_prompt` of its
//! kind; [`from_hook`]; inside a sandbox, where orange's state is read-only, a `prompt`
//! request the monitor carries out), or the monitor, from what the agent wrote itself
//! ([`in_transcript`]: claude's transcript, pi's session file, codex's rollout; opencode
//! keeps its sessions in a database orange does not read). Its first line with text, cleaned
//! ([`summary_of`]), becomes the summary, recorded in the history (`summary.changed`, with
//! the text and what told it), and TASK.md's title while that is still the placeholder.
//! Once only: a task that does not wait for its first prompt (any more) is left alone.

use std::path::Path;
use std::time::SystemTime;

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::error::Result;
use crate::execution::harness;
use crate::execution::sandbox;
use crate::orchestration::task::model::{validate_summary, MAX_SUMMARY};
use crate::orchestration::task::{Task, TaskStore};

/// The summary a prompt typed by a person gives: its first line with text, trimmed, tabs
/// made spaces and every other control character (escape sequences' ESC included) dropped,
/// at most [`MAX_SUMMARY`] characters. `None` when nothing is left.
pub fn summary_of(prompt: &str) -> Option<String> {
    let line = prompt
        .lines()
        .map(|l| {
            l.chars()
                .filter_map(|c| match c {
                    '\t' => Some(' '),
                    c if c.is_control() => None,
                    c => Some(c),
                })
                .collect::<String>()
        })
        .find(|l| !l.trim().is_empty())?;
    let s: String = line.trim().chars().take(MAX_SUMMARY).collect();
    let s = s.trim_end().to_string();
    validate_summary(&s).ok()?;
    Some(s)
}

/// Record `prompt` as the first prompt of `task` (`via`: what told it, `hook` or
/// `transcript`), under the project's lock. The task as saved, or `None` when it does not
/// wait for its first prompt or the prompt has no text.
pub fn adopt(store: &TaskStore, task: &Task, prompt: &str, via: &str) -> Result<Option<Task>> {
    let Some(summary) = summary_of(prompt) else {
        return Ok(None);
    };
    let _lock = store.lock(&task.project)?;
    let mut task = store.load(&task.project, &task.id)?;
    if !task.awaiting_prompt {
        return Ok(None);
    }
    task.summary = summary;
    task.awaiting_prompt = false;
    task.updated_at = store::now_rfc3339();
    store.save(&task)?;
    // TASK.md's title follows while it is still the placeholder (the agent may have
    // written its own by now: that one is kept). Replaced, never written through.
    let md = store.task_md(&task.project, &task.id);
    if let Ok(text) = std::fs::read_to_string(&md) {
        if let Some(rest) = text.strip_prefix("# (no summary)\n") {
            let _ =
                store::write_bytes_atomic(&md, format!("# {}\n{rest}", task.summary).as_bytes());
        }
    }
    store.append_history(
        &task,
        "summary.changed",
        json!({"summary": task.summary, "via": via}),
    )?;
    Ok(Some(task))
}

/// An agent's hook heard the first prompt of `task`, which waits for one: recorded here, or
/// inside a sandbox (orange's state is read-only there) asked of the monitor. What was
/// done: the new summary, `"requested"`, or `null`.
pub fn from_hook(home: &Home, task: &Task, prompt: &str) -> Result<serde_json::Value> {
    if sandbox::inside() {
        let req = sandbox::Request {
            op: "prompt".into(),
            status: None,
            summary: Some(prompt.to_string()),
            at: store::now_rfc3339(),
        };
        sandbox::request(
            home,
            &TaskStore::new(home).dir(&task.project, &task.id),
            &req,
        )?;
        return Ok(json!("requested"));
    }
    let adopted = adopt(&TaskStore::new(home), task, prompt, "hook")?;
    Ok(adopted.map(|t| json!(t.summary)).unwrap_or_default())
}

/// The first prompt the agent of `task` (working in `workspace`) wrote down itself: the
/// first typed user line of claude's transcript (its conversation is known), of pi's
/// session file or of codex's rollout (a session of this workspace written since the task
/// was created: a workspace serves many tasks in turn). `None` for the other harnesses
/// (they tell it through the hook) and before the prompt is written (pi writes its session
/// when the first answer comes). Each harness's own reader: `execution::harness`.
pub fn in_transcript(task: &Task, workspace: &Path) -> Option<String> {
    let since = chrono::DateTime::parse_from_rfc3339(&task.created_at)
        .ok()
        .map(SystemTime::from);
    harness::kind_of(&task.harness).first_prompt(task.agent_session_id.as_deref(), workspace, since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_prompt_gives_its_first_line_cleaned_as_the_summary() {
        assert_eq!(
            summary_of("  Fix the login  \nand more").as_deref(),
            Some("Fix the login")
        );
        assert_eq!(
            summary_of("\n \t\n\u{1b}[2J\x07go\tnow\r\n").as_deref(),
            Some("[2Jgo now")
        );
        assert_eq!(summary_of(" \n\u{1b}\u{9b}\n"), None);
        assert_eq!(summary_of(""), None);
        let long = summary_of(&"é".repeat(MAX_SUMMARY + 5)).unwrap();
        assert_eq!(long.chars().count(), MAX_SUMMARY);
    }
}
