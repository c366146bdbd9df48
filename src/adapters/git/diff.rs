//! The reads a diff of a work tree against a base is built from: the work tree's status
//! (the `git` CLI, in the background), the commit graph, trees and blobs (libgit2), and
//! line counts of two buffers. What to make of them (which paths changed and how, renames,
//! the line count cache, the size limits) is the sidebar's diff, `ui::diff`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::thread::JoinHandle;

use crate::error::{OrangeError, Result};

/// An object id (blob, tree or commit).
pub use git2::Oid;

/// A blob (or link, or gitlink) with its mode.
pub type Obj = (Oid, u32);

/// The kind of a git file mode (regular file, symlink, gitlink), without the permissions.
pub fn mode_kind(mode: u32) -> u32 {
    mode & 0o170000
}

/// A regular file (executable or not): a blob whose lines can be counted.
pub fn is_blob_mode(mode: u32) -> bool {
    mode_kind(mode) == 0o100000
}

fn git2_err(what: impl std::fmt::Display) -> impl Fn(git2::Error) -> OrangeError {
    move |e| OrangeError::BackendCommandFailed(format!("{what}: {}", e.message()))
}

// ---- The work tree's status ----

/// A `git status` running in the background (see [`status_start`]).
pub struct StatusRun {
    worktree: PathBuf,
    handle: JoinHandle<std::io::Result<Output>>,
}

/// Start `git status --porcelain=v2 -z --untracked-files=all --no-renames` in
/// `worktree` on a thread, to be read with [`StatusRun::wait`] after other work: its
/// index preload runs in parallel, and it measured faster than libgit2's single-threaded
/// walk. `--no-optional-locks`: polling never takes the index lock an agent's own git
/// needs.
pub fn status_start(worktree: &Path) -> StatusRun {
    let mut status = super::git_cmd(worktree);
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
    StatusRun {
        worktree: worktree.to_path_buf(),
        handle: std::thread::spawn(move || status.output()),
    }
}

impl StatusRun {
    /// Wait for git: its records, or its error.
    pub fn wait(self) -> Result<Vec<StatusRecord>> {
        let out = self
            .handle
            .join()
            .map_err(|_| OrangeError::BackendCommandFailed("git status panicked".into()))?
            .map_err(|e| OrangeError::io("running git status", e))?;
        if !out.status.success() {
            return Err(OrangeError::BackendCommandFailed(format!(
                "git status failed in {}: {}",
                self.worktree.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        parse_status(&out.stdout)
    }
}

/// One record of `git status --porcelain=v2 --no-renames`.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusRecord {
    /// `1 XY sub mH mI mW hH hI path`: a tracked path with changes.
    Changed {
        /// The index's status (`X`) and the work tree's (`Y`): `.`, `M`, `T`, `A`, `D`.
        x: u8,
        y: u8,
        /// HEAD's blob (none when the path is new in the index).
        head: Option<Obj>,
        /// The index's blob (none when the path is deleted from the index).
        index: Option<Obj>,
        /// The work tree's file mode.
        worktree_mode: u32,
        path: String,
    },
    /// `u XY sub m1 m2 m3 mW h1 h2 h3 path`: a conflict; `base` is stage 1 (the common
    /// ancestor's blob).
    Unmerged { base: Option<Obj>, path: String },
    /// `? path`: not in the index.
    Untracked { path: String },
}

/// Parse `git status --porcelain=v2 -z --no-renames` output. Ignored entries (not asked
/// for) and record kinds this does not know are left out.
pub fn parse_status(out: &[u8]) -> Result<Vec<StatusRecord>> {
    let bad =
        |r: &str| OrangeError::BackendCommandFailed(format!("unexpected git status record {r:?}"));
    let oid = |s: &str| Oid::from_str(s).ok().filter(|o| !o.is_zero());
    let mode = |s: &str| u32::from_str_radix(s, 8).unwrap_or(0);
    let mut records = vec![];
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
                records.push(StatusRecord::Changed {
                    x: xy[0],
                    y: xy.get(1).copied().unwrap_or(b'.'),
                    head: oid(f[5]).map(|o| (o, mode(f[2]))),
                    index: oid(f[6]).map(|o| (o, mode(f[3]))),
                    worktree_mode: mode(f[4]),
                    path: f[7].to_string(),
                });
            }
            "u" => {
                // XY sub m1 m2 m3 mW h1 h2 h3 path
                let f: Vec<&str> = rest.splitn(10, ' ').collect();
                if f.len() != 10 {
                    return Err(bad(&rec));
                }
                records.push(StatusRecord::Unmerged {
                    base: oid(f[6]).map(|o| (o, mode(f[2]))),
                    path: f[9].to_string(),
                });
            }
            "?" => records.push(StatusRecord::Untracked {
                path: rest.to_string(),
            }),
            // Ignored entries (not asked for) and anything newer: nothing to show.
            _ => {}
        }
    }
    Ok(records)
}

// ---- The repository: commits, trees, blobs ----

/// A repository opened for diff reads. Not `Sync`: another thread opens its own at
/// [`Repo::git_dir`].
pub struct Repo {
    repo: git2::Repository,
    /// The path it was opened at (for messages).
    at: PathBuf,
}

/// A path whose entry differs between two trees, with its two sides (none where absent).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeChange {
    pub path: String,
    pub old: Option<Obj>,
    pub new: Option<Obj>,
}

impl Repo {
    pub fn open(path: &Path) -> Result<Repo> {
        Ok(Repo {
            repo: super::open(path)?,
            at: path.to_path_buf(),
        })
    }

    /// The repository's git dir (a linked worktree's own).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// The commit HEAD is at.
    pub fn head(&self) -> Result<Oid> {
        self.repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map(|c| c.id())
            .map_err(git2_err(format!("reading HEAD of {}", self.at.display())))
    }

