//! Groups (best of N, `orange group`): one prompt fanned out to several agents on real git
//! and a real tmux server, with fake agents that make DIFFERENT changes (`fake-good`
//! commits the file the project's check looks for, `fake-complete` another one); judged
//! by the check, the diffs and a judge agent (a fake one here; the real Claude Code against
//! the stand-in API in judge.rs); one picked, the rest cancelled.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{wait_for, TaskEnv};
use serde_json::Value;

mod judge;
mod killed;
mod members;

/// A TaskEnv with the group harnesses (`fake-good`, `fake-judge`) and a project whose
/// check passes only where `fake-good` worked.
fn env(pool: &str) -> TaskEnv {
    let env = TaskEnv::new();
    let agent = common::fixtures().join("fake-agent.sh");
    for mode in ["good", "judge"] {
        env.append_config(&format!(
            "[harness.fake-{mode}]\ncommand = \"sh {} {mode} {{prompt}}\"\n",
            agent.display()
        ));
    }
    env.add_project(&["--pool-size", pool]);
    env.ok(&[
        "project",
        "update",
        "--check-cmd",
        "test -f GOOD && echo checked",
    ]);
    env
}

/// The agents' sessions (not the test server's own).
fn agents(env: &TaskEnv) -> Vec<String> {
    let mut s = env.tmux.sessions();
    s.retain(|n| n.starts_with("app/"));
    s
}

/// `task create ARGS…` making a group: its id and what the command printed.
fn group(env: &TaskEnv, args: &[&str]) -> (String, Value) {
    let mut a = vec!["task", "create"];
    a.extend_from_slice(args);
    let v = env.ok(&a);
    (v["group"]["id"].as_str().unwrap().to_string(), v)
}

fn members(v: &Value) -> Vec<Value> {
    v["members"].as_array().unwrap().clone()
}

fn task_of(m: &Value) -> String {
    m["task"]["id"]
        .as_str()
        .or(m["task"].as_str())
        .unwrap()
        .to_string()
}

/// Wait until every member with a task is `status`.
fn wait_members(env: &TaskEnv, gid: &str, status: &str) -> Value {
    let mut g = Value::Null;
    wait_for(&format!("group {gid}'s members to be {status}"), 30, || {
        g = env.ok(&["group", "show", gid]);
        members(&g).iter().all(|m| m["state"] == status)
    });
    g
}

/// A child process killed when the test ends, passed or not.
pub(crate) struct Killed(pub(crate) std::process::Child);

/// A monitor of `env`'s tmux server, looking every 300 ms, killed when the test ends.
pub(crate) fn monitor(env: &TaskEnv) -> Killed {
    Killed(
        env.cmd_in(&env.repo, &["monitor", "--interval", "300ms"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
