//! Remote hosts, over a REAL OpenSSH server on 127.0.0.1 (tests/common/sshd.rs)
//! standing in for another machine: its own ORANGE_HOME and tmux server (a second TaskEnv,
//! with its own repository and bare origin), reached by the local orange through `host add
//! … --ssh-option …`. Nothing here talks to the remote side except through ssh, except to
//! check what is true there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::sshd::Sshd;
use crate::common::{bin, id, poll, wait_for, Env, TaskEnv, TmuxServer};

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

#[test]
fn host_add_check_list_and_remove() {
    let Some(r) = setup() else { return };
    let l = &r.local;
    // check: one ssh call; the versions, tmux and git there.
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["reachable"], true, "{c}");
    assert_eq!(c["compatible"], true, "{c}");
    assert_eq!(c["remote"]["version"], env!("CARGO_PKG_VERSION"), "{c}");
    assert!(
        c["remote"]["tmux"].as_str().unwrap().starts_with("tmux "),
        "{c}"
    );
    assert!(c["remote"]["git"].as_str().unwrap().contains("git"), "{c}");
    assert_eq!(
        c["remote"]["home"],
        r.remote.home.display().to_string(),
        "{c}"
    );
    assert_eq!(c["remote"]["tmux_socket"], r.remote.tmux.socket, "{c}");
    // The one connection: a control socket under run/ssh.
    assert!(l.home.join("run/ssh/box").exists());

    let list = l.ok(&["host", "list"]);
    assert_eq!(list[0]["name"], "box");
    assert_eq!(list[0]["dest"], "127.0.0.1");

    // Bad input: a clear error, nothing registered.
    let planted = l.root().join("planted");
    let evil = format!("-oProxyCommand=touch {}", planted.display());
    l.err(&["host", "add", "evil", "--", &evil], "invalid_argument");
    assert!(!planted.exists());
    l.err(&["host", "add", "dot.ted", "127.0.0.1"], "invalid_argument");
    l.err(&["host", "add", "sp ace", "127.0.0.1"], "invalid_argument");
    l.err(
        &["host", "add", "o", "127.0.0.1", "--ssh-option", "Port"],
        "invalid_argument",
    );
    l.err(&["host", "add", "box", "127.0.0.1"], "invalid_argument");
    l.err(&["host", "check", "nope"], "invalid_argument");
    assert_eq!(l.ok(&["host", "list"]).as_array().unwrap().len(), 1);

    // A data root whose path has a space and a `%` (ssh splits and expands its options).
    let odd = l.root().join("my home %h");
    let mut args = r.sshd.host_add_args("box");
    args.extend([
        "--orange-bin".to_string(),
        bin().display().to_string(),
        "--remote-home".to_string(),
        r.remote.home.display().to_string(),
    ]);
    let odd_run = |a: &[&str]| {
        let mut a = a.to_vec();
        a.push("--json");
        let out = l
            .cmd_in(&l.repo, &a)
            .env("ORANGE_HOME", &odd)
            .output()
            .unwrap();
        crate::common::parse_json_output(&a, &out)
    };
    let (ok, v) = odd_run(&s(&args));
    assert!(ok, "{v}");
    let (ok, v) = odd_run(&["host", "check", "box"]);
    assert!(ok, "{v}");
    assert_eq!(v["reachable"], true, "{v}");

    // Refused while a project uses it, unless --force.
    let p = r.add_project();
    assert_eq!(p["host"], "box", "{p}");
    let msg = l.err(&["host", "remove", "box"], "invalid_argument");
    assert!(msg.contains("app"), "{msg}");
    l.ok(&["host", "remove", "box", "--force"]);
    assert!(l.ok(&["host", "list"]).as_array().unwrap().is_empty());
    // Nothing was removed there.
    let there = r.remote.ok(&["project", "list"]);
    assert_eq!(there[0]["name"], "app", "{there}");
}

#[test]
fn a_host_whose_orange_is_missing_or_whose_key_is_unknown_says_so() {
    let Some(r) = setup_with_bin(Path::new("/nonexistent/orange")) else {
        return;
    };
    let msg = r.local.err(&["host", "check", "box"], "backend_not_found");
    assert!(msg.contains("/nonexistent/orange"), "{msg}");
    // An unknown host key is never accepted: BatchMode, no StrictHostKeyChecking=no.
    std::fs::write(r.sshd.dir.join("known_hosts"), "").unwrap();
    let mut args = r.sshd.host_add_args("stranger");
    args.extend(["--orange-bin".to_string(), bin().display().to_string()]);
    r.local.ok(&s(&args));
    let msg = r
        .local
        .err(&["host", "check", "stranger"], "host_unreachable");
    assert!(msg.to_lowercase().contains("host key"), "{msg}");
}

