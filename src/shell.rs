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

/// Quote `s` for a POSIX shell: `'…'`, with each `'` written as `'\''`.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Is `name` an executable on PATH?
pub fn on_path(name: &str) -> bool {
    if name.contains('/') {
        return is_executable(Path::new(name));
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(name))))
        .unwrap_or(false)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_survives_a_real_shell() {
        for s in [
            "plain",
            "",
            "a b",
            "it's",
            "$(touch x)",
            "`id`",
            "a;b;",
            "line1\nline2",
            "'\"\\$",
            "-rf",
            "名前 🍊",
        ] {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(s)))
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                s,
                "{s:?} → {}",
                quote(s)
            );
        }
    }
}
