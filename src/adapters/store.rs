//! Files under `$ORANGE_HOME`: paths, atomic JSON writes, sidecar locks, the audit log.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{de::DeserializeOwned, Serialize};

use crate::error::{IoContext, OrangeError, Result};

/// The data root and the well-known paths inside it.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$ORANGE_HOME`, else `~/orange`.
    pub fn from_env() -> Result<Home> {
        let root = match std::env::var_os("ORANGE_HOME") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => {
                let home = std::env::var_os("HOME")
                    .ok_or_else(|| OrangeError::invalid("neither ORANGE_HOME nor HOME is set"))?;
                PathBuf::from(home).join("orange")
            }
        };
        let root = if root.is_relative() {
            std::env::current_dir()
                .ctx(|| "reading the current directory".into())?
                .join(root)
        } else {
            root
        };
        Ok(Home { root })
    }

    pub fn projects_file(&self) -> PathBuf {
        self.root.join("projects.json")
    }
    pub fn projects_lock(&self) -> PathBuf {
        self.root.join(".projects.lock")
    }
    pub fn workspaces_dir(&self) -> PathBuf {
        self.root.join("workspaces")
    }
    pub fn pool_file(&self) -> PathBuf {
        self.workspaces_dir().join(".pool.json")
    }
    pub fn pool_lock(&self) -> PathBuf {
        self.workspaces_dir().join(".pool.lock")
    }
    pub fn audit_file(&self) -> PathBuf {
        self.root.join("audit.jsonl")
    }
    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }
    /// Derived, per-machine files: locks of the monitor, the observer's snapshot, `poke`.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }
    /// Touched by every change a reader must see (`poke`).
    pub fn poke_file(&self) -> PathBuf {
        self.run_dir().join("poke")
    }
    /// The sidebar's line-count cache of one task (derived data: safe to delete).
    pub fn sidebar_cache(&self, project: &str, id: &str) -> PathBuf {
        self.root
            .join("run")
            .join("sidebar")
            .join(format!("{project}--{id}.json"))
    }
}

pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))
}

/// Read a JSON state file. A missing file is the default state; a file that does not
/// parse is `state_corrupt` with its path, never an empty state.
pub fn read_json<T: DeserializeOwned + Default>(path: &Path) -> Result<T> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => return Err(OrangeError::io(format!("reading {}", path.display()), e)),
    };
    serde_json::from_slice(&bytes).map_err(|e| OrangeError::StateCorrupt {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// Write JSON atomically: a temp file in the same directory, fsync, rename, fsync dir.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut data = serde_json::to_vec_pretty(value).expect("state serializes");
    data.push(b'\n');
    write_bytes_atomic(path, &data)
}

/// Replace `path` with `data` atomically and durably (temp file in the same directory,
/// fsync, rename; the new file is private to its owner, mode 0600).
pub fn write_bytes_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    ensure_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .ctx(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(data)
        .and_then(|_| tmp.as_file().sync_all())
        .ctx(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| OrangeError::io(format!("replacing {}", path.display()), e.error))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Open a file to read only when it is a regular file at `path` itself: not through a
/// symbolic link, never blocking on a FIFO, never a device. For files in a directory an
/// agent may write (a sandboxed agent's task directory, its transcripts): what it plants
/// there must not make orange read elsewhere or hang.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(f)
}

/// [`open_regular`], read whole when it holds at most `max` bytes.
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = open_regular(path)?;
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    Ok(buf)
}

/// Replace a derived cache file (temp file in the same directory, rename; no fsync: a lost
/// cache is only recomputed). Readers never see half a file. Best effort.
pub fn write_cache(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.persist(path).map(|_| ()).map_err(|e| e.error)
}

/// Say "something changed": one line appended to `run/poke` (created if needed), `.` when
/// it does not say what. Its size grows with every poke (file times are too coarse to
/// order a poke against an observation taken in the same few milliseconds): an
/// observation that began at another size is stale, and the monitor, which waits for the
/// size to move, looks again at once. Sidebars see its time and size change and redraw.
/// Never fails: a missed poke is caught up by the next monitor pass.
pub fn poke(home: &Home) {
    poke_at(&home.poke_file());
}

/// [`poke`], saying what changed: the files of one task (`task.json`, `agent.json`), as
/// the line `<project>/<id>`. A monitor that kept what it read reads again only what the
/// lines since its last look name ([`pokes_between`]; `-`: nothing, [`poke_other`]); a `.`
/// has it look at every file again.
pub fn poke_task(home: &Home, project: &str, id: &str) {
    append_poke(&home.poke_file(), format!("{project}/{id}\n").as_bytes());
}