#[test]
fn a_remote_project_runs_its_whole_task_flow() {
    let Some(r) = setup() else { return };
    let l = &r.local;
    let p = r.add_project();
    assert_eq!(p["name"], "app");
    assert_eq!(p["path"], r.remote.repo.display().to_string(), "{p}");
    // Listed here with its host; registered there, by the orange there.
    let projects = l.ok(&["project", "list"]);
    let app = projects
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "app")
        .unwrap();
    assert_eq!(app["host"], "box", "{projects}");
    assert_eq!(r.remote.ok(&["project", "list"])[0]["name"], "app");
    // A second project of that name is refused, here or there, named or not.
    l.err(
        &[
            "project",
            "add",
            "--host",
            "box",
            r.remote.repo.to_str().unwrap(),
            "--name",
            "app",
        ],
        "invalid_argument",
    );
    let (here_app, _) = crate::common::make_repo(&l.root(), "app");
    l.err(
        &["project", "add", here_app.to_str().unwrap()],
        "invalid_argument",
    );
    assert!(l
        .ok(&["project", "list"])
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["host"] == "box"));
    // project update there; the record here follows.
    l.ok(&["project", "update", "app", "--pool-size", "4"]);
    let projects = l.ok(&["project", "list"]);
    assert_eq!(projects[0]["pool_size"], 4, "{projects}");
    assert_eq!(r.remote.ok(&["project", "list"])[0]["pool_size"], 4);

    let t = r.create("feat/remote", "do the remote thing", "fake-complete");
    let tid = id(&t);
    assert_eq!(t["host"], "box", "{t}");
    assert_eq!(t["project"], "app");
    // The task is there, with its worktree and session there.
    let there = r.remote.task(&tid);
    assert_eq!(there["branch"], "feat/remote");
    // Found by id alone (no --project): its host is remembered.
    let done = poll(Duration::from_secs(20), || {
        let v = l.ok(&["task", "show", &tid]);
        (v["status"] == "reviewing").then_some(v)
    })
    .unwrap_or_else(|| {
        let sess = r.remote.task(&tid)["tmux_session_id"]
            .as_str()
            .unwrap_or("")
            .to_string();
        panic!(
            "the remote agent did not complete: {}\n{}",
            r.remote.task(&tid),
            r.remote
                .tmux
                .ok(&["capture-pane", "-p", "-t", &format!("{sess}:")])
        )
    });
    assert_eq!(done["host"], "box", "{done}");
    // The agent ran there: it committed in its worktree there.
    let ws = r
        .remote
        .home
        .join("workspaces")
        .join(there["workspace"].as_str().unwrap());
    assert!(ws.join(format!("work-{tid}.txt")).exists());

    let list = l.ok(&["task", "list", "--project", "app"]);
    assert_eq!(list[0]["id"], tid.as_str());
    assert_eq!(list[0]["host"], "box");
    let all = l.ok(&["task", "list", "--all"]);
    let mine = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == tid.as_str());
    assert_eq!(mine.unwrap()["host"], "box", "{all}");
    let out = out_of(l, &["task", "list", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("app@box"), "{text}");

    let peek = l.ok(&["task", "peek", &tid]);
    assert_eq!(peek["host"], "box", "{peek}");
    let ws_list = l.ok(&["workspace", "list", "--project", "app"]);
    assert!(!ws_list.as_array().unwrap().is_empty(), "{ws_list}");
    assert_eq!(ws_list[0]["host"], "box", "{ws_list}");

    // Merge there: the remote repository's main gets the agent's commit.
    let m = l.ok(&["task", "merge", &tid, "--local"]);
    assert_eq!(m["host"], "box", "{m}");
    assert_eq!(l.ok(&["task", "show", &tid])["status"], "done");
    let log = crate::common::git(&r.remote.repo, &["log", "--oneline", "main"]);
    assert!(log.contains(&format!("work {tid}")), "{log}");

    // A second task, cancelled (its question is asked here: no terminal → --yes needed).
    let c = r.create("feat/other", "other", "fake-wait");
    let cid = id(&c);
    r.remote.wait_session(&cid, "live");
    // Commands by id alone: update, stuck.
    l.ok(&["task", "update", &cid, "--summary", "other, renamed"]);
    assert_eq!(r.remote.task(&cid)["summary"], "other, renamed");
    let st = l.ok(&["task", "stuck", &cid]);
    assert_eq!(st["host"], "box", "{st}");
    assert_eq!(r.remote.task(&cid)["status"], "stuck");
    // A workspace by its name alone (`<project>--<n>`) is the host's.
    let msg = l.err(&["workspace", "release", "app--9"], "workspace_not_found");
    assert!(msg.contains("on host box"), "{msg}");
    let msg = l.err(&["task", "cancel", &cid], "invalid_argument");
    assert!(msg.contains("--yes"), "{msg}");
    l.ok(&["task", "cancel", &cid, "--yes"]);
    assert_eq!(r.remote.task(&cid)["status"], "cancelled");
    l.ok(&["task", "delete", &cid, "--yes"]);
    r.remote.err(&["task", "show", &cid], "task_not_found");
    // An unknown id is the remote's error, with its code.
    l.err(
        &["task", "show", "zzzzzz", "--project", "app"],
        "task_not_found",
    );

    // Text output is the host's, and its errors keep their code.
    let out = out_of(l, &["task", "show", &tid]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&tid));
    let out = out_of(l, &["task", "show", "zzzzzz", "--project", "app"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("on host box") && err.contains("[task_not_found]"),
        "{err}"
    );

    // Removing the project removes it there (its pool must be shut down there first).
    let msg = l.err(&["project", "remove", "app"], "invalid_argument");
    assert!(msg.contains("workspace"), "{msg}");
}

