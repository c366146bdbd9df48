//! Long work says what it does while it runs (never a silent wait): `workspace init` with a
//! setup command, a task whose workspace is being set up or whose pool another command
//! holds, `workspace acquire --wait` on a full pool, `workspace shutdown`, `restore --yes`.
//! On a terminal (a real tmux pane) a live line: the workspace, its setup, the setup's last
//! line, the time so far; otherwise plain lines on stderr; stdout keeps the result alone,
//! and `--json` adds nothing anywhere.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::common::{self, Env, TaskEnv, TmuxServer};

/// A command running in the background whose stderr is read line by line as it comes.
struct Running {
    child: Child,
    rx: Receiver<String>,
    seen: Vec<String>,
}

fn start(mut c: Command) -> Running {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    Running {
        child,
        rx,
        seen: vec![],
    }
}

impl Running {
    /// Wait for a stderr line containing `text`.
    fn wait_line(&mut self, text: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no line with {text:?} within {secs}s: {:?}", self.seen),
            }
        }
    }

    /// Wait for the end: (success, stdout, every stderr line).
    fn finish(mut self) -> (bool, String, Vec<String>) {
        let mut out = String::new();
        use std::io::Read;
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let status = self.child.wait().unwrap();
        while let Ok(l) = self.rx.recv_timeout(Duration::from_secs(10)) {
            self.seen.push(l);
        }
        (status.success(), out, self.seen)
    }
}

