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
    /// The file in which the step before bwrap ([`SETUP_RETRY`]) learns that the sandbox
    /// was made: outside it, in a directory the agent cannot write (orange's next start
    /// of it opens this file for writing: a link or a FIFO planted there would be followed).
    pub setup_mark: PathBuf,
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

/// The step before bwrap: bwrap's own set-up can fail for a moment's reason — a file bound
/// by name that its program replaces by a rename at that instant fails the mount with
/// ENOENT (claude saves `~/.claude.json` so, at the end of each turn: a reviewer started
/// then could not start, "Can't bind mount … .claude.json … No such file or directory").
/// Inside the sandbox, [`INSIDE`] writes `started` to descriptor 3 (`$1`, the spec's
/// `setup_mark`, opened by this step) before it runs the command; without it the set-up
/// failed and is tried again, at most twice. (bwrap's `--json-status-fd` cannot tell: it
/// writes `child-pid` before the mounts.) The command itself is never run twice: its exit
/// (127 when it is not found included) is the pane's. No process of its own before bwrap
/// starts (a `mktemp` was one, ~3 ms of every sandboxed start here).
const SETUP_RETRY: &str = r#"s=$1; shift
{ : >"$s"; } 2>/dev/null || exec "$@"
n=0
while :; do
  "$@" 3>"$s"; rc=$?
  if [ "$n" -ge 2 ] || grep -q started "$s"; then rm -f "$s"; exit "$rc"; fi
  n=$((n + 1))
done"#;

/// The first step inside the sandbox: tell [`SETUP_RETRY`] the sandbox is made, close its
/// descriptor (the agent never holds it), run the command.
const INSIDE: &str = r#"echo started >&3; exec 3>&-; exec "$@""#;

/// `$0` of [`SETUP_RETRY`]: what `ps` shows for it.
pub const STEP_NAME: &str = "orange-sandbox";

/// `sh -c <SETUP_RETRY> orange-sandbox <setup mark> bwrap … -- sh -c <INSIDE> orange-agent
/// <command>`: [`BASE`], then `spec`'s mounts in order. (A pane gets it as one line for
/// `/bin/sh -c`: tmux given it word by word, some 200 words, took 3–5 ms longer to start
/// the pane here.)
pub fn argv(spec: &Spec, command: &[String]) -> Vec<String> {
    let s = |p: &Path| p.display().to_string();
    let mut v: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        SETUP_RETRY.into(),
        STEP_NAME.into(),
        s(&spec.setup_mark),
        PROGRAM.into(),
    ];
    v.extend(BASE.iter().map(|a| a.to_string()));
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
    v.extend(["sh", "-c", INSIDE, "orange-agent"].map(String::from));
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
            setup_mark: "/tmp/my home/.agent.sandbox".into(),
        };
        let v = argv(&spec, &["claude".into(), "--".into(), "-x".into()]);
        let at = |s: &str| v.iter().position(|a| a == s).unwrap();
        assert_eq!(v[..2], ["sh", "-c"]);
        assert_eq!(v[3..6], [STEP_NAME, "/tmp/my home/.agent.sandbox", "bwrap"]);
        assert!(at("--tmpfs") < at("--ro-bind-try"));
        assert!(at("--ro-bind-try") < at("--bind-try"));
        assert_eq!(v[at("--bind-try") + 1], "/tmp/my home/ws");
        assert_eq!(v[at("--setenv") + 1], "IS_SANDBOX");
        assert_eq!(v[at("--unsetenv") + 1], "SSH_AUTH_SOCK");
        assert_eq!(
            &v[v.len() - 8..v.len() - 3],
            ["--", "sh", "-c", INSIDE, "orange-agent"]
        );
        assert_eq!(&v[v.len() - 3..], ["claude", "--", "-x"]);
    }

    /// [`SETUP_RETRY`] run by a real `sh` around a stand-in for bwrap (`$1`: a counter
    /// file; it says `started` on fd 3 from run `$2` on, then exits `$3`): the
    /// runs it got and the exit status. Its mark is gone after.
    fn retried(child_from: u32, exit: i32) -> (u32, i32) {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("runs");
        let mark = dir.path().join(".agent.sandbox");
        let fake = r#"n=$(($(cat "$1" 2>/dev/null || echo 0) + 1)); echo $n > "$1"
[ "$n" -ge "$2" ] && echo started >&3
exit "$3""#;
        let st = Command::new("sh")
            .args(["-c", SETUP_RETRY, STEP_NAME])
            .arg(&mark)
            .args(["sh", "-c", fake, "fake"])
            .arg(&count)
            .args([child_from.to_string(), exit.to_string()])
            .status()
            .unwrap();
        let runs = std::fs::read_to_string(&count)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!mark.exists(), "the set-up mark is removed");
        (runs, st.code().unwrap())
    }

    #[test]
    fn a_failed_set_up_is_tried_again_and_the_command_never_twice() {
        // Set up at once, the command exits 1: run once, its status kept.
        assert_eq!(retried(1, 1), (1, 1));
        // The set-up failed once, then the command ran and exited 0.
        assert_eq!(retried(2, 0), (2, 0));
        // The set-up never works: three tries, bwrap's status (1) kept.
        assert_eq!(retried(99, 1), (3, 1));
    }
}
