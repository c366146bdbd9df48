//! Tasks: the model, the status map, and the store under `tasks/<project>/<id>/`
//! (`task.json` system-owned, `TASK.md` agent-editable, `history.jsonl` append-only).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{IoContext, OrangeError, Result};
use crate::execution::pool::TaskLookup;

/// The tmux session option that marks a task's session (its value: the task id).

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

/// A random (version 4) UUID for Claude's `--session-id`.
pub fn new_uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
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

pub struct TaskStore {
    root: PathBuf,
    home: Home,
}

impl TaskStore {
    pub fn new(home: &Home) -> TaskStore {
        TaskStore {
            root: home.tasks_dir(),
            home: home.clone(),
        }
    }

    pub fn project_dir(&self, project: &str) -> PathBuf {
        self.root.join(project)
    }

    pub fn dir(&self, project: &str, id: &str) -> PathBuf {
        self.root.join(project).join(id)
    }

    pub fn task_md(&self, project: &str, id: &str) -> PathBuf {
        self.dir(project, id).join("TASK.md")
    }

    fn json_path(&self, project: &str, id: &str) -> PathBuf {
        self.dir(project, id).join("task.json")
    }

    /// The lock serializing changes to one project's tasks.
    pub fn lock(&self, project: &str) -> Result<LockGuard> {
        LockGuard::acquire(&self.project_dir(project).join(".lock"))
    }

