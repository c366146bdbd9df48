//! The warm pool of git worktrees (seeds 000, 002, 004; REFERENCE.md §1).
//!
//! State is `workspaces/.pool.json` in seed 000's format (plus a few fields), changed only
//! under `workspaces/.pool.lock`. A slot being created is journalled as `creating` before
//! `git worktree add` runs, so a crash at any point leaves a record the next command heals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::adapters::progress;
use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::execution::repo::Project;
use crate::{adapters::git, adapters::shell, execution::provision};

/// Files orange puts in a workspace that git must ignore and release must remove.
pub const EXCLUDED_FILES: &[&str] = &["TASK.md", ".orange-outcome", ".claude/settings.local.json"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotStatus {
    Available,
    Bound,
    /// Journalled before `git worktree add`; seen by anyone else only after a crash.
    Creating,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Slot {
    pub status: SlotStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_at: Option<String>,
    /// Untracked paths the setup command left: not task work, kept across releases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<String>,
}

impl Slot {
    pub fn path_in(&self, home: &Home, name: &str) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| home.workspaces_dir().join(name))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PoolFile {
    /// Required: a file without it is not a pool file (`{}` must not read as an empty
    /// pool and forget bound workspaces). A missing file is the empty pool.
    pub workspaces: BTreeMap<String, Slot>,
}

/// Split `<project>--<n>` into its parts.
pub fn parse_name(name: &str) -> Option<(&str, u32)> {
    let (p, n) = name.rsplit_once("--")?;
    if p.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((p, n.parse().ok()?))
}

/// Load the pool, filling fields that a seed-format file leaves out.
pub fn load(home: &Home) -> Result<PoolFile> {
    let mut pool: PoolFile = store::read_json(&home.pool_file())?;
    for (name, slot) in pool.workspaces.iter_mut() {
        if let Some((p, n)) = parse_name(name) {
            if slot.project.is_empty() {
                slot.project = p.to_string();
            }
            if slot.index == 0 {
                slot.index = n;
            }
        }
    }
    Ok(pool)
}

fn save(home: &Home, pool: &PoolFile) -> Result<()> {
    store::write_json_atomic(&home.pool_file(), pool)
}

/// What the rest of orange (the task store) tells the pool about tasks.
pub trait TaskLookup {
    /// Is the task this label names still alive (exists, not done or cancelled)?
    fn is_live(&self, project: &str, label: &str) -> bool;
    /// A live task that records `workspace` as its own (a cross-check on a stale pool file).
    fn holder_of(&self, project: &str, workspace: &str) -> Option<String>;
}

/// A workspace as commands show it: seed field names plus where and when.
#[derive(Debug, Clone, Serialize)]
pub struct Workspace {
    pub name: String,
    pub project: String,
    pub path: PathBuf,
    /// available, bound, creating, or missing (the directory is gone).
    pub status: String,
    pub task: Option<String>,
    pub index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_at: Option<String>,
}

fn view(home: &Home, name: &str, slot: &Slot) -> Workspace {
    let path = slot.path_in(home, name);
    let status = if slot.status != SlotStatus::Creating && !path.join(".git").exists() {
        "missing".to_string()
    } else {
        match slot.status {
            SlotStatus::Available => "available",
            SlotStatus::Bound => "bound",
            SlotStatus::Creating => "creating",
        }
        .to_string()
    };
    Workspace {
        name: name.to_string(),
        project: slot.project.clone(),
        path,
        status,
        task: slot.task.clone(),
        index: slot.index,
        bound_at: slot.bound_at.clone(),
    }
}

/// The pool of one project, with the lock held for as long as the value lives.
struct Locked<'a> {
    home: &'a Home,
    project: &'a Project,
    pool: PoolFile,
    base: Option<String>,
    _lock: LockGuard,
}

impl<'a> Locked<'a> {
    fn open(home: &'a Home, project: &'a Project) -> Result<Locked<'a>> {
        store::ensure_dir(&home.workspaces_dir())?;
        let lock = LockGuard::acquire(&home.pool_lock())?;
        let pool = load(home)?;
        Ok(Locked {
            home,
            project,
            pool,
            base: None,
            _lock: lock,
        })
    }

    fn save(&self) -> Result<()> {
        save(self.home, &self.pool)
    }

    fn base(&mut self) -> Result<String> {
        if self.base.is_none() {
            self.base = Some(git::base_ref(
                &self.project.path,
                &self.project.default_branch,
            )?);
        }
        Ok(self.base.clone().unwrap())
    }

    fn names(&self, status: Option<SlotStatus>) -> Vec<String> {
        let mut v: Vec<(&String, &Slot)> = self
            .pool
            .workspaces
            .iter()
            .filter(|(_, s)| {
                s.project == self.project.name && status.is_none_or(|st| s.status == st)
            })
            .collect();
        v.sort_by_key(|(_, s)| s.index);
        v.into_iter().map(|(n, _)| n.clone()).collect()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.pool.workspaces[name].path_in(self.home, name)
    }

    /// Next free slot number: max of the pool's and of directories on disk, plus one,
    /// so a stray `<project>--<n>` directory is never reused.
    fn next_index(&self) -> u32 {
        let from_pool = self
            .pool
            .workspaces
            .values()
            .filter(|s| s.project == self.project.name)
            .map(|s| s.index)
            .max()
            .unwrap_or(0);
        let from_disk = std::fs::read_dir(self.home.workspaces_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                parse_name(&n)
                    .filter(|(p, _)| *p == self.project.name)
                    .map(|(_, i)| i)
            })
            .max()
            .unwrap_or(0);
        from_pool.max(from_disk) + 1
    }

    /// Create a new worktree slot (journalled), run the setup command, mark available.
    fn create_slot(&mut self) -> Result<String> {
        let base = self.base()?;
        let index = self.next_index();
        let name = format!("{}--{}", self.project.name, index);
        let path = self.home.workspaces_dir().join(&name);
        self.pool.workspaces.insert(
            name.clone(),
            Slot {
                status: SlotStatus::Creating,
                task: None,
                project: self.project.name.clone(),
                index,
                path: Some(path.clone()),
                bound_at: None,
                keep: vec![],
            },
        );
        self.save()?;
        let step = progress::step(format!("creating workspace {name}"));
        let keep = match self.populate(&name, &path, &base, &step) {
            Ok(k) => k,
            Err(e) => {
                self.discard(&name);
                self.save()?;
                return Err(e);
            }
        };
        let slot = self.pool.workspaces.get_mut(&name).unwrap();
        slot.status = SlotStatus::Available;
        slot.keep = keep;
        self.save()?;
        step.done(format!("created workspace {name}"));
        Ok(name)
    }

    /// `git worktree add --detach` at the base, then the project's setup command (its
    /// output reported to `step`). Returns the untracked paths the setup command left.
    fn populate(
        &self,
        name: &str,
        path: &Path,
        base: &str,
        step: &progress::Step,
    ) -> Result<Vec<String>> {
        git::worktree_add_detached(&self.project.path, path, base)?;
        // Gitignored files from the main repository first, then the setup command.
        provision::provision(
            &self.project.path,
            path,
            &self.project.copy,
            &self.project.symlink,
        )?;
        let Some(cmd) = &self.project.setup_cmd else {
            return Ok(vec![]);
        };
        {
            // The project's setup command as the user gave it (its start; shown safely).
            let shown: String = cmd.lines().next().unwrap_or("").chars().take(48).collect();
            let more = if shown.len() < cmd.len() { "…" } else { "" };
            step.describe(format!("{name}: setup `{shown}{more}`"));
            let p = path.to_string_lossy();
            shell::run_in(
                path,
                cmd,
                &[
                    ("ORANGE_WORKSPACE", &p),
                    ("ORANGE_PROJECT", &self.project.name),
                    ("ORANGE_WORKSPACE_NAME", name),
                ],
                &format!("setup command of workspace {name}"),
                step,
            )?;
        }
        git::untracked(path)
    }

    /// Remove a slot's worktree and record. Only called on slots orange created.
    fn discard(&mut self, name: &str) {
        let path = self.path(name);
        if path.exists() && git::worktree_remove(&self.project.path, &path).is_err() {
            let _ = std::fs::remove_dir_all(&path);
        }
        let _ = git::worktree_prune(&self.project.path);
        self.pool.workspaces.remove(name);
    }

    /// Remove and re-add a slot's worktree at the base, keeping its name and record.
    fn recycle(&mut self, name: &str) -> Result<()> {
        let base = self.base()?;
        let path = self.path(name);
        if path.exists() && git::worktree_remove(&self.project.path, &path).is_err() {
            std::fs::remove_dir_all(&path).map_err(|e| {
                OrangeError::io(format!("removing broken workspace {}", path.display()), e)
            })?;
        }
        git::worktree_prune(&self.project.path)?;
        let step = progress::step(format!("recreating workspace {name}"));
        let keep = self.populate(name, &path, &base, &step)?;
        self.pool.workspaces.get_mut(name).unwrap().keep = keep;
        step.done(format!("recreated workspace {name}"));
        Ok(())
    }

    /// Heal what a crash can leave: `creating` records (half-made slots) are discarded.
    fn heal_creating(&mut self) -> Result<Vec<String>> {
        let stale = self.names(Some(SlotStatus::Creating));
        for name in &stale {
            self.discard(name);
        }
        if !stale.is_empty() {
            self.save()?;
        }
        Ok(stale)
    }

    fn is_intact(&self, name: &str) -> bool {
        let path = self.path(name);
        git::is_worktree_of(&self.project.path, &path)
    }

    /// Bind the first usable available slot, creating one lazily under the size limit.
    fn acquire(&mut self, label: &str, tasks: &dyn TaskLookup) -> Result<String> {
        self.heal_creating()?;
        // Idempotent per label: a retry after a crash between acquire and the caller's own
        // bookkeeping gets the same workspace instead of leaking it.
        if let Some(name) = self
            .names(Some(SlotStatus::Bound))
            .into_iter()
            .find(|n| self.pool.workspaces[n].task.as_deref() == Some(label))
        {
            return Ok(name);
        }
        let mut chosen = None;
        for name in self.names(Some(SlotStatus::Available)) {
            if tasks.holder_of(&self.project.name, &name).is_some() {
                continue;
            }
            if !self.is_intact(&name) {
                self.recycle(&name)?;
            } else if !self.project.copy.is_empty() || !self.project.symlink.is_empty() {
                // A warm slot gets what the project added since (never overwriting).
                let path = self.path(&name);
                provision::provision(
                    &self.project.path,
                    &path,
                    &self.project.copy,
                    &self.project.symlink,
                )?;
            }
            chosen = Some(name);
            break;
        }
        let name = match chosen {
            Some(n) => n,
            None => {
                let count = self.names(None).len();
                if count >= self.project.pool_size {
                    let bound = self.names(Some(SlotStatus::Bound)).len();
                    return Err(OrangeError::PoolExhausted {
                        project: self.project.name.clone(),
                        bound,
                        size: self.project.pool_size,
                    });
                }
                self.create_slot()?
            }
        };
        let slot = self.pool.workspaces.get_mut(&name).unwrap();
        slot.status = SlotStatus::Bound;
        slot.task = Some(label.to_string());
        slot.bound_at = Some(store::now_rfc3339());
        self.save()?;
        Ok(name)
    }

    /// Return a bound slot to the pool (see REFERENCE.md §1 "Release").
    fn release(&mut self, name: &str, force: bool) -> Result<ReleaseOutcome> {
        let slot = self
            .pool
            .workspaces
            .get(name)
            .filter(|s| s.project == self.project.name)
            .ok_or_else(|| OrangeError::WorkspaceNotFound(name.to_string()))?;
        let keep = slot.keep.clone();
        match slot.status {
            SlotStatus::Available => return Ok(ReleaseOutcome::AlreadyAvailable),
            SlotStatus::Creating => {
                self.heal_creating()?;
                return Err(OrangeError::WorkspaceNotFound(format!(
                    "{name} (it was half-created by a crashed command and has been cleaned up)"
                )));
            }
            SlotStatus::Bound => {}
        }
        let base = self.base()?;
        let path = self.path(name);
        let outcome = if !self.is_intact(name) {
            self.recycle(name)?;
            ReleaseOutcome::Recreated
        } else {
            let state = git::inspect(&path, &base, &keep)?;
            if let (false, Some(detail)) = (force, state.unsaved.clone()) {
                return Err(OrangeError::WorktreeDirty { path, detail });
            }
            let reset = if state.pristine {
                Ok(())
            } else {
                git::detach_reset_clean(&path, &base, &keep, state.in_progress)
            };
            match reset {
                Ok(()) => {
                    remove_orange_files(&path)?;
                    ReleaseOutcome::Reset
                }
                Err(e) => {
                    self.recycle(name).map_err(|e2| {
                        OrangeError::BackendCommandFailed(format!(
                            "resetting {name} failed ({e}) and recreating it failed too ({e2})"
                        ))
                    })?;
                    ReleaseOutcome::Recycled(e.to_string())
                }
            }
        };
        let slot = self.pool.workspaces.get_mut(name).unwrap();
        slot.status = SlotStatus::Available;
        slot.task = None;
        slot.bound_at = None;
        self.save()?;
        Ok(outcome)
    }
}

