//! A task's change list: what it changed against its project's default branch, from the
//! one function every view of it uses — the sidebar's Files and +/− counts, `task show`,
//! `task merge --dry-run`. In its workspace when it has one (commits, staged, unstaged
//! and untracked files, without what the workspace's setup command left there as it left
//! it), else its branch's commits. Line counts are cached between calls under `run/`.

use std::path::{Path, PathBuf};

use crate::adapters::git;
use crate::adapters::store::Home;
use crate::error::{OrangeError, Result};
use crate::execution::pool;
use crate::orchestration::project;
use crate::orchestration::task::Task;
use crate::ui::diff::{branch_diff, branch_diff_committed, BranchDiff, LineCache};

/// What git says about a task: its changes, or why there are none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitPart {
    pub diff: Option<BranchDiff>,
    pub error: Option<String>,
}

/// [`task_changes`], or why there are none: what every view shows.
pub fn git_part(home: &Home, task: &Task) -> GitPart {
    match task_changes(home, task) {
        Ok(diff) => GitPart { diff, error: None },
        Err(e) => GitPart {
            diff: None,
            error: Some(e.to_string()),
        },
    }
}

/// The task's changes against its project's default branch; none when it has neither a
/// workspace nor a branch yet.
pub fn task_changes(home: &Home, task: &Task) -> Result<Option<BranchDiff>> {
    let project = project::get(home, &task.project)?;
    let base = git::base_ref(&project.path, &project.default_branch)?;
    let cache_path = line_cache_path(home, task);
    let mut cache: LineCache = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let diff = if let Some(path) = task.workspace.as_deref().filter(|w| w.starts_with('/')) {
        // A lane: its dedicated worktree, by path (no setup command runs there).
        branch_diff(Path::new(path), &base, None, Some(&mut cache))?
    } else if let Some(ws) = &task.workspace {
        let ws = pool::find(home, ws)?;
        if !ws.path.join(".git").exists() {
            return Err(OrangeError::WorkspaceNotFound(format!(
                "{}: {} is gone",
                ws.name,
                ws.path.display()
            )));
        }
        let setup = pool::setup_output(home, &ws.name)?;
        branch_diff(&ws.path, &base, setup.as_ref(), Some(&mut cache))?
    } else if git::local_branch_exists(&project.path, &task.branch) {
        branch_diff_committed(&project.path, &task.branch, &base, Some(&mut cache))?
    } else {
        return Ok(None);
    };
    if cache.dirty {
        save_line_cache(&cache_path, &cache);
    }
    Ok(Some(diff))
}

/// Where a task's line counts are kept between calls (a cache: losing it costs time only).
pub fn line_cache_path(home: &Home, task: &Task) -> PathBuf {
    home.sidebar_cache(&task.project, &task.id)
}

/// Best effort and without fsync: a temp file renamed over the old one, so a reader never
/// sees half a file.
fn save_line_cache(path: &Path, cache: &LineCache) {
    if let Ok(data) = serde_json::to_vec(cache) {
        let _ = crate::adapters::store::write_cache(path, &data);
    }
}

/// The text of the task's diff (unified, as `git diff` prints it) of exactly the files its
/// change list names — without what the workspace's setup left, with its untracked files —
/// against the same merge base: what a review file shows. Empty: no change.
pub fn task_patch(home: &Home, task: &Task) -> Result<String> {
    let Some(diff) = task_changes(home, task)? else {
        return Ok(String::new());
    };
    let project = project::get(home, &task.project)?;
    let worktree: Option<PathBuf> = match task.workspace.as_deref() {
        Some(p) if p.starts_with('/') => Some(PathBuf::from(p)),
        Some(ws) => Some(pool::find(home, ws)?.path),
        None => None,
    };
    let mut tracked = Vec::new();
    let mut untracked = Vec::new();
    for f in &diff.files {
        if f.untracked {
            untracked.push(f.path.clone());
        } else {
            tracked.push(f.path.clone());
            tracked.extend(f.from.clone());
        }
    }
    git::patch(
        &project.path,
        worktree.as_deref(),
        &diff.merge_base,
        &task.branch,
        &tracked,
        &untracked,
    )
}

/// The workspace's file at `path` (relative), as it is now: for finding review anchors
/// again. `None` when the task has no workspace or the file is gone.
pub fn workspace_file(home: &Home, task: &Task, path: &str) -> Option<String> {
    let root = match task.workspace.as_deref()? {
        p if p.starts_with('/') => PathBuf::from(p),
        ws => pool::find(home, ws).ok()?.path,
    };
    if Path::new(path)
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    std::fs::read(root.join(path))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}
