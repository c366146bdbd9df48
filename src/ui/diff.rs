//! The sidebar's diff: what a task changed against its base (the merge base with the
//! default branch), committed, staged, unstaged and untracked, with renames and line
//! counts: `git diff --name-status <merge-base>` and `git status --porcelain` together.
//!
//! Built on the git adapter's reads (`adapters::git::diff`: the work tree's status,
//! trees, blobs, line stats); this decides what they show: how a path's two sides
//! classify, which deletions and additions are renames, which line counts are reused from
//! the [`LineCache`], and what is too big to read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::adapters::git::diff::{
    hash_blob, is_blob_mode, line_count, line_stats, mode_kind, status_start, Obj, Oid, Repo,
    StatusRecord, LINE_COUNT_MAX_BYTES,
};
use crate::adapters::git::setup::SetupOutput;
use crate::error::Result;

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

/// Everything the worktree at `worktree` changed against `base_ref`'s merge base with
/// HEAD: commits, staged and unstaged changes and untracked files (what `git diff
/// --name-status <merge-base>` and `git status --porcelain` show together), with renames
/// and line counts.
///
/// `setup`: what the workspace's setup command left there. What is still as it left it
/// is not the task's change and is left out; a setup file with other content shows as
/// the task's (against the base, as it would be committed), one the agent deleted as
/// deleted. Only the work tree's state is left out: a setup file committed or staged
/// is part of the branch and shows.
///
/// One walk of the work tree: `git status`, started first and read while libgit2 diffs
/// the merge base's tree with HEAD's (trees only: no work-tree access).
pub fn branch_diff(
    worktree: &Path,
    base_ref: &str,
    setup: Option<&SetupOutput>,
    cache: Option<&mut LineCache>,
) -> Result<BranchDiff> {
    let status = status_start(worktree);
    let repo = Repo::open(worktree)?;
    let head = repo.head()?;
    let base = repo.commit(base_ref)?;
    let (merge_base, commits, mut entries) = committed(&repo, head, base)?;
    let records = status.wait()?;
    let records = match setup.filter(|s| !s.files.is_empty()) {
        Some(setup) => leave_out_setup(&mut entries, worktree, setup, records),
        None => records,
    };
    apply_status(&mut entries, records);
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
    let repo = Repo::open(repo_path)?;
    let tip = repo.commit(&format!("refs/heads/{branch}"))?;
    let base = repo.commit(base_ref)?;
    let (merge_base, commits, entries) = committed(&repo, tip, base)?;
    finish(&repo, None, base_ref, merge_base, commits, entries, cache)
}

/// What a path is now.
#[derive(Debug, Clone, PartialEq)]
enum Now {
    Absent,
    /// Content known by id (HEAD's or the index's).
    Blob(Oid, u32),
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
    /// A file the setup command made, deleted since: its lines (its blob, the base here,
    /// is in no object database).
    setup_gone: Option<usize>,
}

/// Merge base, commits ahead and the paths HEAD changed against the merge base (trees
/// only, no rename detection yet: that is done once on the final picture).
fn committed(repo: &Repo, head: Oid, base: Oid) -> Result<(Oid, usize, BTreeMap<String, Entry>)> {
    // Unrelated histories have no merge base: then everything is compared with the base.
    let merge_base = repo.merge_base(head, base).unwrap_or(base);
    let commits = repo.ahead(head, base)?;
    let mut entries = BTreeMap::new();
    if merge_base != head {
        for c in repo.tree_changes(merge_base, head)? {
            let now = match c.new {
                Some((id, mode)) => Now::Blob(id, mode),
                None => Now::Absent,
            };
            entries.insert(
                c.path,
                Entry {
                    base: c.old,
                    now,
                    untracked: false,
                    setup_gone: None,
                },
            );
        }
    }
    Ok((merge_base, commits, entries))
}

