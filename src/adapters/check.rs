//! Running a project's check command (`check_cmd`, for `group judge`) in a workspace:
//! `sh -c CMD` in a process group of its own, its output (stdout and stderr together) to a
//! temporary file, killed with its whole group when it outlives its timeout (a hung test
//! runner and the servers it started go with it).
//!
//! The group lives no longer than the check or the command that runs it: when the check
//! has ended, orange kills what it left in the group (a server in the background); and a
//! watcher in the group (`sh`, reading a pipe only orange writes) kills the whole group
//! when the pipe closes, as the kernel closes it when orange dies (Ctrl-C, SIGKILL), so a
//! judging killed leaves no check at work in a member's workspace beside the next one.
//! A process that leaves the group (`setsid`: a daemon, a tmux server) is not followed.

use std::io::{Read, Seek};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{OrangeError, Result};

/// One run of a check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRun {
    /// Its exit status (`None`: killed by a signal, its timeout's or another's).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// Its last lines of output.
    pub tail: Vec<String>,
}

impl CheckRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Run `cmd` in `dir` for at most `timeout`; keep its last `keep` lines of output.
pub fn run(dir: &Path, cmd: &str, timeout: Duration, keep: usize) -> Result<CheckRun> {
    let what = || format!("the check {cmd:?} in {}", dir.display());
    let mut out = tempfile::tempfile().map_err(|e| OrangeError::io(what(), e))?;
    let err = out.try_clone().map_err(|e| OrangeError::io(what(), e))?;
    let started = Instant::now();
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            out.try_clone().map_err(|e| OrangeError::io(what(), e))?,
        ))
        .stderr(Stdio::from(err))
        .process_group(0);
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
        c.env_remove(v);
    }
    let mut child = c.spawn().map_err(|e| OrangeError::io(what(), e))?;
    let watcher = watch(child.id());
    let deadline = started + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| OrangeError::io(what(), e))? {
            break s;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            // The whole group: the shell and everything it started.
            // SAFETY: kill(2) with a negative pid signals the process group; no memory.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            break child.wait().map_err(|e| OrangeError::io(what(), e))?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let duration = started.elapsed();
    // What the check left behind goes, killed here (a group stopped by its terminal would
    // stop the watcher too), then the watcher with it. Its group id is still the check's:
    // the watcher, not yet reaped, is in it.
    if let Some(mut w) = watcher {
        // SAFETY: kill(2) with a negative pid signals the process group; no memory.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        drop(w.stdin.take());
        let _ = w.wait();
    }
    let mut text = Vec::new();
    let _ = out.rewind();
    let _ = out.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(keep)..]
        .iter()
        .map(|l| l.to_string())
        .collect();
    Ok(CheckRun {
        exit_code: status.code(),
        timed_out,
        duration,
        tail,
    })
}

/// A watcher in the check's process group `pgid`: it kills the group when its standard
/// input (a pipe, held by the returned child's `stdin`) closes, as it does when orange
/// dies. It ignores what the check may send its own group (`trap 'kill 0' EXIT`, the
/// terminal's stop signals). `None` when it cannot join the group (the check and
/// everything it started have ended already).
fn watch(pgid: u32) -> Option<std::process::Child> {
    Command::new("sh")
        .args([
            "-c",
            "trap '' HUP INT QUIT TERM TSTP TTIN TTOU USR1 USR2 ALRM PIPE; read -r _; kill -9 0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(pgid as i32)
        .spawn()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_passes_fails_or_is_killed_at_its_timeout_with_its_children() {
        let d = tempfile::tempdir().unwrap();
        let ok = run(
            d.path(),
            "echo one; echo two >&2; true",
            Duration::from_secs(30),
            5,
        )
        .unwrap();
        assert!(ok.passed() && !ok.timed_out, "{ok:?}");
        assert_eq!(ok.tail, ["one", "two"]);
        let bad = run(d.path(), "echo no; exit 3", Duration::from_secs(30), 1).unwrap();
        assert_eq!((bad.passed(), bad.exit_code), (false, Some(3)));
        // A child that would outlive the shell holds the output file, not us.
        let hung = run(
            d.path(),
            "sleep 300 & echo $! > child; echo started; wait",
            Duration::from_millis(300),
            5,
        )
        .unwrap();
        assert!(hung.timed_out && !hung.passed(), "{hung:?}");
        assert_eq!(hung.tail, ["started"]);
        let child = pid_in(d.path(), "child");
        assert!(
            ends(child),
            "the check's child {child} outlived its timeout"
        );
    }

    #[test]
    fn what_a_check_leaves_in_the_background_ends_with_it() {
        let d = tempfile::tempdir().unwrap();
        let done = run(
            d.path(),
            "sleep 300 & echo $! > child; echo left",
            Duration::from_secs(30),
            5,
        )
        .unwrap();
        assert!(done.passed(), "{done:?}");
        let child = pid_in(d.path(), "child");
        assert!(ends(child), "the check's child {child} outlived the check");
    }

    #[test]
    fn a_check_that_signals_its_own_group_keeps_its_watcher() {
        let d = tempfile::tempdir().unwrap();
        // `trap 'kill 0' EXIT`: the check's TERM to its group on the way out, which a
        // leftover ignores; and a stop of its group (as a terminal's SIGTTIN would) as it
        // ends.
        for cmd in [
            "trap '' TERM; sleep 300 & echo $! > child; trap - TERM; trap 'kill 0' EXIT; echo tests",
            "sleep 300 & echo $! > child; trap '' TSTP; kill -TSTP 0; exit 0",
        ] {
            let _ = std::fs::remove_file(d.path().join("child"));
            let done = run(d.path(), cmd, Duration::from_secs(30), 5).unwrap();
            assert!(!done.timed_out, "{cmd}: {done:?}");
            let child = pid_in(d.path(), "child");
            assert!(ends(child), "{cmd}: the check's child {child} outlived it");
        }
    }

    /// The pid a check wrote to `file` in `dir`.
    fn pid_in(dir: &Path, file: &str) -> i32 {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether process `pid` ends (killed: reaped by init, or a zombie for a moment)
    /// within two seconds.
    fn ends(pid: i32) -> bool {
        (0..100).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let dead = stat.is_empty() || stat.contains(") Z");
            if !dead {
                std::thread::sleep(Duration::from_millis(20));
            }
            dead
        })
    }
}
