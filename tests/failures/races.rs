//! Races with what runs beside a task: gc, monitor passes and readers meeting it mid-change,
//! a replaced or another server, a second session, a workspace kept for unsaved work.

use crate::common;

use common::{id, TaskEnv};
use serde_json::Value;

use super::bound;

#[test]
fn gc_force_never_hands_over_a_workspace_an_agent_works_in() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["g/a", "a", "--harness", "fake-wait"]);
    // The pool file says another label holds the workspace (hand-edited, an outside tool):
    // gc --force would free it, but task a's agent runs there.
    let path = env.home.join("workspaces/.pool.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(&format!("\"{}\"", id(&a)), "\"outside-label\""),
    )
    .unwrap();
    let gc = env.ok(&["workspace", "gc", "--force"]);
    assert_eq!(gc["released"], serde_json::json!([]), "{gc}");
    assert!(
        gc["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("an agent runs in it"),
        "{gc}"
    );
    let b = env.create(&["g/b", "b", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued", "{b}");
}

#[test]
fn a_monitor_exits_when_its_server_is_replaced_on_the_same_socket() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.create(&["s/a", "a", "--harness", "fake-wait"]);
    let mut monitor = env
        .cmd_in(&env.repo, &["monitor", "--interval", "200ms", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = env.home.join("run");
    let identity = || -> Option<Value> {
        std::fs::read_dir(&run).ok()?.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name.starts_with("monitor-") && name.ends_with(".json"))
                .then(|| serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok())
                .flatten()
        })
    };
    common::wait_for("the monitor to record its server", 10, || {
        identity().is_some()
    });
    let recorded = identity().unwrap();
    assert_eq!(recorded["server"]["socket"], env.tmux.socket_path.as_str());
    // The server is replaced at once by a new one on the same socket (as `orange demo`
    // does when it is run again).
    env.tmux.ok(&["kill-server"]);
    common::wait_for("a new server on the socket", 10, || {
        std::process::Command::new("tmux")
            .args(["-L", &env.tmux.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "newcomer", "sleep", "600"])
            .env_remove("TMUX")
            .output()
            .unwrap()
            .status
            .success()
    });
    let mut status = None;
    common::wait_for("the old monitor to exit", 10, || {
        status = monitor.try_wait().unwrap();
        status.is_some()
    });
    let mut text = String::new();
    std::io::Read::read_to_string(monitor.stdout.as_mut().unwrap(), &mut text).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["running"], false, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("replaced"), "{v}");
    assert!(identity().is_none(), "its identity file is removed");
}

#[test]
fn a_monitor_on_another_server_leaves_this_servers_tasks_alone() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let a = env.create(&["s/b", "b", "--harness", "fake-wait"]);
    assert_eq!(
        env.task(&id(&a))["tmux_server"]["socket"],
        env.tmux.socket_path.as_str()
    );
    let other = common::TmuxServer::start(&env.root(), &[]);
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_TMUX_SOCKET", &other.socket)
        .output()
        .unwrap();
    let pass: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pass["checked"], 0, "{pass}");
    let t = env.task(&id(&a));
    assert_eq!(t["crash_count"], 0, "{t}");
    assert_eq!(t["session"]["state"], "live", "{t}");
    let history =
        std::fs::read_to_string(env.home.join(format!("tasks/app/{}/history.jsonl", id(&a))))
            .unwrap();
    assert!(!history.contains("crash"), "{history}");
    assert!(!history.contains("escalat"), "{history}");
    // Its own server's monitor does check it.
    let pass = env.ok(&["monitor", "--once"]);
    assert_eq!(pass["checked"], 1, "{pass}");
}

#[test]
fn an_active_tasks_workspace_cannot_be_released_from_under_its_agent() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["w/a", "a", "--harness", "fake-wait"]);
    for args in [
        &["workspace", "release", "app--1"][..],
        &["workspace", "release", "app--1", "--force"][..],
    ] {
        let m = env.err(args, "invalid_transition");
        assert!(m.contains(&id(&a)) && m.contains("task cancel"), "{m}");
    }
    assert_eq!(bound(&env), vec![("app--1".to_string(), id(&a))]);
    let b = env.create(&["w/b", "b", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued", "{b}");
}

#[test]
fn a_task_cancelled_while_a_monitor_pass_looks_at_it_is_never_escalated_or_counted_crashed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let a = env.create(&["race/a", "a", "--harness", "fake-exit0"]);
    env.wait_session(&id(&a), "dead");
    let pause = tempfile::tempdir().unwrap();
    // The pass has seen the dead agent and stops right before it records anything.
    let mut monitor = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_PAUSE_AT", "monitor.observed")
        .env("ORANGE_PAUSE_DIR", pause.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the pass to pause", 20, || {
        pause.path().join("monitor.observed.paused").exists()
    });
    env.ok(&["task", "cancel", "--yes", &id(&a)]);
    std::fs::write(pause.path().join("monitor.observed.go"), "").unwrap();
    assert!(monitor.wait().unwrap().success());
    let t = env.task(&id(&a));
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["crash_count"], 0, "{t}");
    assert_eq!(t["agent"]["escalated"], Value::Null, "{t}");
    let history =
        std::fs::read_to_string(env.home.join(format!("tasks/app/{}/history.jsonl", id(&a))))
            .unwrap();
    let after_cancel = history.split("task.cancelled").nth(1).unwrap();
    assert!(!after_cancel.contains("crash"), "{history}");
    assert!(!after_cancel.contains("escalat"), "{history}");
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains(&id(&a)), "{table}");
    assert!(!table.contains("needs you"), "{table}");
}

