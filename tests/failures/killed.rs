//! Commands killed mid-way (`ORANGE_CRASH_AT`): what a killed create, spawn, cancel,
//! merge, respawn or lane create leaves, and the next command or monitor pass repairing it.

use crate::common;

use common::{git, id, TaskEnv};
use serde_json::Value;

use super::bound;

/// Run orange with `ORANGE_CRASH_AT=point`: it dies there as a SIGKILL would leave it.
fn crash_at(env: &TaskEnv, point: &str, args: &[&str]) {
    let out = env
        .cmd_in(&env.repo, args)
        .env("ORANGE_CRASH_AT", point)
        .output()
        .unwrap();
    assert!(
        !out.status.success() && out.status.code().is_none(),
        "orange {args:?} was to die at {point}: {out:?}"
    );
}

/// The tmux sessions of agents (not the test's keepalive).
fn agent_sessions(env: &TaskEnv) -> Vec<String> {
    env.tmux
        .sessions()
        .into_iter()
        .filter(|s| s != "keepalive")
        .collect()
}

#[test]
fn an_agent_started_by_a_killed_create_is_adopted_then_cancel_stops_it_and_frees_its_workspace() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    crash_at(
        &env,
        "spawn.started",
        &[
            "task",
            "create",
            "c/orphan",
            "orphan",
            "--harness",
            "fake-wait",
        ],
    );
    // What the crash left: the agent runs, its record says pending.
    assert_eq!(agent_sessions(&env), vec!["app/c/orphan".to_string()]);
    let dir = std::fs::read_dir(env.home.join("tasks/app"))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("task.json").exists())
        .unwrap()
        .path();
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("task.json")).unwrap()).unwrap();
    assert_eq!(raw["status"], "pending", "{raw}");
    let tid = id(&raw);
    // The next command adopts it: the record points to the agent that runs.
    let t = env.task(&tid);
    assert_eq!(t["status"], "working", "{t}");
    assert_eq!(t["session"]["state"], "live", "{t}");
    assert_eq!(t["workspace"], "app--1", "{t}");
    let history =
        std::fs::read_to_string(env.home.join(format!("tasks/app/{tid}/history.jsonl"))).unwrap();
    assert!(history.contains("agent.adopted"), "{history}");
    // Cancel stops it and frees the pool; the next task gets a workspace no agent works in.
    env.ok(&["task", "cancel", "--yes", &tid]);
    assert!(
        agent_sessions(&env).is_empty(),
        "{:?}",
        agent_sessions(&env)
    );
    assert!(bound(&env).is_empty(), "{:?}", bound(&env));
    let n = env.create(&["c/next", "next", "--harness", "fake-wait"]);
    assert_eq!(n["outcome"], "spawned", "{n}");
    assert_eq!(agent_sessions(&env), vec!["app/c/next".to_string()]);
}

#[test]
fn a_spawn_killed_after_it_took_a_workspace_gives_it_back() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    crash_at(
        &env,
        "spawn.acquired",
        &["task", "create", "c/half", "half", "--harness", "fake-wait"],
    );
    assert_eq!(bound(&env).len(), 1, "the crash left the workspace bound");
    assert!(agent_sessions(&env).is_empty());
    // The next command gives the workspace back, and the queue starts the task again:
    // one agent, in the one workspace, which the record and the pool agree on.
    let list = env.ok(&["task", "list"]);
    let tid = id(&list[0]);
    let history =
        std::fs::read_to_string(env.home.join(format!("tasks/app/{tid}/history.jsonl"))).unwrap();
    assert!(history.contains("workspace.released"), "{history}");
    assert!(history.contains("auto.spawned"), "{history}");
    assert_eq!(list[0]["status"], "working", "{list}");
    assert_eq!(bound(&env), vec![("app--1".to_string(), tid)]);
    assert_eq!(agent_sessions(&env), vec!["app/c/half".to_string()]);
}

