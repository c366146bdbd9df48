//! The task store under `tasks/<project>/<id>/` (`task.json` system-owned, `TASK.md`
//! agent-editable, `history.jsonl` append-only), the index of open tasks, the project's
//! lock, and finding a task by what a person types.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use serde::Deserialize;

use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{IoContext, OrangeError, Result};
use crate::execution::pool::TaskLookup;
use crate::orchestration::task::model::{parse_history, valid_id, Event, Status, Task, MIN_PREFIX};

pub struct TaskStore {
    root: PathBuf,
    home: Home,
}

impl TaskStore {
    /// The home the tasks are under.
    pub fn home(&self) -> &Home {
        &self.home
    }

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

    pub fn json_path(&self, project: &str, id: &str) -> PathBuf {
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
        // A damaged record is passed over: this only finds the one a person named.
        let all = self.list_readable(project);
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
        store::poke_task(&self.home, &task.project, &task.id);
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

    /// [`Self::list_open_lenient`], each task got with `load(store, project, id)` instead
    /// of [`Self::load`]: a caller that kept what it read gives back what did not change.
    pub fn list_open_lenient_with(
        &self,
        load: impl FnMut(&TaskStore, &str, &str) -> Result<Task>,
    ) -> (Vec<Task>, u32) {
        let (tasks, errors) = self.read_open_with(None, load);
        (tasks, errors.len() as u32)
    }

    /// The open tasks that read well, oldest first, and the errors of those that did not.
    /// Entries of finished or removed tasks are stale: pruned from the index, under the
    /// project's lock only (see [`Self::prune`]).
    fn read_open(&self, project: Option<&str>) -> (Vec<Task>, Vec<OrangeError>) {
        self.read_open_with(project, |s, p, id| s.load(p, id))
    }

    /// [`Self::read_open`], each task got with `load`.
    fn read_open_with(
        &self,
        project: Option<&str>,
        mut load: impl FnMut(&TaskStore, &str, &str) -> Result<Task>,
    ) -> (Vec<Task>, Vec<OrangeError>) {
        let projects = match project {
            Some(p) => vec![p.to_string()],
            None => self.projects(),
        };
        let mut out = vec![];
        let mut errors = vec![];
        for p in projects {
            let mut stale = vec![];
            for id in self.open_ids(&p) {
                match load(self, &p, &id) {
                    Ok(t) if !t.status.is_final() => out.push(t),
                    Ok(_) | Err(OrangeError::TaskNotFound(_)) => stale.push(id),
                    Err(e) => errors.push(e),
                }
            }
            self.prune(&p, &stale);
        }
        oldest_first(&mut out);
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
        oldest_first(&mut out);
        Ok(out)
    }

    /// [`Self::list`], the tasks whose record reads well (the others passed over).
    pub fn list_readable(&self, project: Option<&str>) -> Vec<Task> {
        let mut out: Vec<Task> = self
            .ids(project)
            .into_iter()
            .filter_map(|(p, id)| self.load(&p, &id).ok())
            .collect();
        oldest_first(&mut out);
        out
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
        store::poke_task(&self.home, &task.project, &task.id);
        Ok(())
    }
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

/// Tasks in the order of every listing: oldest first, then by id.
fn oldest_first(tasks: &mut [Task]) {
    tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

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
