//! Tasks and lanes that stay true through failures: a task that cannot start is
//! visible as `failed`, the queue never jams, crashes leave state the next command repairs.
//! Real git, a real tmux server with the hostile config, the fake agent.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{git, id, TaskEnv};
use serde_json::Value;

fn bound(env: &TaskEnv) -> Vec<(String, String)> {
    let pool = env.pool_json();
    pool["workspaces"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(name, w)| Some((name.clone(), w["task"].as_str()?.to_string())))
        .collect()
}

/// A branch `blocked/…` cannot be created once a branch `blocked` exists (git keeps refs
/// as files): a failure that only shows after the task is recorded.
fn block_branches(env: &TaskEnv) {
    git(&env.repo, &["branch", "blocked"]);
}

#[test]
fn a_task_that_fails_after_it_is_recorded_is_visible_as_failed_and_holds_nothing() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    block_branches(&env);
    let (ok, v) = env.json(&[
        "task",
        "create",
        "blocked/login",
        "Log in",
        "--harness",
        "fake-wait",
    ]);
    assert!(!ok, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    // The error names the task it kept and what to do with it.
    let list = env.ok(&["task", "list"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let t = &list[0];
    let tid = id(t);
    assert!(msg.contains(&tid) && msg.contains("failed"), "{msg}");
    assert!(msg.contains("orange task respawn"), "{msg}");
    assert_eq!(t["status"], "failed", "{t}");
    assert!(
        t["failure"].as_str().unwrap().contains("blocked/login"),
        "{t}"
    );
    assert_eq!(t["workspace"], Value::Null);
    assert_eq!(t["tmux_session"], Value::Null);
    assert!(bound(&env).is_empty(), "{:?}", bound(&env));
    let sessions = env.tmux.sessions();
    assert!(sessions.iter().all(|s| s == "keepalive"), "{sessions:?}");
    // Seen as failed by a person too: the table, `task show`, the sidebar.
    let out = env
        .cmd(&["task", "list"])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains(&tid) && table.contains("failed"), "{table}");
    let out = env
        .cmd(&["task", "show", &tid])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&out.stdout);
    assert!(show.contains("failed: "), "{show}");
    let out = env
        .cmd(&["sidebar", "--task", &tid, "--once", "--width", "60"])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&out.stdout);
    assert!(side.contains("Failed to start"), "{side}");
    // Retrying the same branch names the failed task and how to retry it.
    let msg = env.err(
        &[
            "task",
            "create",
            "blocked/login",
            "Log in",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert!(
        msg.contains(&tid) && msg.contains("failed") && msg.contains("respawn"),
        "{msg}"
    );
    // Once the cause is gone, respawn starts it from the start.
    git(&env.repo, &["branch", "-D", "blocked"]);
    let r = env.ok(&["task", "respawn", &tid]);
    assert_eq!(r["status"], "working", "{r}");
    assert_eq!(r["failure"], Value::Null, "{r}");
    env.wait_session(&tid, "live");
    assert_eq!(bound(&env), vec![("app--1".to_string(), tid.clone())]);
}

#[test]
fn a_failed_task_can_be_deleted_or_cancelled() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    block_branches(&env);
    for b in ["blocked/a", "blocked/b"] {
        env.json(&["task", "create", b, "x", "--harness", "fake-wait"]);
    }
    let list = env.ok(&["task", "list"]);
    let ids: Vec<String> = list.as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids.len(), 2);
    for t in list.as_array().unwrap() {
        assert_eq!(t["status"], "failed", "{t}");
    }
    env.ok(&["task", "delete", "--yes", &ids[0]]);
    env.err(&["task", "show", &ids[0]], "task_not_found");
    let c = env.ok(&["task", "cancel", "--yes", &ids[1]]);
    assert_eq!(c["status"], "cancelled", "{c}");
}

#[test]
fn a_queued_task_that_cannot_start_fails_and_the_next_one_starts() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["q/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["blocked/b", "b", "--harness", "fake-wait"]);
    let c = env.create(&["q/c", "c", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued");
    assert_eq!(c["outcome"], "queued");
    // b's branch becomes impossible while it waits in the queue.
    block_branches(&env);
    let out = env.ok(&["task", "cancel", "--yes", &id(&a)]);
    let next = &out["next"];
    assert_eq!(next["failed"][0]["id"], id(&b).as_str(), "{out}");
    assert_eq!(
        next["spawned"],
        id(&c).as_str(),
        "the queue moved on: {out}"
    );
    assert_eq!(next["error"], Value::Null, "{out}");
    let tb = env.task(&id(&b));
    assert_eq!(tb["status"], "failed", "{tb}");
    assert!(
        tb["failure"].as_str().unwrap().contains("blocked/b"),
        "{tb}"
    );
    env.wait_session(&id(&c), "live");
    assert_eq!(bound(&env), vec![("app--1".to_string(), id(&c))]);
    // The next release does not trip over b again.
    let out = env
        .cmd(&["task", "cancel", "--yes", &id(&c)])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("could not start"), "{text}");
    assert!(bound(&env).is_empty());
    // A failed task retried while the pool is full waits in the queue again.
    git(&env.repo, &["branch", "-D", "blocked"]);
    let d = env.create(&["q/d", "d", "--harness", "fake-wait"]);
    assert_eq!(d["outcome"], "spawned");
    let r = env.ok(&["task", "respawn", &id(&b)]);
    assert_eq!(r["status"], "pending", "{r}");
    let out = env.ok(&["task", "cancel", "--yes", &id(&d)]);
    assert_eq!(out["next"]["spawned"], id(&b).as_str(), "{out}");
}

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
