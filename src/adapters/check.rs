//! Running a project's check command (`check_cmd`, for `group judge`) in a workspace:
//! `sh -c CMD` in a process group of its own, its output (stdout and stderr together) to a
//! temporary file, killed with its whole group when it outlives its timeout (a hung test
//! runner and the servers it started go with it).

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
        let child: i32 = std::fs::read_to_string(d.path().join("child"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed with its group (reaped by init, or a zombie for a moment).
        let gone = (0..100).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let dead = stat.is_empty() || stat.contains(") Z");
            if !dead {
                std::thread::sleep(Duration::from_millis(20));
            }
            dead
        });
        assert!(gone, "the check's child {child} outlived its timeout");
    }
}
