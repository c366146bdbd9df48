//! The git adapter: every git operation orange performs goes through here.
//! Reads use git2 where it is as fast as the CLI; worktree add/remove, reset, clean and
//! fetch use the `git` CLI (git2 cannot add a detached worktree in one call).
//!
//! Here: running git, the repository, its refs and branches. `worktree.rs` (re-exported
//! here): adding, inspecting, resetting and removing worktrees. [`diff`]: the reads a diff
//! of a work tree against a base is built from (the sidebar's diff, `ui::diff`, decides
//! what they show). [`setup`]: what a workspace's setup command left in it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{OrangeError, Result};

pub mod compare;
pub mod diff;
pub mod setup;
mod worktree;

pub use worktree::{
    detach_reset_clean, git_dirs, inspect, is_worktree_of, unsaved_work, untracked,
    worktree_add_branch, worktree_add_detached, worktree_prune, worktree_remove, Inspection,
};

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

/// The repository's remotes that are directories on this machine (a path or a `file://`
/// URL), absolute and existing: what a sandboxed agent needs to read to fetch from them.
pub fn local_remote_paths(repo_path: &Path) -> Vec<PathBuf> {
    let Ok(repo) = open(repo_path) else {
        return vec![];
    };
    let names = repo
        .remotes()
        .map(|n| n.iter().flatten().map(str::to_string).collect::<Vec<_>>());
    let mut out: Vec<PathBuf> = vec![];
    for name in names.unwrap_or_default() {
        let Ok(remote) = repo.find_remote(&name) else {
            continue;
        };
        let Some(url) = remote.url() else { continue };
        let path = url.strip_prefix("file://").unwrap_or(url);
        let path = Path::new(path);
        if path.is_absolute() && path.is_dir() {
            let p = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Reads for display only: skip libgit2's re-hashing of every object it reads (the object
/// database's own checksums still apply). Process-wide; call it in read-only processes.
pub fn fast_reads() {
    git2::opts::strict_hash_verification(false);
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

/// `git push --set-upstream origin BRANCH` (what a pull request is opened from): the
/// branch as it is committed; an error says why git refused (no origin, rejected).
pub fn push(repo_path: &Path, branch: &str) -> Result<()> {
    if !has_remote(repo_path, "origin") {
        return Err(OrangeError::BackendCommandFailed(format!(
            "{} has no remote named origin to push {branch} to",
            repo_path.display()
        )));
    }
    let spec = format!("refs/heads/{branch}:refs/heads/{branch}");
    run_ok(
        repo_path,
        ["push", "--quiet", "--set-upstream", "origin", &spec],
    )
    .map(|_| ())
}

fn has_remote(repo_path: &Path, name: &str) -> bool {
    open(repo_path)
        .map(|r| r.find_remote(name).is_ok())
        .unwrap_or(false)
}

/// Make sure `.git/info/exclude` of the main repository lists `patterns`
/// (worktrees share it, so TASK.md and friends never show as untracked). The file is
/// replaced whole (its mode kept): agents starting side by side each make sure, and one
/// must never read it half written and write the user's lines away.
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
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    crate::adapters::store::write_bytes_atomic(&file, text.as_bytes())?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
        .map_err(|e| OrangeError::io(format!("setting the mode of {}", file.display()), e))
}

/// Does `refs/heads/<branch>` exist?
pub fn local_branch_exists(repo_path: &Path, branch: &str) -> bool {
    open(repo_path).is_ok_and(|r| r.find_reference(&format!("refs/heads/{branch}")).is_ok())
}

/// The worktree (main or linked) that has `branch` checked out, if any.
pub fn branch_checked_out_at(repo_path: &Path, branch: &str) -> Result<Option<PathBuf>> {
    Ok(checked_out_branches(repo_path)?
        .into_iter()
        .find(|(_, b)| b == branch)
        .map(|(p, _)| p))
}

/// Worktrees and the branch each has checked out, `(path, branch)`.
pub type CheckedOut = Vec<(PathBuf, String)>;

/// Every worktree (main or linked) with a branch checked out, `(path, branch)`: one `git
/// worktree list` for as many branches as the caller asks about (a group's members).
pub fn checked_out_branches(repo_path: &Path) -> Result<CheckedOut> {
    let out = run_ok(repo_path, ["worktree", "list", "--porcelain", "-z"])?;
    let mut found = vec![];
    let mut current: Option<PathBuf> = None;
    for field in out.split('\0') {
        if let Some(p) = field.strip_prefix("worktree ") {
            current = Some(PathBuf::from(p));
        } else if let (Some(b), Some(at)) = (field.strip_prefix("branch refs/heads/"), &current) {
            found.push((at.clone(), b.to_string()));
        }
    }
    Ok(found)
}

/// Put `branch` in the worktree at `path`: the local branch when it exists (once `free`
/// has said it may be checked out here), else a new one tracking `origin/<branch>` when
/// that exists, else a new one at the current HEAD. One open of the worktree's repository
/// answers all three and whether the branch exists (its refs are the main repository's):
/// each open reads the git config files again, and a group starts its members'
/// checkouts side by side.
pub fn checkout_task_branch(
    path: &Path,
    branch: &str,
    free: &dyn Fn() -> Result<()>,
) -> Result<&'static str> {
    let repo = open(path)?;
    let has = |name: String| repo.find_reference(&name).is_ok();
    if has(format!("refs/heads/{branch}")) {
        free()?;
        run_ok(path, ["checkout", "--quiet", branch])?;
        Ok("existing")
    } else if has(format!("refs/remotes/origin/{branch}")) {
        let remote = format!("origin/{branch}");
        run_ok(
            path,
            ["checkout", "--quiet", "--track", "-b", branch, &remote],
        )?;
        Ok("remote")
    } else {
        if !branch_at_head(&repo, path, branch)? {
            run_ok(path, ["checkout", "--quiet", "-b", branch])?;
        }
        Ok("new")
    }
}

/// `git checkout -b BRANCH` without git: the branch made at HEAD's commit and HEAD
/// pointed to it. The work tree and index already hold that commit, so nothing in them
/// changes — but git refreshes the whole index first (every file stat'ed, and in a
/// worktree made the same second every file read again: seconds for 5,000 files under
/// load). False (nothing done: the caller runs git) when git would do more: a
/// `post-checkout` hook to run (or a `core.hooksPath` that may hold one), or no HEAD
/// commit yet. `repo`: the worktree at `path`, open.
fn branch_at_head(repo: &git2::Repository, path: &Path, branch: &str) -> Result<bool> {
    let hooks = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.hooksPath").ok());
    if hooks.is_some() || repo.commondir().join("hooks/post-checkout").exists() {
        return Ok(false);
    }
    let Ok(commit) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return Ok(false);
    };
    let failed = |what: &str, e: git2::Error| {
        OrangeError::BackendCommandFailed(format!(
            "{what} {branch:?} in {}: {}",
            path.display(),
            e.message()
        ))
    };
    repo.branch(branch, &commit, false)
        .map_err(|e| failed("creating branch", e))?;
    repo.set_head(&format!("refs/heads/{branch}"))
        .map_err(|e| failed("checking out branch", e))?;
    Ok(true)
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

/// The unified diff (`-U3`, no color, no external diff driver, rename detection off) of
/// `paths` in `worktree` against `base` (a commit), the working tree as it is; `untracked`
/// paths (not in the index) as new files. `None` for `worktree`: the committed branch
/// `head` in `repo`. Nothing of the user's diff configuration changes what is printed.
pub fn patch(
    repo: &Path,
    worktree: Option<&Path>,
    base: &str,
    head: &str,
    tracked: &[String],
    untracked: &[String],
) -> Result<String> {
    let plain = [
        "-c",
        "core.quotePath=false",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        "--no-textconv",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "-U3",
    ];
    let mut out = String::new();
    if !tracked.is_empty() {
        let mut args: Vec<&str> = plain.to_vec();
        args.push(base);
        if worktree.is_none() {
            args.push(head);
        }
        args.push("--");
        args.extend(tracked.iter().map(String::as_str));
        out.push_str(&run_ok(worktree.unwrap_or(repo), &args)?);
    }
    if let Some(wt) = worktree {
        for path in untracked {
            // `--no-index` exits 1 when the files differ: that is the answer, not a failure.
            let mut args: Vec<&str> = plain.to_vec();
            args.extend(["--no-index", "--", "/dev/null", path]);
            let o = run(wt, &args)?;
            if o.status.code().is_some_and(|c| c > 1) {
                return Err(OrangeError::BackendCommandFailed(format!(
                    "git diff of the new file {path} failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )));
            }
            out.push_str(&String::from_utf8_lossy(&o.stdout));
        }
    }
    Ok(out)
}
