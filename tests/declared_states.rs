//! States for any agent without a code change: a harness in config.toml
//! declares how to read its screen (`[harness.NAME.screen]`: working, waiting, blocked,
//! error patterns) and how to nudge it (`nudge_message`, `nudge_submit`, `nudge_keys`).
//! The agent here (tests/fixtures/screen-agent.sh) has no hooks and prints one line per
//! state; the test types to it as a person would and checks what the monitor reports.
//! The built-in harnesses go through the same rules (claude's: tests/claude_screens.rs).

use crate::common::{self, fixtures, TaskEnv};
use serde_json::Value;

fn config(policy: &str) -> String {
    format!(
        r#"[harness.mybot]
command = "sh {agent}"
nudge_message = "keep going, mybot"
nudge_submit = "Enter"
[harness.mybot.screen]
working = ['crunching \(ctrl-c to stop\)']
waiting = ['^mybot ready ::$']
blocked = ['\[y/N\]$']
error = ['^mybot: fatal:']
[harness.mybot.policy]
idle_grace = "1s"
{policy}
"#,
        agent = fixtures().join("screen-agent.sh").display()
    )
}

/// Type a line into the agent's pane and wait until its answer is on screen.
fn say(env: &TaskEnv, pane: &str, line: &str, answer: &str) {
    env.tmux.ok(&["send-keys", "-t", pane, "-l", line]);
    env.tmux.ok(&["send-keys", "-t", pane, "Enter"]);
    common::wait_for(&format!("the agent to answer {line:?}"), 20, || {
        let screen = env.tmux.ok(&["capture-pane", "-p", "-t", pane]);
        screen.trim_end().ends_with(answer)
    });
}

/// A project, config.toml with the made-up harness (and `policy`), and its task started.
fn start(policy: &str) -> (TaskEnv, Value) {
    let env = TaskEnv::new();
    env.add_project(&[]);
    std::fs::write(env.home.join("config.toml"), config(policy)).unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "bot",
        "do the thing",
        "--harness",
        "mybot",
    ]);
    (env, t)
}

/// One monitor pass, then the agent as `task show` reports it.
fn pass(env: &TaskEnv, id: &str) -> Value {
    env.ok(&["monitor", "--once"]);
    env.task(id)["agent"].clone()
}

/// [`pass`], on a clock `later` ahead (`ORANGE_CLOCK_SKEW`): the screen has been quiet that
/// much longer, without a sleep through the grace.
fn pass_later(env: &TaskEnv, id: &str, later: &str) -> Value {
    env.monitor_at(later);
    env.task(id)["agent"].clone()
}

#[test]
fn a_declared_harness_is_working_waiting_blocked_and_in_error_by_its_screen() {
    let (env, t) = start("");
    let id = t["id"].as_str().unwrap().to_string();
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    common::wait_for("the agent's prompt", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("mybot ready ::")
    });
    // The summary went in as the first prompt: the agent answered with its prompt.
    let a = pass(&env, &id);
    assert_eq!(a["state"], "waiting", "{a}");
    assert_eq!(a["signal"], "screen", "{a}");

    say(&env, &pane, "work", "~~ crunching (ctrl-c to stop) ~~");
    // Quiet for longer than the idle grace (1 s; the clock 2 s ahead): by activity alone
    // this would be waiting.
    let a = pass_later(&env, &id, "2s");
    assert_eq!(a["state"], "working", "{a}");

    say(&env, &pane, "ask", "[y/N]");
    let a = pass(&env, &id);
    assert_eq!(a["state"], "blocked", "{a}");
    assert_eq!(a["blocker"], "prompt", "{a}");
    assert!(
        a["detail"].as_str().unwrap_or("").contains("rm -rf build"),
        "{a}"
    );

    say(&env, &pane, "fail", "429 Too Many Requests");
    let a = pass(&env, &id);
    assert_eq!(a["state"], "error", "{a}");
    assert_eq!(a["error_kind"], "rate_limited", "{a}");

    say(&env, &pane, "done", "mybot ready ::");
    let a = pass(&env, &id);
    assert_eq!(a["state"], "waiting", "{a}");
    let status = env.tmux.ok(&[
        "show-options",
        "-qv",
        "-t",
        t["tmux_session_id"].as_str().unwrap(),
        "@orange_status",
    ]);
    assert!(status.contains("waiting"), "{status}");
}

#[test]
fn a_declared_harness_is_nudged_its_own_way_and_never_while_blocked() {
    let (env, t) = start("on_idle = \"nudge\"");
    let id = t["id"].as_str().unwrap().to_string();
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    say(&env, &pane, "ask", "[y/N]");
    // Blocked for longer than the grace, over several passes: never a keystroke.
    for later in ["2s", "3s", "4s"] {
        let a = pass_later(&env, &id, later);
        assert_eq!(a["state"], "blocked", "{a}");
    }
    let input = env.home.join("agent-log").join(&id).join("input");
    let typed = std::fs::read_to_string(&input).unwrap_or_default();
    assert!(!typed.contains("keep going"), "{typed}");
    // Its prompt back: waiting; after the grace, the harness's own nudge, submitted.
    say(&env, &pane, "n", "mybot ready ::");
    // One pass on a clock past the grace nudges at once; then the nudge reaches the agent.
    let a = pass_later(&env, &id, "5s");
    assert_eq!(a["state"], "waiting", "{a}");
    common::wait_for("the nudge to reach the agent", 20, || {
        std::fs::read_to_string(&input)
            .unwrap_or_default()
            .contains("keep going, mybot")
    });
    let history = env.task(&id)["history"].clone();
    let nudged: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "agent.nudged")
        .collect();
    // One nudge per idle period: on a loaded machine the first pass after the prompt came
    // back may already be past the grace, and the nudge's own echo starts a new period
    // that the next pass may nudge again. Each is the harness's own message.
    assert!(!nudged.is_empty(), "{history}");
    assert!(
        nudged.iter().all(|n| n["message"] == "keep going, mybot"),
        "{history}"
    );
}

#[test]
fn a_bad_screen_pattern_is_refused_with_its_place() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    std::fs::write(
        env.home.join("config.toml"),
        "[harness.mybot]\ncommand = \"sh x\"\n[harness.mybot.screen]\nworking = ['(unclosed']\n",
    )
    .unwrap();
    let e = env.err(&["task", "list"], "state_corrupt");
    assert!(e.contains("harness.mybot.screen.working[0]"), "{e}");
    std::fs::write(
        env.home.join("config.toml"),
        "[harness.mybot]\ncommand = \"sh x\"\n[harness.mybot.screen]\nwaitin = ['x']\n",
    )
    .unwrap();
    let e = env.err(&["task", "list"], "state_corrupt");
    assert!(e.contains("waitin"), "{e}");
}
