//! A task's reviewer agent as orange keeps it: its record (`reviewer.json` in the task's
//! directory), what its hooks said (`reviewer/hook.json`, in its own directory: all it may
//! write in a sandbox), and its row under the task. Read by `task show`, the sidebar and
//! the monitor; what a reviewer does is `reviewer.rs`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::error::Result;
use crate::text;

/// Where a reviewer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Recorded, its window not made yet.
    Starting,
    Working,
    /// Its findings were read (a round when there were any).
    Done,
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Working => "working",
            State::Done => "done",
            State::Failed => "failed",
        }
    }

    pub fn running(self) -> bool {
        matches!(self, State::Starting | State::Working)
    }
}

/// How the worktree is kept from the reviewer's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// A bwrap sandbox with the workspace and the git directory read-only.
    Sandbox,
    /// No sandbox here: the worktree is compared before and after.
    Check,
}

/// What started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// `task review ID --agent H`.
    Command,
    /// `[review] on_complete`, when the task became ready for review.
    OnComplete,
}

/// A task's reviewer (`reviewer.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reviewer {
    pub harness: String,
    pub state: State,
    pub trigger: Trigger,
    /// Its round is sent to the task's agent as soon as it is made.
    pub send: bool,
    pub guard: Guard,
    pub started_at: String,
    /// The process that starts it (while `starting`: a dead one was interrupted).
    #[serde(default)]
    pub starter: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// `on_complete`: the readiness it runs for (the task's `updated_at` when it became
    /// ready for review): one reviewer per readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    pub findings_file: String,
    /// The round its findings became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    #[serde(default)]
    pub findings: usize,
    /// Files of the worktree that changed while it ran (no sandbox): reported, and its
    /// round is not sent by itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// Why it failed, or what else is worth knowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The worktree when it started (`Guard::Check`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    /// What it was asked to look at in particular.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// What its hooks said last (`reviewer/hook.json`, written by `orange hook agent` in its
/// environment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Heard {
    pub state: Option<crate::execution::harness::state::State>,
    pub event: String,
    pub at: String,
    /// A turn was seen (a hook said working): a later "waiting" ends it.
    #[serde(default)]
    pub worked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The answer that ended its turn, as its hook told it (claude's Stop:
    /// `last_assistant_message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

pub(super) fn record_path(task_dir: &Path) -> PathBuf {
    task_dir.join("reviewer.json")
}

/// The reviewer's own directory: all it may write in a sandbox.
pub fn own_dir(task_dir: &Path) -> PathBuf {
    task_dir.join("reviewer")
}

pub fn findings_path(task_dir: &Path) -> PathBuf {
    own_dir(task_dir).join("findings.txt")
}

pub(super) fn heard_path(task_dir: &Path) -> PathBuf {
    own_dir(task_dir).join("hook.json")
}

/// The task's reviewer, when it has one (a damaged record reads as none).
pub fn load(task_dir: &Path) -> Option<Reviewer> {
    let bytes = store::read_regular(&record_path(task_dir), 1 << 20).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn save(task_dir: &Path, r: &Reviewer) -> Result<()> {
    store::write_json_atomic(&record_path(task_dir), r)
}

pub(super) fn heard(task_dir: &Path) -> Heard {
    store::read_regular(&heard_path(task_dir), 1 << 16)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The reviewer's row under its task (sidebar, picker, `task show`): `reviewer claude:
/// working`, `reviewer claude: done · round 3, 4 findings`. Safe to show (no text of the
/// agent's but its harness's name, made safe).
pub fn line(r: &Reviewer) -> String {
    let mut s = format!(
        "reviewer {}: {}",
        text::safe_line(&r.harness),
        r.state.as_str()
    );
    match (r.state, r.round) {
        (State::Done, Some(n)) => s.push_str(&format!(
            " · round {n}, {} finding{}",
            r.findings,
            if r.findings == 1 { "" } else { "s" }
        )),
        (State::Done, None) => s.push_str(" · no finding"),
        _ => {}
    }
    if !r.changed.is_empty() {
        s.push_str(" · it changed the worktree!");
    }
    s
}
