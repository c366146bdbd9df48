//! Worktrees: add, remove and prune them (one at a time per repository), and what
//! releasing one needs: its state before a reset, the reset and the clean.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::setup::SetupOutput;
use super::{open, run_ok};
use crate::error::{OrangeError, Result};

/// Worktree changes of one repository, one at a time: `git worktree add` reads every other
/// worktree's metadata and fails on one being written at the same moment. The lock file
/// lives in the repository's git dir (`orange-worktrees.lock`).
fn worktree_lock(repo_path: &Path) -> Result<crate::adapters::store::LockGuard> {
    let common = open(repo_path)?.commondir().to_path_buf();
    crate::adapters::store::LockGuard::acquire(&common.join("orange-worktrees.lock"))
}

/// `git worktree add --detach <path> <base>`.
pub fn worktree_add_detached(repo_path: &Path, path: &Path, base: &str) -> Result<()> {
    let _lock = worktree_lock(repo_path)?;
    run_ok(
        repo_path,
        [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--detach"),
            OsStr::new("--quiet"),
            path.as_os_str(),
            OsStr::new(base),
        ],
    )
    .map(|_| ())
}

/// `git worktree add -b <branch> <path> <base>`: a dedicated worktree on a new branch.
pub fn worktree_add_branch(repo_path: &Path, path: &Path, branch: &str, base: &str) -> Result<()> {
    let _lock = worktree_lock(repo_path)?;
    run_ok(
        repo_path,
        [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            // No upstream: writing branch.<name>.merge to .git/config races with other
            // lanes being created at the same time (config.lock), and a lane branch is
            // not meant to track the default branch anyway.
            OsStr::new("--no-track"),
            OsStr::new("-b"),
            OsStr::new(branch),
            path.as_os_str(),
            OsStr::new(base),
        ],
    )
    .map(|_| ())
}

/// `git worktree remove --force --force` (also removes a locked worktree).
pub fn worktree_remove(repo_path: &Path, path: &Path) -> Result<()> {
    let _lock = worktree_lock(repo_path)?;
    run_ok(
        repo_path,
        [
            OsStr::new("worktree"),
            OsStr::new("remove"),
            OsStr::new("--force"),
            OsStr::new("--force"),
            path.as_os_str(),
        ],
    )
    .map(|_| ())
}

pub fn worktree_prune(repo_path: &Path) -> Result<()> {
    let _lock = worktree_lock(repo_path)?;
    run_ok(repo_path, ["worktree", "prune"]).map(|_| ())
}

/// Is `path` a linked worktree whose `.git` file points into `repo_path`'s git dir?
pub fn is_worktree_of(repo_path: &Path, path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path.join(".git")) else {
        return false;
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir: ") else {
        return false;
    };
    let common = repo_path
        .join(".git")
        .canonicalize()
        .unwrap_or_else(|_| repo_path.join(".git"));
    let gitdir = PathBuf::from(gitdir);
    let gitdir = gitdir.canonicalize().unwrap_or(gitdir);
    gitdir.starts_with(common.join("worktrees"))
}

/// Untracked (not ignored) paths in a worktree, as `git status` names them
/// (a directory with a trailing `/`).
pub fn untracked(path: &Path) -> Result<Vec<String>> {
    let status = run_ok(
        path,
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal"],
    )?;
    Ok(status
        .split('\0')
        .filter_map(|e| e.strip_prefix("?? "))
        .map(str::to_string)
        .collect())
}

/// What release needs to know about a worktree, from one `git status` and a look at HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Why resetting would lose work: uncommitted changes (staged, unstaged, untracked),
    /// commits on a detached HEAD that no ref holds, or an operation in progress.
    pub unsaved: Option<String>,
    /// Detached at the base commit with nothing to clean: release has nothing to reset.
    pub pristine: bool,
    /// A rebase, merge, cherry-pick, revert or am stopped half-way.
    pub in_progress: Option<&'static str>,
}

