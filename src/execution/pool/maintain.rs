//! The whole pool of a project at once: [`init`] (pre-create, heal, adopt), [`gc`] (give
//! back the workspaces of tasks that ended) and [`shutdown`] (remove them all).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::adapters::progress;
use crate::adapters::store::Home;
use crate::error::{OrangeError, Result};
use crate::execution::repo::Project;
use crate::{adapters::git, execution::provision};

use super::record::{parse_name, setup_output, view, Slot, SlotStatus, TaskLookup, Workspace};
use super::slots::Locked;

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
            let dirty = git::unsaved_work(&path, &l.base()?, &[], None)?.is_some();
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
                    setup_output(home, name)?.as_ref(),
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
        // The setup records' folder, empty once every slot is gone.
        let _ = std::fs::remove_dir(dir.join(".setup"));
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