#[test]
fn a_task_started_between_a_passs_look_and_its_read_is_not_judged_gone() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let pause = tempfile::tempdir().unwrap();
    // The pass has asked tmux what runs, and stops before it reads the tasks.
    let monitor = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_PAUSE_AT", "monitor.looked")
        .env("ORANGE_PAUSE_DIR", pause.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the pass to pause", 20, || {
        pause.path().join("monitor.looked.paused").exists()
    });
    // A task starts in between: its session is younger than what the pass saw.
    let a = env.create(&["young/a", "a", "--harness", "fake-wait"]);
    std::fs::write(pause.path().join("monitor.looked.go"), "").unwrap();
    let out = monitor.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let pass: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pass["checked"], 1, "{pass}");
    let t = env.task(&id(&a));
    assert_eq!(t["status"], "working", "{t}");
    assert_eq!(t["crash_count"], 0, "{t}");
    assert_ne!(t["agent"]["state"], "dead", "{t}");
    let history =
        std::fs::read_to_string(env.home.join(format!("tasks/app/{}/history.jsonl", id(&a))))
            .unwrap();
    assert!(!history.contains("crash"), "{history}");
    assert!(!history.contains("escalat"), "{history}");
    let list = env.ok(&["task", "list"]);
    assert!(!list.to_string().contains("dead"), "{list}");
}

#[test]
fn a_second_session_of_an_active_task_is_stopped_and_its_workspace_stays_with_the_task() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["d/a", "a", "--harness", "fake-wait"]);
    let sid = a["tmux_session_id"].as_str().unwrap();
    // A copy of a's session, marks and all (as a race or a hand-made session leaves it).
    let marks = env.tmux.ok(&["show-options", "-t", &format!("{sid}:")]);
    env.tmux
        .ok(&["new-session", "-d", "-s", "copy", "sleep", "600"]);
    for line in marks.lines().filter(|l| l.starts_with("@orange_")) {
        let (k, v) = line.split_once(' ').unwrap();
        let v = v.trim_matches('"');
        env.tmux.ok(&["set-option", "-t", "=copy:", k, v]);
    }
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("a second session of task"), "{said}");
    assert!(!env.tmux.has_session("copy"));
    let t = env.task(&id(&a));
    assert_eq!(t["session"]["state"], "live", "{t}");
    assert_eq!(t["tmux_session_id"], sid);
    assert_eq!(bound(&env), vec![("app--1".to_string(), id(&a))]);
    assert!(
        env.ws_path("app--1").join("TASK.md").exists(),
        "the workspace was reset"
    );
}

#[test]
fn a_workspace_cancel_kept_stays_until_its_work_is_saved_then_a_monitor_pass_frees_it() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["k/keep", "a", "--harness", "fake-wait"]);
    let ws = env.ws_path("app--1");
    std::fs::write(ws.join("precious.txt"), "mine").unwrap();
    let c = env.ok(&["task", "cancel", "--yes", &id(&a)]);
    assert!(c["note"].as_str().unwrap().contains("kept bound"), "{c}");
    // Commands and monitor passes leave it while the work is there.
    env.ok(&["task", "list"]);
    env.ok(&["monitor", "--once"]);
    assert_eq!(bound(&env), vec![("app--1".to_string(), id(&a))]);
    assert_eq!(
        std::fs::read_to_string(ws.join("precious.txt")).unwrap(),
        "mine"
    );
    // The user takes their file away: the next monitor pass gives the workspace back.
    std::fs::rename(ws.join("precious.txt"), env.root().join("precious.txt")).unwrap();
    env.ok(&["monitor", "--once"]);
    assert!(bound(&env).is_empty(), "{:?}", bound(&env));
}

/// A reader that looks while a task is being created (indexed as open, its file not yet
/// written) must not drop it from the index of open tasks: seen as `merge`'s
/// `next.spawned: null` in a fresh-machine run, when the first task's agent ran `orange
/// task complete` while the test created the queued one. The queued task then never
/// started.
#[test]
fn a_reader_while_a_task_is_created_never_drops_it_from_the_queue() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["idx/first", "a", "--harness", "fake-wait"]);
    let pause = tempfile::tempdir().unwrap();
    let creating = env
        .cmd_in(
            &env.repo,
            &[
                "task",
                "create",
                "idx/second",
                "b",
                "--harness",
                "fake-wait",
                "--json",
            ],
        )
        .env("ORANGE_PAUSE_AT", "task.indexed")
        .env("ORANGE_PAUSE_DIR", pause.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the create to pause after indexing", 20, || {
        pause.path().join("task.indexed.paused").exists()
    });
    // Readers of the index while the file is not there yet: a listing and a monitor pass.
    env.ok(&["task", "list", "--all"]);
    env.ok(&["monitor", "--once"]);
    std::fs::write(pause.path().join("task.indexed.go"), "").unwrap();
    let out = creating.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let b: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b["outcome"], "queued", "{b}");
    let listed = env.ok(&["task", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == b["id"]),
        "the queued task is listed: {listed}"
    );
    // Freeing the workspace starts it.
    let c = env.ok(&["task", "cancel", "--yes", &id(&a)]);
    assert_eq!(c["next"]["spawned"], b["id"], "{c}");
}
