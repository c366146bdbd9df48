//! Every agent is watched, with or without the plugin: a command that starts an agent on
//! a tmux server no monitor watches starts one there (unless the server's
//! `@orange-monitor` is off), and `task list`, `status` and `doctor` say when none does.

use std::path::PathBuf;

use crate::common::{holds_for, wait_for, TaskEnv};

/// The live monitors' identity files (`run/monitor-*.json`).
fn monitors(env: &TaskEnv) -> Vec<PathBuf> {
    std::fs::read_dir(env.home.join("run"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().into_owned();
                    n.starts_with("monitor-") && n.ends_with(".json")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `orange ARGS` in the repository: (stdout, stderr).
fn run(env: &TaskEnv, args: &[&str]) -> (String, String) {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What `orange ARGS` prints on a terminal (util-linux `script` gives it one).
fn at_a_terminal(env: &TaskEnv, args: &str) -> String {
    let line = format!("{} {args}", crate::common::bin().display());
    let orange = env.cmd_in(&env.repo, &[]);
    let mut c = std::process::Command::new("script");
    for (k, v) in orange.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&env.repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Has a monitor pass recorded the task's agent state?
fn looked_at(env: &TaskEnv, id: &str) -> bool {
    env.task(id)["agent"]["state"].is_string()
}

fn monitor_check(env: &TaskEnv) -> serde_json::Value {
    let (_, doctor) = env.json(&["doctor", "--harness", "fake-wait"]);
    doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "monitor")
        .cloned()
        .unwrap_or_else(|| panic!("no monitor check: {doctor}"))
}

#[test]
fn a_task_started_where_no_monitor_watches_starts_one_and_only_one() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    // A server as a person's tmux without the plugin: no @orange-monitor at all.
    env.tmux.ok(&["set", "-gu", "@orange-monitor"]);
    // A person at a terminal is told (a status line, whose stderr is no terminal, is not).
    let (_, quiet) = run(&env, &["status"]);
    assert!(!quiet.contains("no monitor"), "{quiet}");
    let seen = at_a_terminal(&env, "status");
    assert!(
        seen.contains("no monitor watches this tmux server"),
        "{seen}"
    );
    assert_eq!(
        env.ok(&["status", "--format", "json"])["monitor"]["monitor"],
        "unwatched"
    );
    let check = monitor_check(&env);
    assert_eq!(check["ok"], false, "{check}");
    let id = env.create_id("watched/a", "fake-wait");
    wait_for("a monitor to start", 15, || monitors(&env).len() == 1);
    // It watches: the agent's state is filled in without a pass of the test's own.
    wait_for("the monitor to look at the agent", 20, || {
        looked_at(&env, &id)
    });
    let (_, stderr) = run(&env, &["task", "list"]);
    assert!(!stderr.contains("no monitor"), "{stderr}");
    assert_eq!(
        env.ok(&["status", "--format", "json"])["monitor"]["monitor"],
        "watched"
    );
    assert_eq!(monitor_check(&env)["ok"], true);
    // A second task on the same server: still the one monitor.
    let first = monitors(&env);
    env.create_id("watched/b", "fake-wait");
    holds_for(
        "one monitor",
        std::time::Duration::from_millis(1500),
        || monitors(&env) == first,
    );
}

#[test]
fn a_server_with_the_monitor_turned_off_gets_none_and_says_so() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // The test servers' config: `set -g @orange-monitor off`.
    assert_eq!(env.tmux.ok(&["show", "-gv", "@orange-monitor"]), "off");
    let id = env.create_id("unwatched/a", "fake-wait");
    env.wait_session(&id, "live");
    holds_for("no monitor", std::time::Duration::from_millis(1500), || {
        monitors(&env).is_empty()
    });
    let (_, stderr) = run(&env, &["task", "list"]);
    assert!(
        stderr.contains("no monitor watches this tmux server (its @orange-monitor is off)"),
        "{stderr}"
    );
    let status = env.ok(&["status", "--format", "json"])["monitor"].clone();
    assert_eq!(status["monitor"], "unwatched", "{status}");
    assert_eq!(status["off"], true, "{status}");
    let check = monitor_check(&env);
    assert_eq!(check["ok"], true, "{check}");
    assert!(check["detail"].as_str().unwrap().contains("off"), "{check}");
}

#[test]
fn a_respawn_that_brings_the_tmux_server_back_starts_its_monitor() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("reborn/a", "fake-wait");
    env.wait_session(&id, "live");
    assert!(monitors(&env).is_empty());
    // The server dies; respawn from a plain shell starts a new one (no plugin, no test
    // config: nothing turns the monitor off).
    env.tmux.ok(&["kill-server"]);
    wait_for("the old server to exit", 10, || {
        !env.tmux.tmux(&["list-sessions"]).status.success()
    });
    env.ok(&["task", "respawn", &id]);
    wait_for("a monitor on the new server", 15, || {
        monitors(&env).len() == 1
    });
    wait_for("the monitor to look at the respawned agent", 20, || {
        looked_at(&env, &id)
    });
    let (_, stderr) = run(&env, &["task", "list"]);
    assert!(!stderr.contains("no monitor"), "{stderr}");
}
