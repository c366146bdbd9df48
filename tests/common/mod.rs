//! Shared test fixtures: a real git repository with a bare `origin`, a private
//! `$ORANGE_HOME` and `$HOME`, and helpers to run the `orange` binary; the private tmux
//! server and the tmux helpers are in tmux.rs.
#![allow(dead_code)]

pub mod chat_standin;
pub mod client;
pub mod gh_standin;
pub mod http_standin;
pub mod notify_standin;
pub mod raw_http;
pub mod responses_standin;
pub mod rig;
pub mod scripted;
pub mod sshd;
pub mod standin;
mod tmux;

// Everything of tmux.rs by its old path, `common::TmuxServer` and the rest.
pub use tmux::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

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

/// The XDG base directories: removed from a test's commands, so that they fall back
/// to its private `HOME` (a test that needs them sets them, as `TaskEnv::real`'s extra).
pub const XDG_HOMES: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// The `HOME` a test's programs get: `<dir>/user-home`, created empty. Nothing a test
/// runs reads or writes the home of the user running the suite.
pub fn user_home(dir: &Path) -> PathBuf {
    let home = dir.join("user-home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

pub struct Env {
    pub tmp: TempDir,
    /// `ORANGE_HOME`.
    pub home: PathBuf,
    /// `HOME` (see [`user_home`]).
    pub user_home: PathBuf,
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
            user_home: user_home(&root),
            repo,
            origin,
            tmp,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap()
    }

    /// An `orange` command with this env's ORANGE_HOME and HOME, run from the repository.
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_in(&self.repo, args)
    }

    pub fn cmd_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(cwd)
            .env("ORANGE_HOME", &self.home)
            .env("HOME", &self.user_home);
        for v in XDG_HOMES {
            c.env_remove(v);
        }
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
        expect_error(args, self.json(args), code)
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

/// Require a failed command with `code`; its message.
pub fn expect_error(args: &[&str], (ok, v): (bool, Value), code: &str) -> String {
    assert!(
        !ok,
        "orange {args:?} succeeded but {code} was expected: {v}"
    );
    assert_eq!(v["error"]["code"], code, "orange {args:?}: {v}");
    v["error"]["message"].as_str().unwrap().to_string()
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

/// End what still runs of `home` once its tmux server is gone: asked to end (SIGTERM),
/// killed after 10 s, with every child they start meanwhile (the product's own stop,
/// `process::stop_trees`; one stuck in the kernel is given up on 10 s later). One that
/// outlived its test would write into the test's removed temp directory (a real agent
/// saves its state as it exits) and leave it behind in /tmp.
pub fn end_processes_of(home: &Path) {
    use orange::adapters::{process, shell};
    let home = home.to_str().expect("test paths are UTF-8");
    let roots = shell::pids_with_env("ORANGE_HOME", home);
    if !roots.is_empty() {
        let _ = process::stop_trees(&roots, Duration::from_secs(10));
    }
}

/// How often the waits below look again.
pub const POLL: Duration = Duration::from_millis(50);

/// Poll `f` every [`POLL`] until it is true; panic with `what` after `timeout`. Tests wait
/// for what they can observe with this, never with a fixed sleep.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Poll `f` every [`POLL`] until it gives something; None after `timeout` (for a test
/// that has more to say than `wait_until`'s panic when nothing comes).
pub fn poll<T>(timeout: Duration, f: impl FnMut() -> Option<T>) -> Option<T> {
    poll_every(POLL, timeout, f)
}

/// [`poll`], looking every `every` (a latency measure wants looks closer together).
pub fn poll_every<T>(
    every: Duration,
    timeout: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// [`wait_until`] with the timeout in seconds.
pub fn wait_for(what: &str, secs: u64, f: impl FnMut() -> bool) {
    wait_until(what, Duration::from_secs(secs), f)
}

/// The other side of [`wait_until`], for a test that must show something does NOT happen:
/// `f` must hold at every look (every [`POLL`]) for `period`; panics with `what` at the
/// first look where it does not. This is the one place a test lets time pass on purpose.
pub fn holds_for(what: &str, period: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    loop {
        assert!(f(), "{what} stopped holding after {:?}", start.elapsed());
        if start.elapsed() >= period {
            return;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether this run is CI's (`CI` set, and not to `false` or `0`): there `.ci/run` has
/// installed every program the suite drives, so a missing one is a failure.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The name of the running test (libtest names its thread after it).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("this test")
        .to_string()
}

/// A test that drives a real external program (zellij, the real agent CLIs from npm,
/// sshd, TPM…) calls this first: `found` says whether `tool` is there. Missing in CI (see
/// [`in_ci`]): the test fails, saying so. Missing elsewhere: it prints
/// `SKIP: <test>: <reason>` (shown even when the test passes) and returns false, and the
/// test returns at once. Such a test never passes silently without its program.
#[must_use]
pub fn require(tool: &str, found: bool, why: &str) -> bool {
    if found {
        return true;
    }
    let test = test_name();
    let fix = "scripts/install-test-deps.sh installs it";
    assert!(
        !in_ci(),
        "{test}: {tool} is missing, and CI must run this test ({why}); {fix}"
    );
    // Straight to stderr, not through eprintln!: the test harness keeps what a passing
    // test prints to itself, and a skip must be seen.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIP: {test}: {tool} is not installed ({why}); {fix}"
    );
    false
}

/// Write `text` to `path` and make it executable (a script a test runs, or has orange run).
pub fn write_script(path: &Path, text: impl AsRef<[u8]>) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The command line of process `pid`, from /proc (empty once it is gone).
pub fn cmdline(pid: &str) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// `program` in a directory of `path` (a `PATH` value), executable.
pub fn find_program(path: &str, program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).find_map(|dir| {
        let p = dir.join(program);
        std::fs::metadata(&p)
            .ok()
            .filter(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .map(|_| p)
    })
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// An Env with a tmux server, fake-agent harnesses in config.toml, and fixtures/bin
/// (fake claude, gh) on PATH.
pub struct TaskEnv {
    pub env: Env,
    pub tmux: TmuxServer,
    pub path: String,
    /// More environment for the tmux server and every orange command (the real agents'
    /// HOME, API base URL…).
    pub extra: Vec<(String, String)>,
}

/// The server first, then what still runs of this orange home, before the temp
/// directory goes (the fields drop after this: `env` removes it).
impl Drop for TaskEnv {
    fn drop(&mut self) {
        self.tmux.kill();
        end_processes_of(&self.env.home);
    }
}

impl std::ops::Deref for TaskEnv {
    type Target = Env;
    fn deref(&self) -> &Env {
        &self.env
    }
}

impl TaskEnv {
    pub fn new() -> TaskEnv {
        Self::from_env(Env::new())
    }

    pub fn from_env(env: Env) -> TaskEnv {
        let bin_dir = bin().parent().unwrap().to_path_buf();
        let path = format!(
            "{}:{}:{}",
            bin_dir.display(),
            fixtures().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut server_env: Vec<(&str, &str)> = GIT_ENV.to_vec();
        server_env.push(("GIT_CONFIG_GLOBAL", "/dev/null"));
        server_env.push(("PATH", &path));
        let tmux = TmuxServer::start(&env.root(), &server_env);
        std::fs::create_dir_all(&env.home).unwrap();
        let agent = fixtures().join("fake-agent.sh");
        let mut cfg = String::new();
        for mode in ["complete", "stuck", "fail", "exit0", "wait", "quiet"] {
            cfg.push_str(&format!(
                "[harness.fake-{mode}]\ncommand = \"sh {} {mode} {{prompt}}\"\n",
                agent.display()
            ));
        }
        std::fs::write(env.home.join("config.toml"), cfg).unwrap();
        TaskEnv {
            env,
            tmux,
            path,
            extra: Vec::new(),
        }
    }

    /// An Env whose agents are the REAL programs on PATH (not tests/fixtures/bin), with
    /// `extra` (HOME, ANTHROPIC_BASE_URL…) in the tmux server's environment and in every
    /// orange command's. No config.toml.
    pub fn real(env: Env, extra: &[(&str, String)]) -> TaskEnv {
        let bin_dir = bin().parent().unwrap().to_path_buf();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut server_env: Vec<(&str, &str)> = GIT_ENV.to_vec();
        server_env.push(("GIT_CONFIG_GLOBAL", "/dev/null"));
        server_env.push(("PATH", &path));
        for (k, v) in extra {
            server_env.push((k, v.as_str()));
        }
        let tmux = TmuxServer::start(&env.root(), &server_env);
        std::fs::create_dir_all(&env.home).unwrap();
        TaskEnv {
            env,
            tmux,
            path,
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    pub fn cmd_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = self.env.cmd_in(cwd, args);
        c.env("ORANGE_TMUX_SOCKET", &self.tmux.socket)
            .env("PATH", &self.path);
        for (k, v) in &self.extra {
            c.env(k, v);
        }
        c
    }

    pub fn json_in(&self, cwd: &Path, args: &[&str]) -> (bool, Value) {
        let mut a = args.to_vec();
        a.push("--json");
        let out = self.cmd_in(cwd, &a).output().unwrap();
        parse_json_output(&a, &out)
    }

    pub fn json(&self, args: &[&str]) -> (bool, Value) {
        self.json_in(&self.env.repo, args)
    }

    pub fn ok(&self, args: &[&str]) -> Value {
        let (ok, v) = self.json(args);
        assert!(ok, "orange {args:?} failed: {v}");
        v
    }

    /// [`TaskEnv::ok`] with a counting tmux first on `PATH` ([`counting_tmux`]): what it
    /// printed, and the tmux calls it made, each whole ([`whole_calls`]).
    pub fn ok_counting_tmux(&self, args: &[&str]) -> (Value, Vec<String>) {
        let (bin, log) = counting_tmux(&self.root());
        let before = whole_calls(&log).len();
        let mut a = args.to_vec();
        a.push("--json");
        let out = self
            .cmd_in(&self.env.repo, &a)
            .env("PATH", format!("{}:{}", bin.display(), self.path))
            .output()
            .unwrap();
        let (ok, v) = parse_json_output(&a, &out);
        assert!(ok, "orange {args:?} failed: {v}");
        (v, whole_calls(&log)[before..].to_vec())
    }

    pub fn err(&self, args: &[&str], code: &str) -> String {
        expect_error(args, self.json(args), code)
    }

    /// `orange task create <args…>`, which must succeed: the new task.
    pub fn create(&self, args: &[&str]) -> Value {
        let mut a = vec!["task", "create"];
        a.extend_from_slice(args);
        self.ok(&a)
    }

    /// A task on `branch` for agent `harness` with a stock prompt: its id.
    pub fn create_id(&self, branch: &str, harness: &str) -> String {
        id(&self.create(&[branch, "do the thing", "--harness", harness]))
    }

    /// `orange hook agent EVENT` as an agent's own hooks send it (Claude Code's events): in
    /// the task's workspace, the payload on stdin. It must succeed; its report.
    pub fn hook(&self, id: &str, event: &str, payload: Value) -> Value {
        let t = self.task(id);
        let ws = self.ws_path(t["workspace"].as_str().unwrap());
        let mut c = self.cmd_in(&ws, &["hook", "agent", event, "--json"]);
        c.env("ORANGE_TASK_ID", id);
        let out = output_with_stdin(c, payload.to_string().as_bytes());
        assert!(out.status.success(), "hook {event}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// A session `name` of `width` × `height` whose shell runs `before` (e.g. `trap true
    /// INT; `), then the sidebar of task `id`, then says `exited <its status>` and idles.
    pub fn sidebar_session(&self, name: &str, id: &str, (width, height): (u16, u16), before: &str) {
        let cmd = format!(
            "{before}env ORANGE_HOME='{}' ORANGE_TMUX_SOCKET='{}' '{}' sidebar --task {id}; echo exited $?; exec sleep 600",
            self.home.display(),
            self.tmux.socket,
            bin().display()
        );
        self.tmux.sized_session(name, (width, height), &[&cmd]);
    }

    pub fn task(&self, id: &str) -> Value {
        self.ok(&["task", "show", id])
    }

    /// The process id of task `id`'s pane (its agent, or what started it).
    pub fn pane_pid(&self, id: &str) -> String {
        let t = self.task(id);
        let pane = t["tmux_pane_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no pane: {t}"));
        self.tmux.ok(&["display", "-p", "-t", pane, "#{pane_pid}"])
    }

    pub fn wait_status(&self, id: &str, status: &str) -> Value {
        let mut last = Value::Null;
        wait_for(&format!("task {id} to be {status}"), 20, || {
            last = self.task(id);
            last["status"] == status
        });
        last
    }

    pub fn wait_session(&self, id: &str, state: &str) -> Value {
        let mut last = Value::Null;
        wait_for(&format!("task {id}'s session to be {state}"), 20, || {
            last = self.task(id);
            last["session"]["state"] == state
        });
        last
    }

    /// One `monitor --once --json` on a clock `later` ahead (`ORANGE_CLOCK_SKEW`): a test
    /// stands past a grace or a reset without sleeping through it. Its report.
    pub fn monitor_at(&self, later: &str) -> Value {
        let out = self
            .cmd_in(&self.repo, &["monitor", "--once", "--json"])
            .env("ORANGE_CLOCK_SKEW", later)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// Append `text` to the test's config.toml.
    pub fn append_config(&self, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.home.join("config.toml"))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// The task's history events named `event`, oldest first.
    pub fn history_events(&self, id: &str, event: &str) -> Vec<Value> {
        self.task(id)["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == event)
            .cloned()
            .collect()
    }

    /// What the fake agent of task `id` read from its terminal, a line each.
    pub fn input_lines(&self, id: &str) -> Vec<String> {
        std::fs::read_to_string(self.home.join("agent-log").join(id).join("input"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn agent_log(&self, id: &str, file: &str) -> String {
        let p = self.env.home.join("agent-log").join(id).join(file);
        wait_for(&format!("{}", p.display()), 20, || p.exists());
        // The fake agent writes each file with one `>` redirection: it may exist before
        // its text is in it.
        std::thread::sleep(POLL);
        std::fs::read_to_string(p).unwrap()
    }
}

/// The `id` of a task (or anything else) as JSON.
pub fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Run `c` with `input` on its standard input; its output (stdout captured).
pub fn output_with_stdin(mut c: Command, input: &[u8]) -> Output {
    use std::io::Write;
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}