#[test]
fn a_monitor_pass_adopts_an_interrupted_spawn_and_stops_an_agent_whose_task_is_gone() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let b = env.create(&["m/b", "b", "--harness", "fake-wait"]);
    crash_at(
        &env,
        "spawn.started",
        &["task", "create", "m/a", "a", "--harness", "fake-wait"],
    );
    // b's record is removed behind orange's back while its agent runs.
    std::fs::remove_dir_all(env.home.join(format!("tasks/app/{}", id(&b)))).unwrap();
    let pass = env.ok(&["monitor", "--once"]);
    let repairs: Vec<String> = pass["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "reconciled")
        .map(|a| a["repair"]["action"].as_str().unwrap().to_string())
        .collect();
    assert!(repairs.contains(&"adopted".to_string()), "{pass}");
    assert!(repairs.contains(&"stopped".to_string()), "{pass}");
    assert_eq!(agent_sessions(&env), vec!["app/m/a".to_string()]);
    let list = env.ok(&["task", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["status"], "working");
    assert_eq!(bound(&env), vec![("app--2".to_string(), id(&list[0]))]);
    // Repairs are logged.
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    assert!(log.contains("reconciled"), "{log}");
}

#[test]
fn a_cancel_or_merge_killed_after_it_was_recorded_is_finished_by_the_next_command() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let a = env.create(&["k/a", "a", "--harness", "fake-wait"]);
    crash_at(
        &env,
        "cancel.recorded",
        &["task", "cancel", "--yes", &id(&a)],
    );
    assert_eq!(
        agent_sessions(&env).len(),
        1,
        "the crash left the agent running"
    );
    let t = env.task(&id(&a));
    assert_eq!(t["status"], "cancelled", "{t}");
    assert!(
        agent_sessions(&env).is_empty(),
        "{:?}",
        agent_sessions(&env)
    );
    assert!(bound(&env).is_empty(), "{:?}", bound(&env));

    let b = env.create(&["k/b", "b", "--harness", "fake-wait"]);
    let ws = env.ws_path(b["workspace"].as_str().unwrap());
    std::fs::write(ws.join("b.txt"), "b").unwrap();
    git(&ws, &["add", "b.txt"]);
    git(&ws, &["commit", "-qm", "b"]);
    crash_at(
        &env,
        "merge.recorded",
        &["task", "merge", "--local", &id(&b)],
    );
    let out = env.ok(&["workspace", "list"]);
    assert!(
        out.as_array()
            .unwrap()
            .iter()
            .all(|w| w["status"] != "bound"),
        "{out}"
    );
    assert!(
        agent_sessions(&env).is_empty(),
        "{:?}",
        agent_sessions(&env)
    );
    assert_eq!(env.task(&id(&b))["status"], "done");
    assert!(git(&env.repo, &["log", "--oneline", "main"]).contains(" b"));
}

#[test]
fn a_merge_killed_after_merging_is_completed_by_running_it_again() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let b = env.create(&["k/m", "m", "--harness", "fake-wait"]);
    let ws = env.ws_path(b["workspace"].as_str().unwrap());
    std::fs::write(ws.join("m.txt"), "m").unwrap();
    git(&ws, &["add", "m.txt"]);
    git(&ws, &["commit", "-qm", "m"]);
    crash_at(&env, "merge.merged", &["task", "merge", "--local", &id(&b)]);
    assert_eq!(env.task(&id(&b))["status"], "working");
    let m = env.ok(&["task", "merge", "--local", &id(&b)]);
    assert_eq!(m["status"], "done", "{m}");
    assert_eq!(m["merge"]["via"], "already-merged", "{m}");
    assert!(agent_sessions(&env).is_empty());
}

#[test]
fn a_respawn_killed_before_it_was_recorded_leaves_one_agent_the_record_points_to() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let a = env.create(&["r/a", "a", "--harness", "fake-exit0"]);
    env.wait_session(&id(&a), "dead");
    crash_at(&env, "respawn.started", &["task", "respawn", &id(&a)]);
    let t = env.task(&id(&a));
    let sessions = agent_sessions(&env);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let live = env
        .tmux
        .ok(&["list-sessions", "-F", "#{session_name} #{session_id}"]);
    let live_id = live
        .lines()
        .find_map(|l| l.strip_prefix("app/r/a "))
        .unwrap();
    assert_eq!(t["tmux_session_id"], live_id, "{t}");
    assert_ne!(a["tmux_session_id"], live_id, "a new session");
}

