//! Everything orange knows of pi (`pi`, the pi coding agent): its command line (a prompt
//! with `-p`, `--continue` on respawn, no `--`), where it keeps its state, and the first
//! prompt in its own session file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::execution::harness::files::{content_text, home, json_lines, same_dir, written_since};
use crate::execution::harness::kind::{AgentKind, Options, PromptAfter, Start};

pub struct Pi;

impl AgentKind for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn package(&self) -> &'static str {
        "@mariozechner/pi-coding-agent"
    }

    fn options(&self, o: &Options) -> Vec<String> {
        let mut v = vec![];
        if o.prompt {
            v.push("-p".into());
        }
        if o.start == Start::Respawn {
            v.push("--continue".into());
        }
        v
    }

    /// pi has no `--`.
    fn prompt_after(&self) -> PromptAfter {
        PromptAfter::Bare
    }

    /// The first user message of a session of the workspace written since the task was
    /// created (pi writes its session when the first answer comes).
    fn first_prompt(
        &self,
        _conversation: Option<&str>,
        workspace: &Path,
        since: Option<SystemTime>,
    ) -> Option<String> {
        first_prompt(&session_dirs(workspace), workspace, since?)
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (vec![home.join(".pi")], vec![])
    }
}

/// Where pi keeps the sessions of `workspace`: `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`)
/// `/sessions/--<path, / as ->--`, and `$PI_CODING_AGENT_SESSION_DIR` when set.
pub fn session_dirs(workspace: &Path) -> Vec<PathBuf> {
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
pub fn first_prompt(dirs: &[PathBuf], workspace: &Path, since: SystemTime) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::files::tests::write;
    use serde_json::json;

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
        assert_eq!(first_prompt(std::slice::from_ref(&dir), &ws, before), None);
        write(
            &dir.join("2026-01-01T00-00-01-000Z_b.jsonl"),
            &session(&ws, "Fix the login form"),
        );
        assert_eq!(
            first_prompt(std::slice::from_ref(&dir), &ws, before).as_deref(),
            Some("Fix the login form")
        );
        // Written before the task: another task's, in the same workspace.
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(first_prompt(&[dir], &ws, later), None);
        // The directory pi 0.73 makes for a workspace.
        let dirs = session_dirs(Path::new("/tmp/o-x/home/workspaces/app--1"));
        assert!(
            dirs[0].ends_with("sessions/--tmp-o-x-home-workspaces-app--1--"),
            "{dirs:?}"
        );
    }
}