#[test]
fn hostile_inputs_arrive_intact_over_ssh() {
    let Some(r) = setup() else { return };
    r.add_project();
    let l = &r.local;
    let summary = "it's \"quoted\" $(touch /tmp/orange-pwned) `id`; rm -rf x\nsecond line\n\ttab";
    let t = r.create("feat/hostile", summary, "fake-wait");
    let tid = id(&t);
    assert_eq!(r.remote.task(&tid)["summary"], summary);
    assert!(!Path::new("/tmp/orange-pwned").exists());
    let prompt = poll(Duration::from_secs(20), || {
        let p = r.remote.home.join("agent-log").join(&tid).join("prompt");
        std::fs::read_to_string(p).ok()
    })
    .expect("the agent got its prompt");
    assert!(prompt.starts_with(summary), "{prompt:?}");
    // A summary starting with a dash is a summary, not an option, there too.
    let d = r.create("feat/dash", "-rf --force", "fake-wait");
    assert_eq!(r.remote.task(&id(&d))["summary"], "-rf --force");
    // Bad branch names: the host's refusal, with its code, and nothing made.
    for bad in ["has space", "a..b", "x:y"] {
        let msg = l.err(
            &[
                "task",
                "create",
                "--project",
                "app",
                bad,
                "s",
                "--harness",
                "fake-wait",
            ],
            "invalid_argument",
        );
        assert!(msg.contains("on host box"), "{bad}: {msg}");
    }
    // A leading dash is refused here already, as for a local project.
    l.err(
        &["task", "create", "--project", "app", "-lead", "s"],
        "invalid_argument",
    );
    assert_eq!(r.remote.ok(&["task", "list"]).as_array().unwrap().len(), 2);
    // --context - is read here and sent along.
    let c = l.cmd_in(
        &l.repo,
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/ctx",
            "with context",
            "--harness",
            "fake-wait",
            "--context",
            "-",
            "--json",
        ],
    );
    let out = crate::common::output_with_stdin(c, b"ctx with 'quotes' and $(x)\n");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let md = std::fs::read_to_string(r.remote.home.join("tasks/app").join(id(&v)).join("TASK.md"))
        .unwrap();
    assert!(md.contains("ctx with 'quotes' and $(x)"), "{md}");
}

