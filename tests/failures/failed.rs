//! A task that cannot start: visible as `failed` and holding nothing, deleted or
//! cancelled, and the queue moving on past it.

use crate::common;

use common::{git, id, TaskEnv};
use serde_json::Value;

use super::bound;

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
