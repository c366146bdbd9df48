//! What a workspace's setup command left in it ([`SetupOutput`]): every path it made or
//! changed that `git status` shows — untracked files that are not ignored, and tracked
//! files it modified or deleted — each with its content's blob id, read once when the
//! setup finishes. Gitignored output is not recorded: git shows it nowhere.
//!
//! A task's change list leaves out exactly what is still as the setup left it
//! ([`SetupOutput::untracked_as_left`], [`SetupOutput::tracked_as_left`]); a setup file
//! with other content is the agent's work and shows, and one the agent deleted shows as
//! deleted ([`SetupOutput::gone`]). A file is hashed only when its size, mode or
//! modification time changed since the record, or when it was written too close to the
//! record for its time to be trusted (git's "racily clean" entries).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::diff::{hash_blob, line_count, status_start, Oid, StatusRecord, LINE_COUNT_MAX_BYTES};
use crate::error::Result;

/// How coarse a file system's modification times can be, judged from one of them: Linux
/// file systems stamp with the kernel's coarse clock (a few milliseconds); times without
/// a sub-second part come from one that keeps whole seconds (or two, as FAT does).
fn granule(mtime_ns: i64) -> i64 {
    if mtime_ns % 1_000_000_000 == 0 {
        2_000_000_000
    } else {
        100_000_000
    }
}

/// Can a file whose modification time is `mtime_ns` have been changed again after
/// `recorded_ns` and kept that time? Then only its content says whether it changed.
fn racy(mtime_ns: i64, recorded_ns: i64) -> bool {
    mtime_ns + granule(mtime_ns) > recorded_ns
}

/// Mode of a directory (an untracked nested repository shows as one).
const DIR_MODE: u32 = 0o040000;

/// What the setup command left in a workspace, by path (as `git status` names it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupOutput {
    /// When it was read, in nanoseconds since the epoch.
    pub recorded_ns: i64,
    pub files: BTreeMap<String, SetupFile>,
}

/// One path the setup command made or changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupFile {
    /// HEAD's blob at this path when the setup ran; none for a file git does not track.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The blob id of what the setup left; none where it deleted a tracked file (or left
    /// a directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Its git mode: 100644, 100755, 120000 (a symbolic link), 40000 (a directory).
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    /// Its lines of text (none for binary content or a large file): what deleting it
    /// removes.
    pub lines: usize,
}

impl SetupFile {
    /// The blob and mode the setup left, as a diff's side.
    pub fn obj(&self) -> Option<(Oid, u32)> {
        Some((Oid::from_str(self.blob.as_deref()?).ok()?, self.mode))
    }

    fn untracked(&self) -> bool {
        self.head.is_none()
    }
}

fn mtime_ns(m: &std::fs::Metadata) -> i64 {
    m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec()
}