/// The work tree's status without what the setup command left as it left it (a path the
/// commits changed is never left out); the files it made that are gone are added to
/// `entries` as deletions of what it made.
fn leave_out_setup(
    entries: &mut BTreeMap<String, Entry>,
    worktree: &Path,
    setup: &SetupOutput,
    records: Vec<StatusRecord>,
) -> Vec<StatusRecord> {
    let mut listed: HashSet<String> = HashSet::new();
    let mut kept = Vec::with_capacity(records.len());
    for rec in records {
        let (path, as_left) = match &rec {
            StatusRecord::Untracked { path } => (
                path,
                !entries.contains_key(path) && setup.untracked_as_left(worktree, path),
            ),
            StatusRecord::Changed {
                x: b'.',
                head,
                path,
                ..
            } => (
                path,
                !entries.contains_key(path)
                    && setup.tracked_as_left(worktree, path, head.map(|h| h.0)),
            ),
            StatusRecord::Changed { path, .. } | StatusRecord::Unmerged { path, .. } => {
                (path, false)
            }
        };
        listed.insert(path.clone());
        if !as_left {
            kept.push(rec);
        }
    }
    let gone = setup.gone(worktree, |p| listed.contains(p) || entries.contains_key(p));
    for (path, f) in gone {
        if let Some(base) = f.obj() {
            entries.insert(
                path.to_string(),
                Entry {
                    base: Some(base),
                    now: Now::Absent,
                    untracked: true,
                    setup_gone: Some(f.lines),
                },
            );
        }
    }
    kept
}

/// Lay the work tree's status (`git status --porcelain=v2 --no-renames`) over the
/// committed changes.
fn apply_status(entries: &mut BTreeMap<String, Entry>, records: Vec<StatusRecord>) {
    for rec in records {
        match rec {
            StatusRecord::Changed {
                x,
                y,
                head,
                index,
                worktree_mode,
                path,
            } => {
                let now = if y == b'D' || (x == b'D' && y == b'.') {
                    Now::Absent
                } else if matches!(y, b'M' | b'T') {
                    Now::File(worktree_mode)
                } else if matches!(x, b'A' | b'M' | b'T') {
                    match index {
                        Some((o, m)) => Now::Blob(o, m),
                        None => Now::File(worktree_mode),
                    }
                } else {
                    match head {
                        Some((o, m)) => Now::Blob(o, m),
                        None => Now::Absent,
                    }
                };
                let e = entries.entry(path).or_insert(Entry {
                    base: head,
                    now: Now::Absent,
                    untracked: false,
                    setup_gone: None,
                });
                e.now = now;
            }
            StatusRecord::Unmerged { base, path } => {
                let e = entries.entry(path).or_insert(Entry {
                    base,
                    now: Now::Absent,
                    untracked: false,
                    setup_gone: None,
                });
                e.now = Now::Conflict;
            }
            StatusRecord::Untracked { path } => {
                let e = entries.entry(path).or_insert(Entry {
                    base: None,
                    now: Now::Absent,
                    untracked: false,
                    setup_gone: None,
                });
                e.now = Now::File(0o100644);
                e.untracked = true;
            }
        }
    }
}

/// One file of the final list, with what line counting needs.
struct Change {
    file: ChangedFile,
    base: Option<Obj>,
    now: Now,
    setup_gone: Option<usize>,
}

/// Classify, find renames, count lines, drop what turned out unchanged.
fn finish(
    repo: &Repo,
    workdir: Option<&Path>,
    base_ref: &str,
    merge_base: Oid,
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
            setup_gone: e.setup_gone,
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
    repo: &'a Repo,
    workdir: Option<&'a Path>,
}

