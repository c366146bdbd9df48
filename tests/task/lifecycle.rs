//! A task's life: create, spawn, work, complete, merge and the queue, its prompt and
//! context, the agent's exit, respawn, cancel, the status transitions, gc and `list --all`.

use crate::common;

use common::{git, id, wait_for, TaskEnv};
use serde_json::Value;

use super::ws_of;

#[test]
fn create_spawn_work_complete_merge_then_the_next_queued_task_starts() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let t = env.create(&[
        "feature/login",
        "Add a login page",
        "--harness",
        "fake-complete",
    ]);
    assert_eq!(t["outcome"], "spawned");
    assert_eq!(t["status"], "working");
    assert_eq!(t["tmux_session"], "app/feature/login");
    let id1 = id(&t);
    // A second task waits: the pool holds one workspace.
    let q = env.create(&["feature/logout", "Add logout", "--harness", "fake-wait"]);
    assert_eq!(q["outcome"], "queued");
    assert_eq!(q["status"], "pending");
    assert!(q["note"].as_str().unwrap().contains("1/1"), "{q}");

    // The agent commits, reports complete and exits 0; its pane stays readable.
    env.wait_status(&id1, "reviewing");
    // task.json is written before its history line: wait for the line too.
    wait_for("two status changes in history", 10, || {
        env.task(&id1)["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "status.changed")
            .count()
            == 2
    });
    let shown = env.wait_session(&id1, "dead");
    assert_eq!(shown["session"]["exit_status"], 0);
    let peek = env.ok(&["task", "peek", &id1]);
    assert!(
        peek["lines"]
            .as_str()
            .unwrap()
            .contains("reported complete: 0"),
        "{peek}"
    );
    let ws = ws_of(&env, &shown);
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s"]),
        format!("work {id1}")
    );

    let m = env.ok(&["task", "merge", &id1]);
    assert_eq!(m["status"], "done");
    assert_eq!(m["merge"]["via"], "ff");
    assert_eq!(m["workspace"], Value::Null);
    assert_eq!(
        git(&env.repo, &["log", "-1", "--format=%s", "main"]),
        format!("work {id1}")
    );
    assert!(
        env.repo.join(format!("work-{id1}.txt")).exists(),
        "main's checkout was fast-forwarded"
    );
    assert!(
        !env.tmux.has_session("app/feature/login"),
        "merge kills the session"
    );
    // The queued task took the freed workspace.
    assert_eq!(m["next"]["spawned"], id(&q));
    let q2 = env.task(&id(&q));
    assert_eq!(q2["status"], "working");
    assert_eq!(q2["workspace"], "app--1");
    assert!(q2["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "auto.spawned"));
    env.wait_session(&id(&q), "live");
    // The released workspace was reset before reuse: no trace of the first task's files.
    let ws = ws_of(&env, &q2);
    assert_eq!(
        std::fs::read_link(ws.join("TASK.md")).unwrap(),
        env.home.join(format!("tasks/app/{}/TASK.md", id(&q)))
    );
    assert_eq!(
        git(&ws, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "feature/logout"
    );
}

#[test]
fn hostile_prompts_reach_the_agent_intact_and_are_never_executed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let summary = "Fix \"quotes\" and 'single' $(touch pwned1) `touch pwned2`; echo hi;\nsecond line\twith tab;";
    let t = env.create(&["fix/hostile", summary, "--harness", "fake-wait"]);
    let got = env.agent_log(&id(&t), "prompt");
    assert!(got.starts_with(summary), "prompt arrived changed: {got:?}");
    assert!(got.contains(&format!("orange task {}", id(&t))));
    let md = env.agent_log(&id(&t), "task-md");
    assert!(
        md.starts_with("# Fix \"quotes\" and 'single' $(touch pwned1)"),
        "{md}"
    );
    for dir in [env.repo.clone(), ws_of(&env, &t), env.root()] {
        assert!(
            !dir.join("pwned1").exists() && !dir.join("pwned2").exists(),
            "a shell ran the prompt in {}",
            dir.display()
        );
    }
    // A leading dash is data too.
    let t2 = env.create(&["fix/dash", "--not-an-option", "--harness", "fake-wait"]);
    assert!(env
        .agent_log(&id(&t2), "prompt")
        .starts_with("--not-an-option"));
}

#[test]
fn context_from_stdin_lands_in_task_md() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let c = env.cmd_in(
        &env.repo,
        &[
            "task",
            "create",
            "ctx/x",
            "Do it",
            "--harness",
            "fake-wait",
            "--context",
            "-",
            "--no-spawn",
            "--json",
        ],
    );
    let out = crate::common::output_with_stdin(c, b"Use the `auth` module.\n$(not run)\n");
    let (ok, v) = common::parse_json_output(&["create"], &out);
    assert!(ok, "{v}");
    assert_eq!(v["outcome"], "pending");
    let shown = env.task(&id(&v));
    let md = shown["task_md"].as_str().unwrap();
    assert!(
        md.contains("## Context\n\nUse the `auth` module.\n$(not run)"),
        "{md}"
    );
}