/// Inspect a worktree before reset. What the setup command made is not the task's work:
/// with its record (`setup`), what is still as it left it (a file it made with other
/// content is work); without one, the untracked paths in `keep`, by name.
pub fn inspect(
    path: &Path,
    base: &str,
    keep: &[String],
    setup: Option<&SetupOutput>,
) -> Result<Inspection> {
    let untracked = match setup {
        Some(_) => "--untracked-files=all",
        None => "--untracked-files=normal",
    };
    let status = run_ok(path, ["status", "--porcelain=v1", "-z", untracked])?;
    let repo = open(path)?;
    let head_tree = setup.and_then(|_| repo.head().ok()?.peel_to_tree().ok());
    let setups = |e: &str| -> bool {
        let (xy, p) = e.split_at(3.min(e.len()));
        match (setup, xy) {
            (Some(s), "?? ") => s.untracked_as_left(path, p),
            (Some(s), _) if xy.starts_with(' ') && s.files.contains_key(p) => {
                let head = head_tree
                    .as_ref()
                    .and_then(|t| t.get_path(Path::new(p)).ok())
                    .map(|e| e.id());
                s.tracked_as_left(path, p, head)
            }
            (Some(_), _) => false,
            (None, "?? ") => keep.iter().any(|k| k == p),
            (None, _) => false,
        }
    };
    let entries: Vec<&str> = status
        .split('\0')
        .filter(|s| s.len() > 3)
        .filter(|e| !setups(e))
        .collect();
    let in_progress = operation_in_progress(repo.path());
    let mut unsaved = None;
    if !entries.is_empty() {
        let mut shown: Vec<String> = entries
            .iter()
            .take(5)
            .map(|e| e.trim().to_string())
            .collect();
        if entries.len() > 5 {
            shown.push(format!("and {} more", entries.len() - 5));
        }
        unsaved = Some(format!("{} changed: {}", entries.len(), shown.join(", ")));
    } else if let Some(op) = in_progress {
        unsaved = Some(format!("a {op} is in progress"));
    }
    let head = repo.head().ok();
    let detached = head.as_ref().is_some_and(|h| !h.is_branch());
    let head_oid = head.as_ref().and_then(|h| h.target());
    let base_oid = repo
        .revparse_single(base)
        .ok()
        .and_then(|o| o.peel_to_commit().ok())
        .map(|c| c.id());
    let at_base = head_oid.is_some() && head_oid == base_oid;
    if unsaved.is_none() && detached && !at_base {
        // A detached HEAD that moved past the base may hold commits nothing references.
        let head_oid = head_oid.unwrap();
        let refs = repo
            .references()
            .map_err(|e| OrangeError::BackendCommandFailed(e.message().to_string()))?;
        let held = refs.flatten().any(|r| {
            r.resolve()
                .ok()
                .and_then(|r| r.target())
                .is_some_and(|oid| {
                    oid == head_oid || repo.graph_descendant_of(oid, head_oid).unwrap_or(false)
                })
        });
        if !held {
            unsaved = Some(format!(
                "detached HEAD {} holds commits no branch references",
                &head_oid.to_string()[..12]
            ));
        }
    }
    Ok(Inspection {
        pristine: entries.is_empty() && in_progress.is_none() && detached && at_base,
        unsaved,
        in_progress,
    })
}

/// Which multi-step operation a (worktree) git dir is in the middle of, if any.
fn operation_in_progress(gitdir: &Path) -> Option<&'static str> {
    [
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ]
    .iter()
    .find(|(f, _)| gitdir.join(f).exists())
    .map(|(_, op)| *op)
}

/// What makes a worktree unsafe to reset (see [`Inspection::unsaved`]); `None` when clean.
pub fn unsaved_work(
    path: &Path,
    base: &str,
    keep: &[String],
    setup: Option<&SetupOutput>,
) -> Result<Option<String>> {
    Ok(inspect(path, base, keep, setup)?.unsaved)
}

/// Return a worktree to `base`: quit a half-done operation, detach with `--force` (so no
/// task branch moves, and index and files match the base), then clean. Untracked paths
/// in `keep` (made by the setup command) survive the clean.
pub fn detach_reset_clean(
    path: &Path,
    base: &str,
    keep: &[String],
    in_progress: Option<&str>,
) -> Result<()> {
    match in_progress {
        Some("rebase") => drop(run_ok(path, ["rebase", "--quit"])),
        Some("cherry-pick") => drop(run_ok(path, ["cherry-pick", "--quit"])),
        Some("revert") => drop(run_ok(path, ["revert", "--quit"])),
        _ => {}
    }
    // `checkout --force --detach` resets index and files too (and clears MERGE_HEAD):
    // a separate `reset --hard` measured ~25% of release and changed nothing.
    run_ok(path, ["checkout", "--quiet", "--force", "--detach", base])?;
    let mut clean = vec!["clean".to_string(), "-fdq".to_string()];
    for k in keep {
        clean.push("-e".into());
        clean.push(format!("/{}", glob_escape(k)));
    }
    run_ok(path, &clean)?;
    Ok(())
}

fn glob_escape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A worktree's own git directory (`<repo>/.git/worktrees/<name>`) and the repository's
/// common one (`<repo>/.git`), absolute (git2: no process).
pub fn git_dirs(path: &Path) -> Result<(PathBuf, PathBuf)> {
    let repo = open(path)?;
    let abs = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    Ok((abs(repo.path()), abs(repo.commondir())))
}
