//! A task: its record (`task.json`), its statuses and the map of what each may become,
//! its history events, its ids, the text of its TASK.md, what a branch name and a summary
//! may be, and the prompts its agent is given.

use serde::{Deserialize, Serialize};

use crate::adapters::git;
use crate::error::{OrangeError, Result};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    Pending,
    Planning,
    Clarification,
    Working,
    AgentReview,
    Reviewing,
    Stuck,
    /// It could not start (or restart): the reason is in `failure`; it holds no workspace
    /// and no session. `task respawn` retries, `task delete` removes it.
    Failed,
    Done,
    Cancelled,
}

pub const ALL_STATUSES: &[Status] = &[
    Status::Pending,
    Status::Planning,
    Status::Clarification,
    Status::Working,
    Status::AgentReview,
    Status::Reviewing,
    Status::Stuck,
    Status::Failed,
    Status::Done,
    Status::Cancelled,
];

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Planning => "planning",
            Status::Clarification => "clarification",
            Status::Working => "working",
            Status::AgentReview => "agent-review",
            Status::Reviewing => "reviewing",
            Status::Stuck => "stuck",
            Status::Failed => "failed",
            Status::Done => "done",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Result<Status> {
        ALL_STATUSES
            .iter()
            .copied()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                OrangeError::invalid(format!(
                    "unknown status {s:?}; one of: {}",
                    ALL_STATUSES
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// Done and cancelled tasks hold no workspace and no session.
    pub fn is_final(self) -> bool {
        matches!(self, Status::Done | Status::Cancelled)
    }

    /// Has an agent been spawned for it (a workspace and a session belong to it)?
    pub fn is_active(self) -> bool {
        !self.is_final() && !matches!(self, Status::Pending | Status::Failed)
    }

    /// Can its record be deleted (no session; `delete` also checks that it keeps no
    /// workspace with uncommitted work)?
    pub fn is_deletable(self) -> bool {
        self.is_final() || self == Status::Failed
    }

    /// The transition map (the original's, plus merge from working/stuck):
    /// anything not listed is `invalid_transition`.
    pub fn can_become(self, to: Status) -> bool {
        use Status::*;
        let allowed: &[Status] = match self {
            Pending => &[Planning, Working, Failed, Cancelled],
            Planning => &[Working, Clarification, Stuck, Cancelled],
            Clarification => &[Planning, Working, Cancelled],
            Working => &[
                AgentReview,
                Reviewing,
                Clarification,
                Stuck,
                Done,
                Cancelled,
            ],
            AgentReview => &[Reviewing, Working, Stuck, Cancelled],
            Reviewing => &[Working, Done, Cancelled],
            Stuck => &[Working, Reviewing, Done, Cancelled],
            // Given up; `task respawn` retries it from the start (not a transition).
            Failed => &[Cancelled],
            Done | Cancelled => &[],
        };
        allowed.contains(&to)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `task.json`: the seed field names, plus what orange needs to find things again. The
/// default is a pending task with nothing bound (what a new record starts from).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Task {
    pub id: String,
    pub project: String,
    pub branch: String,
    pub harness: String,
    pub status: Status,
    pub workspace: Option<String>,
    pub tmux_session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_session_id: Option<String>,
    /// The agent's own pane (`%7`): a sidebar split into its window is another pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane_id: Option<String>,
    pub summary: String,
    /// Created without a summary: its agent starts interactive, with no prompt, and waits
    /// for the first one typed in its pane. Until that prompt is known the summary is the
    /// branch, nothing is typed into the agent (no nudge, no resume prompt) and its
    /// waiting is not "needs you"; then the prompt's first line becomes the summary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_prompt: bool,
    /// Its agent runs headless, one-shot (`task create --headless`, or config.toml's
    /// `[harness.NAME] mode = "headless"` when it was created): its exit 0 at the end of
    /// its turn means it finished (the task goes to review), not that it crashed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headless: bool,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default)]
    pub crash_count: u32,
    /// Claude Code conversation id (`--session-id`), for the monitor and `restore`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The permission mode of the agent's first launch (claude: `bypassPermissions`,
    /// `acceptEdits`, …), kept by respawn and restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<serde_json::Value>,
    /// Cancel kept its workspace bound because it held uncommitted work (on purpose: the
    /// crash repair leaves such a workspace alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workspace_kept: bool,
    /// The tmux server instance its session was started on: a monitor acts only on the
    /// tasks of its own server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_server: Option<crate::adapters::tmux::ServerId>,
    /// Why a `failed` task could not start (cleared when it starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The sandbox its agent runs in, chosen at creation and kept by respawn and restore.
    #[serde(default)]
    pub sandbox: crate::execution::sandbox::Kind,
    /// The resource limits its agent runs under, chosen at creation and kept by respawn.
    #[serde(
        default,
        skip_serializing_if = "crate::execution::resources::Limits::is_empty"
    )]
    pub limits: crate::execution::resources::Limits,
    /// What `task send` holds for an agent that is working (oldest first): typed in, as
    /// one message, when its turn ends (by the monitor, which sees it waiting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<Held>,
    /// The group it is a member of (`task create --n N`, `orange group`): its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// A message held for a task's agent until its turn ends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Held {
    /// The text, as it will be typed (made safe for an agent: `text::for_agent`).
    pub text: String,
    /// When it was sent (RFC 3339).
    pub at: String,
    #[serde(default)]
    pub kind: SendKind,
    /// An answer from the phone: its ntfy message id (in its history events too, so it
    /// is never delivered twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

/// What is typed into an agent: a person's message, the nudge (`task nudge`), or a review
/// round (`task review`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendKind {
    #[default]
    Message,
    Nudge,
    /// A review round (`task review --send`): one message with every comment.
    Review,
    /// A respawn's prompt for a claude that may first ask how to resume its conversation
    /// (it asks only when started without one): typed once it is idle.
    Resume,
}

/// One line of `history.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub ts: String,
    pub event: String,
    #[serde(flatten)]
    pub data: serde_json::Map<String, serde_json::Value>,
}