#[test]
fn agent_exit_status_is_observed_and_the_pane_stays_readable() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    let fail = env.create(&["x/fail", "fail please", "--harness", "fake-fail"]);
    let ok0 = env.create(&["x/ok", "exit please", "--harness", "fake-exit0"]);
    let f = env.wait_session(&id(&fail), "dead");
    assert_eq!(f["session"]["exit_status"], 3);
    let o = env.wait_session(&id(&ok0), "dead");
    assert_eq!(o["session"]["exit_status"], 0);
    let peek = env.ok(&["task", "peek", &id(&fail), "--lines", "20"]);
    assert!(
        peek["lines"].as_str().unwrap().contains("giving up"),
        "{peek}"
    );
    // Killed by a signal.
    let w = env.create(&["x/killed", "wait", "--harness", "fake-wait"]);
    env.wait_session(&id(&w), "live");
    let pid = env
        .tmux
        .ok(&["display", "-p", "-t", "=app/x/killed:", "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    let k = env.wait_session(&id(&w), "dead");
    assert_eq!(k["session"]["exit_signal"], 9, "{k}");
    let list = env.ok(&["task", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 3);
}

#[test]
fn respawn_after_the_session_is_killed_reuses_workspace_and_branch() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["r/x", "keep going", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let m = env.err(&["task", "respawn", &tid], "invalid_transition");
    assert!(m.contains("still running"), "{m}");
    env.tmux.ok(&["kill-session", "-t", "=app/r/x"]);
    assert_eq!(env.task(&tid)["session"]["state"], "none");
    let r = env.ok(&["task", "respawn", &tid]);
    assert_eq!(r["workspace"], t["workspace"]);
    assert_eq!(r["tmux_session"], "app/r/x");
    assert_ne!(r["tmux_session_id"], t["tmux_session_id"]);
    env.wait_session(&tid, "live");
    wait_for("the respawn prompt", 10, || {
        env.agent_log(&tid, "prompt")
            .starts_with("Resuming: keep going")
    });
    assert_eq!(
        git(&ws_of(&env, &r), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "r/x"
    );
    assert!(env.task(&tid)["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "agent.respawned"));
    // A dead (exited) agent can be respawned too: the kept pane is replaced.
    env.tmux.ok(&["send-keys", "-t", "=app/r/x:", "C-d"]);
    env.wait_session(&tid, "dead");
    env.ok(&["task", "respawn", &tid]);
    env.wait_session(&tid, "live");
    assert_eq!(
        env.tmux
            .sessions()
            .iter()
            .filter(|s| s.starts_with("app/r/x"))
            .count(),
        1
    );
}

#[test]
fn cancel_kills_the_session_and_returns_the_workspace_but_keeps_uncommitted_work() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["c/x", "to cancel", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let m = env.err(&["task", "cancel", &tid], "invalid_argument");
    assert!(m.contains("--yes"), "{m}");
    assert_eq!(env.task(&tid)["status"], "working");
    let c = env.ok(&["task", "cancel", &tid, "--yes"]);
    assert_eq!(c["status"], "cancelled");
    assert_eq!(c["workspace"], Value::Null);
    assert!(!env.tmux.has_session("app/c/x"));
    assert_eq!(env.ok(&["workspace", "list"])[0]["status"], "available");
    env.err(&["task", "cancel", &tid, "--yes"], "invalid_transition");

    // With uncommitted work the workspace stays bound: nothing is lost.
    let t2 = env.create(&["c/y", "dirty", "--harness", "fake-wait"]);
    let ws = ws_of(&env, &t2);
    std::fs::write(ws.join("unsaved.txt"), "precious").unwrap();
    let c2 = env.ok(&["task", "cancel", &id(&t2), "--yes"]);
    assert_eq!(c2["status"], "cancelled");
    assert!(c2["note"].as_str().unwrap().contains("kept bound"), "{c2}");
    assert_eq!(
        std::fs::read_to_string(ws.join("unsaved.txt")).unwrap(),
        "precious"
    );
    // gc does not throw it away either.
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["skipped"][0]["code"], "worktree_dirty", "{gc}");
    // Nor does deleting the task's record: it would leave the workspace bound to nothing.
    let m = env.err(&["task", "delete", &id(&t2), "--yes"], "invalid_transition");
    assert!(
        m.contains("workspace release") && m.contains("--force"),
        "{m}"
    );
    // Only final tasks can be deleted.
    let t3 = env.create(&["c/z", "alive", "--harness", "fake-wait", "--no-spawn"]);
    env.err(&["task", "delete", &id(&t3), "--yes"], "invalid_transition");
    // Deleting a task also drops the sidebar's derived line-count cache.
    let cache = env.home.join(format!("run/sidebar/app--{tid}.json"));
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, "{}").unwrap();
    env.ok(&["task", "delete", &tid, "--yes"]);
    env.err(&["task", "show", &tid], "task_not_found");
    assert!(!cache.exists());
}

#[test]
fn status_changes_follow_the_transition_map() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["map", "m", "--harness", "fake-wait", "--no-spawn"]);
    let tid = id(&t);
    let m = env.err(&["task", "complete", &tid], "invalid_transition");
    assert!(m.contains("pending to reviewing"), "{m}");
    env.err(
        &["task", "update", &tid, "--status", "done"],
        "invalid_transition",
    );
    env.err(
        &["task", "update", &tid, "--status", "finished"],
        "invalid_argument",
    );
    env.err(&["task", "update", &tid], "invalid_argument");
    env.err(&["task", "merge", &tid], "invalid_transition");
    env.err(&["task", "show", "zzzzzz"], "task_not_found");
    env.err(&["task", "show", "../etc"], "task_not_found");
    env.ok(&["task", "spawn", &tid]);
    env.err(&["task", "spawn", &tid], "invalid_transition");
    env.ok(&["task", "update", &tid, "--status", "clarification"]);
    env.ok(&[
        "task",
        "update",
        &tid,
        "--status",
        "working",
        "--summary",
        "new \"summary\"",
    ]);
    let r = env.ok(&["task", "complete", &tid]);
    assert_eq!(r["status"], "reviewing");
    assert_eq!(r["summary"], "new \"summary\"");
    env.err(&["task", "stuck", &tid], "invalid_transition");
    let h: Vec<String> = env.task(&tid)["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(h.first().unwrap(), "task.created");
    assert_eq!(
        h.iter().filter(|e| *e == "status.changed").count(),
        4,
        "{h:?}"
    );
}

#[test]
fn gc_uses_the_task_store_and_a_corrupt_task_file_is_reported() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let t = env.create(&["g/x", "g", "--harness", "fake-exit0"]);
    let tid = id(&t);
    // The task's record vanishes behind orange's back (its session too: a live one would
    // be stopped by the reconciliation every command starts with): gc frees its workspace.
    env.tmux
        .ok(&["kill-session", "-t", t["tmux_session_id"].as_str().unwrap()]);
    std::fs::remove_dir_all(env.home.join(format!("tasks/app/{tid}"))).unwrap();
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["released"], serde_json::json!(["app--1"]), "{gc}");
    // A corrupt task.json: state_corrupt with its path; gc keeps that task's workspace.
    let t2 = env.create(&["g/y", "g", "--harness", "fake-wait"]);
    let file = env.home.join(format!("tasks/app/{}/task.json", id(&t2)));
    std::fs::write(&file, "{broken").unwrap();
    let m = env.err(&["task", "show", &id(&t2)], "state_corrupt");
    assert!(m.contains(file.to_str().unwrap()), "{m}");
    env.err(&["task", "list"], "state_corrupt");
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["kept"].as_array().unwrap().len(), 1, "{gc}");
}