    /// The commit `rev` names.
    pub fn commit(&self, rev: &str) -> Result<Oid> {
        self.repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map(|c| c.id())
            .map_err(|_| {
                OrangeError::invalid(format!(
                    "{rev:?} is not a commit in {}",
                    self.repo.workdir().unwrap_or(self.repo.path()).display()
                ))
            })
    }

    /// The merge base of two commits; none for unrelated histories.
    pub fn merge_base(&self, a: Oid, b: Oid) -> Option<Oid> {
        self.repo.merge_base(a, b).ok()
    }

    /// Commits on `head` that `base` does not have.
    pub fn ahead(&self, head: Oid, base: Oid) -> Result<usize> {
        let (ahead, _) = self
            .repo
            .graph_ahead_behind(head, base)
            .map_err(git2_err("counting commits"))?;
        Ok(ahead)
    }

    /// The paths whose entries differ between the trees of `merge_base` and `head` (file
    /// ↔ symlink changes as one change; no rename detection).
    pub fn tree_changes(&self, merge_base: Oid, head: Oid) -> Result<Vec<TreeChange>> {
        let old = self
            .repo
            .find_commit(merge_base)
            .and_then(|c| c.tree())
            .map_err(git2_err("reading the merge base's tree"))?;
        let new = self
            .repo
            .find_commit(head)
            .and_then(|c| c.tree())
            .map_err(git2_err("reading HEAD's tree"))?;
        let mut opts = git2::DiffOptions::new();
        opts.include_typechange(true);
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(git2_err("diffing the merge base with HEAD"))?;
        let side = |f: git2::DiffFile<'_>| f.exists().then(|| (f.id(), u32::from(f.mode())));
        let mut changes = vec![];
        for d in diff.deltas() {
            let Some(path) = d.new_file().path().or(d.old_file().path()) else {
                continue;
            };
            changes.push(TreeChange {
                path: path.to_string_lossy().into_owned(),
                old: side(d.old_file()),
                new: side(d.new_file()),
            });
        }
        Ok(changes)
    }

    /// The object database, to read blobs from; none if it cannot be opened.
    pub fn objects(&self) -> Option<Objects<'_>> {
        self.repo.odb().ok().map(Objects)
    }
}

/// A repository's object database.
pub struct Objects<'r>(git2::Odb<'r>);

impl Objects<'_> {
    /// The content of object `id`, if it is at most `max_bytes` long.
    pub fn read(&self, id: Oid, max_bytes: usize) -> Option<Vec<u8>> {
        // No `read_header` first: for a loose object it opens the file a second time.
        let o = self.0.read(id).ok()?;
        (o.len() <= max_bytes).then(|| o.data().to_vec())
    }
}

/// The id `bytes` would have as a blob.
pub fn hash_blob(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(git2::ObjectType::Blob, bytes).ok()
}

/// Files larger than this count no lines (as binary files do) and are not compared for
/// renames: reading them on every refresh would cost more than the number is worth.
pub const LINE_COUNT_MAX_BYTES: usize = 8 << 20;

/// Lines of a whole file as a diff counts them (a last line without a newline counts);
/// none for binary content (a NUL in the first 8000 bytes, git's test).
pub fn line_count(data: &[u8]) -> usize {
    if data[..data.len().min(8000)].contains(&0) {
        return 0;
    }
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}

/// Lines added and removed from `old` to `new`, as `git diff --numstat` counts them.
pub fn line_stats(old: &[u8], new: &[u8]) -> Option<(usize, usize)> {
    git2::Patch::from_buffers(old, None, new, None, None)
        .and_then(|p| p.line_stats())
        .ok()
        .map(|(_, added, removed)| (added, removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_are_read_by_kind() {
        let h = "1234567890123456789012345678901234567890";
        let z = "0000000000000000000000000000000000000000";
        let out = format!(
            "1 .M N... 100644 100644 100755 {h} {h} a b.txt\0\
             1 A. N... 000000 100644 100644 {z} {h} new\0\
             u UU N... 100644 100644 100644 100644 {h} {h} {h} c\0\
             ? d/e\0! ignored\0# branch.oid x\0"
        );
        let id = Oid::from_str(h).unwrap();
        assert_eq!(
            parse_status(out.as_bytes()).unwrap(),
            vec![
                StatusRecord::Changed {
                    x: b'.',
                    y: b'M',
                    head: Some((id, 0o100644)),
                    index: Some((id, 0o100644)),
                    worktree_mode: 0o100755,
                    path: "a b.txt".into(),
                },
                StatusRecord::Changed {
                    x: b'A',
                    y: b'.',
                    head: None,
                    index: Some((id, 0o100644)),
                    worktree_mode: 0o100644,
                    path: "new".into(),
                },
                StatusRecord::Unmerged {
                    base: Some((id, 0o100644)),
                    path: "c".into(),
                },
                StatusRecord::Untracked { path: "d/e".into() },
            ]
        );
        assert!(parse_status(b"1 .M N... 100644\0").is_err());
        assert!(parse_status(b"garbage\0").is_err());
    }

    #[test]
    fn whole_files_count_their_lines_and_binary_files_none() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a\nb\n"), 2);
        assert_eq!(line_count(b"a\nb"), 2);
        assert_eq!(line_count(b"a\0b\n"), 0);
    }

    #[test]
    fn line_stats_count_like_numstat() {
        assert_eq!(line_stats(b"a\nb\nc\n", b"a\nB\nc\nd\n"), Some((2, 1)));
        assert_eq!(line_stats(b"", b""), Some((0, 0)));
    }
}
