//! Processes by pid, from `/proc` (Linux): a process's tree (it and every descendant) and
//! stopping one: SIGTERM to the whole tree, then, after a grace period, SIGKILL to what is
//! left, each waited for by looking again every [`POLL`] (never a fixed sleep). What
//! `task respawn --force` stops a live agent with: the agent, its tool calls, their
//! children.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::error::{OrangeError, Result};

/// How often a stop looks whether the processes are gone.
pub const POLL: Duration = Duration::from_millis(50);

/// Is `pid` a running process (there, and not a zombie waiting for its parent)?
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// A process's state letter and parent pid, from `/proc/<pid>/stat` (its name, in
/// parentheses, may hold spaces and parentheses: the fields are read after the last `)`).
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Every running process and its parent.
fn parents() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| match stat(pid)? {
            (s, ppid) if s != 'Z' && s != 'X' => Some((pid, ppid)),
            _ => None,
        })
        .collect()
}

/// `roots` and every running descendant of them.
pub fn tree(roots: &[u32]) -> BTreeSet<u32> {
    let all = parents();
    let mut found: BTreeSet<u32> = roots.iter().copied().filter(|p| alive(*p)).collect();
    loop {
        let more: Vec<u32> = all
            .iter()
            .filter(|(pid, ppid)| found.contains(ppid) && !found.contains(pid))
            .map(|(pid, _)| *pid)
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

fn signal(pids: &BTreeSet<u32>, sig: libc::c_int) {
    for pid in pids {
        if let Ok(p) = libc::pid_t::try_from(*pid) {
            // SAFETY: kill(2) takes any pid and signal number; an error (gone already, not
            // ours) is left to the next look.
            unsafe {
                libc::kill(p, sig);
            }
        }
    }
}

/// How a process tree was stopped.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Stopped {
    /// The processes sent SIGTERM.
    pub terminated: Vec<u32>,
    /// Those still running after the grace period, sent SIGKILL.
    pub killed: Vec<u32>,
}

/// Stop `root` and all its descendants: SIGTERM to each, then, what still runs after
/// `grace`, SIGKILL (its children that came meanwhile too); returns once every one is gone
/// (an error if one outlives a SIGKILL by `grace`, which only a process stuck in the
/// kernel does). Descendants are looked for again at every look: a child forked while the
/// tree stops, or orphaned by its parent's end, is stopped too.
pub fn stop_tree(root: u32, grace: Duration) -> Result<Stopped> {
    stop_trees(&[root], grace)
}

/// [`stop_tree`] of several roots at once (one grace period for all).
pub fn stop_trees(roots: &[u32], grace: Duration) -> Result<Stopped> {
    let mut known = tree(roots);
    let mut stopped = Stopped {
        terminated: known.iter().copied().collect(),
        killed: vec![],
    };
    signal(&known, libc::SIGTERM);
    let left = |known: &mut BTreeSet<u32>| {
        let now = tree(&known.iter().copied().collect::<Vec<_>>());
        known.extend(now.iter().copied());
        now
    };
    let start = Instant::now();
    loop {
        let running = left(&mut known);
        if running.is_empty() {
            return Ok(stopped);
        }
        if start.elapsed() >= grace {
            stopped.killed = running.iter().copied().collect();
            signal(&running, libc::SIGKILL);
            break;
        }
        // New children since the SIGTERM get it too.
        let new: BTreeSet<u32> = running
            .iter()
            .filter(|p| !stopped.terminated.contains(p))
            .copied()
            .collect();
        if !new.is_empty() {
            stopped.terminated.extend(new.iter().copied());
            signal(&new, libc::SIGTERM);
        }
        std::thread::sleep(POLL);
    }
    let start = Instant::now();
    loop {
        let running = left(&mut known);
        if running.is_empty() {
            return Ok(stopped);
        }
        if start.elapsed() >= grace {
            return Err(OrangeError::BackendCommandFailed(format!(
                "processes {running:?} outlived SIGKILL by {}s",
                grace.as_secs()
            )));
        }
        signal(&running, libc::SIGKILL);
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // the test starts processes to stop on purpose
    fn a_tree_is_stopped_children_and_a_term_ignoring_one_included() {
        // sh → (a child that ignores TERM) + sleep: the TERM-ignoring one is killed.
        let mut sh = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'trap \"\" TERM; while :; do sleep 1; done' & sleep 300 & wait",
            ])
            .spawn()
            .unwrap();
        let root = sh.id();
        let mut all = BTreeSet::new();
        let start = Instant::now();
        while all.len() < 4 && start.elapsed() < Duration::from_secs(10) {
            all = tree(&[root]);
            std::thread::sleep(POLL);
        }
        assert!(all.len() >= 4, "{all:?}");
        let stopped = stop_tree(root, Duration::from_millis(500)).unwrap();
        let _ = sh.wait();
        assert!(!stopped.killed.is_empty(), "{stopped:?}");
        for p in &all {
            assert!(!alive(*p), "{p} of {all:?} still runs");
        }
    }

    #[test]
    fn this_process_runs_and_a_missing_one_does_not() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX));
        assert_eq!(stat(std::process::id()).map(|(s, _)| s == 'Z'), Some(false));
    }
}