/// An `ssh` in `<dir>/<name>/` (to put first on PATH) that appends its arguments to
/// `<dir>/<log>`, then runs `then` (a line of sh). Returns (its directory, the log).
fn ssh_wrapper(dir: &Path, name: &str, log: &str, then: &str) -> (PathBuf, PathBuf) {
    let bin_dir = dir.join(name);
    std::fs::create_dir_all(&bin_dir).unwrap();
    let log = dir.join(log);
    let script = bin_dir.join("ssh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n{then}\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin_dir, log)
}

/// An `ssh` first on PATH that records that it ran, then fails.
fn ssh_tripwire(dir: &Path) -> (PathBuf, PathBuf) {
    ssh_wrapper(dir, "tripwire", "ssh-ran", "exit 255")
}

/// An `ssh` first on PATH that logs each call, then runs the real one.
fn ssh_counter(dir: &Path) -> (PathBuf, PathBuf) {
    let real = ["/usr/bin/ssh", "/usr/local/bin/ssh", "/bin/ssh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("ssh");
    ssh_wrapper(dir, "counting", "ssh-calls", &format!("exec {real} \"$@\""))
}

#[test]
fn the_status_widget_shows_remote_tasks_from_the_monitors_fetch_without_ssh() {
    let Some(r) = setup() else { return };
    r.add_project();
    let l = &r.local;
    let t = r.create("feat/w", "wait", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    let more: Vec<String> = (0..2)
        .map(|i| id(&r.create(&format!("feat/w{i}"), "wait", "fake-wait")))
        .collect();
    for m in &more {
        r.remote.wait_session(m, "live");
    }
    // One monitor pass here fetches the host: one request to the host's `orange serve`,
    // which the commands above started (no ssh process of its own, never one per task).
    let (counting, log) = ssh_counter(&l.root());
    let pass_out = l
        .cmd_in(&l.repo, &["monitor", "--once", "--json"])
        .env("PATH", format!("{}:{}", counting.display(), l.path))
        .output()
        .unwrap();
    assert!(
        pass_out.status.success(),
        "{}",
        String::from_utf8_lossy(&pass_out.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 0, "ssh calls: {calls}");
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(l.home.join("run/hosts/box.json")).unwrap())
            .unwrap();
    assert_eq!(seen["reachable"], true, "{seen}");
    // The widget: no ssh on its path (an ssh that records any call is first on PATH).
    let (trip, mark) = ssh_tripwire(&l.root());
    let path = format!("{}:{}", trip.display(), l.path);
    let out = l
        .cmd_in(&l.repo, &["status", "--format", "json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!mark.exists(), "the status widget ran ssh");
    let item = st["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == tid.as_str())
        .unwrap_or_else(|| panic!("{st}"));
    assert_eq!(item["host"], "box");
    assert_eq!(item["bucket"], "working", "{st}");
    assert_eq!(st["working"], 3, "{st}");
    assert_eq!(st["hosts"][0]["name"], "box");
    assert_eq!(st["hosts"][0]["reachable"], true);
    // The tmux option the status line shows counts it.
    let summary = l.tmux.ok(&["show", "-gqv", "@orange_summary"]);
    assert!(summary.contains("⚙ 3"), "{summary}");
    // And the status line as a person sees it.
    let line = String::from_utf8_lossy(
        &l.cmd_in(&l.repo, &["status", "--format", "plain"])
            .env("PATH", &path)
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    assert!(line.starts_with("working 3"), "{line}");
    assert!(!mark.exists(), "the status widget ran ssh");
}

#[test]
fn an_unreachable_host_shows_its_age_never_dead_agents_and_commands_fail_cleanly() {
    let Some(mut r) = setup() else { return };
    r.add_project();
    let t = r.create("feat/u", "wait", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    r.local.ok(&["monitor", "--once"]);
    let before = state_files(&r.local.home);

    r.sshd.stop();
    let msg = r.local.err(&["task", "show", &tid], "host_unreachable");
    assert!(msg.contains("box"), "{msg}");
    r.local.err(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/x",
            "x",
            "--harness",
            "fake-wait",
        ],
        "host_unreachable",
    );
    r.local
        .err(&["task", "cancel", &tid, "--yes"], "host_unreachable");
    r.local.err(&["host", "check", "box"], "host_unreachable");
    // Nothing here changed for it (the registry, the links, the tasks).
    assert_eq!(state_files(&r.local.home), before);
    // The monitor marks it unreachable; its agent stays as last seen, never dead.
    r.local.ok(&["monitor", "--once"]);
    let st = r.local.ok(&["status", "--format", "json"]);
    assert_eq!(st["hosts"][0]["reachable"], false, "{st}");
    assert!(st["hosts"][0]["age_s"].is_number(), "{st}");
    assert_eq!(st["dead"], 0, "{st}");
    assert_eq!(st["working"], 1, "{st}");
    let tmux = String::from_utf8_lossy(&out_of(&r.local, &["status", "--format", "tmux"]).stdout)
        .to_string();
    assert!(tmux.contains("⚠ box"), "{tmux}");
    // task list --all lists what it can and says which host it could not ask.
    let out = out_of(&r.local, &["task", "list", "--all"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("host_unreachable"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The agent there never noticed.
    assert_eq!(r.remote.task(&tid)["session"]["state"], "live");

    // Back: the same commands work, and the host is reachable again.
    r.sshd.resume();
    assert_eq!(r.local.ok(&["task", "show", &tid])["host"], "box");
    r.local.ok(&["monitor", "--once"]);
    let st = r.local.ok(&["status", "--format", "json"]);
    assert_eq!(st["hosts"][0]["reachable"], true, "{st}");
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

/// The host's orange, pausing where `<dir>/pause-at` says when it says it (read at each
/// point: the orange there is a long-lived `serve`).
fn pausing_bin(dir: &Path) -> PathBuf {
    let script = dir.join("orange-pausing");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nORANGE_PAUSE_AT_FILE='{d}/pause-at' ORANGE_PAUSE_DIR='{d}' exec '{b}' \"$@\"\n",
            d = dir.display(),
            b = bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Run `args` here while the host's orange waits at `point`; kill sshd (and with it that
/// orange: the connection is gone) while it waits. Returns the local command's error.
fn drop_during(r: &mut Remote, pauses: &Path, point: &str, args: &[&str]) -> Value {
    std::fs::write(pauses.join("pause-at"), point).unwrap();
    let mut a = args.to_vec();
    a.push("--json");
    let child = r
        .local
        .cmd_in(&r.local.repo, &a)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let paused = pauses.join(format!("{point}.paused"));
    wait_for(
        &format!("the host's orange to pause at {point}"),
        20,
        || paused.exists(),
    );
    r.sshd.stop();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&paused);
    std::fs::remove_file(pauses.join("pause-at")).unwrap();
    assert!(!out.status.success(), "{args:?} succeeded without its host");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sshd_killed_during_create_merge_and_cancel_loses_nothing_and_the_command_works_again() {
    let root = tempfile::tempdir().unwrap();
    let pauses = root.path().canonicalize().unwrap();
    let Some(mut r) = setup_with_bin(&pausing_bin(&pauses)) else {
        return;
    };
    r.add_project();
    let create = [
        "task",
        "create",
        "--project",
        "app",
        "feat/c",
        "made twice?",
        "--harness",
        "fake-wait",
    ];

    // create: the connection drops before anything is recorded there.
    let before = state_files(&r.local.home);
    let e = drop_during(&mut r, &pauses, "create.checked", &create);
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    assert_eq!(state_files(&r.local.home), before, "local state changed");
    r.sshd.resume();
    assert!(r
        .remote
        .ok(&["task", "list"])
        .as_array()
        .unwrap()
        .is_empty());
    let t = r.local.ok(&create);
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    assert_eq!(r.remote.ok(&["task", "list"]).as_array().unwrap().len(), 1);

    // create again, dropped after the workspace was taken there: the host's own crash
    // repair gives it back or starts the task; one agent per workspace, never two.
    let create2 = [
        "task",
        "create",
        "--project",
        "app",
        "feat/d",
        "half",
        "--harness",
        "fake-wait",
    ];
    let e = drop_during(&mut r, &pauses, "spawn.acquired", &create2);
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let all = r.local.ok(&["task", "list", "--project", "app"]);
    let d = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["branch"] == "feat/d")
        .expect("the recorded task is there")
        .clone();
    let did = id(&d);
    r.remote.wait_session(&did, "live");
    let pool = r.remote.pool_json();
    let bound: Vec<&Value> = pool["workspaces"]
        .as_object()
        .unwrap()
        .values()
        .filter(|w| w["status"] == "bound")
        .collect();
    assert_eq!(bound.len(), 2, "{pool}");
    // The same create again: refused clearly, as the branch now has its task.
    let msg = r.local.err(&create2, "invalid_argument");
    assert!(msg.contains("feat/d"), "{msg}");

    // merge: dropped after git merged, before it was recorded.
    let ws = r
        .remote
        .home
        .join("workspaces")
        .join(r.remote.task(&tid)["workspace"].as_str().unwrap());
    std::fs::write(ws.join("m.txt"), "m").unwrap();
    crate::common::git(&ws, &["add", "m.txt"]);
    crate::common::git(&ws, &["commit", "-qm", "m"]);
    let e = drop_during(
        &mut r,
        &pauses,
        "merge.merged",
        &["task", "merge", &tid, "--local"],
    );
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let m = r.local.ok(&["task", "merge", &tid, "--local"]);
    assert_eq!(m["host"], "box", "{m}");
    assert_eq!(r.remote.task(&tid)["status"], "done");
    let log = crate::common::git(&r.remote.repo, &["log", "--oneline", "main"]);
    assert_eq!(
        log.matches(" m\n").count() + usize::from(log.ends_with(" m")),
        1,
        "{log}"
    );

    // cancel: dropped after it was recorded there; the next command there finishes it.
    let e = drop_during(
        &mut r,
        &pauses,
        "cancel.recorded",
        &["task", "cancel", &did, "--yes"],
    );
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let t = r.local.ok(&["task", "show", &did]);
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["session"]["state"], "none", "{t}");
    // Nothing of it is left bound there.
    let pool = r.remote.pool_json();
    assert!(
        pool["workspaces"]
            .as_object()
            .unwrap()
            .values()
            .all(|w| w["status"] != "bound"),
        "{pool}"
    );
}

#[test]
fn attach_opens_ssh_to_the_remote_session_in_a_local_session() {
    let Some(r) = setup() else { return };
    r.add_project();
    let t = r.create("feat/a", "attach me", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    wait_for("the remote agent's screen", 20, || {
        let sess = r.remote.task(&tid)["tmux_session_id"]
            .as_str()
            .unwrap()
            .to_string();
        r.remote
            .tmux
            .ok(&["capture-pane", "-p", "-t", &format!("{sess}:")])
            .contains("waiting for input")
    });
    // A person in the local tmux: a client attached, a pane where they run the command.
    let outer = TmuxServer::start(&r.local.root(), &[]);
    outer.ok(&[
        "new-session",
        "-d",
        "-s",
        "term",
        "-x",
        "150",
        "-y",
        "40",
        &format!(
            "unset TMUX; exec tmux -L {} attach -t keepalive",
            r.local.tmux.socket
        ),
    ]);
    wait_for("a local client", 10, || {
        !r.local.tmux.ok(&["list-clients"]).is_empty()
    });
    let cmd = format!(
        "ORANGE_HOME='{}' ORANGE_TMUX_SOCKET='{}' '{}' task attach {tid} > '{}/attach.out' 2>&1",
        r.local.home.display(),
        r.local.tmux.socket,
        bin().display(),
        r.local.root().display()
    );
    r.local
        .tmux
        .ok(&["new-window", "-d", "-t", "=keepalive:", &cmd]);
    let local_session = format!("remote-box-{tid}");
    wait_for("the local session of the remote task", 20, || {
        r.local.tmux.has_session(&local_session)
    });
    // The client is switched to it, and it shows the agent's screen there, through ssh.
    wait_for("the client on the remote task's session", 20, || {
        r.local
            .tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            == local_session
    });
    wait_for("the remote agent seen through ssh", 20, || {
        outer
            .ok(&["capture-pane", "-p", "-t", "=term:"])
            .contains("waiting for input")
    });
    // Typing there reaches the agent there.
    outer.ok(&["send-keys", "-t", "=term:", "-l", "hello from here"]);
    outer.ok(&["send-keys", "-t", "=term:", "Enter"]);
    wait_for("the keys to reach the remote agent", 20, || {
        std::fs::read_to_string(r.remote.home.join("agent-log").join(&tid).join("input"))
            .is_ok_and(|s| s.contains("hello from here"))
    });
    // Its sidebar, opened beside it, is drawn here from the host's snapshot.
    r.local.ok(&["monitor", "--once"]);
    // The picker (choose-tree over the task sessions) names its host; publishing the
    // widgets leaves that alone.
    assert_eq!(
        r.local.tmux.ok(&[
            "show",
            "-t",
            &format!("={local_session}:"),
            "-qv",
            "@orange_status"
        ]),
        "box: feat/a"
    );
    let pane = r.local.tmux.ok(&[
        "display",
        "-p",
        "-t",
        &format!("={local_session}:"),
        "#{pane_id}",
    ]);
    let out = r
        .local
        .cmd_in(&r.local.repo, &["sidebar", "toggle", "--json"])
        .env("TMUX_PANE", &pane)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let window = format!("={local_session}:");
    let side = poll(Duration::from_secs(10), || {
        r.local
            .tmux
            .ok(&[
                "list-panes",
                "-t",
                &window,
                "-F",
                "#{pane_id} #{@orange_sidebar}",
            ])
            .lines()
            .find(|l| l.ends_with(" 1"))
            .map(|l| l.split(' ').next().unwrap().to_string())
    })
    .expect("a sidebar pane");
    wait_for("the remote task's sidebar", 10, || {
        let shown = r.local.tmux.ok(&["capture-pane", "-p", "-t", &side]);
        shown.contains("on host box")
            && shown.contains("feat/a")
            && shown.contains("Harness: fake-wait")
            && shown.contains("(not known here)")
    });
    // The `w` key (next task waiting for you) goes to a remote task that needs you: a
    // stuck one, attached over ssh like `task attach`.
    let stuck = id(&r.create("feat/stuck", "get stuck", "fake-stuck"));
    r.remote.wait_status(&stuck, "stuck");
    r.local.ok(&["monitor", "--once"]);
    let client_name = r.local.tmux.ok(&["list-clients", "-F", "#{client_name}"]);
    let went = r.local.ok(&["plugin", "next", "--client", &client_name]);
    assert_eq!(went["switched"], stuck.as_str(), "{went}");
    assert_eq!(went["host"], "box", "{went}");
    let stuck_session = format!("remote-box-{stuck}");
    wait_for("the client on the stuck remote task", 20, || {
        r.local
            .tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            == stuck_session
    });
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={stuck_session}"),
        ])
        .status();
    // Leave the ssh before the servers go.
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={local_session}"),
        ])
        .status();
}

#[test]
fn the_running_monitor_fetches_a_host_at_once_after_a_command_changed_it() {
    let Some(r) = setup() else { return };
    r.add_project();
    // A monitor here whose interval is far longer than the test.
    let mut monitor = r
        .local
        .cmd_in(&r.local.repo, &["monitor", "--interval", "120s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first fetch", 20, || {
        r.local.home.join("run/hosts/box.json").exists()
    });
    let t = r.create("feat/m", "wait", "fake-wait");
    let tid = id(&t);
    // The command poked run/hosts/poke: the monitor fetched the host and published.
    let seen = poll(Duration::from_secs(20), || {
        let summary = r.local.tmux.ok(&["show", "-gqv", "@orange_summary"]);
        summary.contains("⚙ 1").then_some(summary)
    });
    let st = r.local.ok(&["status", "--format", "json"]);
    let _ = monitor.kill();
    let _ = monitor.wait();
    assert!(
        seen.is_some(),
        "the status line never showed the remote task: {st}"
    );
    assert!(
        st["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == tid.as_str()),
        "{st}"
    );
}

// --- the host's long-lived `orange serve` --------------------------------------------------

/// A line of a child's stdout, waited for (at most 20 s).
fn next_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("no {what} from `orange serve`"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {line:?}: {e}"))
}

#[test]
fn serve_answers_each_request_as_the_command_line_does() {
    use std::io::{BufRead, Write};
    let l = TaskEnv::new();
    l.add_project(&[l.repo.to_str().unwrap(), "--pool-size", "2"]);
    let mut server = l
        .cmd_in(&l.repo, &["serve", "--stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let to = std::cell::RefCell::new(server.stdin.take().unwrap());
    let from = server.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
            let _ = tx.send(line);
        }
    });
    // Hello: the protocol and this version (the broker checks both before any request).
    let hello = next_line(&lines, "hello");
    assert_eq!(hello["orange_serve"], 1, "{hello}");
    assert_eq!(hello["version"], env!("CARGO_PKG_VERSION"), "{hello}");
    let mut n = 0;
    let mut ask = |args: &[&str], stdin: Option<&str>| -> Value {
        n += 1;
        let mut req = serde_json::json!({"id": n, "args": args});
        if let Some(s) = stdin {
            req["stdin"] = s.into();
        }
        writeln!(to.borrow_mut(), "{req}").unwrap();
        let ack = next_line(&lines, "acceptance");
        assert_eq!(ack, serde_json::json!({"id": n, "accepted": true}));
        let answer = next_line(&lines, "answer");
        assert_eq!(answer["id"], n, "{answer}");
        answer
    };
    // Hostile arguments arrive exactly: no shell, no splitting.
    let hostile = "it's \"q\" $(touch /tmp/orange-serve-pwned) `id`; x\nline 2\n\ttab";
    let a = ask(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/h",
            hostile,
            "--no-spawn",
            "--json",
        ],
        None,
    );
    assert_eq!(a["status"], 0, "{a}");
    let t: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(t["summary"], hostile);
    assert!(!Path::new("/tmp/orange-serve-pwned").exists());
    // The same output, exit status and error codes as the command line, JSON and text.
    for args in [
        vec!["task", "show", "nope", "--json"],
        vec!["task", "show", "nope"],
        vec!["task", "list", "--project", "app", "--json"],
        vec![
            "task",
            "create",
            "--project",
            "app",
            "bad name",
            "s",
            "--json",
        ],
        vec!["task", "list", "--bogus"],
    ] {
        let a = ask(&args, None);
        let cli = l.cmd_in(&l.repo, &args).output().unwrap();
        assert_eq!(a["status"], cli.status.code().unwrap(), "{args:?}: {a}");
        assert_eq!(
            a["stdout"].as_str().unwrap(),
            String::from_utf8_lossy(&cli.stdout),
            "{args:?}"
        );
        assert_eq!(
            a["stderr"].as_str().unwrap(),
            String::from_utf8_lossy(&cli.stderr),
            "{args:?}"
        );
    }
    // Standard input goes with the request (`--context -`).
    let a = ask(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/c",
            "ctx",
            "--no-spawn",
            "--context",
            "-",
            "--json",
        ],
        Some("ctx with 'quotes' and $(x)\n"),
    );
    let c: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    let md = std::fs::read_to_string(
        l.home
            .join("tasks/app")
            .join(c["id"].as_str().unwrap())
            .join("TASK.md"),
    )
    .unwrap();
    assert!(md.contains("ctx with 'quotes' and $(x)"), "{md}");
    // What needs a terminal is refused, and the server goes on.
    let a = ask(&["task", "attach", "feat/h", "--json"], None);
    assert_eq!(a["status"], 1, "{a}");
    assert!(
        a["stdout"].as_str().unwrap().contains("invalid_argument"),
        "{a}"
    );
    // A line that is no request is answered, and the server goes on.
    writeln!(to.borrow_mut(), "not json").unwrap();
    let ack = next_line(&lines, "acceptance");
    assert_eq!(ack["accepted"], true);
    let bad = next_line(&lines, "answer");
    assert_eq!(bad["status"], 2, "{bad}");
    assert!(bad["stderr"]
        .as_str()
        .unwrap()
        .contains("[invalid_argument]"));
    let a = ask(&["task", "list", "--project", "app", "--json"], None);
    let list: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    // Its standard input closed: it exits.
    drop(to.into_inner());
    let st = server.wait().unwrap();
    assert!(st.success(), "{st:?}");
}

/// The pids of the `orange serve --stdio` processes whose ORANGE_HOME is `home`.
fn serve_pids(home: &Path) -> Vec<u32> {
    let want = format!("ORANGE_HOME={}", home.display());
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if !words
            .windows(2)
            .any(|w| w == [b"serve".as_slice(), b"--stdio"])
        {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn remote_commands_share_one_server_and_a_killed_server_is_restarted() {
    let Some(mut r) = setup() else { return };
    // Every ssh this machine starts (the broker's too: it inherits PATH) is counted.
    let (counting, log) = ssh_counter(&r.local.root());
    r.local.path = format!("{}:{}", counting.display(), r.local.path);
    r.add_project();
    let tid = id(&r.create("feat/one", "one", "fake-wait"));
    let l = &r.local;
    l.ok(&["task", "show", &tid]);
    l.ok(&["task", "list", "--project", "app"]);
    l.ok(&["task", "list", "--all"]);
    l.ok(&["task", "update", &tid, "--summary", "renamed"]);
    l.ok(&["monitor", "--once"]);
    let out = out_of(l, &["task", "show", &tid]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("renamed"));
    // Eight commands, one ssh: the server's, started by the first of them.
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 1, "ssh calls:\n{calls}");
    assert!(calls.contains("'serve' '--stdio'"), "{calls}");
    let servers = serve_pids(&r.remote.home);
    assert_eq!(servers.len(), 1, "{servers:?}");

    // Killed: the next command starts another server and runs, as if nothing happened.
    let killed = servers[0];
    Command::new("kill")
        .args(["-KILL", &killed.to_string()])
        .status()
        .unwrap();
    wait_for("the killed server to be gone", 10, || {
        !serve_pids(&r.remote.home).contains(&killed)
    });
    let shown = r.local.ok(&["task", "show", &tid]);
    assert_eq!(shown["summary"], "renamed", "{shown}");
    let now = serve_pids(&r.remote.home);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], killed);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 2, "ssh calls:\n{calls}");
}

#[test]
fn an_orange_without_serve_or_of_another_version_works_the_old_way_and_says_so_once() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().canonicalize().unwrap();
    // The orange there: `serve` as `<dir>/mode` says (an old one without it, or one of
    // another version), everything else the real one.
    let script = dir.join("orange-old");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = serve ]; then\n  case $(cat '{d}/mode') in\n    old) echo \"error: unrecognized subcommand 'serve'\" >&2; exit 2 ;;\n    other) echo '{{\"orange_serve\":1,\"version\":\"9.9.0\"}}'; exec cat >/dev/null ;;\n  esac\nfi\nexec '{b}' \"$@\"\n",
            d = dir.display(),
            b = bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("mode"), "old").unwrap();
    let Some(mut r) = setup_with_bin(&script) else {
        return;
    };
    let (counting, log) = ssh_counter(&r.local.root());
    r.local.path = format!("{}:{}", counting.display(), r.local.path);
    let l = &r.local;
    let repo = r.remote.repo.display().to_string();
    let note = "without `orange serve` there";
    // The first command finds out, says so, and works the old way.
    let args = ["project", "add", "--host", "box", &repo, "--json"];
    let out = l.cmd_in(&l.repo, &args).output().unwrap();
    let (ok, v) = crate::common::parse_json_output(&args, &out);
    assert!(ok, "{v}");
    assert_eq!(v["host"], "box", "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.contains("exit 2"), "{err}");
    // The next ones just work, without a word and without trying again.
    let args = ["task", "list", "--project", "app", "--json"];
    let out = l.cmd_in(&l.repo, &args).output().unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains(note));
    let t = r.create("feat/old", "old way", "fake-wait");
    assert_eq!(t["host"], "box", "{t}");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        calls.lines().filter(|c| c.contains("'serve'")).count(),
        1,
        "{calls}"
    );
    // project add asked twice, then list and create once each: one ssh per command.
    assert_eq!(calls.lines().count(), 5, "{calls}");
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["serve"], false, "{c}");

    // Another version's `serve`: checked at its start, not used.
    std::fs::write(dir.join("mode"), "other").unwrap();
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["serve"], false, "{c}");
    assert!(
        c["serve_problem"].as_str().unwrap().contains("9.9.0"),
        "{c}"
    );
    let shown = l.ok(&["task", "show", &id(&t)]);
    assert_eq!(shown["summary"], "old way", "{shown}");
}