/// [`poke`], saying that no task's files changed (they are poked with their task): a
/// command's after-change poke, a tmux hook's, a lane's or a remote host's, the line `-`.
/// The monitor looks again at tmux and reads again none of the tasks' files.
pub fn poke_other(home: &Home) {
    append_poke(&home.poke_file(), b"-\n");
}

/// [`poke`] of another counter file (`run/hosts/poke`: a remote host changed).
pub fn poke_at(path: &Path) {
    append_poke(path, b".\n");
}

fn append_poke(path: &Path, line: &[u8]) {
    let open = || OpenOptions::new().create(true).append(true).open(path);
    let file = open().or_else(|_| {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        open()
    });
    if let Ok(mut f) = file {
        // One write: appends of a line are never interleaved with another writer's.
        let _ = f.write_all(line);
        // A megabyte of pokes: start again (the size changes, as a poke's must).
        if f.metadata().is_ok_and(|m| m.len() >= 1 << 20) {
            let _ = f.set_len(0);
        }
    }
}

/// The size of `run/poke` (see [`poke`]): 0 when never poked.
pub fn pokes(home: &Home) -> u64 {
    pokes_at(&home.poke_file())
}

/// [`pokes`] of another counter file.
pub fn pokes_at(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

/// The lines of `run/poke` between the sizes `from` and `to` (what was poked meanwhile);
/// `None` when that part is not there to read (the file started again).
pub fn pokes_between(home: &Home, from: u64, to: u64) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(to.checked_sub(from)?).ok()?;
    let f = File::open(home.poke_file()).ok()?;
    let mut buf = vec![0; len];
    f.read_exact_at(&mut buf, from).ok()?;
    String::from_utf8(buf).ok()
}

/// Read a small file into `buf` with as few system calls as the kernel allows (open, one
/// `statx` for its size and time, one `read`, close: `std::fs::read` makes six or seven,
/// which shows at a hundred files per status line). Returns its modification time.
pub fn read_small(
    path: &Path,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<std::time::SystemTime>> {
    use std::io::Read;
    let mut f = File::open(path)?;
    let meta = f.metadata()?;
    let len = meta.len() as usize;
    buf.clear();
    buf.resize(len + 1, 0);
    let mut filled = 0;
    loop {
        let n = f.read(&mut buf[filled..])?;
        filled += n;
        if n == 0 || filled < buf.len() {
            // A short read of a regular file is its end (or, rarely, a concurrent write:
            // the next read sees the whole new file, as files are replaced by rename).
            break;
        }
        // The file grew since statx: read on.
        buf.resize(buf.len() * 2, 0);
    }
    buf.truncate(filled);
    Ok(meta.modified().ok())
}

/// One version of a file, told from another without reading it: its device and inode,
/// size and modification time. State files are replaced by rename, so each version is a
/// new inode as well as a new time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

/// The [`Stamp`] of the file at `path` (one `stat`); `None` when there is none.
pub fn stamp(path: &Path) -> Option<Stamp> {
    fs::metadata(path).ok().map(|m| Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
    })
}

/// How long a command waits for a state lock (`ORANGE_LOCK_TIMEOUT`, default 30s).
pub fn lock_timeout() -> Duration {
    std::env::var("ORANGE_LOCK_TIMEOUT")
        .ok()
        .and_then(|v| humantime::parse_duration(&v).ok())
        .unwrap_or(Duration::from_secs(30))
}

/// An exclusive lock on a sidecar lock file (flock semantics: released when the process
/// dies, so a SIGKILL never leaves it held). Dropping the guard unlocks.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

/// What a lock guards, for a person waiting on it.
fn lock_name(path: &Path) -> String {
    match path.file_name().and_then(|n| n.to_str()) {
        Some(".pool.lock") => "the workspace pool".into(),
        _ => format!("lock {}", path.display()),
    }
}

fn lock_wait_text(path: &Path) -> String {
    match path.file_name().and_then(|n| n.to_str()) {
        Some(".pool.lock") => "waiting for the workspace pool: another orange command is changing it (a workspace's setup may be running)".into(),
        _ => format!("waiting for {}: another orange command holds it", lock_name(path)),
    }
}

impl LockGuard {
    pub fn acquire(path: &Path) -> Result<LockGuard> {
        Self::acquire_within(path, lock_timeout())
    }