/// A short id: `[0-9a-z]`, never starting with `-`, unique in the project.
pub fn new_id(mut existing: impl FnMut(&str) -> bool) -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    for attempt in 0u64.. {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(attempt);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u32(std::process::id());
        let mut n = h.finish();
        let mut id = String::new();
        for _ in 0..6 {
            id.push(ALPHABET[(n % 36) as usize] as char);
            n /= 36;
        }
        if !existing(&id) {
            return id;
        }
    }
    unreachable!()
}

/// Task ids are `[0-9a-z]+`: anything else cannot name a task (and never a path).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

/// The shortest id prefix that names a task.
pub const MIN_PREFIX: usize = 3;

pub fn parse_history(text: &str) -> Vec<Event> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The text of TASK.md for a new task.
pub fn task_md(summary: &str, context: Option<&str>) -> String {
    let mut s = String::new();
    let title = summary.lines().next().unwrap_or("").trim();
    s.push_str(&format!(
        "# {}\n\n",
        if title.is_empty() {
            "(no summary)"
        } else {
            title
        }
    ));
    if summary.lines().count() > 1 {
        s.push_str(summary.trim());
        s.push_str("\n\n");
    }
    if let Some(c) = context.filter(|c| !c.trim().is_empty()) {
        s.push_str("## Context\n\n");
        s.push_str(c.trim_end());
        s.push_str("\n\n");
    }
    s.push_str("## Notes\n\n");
    s
}

/// The body of TASK.md (everything after the title line), trimmed.
pub fn task_md_body(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.clone().next().unwrap_or("");
    if first.starts_with("# ") {
        lines.next();
    }
    lines.collect::<Vec<_>>().join("\n").trim().to_string()
}

/// A named `## Section` of TASK.md (its lines up to the next `## ` heading).
pub fn task_md_section(text: &str, name: &str) -> Option<String> {
    let mut out: Option<Vec<&str>> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            if out.is_some() {
                break;
            }
            if h.trim().eq_ignore_ascii_case(name) {
                out = Some(vec![]);
            }
            continue;
        }
        if let Some(v) = out.as_mut() {
            v.push(line);
        }
    }
    out.map(|v| v.join("\n").trim().to_string())
}

/// Which task a directory belongs to: the workspace that contains it, or `$ORANGE_TASK_ID`.
pub fn id_from_env() -> Option<String> {
    std::env::var("ORANGE_TASK_ID").ok().filter(|s| valid_id(s))
}

/// The longest branch name orange takes (bytes): it becomes a tmux session name and a
/// line of every listing.
pub const MAX_BRANCH: usize = 200;
/// The longest summary orange takes (characters); longer text belongs in TASK.md
/// (`--context -`).
pub const MAX_SUMMARY: usize = 2000;

/// A summary: no control characters but newlines and tabs, at most [`MAX_SUMMARY`].
pub fn validate_summary(s: &str) -> Result<()> {
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(OrangeError::invalid("summary contains control characters"));
    }
    let n = s.chars().count();
    if n > MAX_SUMMARY {
        return Err(OrangeError::invalid(format!(
            "summary is {n} characters long; at most {MAX_SUMMARY} (put the details in TASK.md with --context -)"
        )));
    }
    Ok(())
}

