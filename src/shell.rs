//! Running a user's shell command (a project's setup command) in a directory.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{OrangeError, Result};

/// Run `sh -c <cmd>` in `dir` with `env`; a non-zero exit is an error naming `dir`.
pub fn run_in(dir: &Path, cmd: &str, env: &[(&str, &str)], what: &str) -> Result<()> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).current_dir(dir).stdin(Stdio::null());
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .output()
        .map_err(|e| OrangeError::io(format!("starting {what} in {}", dir.display()), e))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(OrangeError::BackendCommandFailed(format!(
        "{what} failed in {} ({}){}{}",
        dir.display(),
        match out.status.code() {
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        },
        if tail.is_empty() { "" } else { ": " },
        tail.join(" | ")
    )))
}
