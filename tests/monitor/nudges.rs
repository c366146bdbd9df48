//! An idle agent nudged, and when it is not: once per idle period and submitted, only
//! while its task is working, escalated after idle periods without progress, never when
//! blocked on an approval, starting up or drawing a dialog, never with Escape for claude;
//! orange's own bell is no activity of the agent.

use crate::common;

use std::time::Duration;

use common::{wait_for, TaskEnv};
use serde_json::Value;

use super::pass;

#[test]
fn an_idle_agent_is_nudged_exactly_once_per_idle_period_and_the_nudge_is_submitted() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"3s\"\n");
    // The agent's screen moves after this moment: no nudge may come less than the grace
    // after it (less one second: tmux keeps activity times in whole seconds). Asserted on
    // the pass that nudged, not by a pass "right after" the start: on a loaded machine
    // that pass may itself come after the grace.
    let before_start = std::time::Instant::now();
    // An agent that does not echo what is typed: after the nudge its screen stays still,
    // and the passes below look at the same idle period however long they take.
    let id = env.create_id("idle/x", "fake-quiet");
    env.agent_log(&id, "cwd");
    // Passes until the grace is over: the first action is the nudge.
    let mut r = Value::Null;
    wait_for("the idle grace to pass", 20, || {
        r = pass(&env);
        !r["actions"].as_array().unwrap().is_empty()
    });
    assert!(
        before_start.elapsed() >= Duration::from_secs(2),
        "nudged {:?} after the start, within the 3 s grace: {r}",
        before_start.elapsed()
    );
    assert_eq!(r["actions"][0]["action"], "nudge", "{r}");
    // Delivered AND submitted: the agent read it as one line.
    wait_for("the nudge to arrive", 10, || {
        env.input_lines(&id).len() == 1
    });
    // Exactly the text: no Escape first (on Claude Code's dialogs Escape means "No,
    // exit"; a plain program got a literal `^[`).
    assert_eq!(env.input_lines(&id)[0], "Please continue with the task.");
    // More passes in the same idle period: no second nudge, however late they come (a
    // loaded machine: here 10 s later, past the grace again).
    for _ in 0..3 {
        let out = env
            .cmd_in(&env.repo, &["monitor", "--once", "--json"])
            .env("ORANGE_CLOCK_SKEW", "10s")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            r["actions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["action"] != "nudge"),
            "{r}"
        );
    }
    assert_eq!(env.history_events(&id, "agent.nudged").len(), 1);
    assert_eq!(env.input_lines(&id).len(), 1);
    let explain = env.ok(&["task", "explain", &id]);
    assert_eq!(explain["agent"]["nudges"], 1);
    assert_eq!(explain["agent"]["signal"], "screen");
}

fn nudges_in(r: &Value) -> usize {
    r["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "nudge")
        .count()
}

#[test]
fn only_tasks_in_working_status_are_nudged() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"1s\"\n");
    let id = env.create_id("rev/x", "fake-wait");
    env.agent_log(&id, "cwd");
    // The agent reported its work; it sits at its prompt while the person reviews.
    env.ok(&["task", "complete", &id]);
    assert_eq!(env.task(&id)["status"], "reviewing");
    // Passes until the monitor sees it idle (past the grace, when it decides on a nudge),
    // then two more: never a nudge.
    wait_for("the agent to be seen idle", 10, || {
        let r = pass(&env);
        assert_eq!(nudges_in(&r), 0, "{r}");
        env.task(&id)["agent"]["state"] == "waiting"
    });
    for _ in 0..2 {
        let r = pass(&env);
        assert_eq!(nudges_in(&r), 0, "{r}");
    }
    assert!(env.history_events(&id, "agent.nudged").is_empty());
    assert!(env.input_lines(&id).is_empty());
}

#[test]
fn idle_periods_without_progress_escalate_instead_of_nudging_forever() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n");
    let id = env.create_id("loop/x", "fake-wait");
    env.agent_log(&id, "cwd");
    wait_for("the idle grace to pass and the nudge", 10, || {
        let n = nudges_in(&pass(&env));
        assert!(n <= 1, "{n} nudges in one pass");
        n == 1
    });
    wait_for("the nudge to arrive", 10, || {
        env.input_lines(&id).len() == 1
    });
    // The nudge's echo is activity: a new idle period begins after it, with no tool call.
    wait_for("the escalation", 10, || {
        let r = pass(&env);
        assert_eq!(nudges_in(&r), 0, "a second nudge without progress: {r}");
        r["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "escalate")
    });
    let t = env.task(&id);
    assert!(
        t["agent"]["escalated"]["reason"]
            .as_str()
            .unwrap()
            .contains("without progress"),
        "{t}"
    );
    assert_eq!(env.input_lines(&id).len(), 1);
}

#[test]
fn an_approval_prompt_from_hooks_is_blocked_escalated_and_never_nudged() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"1s\"\n");
    let id = env.create_id("perm/x", "claude");
    env.agent_log(&id, "cwd");
    let conv = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Claude Code 2.1: the prompt arrives as a Notification of type permission_prompt.
    let r = env.hook(
        &id,
        "Notification",
        serde_json::json!({"session_id": conv, "hook_event_name": "Notification", "message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}),
    );
    assert_eq!(r["agent"]["state"], "blocked", "{r}");
    // Something that must NOT happen: passes for twice the grace (the screen's activity is
    // counted in whole seconds) never nudge.
    common::holds_for(
        "no nudge of a blocked agent",
        Duration::from_secs(2),
        || nudges_in(&pass(&env)) == 0,
    );
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["agent"]["blocker"], "approval", "{t}");
    assert_eq!(env.history_events(&id, "agent.escalated").len(), 1);
    assert!(env.input_lines(&id).is_empty(), "no keystroke reached it");
    let status = env.ok(&["status", "--format", "json"]);
    assert!(status.to_string().contains("blocked: approval"), "{status}");
    // The person answered: the tool runs, the state follows the hooks again.
    env.hook(&id, "PostToolUse", serde_json::json!({"session_id": conv}));
    pass(&env);
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "working", "{t}");
    assert!(t["agent"].get("escalated").is_none(), "{t}");
}

