//! The warm pool of git worktrees (seeds 000, 002, 004; REFERENCE.md §1).
//!
//! State is `workspaces/.pool.json` in seed 000's format (plus a few fields), changed only
//! under `workspaces/.pool.lock`. A slot being created is journalled as `creating` before
//! `git worktree add` runs, so a crash at any point leaves a record the next command heals.
//!
//! This file: reading the pool without the lock, and binding and releasing one workspace.
//! record.rs: the records and how commands see them. slots.rs: one project's pool under
//! its lock (what happens to a slot). maintain.rs: the whole pool at once (init, gc,
//! shutdown).

mod maintain;
mod record;
mod slots;

pub use self::maintain::{
    gc, in_use_or_unpushed, init, shutdown, GcReport, InitReport, ShutdownReport,
};
use self::record::view;
pub use self::record::{
    load, parse_name, setup_output, PoolFile, ReleaseOutcome, Slot, SlotStatus, TaskLookup,
    Workspace, EXCLUDED_FILES,
};
use self::slots::Locked;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::adapters::git;
use crate::adapters::progress;
use crate::adapters::store::Home;
use crate::error::{OrangeError, Result};
use crate::execution::repo::Project;

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

/// Bind a workspace to each of `labels`, in order, under one hold of the pool's lock (a
/// group's members), the pool file written once for all: each its workspace, or
/// `pool_exhausted` for it and every label after it once the pool is full. Never waits.
pub fn acquire_many(
    home: &Home,
    project: &Project,
    labels: &[&str],
    tasks: &dyn TaskLookup,
) -> Result<Vec<Result<Workspace>>> {
    for l in labels {
        validate_label(l)?;
    }
    let mut l = Locked::open(home, project)?;
    let mut out = Vec::with_capacity(labels.len());
    for label in labels {
        let bound = match out.last() {
            Some(Err(OrangeError::PoolExhausted {
                project,
                bound,
                size,
            })) => Err(OrangeError::PoolExhausted {
                project: project.clone(),
                bound: *bound,
                size: *size,
            }),
            _ => l
                .bind(label, tasks)
                .map(|name| view(home, &name, &l.pool.workspaces[&name])),
        };
        out.push(bound);
    }
    if out.iter().any(Result::is_ok) {
        l.save()?;
    }
    Ok(out)
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

/// What makes workspace `name` (at `path`) unsafe to reset against `base`, read without
/// the lock: its unsaved work, without what its setup command left there as it left it.
pub fn unsaved_work(home: &Home, name: &str, path: &Path, base: &str) -> Result<Option<String>> {
    let keep = load(home)?
        .workspaces
        .get(name)
        .map(|s| s.keep.clone())
        .unwrap_or_default();
    git::unsaved_work(path, base, &keep, setup_output(home, name)?.as_ref())
}

/// The bound workspaces of `project`: (name, label).
pub fn bindings(home: &Home, project: &str) -> Result<Vec<(String, String)>> {
    Ok(bindings_in(&load(home)?, project))
}

/// [`bindings`] in a pool file already read.
pub fn bindings_in(pool: &PoolFile, project: &str) -> Vec<(String, String)> {
    pool.workspaces
        .iter()
        .filter(|(_, s)| s.project == project && s.status == SlotStatus::Bound)
        .filter_map(|(n, s)| Some((n.clone(), s.task.clone()?)))
        .collect()
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