    pub fn acquire_within(path: &Path, timeout: Duration) -> Result<LockGuard> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        // Shown when the wait is long enough to be noticed (another command holds it).
        let mut waiting: Option<crate::adapters::progress::Step> = None;
        loop {
            if waiting.is_none()
                && start.elapsed() >= Duration::from_millis(500)
                && crate::adapters::progress::shown()
            {
                waiting = Some(crate::adapters::progress::step(lock_wait_text(path)));
            }
            // Never through a symbolic link (a lock in a sandboxed agent's task directory
            // must not create or open a file elsewhere).
            let file = open_lock(path)?;
            match file.try_lock() {
                Ok(()) => {
                    // The lock file may have been unlinked and recreated by a shutdown
                    // while we waited: only a lock on the file at `path` counts.
                    let held = file.metadata().ok();
                    let now = fs::metadata(path).ok();
                    match (held, now) {
                        (Some(a), Some(b)) if a.ino() == b.ino() && a.dev() == b.dev() => {
                            if let Some(w) = waiting {
                                w.done(format!("{} is free", lock_name(path)));
                            }
                            return Ok(LockGuard {
                                file,
                                path: path.to_path_buf(),
                            });
                        }
                        _ => continue,
                    }
                }
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(OrangeError::io(format!("locking {}", path.display()), e))
                }
            }
            if start.elapsed() >= timeout {
                return Err(OrangeError::LockTimeout {
                    path: path.to_path_buf(),
                    waited: humantime::format_duration(Duration::from_millis(
                        start.elapsed().as_millis() as u64,
                    ))
                    .to_string(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Open (creating it, and its directory, when missing) a lock file. The directory is made
/// only when the file cannot be opened: a lock taken often (the monitor takes a project's
/// lock for every agent it checks) costs no `mkdir`.
fn open_lock(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                ensure_dir(dir)?;
            }
            open()
        }
        other => other,
    }
    .ctx(|| format!("opening lock {}", path.display()))
}

/// A shared lock on the lock file `path` (flock: any number of holders, released when the
/// process dies, SIGKILL too), held while the returned file is open: "a command of this
/// kind runs", for [`is_locked`] to ask.
pub fn lock_shared(path: &Path) -> Result<File> {
    let file = open_lock(path)?;
    file.lock_shared()
        .ctx(|| format!("locking {}", path.display()))?;
    Ok(file)
}

/// Does a live process hold a lock on the lock file `path` (shared or exclusive)? Asked
/// without making the file: one that is missing or cannot be opened is held by no one.
pub fn is_locked(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Append one line to `audit.jsonl`: who did what, when, and how it ended.
pub fn audit(
    home: &Home,
    op: &str,
    inputs: serde_json::Value,
    result: &Result<serde_json::Value, String>,
) {
    let line = serde_json::json!({
        "ts": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "op": op,
        "pid": std::process::id(),
        "user": std::env::var("USER").unwrap_or_default(),
        "inputs": inputs,
        "ok": result.is_ok(),
        "result": match result { Ok(v) => v.clone(), Err(code) => serde_json::json!({"error": code}) },
    });
    let mut text = line.to_string();
    text.push('\n');
    // One write(2) of a whole line in append mode: concurrent writers never interleave.
    if ensure_dir(&home.root).is_ok() {
        if let Ok(mut f) = OpenOptions::new()
            .create(true)
            .append(true)
            .open(home.audit_file())
        {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A timestamp fine enough to order things created in the same second (the FIFO queue).
pub fn now_precise() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Append one structured line to `orange.log` (JSON lines, rotated at 5 MiB, one previous
/// file kept). Best effort: logging never fails a command.
pub fn log(home: &Home, level: &str, msg: &str, extra: serde_json::Value) {
    let mut line = serde_json::json!({"ts": now_precise(), "level": level, "pid": std::process::id(), "msg": msg});
    if let (Some(obj), serde_json::Value::Object(more)) = (line.as_object_mut(), extra) {
        for (k, v) in more {
            obj.entry(k).or_insert(v);
        }
    }
    let path = home.root.join("orange.log");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 5 * 1024 * 1024) {
        let _ = std::fs::rename(&path, home.root.join("orange.log.1"));
    }
    let _ = std::fs::create_dir_all(&home.root);
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&path) {
        // One write of a whole line in append mode: concurrent writers never interleave.
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A state file is replaced whole, private to its owner, and no temp file is left
    /// behind.
    #[test]
    fn a_replaced_file_is_whole_private_and_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("record.json");
        for k in 0..2 {
            let value = serde_json::json!({"k": k, "text": "x".repeat(10_000 * (k + 1))});
            write_json_atomic(&path, &value).unwrap();
            let back: serde_json::Value = read_json(&path).unwrap();
            assert_eq!(back, value);
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
            let names: Vec<_> = fs::read_dir(path.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["record.json"]);
        }
    }
}
