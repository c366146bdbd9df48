//! The first prompt of a task created without a summary (`awaiting_prompt`): its agent
//! started interactive, with no prompt, and its person types the first one in its pane.
//! Whoever hears that prompt hands it to [`adopt`]: the agent's UserPromptSubmit hook
//! ([`from_hook`]; inside a sandbox, where orange's state is read-only, a `prompt` request
//! the monitor carries out), or the monitor, from what the agent wrote itself
//! ([`in_transcript`]: claude's transcript, pi's session file, codex's rollout; opencode
//! keeps its sessions in a database orange does not read). Its first line with text, cleaned
//! ([`summary_of`]), becomes the summary, recorded in the history (`summary.changed`, with
//! the text and what told it), and TASK.md's title while that is still the placeholder.
//! Once only: a task that does not wait for its first prompt (any more) is left alone.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::error::Result;
use crate::execution::sandbox;
use crate::orchestration::agent;
use crate::orchestration::lifecycle::{validate_summary, MAX_SUMMARY};
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
/// when the first answer comes).
pub fn in_transcript(task: &Task, workspace: &Path) -> Option<String> {
    let since = || {
        chrono::DateTime::parse_from_rfc3339(&task.created_at)
            .ok()
            .map(SystemTime::from)
    };
    match (task.harness.as_str(), &task.agent_session_id) {
        ("claude", Some(conv)) => {
            agent::first_prompt_in_log(&agent::claude_log_path(workspace, conv))
        }
        ("pi", _) => pi_first_prompt(&pi_session_dirs(workspace), workspace, since()?),
        ("codex", _) => codex_first_prompt(&codex_home()?, workspace, since()?),
        _ => None,
    }
}

/// The most of a session file read for its first prompt.
const SESSION_READ: u64 = 1 << 20;

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The same directory, however written (pi and codex record the path they were started in).
fn same_dir(recorded: &str, workspace: &Path) -> bool {
    let canonical = workspace.canonicalize().ok();
    Path::new(recorded) == workspace || canonical.as_deref() == Some(Path::new(recorded))
}

/// The `*.jsonl` files of `dir` written at or after `since`, oldest name first (pi and
/// codex put the time in the name).
fn written_since(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| m.is_file() && m.modified().is_ok_and(|t| t >= since))
        })
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The JSON lines of a session file (its first MiB), unparsable ones skipped.
fn json_lines(path: &Path) -> impl Iterator<Item = serde_json::Value> {
    store::open_regular(path)
        .ok()
        .into_iter()
        .flat_map(|f| std::io::BufReader::new(f.take(SESSION_READ)).lines())
        .map_while(|l| l.ok())
        .filter_map(|l| serde_json::from_str(&l).ok())
}

/// The text of a message's `content`: a string, or its text blocks (`kinds`) joined.
fn content_text(content: &serde_json::Value, kinds: &[&str]) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                b.get("type")
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| kinds.contains(&t))
            })
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Where pi keeps the sessions of `workspace`: `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`)
/// `/sessions/--<path, / as ->--`, and `$PI_CODING_AGENT_SESSION_DIR` when set.
fn pi_session_dirs(workspace: &Path) -> Vec<PathBuf> {
    let expand = |v: std::ffi::OsString| {
        let s = v.to_string_lossy().into_owned();
        match s.strip_prefix("~/") {
            Some(rest) => home().map(|h| h.join(rest)),
            None => Some(PathBuf::from(s)),
        }
    };
    let agent_dir = std::env::var_os("PI_CODING_AGENT_DIR")
        .and_then(expand)
        .or_else(|| home().map(|h| h.join(".pi/agent")));
    let cwd = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let cwd = cwd.to_string_lossy();
    let safe = format!(
        "--{}--",
        cwd.strip_prefix('/')
            .unwrap_or(&cwd)
            .replace(['/', '\\', ':'], "-")
    );
    let mut dirs: Vec<PathBuf> = agent_dir
        .map(|d| d.join("sessions").join(safe))
        .into_iter()
        .collect();
    dirs.extend(std::env::var_os("PI_CODING_AGENT_SESSION_DIR").and_then(expand));
    dirs
}

/// The first user message of a pi session of `workspace` written since `since`: its header
/// line (`"type":"session"`) names the directory, its `message` lines hold the turns.
pub fn pi_first_prompt(dirs: &[PathBuf], workspace: &Path, since: SystemTime) -> Option<String> {
    dirs.iter()
        .flat_map(|d| written_since(d, since))
        .find_map(|file| {
            let mut lines = json_lines(&file);
            let header = lines.next()?;
            if header.get("type").and_then(|t| t.as_str()) != Some("session")
                || !header
                    .get("cwd")
                    .and_then(|c| c.as_str())
                    .is_some_and(|c| same_dir(c, workspace))
            {
                return None;
            }
            lines.find_map(|v| {
                let m = v.get("message")?;
                if v.get("type").and_then(|t| t.as_str()) != Some("message")
                    || m.get("role").and_then(|r| r.as_str()) != Some("user")
                {
                    return None;
                }
                let text = content_text(m.get("content")?, &["text"]);
                (!text.trim().is_empty()).then_some(text)
            })
        })
}