fn remove_orange_files(path: &Path) -> Result<()> {
    for f in EXCLUDED_FILES {
        let p = path.join(f);
        if p.symlink_metadata().is_ok() {
            std::fs::remove_file(&p)
                .map_err(|e| OrangeError::io(format!("removing {}", p.display()), e))?;
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    Reset,
    AlreadyAvailable,
    /// The directory was gone; a fresh worktree took its place.
    Recreated,
    /// Reset or clean failed (the message); the slot was removed and re-added.
    Recycled(String),
}

impl ReleaseOutcome {
    pub fn describe(&self) -> String {
        match self {
            ReleaseOutcome::Reset => "reset".into(),
            ReleaseOutcome::AlreadyAvailable => "already_available".into(),
            ReleaseOutcome::Recreated => "recreated".into(),
            ReleaseOutcome::Recycled(_) => "recycled".into(),
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct InitReport {
    pub created: Vec<Workspace>,
    /// Half-created slots from a crash, removed.
    pub healed: Vec<String>,
    /// Available slots whose directory was gone or broken, recreated.
    pub recreated: Vec<String>,
    /// `<project>--<n>` directories that are not orange's worktrees: left alone, never reused.
    pub skipped: Vec<PathBuf>,
    /// Worktrees of this repository found on disk without a record, taken back into the pool.
    pub adopted: Vec<String>,
    pub workspaces: Vec<Workspace>,
}

/// Pre-create `pool_size` worktrees: prune, validate the base, heal, adopt, create.
pub fn init(home: &Home, project: &Project) -> Result<InitReport> {
    let mut l = Locked::open(home, project)?;
    git::worktree_prune(&project.path)?;
    l.base()?;
    let mut report = InitReport {
        healed: l.heal_creating()?,
        ..Default::default()
    };
    for name in l.names(Some(SlotStatus::Available)) {
        if !l.is_intact(&name) {
            l.recycle(&name)?;
            report.recreated.push(name);
        }
    }
    // Directories named like our slots but not in the pool.
    let mut entries: Vec<(u32, String, PathBuf)> = std::fs::read_dir(home.workspaces_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let (p, i) = parse_name(&n)?;
            (p == project.name && !l.pool.workspaces.contains_key(&n))
                .then(|| (i, n.clone(), e.path()))
        })
        .collect();
    entries.sort();
    for (index, name, path) in entries {
        if git::is_worktree_of(&project.path, &path) {
            let dirty = git::unsaved_work(&path, &l.base()?, &[])?.is_some();
            l.pool.workspaces.insert(
                name.clone(),
                Slot {
                    status: if dirty {
                        SlotStatus::Bound
                    } else {
                        SlotStatus::Available
                    },
                    task: dirty.then(|| "(adopted: had uncommitted changes)".to_string()),
                    project: project.name.clone(),
                    index,
                    path: Some(path),
                    bound_at: None,
                    keep: vec![],
                },
            );
            report.adopted.push(name);
        } else {
            report.skipped.push(path);
        }
    }
    l.save()?;
    while l.names(None).len() < project.pool_size {
        let name = l.create_slot()?;
        report
            .created
            .push(view(home, &name, &l.pool.workspaces[&name]));
    }
    report.workspaces = l
        .names(None)
        .iter()
        .map(|n| view(home, n, &l.pool.workspaces[n]))
        .collect();
    Ok(report)
}

/// Bind a workspace to `label`. With `wait`, retry until a slot frees or the wait ends.
pub fn acquire(
    home: &Home,
    project: &Project,
    label: &str,
    wait: Option<Duration>,
    tasks: &dyn TaskLookup,
) -> Result<Workspace> {
    validate_label(label)?;
    let deadline = wait.map(|w| Instant::now() + w);
    let mut waiting: Option<progress::Step> = None;
    loop {
        let attempt = {
            let mut l = Locked::open(home, project)?;
            l.acquire(label, tasks)
                .map(|name| view(home, &name, &l.pool.workspaces[&name]))
        };
        match (attempt, deadline) {
            (Err(OrangeError::PoolExhausted { bound, size, .. }), Some(d))
                if Instant::now() < d =>
            {
                waiting.get_or_insert_with(|| {
                    progress::step(format!(
                        "waiting for a free workspace of {} ({bound} of {size} bound)",
                        project.name
                    ))
                });
                std::thread::sleep(
                    Duration::from_millis(25).min(d.saturating_duration_since(Instant::now())),
                );
            }
            (other, _) => {
                if let (Some(w), Ok(ws)) = (waiting, &other) {
                    w.done(format!("{} came free", ws.name));
                }
                return other;
            }
        }
    }
}

/// Task labels are data, never paths: anything printable goes, but not empty, not
/// control characters, and not absurdly long.
pub fn validate_label(label: &str) -> Result<()> {
    if label.trim().is_empty() {
        return Err(OrangeError::invalid("task label must not be empty"));
    }
    if label.chars().any(|c| c.is_control()) {
        return Err(OrangeError::invalid(format!(
            "task label {label:?} contains control characters"
        )));
    }
    if label.len() > 256 {
        return Err(OrangeError::invalid("task label is longer than 256 bytes"));
    }
    Ok(())
}

/// The workspace that contains `dir` (any directory inside it), read without the lock.
pub fn containing(home: &Home, dir: &Path) -> Result<Option<Workspace>> {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = canon(dir);
    if !dir.starts_with(canon(&home.workspaces_dir())) {
        return Ok(None);
    }
    Ok(list(home, None)?
        .into_iter()
        .find(|w| dir.starts_with(canon(&w.path))))
}

/// The workspace record `name` belongs to, read without the lock.
pub fn find(home: &Home, name: &str) -> Result<Workspace> {
    let pool = load(home)?;
    let slot = pool
        .workspaces
        .get(name)
        .ok_or_else(|| OrangeError::WorkspaceNotFound(name.to_string()))?;
    Ok(view(home, name, slot))
}

pub fn release(home: &Home, project: &Project, name: &str, force: bool) -> Result<ReleaseOutcome> {
    // Fetch outside the lock: it touches only refs and can be slow. Not for a slot that
    // is already available (release is idempotent and should be cheap then).
    let bound = load(home)?
        .workspaces
        .get(name)
        .is_some_and(|s| s.status == SlotStatus::Bound);
    if bound {
        git::fetch(&project.path, &project.default_branch);
    }
    let mut l = Locked::open(home, project)?;
    l.release(name, force)
}

/// Release `name` only while it is bound to `label` (checked under the pool lock):
/// `Ok(None)` when it is not (already released, or another task's by now). What a task
/// gives back must never be another task's workspace.
pub fn release_held_by(
    home: &Home,
    project: &Project,
    name: &str,
    label: &str,
    force: bool,
) -> Result<Option<ReleaseOutcome>> {
    let held = |pool: &PoolFile| {
        pool.workspaces
            .get(name)
            .is_some_and(|s| s.status == SlotStatus::Bound && s.task.as_deref() == Some(label))
    };
    if !held(&load(home)?) {
        return Ok(None);
    }
    git::fetch(&project.path, &project.default_branch);
    let mut l = Locked::open(home, project)?;
    if !held(&l.pool) {
        return Ok(None);
    }
    l.release(name, force).map(Some)
}

/// The bound workspaces of `project`: (name, label).
pub fn bindings(home: &Home, project: &str) -> Result<Vec<(String, String)>> {
    Ok(load(home)?
        .workspaces
        .into_iter()
        .filter(|(_, s)| s.project == project && s.status == SlotStatus::Bound)
        .filter_map(|(n, s)| Some((n, s.task?)))
        .collect())
}

pub fn list(home: &Home, project: Option<&str>) -> Result<Vec<Workspace>> {
    let pool = load(home)?;
    let mut v: Vec<Workspace> = pool
        .workspaces
        .iter()
        .filter(|(_, s)| project.is_none_or(|p| s.project == p))
        .map(|(n, s)| view(home, n, s))
        .collect();
    v.sort_by(|a, b| a.project.cmp(&b.project).then(a.index.cmp(&b.index)));
    Ok(v)
}

#[derive(Debug, Default, Serialize)]
pub struct GcReport {
    pub released: Vec<String>,
    pub skipped: Vec<serde_json::Value>,
    pub kept: Vec<String>,
}

/// Release workspaces bound to tasks that are no longer alive. Dirty ones are skipped
/// (reported with the reason) unless `force`.
/// `busy`: workspace name → the agent session that runs in it: never released, even with
/// `force` (a new task must never get a workspace in which another agent works).
pub fn gc(
    home: &Home,
    project: &Project,
    tasks: &dyn TaskLookup,
    busy: &std::collections::HashMap<String, String>,
    force: bool,
    dry_run: bool,
) -> Result<GcReport> {
    if !dry_run {
        git::fetch(&project.path, &project.default_branch);
    }
    let mut l = Locked::open(home, project)?;
    let mut report = GcReport::default();
    for name in l.names(Some(SlotStatus::Bound)) {
        let label = l.pool.workspaces[&name].task.clone().unwrap_or_default();
        if tasks.is_live(&project.name, &label) {
            report.kept.push(name);
            continue;
        }
        if let Some(session) = busy.get(&name) {
            report.skipped.push(
                serde_json::json!({"name": name, "task": label, "code": "in_use",
                "reason": format!("an agent runs in it (tmux session {session})")}),
            );
            continue;
        }
        if !force {
            if let Some(reason) = in_use_or_unpushed(&l.path(&name))? {
                report.skipped.push(serde_json::json!({"name": name, "task": label, "code": "in_use", "reason": reason}));
                continue;
            }
        }
        if dry_run {
            report.released.push(name);
            continue;
        }
        match l.release(&name, force) {
            Ok(_) => report.released.push(name),
            Err(e) => report.skipped.push(serde_json::json!({
                "name": name, "task": label, "code": e.code(), "reason": e.to_string()
            })),
        }
    }
    Ok(report)
}

/// Why cleanup must not touch a worktree (without --force): a process works in it, or
/// its HEAD holds commits no remote has.
pub fn in_use_or_unpushed(path: &Path) -> Result<Option<String>> {
    if !path.exists() {
        return Ok(None);
    }
    let pids = provision::processes_in(path);
    if !pids.is_empty() {
        let shown: Vec<String> = pids.iter().take(5).map(|p| p.to_string()).collect();
        return Ok(Some(format!(
            "a running process works in it (pid {})",
            shown.join(", ")
        )));
    }
    if let Some(n) = git::unpushed_commits(path)?.filter(|n| *n > 0) {
        let branch = git::current_branch(path)?.unwrap_or_else(|| "a detached HEAD".into());
        return Ok(Some(format!("{n} commit(s) on {branch} are not pushed")));
    }
    Ok(None)
}

#[derive(Debug, Default, Serialize)]
pub struct ShutdownReport {
    pub removed: Vec<String>,
    /// Directories left because they are not orange's worktrees.
    pub left: Vec<PathBuf>,
    pub pool_dir_removed: bool,
}

/// Remove every worktree of the project (bound ones too), prune, and drop the records.
/// Refuses, before removing anything, when a worktree holds unsaved work, unless `force`.
pub fn shutdown(home: &Home, project: &Project, force: bool) -> Result<ShutdownReport> {
    let mut l = Locked::open(home, project)?;
    let names = l.names(None);
    if !force {
        let base = l.base().ok();
        let mut dirty = vec![];
        for name in &names {
            let path = l.path(name);
            if l.is_intact(name) {
                if let Some(d) = git::unsaved_work(
                    &path,
                    base.as_deref().unwrap_or("HEAD"),
                    &l.pool.workspaces[name].keep,
                )? {
                    dirty.push(format!("{name}: {d}"));
                }
            }
        }
        if !dirty.is_empty() {
            return Err(OrangeError::WorktreeDirty {
                path: home.workspaces_dir(),
                detail: dirty.join("; "),
            });
        }
    }
    let mut report = ShutdownReport::default();
    for name in names {
        let path = l.path(&name);
        if path.exists() && !git::is_worktree_of(&project.path, &path) {
            // Not ours (any more): never delete what we did not create.
            report.left.push(path);
            l.pool.workspaces.remove(&name);
            continue;
        }
        let step = progress::step(format!("removing workspace {name}"));
        l.discard(&name);
        step.done(format!("removed workspace {name}"));
        report.removed.push(name);
        l.save()?;
    }
    git::worktree_prune(&project.path)?;
    l.save()?;
    if l.pool.workspaces.is_empty() {
        let dir = home.workspaces_dir();
        let only_ours = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.flatten().all(|e| {
                    let n = e.file_name();
                    n == ".pool.json" || n == ".pool.lock"
                })
            })
            .unwrap_or(false);
        if only_ours {
            let _ = std::fs::remove_file(home.pool_file());
            let _ = std::fs::remove_file(home.pool_lock());
            report.pool_dir_removed = std::fs::remove_dir(&dir).is_ok();
        }
    }
    Ok(report)
}
