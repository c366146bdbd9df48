//! Everything orange knows of codex (`codex`): its command line (`exec` with a prompt,
//! `resume --last` on respawn, never its own sandbox or approvals), where it keeps its
//! state (`$CODEX_HOME`), and the first prompt in its own rollout file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::execution::harness::files::{content_text, home, json_lines, same_dir, written_since};
use crate::execution::harness::kind::{AgentKind, Options, Start};

pub struct Codex;

impl AgentKind for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn package(&self) -> &'static str {
        "@openai/codex"
    }

    /// codex 0.169 has no `--full-auto`: it runs without approvals and without its own
    /// sandbox (orange's is the sandbox).
    fn options(&self, o: &Options) -> Vec<String> {
        let mut v: Vec<String> = vec![];
        match (o.start == Start::Respawn, o.prompt) {
            (false, true) => v.push("exec".into()),
            (true, true) => v.extend(["exec".into(), "resume".into(), "--last".into()]),
            (false, false) => {}
            (true, false) => v.extend(["resume".into(), "--last".into()]),
        }
        v.push("--dangerously-bypass-approvals-and-sandbox".into());
        v
    }

    /// The first user message of a rollout of the workspace written since the task was
    /// created.
    fn first_prompt(
        &self,
        _conversation: Option<&str>,
        workspace: &Path,
        since: Option<SystemTime>,
    ) -> Option<String> {
        first_prompt(&codex_home_in(home().as_deref())?, workspace, since?)
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (codex_home_in(Some(home)).into_iter().collect(), vec![])
    }
}

/// Codex's own directory: `$CODEX_HOME` (absolute only), else `<home>/.codex`.
pub fn codex_home_in(home: Option<&Path>) -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".codex")))
}

/// The first user message of a codex rollout of `workspace` written since `since`
/// (`<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl`, the days from the day before
/// `since` to the day after now: its days are local time): its `session_meta` names the
/// directory; the context codex itself sends as user messages (`<environment_context>…`)
/// is no prompt.
pub fn first_prompt(codex_home: &Path, workspace: &Path, since: SystemTime) -> Option<String> {
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
    use crate::execution::harness::files::tests::write;
    use serde_json::json;

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
            first_prompt(d.path(), &ws, since).as_deref(),
            Some("Fix the login form")
        );
        assert_eq!(first_prompt(d.path(), &d.path().join("other"), since), None);
        // An older codex: the `user_message` event.
        write(
            &rollout,
            &[
                json!({"type":"session_meta","payload":{"id":"s","cwd":ws}}),
                json!({"type":"event_msg","payload":{"type":"user_message","message":"Old style"}}),
            ],
        );
        assert_eq!(
            first_prompt(d.path(), &ws, since).as_deref(),
            Some("Old style")
        );
    }
}
