//! Group commands killed at their fault points (`ORANGE_CRASH_AT`): create, cancel,
//! judge and pick, and the next command finishing what the killed one began.

use crate::common;

use common::wait_for;

use super::{agents, env, members, task_of};

/// Each group command killed at each of its fault points (`ORANGE_CRASH_AT`): the next
/// command works, and running the command again finishes what the killed one began.
#[test]
fn group_commands_killed_at_their_fault_points_leave_state_the_next_command_finishes() {
    let env = env("4");
    let crash = |point: &str, args: &[&str]| {
        let out = env
            .cmd_in(&env.repo, args)
            .env("ORANGE_CRASH_AT", point)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} did not stop at {point}");
        assert!(env.json(&["group", "list"]).0, "group list after {point}");
        assert!(env.json(&["task", "list"]).0, "task list after {point}");
    };
    // Killed once the record is written: its members are not created, said so.
    crash(
        "group.recorded",
        &[
            "task",
            "create",
            "k1",
            "x",
            "--n",
            "2",
            "--harness",
            "fake-wait",
        ],
    );
    let g = env.ok(&["group", "show", "k1"]);
    assert!(
        members(&g).iter().all(|m| m["state"] == "not-created"),
        "{g}"
    );
    env.ok(&["group", "cancel", "k1", "--yes"]);
    // Killed once the members are recorded, before any starts: each is a member,
    // pending (`task spawn` starts it).
    let create = |b: &str| -> Vec<String> {
        [
            "task",
            "create",
            b,
            "x",
            "--n",
            "2",
            "--harness",
            "fake-wait",
        ]
        .map(String::from)
        .to_vec()
    };
    let states = |b: &str| -> Vec<String> {
        let g = env.ok(&["group", "show", b]);
        members(&g)
            .iter()
            .map(|m| m["state"].as_str().unwrap().to_string())
            .collect()
    };
    let a = create("k2");
    crash(
        "group.members",
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(states("k2"), ["pending", "pending"]);
    let first = task_of(&members(&env.ok(&["group", "show", "k2"]))[0]);
    env.ok(&["task", "spawn", &first]);
    // Killed with the workspaces bound (no branch checked out, no session yet), or with
    // the sessions started but not recorded: the next command (`group list` in `crash`)
    // gives the workspaces back and the queue starts the members, or adopts their
    // sessions. Either way both work, each in its own workspace, one session each.
    for (b, point) in [("k5", "group.bound"), ("k6", "group.started")] {
        let a = create(b);
        crash(point, &a.iter().map(String::as_str).collect::<Vec<_>>());
        env.ok(&["task", "list"]);
        assert_eq!(states(b), ["working", "working"], "after {point}");
        let mut ws: Vec<String> = env
            .ok(&["task", "list"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["branch"].as_str().unwrap().starts_with(&format!("{b}/")))
            .map(|t| t["workspace"].as_str().unwrap().to_string())
            .collect();
        ws.dedup();
        assert_eq!(ws.len(), 2, "after {point}: {ws:?}");
        let sessions: Vec<String> = agents(&env)
            .into_iter()
            .filter(|s| s.starts_with(&format!("app/{b}/")))
            .collect();
        assert_eq!(sessions.len(), 2, "after {point}: {sessions:?}");
        env.ok(&["group", "cancel", b, "--yes"]);
    }
    // Cancel killed after it was recorded: run again, it cancels what is left.
    crash("group.cancel.recorded", &["group", "cancel", "k2", "--yes"]);
    assert_eq!(
        members(&env.ok(&["group", "show", "k2"]))[0]["state"],
        "working"
    );
    env.ok(&["group", "cancel", "k2", "--yes"]);
    assert_eq!(
        members(&env.ok(&["group", "show", "k2"]))[0]["state"],
        "cancelled"
    );
    // Pick killed after it was recorded, or after the histories: run again, it finishes
    // (and tells each member once).
    let v = env.ok(&[
        "task",
        "create",
        "k3",
        "x",
        "--n",
        "2",
        "--harness",
        "fake-wait",
    ]);
    let other = task_of(&members(&v)[1]);
    // Judge killed once its agent's run is recorded (no session yet), or once the agent
    // started: the next `group judge` reads what there is (no answer, said so; or the
    // agent's ranking) and nothing of the judge is left running.
    let judge = ["group", "judge", "k3", "--now", "--agent", "fake-judge"];
    crash("group.judge.recorded", &judge);
    let j = env.ok(&["group", "judge", "k3"]);
    assert!(j["judgement"].get("agent_run").is_none(), "{j}");
    assert!(
        j["judgement"]["agent_error"]
            .as_str()
            .is_some_and(|e| e.contains("without writing")),
        "{j}"
    );
    crash("group.judge.started", &judge);
    wait_for("the killed judge's ranking read", 30, || {
        let j = env.ok(&["group", "judge", "k3"]);
        j["judgement"].get("agent_run").is_none()
            && j["judgement"]["results"][0]["judge_reason"] == "ranked by the fake judge"
    });
    assert!(
        !env.tmux.sessions().iter().any(|s| s.ends_with("/judge")),
        "{:?}",
        env.tmux.sessions()
    );
    for point in ["group.pick.recorded", "group.pick.told"] {
        crash(point, &["group", "pick", "k3", "1", "--yes"]);
    }
    env.ok(&["group", "pick", "k3", "1", "--yes"]);
    let g = env.ok(&["group", "show", "k3"]);
    assert_eq!(members(&g)[1]["state"], "cancelled", "{g}");
    assert_eq!(env.history_events(&other, "group.not_picked").len(), 1);
    // Another member cannot be picked now.
    env.err(&["group", "pick", "k3", "2", "--yes"], "invalid_transition");
}