/// Codex's own directory: `$CODEX_HOME`, else `~/.codex`.
fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home().map(|h| h.join(".codex")))
}

/// The first user message of a codex rollout of `workspace` written since `since`
/// (`<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl`, the days from the day before
/// `since` to the day after now: its days are local time): its `session_meta` names the
/// directory; the context codex itself sends as user messages (`<environment_context>…`)
/// is no prompt.
pub fn codex_first_prompt(
    codex_home: &Path,
    workspace: &Path,
    since: SystemTime,
) -> Option<String> {
    let from = chrono::DateTime::<chrono::Utc>::from(since).date_naive() - chrono::Days::new(1);
    let to = chrono::Utc::now().date_naive() + chrono::Days::new(1);
    let sessions = codex_home.join("sessions");
    from.iter_days()
        .take_while(|d| *d <= to)
        .flat_map(|d| written_since(&sessions.join(d.format("%Y/%m/%d").to_string()), since))
        .find_map(|file| {
            let mut lines = json_lines(&file);
            let meta = lines.next()?;
            if meta.get("type").and_then(|t| t.as_str()) != Some("session_meta")
                || !meta
                    .pointer("/payload/cwd")
                    .and_then(|c| c.as_str())
                    .is_some_and(|c| same_dir(c, workspace))
            {
                return None;
            }
            lines.find_map(|v| {
                let p = v.get("payload")?;
                let text = match (
                    v.get("type").and_then(|t| t.as_str()),
                    p.get("type").and_then(|t| t.as_str()),
                ) {
                    (Some("response_item"), Some("message"))
                        if p.get("role").and_then(|r| r.as_str()) == Some("user") =>
                    {
                        content_text(p.get("content")?, &["input_text", "text"])
                    }
                    (Some("event_msg"), Some("user_message")) => {
                        p.get("message")?.as_str()?.to_string()
                    }
                    _ => return None,
                };
                let t = text.trim();
                let context = t.starts_with('<') && t.ends_with('>');
                (!t.is_empty() && !context).then_some(text)
            })
        })
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

    fn write(path: &Path, lines: &[serde_json::Value]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    /// What pi 0.73 writes once the first answer (here an error) came.
    #[test]
    fn pi_s_first_prompt_is_the_first_user_message_of_a_session_of_this_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let before = SystemTime::now() - std::time::Duration::from_secs(60);
        let dir = d.path().join("sessions");
        let session = |cwd: &Path, text: &str| {
            vec![
                json!({"type":"session","version":3,"id":"s","cwd":cwd}),
                json!({"type":"model_change","id":"a","parentId":null}),
                json!({"type":"message","id":"b","message":{"role":"user","content":[{"type":"text","text":text}]}}),
                json!({"type":"message","id":"c","message":{"role":"assistant","content":[],"stopReason":"error"}}),
                json!({"type":"message","id":"d","message":{"role":"user","content":"later"}}),
            ]
        };
        write(
            &dir.join("2026-01-01T00-00-00-000Z_a.jsonl"),
            &session(&d.path().join("other"), "not this"),
        );
        assert_eq!(
            pi_first_prompt(std::slice::from_ref(&dir), &ws, before),
            None
        );
        write(
            &dir.join("2026-01-01T00-00-01-000Z_b.jsonl"),
            &session(&ws, "Fix the login form"),
        );
        assert_eq!(
            pi_first_prompt(std::slice::from_ref(&dir), &ws, before).as_deref(),
            Some("Fix the login form")
        );
        // Written before the task: another task's, in the same workspace.
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(pi_first_prompt(&[dir], &ws, later), None);
        // The directory pi 0.73 makes for a workspace.
        let dirs = pi_session_dirs(Path::new("/tmp/o-x/home/workspaces/app--1"));
        assert!(
            dirs[0].ends_with("sessions/--tmp-o-x-home-workspaces-app--1--"),
            "{dirs:?}"
        );
    }

    /// What codex 0.169 writes as the first prompt is submitted.
    #[test]
    fn codex_s_first_prompt_is_the_first_user_message_that_is_not_its_own_context() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(60);
        let day = chrono::Utc::now()
            .date_naive()
            .format("%Y/%m/%d")
            .to_string();
        let rollout = d.path().join("sessions").join(day).join("rollout-x.jsonl");
        let user = |text: &str| json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":text}]}});
        write(
            &rollout,
            &[
                json!({"type":"session_meta","payload":{"id":"s","cwd":ws}}),
                json!({"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}),
                user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
                user("Fix the login form"),
                user("later"),
            ],
        );
        assert_eq!(
            codex_first_prompt(d.path(), &ws, since).as_deref(),
            Some("Fix the login form")
        );
        assert_eq!(
            codex_first_prompt(d.path(), &d.path().join("other"), since),
            None
        );
        // An older codex: the `user_message` event.
        write(
            &rollout,
            &[
                json!({"type":"session_meta","payload":{"id":"s","cwd":ws}}),
                json!({"type":"event_msg","payload":{"type":"user_message","message":"Old style"}}),
            ],
        );
        assert_eq!(
            codex_first_prompt(d.path(), &ws, since).as_deref(),
            Some("Old style")
        );
    }
}