/// `lane create` for `task_id`, killed at `point`.
fn crash_lane_create(env: &TaskEnv, point: &str, task_id: &str) {
    crash_at(
        env,
        point,
        &[
            "lane",
            "create",
            "--task-id",
            task_id,
            "--harness",
            "fake-wait",
        ],
    );
}

fn lanes(env: &TaskEnv) -> Vec<Value> {
    env.ok(&["lane", "list", "--include-closed"])
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_lane_whose_create_was_killed_is_settled_running_or_error_and_can_be_closed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // Killed after its session started: the agent runs, so the lane is running.
    crash_lane_create(&env, "lane.started", "T-1");
    let raw = std::fs::read_to_string(env.home.join("lanes/registry.json")).unwrap();
    assert!(raw.contains("\"creating\""), "{raw}");
    let l = lanes(&env);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["state"], "running", "{l:?}");
    let running = l[0]["lane_id"].as_str().unwrap().to_string();
    assert_eq!(
        l[0]["mux_session_id"].as_str().map(|s| s.starts_with('$')),
        Some(true)
    );
    // Killed before its worktree and session: nothing runs, so the lane is in error.
    crash_lane_create(&env, "lane.recorded", "T-2");
    let l = lanes(&env);
    let broken = l.iter().find(|l| l["task_id"] == "T-2").unwrap();
    assert_eq!(broken["state"], "error", "{broken}");
    assert!(
        broken["last_error"]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{broken}"
    );
    // Both can be closed; gc takes the broken one without --force.
    let c = env.ok(&["lane", "close", "--force", &running]);
    assert_eq!(c["state"], "closed", "{c}");
    assert!(
        agent_sessions(&env).is_empty(),
        "{:?}",
        agent_sessions(&env)
    );
    let gc = env.ok(&["lane", "gc", "--idle-ttl", "0s"]);
    assert_eq!(gc["closed"].as_array().unwrap().len(), 1, "{gc}");
}

#[test]
fn a_lane_still_being_created_is_left_to_its_creator() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // A creator that is alive holds the lane's creating lock: reconciliation waits for it.
    crash_lane_create(&env, "lane.recorded", "T-3");
    let raw: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.join("lanes/registry.json")).unwrap(),
    )
    .unwrap();
    let id = raw["lanes"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let lock = env.home.join(format!("lanes/.creating/{id}.lock"));
    // -o: flock holds the lock itself (not its sleep), so killing it frees the lock.
    let holder = std::process::Command::new("flock")
        .arg("-o")
        .arg(&lock)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    common::wait_for("flock to hold the lock", 10, || {
        std::process::Command::new("flock")
            .args(["-n", lock.to_str().unwrap(), "true"])
            .status()
            .is_ok_and(|s| !s.success())
    });
    let mut holder = holder;
    assert_eq!(lanes(&env)[0]["state"], "creating");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(lanes(&env)[0]["state"], "error");
}

#[test]
fn a_workspace_freed_by_a_repair_starts_the_queued_task() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["q/first", "a", "--harness", "fake-wait"]);
    let b = env.create(&["q/second", "b", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued");
    crash_at(
        &env,
        "cancel.recorded",
        &["task", "cancel", "--yes", &id(&a)],
    );
    // The next command stops a's agent, frees the workspace and starts b.
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("started queued task {}", id(&b))),
        "{said}"
    );
    let tb = env.task(&id(&b));
    assert_eq!(tb["status"], "working", "{tb}");
    assert_eq!(bound(&env), vec![("app--1".to_string(), id(&b))]);
    assert_eq!(agent_sessions(&env), vec!["app/q/second".to_string()]);
}