impl Contents<'_> {
    fn blob(&self, oid: Oid) -> Option<Vec<u8>> {
        self.repo.objects()?.read(oid, LINE_COUNT_MAX_BYTES)
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
    fn now_id(&self, c: &Change) -> Option<Oid> {
        match c.now {
            Now::Blob(o, _) => Some(o),
            Now::File(m) if is_blob_mode(m) => {
                let bytes = self.file(&c.file.path)?;
                hash_blob(&bytes)
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
    let mut pairs = exact_renames(reader, changes, &gone, &new);
    let gone: Vec<usize> = gone
        .into_iter()
        .filter(|d| !pairs.iter().any(|p| p.0 == *d))
        .collect();
    let new: Vec<usize> = new
        .into_iter()
        .filter(|a| !pairs.iter().any(|p| p.1 == *a))
        .collect();
    if !gone.is_empty() && !new.is_empty() && gone.len() * new.len() <= INEXACT_RENAME_PAIRS {
        pairs.extend(similar_renames(reader, changes, &gone, &new));
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

/// `(deleted, added)` pairs of the same content (the same blob id), by index in `changes`.
fn exact_renames(
    reader: &Contents<'_>,
    changes: &[Change],
    gone: &[usize],
    new: &[usize],
) -> Vec<(usize, usize)> {
    let mut by_id: HashMap<Oid, Vec<usize>> = HashMap::new();
    for &d in gone.iter().rev() {
        if let Some((o, _)) = changes[d].base {
            by_id.entry(o).or_default().push(d);
        }
    }
    let mut pairs: Vec<(usize, usize)> = vec![];
    for &a in new {
        let Some(id) = reader.now_id(&changes[a]) else {
            continue;
        };
        if let Some(d) = by_id.get_mut(&id).and_then(|v| v.pop()) {
            pairs.push((d, a));
        }
    }
    pairs
}

/// A text's lines and how often each occurs; `None` for no content or a binary one.
fn line_counts(bytes: Option<Vec<u8>>) -> Option<HashMap<Vec<u8>, usize>> {
    let b = bytes?;
    if b[..b.len().min(8000)].contains(&0) {
        return None;
    }
    let mut m: HashMap<Vec<u8>, usize> = HashMap::new();
    for l in b.split_inclusive(|c| *c == b'\n') {
        *m.entry(l.to_vec()).or_default() += 1;
    }
    Some(m)
}

/// `(deleted, added)` pairs whose contents are at least [`RENAME_SIMILARITY`]% alike, best
/// matches first, each path in one pair at most.
fn similar_renames(
    reader: &Contents<'_>,
    changes: &[Change],
    gone: &[usize],
    new: &[usize],
) -> Vec<(usize, usize)> {
    let size = |m: &HashMap<Vec<u8>, usize>| m.iter().map(|(l, n)| l.len() * n).sum::<usize>();
    let olds: Vec<_> = gone
        .iter()
        .map(|&d| {
            line_counts(
                changes[d]
                    .base
                    .and_then(|(o, m)| is_blob_mode(m).then(|| reader.blob(o)).flatten()),
            )
        })
        .collect();
    let news: Vec<_> = new
        .iter()
        .map(|&a| line_counts(reader.now(&changes[a])))
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
    let mut pairs = vec![];
    for (_, i, j) in scored {
        if !used_o[i] && !used_n[j] {
            used_o[i] = true;
            used_n[j] = true;
            pairs.push((gone[i], new[j]));
        }
    }
    pairs
}

/// One file whose added and removed lines are to be counted.
struct LineWork {
    /// Index in the change list.
    file: usize,
    old: Option<Oid>,
    new: NewSide,
    /// The new side's blob id when known.
    new_id: Option<Oid>,
    /// `"old:new"` when both sides have a known blob id.
    key: Option<String>,
    /// A deleted setup file's lines (its blob cannot be read).
    setup_gone: Option<usize>,
}

enum NewSide {
    None,
    Blob(Oid),
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
        let zero = Oid::zero();
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
            setup_gone: c.setup_gone,
        })
    }
}

/// Line counts of `work`: from the cache where both blobs are known, else by reading and
/// diffing, spread over a few threads (each with its own repository handle).
fn count_lines(repo: &Repo, work: &[LineWork], cache: Option<&mut LineCache>) -> Vec<Counted> {
    let mut out = Vec::with_capacity(work.len());
    let mut todo: Vec<&LineWork> = vec![];
    let mut used = std::collections::HashMap::new();
    for w in work {
        if let (Some(lines), NewSide::None) = (w.setup_gone, &w.new) {
            out.push(Counted {
                file: w.file,
                added: 0,
                removed: lines,
                identical: false,
            });
            continue;
        }
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
        let path = repo.git_dir().to_path_buf();
        std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .skip(1)
                .map(|part| {
                    let path = path.clone();
                    s.spawn(move || match Repo::open(&path) {
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

fn count_lines_in(repo: &Repo, work: &[&LineWork]) -> Vec<Counted> {
    let Some(objects) = repo.objects() else {
        return vec![];
    };
    let blob = |oid: Oid| objects.read(oid, LINE_COUNT_MAX_BYTES);
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
            (Some(o), Some(n)) => match line_stats(o, n) {
                Some((a, r)) => (a, r, false),
                None => (0, 0, false),
            },
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
