//! A fleet left alone (issue 28 parts 2 and 4): caps on running agents (`max_running` of a
//! project and of the fleet) with fake agents on real tmux, and the notifications that
//! reach a phone (ntfy, a webhook, Slack) with the answers that come back, against a
//! stand-in server on 127.0.0.1 (tests/common/notify_standin.rs).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{id, wait_for, TaskEnv};
use serde_json::Value;

fn pass(env: &TaskEnv) -> Value {
    env.ok(&["monitor", "--once"])
}

/// Task sessions whose agent's pane is alive.
fn live_agents(env: &TaskEnv) -> usize {
    let out = env
        .tmux
        .ok(&["list-panes", "-a", "-F", "#{session_name}\t#{pane_dead}"]);
    out.lines()
        .filter(|l| !l.starts_with("keepalive") && l.ends_with("\t0"))
        .count()
}

#[test]
fn a_project_cap_queues_in_order_says_why_and_starts_the_next_as_one_ends() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "5"]);
    let p = env.ok(&["project", "update", "--max-running", "2"]);
    assert_eq!(p["max_running"], 2, "{p}");
    let a = env.create(&["cap/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["cap/b", "b", "--harness", "fake-wait"]);
    let c = env.create(&["cap/c", "c", "--harness", "fake-wait"]);
    let d = env.create(&["cap/d", "d", "--harness", "fake-wait"]);
    assert_eq!(a["outcome"], "spawned", "{a}");
    assert_eq!(b["outcome"], "spawned", "{b}");
    assert_eq!(c["outcome"], "queued", "{c}");
    assert!(
        c["note"].as_str().unwrap().contains("2 of 2"),
        "the note says why: {c}"
    );
    assert_eq!(d["outcome"], "queued", "{d}");
    assert_eq!(live_agents(&env), 2);
    // Why it waits, in the list (JSON and text), in show, and counted in status.
    let list = env.ok(&["task", "list"]);
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == c["id"])
        .unwrap();
    assert_eq!(row["queued"]["reason"], "queued: 2 running of 2", "{row}");
    assert_eq!(row["queued"]["scope"], "project", "{row}");
    let text = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("queued: 2 running of 2"), "{text}");
    assert!(text.contains("running: 2 of 2 (app); 2 queued"), "{text}");
    let show = env.task(&id(&c));
    assert_eq!(show["queued"]["reason"], "queued: 2 running of 2", "{show}");
    let status = env.ok(&["status", "--format", "json"]);
    assert_eq!(status["fleet"]["running"], 2, "{status}");
    assert_eq!(status["fleet"]["queued"], 2, "{status}");
    // A queued task is not started by hand over the cap either.
    env.err(&["task", "spawn", &id(&c)], "cap_reached");
    // One ends (cancelled): the OLDEST queued one starts, not the other.
    env.ok(&["task", "cancel", "--yes", &id(&a)]);
    assert_eq!(env.task(&id(&c))["status"], "working");
    assert_eq!(env.task(&id(&d))["status"], "pending");
    assert_eq!(live_agents(&env), 2);
    // One dies: the monitor records the death, and a pass after it starts the next.
    let sid = env.task(&id(&b))["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux
        .ok(&["respawn-pane", "-k", "-t", &format!("{sid}:"), "exit 3"]);
    wait_for("the death to be recorded and d to start", 30, || {
        pass(&env);
        env.task(&id(&d))["status"] == "working"
    });
    assert_eq!(live_agents(&env), 2);
    let started = env.history_events(&id(&d), "auto.spawned");
    assert_eq!(started.len(), 1, "{started:?}");
}

#[test]
fn parallel_creates_never_go_over_the_fleet_cap() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "6"]);
    env.append_config("[fleet]\nmax_running = 2\n");
    let children: Vec<_> = (0..6)
        .map(|i| {
            env.cmd_in(
                &env.repo,
                &[
                    "task",
                    "create",
                    &format!("par/{i}"),
                    "go",
                    "--harness",
                    "fake-wait",
                    "--json",
                ],
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut outcomes = vec![];
    for c in children {
        let out = c.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        outcomes.push(v["outcome"].as_str().unwrap_or("?").to_string());
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        ["queued", "queued", "queued", "queued", "spawned", "spawned"],
        "{outcomes:?}"
    );
    assert_eq!(live_agents(&env), 2);
    let status = env.ok(&["status", "--format", "json"]);
    assert_eq!(status["fleet"]["max_running"], 2, "{status}");
    assert_eq!(status["fleet"]["queued"], 4, "{status}");
}

#[test]
fn a_create_killed_after_the_cap_was_counted_is_started_by_the_next_pass() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    env.append_config("[fleet]\nmax_running = 2\n");
    let out = env
        .cmd_in(
            &env.repo,
            &["task", "create", "k/a", "a", "--harness", "fake-wait"],
        )
        .env("ORANGE_CRASH_AT", "cap.counted")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "it was to die: {out:?}");
    let list = env.ok(&["task", "list"]);
    let t = &list.as_array().unwrap()[0];
    assert_eq!(t["status"], "pending", "{t}");
    assert_eq!(live_agents(&env), 0);
    // Room under the cap: the next pass starts what the killed command left queued.
    pass(&env);
    let t = env.task(&id(t));
    assert_eq!(t["status"], "working", "{t}");
    assert_eq!(live_agents(&env), 1);
}