/// The git mode of what `m` describes.
fn git_mode(m: &std::fs::Metadata) -> u32 {
    let ft = m.file_type();
    if ft.is_symlink() {
        0o120000
    } else if ft.is_dir() {
        DIR_MODE
    } else if m.mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A work-tree path's git mode, blob id and line count (its content as git would store
/// it: a link's target, a file's bytes); none when it is not there.
fn read(worktree: &Path, path: &str) -> Option<(std::fs::Metadata, Option<Oid>, u32, usize)> {
    let p = worktree.join(path.trim_end_matches('/'));
    let m = std::fs::symlink_metadata(&p).ok()?;
    let mode = git_mode(&m);
    if mode == 0o120000 {
        let target = std::fs::read_link(&p).ok()?;
        let id = hash_blob(target.as_os_str().as_encoded_bytes());
        Some((m, id, mode, 0))
    } else if mode == DIR_MODE {
        Some((m, None, mode, 0))
    } else {
        let bytes = std::fs::read(&p).ok()?;
        let lines = if bytes.len() <= LINE_COUNT_MAX_BYTES {
            line_count(&bytes)
        } else {
            0
        };
        Some((m, hash_blob(&bytes), mode, lines))
    }
}

/// Read what the setup command left in `worktree`: one `git status` (every untracked
/// file, not only its directory) and each listed file hashed. The record's time is taken
/// once no listed file can be racy any more (at most a granule after the setup's last
/// write: a tenth of a second on Linux file systems), so that later checks trust an
/// unchanged stat instead of reading the file.
pub fn record(worktree: &Path) -> Result<SetupOutput> {
    let records = status_start(worktree).wait()?;
    let stamp = |path: &str| {
        std::fs::symlink_metadata(worktree.join(path.trim_end_matches('/')))
            .map(|m| mtime_ns(&m))
            .ok()
    };
    let settled = records
        .iter()
        .filter_map(|r| match r {
            StatusRecord::Untracked { path } | StatusRecord::Changed { path, .. } => stamp(path),
            StatusRecord::Unmerged { .. } => None,
        })
        .map(|t| t + granule(t) + 1)
        .max()
        .unwrap_or(0);
    // Never long: a file stamped in the future (unpacked from an archive) stays racy.
    let wait = (settled - now_ns()).min(2_100_000_000);
    if wait > 0 {
        std::thread::sleep(std::time::Duration::from_nanos(wait as u64));
    }
    let mut out = SetupOutput {
        recorded_ns: now_ns(),
        files: BTreeMap::new(),
    };
    for rec in records {
        let (path, head) = match rec {
            StatusRecord::Untracked { path } => (path, None),
            // Only work-tree changes: what the setup staged is not left out.
            StatusRecord::Changed {
                x: b'.',
                head: Some((h, _)),
                path,
                ..
            } => (path, Some(h.to_string())),
            _ => continue,
        };
        let file = match read(worktree, &path) {
            Some((m, blob, mode, lines)) => SetupFile {
                head,
                blob: blob.map(|b| b.to_string()),
                mode,
                size: m.len(),
                mtime_ns: mtime_ns(&m),
                lines,
            },
            // Deleted (a tracked file), or gone already.
            None if head.is_some() => SetupFile {
                head,
                blob: None,
                mode: 0,
                size: 0,
                mtime_ns: 0,
                lines: 0,
            },
            None => continue,
        };
        out.files.insert(path, file);
    }
    Ok(out)
}

impl SetupOutput {
    /// Is the work tree's `path` as the setup left it: there with the same content and
    /// mode (or, for what the setup deleted, still absent)?
    fn as_left(&self, worktree: &Path, path: &str, f: &SetupFile) -> bool {
        let p = worktree.join(path.trim_end_matches('/'));
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            return f.blob.is_none() && f.mode == 0;
        };
        if f.mode == DIR_MODE {
            return m.is_dir();
        }
        let t = mtime_ns(&m);
        let same_stat = m.len() == f.size && t == f.mtime_ns && git_mode(&m) == f.mode;
        if same_stat && !racy(t, self.recorded_ns) {
            return true;
        }
        match read(worktree, path) {
            Some((_, Some(id), mode, _)) => {
                f.blob.as_deref() == Some(id.to_string().as_str()) && mode == f.mode
            }
            _ => false,
        }
    }

    /// Is the untracked `path` a file the setup made, as it made it?
    pub fn untracked_as_left(&self, worktree: &Path, path: &str) -> bool {
        self.files
            .get(path)
            .is_some_and(|f| f.untracked() && self.as_left(worktree, path, f))
    }

    /// Is the change of the tracked `path` (HEAD's blob `head`) the setup's own: HEAD has
    /// what it had when the setup ran, and the work tree what the setup left?
    pub fn tracked_as_left(&self, worktree: &Path, path: &str, head: Option<Oid>) -> bool {
        self.files.get(path).is_some_and(|f| {
            f.head.is_some()
                && f.head.as_deref() == head.map(|h| h.to_string()).as_deref()
                && self.as_left(worktree, path, f)
        })
    }

    /// The untracked files the setup made that are gone from the work tree (`listed`:
    /// whether `git status` or the commits named a path, which is then not gone).
    pub fn gone<'a>(
        &'a self,
        worktree: &Path,
        listed: impl Fn(&str) -> bool,
    ) -> Vec<(&'a str, &'a SetupFile)> {
        self.files
            .iter()
            .filter(|(p, f)| f.untracked() && f.mode != DIR_MODE && !listed(p))
            .filter(|(p, _)| std::fs::symlink_metadata(worktree.join(p)).is_err())
            .map(|(p, f)| (p.as_str(), f))
            .collect()
    }

    /// What differs in `worktree` from what the setup left, read after a reset and clean
    /// (tracked files are the base's again then, so only untracked ones count): untracked
    /// files that are not the setup's or not as it left them, and setup files that are
    /// gone. Empty: the workspace is as a fresh setup would leave it.
    pub fn drift(&self, worktree: &Path) -> Result<Vec<String>> {
        let records = status_start(worktree).wait()?;
        let mut listed = std::collections::HashSet::new();
        let mut out = vec![];
        for rec in records {
            if let StatusRecord::Untracked { path } = rec {
                if !self.untracked_as_left(worktree, &path) {
                    out.push(path.clone());
                }
                listed.insert(path);
            }
        }
        out.extend(
            self.gone(worktree, |p| listed.contains(p))
                .into_iter()
                .map(|(p, _)| p.to_string()),
        );
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(blob: &[u8], size: u64, mtime_ns: i64) -> SetupFile {
        SetupFile {
            head: None,
            blob: hash_blob(blob).map(|o| o.to_string()),
            mode: 0o100644,
            size,
            mtime_ns,
            lines: 1,
        }
    }

    #[test]
    fn a_file_is_as_left_by_its_content_not_its_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.txt"), "x\n").unwrap();
        let mut out = SetupOutput {
            recorded_ns: now_ns(),
            files: BTreeMap::new(),
        };
        // A stat that does not match: hashed, and the content is the setup's.
        out.files.insert("s.txt".into(), file(b"x\n", 99, 1));
        assert!(out.untracked_as_left(d.path(), "s.txt"));
        // Another content of the same name: not the setup's.
        out.files.insert("s.txt".into(), file(b"y\n", 99, 1));
        assert!(!out.untracked_as_left(d.path(), "s.txt"));
        assert!(!out.untracked_as_left(d.path(), "other.txt"));
        // A stat that matches, old enough to be trusted: not even read.
        let m = std::fs::symlink_metadata(d.path().join("s.txt")).unwrap();
        out.files
            .insert("s.txt".into(), file(b"y\n", m.len(), mtime_ns(&m)));
        out.recorded_ns = mtime_ns(&m) + 2 * granule(mtime_ns(&m));
        assert!(out.untracked_as_left(d.path(), "s.txt"));
        // Too close to the record to be trusted: hashed.
        out.recorded_ns = mtime_ns(&m) + granule(mtime_ns(&m)) / 2;
        assert!(!out.untracked_as_left(d.path(), "s.txt"));
        // Deleted: gone, unless something listed it.
        std::fs::remove_file(d.path().join("s.txt")).unwrap();
        assert_eq!(out.gone(d.path(), |_| false).len(), 1);
        assert!(out.gone(d.path(), |p| p == "s.txt").is_empty());
    }
}
