//! Shared test fixtures: a real git repository with a bare `origin`, a private
//! `$ORANGE_HOME`, and helpers to run the `orange` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

pub const GIT_ENV: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "Orange Test"),
    ("GIT_AUTHOR_EMAIL", "test@orange.invalid"),
    ("GIT_COMMITTER_NAME", "Orange Test"),
    ("GIT_COMMITTER_EMAIL", "test@orange.invalid"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
];

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_orange"))
}

pub struct Env {
    pub tmp: TempDir,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub origin: PathBuf,
}

/// Run git in `dir`, panicking with its stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {:?} in {} failed: {}",
        args,
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
        c.env_remove(v);
    }
    c.env("GIT_CONFIG_GLOBAL", "/dev/null");
    for (k, v) in GIT_ENV {
        c.env(k, v);
    }
    c.output().expect("git runs")
}

/// A repository `<tmp>/<name>` with one commit pushed to a bare `<tmp>/<name>-origin.git`.
pub fn make_repo(root: &Path, name: &str) -> (PathBuf, PathBuf) {
    let origin = root.join(format!("{name}-origin.git"));
    let repo = root.join(name);
    std::fs::create_dir_all(&repo).unwrap();
    git(
        root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().unwrap(),
        ],
    );
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    std::fs::write(repo.join(".gitignore"), "cache/\n").unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.txt"), "one\ntwo\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "initial"]);
    git(
        &repo,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "-u", "origin", "main"]);
    git(&repo, &["remote", "set-head", "origin", "-a"]);
    (repo, origin)
}

impl Env {
    pub fn new() -> Env {
        Self::with_repo("app")
    }

    pub fn with_repo(name: &str) -> Env {
        let tmp = tempfile::Builder::new()
            .prefix("orange-test-")
            .tempdir()
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (repo, origin) = make_repo(&root, name);
        Env {
            home: root.join("orange-home"),
            repo,
            origin,
            tmp,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap()
    }

    /// An `orange` command with this env's ORANGE_HOME, run from the repository.
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_in(&self.repo, args)
    }

    pub fn cmd_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args).current_dir(cwd).env("ORANGE_HOME", &self.home);
        for v in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "ORANGE_TMUX_SOCKET",
            "TMUX",
            "NO_COLOR",
        ] {
            c.env_remove(v);
        }
        c.env("GIT_CONFIG_GLOBAL", "/dev/null");
        for (k, v) in GIT_ENV {
            c.env(k, v);
        }
        c
    }

    /// Run with `--json` from the repository: (success, parsed stdout).
    pub fn json(&self, args: &[&str]) -> (bool, Value) {
        self.json_in(&self.repo, args)
    }

    pub fn json_in(&self, cwd: &Path, args: &[&str]) -> (bool, Value) {
        let mut a = args.to_vec();
        a.push("--json");
        let out = self.cmd_in(cwd, &a).output().unwrap();
        parse_json_output(&a, &out)
    }

    /// Run with `--json` and require success.
    pub fn ok(&self, args: &[&str]) -> Value {
        let (ok, v) = self.json(args);
        assert!(ok, "orange {args:?} failed: {v}");
        v
    }

    /// Run with `--json`, require failure with `code`, return the message.
    pub fn err(&self, args: &[&str], code: &str) -> String {
        let (ok, v) = self.json(args);
        assert!(
            !ok,
            "orange {args:?} succeeded but {code} was expected: {v}"
        );
        assert_eq!(v["error"]["code"], code, "orange {args:?}: {v}");
        v["error"]["message"].as_str().unwrap().to_string()
    }

    pub fn add_project(&self, extra: &[&str]) -> Value {
        let mut a = vec!["project", "add"];
        a.extend_from_slice(extra);
        self.ok(&a)
    }

    pub fn pool_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.home.join("workspaces/.pool.json")).unwrap())
            .unwrap()
    }

    pub fn ws_path(&self, name: &str) -> PathBuf {
        self.home.join("workspaces").join(name)
    }

    pub fn audit_ops(&self) -> Vec<Value> {
        std::fs::read_to_string(self.home.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
            .collect()
    }
}

pub fn parse_json_output(args: &[&str], out: &Output) -> (bool, Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "orange {args:?} printed no single JSON value ({e}): stdout={stdout:?} stderr={:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if !out.status.success() {
        assert!(
            v["error"]["code"].is_string(),
            "error JSON without code: {v}"
        );
        assert!(
            v["error"]["message"].is_string(),
            "error JSON without message: {v}"
        );
    }
    (out.status.success(), v)
}