// --- an unreachable host's tasks in every listing ------------------------------------------

#[test]
fn an_unreachable_hosts_tasks_stay_in_every_listing_marked_with_its_state() {
    let Some(mut r) = setup() else { return };
    r.add_project();
    let a = id(&r.create("feat/a", "first", "fake-wait"));
    let b = id(&r.create("feat/b", "second", "fake-wait"));
    r.remote.wait_session(&a, "live");
    r.remote.wait_session(&b, "live");
    // A listing while it is reachable, then a task it has not shown (the monitor's fetch
    // has), and a local task.
    let listed = r.local.ok(&["task", "list", "--all"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("host_state").is_none()),
        "{listed}"
    );
    let c = id(&r.create("feat/c", "third", "fake-wait"));
    r.remote.wait_session(&c, "live");
    r.local.ok(&["monitor", "--once"]);
    r.local.add_project(&[r.local.repo.to_str().unwrap()]);
    let mine = id(&r.local.ok(&[
        "task",
        "create",
        "--project",
        "here",
        "feat/l",
        "l",
        "--no-spawn",
    ]));
    // A person attached to one of them: its local session, as `task attach` made it.
    let attached = format!("remote-box-{a}");
    r.local
        .tmux
        .ok(&["new-session", "-d", "-s", &attached, "sleep 600"]);
    for (k, v) in [
        ("@orange_task", a.as_str()),
        ("@orange_remote", "box"),
        ("@orange_status", "box: feat/a"),
    ] {
        r.local
            .tmux
            .ok(&["set-option", "-t", &format!("={attached}:"), k, v]);
    }

    r.sshd.stop();
    // JSON: the same list, the host's tasks still there, each with its host's state.
    let all = r.local.ok(&["task", "list", "--all"]);
    let rows = all.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{all}");
    let local = rows.iter().find(|t| t["id"] == mine.as_str()).unwrap();
    assert!(local.get("host_state").is_none(), "{local}");
    for want in [&a, &b, &c] {
        let t = rows
            .iter()
            .find(|t| t["id"] == want.as_str())
            .unwrap_or_else(|| panic!("task {want} dropped: {all}"));
        assert_eq!(t["host"], "box", "{t}");
        assert_eq!(t["host_state"]["reachable"], false, "{t}");
        assert!(t["host_state"]["since"].is_string(), "{t}");
        assert!(t["host_state"]["last_seen"].is_string(), "{t}");
        assert_ne!(t["session"]["state"], "dead", "{t}");
        assert_ne!(t["status"], "failed", "{t}");
    }
    let first = rows.iter().find(|t| t["id"] == a.as_str()).unwrap();
    assert_eq!(first["summary"], "first", "{first}");
    assert_eq!(first["branch"], "feat/a", "{first}");
    // The project's own listing too, exit status 0.
    let app = r.local.ok(&["task", "list", "--project", "app"]);
    assert_eq!(app.as_array().unwrap().len(), 3, "{app}");
    assert!(app
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["host_state"]["reachable"] == false));
    // Text: every task listed, marked, never dead; exit status 0.
    for args in [
        vec!["task", "list", "--all"],
        vec!["task", "list", "--project", "app"],
    ] {
        let out = out_of(&r.local, &args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        for want in [&a, &b, &c] {
            let line = text
                .lines()
                .find(|l| l.contains(want.as_str()))
                .unwrap_or_else(|| panic!("{args:?}: task {want} dropped:\n{text}"));
            assert!(line.contains("? unreachable (last seen "), "{line}");
            assert!(!line.contains("dead"), "{line}");
        }
    }
    // The sidebar of one of them.
    let out = out_of(
        &r.local,
        &["sidebar", "--task", &a, "--once", "--width", "60"],
    );
    let side = String::from_utf8_lossy(&out.stdout);
    assert!(side.contains("? unreachable (last seen "), "{side}");
    assert!(!side.contains("dead"), "{side}");
    // The picker's label of the attached one (the monitor publishes it).
    r.local.ok(&["monitor", "--once"]);
    let label = |r: &Remote| {
        r.local.tmux.ok(&[
            "show",
            "-t",
            &format!("={attached}:"),
            "-qv",
            "@orange_status",
        ])
    };
    let shown = label(&r);
    assert!(
        shown.starts_with("box: feat/a · ? unreachable (last seen "),
        "{shown}"
    );

    // Back: live listings again, no state attached, the label as it was.
    r.sshd.resume();
    let all = r.local.ok(&["task", "list", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 4, "{all}");
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("host_state").is_none()),
        "{all}"
    );
    r.local.ok(&["monitor", "--once"]);
    assert_eq!(label(&r), "box: feat/a");
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={attached}"),
        ])
        .status();
}