#[test]
fn a_workspace_freed_by_gc_starts_the_oldest_queued_task() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["q/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["q/b", "b", "--harness", "fake-wait"]);
    let c = env.create(&["q/c", "c", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued");
    assert_eq!(c["outcome"], "queued");
    env.tmux.ok(&["kill-session", "-t", "=app/q/a"]);
    std::fs::remove_dir_all(env.home.join(format!("tasks/app/{}", id(&a)))).unwrap();
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["released"], serde_json::json!(["app--1"]));
    assert_eq!(
        gc["next"]["spawned"],
        id(&b),
        "FIFO: the oldest pending task goes first"
    );
    assert_eq!(env.task(&id(&b))["status"], "working");
    assert_eq!(env.task(&id(&c))["status"], "pending");
}

#[test]
fn list_all_groups_tasks_by_project() {
    let env = TaskEnv::new();
    let (web, _) = common::make_repo(&env.root(), "web");
    env.add_project(&[]);
    env.ok(&["project", "add", web.to_str().unwrap()]);
    let a1 = env.create(&["a/1", "one", "--harness", "fake-wait", "--no-spawn"]);
    let (ok, w1) = env.json_in(
        &web,
        &[
            "task",
            "create",
            "w/1",
            "web one",
            "--harness",
            "fake-wait",
            "--no-spawn",
        ],
    );
    assert!(ok, "{w1}");
    let a2 = env.create(&["a/2", "two", "--harness", "fake-wait", "--no-spawn"]);
    let all = env.ok(&["task", "list", "--all"]);
    let order: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["project"].as_str().unwrap(), t["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("app", a1["id"].as_str().unwrap()),
            ("app", a2["id"].as_str().unwrap()),
            ("web", w1["id"].as_str().unwrap())
        ]
    );
    let out = env
        .cmd_in(&env.repo, &["task", "list", "--all"])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().starts_with("PROJECT"),
        "{text}"
    );
}