#[test]
fn escape_is_refused_as_a_nudge_key_for_claude() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[harness.claude]\nnudge_keys = [\"Escape\"]\n");
    let msg = env.err(&["task", "list"], "state_corrupt");
    assert!(msg.contains("Escape is never sent to Claude Code"), "{msg}");
}

/// Seen once in CI with the real Claude Code: an approval drawn a moment after the pass
/// looked at a quiet agent got "Please continue with the task." typed into it. The
/// monitor now looks again just before it types. Here the dialog appears while the pass
/// waits between its decision and the keystrokes (a pause point).
#[test]
fn a_dialog_drawn_after_the_pass_decided_never_gets_the_nudge() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"1s\"\n");
    let id = env.create_id("late/x", "claude");
    env.agent_log(&id, "cwd");
    // Its turn ended (claude's Stop hook): from now on it is idle.
    let conv = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.hook(&id, "Stop", serde_json::json!({"session_id": conv}));
    let pauses = tempfile::tempdir().unwrap();
    let paused = pauses.path().join("monitor.nudging.paused");
    // Passes until one decides to nudge and waits there.
    let mut child = None;
    wait_for("a pass about to nudge", 15, || {
        let c = env
            .cmd_in(&env.repo, &["monitor", "--once", "--json"])
            .env("ORANGE_PAUSE_AT", "monitor.nudging")
            .env("ORANGE_PAUSE_DIR", pauses.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let waited = common::poll(Duration::from_secs(3), || paused.exists().then_some(()));
        if waited.is_some() {
            child = Some(c);
            true
        } else {
            let _ = c.wait_with_output();
            false
        }
    });
    // Now the agent draws a dialog (typed lines echo on its screen).
    let target = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    for line in ["Do you want to proceed?", "❯ 1. Yes"] {
        env.tmux.ok(&["send-keys", "-t", &target, "-l", line]);
        env.tmux.ok(&["send-keys", "-t", &target, "Enter"]);
    }
    wait_for("the dialog on screen", 10, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &target])
            .contains("1. Yes")
    });
    std::fs::write(pauses.path().join("monitor.nudging.go"), "").unwrap();
    let out = child.unwrap().wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(nudges_in(&r), 0, "{r}");
    assert!(r.to_string().contains("not nudged"), "{r}");
    assert!(env.history_events(&id, "agent.nudged").is_empty());
    assert_eq!(
        env.input_lines(&id),
        vec![
            "Do you want to proceed?".to_string(),
            "❯ 1. Yes".to_string()
        ]
    );
}

/// Seen in CI with the real Claude Code under load: a claude that had sent no hook yet
/// (still starting, its first prompt not submitted) looked idle after `idle_grace` and
/// was nudged a second after its spawn. It is starting up until its first hook (or a
/// minute without one).
#[test]
fn a_claude_that_has_not_sent_its_first_hook_is_starting_not_idle() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"1s\"\n");
    let id = env.create_id("start/x", "claude");
    env.agent_log(&id, "cwd");
    // Something that must NOT happen: passes for twice the grace never nudge it.
    common::holds_for(
        "no nudge before the first hook",
        Duration::from_secs(2),
        || {
            let r = pass(&env);
            assert!(!r.to_string().contains("\"nudge\""), "{r}");
            true
        },
    );
    assert!(env.history_events(&id, "agent.nudged").is_empty());
    assert!(env.input_lines(&id).is_empty());
    let r = pass(&env);
    assert!(r.to_string().contains("no hook yet"), "{r}");
}

/// An escalation rings the bell in the agent's pane (BEL to its terminal), which tmux
/// counts as the window's activity: that output is orange's, not the agent's. Seen (a real
/// pi read by its screen): right after each escalation the idle agent looked busy, a grace
/// later idle again — a new idle period, escalated again, once a grace, for ever.
#[test]
fn orange_s_own_bell_is_no_activity_of_the_agent() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"3s\"\non_idle = \"escalate\"\n");
    let id = env.create_id("bell/x", "fake-quiet");
    env.agent_log(&id, "cwd");
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    let pass_at = |skew: &str| env.monitor_at(skew);
    let escalated = |r: &Value| {
        r["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "escalate")
    };
    // Past the grace: escalated, and the bell rung in its pane.
    let mut r = Value::Null;
    wait_for("the escalation", 20, || {
        r = pass_at("10s");
        escalated(&r)
    });
    wait_for("tmux to see the bell", 10, || {
        env.tmux
            .ok(&["display", "-p", "-t", &pane, "#{window_bell_flag}"])
            .trim()
            == "1"
    });
    // At once (the bell is the screen's last activity): still waiting, the same period.
    let before = env.ok(&["task", "explain", &id])["agent"].clone();
    pass_at("0s");
    let after = env.ok(&["task", "explain", &id])["agent"].clone();
    assert_eq!(after["state"], "waiting", "the bell is no work: {after}");
    assert_eq!(after["since"], before["since"], "{before} → {after}");
    // Later passes in that period: escalated once, not again.
    for _ in 0..2 {
        assert!(!escalated(&pass_at("10s")), "escalated again");
    }
    assert_eq!(env.history_events(&id, "agent.escalated").len(), 1);
}
