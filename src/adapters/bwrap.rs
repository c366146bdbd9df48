//! bubblewrap (`bwrap`), the sandbox agents can run in: its argv, built from a
//! list of mounts, and a probe that it can make namespaces on this machine. What is
//! mounted where is decided by `execution::sandbox`; this module only speaks bwrap.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{OrangeError, Result};

/// One step of the sandbox's filesystem, applied in order (a later mount covers an
/// earlier one, so a writable path inside a read-only tree comes after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// The path as it is here, read-only (skipped when it does not exist).
    ReadOnly(PathBuf),
    /// The path as it is here, writable (skipped when it does not exist).
    Writable(PathBuf),
    /// An empty, private, writable directory (gone when the agent ends).
    Tmpfs(PathBuf),
    /// A symbolic link `at` → `target`.
    Symlink { target: PathBuf, at: PathBuf },
    /// `/dev/null` over a file (a socket that must not be reached).
    Null(PathBuf),
    /// The directory `from` (as it is here), writable, seen at `to`.
    Rebind { from: PathBuf, to: PathBuf },
    /// The directory `from` (as it is here), read-only, seen at `to`.
    ReadOnlyAt { from: PathBuf, to: PathBuf },
    /// An empty directory made at the path (in a private tmpfs: no mount).
    Dir(PathBuf),
}

/// Everything bwrap needs besides the mounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    pub mounts: Vec<Mount>,
    pub cwd: PathBuf,
    pub setenv: Vec<(String, String)>,
    pub unsetenv: Vec<String>,
}

/// The program, from PATH.
pub const PROGRAM: &str = "bwrap";

/// What every sandbox is: the system read-only (`/` bound read-only, a fresh `/dev`), its
/// own user namespace with no capabilities (root inside is powerless outside: no remount,
/// no mount, no ptrace), its own process namespace (and `/proc`: no other process is seen
/// or signalled), its own IPC; the network is shared (the agent reaches its API); the agent
/// dies with its pane.
const BASE: &[&str] = &[
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--proc",
    "/proc",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
];

/// `bwrap … -- <command>`: [`BASE`], then `spec`'s mounts in order.
pub fn argv(spec: &Spec, command: &[String]) -> Vec<String> {
    let mut v: Vec<String> = std::iter::once(PROGRAM)
        .chain(BASE.iter().copied())
        .map(|s| s.to_string())
        .collect();
    let s = |p: &Path| p.display().to_string();
    for m in &spec.mounts {
        match m {
            Mount::ReadOnly(p) => v.extend(["--ro-bind-try".into(), s(p), s(p)]),
            Mount::Writable(p) => v.extend(["--bind-try".into(), s(p), s(p)]),
            Mount::Tmpfs(p) => v.extend(["--tmpfs".into(), s(p)]),
            Mount::Symlink { target, at } => v.extend(["--symlink".into(), s(target), s(at)]),
            Mount::Null(p) => v.extend(["--ro-bind".into(), "/dev/null".into(), s(p)]),
            Mount::Rebind { from, to } => v.extend(["--bind".into(), s(from), s(to)]),
            Mount::ReadOnlyAt { from, to } => v.extend(["--ro-bind".into(), s(from), s(to)]),
            Mount::Dir(p) => v.extend(["--dir".into(), s(p)]),
        }
    }
    for (k, val) in &spec.setenv {
        v.extend(["--setenv".into(), k.clone(), val.clone()]);
    }
    for k in &spec.unsetenv {
        v.extend(["--unsetenv".into(), k.clone()]);
    }
    v.extend(["--chdir".into(), s(&spec.cwd), "--".into()]);
    v.extend(command.iter().cloned());
    v
}

/// Can bwrap run here? Missing: `backend_not_found`. Present but unable to make its
/// namespaces (user namespaces disabled, a container without the rights): a
/// `backend_command_failed` naming bwrap's own words. Takes a few milliseconds, once per
/// process (a success is remembered: `task create` checks before it records the task and
/// again when it starts the agent).
pub fn probe() -> Result<()> {
    static PROBED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if PROBED.get().is_some() {
        return Ok(());
    }
    probe_now()?;
    let _ = PROBED.set(());
    Ok(())
}

fn probe_now() -> Result<()> {
    if !crate::adapters::shell::on_path(PROGRAM) {
        return Err(OrangeError::BackendNotFound(
            "the sandbox needs bubblewrap, and `bwrap` is not on PATH: install it (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`) or pass --sandbox none".into(),
        ));
    }
    let mut child = Command::new(PROGRAM)
        .args(BASE)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| OrangeError::io("starting bwrap".to_string(), e))?;
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|e| OrangeError::io("waiting for bwrap".to_string(), e))?
        {
            break st;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(OrangeError::BackendCommandFailed(
                "bwrap did not start a sandbox within 10 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    let said = err.trim().lines().last().unwrap_or("").trim().to_string();
    Err(OrangeError::BackendCommandFailed(format!(
        "bwrap cannot make a sandbox on this machine ({}{}): user namespaces may be disabled (`sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 `kernel.apparmor_restrict_unprivileged_userns=0`), or this is a container without the rights; pass --sandbox none to run without one",
        match status.code() {
            Some(c) => format!("exit status {c}"),
            None => "killed".into(),
        },
        if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_keeps_the_order_and_ends_with_the_command() {
        let spec = Spec {
            mounts: vec![
                Mount::Tmpfs("/tmp".into()),
                Mount::ReadOnly("/tmp/my home".into()),
                Mount::Writable("/tmp/my home/ws".into()),
                Mount::Symlink {
                    target: "x".into(),
                    at: "/tmp/l".into(),
                },
            ],
            cwd: "/tmp/my home/ws".into(),
            setenv: vec![("IS_SANDBOX".into(), "1".into())],
            unsetenv: vec!["SSH_AUTH_SOCK".into()],
        };
        let v = argv(&spec, &["claude".into(), "--".into(), "-x".into()]);
        let at = |s: &str| v.iter().position(|a| a == s).unwrap();
        assert_eq!(v[0], "bwrap");
        assert!(at("--tmpfs") < at("--ro-bind-try"));
        assert!(at("--ro-bind-try") < at("--bind-try"));
        assert_eq!(v[at("--bind-try") + 1], "/tmp/my home/ws");
        assert_eq!(v[at("--setenv") + 1], "IS_SANDBOX");
        assert_eq!(v[at("--unsetenv") + 1], "SSH_AUTH_SOCK");
        assert_eq!(&v[v.len() - 4..], ["--", "claude", "--", "-x"]);
    }
}
