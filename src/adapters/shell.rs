//! Running a user's shell command (a project's setup command) in a directory, its output
//! reported as it comes; where a program is on PATH.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{OrangeError, Result};

/// Run `sh -c <cmd>` in `dir` with `env`; a non-zero exit is an error naming `dir` and
/// the last lines it printed on stderr. Each line it prints (stdout and stderr) goes to
/// `step` as it comes (progress: `adapters::progress`).
pub fn run_in(
    dir: &Path,
    cmd: &str,
    env: &[(&str, &str)],
    what: &str,
    step: &crate::adapters::progress::Step,
) -> Result<()> {
    use crate::adapters::progress::split_lines;
    use std::io::Read;
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .spawn()
        .map_err(|e| OrangeError::io(format!("starting {what} in {}", dir.display()), e))?;
    let pump = |mut from: Box<dyn Read + Send>, keep: bool| {
        let mut tail: Vec<String> = vec![];
        let (mut rest, mut buf) = (vec![], [0u8; 8192]);
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => 0,
                Ok(n) => n,
            };
            let chunk: &[u8] = if n == 0 { b"\n" } else { &buf[..n] };
            split_lines(&mut rest, chunk, |l| {
                step.line(l);
                if keep {
                    tail.push(l.to_string());
                    if tail.len() > 5 {
                        tail.remove(0);
                    }
                }
            });
            if n == 0 {
                return tail;
            }
        }
    };
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let tail = std::thread::scope(|s| {
        let o = out.map(|o| s.spawn(move || pump(Box::new(o), false)));
        let tail = err.map(|e| pump(Box::new(e), true)).unwrap_or_default();
        if let Some(o) = o {
            let _ = o.join();
        }
        tail
    });
    let status = child
        .wait()
        .map_err(|e| OrangeError::io(format!("waiting for {what} in {}", dir.display()), e))?;
    if status.success() {
        return Ok(());
    }
    Err(OrangeError::BackendCommandFailed(format!(
        "{what} failed in {} ({}){}{}",
        dir.display(),
        match status.code() {
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
    find_on_path(name).is_some()
}

/// Where `name` is found on PATH (or `name` itself when it has a `/` and is executable).
pub fn find_on_path(name: &str) -> Option<std::path::PathBuf> {
    if name.contains('/') {
        return is_executable(Path::new(name)).then(|| Path::new(name).to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// The first line `program --version` prints (stdout, else stderr), within 10 s; `None`
/// when it cannot run or says nothing.
pub fn version_of(program: &str) -> Option<String> {
    version_with(program, "--version")
}

/// [`version_of`] with another flag (`tmux -V`).
pub fn version_with(program: &str, flag: &str) -> Option<String> {
    let mut child = Command::new(program)
        .arg(flag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().ok()?.is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().ok()?;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// Start `program` with `args` (argv, never a shell), its standard streams closed, and do
/// not wait for it: a watcher thread reaps it, or kills it once `limit` has passed, so a
/// program that hangs never stalls the caller nor outlives its time (when the caller
/// exits first, the program is left to finish on its own).
pub fn spawn_limited(program: &str, args: &[String], limit: std::time::Duration) -> Result<()> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| OrangeError::io(format!("starting {program}"), e))?;
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + limit;
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if std::time::Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    });
    Ok(())
}

/// This process runs as root (effective uid 0, from `/proc/self/status`).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Quote an argv for POSIX `sh`, words separated by spaces.
pub fn join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The processes (of this user, as far as `/proc` lets us read) whose environment holds
/// `key=value`: what a demo's agents and monitor carry (`ORANGE_HOME`).
pub fn pids_with_env(key: &str, value: &str) -> Vec<u32> {
    let want = format!("{key}={value}");
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|b| b.split(|c| *c == 0).any(|kv| kv == want.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Ask a process to end (SIGTERM).
pub fn terminate(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) with a pid and a signal number; no memory is shared.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
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