    /// The project's lock if it is free now; `None` while a command holds it.
    pub fn try_lock(&self, project: &str) -> Result<Option<LockGuard>> {
        match LockGuard::acquire_within(
            &self.project_dir(project).join(".lock"),
            std::time::Duration::ZERO,
        ) {
            Ok(g) => Ok(Some(g)),
            Err(OrangeError::LockTimeout { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn load(&self, project: &str, id: &str) -> Result<Task> {
        if !valid_id(id) {
            return Err(OrangeError::TaskNotFound(id.to_string()));
        }
        let path = self.json_path(project, id);
        if !path.exists() {
            return Err(OrangeError::TaskNotFound(format!(
                "{id} (in project {project})"
            )));
        }
        let mut text = Vec::with_capacity(2048);
        store::read_small(&path, &mut text).ctx(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&text).map_err(|e| OrangeError::StateCorrupt {
            path,
            detail: e.to_string(),
        })
    }

    /// Find a task by id in any project (ids are unique enough to be typed alone).
    ///
    /// What a person types is accepted too, when the id itself is not found: a unique
    /// prefix of an id (`k3v` for `k3v9qz`), or a task's branch (`fix-login`). Several
    /// matches are an error naming them.
    pub fn find(&self, id: &str, project: Option<&str>) -> Result<Task> {
        match self.find_exact(id, project) {
            Err(OrangeError::TaskNotFound(missing)) => self
                .find_typed(id, project)
                .unwrap_or(Err(OrangeError::TaskNotFound(missing))),
            other => other,
        }
    }

    /// A task named by a unique id prefix (at least [`MIN_PREFIX`] characters) or by its
    /// branch; `None` when nothing matches.
    fn find_typed(&self, typed: &str, project: Option<&str>) -> Option<Result<Task>> {
        if typed.is_empty() {
            return None;
        }
        let all = match self.list_lenient(project) {
            Ok(all) => all,
            Err(e) => return Some(Err(e)),
        };
        let by_branch: Vec<&Task> = all.iter().filter(|t| t.branch == typed).collect();
        // A prefix names a task from 3 characters on: one or two typed by mistake must not
        // pick a task for a command that acts at once (merge, respawn, delete --yes).
        let by_prefix: Vec<&Task> = if typed.len() >= MIN_PREFIX {
            all.iter().filter(|t| t.id.starts_with(typed)).collect()
        } else {
            vec![]
        };
        // A branch names its task exactly; an open task wins over finished ones of the same
        // branch (a branch is reused once its task is done or cancelled).
        let open: Vec<&&Task> = by_branch.iter().filter(|t| !t.status.is_final()).collect();
        let pick: Vec<&Task> = match (by_branch.len(), open.len(), by_prefix.len()) {
            (1, _, _) => by_branch,
            (n, 1, _) if n > 1 => vec![*open[0]],
            (0, _, _) => by_prefix,
            _ => by_branch,
        };
        match pick.len() {
            0 => None,
            1 => Some(Ok(pick[0].clone())),
            _ => Some(Err(OrangeError::invalid(format!(
                "{typed:?} names several tasks: {}; give more of the id",
                pick.iter()
                    .map(|t| format!("{} ({}/{}, {})", t.id, t.project, t.branch, t.status))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))),
        }
    }

    /// Every task that can be read (a damaged one is skipped, not an error: this only
    /// helps find the one a person named).
    fn list_lenient(&self, project: Option<&str>) -> Result<Vec<Task>> {
        Ok(self
            .ids(project)
            .into_iter()
            .filter_map(|(p, id)| self.load(&p, &id).ok())
            .collect())
    }

    /// `(project, id)` of every task with a `task.json`, in `project` or in all of them.
    fn ids(&self, project: Option<&str>) -> Vec<(String, String)> {
        let projects: Vec<String> = match project {
            Some(p) => vec![p.to_string()],
            None => self.projects(),
        };
        let mut out = vec![];
        for p in projects {
            for entry in std::fs::read_dir(self.project_dir(&p))
                .into_iter()
                .flatten()
                .flatten()
            {
                let id = entry.file_name().to_string_lossy().into_owned();
                if valid_id(&id) && self.json_path(&p, &id).exists() {
                    out.push((p.clone(), id));
                }
            }
        }
        out
    }

    /// The task with exactly this id (no prefix, no branch): what routing and links use.
    pub fn find_exact(&self, id: &str, project: Option<&str>) -> Result<Task> {
        if let Some(p) = project {
            return self.load(p, id);
        }
        if !valid_id(id) {
            return Err(OrangeError::TaskNotFound(id.to_string()));
        }
        let mut found = vec![];
        for entry in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = entry.file_name().to_string_lossy().into_owned();
            if self.json_path(&p, id).exists() {
                found.push(p);
            }
        }
        match found.len() {
            0 => Err(OrangeError::TaskNotFound(id.to_string())),
            1 => self.load(&found[0], id),
            _ => Err(OrangeError::invalid(format!(
                "task id {id} exists in several projects ({}); pass --project",
                found.join(", ")
            ))),
        }
    }

    /// Write `task.json` and keep the index of open tasks right. The order makes a crash
    /// harmless: an open task is indexed before its file says so; a finished one leaves
    /// the index after. (A stale entry costs one read and is pruned by [`Self::list_open`].)
    pub fn save(&self, task: &Task) -> Result<()> {
        let marker = self.open_marker(&task.project, &task.id);
        if !task.status.is_final() && !marker.exists() {
            if let Some(dir) = marker.parent() {
                store::ensure_dir(dir)?;
            }
            std::fs::File::create(&marker).ctx(|| format!("indexing {}", marker.display()))?;
            crate::adapters::fault::point("task.indexed");
        }
        store::write_json_atomic(&self.json_path(&task.project, &task.id), task)?;
        if task.status.is_final() {
            let _ = std::fs::remove_file(&marker);
        }
        // Every observation taken before this is stale; the monitor looks again.
        store::poke(&self.home);
        Ok(())
    }

    /// `tasks/<project>/.open/`: one empty file per task that is not done or cancelled, so
    /// the hot paths (the observer, create, the queue) never read finished tasks.
    fn open_dir(&self, project: &str) -> PathBuf {
        self.project_dir(project).join(".open")
    }

    fn open_marker(&self, project: &str, id: &str) -> PathBuf {
        self.open_dir(project).join(id)
    }

    /// Every project that has a task folder.
    fn projects(&self) -> Vec<String> {
        std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// The ids in the index of open tasks of `project`, building it from the task files
    /// the first time (a data root from before the index).
    fn open_ids(&self, project: &str) -> Vec<String> {
        let dir = self.open_dir(project);
        let built = dir.join(".built");
        if !built.exists() {
            let _ = std::fs::create_dir_all(&dir);
            for entry in std::fs::read_dir(self.project_dir(project))
                .into_iter()
                .flatten()
                .flatten()
            {
                let id = entry.file_name().to_string_lossy().into_owned();
                if self
                    .head(project, &id)
                    .is_some_and(|h| Status::parse(&h.status).map_or(true, |s| !s.is_final()))
                {
                    let _ = std::fs::File::create(dir.join(&id));
                }
            }
            let _ = std::fs::File::create(&built);
        }
        std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|id| valid_id(id))
            .collect()
    }

    /// Every task of `project` (or of all projects) that is not done or cancelled, oldest
    /// first, read through the index: the cost does not grow with finished tasks. An
    /// unreadable task file is an error, as in [`Self::list`].
    pub fn list_open(&self, project: Option<&str>) -> Result<Vec<Task>> {
        let (tasks, errors) = self.read_open(project);
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(tasks),
        }
    }

    /// Like [`Self::list_open`], but lenient: unreadable task files are counted, not an
    /// error (what a status line must do). Returns the tasks and the count of unreadable.
    pub fn list_open_lenient(&self) -> (Vec<Task>, u32) {
        let (tasks, errors) = self.read_open(None);
        (tasks, errors.len() as u32)
    }

    /// The open tasks that read well, oldest first, and the errors of those that did not.
    /// Entries of finished or removed tasks are stale: pruned from the index, under the
    /// project's lock only (see [`Self::prune`]).
    fn read_open(&self, project: Option<&str>) -> (Vec<Task>, Vec<OrangeError>) {
        let projects = match project {
            Some(p) => vec![p.to_string()],
            None => self.projects(),
        };
        let mut out = vec![];
        let mut errors = vec![];
        for p in projects {
            let mut stale = vec![];
            for id in self.open_ids(&p) {
                match self.load(&p, &id) {
                    Ok(t) if !t.status.is_final() => out.push(t),
                    Ok(_) | Err(OrangeError::TaskNotFound(_)) => stale.push(id),
                    Err(e) => errors.push(e),
                }
            }
            self.prune(&p, &stale);
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        (out, errors)
    }

    /// Remove the index entries of tasks that looked finished or gone. Only with the
    /// project's lock, and after a second look under it: a task being created is indexed
    /// before its file is written, and a failed task being retried is saved open again,
    /// both under that lock; a reader that pruned without it dropped such a task from the
    /// index for good (a queued task then never started). Busy (a command holds the lock,
    /// maybe this one): left for the next reader.
    fn prune(&self, project: &str, stale: &[String]) {
        if stale.is_empty() {
            return;
        }
        let Ok(Some(_lock)) = self.try_lock(project) else {
            return;
        };
        for id in stale {
            let stale = match self.load(project, id) {
                Ok(t) => t.status.is_final(),
                Err(OrangeError::TaskNotFound(_)) => true,
                Err(_) => false,
            };
            if stale {
                let _ = std::fs::remove_file(self.open_marker(project, id));
            }
        }
    }

    /// Every task of `project` (or of all projects), oldest first. Unreadable task files
    /// are reported, not skipped.
    pub fn list(&self, project: Option<&str>) -> Result<Vec<Task>> {
        let mut out = self
            .ids(project)
            .into_iter()
            .map(|(p, id)| self.load(&p, &id))
            .collect::<Result<Vec<Task>>>()?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    pub fn append_history(&self, task: &Task, event: &str, data: serde_json::Value) -> Result<()> {
        let mut line = serde_json::json!({"ts": store::now_rfc3339(), "event": event});
        if let (Some(obj), serde_json::Value::Object(extra)) = (line.as_object_mut(), data) {
            obj.extend(extra);
        }
        let mut text = line.to_string();
        text.push('\n');
        let path = self.dir(&task.project, &task.id).join("history.jsonl");
        // Never through a symbolic link: a sandboxed agent may write its task's directory,
        // and must not make orange append to a file elsewhere.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .ctx(|| format!("opening {}", path.display()))?;
        f.write_all(text.as_bytes())
            .ctx(|| format!("writing {}", path.display()))
    }

    /// History events, oldest first. Lines that do not parse (an agent or a crash may
    /// have left half a line) are skipped: history is informational.
    pub fn history(&self, project: &str, id: &str) -> Vec<Event> {
        let path = self.dir(project, id).join("history.jsonl");
        parse_history(&crate::text::lossy(std::fs::read(path).unwrap_or_default()))
    }

    pub fn remove(&self, task: &Task) -> Result<()> {
        let dir = self.dir(&task.project, &task.id);
        std::fs::remove_dir_all(&dir).ctx(|| format!("removing {}", dir.display()))?;
        let _ = std::fs::remove_file(self.open_marker(&task.project, &task.id));
        store::poke(&self.home);
        Ok(())
    }
}

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

/// The two fields the pool needs, read leniently from `task.json`.
#[derive(Debug, Deserialize)]
struct TaskHead {
    #[serde(default)]
    status: String,
    #[serde(default)]
    workspace: Option<String>,
}

impl TaskStore {
    fn head(&self, project: &str, id: &str) -> Option<TaskHead> {
        if !valid_id(id) {
            return None;
        }
        let text = std::fs::read(self.json_path(project, id)).ok()?;
        // An unreadable task file counts as alive: gc must never free a workspace
        // because of a parse error.
        Some(serde_json::from_slice(&text).unwrap_or(TaskHead {
            status: "unknown".into(),
            workspace: None,
        }))
    }
}

/// Done, cancelled, failed and pending tasks hold no workspace (a pending one bound to a
/// slot is the leftover of a spawn killed half-way).
fn head_is_final(h: &TaskHead) -> bool {
    Status::parse(&h.status).is_ok_and(|s| !s.is_active())
}

impl TaskLookup for TaskStore {
    fn is_live(&self, project: &str, label: &str) -> bool {
        self.head(project, label)
            .is_some_and(|h| !head_is_final(&h))
    }

    fn holder_of(&self, project: &str, workspace: &str) -> Option<String> {
        for id in self.open_ids(project) {
            if let Some(h) = self.head(project, &id) {
                if h.workspace.as_deref() == Some(workspace) && !head_is_final(&h) {
                    return Some(id);
                }
            }
        }
        None
    }
}

/// Which task a directory belongs to: the workspace that contains it, or `$ORANGE_TASK_ID`.
pub fn id_from_env() -> Option<String> {
    std::env::var("ORANGE_TASK_ID").ok().filter(|s| valid_id(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_the_v4_shape() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(new_uuid(), new_uuid());
    }

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
    fn a_task_is_found_by_its_id_a_unique_prefix_or_its_branch() {
        let d = tempfile::tempdir().unwrap();
        let home = Home {
            root: d.path().to_path_buf(),
        };
        let store = TaskStore::new(&home);
        let task = |id: &str, project: &str, branch: &str, status: Status| Task {
            id: id.into(),
            project: project.into(),
            branch: branch.into(),
            status,
            ..Task::default()
        };
        for t in [
            task("abc123", "shop", "fix-login", Status::Working),
            task("abd456", "shop", "dark-mode", Status::Working),
            task("xyz789", "blog", "fix-login", Status::Working),
            task("qqq111", "blog", "old", Status::Done),
            task("rrr222", "blog", "old", Status::Working),
        ] {
            store.save(&t).unwrap();
        }
        assert_eq!(store.find("abc123", None).unwrap().id, "abc123");
        assert_eq!(store.find("abc1", None).unwrap().id, "abc123");
        assert_eq!(store.find("dark-mode", None).unwrap().id, "abd456");
        assert_eq!(store.find("fix-login", Some("blog")).unwrap().id, "xyz789");
        // The open task of a reused branch.
        assert_eq!(store.find("old", None).unwrap().id, "rrr222");
        // Two characters are too few to name a task.
        assert_eq!(store.find("ab", None).unwrap_err().code(), "task_not_found");
        store
            .save(&task("abc999", "shop", "other", Status::Working))
            .unwrap();
        let e = store.find("abc", None).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert!(e.to_string().contains("abc123") && e.to_string().contains("abc999"));
        let e = store.find("fix-login", None).unwrap_err();
        assert!(e.to_string().contains("shop/fix-login"), "{e}");
        assert_eq!(
            store.find("nope", None).unwrap_err().code(),
            "task_not_found"
        );
        assert_eq!(store.find("", None).unwrap_err().code(), "task_not_found");
    }
}
