//! The git adapter: every git operation orange performs goes through here.
//! Reads use git2 where it is as fast as the CLI; worktree add/remove, reset, clean and
//! fetch use the `git` CLI (git2 cannot add a detached worktree in one call).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{OrangeError, Result};

/// Variables that would point git at another repository than the one we name.
const GIT_ENV_OVERRIDES: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

fn git_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    for v in GIT_ENV_OVERRIDES {
        cmd.env_remove(v);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    cmd
}

fn run<I, S>(dir: &Path, args: I) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = git_cmd(dir);
    cmd.args(args);
    cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            OrangeError::BackendNotFound("git is not on PATH".into())
        } else {
            OrangeError::io("running git", e)
        }
    })
}

/// Run git and require success; the error carries git's own message.
fn run_ok<I, S>(dir: &Path, args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = run(dir, &args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let shown: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        Err(OrangeError::BackendCommandFailed(format!(
            "git {} failed in {}: {}",
            shown.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Run `git ARGS` in `dir` and require success (the CLI, for what git2 does not do: the
/// demo's sandbox repository is made this way).
pub fn run_in(dir: &Path, args: &[&str]) -> Result<()> {
    run_ok(dir, args).map(|_| ())
}

fn open(path: &Path) -> Result<git2::Repository> {
    git2::Repository::open(path).map_err(|e| {
        OrangeError::BackendCommandFailed(format!(
            "opening git repository {}: {}",
            path.display(),
            e.message()
        ))
    })
}

/// The top-level directory of the (main) repository containing `path`.
/// A linked worktree or a bare repository is refused with a clear error.
pub fn main_toplevel(path: &Path) -> Result<PathBuf> {
    let repo = git2::Repository::discover(path).map_err(|_| {
        OrangeError::invalid(format!("{} is not inside a git repository", path.display()))
    })?;
    if repo.is_bare() {
        return Err(OrangeError::invalid(format!(
            "{} is a bare repository; orange needs a repository with a working tree",
            path.display()
        )));
    }
    let workdir = repo
        .workdir()
        .expect("non-bare repo has a workdir")
        .to_path_buf();
    if repo.is_worktree() {
        let main = repo
            .commondir()
            .parent()
            .unwrap_or(repo.commondir())
            .to_path_buf();
        return Err(OrangeError::invalid(format!(
            "{} is a linked worktree; register the main repository {} instead",
            workdir.display(),
            main.display()
        )));
    }
    Ok(workdir.canonicalize().unwrap_or(workdir))
}

/// The default branch: origin/HEAD, else `main`, else `master`, else the current branch.
pub fn default_branch(repo_path: &Path) -> Result<String> {
    let repo = open(repo_path)?;
    if let Ok(r) = repo.find_reference("refs/remotes/origin/HEAD") {
        if let Some(target) = r.symbolic_target() {
            if let Some(b) = target.strip_prefix("refs/remotes/origin/") {
                return Ok(b.to_string());
            }
        }
    }
    for b in ["main", "master"] {
        if repo.find_reference(&format!("refs/heads/{b}")).is_ok()
            || repo
                .find_reference(&format!("refs/remotes/origin/{b}"))
                .is_ok()
        {
            return Ok(b.to_string());
        }
    }
    if let Ok(head) = repo.head() {
        if head.is_branch() {
            if let Some(name) = head.shorthand() {
                return Ok(name.to_string());
            }
        }
    }
    Ok("main".to_string())
}

/// Is `name` acceptable to git as a branch name (`git check-ref-format --branch`)?
pub fn valid_branch_name(name: &str) -> bool {
    !name.starts_with('-') && git2::Branch::name_is_valid(name).unwrap_or(false)
}

/// The ref worktrees start from: `origin/<branch>` when that remote ref exists, else
/// the local branch. Errors when neither resolves to a commit.
pub fn base_ref(repo_path: &Path, branch: &str) -> Result<String> {
    let repo = open(repo_path)?;
    for candidate in [
        format!("refs/remotes/origin/{branch}"),
        format!("refs/heads/{branch}"),
    ] {
        if let Ok(r) = repo.find_reference(&candidate) {
            if r.peel_to_commit().is_ok() {
                let short = candidate
                    .strip_prefix("refs/remotes/")
                    .or_else(|| candidate.strip_prefix("refs/heads/"))
                    .unwrap()
                    .to_string();
                return Ok(short);
            }
        }
    }
    Err(OrangeError::invalid(format!(
        "base branch {branch:?} of {} resolves to no commit (neither origin/{branch} nor {branch} exists); set it with --default-branch",
        repo_path.display()
    )))
}

/// The commit id a ref names.
pub fn rev_parse(repo_path: &Path, rev: &str) -> Result<String> {
    let repo = open(repo_path)?;
    let obj = repo
        .revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| {
            OrangeError::invalid(format!(
                "{rev:?} is not a commit in {}",
                repo_path.display()
            ))
        })?;
    Ok(obj.id().to_string())
}

/// Worktree changes of one repository, one at a time: `git worktree add` reads every other
/// worktree's metadata and fails on one being written at the same moment. The lock file
/// lives in the repository's git dir (`orange-worktrees.lock`).
fn worktree_lock(repo_path: &Path) -> Result<crate::adapters::store::LockGuard> {
    let common = open(repo_path)?.commondir().to_path_buf();
    crate::adapters::store::LockGuard::acquire(&common.join("orange-worktrees.lock"))
}

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

/// Paths of the repository's linked worktrees (canonical where they still exist).
pub fn worktree_list(repo_path: &Path) -> Result<Vec<PathBuf>> {
    let out = run_ok(repo_path, ["worktree", "list", "--porcelain", "-z"])?;
    Ok(out
        .split('\0')
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .skip(1) // the main worktree comes first
        .collect())
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

/// Inspect a worktree before reset. `keep` lists untracked paths the setup command
/// made: they are not the task's work.
pub fn inspect(path: &Path, base: &str, keep: &[String]) -> Result<Inspection> {
    let status = run_ok(
        path,
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal"],
    )?;
    let entries: Vec<&str> = status
        .split('\0')
        .filter(|s| s.len() > 3)
        .filter(|e| {
            !e.strip_prefix("?? ")
                .is_some_and(|p| keep.iter().any(|k| k == p))
        })
        .collect();
    let repo = open(path)?;
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
pub fn unsaved_work(path: &Path, base: &str, keep: &[String]) -> Result<Option<String>> {
    Ok(inspect(path, base, keep)?.unsaved)
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

/// Best-effort `git fetch origin <branch>`; returns the error text on failure.
pub fn fetch(repo_path: &Path, branch: &str) -> Option<String> {
    if !has_remote(repo_path, "origin") {
        return None;
    }
    match run_ok(
        repo_path,
        ["fetch", "--quiet", "--no-tags", "origin", branch],
    ) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

pub fn has_remote(repo_path: &Path, name: &str) -> bool {
    open(repo_path)
        .map(|r| r.find_remote(name).is_ok())
        .unwrap_or(false)
}

/// Make sure `.git/info/exclude` of the main repository lists `patterns`
/// (worktrees share it, so TASK.md and friends never show as untracked).
pub fn ensure_excluded(repo_path: &Path, patterns: &[&str]) -> Result<()> {
    let repo = open(repo_path)?;
    let info = repo.commondir().join("info");
    std::fs::create_dir_all(&info)
        .map_err(|e| OrangeError::io(format!("creating {}", info.display()), e))?;
    let file = info.join("exclude");
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    let missing: Vec<&&str> = patterns
        .iter()
        .filter(|p| !current.lines().any(|l| l.trim() == **p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# added by orange\n");
    for p in missing {
        text.push_str(p);
        text.push('\n');
    }
    std::fs::write(&file, text)
        .map_err(|e| OrangeError::io(format!("writing {}", file.display()), e))
}

/// Does `refs/heads/<branch>` exist?
pub fn local_branch_exists(repo_path: &Path, branch: &str) -> bool {
    open(repo_path).is_ok_and(|r| r.find_reference(&format!("refs/heads/{branch}")).is_ok())
}

/// Does `refs/remotes/origin/<branch>` exist?
pub fn remote_branch_exists(repo_path: &Path, branch: &str) -> bool {
    open(repo_path).is_ok_and(|r| {
        r.find_reference(&format!("refs/remotes/origin/{branch}"))
            .is_ok()
    })
}

/// The worktree (main or linked) that has `branch` checked out, if any.
pub fn branch_checked_out_at(repo_path: &Path, branch: &str) -> Result<Option<PathBuf>> {
    let out = run_ok(repo_path, ["worktree", "list", "--porcelain", "-z"])?;
    let want = format!("branch refs/heads/{branch}");
    let mut current: Option<PathBuf> = None;
    for field in out.split('\0') {
        if let Some(p) = field.strip_prefix("worktree ") {
            current = Some(PathBuf::from(p));
        } else if field == want {
            return Ok(current);
        }
    }
    Ok(None)
}

/// Put `branch` in the worktree at `path`: the local branch when it exists, else a new
/// one tracking `origin/<branch>` when that exists, else a new one at the current HEAD.
pub fn checkout_task_branch(repo_path: &Path, path: &Path, branch: &str) -> Result<&'static str> {
    if local_branch_exists(repo_path, branch) {
        run_ok(path, ["checkout", "--quiet", branch])?;
        Ok("existing")
    } else if remote_branch_exists(repo_path, branch) {
        let remote = format!("origin/{branch}");
        run_ok(
            path,
            ["checkout", "--quiet", "--track", "-b", branch, &remote],
        )?;
        Ok("remote")
    } else {
        run_ok(path, ["checkout", "--quiet", "-b", branch])?;
        Ok("new")
    }
}

/// The branch checked out at `path`, `None` when detached.
pub fn current_branch(path: &Path) -> Result<Option<String>> {
    let repo = open(path)?;
    let head = match repo.head() {
        Ok(h) => h,
        Err(_) => return Ok(None),
    };
    Ok(head
        .is_branch()
        .then(|| head.shorthand().unwrap_or_default().to_string()))
}

/// `git branch -m old new` run in `path`.
pub fn rename_branch(path: &Path, old: &str, new: &str) -> Result<()> {
    run_ok(path, ["branch", "-m", old, new]).map(|_| ())
}

/// Commit id of `rev` in `path`.
pub fn head_commit(path: &Path) -> Result<String> {
    rev_parse(path, "HEAD")
}

/// Merge `branch` into `target` (the default branch). When `target` is checked out in the
/// main worktree, `git merge` runs there; a fast-forward of a branch checked out nowhere
/// updates the ref directly. Returns the new commit of `target`.
pub fn merge_into(repo_path: &Path, target: &str, branch: &str, ff_only: bool) -> Result<String> {
    match branch_checked_out_at(repo_path, target)? {
        Some(at) => {
            let at = at.canonicalize().unwrap_or(at);
            let msg = format!("Merge branch '{branch}'");
            if ff_only {
                run_ok(&at, ["merge", "--quiet", "--ff-only", branch])?;
            } else {
                run_ok(&at, ["merge", "--quiet", "--no-ff", "-m", &msg, branch])?;
            }
            rev_parse(&at, "HEAD")
        }
        None if ff_only => {
            let spec = format!("refs/heads/{branch}:refs/heads/{target}");
            run_ok(repo_path, ["fetch", "--quiet", ".", &spec])?;
            rev_parse(repo_path, &format!("refs/heads/{target}"))
        }
        None => Err(OrangeError::invalid(format!(
            "a merge commit needs {target} checked out in {}; check it out there or use --strategy ff",
            repo_path.display()
        ))),
    }
}

/// Is every commit of `branch` already in `target`?
pub fn is_merged(repo_path: &Path, branch: &str, target: &str) -> Result<bool> {
    let repo = open(repo_path)?;
    let id = |rev: &str| {
        repo.revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map(|c| c.id())
            .ok()
    };
    let merged = match (id(branch), id(target)) {
        (Some(b), Some(t)) => b == t || repo.graph_descendant_of(t, b).unwrap_or(false),
        _ => false,
    };
    Ok(merged)
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

/// Commits on HEAD that no remote-tracking ref holds: `None` when the repository has no
/// remote (nothing could have been pushed), else the count (at most 1000 are counted).
pub fn unpushed_commits(path: &Path) -> Result<Option<usize>> {
    let repo = open(path)?;
    let remotes = repo.remotes().map(|r| r.len()).unwrap_or(0);
    if remotes == 0 {
        return Ok(None);
    }
    let Some(head) = repo.head().ok().and_then(|h| h.target()) else {
        return Ok(Some(0));
    };
    let mut walk = repo
        .revwalk()
        .map_err(|e| OrangeError::BackendCommandFailed(e.message().to_string()))?;
    walk.push(head)
        .map_err(|e| OrangeError::BackendCommandFailed(e.message().to_string()))?;
    if let Ok(refs) = repo.references_glob("refs/remotes/*") {
        for r in refs.flatten() {
            if let Some(oid) = r.resolve().ok().and_then(|r| r.target()) {
                let _ = walk.hide(oid);
            }
        }
    }
    Ok(Some(walk.take(1000).count()))
}

// ---- Reads for the sidebar (diff against the default branch, commit counts). ----
// @@ sidebar-additions @@

use std::collections::{BTreeMap, HashMap};

/// One path that differs between a task's base (the merge base with the default branch)
/// and its work: committed, staged, unstaged or untracked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangedFile {
    /// `M` modified, `A` added (untracked included), `D` deleted, `R` renamed,
    /// `T` type changed (file ↔ symlink), `U` unmerged (a conflict in progress).
    pub status: char,
    /// The path now (the new path of a rename).
    pub path: String,
    /// The old path of a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Not in the index yet (`git status`' `??`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untracked: bool,
}

/// What a task's branch changed against the default branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BranchDiff {
    /// The ref diffed against (`origin/main`, …).
    pub base: String,
    /// The merge base of HEAD (or the branch) and `base`.
    pub merge_base: String,
    /// Commits on HEAD that `base` does not have.
    pub commits: usize,
    /// Changed paths, sorted by path.
    pub files: Vec<ChangedFile>,
    /// Lines added and removed over all of `files` (binary files count none).
    pub added: usize,
    pub removed: usize,
}

/// Added and removed line counts already computed, by (old blob, new blob): a frame that
/// refreshes the same changes reads no file contents again. Only what the last diff used
/// is kept, so it stays as small as the diff.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineCache {
    #[serde(default)]
    pub counts: std::collections::HashMap<String, (usize, usize)>,
    /// Changed since loaded (worth writing back).
    #[serde(skip)]
    pub dirty: bool,
}

/// Fewer (remaining deletions × additions) pairs than this: look for renames of edited
/// files too. More (a mass change): exact renames only, like git's `diff.renameLimit`,
/// since comparing every pair is what costs there.
const INEXACT_RENAME_PAIRS: usize = 32 * 32;

/// Renamed-and-edited files count as renames from this similarity (percent), as in git.
const RENAME_SIMILARITY: usize = 50;

/// Files larger than this count no lines (as binary files do) and are not compared for
/// renames: reading them on every refresh would cost more than the number is worth.
const LINE_COUNT_MAX_BYTES: usize = 8 << 20;

fn git2_err(what: impl std::fmt::Display) -> impl Fn(git2::Error) -> OrangeError {
    move |e| OrangeError::BackendCommandFailed(format!("{what}: {}", e.message()))
}

fn peel_commit<'r>(repo: &'r git2::Repository, rev: &str) -> Result<git2::Commit<'r>> {
    repo.revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| {
            OrangeError::invalid(format!(
                "{rev:?} is not a commit in {}",
                repo.workdir().unwrap_or(repo.path()).display()
            ))
        })
}

/// Reads for display only: skip libgit2's re-hashing of every object it reads (the object
/// database's own checksums still apply). Process-wide; call it in read-only processes.
pub fn fast_reads() {
    git2::opts::strict_hash_verification(false);
}

/// Everything the worktree at `worktree` changed against `base_ref`'s merge base with
/// HEAD: commits, staged and unstaged changes and untracked files (what `git diff
/// --name-status <merge-base>` and `git status --porcelain` show together), with renames
/// and line counts.
///
/// One walk of the work tree: `git status` (its index preload runs in parallel, and it
/// measured faster than libgit2's single-threaded walk), started first and read while
/// libgit2 diffs the merge base's tree with HEAD's (trees only: no work-tree access).
/// `--no-optional-locks`: polling never takes the index lock an agent's own git needs.
pub fn branch_diff(
    worktree: &Path,
    base_ref: &str,
    cache: Option<&mut LineCache>,
) -> Result<BranchDiff> {
    let mut status = git_cmd(worktree);
    status
        .args([
            "--no-optional-locks",
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=dirty",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let status = std::thread::spawn(move || status.output());
    let repo = open(worktree)?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(git2_err(format!("reading HEAD of {}", worktree.display())))?;
    let base = peel_commit(&repo, base_ref)?;
    let (merge_base, commits, mut entries) = committed(&repo, &head, base.id())?;
    let out = status
        .join()
        .map_err(|_| OrangeError::BackendCommandFailed("git status panicked".into()))?
        .map_err(|e| OrangeError::io("running git status", e))?;
    if !out.status.success() {
        return Err(OrangeError::BackendCommandFailed(format!(
            "git status failed in {}: {}",
            worktree.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    apply_status(&mut entries, &out.stdout)?;
    finish(
        &repo,
        Some(worktree),
        base_ref,
        merge_base,
        commits,
        entries,
        cache,
    )
}

/// [`branch_diff`] for a branch that is checked out nowhere (a task without a
/// workspace): its committed changes only, read in the repository at `repo_path`.
pub fn branch_diff_committed(
    repo_path: &Path,
    branch: &str,
    base_ref: &str,
    cache: Option<&mut LineCache>,
) -> Result<BranchDiff> {
    let repo = open(repo_path)?;
    let tip = peel_commit(&repo, &format!("refs/heads/{branch}"))?;
    let base = peel_commit(&repo, base_ref)?;
    let (merge_base, commits, entries) = committed(&repo, &tip, base.id())?;
    finish(&repo, None, base_ref, merge_base, commits, entries, cache)
}

/// A blob (or link, or gitlink) with its mode.
type Obj = (git2::Oid, u32);

/// What a path is now.
#[derive(Debug, Clone, PartialEq)]
enum Now {
    Absent,
    /// Content known by id (HEAD's or the index's).
    Blob(git2::Oid, u32),
    /// Content in the work tree (not hashed), with its mode.
    File(u32),
    /// A conflict in progress.
    Conflict,
}

#[derive(Debug, Clone)]
struct Entry {
    /// What the merge base had at this path.
    base: Option<Obj>,
    now: Now,
    untracked: bool,
}

fn mode_kind(mode: u32) -> u32 {
    mode & 0o170000
}

fn is_blob_mode(mode: u32) -> bool {
    mode_kind(mode) == 0o100000
}

/// Merge base, commits ahead and the paths HEAD changed against the merge base (trees
/// only, no rename detection yet: that is done once on the final picture).
fn committed(
    repo: &git2::Repository,
    head: &git2::Commit<'_>,
    base: git2::Oid,
) -> Result<(git2::Oid, usize, BTreeMap<String, Entry>)> {
    // Unrelated histories have no merge base: then everything is compared with the base.
    let merge_base = repo.merge_base(head.id(), base).unwrap_or(base);
    let (commits, _) = repo
        .graph_ahead_behind(head.id(), base)
        .map_err(git2_err("counting commits"))?;
    let mut entries = BTreeMap::new();
    if merge_base != head.id() {
        let old = repo
            .find_commit(merge_base)
            .and_then(|c| c.tree())
            .map_err(git2_err("reading the merge base's tree"))?;
        let new = head.tree().map_err(git2_err("reading HEAD's tree"))?;
        let mut opts = git2::DiffOptions::new();
        opts.include_typechange(true);
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(git2_err("diffing the merge base with HEAD"))?;
        let side = |f: git2::DiffFile<'_>| f.exists().then(|| (f.id(), u32::from(f.mode())));
        for d in diff.deltas() {
            let Some(path) = d.new_file().path().or(d.old_file().path()) else {
                continue;
            };
            let now = match side(d.new_file()) {
                Some((id, mode)) => Now::Blob(id, mode),
                None => Now::Absent,
            };
            entries.insert(
                path.to_string_lossy().into_owned(),
                Entry {
                    base: side(d.old_file()),
                    now,
                    untracked: false,
                },
            );
        }
    }
    Ok((merge_base, commits, entries))
}

/// Lay `git status --porcelain=v2 -z --no-renames` over the committed changes.
fn apply_status(entries: &mut BTreeMap<String, Entry>, out: &[u8]) -> Result<()> {
    let bad =
        |r: &str| OrangeError::BackendCommandFailed(format!("unexpected git status record {r:?}"));
    let oid = |s: &str| git2::Oid::from_str(s).ok().filter(|o| !o.is_zero());
    let mode = |s: &str| u32::from_str_radix(s, 8).unwrap_or(0);
    for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        let (kind, rest) = rec.split_once(' ').ok_or_else(|| bad(&rec))?;
        match kind {
            "1" => {
                // XY sub mH mI mW hH hI path
                let f: Vec<&str> = rest.splitn(8, ' ').collect();
                if f.len() != 8 {
                    return Err(bad(&rec));
                }
                let xy = f[0].as_bytes();
                let (x, y) = (xy[0], xy.get(1).copied().unwrap_or(b'.'));
                let head = oid(f[5]).map(|o| (o, mode(f[2])));
                let now = if y == b'D' || (x == b'D' && y == b'.') {
                    Now::Absent
                } else if matches!(y, b'M' | b'T') {
                    Now::File(mode(f[4]))
                } else if matches!(x, b'A' | b'M' | b'T') {
                    match oid(f[6]) {
                        Some(o) => Now::Blob(o, mode(f[3])),
                        None => Now::File(mode(f[4])),
                    }
                } else {
                    match head {
                        Some((o, m)) => Now::Blob(o, m),
                        None => Now::Absent,
                    }
                };
                let e = entries.entry(f[7].to_string()).or_insert(Entry {
                    base: head,
                    now: Now::Absent,
                    untracked: false,
                });
                e.now = now;
            }
            "u" => {
                // XY sub m1 m2 m3 mW h1 h2 h3 path
                let f: Vec<&str> = rest.splitn(10, ' ').collect();
                if f.len() != 10 {
                    return Err(bad(&rec));
                }
                let e = entries.entry(f[9].to_string()).or_insert(Entry {
                    base: oid(f[6]).map(|o| (o, mode(f[2]))),
                    now: Now::Absent,
                    untracked: false,
                });
                e.now = Now::Conflict;
            }
            "?" => {
                let e = entries.entry(rest.to_string()).or_insert(Entry {
                    base: None,
                    now: Now::Absent,
                    untracked: false,
                });
                e.now = Now::File(0o100644);
                e.untracked = true;
            }
            // Ignored entries (not asked for) and anything newer: nothing to show.
            _ => {}
        }
    }
    Ok(())
}

/// One file of the final list, with what line counting needs.
struct Change {
    file: ChangedFile,
    base: Option<Obj>,
    now: Now,
}

/// Classify, find renames, count lines, drop what turned out unchanged.
fn finish(
    repo: &git2::Repository,
    workdir: Option<&Path>,
    base_ref: &str,
    merge_base: git2::Oid,
    commits: usize,
    entries: BTreeMap<String, Entry>,
    cache: Option<&mut LineCache>,
) -> Result<BranchDiff> {
    let mut changes: Vec<Change> = vec![];
    for (path, e) in entries {
        let status = match (&e.base, &e.now) {
            (_, Now::Conflict) => 'U',
            (None, Now::Absent) => continue,
            (None, _) => 'A',
            (Some(_), Now::Absent) => 'D',
            (Some((o, m)), Now::Blob(n, nm)) if o == n && m == nm => continue,
            (Some((_, m)), Now::Blob(_, nm) | Now::File(nm))
                if *nm != 0 && mode_kind(*m) != mode_kind(*nm) =>
            {
                'T'
            }
            (Some(_), _) => 'M',
        };
        changes.push(Change {
            file: ChangedFile {
                status,
                path,
                from: None,
                untracked: e.untracked,
            },
            base: e.base,
            now: e.now,
        });
    }
    let reader = Contents { repo, workdir };
    find_renames(&reader, &mut changes);
    let work: Vec<LineWork> = changes
        .iter()
        .enumerate()
        .filter_map(|(i, c)| LineWork::of(c, workdir, i))
        .collect();
    // Not `diff.stats()`: libgit2 looks up attributes and filters for every file there,
    // which measured 5× the cost of the diff itself on 1,000 changed files.
    let counted = count_lines(repo, &work, cache);
    // A path changed in a commit and changed back in the work tree is no change at all
    // (unless its mode changed: git shows an executable bit too).
    let mut same = vec![false; changes.len()];
    for c in &counted {
        same[c.file] = c.identical;
    }
    let mode_changed = |c: &Change| {
        let now = match c.now {
            Now::Blob(_, m) | Now::File(m) => m,
            _ => return false,
        };
        c.base.is_some_and(|(_, m)| m != now) && !c.file.untracked
    };
    let mut files: Vec<ChangedFile> = changes
        .into_iter()
        .zip(same)
        .filter(|(c, same)| !same || c.file.status == 'R' || mode_changed(c))
        .map(|(c, _)| c.file)
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(BranchDiff {
        base: base_ref.to_string(),
        merge_base: merge_base.to_string(),
        commits,
        files,
        added: counted.iter().map(|c| c.added).sum(),
        removed: counted.iter().map(|c| c.removed).sum(),
    })
}

/// Reads the two sides of a change.
struct Contents<'a> {
    repo: &'a git2::Repository,
    workdir: Option<&'a Path>,
}

impl Contents<'_> {
    fn blob(&self, oid: git2::Oid) -> Option<Vec<u8>> {
        let odb = self.repo.odb().ok()?;
        let o = odb.read(oid).ok()?;
        (o.len() <= LINE_COUNT_MAX_BYTES).then(|| o.data().to_vec())
    }

    fn file(&self, path: &str) -> Option<Vec<u8>> {
        let p = self.workdir?.join(path);
        let m = std::fs::symlink_metadata(&p).ok()?;
        (m.is_file() && m.len() as usize <= LINE_COUNT_MAX_BYTES)
            .then(|| std::fs::read(&p).ok())
            .flatten()
    }

    fn now(&self, c: &Change) -> Option<Vec<u8>> {
        match c.now {
            Now::Blob(o, m) if is_blob_mode(m) => self.blob(o),
            Now::File(m) if is_blob_mode(m) => self.file(&c.file.path),
            _ => None,
        }
    }

    /// The id the new side would have as a blob (hashing a work-tree file).
    fn now_id(&self, c: &Change) -> Option<git2::Oid> {
        match c.now {
            Now::Blob(o, _) => Some(o),
            Now::File(m) if is_blob_mode(m) => {
                let bytes = self.file(&c.file.path)?;
                git2::Oid::hash_object(git2::ObjectType::Blob, &bytes).ok()
            }
            _ => None,
        }
    }
}

/// Pair deleted paths with added ones: same content first (cheap: blob ids); then, while
/// few pairs are left, content at least [`RENAME_SIMILARITY`]% alike (by lines).
fn find_renames(reader: &Contents<'_>, changes: &mut Vec<Change>) {
    let gone: Vec<usize> = (0..changes.len())
        .filter(|&i| changes[i].file.status == 'D')
        .collect();
    let new: Vec<usize> = (0..changes.len())
        .filter(|&i| changes[i].file.status == 'A')
        .collect();
    if gone.is_empty() || new.is_empty() {
        return;
    }
    let mut by_id: HashMap<git2::Oid, Vec<usize>> = HashMap::new();
    for &d in gone.iter().rev() {
        if let Some((o, _)) = changes[d].base {
            by_id.entry(o).or_default().push(d);
        }
    }
    let mut pairs: Vec<(usize, usize)> = vec![];
    let mut paired_new = vec![];
    for &a in &new {
        let Some(id) = reader.now_id(&changes[a]) else {
            continue;
        };
        if let Some(d) = by_id.get_mut(&id).and_then(|v| v.pop()) {
            pairs.push((d, a));
            paired_new.push(a);
        }
    }
    let paired_gone: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    let gone: Vec<usize> = gone
        .into_iter()
        .filter(|d| !paired_gone.contains(d))
        .collect();
    let new: Vec<usize> = new
        .into_iter()
        .filter(|a| !paired_new.contains(a))
        .collect();
    if !gone.is_empty() && !new.is_empty() && gone.len() * new.len() <= INEXACT_RENAME_PAIRS {
        let lines = |bytes: Option<Vec<u8>>| -> Option<HashMap<Vec<u8>, usize>> {
            let b = bytes?;
            if b[..b.len().min(8000)].contains(&0) {
                return None;
            }
            let mut m: HashMap<Vec<u8>, usize> = HashMap::new();
            for l in b.split_inclusive(|c| *c == b'\n') {
                *m.entry(l.to_vec()).or_default() += 1;
            }
            Some(m)
        };
        let size = |m: &HashMap<Vec<u8>, usize>| m.iter().map(|(l, n)| l.len() * n).sum::<usize>();
        let olds: Vec<_> = gone
            .iter()
            .map(|&d| {
                lines(
                    changes[d]
                        .base
                        .and_then(|(o, m)| is_blob_mode(m).then(|| reader.blob(o)).flatten()),
                )
            })
            .collect();
        let news: Vec<_> = new
            .iter()
            .map(|&a| lines(reader.now(&changes[a])))
            .collect();
        let mut scored: Vec<(usize, usize, usize)> = vec![];
        for (i, o) in olds.iter().enumerate() {
            for (j, n) in news.iter().enumerate() {
                let (Some(o), Some(n)) = (o, n) else { continue };
                let common: usize = o
                    .iter()
                    .map(|(l, k)| l.len() * (*k).min(n.get(l).copied().unwrap_or(0)))
                    .sum();
                let score = common * 100 / size(o).max(size(n)).max(1);
                if score >= RENAME_SIMILARITY {
                    scored.push((score, i, j));
                }
            }
        }
        // Best matches first; ties by path order.
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let (mut used_o, mut used_n) = (vec![false; olds.len()], vec![false; news.len()]);
        for (_, i, j) in scored {
            if !used_o[i] && !used_n[j] {
                used_o[i] = true;
                used_n[j] = true;
                pairs.push((gone[i], new[j]));
            }
        }
    }
    // The added entry becomes the rename (from the deleted one's base); the deleted goes.
    let mut drop = vec![false; changes.len()];
    for (d, a) in pairs {
        let from = changes[d].file.path.clone();
        let base = changes[d].base;
        let c = &mut changes[a];
        c.file.status = 'R';
        c.file.from = Some(from);
        c.base = base;
        drop[d] = true;
    }
    let mut i = 0;
    changes.retain(|_| {
        i += 1;
        !drop[i - 1]
    });
}

/// One file whose added and removed lines are to be counted.
struct LineWork {
    /// Index in the change list.
    file: usize,
    old: Option<git2::Oid>,
    new: NewSide,
    /// The new side's blob id when known.
    new_id: Option<git2::Oid>,
    /// `"old:new"` when both sides have a known blob id.
    key: Option<String>,
}

enum NewSide {
    None,
    Blob(git2::Oid),
    File(PathBuf),
}

struct Counted {
    file: usize,
    added: usize,
    removed: usize,
    identical: bool,
}

impl LineWork {
    fn of(c: &Change, workdir: Option<&Path>, file: usize) -> Option<LineWork> {
        let old = c.base.and_then(|(o, m)| is_blob_mode(m).then_some(o));
        let (new, new_id) = match c.now {
            Now::Blob(o, m) if is_blob_mode(m) => (NewSide::Blob(o), Some(o)),
            Now::File(m) if is_blob_mode(m) => match workdir {
                Some(w) => (NewSide::File(w.join(&c.file.path)), None),
                None => (NewSide::None, None),
            },
            _ => (NewSide::None, None),
        };
        if old.is_none() && matches!(new, NewSide::None) {
            return None;
        }
        let zero = git2::Oid::zero();
        let key = match (&new, new_id) {
            (NewSide::None, _) => old.map(|o| format!("{o}:{zero}")),
            (_, Some(n)) => Some(format!("{}:{n}", old.unwrap_or(zero))),
            (_, None) => None,
        };
        Some(LineWork {
            file,
            old,
            new,
            new_id,
            key,
        })
    }
}

/// Line counts of `work`: from the cache where both blobs are known, else by reading and
/// diffing, spread over a few threads (each with its own repository handle).
fn count_lines(
    repo: &git2::Repository,
    work: &[LineWork],
    cache: Option<&mut LineCache>,
) -> Vec<Counted> {
    let mut out = Vec::with_capacity(work.len());
    let mut todo: Vec<&LineWork> = vec![];
    let mut used = std::collections::HashMap::new();
    for w in work {
        if let (Some(k), Some(c)) = (&w.key, cache.as_deref()) {
            if let Some(&(added, removed)) = c.counts.get(k) {
                used.insert(k.clone(), (added, removed));
                out.push(Counted {
                    file: w.file,
                    added,
                    removed,
                    identical: false,
                });
                continue;
            }
        }
        if let (Some(o), Some(n)) = (w.old, w.new_id) {
            if o == n {
                out.push(Counted {
                    file: w.file,
                    added: 0,
                    removed: 0,
                    identical: true,
                });
                continue;
            }
        }
        todo.push(w);
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
        .min(todo.len() / 64)
        .max(1);
    let computed: Vec<Counted> = if threads == 1 {
        count_lines_in(repo, &todo)
    } else {
        let chunk = todo.len().div_ceil(threads);
        let path = repo.path().to_path_buf();
        std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .skip(1)
                .map(|part| {
                    let path = path.clone();
                    s.spawn(move || match git2::Repository::open(&path) {
                        Ok(r) => count_lines_in(&r, part),
                        Err(_) => vec![],
                    })
                })
                .collect();
            let mut all = count_lines_in(repo, &todo[..chunk.min(todo.len())]);
            for h in handles {
                all.extend(h.join().unwrap_or_default());
            }
            all
        })
    };
    let key_of: std::collections::HashMap<usize, &String> = todo
        .iter()
        .filter_map(|w| w.key.as_ref().map(|k| (w.file, k)))
        .collect();
    for c in &computed {
        if let Some(k) = key_of.get(&c.file) {
            used.insert((*k).clone(), (c.added, c.removed));
        }
    }
    out.extend(computed);
    if let Some(cache) = cache {
        if used != cache.counts {
            cache.counts = used;
            cache.dirty = true;
        }
    }
    out
}

fn count_lines_in(repo: &git2::Repository, work: &[&LineWork]) -> Vec<Counted> {
    let Ok(odb) = repo.odb() else {
        return vec![];
    };
    // No `read_header` first: for a loose object it opens the file a second time.
    let blob = |oid: git2::Oid| -> Option<Vec<u8>> {
        let o = odb.read(oid).ok()?;
        (o.len() <= LINE_COUNT_MAX_BYTES).then(|| o.data().to_vec())
    };
    let mut out = Vec::with_capacity(work.len());
    for w in work {
        let old = match w.old {
            Some(oid) => match blob(oid) {
                Some(b) => Some(b),
                None => continue,
            },
            None => None,
        };
        let new = match &w.new {
            NewSide::None => None,
            NewSide::Blob(oid) => match blob(*oid) {
                Some(b) => Some(b),
                None => continue,
            },
            NewSide::File(p) => match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_file() && m.len() as usize <= LINE_COUNT_MAX_BYTES => {
                    Some(std::fs::read(p).unwrap_or_default())
                }
                Ok(m) if m.is_file() => continue,
                _ => None,
            },
        };
        let (added, removed, identical) = match (&old, &new) {
            (Some(o), Some(n)) if o == n => (0, 0, true),
            // One side only: its line count, no diff needed.
            (None, Some(n)) => (line_count(n), 0, false),
            (Some(o), None) => (0, line_count(o), false),
            (None, None) => (0, 0, false),
            (Some(o), Some(n)) => {
                let stats =
                    git2::Patch::from_buffers(o, None, n, None, None).and_then(|p| p.line_stats());
                match stats {
                    Ok((_, a, r)) => (a, r, false),
                    Err(_) => (0, 0, false),
                }
            }
        };
        out.push(Counted {
            file: w.file,
            added,
            removed,
            identical,
        });
    }
    out
}

/// Lines of a whole file as a diff counts them (a last line without a newline counts);
/// none for binary content (a NUL in the first 8000 bytes, git's test).
fn line_count(data: &[u8]) -> usize {
    if data[..data.len().min(8000)].contains(&0) {
        return 0;
    }
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}