/// Branch names: what git accepts as a branch, and never a leading `-`.
pub fn validate_branch(b: &str) -> Result<()> {
    if b.len() > MAX_BRANCH {
        return Err(OrangeError::invalid(format!(
            "branch name is {} bytes long; at most {MAX_BRANCH}",
            b.len()
        )));
    }
    if !git::valid_branch_name(b) {
        return Err(OrangeError::invalid(format!(
            "invalid branch name {b:?}: git refuses it (no spaces, '..', ':', '~', '^', '?', '*', '[', '\\', leading '-' or '.', trailing '/' or '.lock')"
        )));
    }
    Ok(())
}

/// The first prompt: the summary verbatim, then how to report back.
pub fn first_prompt(task: &Task) -> Option<String> {
    if task.awaiting_prompt || task.summary.trim().is_empty() {
        return None;
    }
    Some(format!(
        "{}\n\n(orange task {}, project {}, branch {}. The full task is in TASK.md. Commit your work on this branch and do not push. When you are done run `orange task complete`; if you cannot go on, run `orange task stuck`.)",
        task.summary, task.id, task.project, task.branch
    ))
}

pub fn respawn_prompt(task: &Task) -> String {
    format!(
        "Resuming: {}\n\n(orange task {}, project {}, branch {}, status {}. Your previous session ended. Read TASK.md and `git log` of this branch for the progress so far, then continue. When you are done run `orange task complete`; if you cannot go on, run `orange task stuck`.)",
        task.summary, task.id, task.project, task.branch, task.status
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_map_rejects_what_is_not_listed() {
        use Status::*;
        assert!(Pending.can_become(Working));
        assert!(Working.can_become(Reviewing));
        assert!(Reviewing.can_become(Done));
        assert!(!Pending.can_become(Done));
        assert!(!Done.can_become(Working));
        assert!(!Cancelled.can_become(Pending));
        for s in ALL_STATUSES {
            assert!(!s.can_become(Pending), "nothing goes back to pending");
            assert_eq!(Status::parse(s.as_str()).unwrap(), *s);
        }
        assert!(Status::parse("finished").is_err());
        assert!(Pending.can_become(Failed) && Failed.can_become(Cancelled));
        assert!(!Failed.can_become(Working) && !Failed.is_active() && Failed.is_deletable());
    }

    #[test]
    fn ids_are_short_lowercase_alphanumerics() {
        for _ in 0..200 {
            let id = new_id(|_| false);
            assert_eq!(id.len(), 6);
            assert!(valid_id(&id), "{id}");
        }
        let mut n = 0;
        let id = new_id(|_| {
            n += 1;
            n < 3
        });
        assert!(valid_id(&id));
        for bad in ["", "-x", "A1", "a/b", "..", "a b"] {
            assert!(!valid_id(bad));
        }
    }

    #[test]
    fn task_md_round_trips_summary_context_and_sections() {
        let md = task_md(
            "Fix \"login\" $(rm -rf /) `x`;\nsecond line",
            Some("line1\nline2\n"),
        );
        assert!(md.starts_with("# Fix \"login\" $(rm -rf /) `x`;\n"));
        assert_eq!(task_md_section(&md, "context").unwrap(), "line1\nline2");
        assert!(task_md_body(&md).contains("second line"));
        assert_eq!(task_md_section(&md, "missing"), None);
        assert_eq!(task_md_body(""), "");
    }

    #[test]
    fn history_skips_half_written_lines() {
        let text = "{\"ts\":\"t\",\"event\":\"task.created\"}\n\n{\"ts\":\"t\",\"event\":\"agent.spawned\",\"workspace\":\"a--1\"}\n{\"ts\":";
        let h = parse_history(text);
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].data["workspace"], "a--1");
    }

    #[test]
    fn a_task_waiting_for_its_first_prompt_has_none() {
        let task = Task {
            summary: "feat/x".into(),
            awaiting_prompt: true,
            ..Task::default()
        };
        assert_eq!(first_prompt(&task), None, "the branch is no prompt");
    }

    #[test]
    fn hostile_branch_names_are_refused() {
        for bad in [
            "a b", "a..b", "a:b", "-x", "--force", "a~1", "x^", "a?b", "a*", "a[b", "a\\b",
            ".hidden", "a/", "x.lock", "",
        ] {
            assert!(validate_branch(bad).is_err(), "{bad:?}");
        }
        for good in ["feature/x", "fix-1", "orange-tasks/abc123", "v1.2"] {
            assert!(validate_branch(good).is_ok(), "{good:?}");
        }
    }
}
