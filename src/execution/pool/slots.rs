//! One project's pool with `workspaces/.pool.lock` held ([`Locked`]): what happens to a
//! slot (create, recycle, discard, heal, bind, release), each change saved at once.

use std::path::{Path, PathBuf};

use crate::adapters::progress;
use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::execution::repo::Project;
use crate::{adapters::git, adapters::shell, execution::provision};

use super::record::{
    load, parse_name, save, save_setup, setup_output, PoolFile, ReleaseOutcome, Slot, SlotStatus,
    TaskLookup, EXCLUDED_FILES,
};
use crate::adapters::git::setup::SetupOutput;

/// The pool of one project, with the lock held for as long as the value lives.
pub(super) struct Locked<'a> {
    home: &'a Home,
    project: &'a Project,
    pub(super) pool: PoolFile,
    base: Option<String>,
    _lock: LockGuard,
}

impl<'a> Locked<'a> {
    pub(super) fn open(home: &'a Home, project: &'a Project) -> Result<Locked<'a>> {
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

    pub(super) fn save(&self) -> Result<()> {
        save(self.home, &self.pool)
    }

    pub(super) fn base(&mut self) -> Result<String> {
        if self.base.is_none() {
            self.base = Some(git::base_ref(
                &self.project.path,
                &self.project.default_branch,
            )?);
        }
        Ok(self.base.clone().unwrap())
    }

    pub(super) fn names(&self, status: Option<SlotStatus>) -> Vec<String> {
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

    pub(super) fn path(&self, name: &str) -> PathBuf {
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
    pub(super) fn create_slot(&mut self) -> Result<String> {
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
        let keep = match self
            .populate(&name, &path, &base, &step)
            .and_then(|(keep, setup)| save_setup(self.home, &name, setup.as_ref()).map(|_| keep))
        {
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
    /// output reported to `step`). Returns the untracked paths the setup command left (by
    /// directory, for the clean at release) and the record of what it left (for the task
    /// change lists that leave it out); none without a setup command.
    fn populate(
        &self,
        name: &str,
        path: &Path,
        base: &str,
        step: &progress::Step,
    ) -> Result<(Vec<String>, Option<SetupOutput>)> {
        git::worktree_add_detached(&self.project.path, path, base)?;
        // Gitignored files from the main repository first, then the setup command.
        provision::provision(
            &self.project.path,
            path,
            &self.project.copy,
            &self.project.symlink,
        )?;
        let Some(cmd) = &self.project.setup_cmd else {
            return Ok((vec![], None));
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
        Ok((git::untracked(path)?, Some(git::setup::record(path)?)))
    }

    /// Remove a slot's worktree and record. Only called on slots orange created.
    pub(super) fn discard(&mut self, name: &str) {
        let path = self.path(name);
        if path.exists() && git::worktree_remove(&self.project.path, &path).is_err() {
            let _ = std::fs::remove_dir_all(&path);
        }
        let _ = git::worktree_prune(&self.project.path);
        self.pool.workspaces.remove(name);
        let _ = save_setup(self.home, name, None);
    }

    /// Remove and re-add a slot's worktree at the base, keeping its name and record.
    pub(super) fn recycle(&mut self, name: &str) -> Result<()> {
        let base = self.base()?;
        let path = self.path(name);
        if path.exists() && git::worktree_remove(&self.project.path, &path).is_err() {
            std::fs::remove_dir_all(&path).map_err(|e| {
                OrangeError::io(format!("removing broken workspace {}", path.display()), e)
            })?;
        }
        git::worktree_prune(&self.project.path)?;
        let step = progress::step(format!("recreating workspace {name}"));
        let (keep, setup) = self.populate(name, &path, &base, &step)?;
        save_setup(self.home, name, setup.as_ref())?;
        self.pool.workspaces.get_mut(name).unwrap().keep = keep;
        step.done(format!("recreated workspace {name}"));
        Ok(())
    }

    /// Heal what a crash can leave: `creating` records (half-made slots) are discarded.
    pub(super) fn heal_creating(&mut self) -> Result<Vec<String>> {
        let stale = self.names(Some(SlotStatus::Creating));
        for name in &stale {
            self.discard(name);
        }
        if !stale.is_empty() {
            self.save()?;
        }
        Ok(stale)
    }

    pub(super) fn is_intact(&self, name: &str) -> bool {
        let path = self.path(name);
        git::is_worktree_of(&self.project.path, &path)
    }

    /// Bind the first usable available slot, creating one lazily under the size limit.
    pub(super) fn acquire(&mut self, label: &str, tasks: &dyn TaskLookup) -> Result<String> {
        let name = self.bind(label, tasks)?;
        self.save()?;
        Ok(name)
    }

    /// [`Self::acquire`] without saving the binding: the caller saves once for several
    /// (a group's members: one write of the pool file instead of one each).
    pub(super) fn bind(&mut self, label: &str, tasks: &dyn TaskLookup) -> Result<String> {
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
        Ok(name)
    }

    /// Return a bound slot to the pool (see REFERENCE.md §1 "Release").
    pub(super) fn release(&mut self, name: &str, force: bool) -> Result<ReleaseOutcome> {
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
        let setup = setup_output(self.home, name)?;
        let outcome = if !self.is_intact(name) {
            self.recycle(name)?;
            ReleaseOutcome::Recreated
        } else {
            let state = git::inspect(&path, &base, &keep, setup.as_ref())?;
            if let (false, Some(detail)) = (force, state.unsaved.clone()) {
                return Err(OrangeError::WorktreeDirty { path, detail });
            }
            let reset = if state.pristine {
                Ok(())
            } else {
                git::detach_reset_clean(&path, &base, &keep, state.in_progress)
            };
            // The next task starts from what the setup left, or the setup runs again: a
            // setup file this task changed or deleted would show in the next one's changes.
            let drift = match (&reset, &setup) {
                (Ok(()), Some(s)) => s
                    .drift(&path)
                    .unwrap_or_else(|e| vec![format!("(unreadable: {e})")]),
                _ => vec![],
            };
            match reset {
                Ok(()) if !drift.is_empty() => {
                    self.recycle(name)?;
                    ReleaseOutcome::SetUpAgain(drift)
                }
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