fn text_of(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lines of `err` in order contain each of `wanted` in that order.
fn in_order(err: &str, wanted: &[&str]) {
    let mut at = 0;
    let lines: Vec<&str> = err.lines().collect();
    for w in wanted {
        match lines[at..].iter().position(|l| l.contains(w)) {
            Some(i) => at += i + 1,
            None => panic!("no line with {w:?} (in order) in:\n{err}"),
        }
    }
}

#[test]
fn init_and_shutdown_say_each_workspace_and_its_setup_on_stderr_and_json_adds_nothing() {
    let env = Env::new();
    env.add_project(&["--pool-size", "2", "--setup-cmd", "echo warming up"]);
    let out = env.cmd(&["workspace", "init"]).output().unwrap();
    let (stdout, stderr) = text_of(&out);
    assert!(out.status.success(), "{stderr}");
    // The result on stdout, as it was.
    assert_eq!(stdout, "app: 2 workspace(s), 2 created\n");
    // Not a terminal: plain lines, each step when it begins and when it ends.
    in_order(
        &stderr,
        &[
            "orange: creating workspace app--1…",
            "orange: app--1: setup `echo warming up`…",
            "orange: created workspace app--1 (",
            "orange: creating workspace app--2…",
            "orange: app--2: setup `echo warming up`…",
            "orange: created workspace app--2 (",
        ],
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let out = env.cmd(&["workspace", "shutdown"]).output().unwrap();
    let (stdout, stderr) = text_of(&out);
    assert_eq!(stdout, "app: removed 2 worktree(s)\n", "{stderr}");
    in_order(
        &stderr,
        &[
            "orange: removing workspace app--1…",
            "orange: removed workspace app--1 (",
            "orange: removing workspace app--2…",
            "orange: removed workspace app--2 (",
        ],
    );
    // --json: one JSON value on stdout, nothing on stderr.
    for args in [["workspace", "init"], ["workspace", "shutdown"]] {
        let out = env.cmd(&[args[0], args[1], "--json"]).output().unwrap();
        let (stdout, stderr) = text_of(&out);
        assert!(out.status.success(), "{stdout}");
        assert_eq!(stderr, "", "{args:?}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap();
    }
}

#[test]
fn on_a_terminal_init_shows_the_running_setup_its_last_line_and_its_time() {
    let env = Env::new();
    let go = env.root().join("go");
    // The setup prints a line (after one that would set the terminal's title), then waits
    // for the test to say go.
    let setup = format!(
        "printf '\\033]0;PWNED\\007\\n'; echo fetching dependencies; while [ ! -e {} ]; do sleep 0.05; done",
        go.display()
    );
    env.add_project(&["--pool-size", "1", "--setup-cmd", &setup]);
    let tmux = TmuxServer::start(&env.root(), &[("GIT_CONFIG_GLOBAL", "/dev/null")]);
    let line = format!(
        "cd {} && ORANGE_HOME={} {} workspace init; echo EXIT=$?; exec sleep 600",
        env.repo.display(),
        env.home.display(),
        common::bin().display()
    );
    let pane = tmux.ok(&["new-window", "-d", "-P", "-F", "#{pane_id}", &line]);
    let screen = || tmux.ok(&["capture-pane", "-p", "-t", &pane]);
    // Live: which workspace, whose setup, its last line, the time so far.
    common::wait_for("the live progress line", 20, || {
        screen().lines().any(|l| {
            l.contains("app--1: setup `")
                && l.contains("· fetching dependencies")
                && l.contains("s] ")
        })
    });
    let title = tmux.ok(&["display", "-p", "-t", &pane, "#{pane_title}"]);
    assert!(!title.contains("PWNED"), "{title}");
    std::fs::write(&go, "").unwrap();
    common::wait_for("init to end", 20, || screen().contains("EXIT="));
    let s = screen();
    assert!(s.contains("EXIT=0"), "{s}");
    // What stays: a line for the workspace made, the result; the live line is gone.
    in_order(
        &s,
        &[
            "✓ created workspace app--1 (",
            "app: 1 workspace(s), 1 created",
        ],
    );
    assert!(!s.contains("fetching dependencies"), "{s}");
}

#[test]
fn acquire_wait_on_a_full_pool_says_it_waits_until_a_workspace_comes_free() {
    let env = Env::new();
    env.add_project(&["--pool-size", "1"]);
    env.ok(&["workspace", "acquire", "--task", "first"]);
    let mut waiting =
        start(env.cmd(&["workspace", "acquire", "--task", "second", "--wait", "60s"]));
    waiting.wait_line(
        "orange: waiting for a free workspace of app (1 of 1 bound)…",
        20,
    );
    env.ok(&["workspace", "release", "app--1", "--force"]);
    let (ok, stdout, err) = waiting.finish();
    assert!(ok, "{err:?}");
    assert!(stdout.starts_with("app--1\t"), "{stdout}");
    assert!(
        err.iter()
            .any(|l| l.starts_with("orange: app--1 came free (")),
        "{err:?}"
    );
}

#[test]
fn a_task_says_its_workspace_is_being_set_up_or_that_it_waits_for_the_pool() {
    let env = TaskEnv::new();
    let root = env.root();
    let go = root.join("go");
    let setup = format!(
        "touch {}/started-$ORANGE_WORKSPACE_NAME; while [ ! -e {} ]; do sleep 0.05; done",
        root.display(),
        go.display()
    );
    env.add_project(&["--pool-size", "2", "--setup-cmd", &setup]);
    // `workspace init` holds the pool while app--1's setup runs: a task created then waits
    // for the pool, and says so.
    let init = start(env.cmd_in(&env.repo, &["workspace", "init"]));
    common::wait_for("app--1's setup to run", 20, || {
        root.join("started-app--1").exists()
    });
    let mut task = start(env.cmd_in(
        &env.repo,
        &[
            "task",
            "create",
            "waits",
            "wait for the pool",
            "--harness",
            "fake-wait",
        ],
    ));
    task.wait_line(
        "orange: waiting for the workspace pool: another orange command is changing it",
        20,
    );
    std::fs::write(&go, "").unwrap();
    let (ok, _, err) = init.finish();
    assert!(ok, "{err:?}");
    let (ok, stdout, err) = task.finish();
    assert!(ok, "{err:?}");
    assert!(stdout.contains("waits"), "{stdout}");
    assert!(
        err.iter()
            .any(|l| l.starts_with("orange: the workspace pool is free (")),
        "{err:?}"
    );
    // With no workspace free and room in the pool, the task's own workspace is made: its
    // setup shows.
    env.ok(&["project", "update", "--pool-size", "3"]);
    env.ok(&["workspace", "acquire", "--task", "holds-app--2"]);
    let out = env
        .cmd_in(
            &env.repo,
            &["task", "create", "sets-up", "x", "--harness", "fake-wait"],
        )
        .output()
        .unwrap();
    let (_, stderr) = text_of(&out);
    assert!(out.status.success(), "{stderr}");
    in_order(
        &stderr,
        &[
            "orange: creating workspace app--",
            ": setup `touch ",
            "orange: created workspace app--",
        ],
    );
}

#[test]
fn restore_yes_says_each_task_it_restores() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let t = env.ok(&["task", "create", "lost", "x", "--harness", "fake-wait"]);
    let id = t["id"].as_str().unwrap().to_string();
    env.wait_session(&id, "live");
    let session = env.task(&id)["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux.ok(&["kill-session", "-t", &session]);
    let listed = env.ok(&["restore"]);
    assert_eq!(
        listed["restorable"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    let out = env
        .cmd_in(&env.repo, &["restore", "--yes"])
        .output()
        .unwrap();
    let (stdout, stderr) = text_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("restored 1 task(s), 0 failed\n"),
        "{stdout}"
    );
    in_order(
        &stderr,
        &[
            &format!("orange: restoring task {id} (app/lost)…"),
            &format!("orange: restored task {id} ("),
        ],
    );
    env.wait_session(&id, "live");
}

/// `orange serve --stdio` runs many commands in one process: a command's progress is in its
/// own answer's stderr, and a `--json` command after it still adds nothing there.
#[test]
fn serve_shows_progress_per_request_and_none_with_json() {
    let env = Env::new();
    env.add_project(&["--pool-size", "1", "--setup-cmd", "echo warming up"]);
    let mut server = env
        .cmd(&["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = server.stdin.take().unwrap();
    let from = server.stdout.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(from).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let next = || -> serde_json::Value {
        let l = lines.recv_timeout(Duration::from_secs(20)).unwrap();
        serde_json::from_str(&l).unwrap()
    };
    next(); // hello
    let mut ask = |n: u64, args: &[&str]| -> serde_json::Value {
        use std::io::Write;
        writeln!(to, "{}", serde_json::json!({"id": n, "args": args})).unwrap();
        next(); // accepted
        next()
    };
    let a = ask(1, &["workspace", "init", "--project", "app"]);
    assert_eq!(a["status"], 0, "{a}");
    assert!(
        a["stderr"]
            .as_str()
            .unwrap()
            .contains("orange: created workspace app--1 ("),
        "{a}"
    );
    for (n, args) in [
        (2, ["workspace", "shutdown", "--project", "app", "--json"]),
        (3, ["workspace", "init", "--project", "app", "--json"]),
    ] {
        let a = ask(n, &args);
        assert_eq!(a["status"], 0, "{a}");
        assert_eq!(a["stderr"], "", "{a}");
    }
    let _ = server.kill();
    let _ = server.wait();
}
