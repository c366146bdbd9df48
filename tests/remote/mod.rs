//! Remote hosts, over a REAL OpenSSH server on 127.0.0.1 (tests/common/sshd.rs)
//! standing in for another machine: its own ORANGE_HOME and tmux server (a second TaskEnv,
//! with its own repository and bare origin), reached by the local orange through `host add
//! … --ssh-option …`. Nothing here talks to the remote side except through ssh, except to
//! check what is true there.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::sshd::Sshd;
use crate::common::{self, bin, Env, TaskEnv};

mod hosts;
mod listing;
mod serve;
mod tasks;

struct Remote {
    /// This machine: the person's orange and tmux.
    local: TaskEnv,
    /// The "remote host": the orange home, tmux server and repository there.
    remote: TaskEnv,
    sshd: Sshd,
}

fn s(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A local orange with host `box` (the sshd) holding project `app` (the remote repo).
fn setup_with_bin(orange_bin: &Path) -> Option<Remote> {
    let remote = TaskEnv::new();
    let local = TaskEnv::from_env(Env::with_repo("here"));
    let sshd = Sshd::start(&local.root())?;
    let mut args = sshd.host_add_args("box");
    args.extend([
        "--orange-bin".to_string(),
        orange_bin.display().to_string(),
        "--remote-home".to_string(),
        remote.home.display().to_string(),
        "--remote-socket".to_string(),
        remote.tmux.socket.clone(),
    ]);
    local.ok(&s(&args));
    Some(Remote {
        local,
        remote,
        sshd,
    })
}

fn setup() -> Option<Remote> {
    setup_with_bin(&bin())
}

impl Remote {
    fn add_project(&self) -> Value {
        let repo = self.remote.repo.display().to_string();
        self.local
            .ok(&["project", "add", "--host", "box", &repo, "--pool-size", "3"])
    }

    fn create(&self, branch: &str, summary: &str, harness: &str) -> Value {
        self.local.ok(&[
            "task",
            "create",
            "--project",
            "app",
            branch,
            summary,
            "--harness",
            harness,
        ])
    }
}

/// Run orange here (this machine's tmux and PATH), text output.
fn out_of(l: &TaskEnv, args: &[&str]) -> std::process::Output {
    l.cmd_in(&l.repo, args).output().unwrap()
}

/// An `ssh` in `<dir>/<name>/` (to put first on PATH) that appends its arguments to
/// `<dir>/<log>`, then runs `then` (a line of sh). Returns (its directory, the log).
fn ssh_wrapper(dir: &Path, name: &str, log: &str, then: &str) -> (PathBuf, PathBuf) {
    let bin_dir = dir.join(name);
    std::fs::create_dir_all(&bin_dir).unwrap();
    let log = dir.join(log);
    let script = bin_dir.join("ssh");
    common::write_script(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n{then}\n", log.display()),
    );
    (bin_dir, log)
}

/// An `ssh` first on PATH that logs each call, then runs the real one.
fn ssh_counter(dir: &Path) -> (PathBuf, PathBuf) {
    let real = ["/usr/bin/ssh", "/usr/local/bin/ssh", "/bin/ssh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("ssh");
    ssh_wrapper(dir, "counting", "ssh-calls", &format!("exec {real} \"$@\""))
}

/// The registry, links and task files of a home (what an unreachable host must not touch).
fn state_files(home: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(home).unwrap().to_path_buf();
            if rel.starts_with("run") || rel.ends_with("orange.log") || rel.ends_with("audit.jsonl")
            {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}
