//! The real Claude Code under orange's pty layer (`[harness.claude] status_reports =
//! true`), offline against the stand-in Messages API (tests/real_claude/ has the rig).
//! The layer answers claude's OSC 7501 probe, so the pinned 2.1.330 reports its status
//! (`state=idle|working|done…`); the monitor reads the reports as a state source beside
//! the hooks, the newest word winning. Without the layer claude never reports (tmux
//! answers its DA1 and drops the probe): no status file ever appears.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;
use crate::real_claude::{
    claude, claude_installed, question_is_never_nudged, Home, Rig, PATIENCE, QUESTION,
};

use std::time::{Duration, Instant};

use common::standin::Reply;
use orange::adapters::pty::status::{self, Status};
use serde_json::Value;

/// Longer than several monitor passes (every 500 ms) and claude's start.
const GRACES: Duration = Duration::from_secs(5);

/// What the task's pty layer left (`None`: no layer, or nothing yet).
fn layer_status(rig: &Rig, id: &str) -> Option<Status> {
    status::read(
        &rig.env
            .home
            .join(format!("tasks/app/{id}/agent/{}", status::FILE)),
    )
}

/// The rig with the layer on for claude (and `more` in config.toml).
fn layered(test: &'static str, script: Vec<Reply>, more: &str) -> Rig {
    let rig = claude(test, Home::SET_UP, script);
    std::fs::write(
        rig.env.home.join("config.toml"),
        format!("[harness.claude]\nstatus_reports = true\n{more}"),
    )
    .unwrap();
    rig
}

/// Wait until the monitor shows claude's report `said` (`task show --json`); the task.
fn report_shows(rig: &Rig, id: &str, said: &[&str]) -> Value {
    rig.wait_task(&format!("a status report {said:?}"), id, |t| {
        t["agent"]["report"]["said"]
            .as_str()
            .is_some_and(|s| said.contains(&s))
    })
}

/// What claude says of itself in `~/.claude/sessions/<pid>.json`.
fn claude_session(rig: &Rig, pid: u32) -> Option<String> {
    let file = rig.home.join(format!(".claude/sessions/{pid}.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v["status"].as_str().map(str::to_string)
}

#[test]
fn with_the_layer_claude_reports_its_turns_and_a_cut_short_one_is_told_by_them() {
    if !claude_installed() {
        return;
    }
    let rig = layered(
        "osc-turn",
        vec![
            Reply::slow(
                Duration::from_secs(4),
                Reply::bash("echo written-under-the-layer > osc.txt"),
            ),
            Reply::text("I wrote the file."),
            Reply::slow(Duration::from_secs(60), Reply::text("too late")),
        ],
        "",
    );
    let id = rig.create("real/osc", "Write osc.txt");
    rig.wait_turns(&id, 1);
    // The pane's process is the layer, claude its child; claude's own screen is drawn.
    let s = common::poll(PATIENCE, || layer_status(&rig, &id))
        .expect("the layer's status file never appeared");
    assert_eq!(s.layer_pid.to_string(), rig.pane_pid(&id));
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", s.agent_pid)).unwrap();
    assert!(comm.trim() == "claude", "the agent is {comm:?}");
    rig.screen_shows(&id, "Claude Code v");
    // Working: the report is read (`--json`, `task explain`).
    rig.status_shows("working (osc)", &id, "working");
    let t = report_shows(&rig, &id, &["working"]);
    assert_eq!(t["agent"]["state"], "working", "{t}");
    assert!(
        rig.explain(&id)
            .contains("last status report (osc): working"),
        "{}",
        rig.explain(&id)
    );
    // The end of the turn: waiting, claude's report `done` (or `idle`).
    let sent = rig.api.wait_sent(1, PATIENCE).expect("the answer was sent");
    rig.status_since("end of turn (osc)", &id, "waiting for input", sent);
    let t = report_shows(&rig, &id, &["done"]);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert_eq!(
        std::fs::read_to_string(rig.workspace(&id).join("osc.txt")).unwrap_or_default(),
        "written-under-the-layer\n"
    );
    // Lookups by the agent's pid find claude's own file (the pane's pid is the layer's).
    let agent = layer_status(&rig, &id).unwrap().agent_pid;
    assert_eq!(rig.agent_pid(&id), agent.to_string());
    assert!(rig
        .agent_argv(&id)
        .contains(&"--dangerously-skip-permissions".to_string()));
    common::wait_until("claude's session file to say idle", PATIENCE, || {
        claude_session(&rig, agent).as_deref() == Some("idle")
    });
    // `task send` types into claude (through the layer): a turn of its own.
    rig.send(&id, "Take your time with this one.");
    rig.wait_turns(&id, 3);
    assert!(rig.api.turns()[2]
        .last_user_text()
        .contains("Take your time with this one."));
    report_shows(&rig, &id, &["working"]);
    // Escape while the request waits: no hook fires; claude reports idle, and that report
    // is the newest word: waiting, decided by it.
    let pressed = Instant::now();
    rig.keys(&id, &["Escape"]);
    rig.status_since("Esc (osc)", &id, "waiting for input", pressed);
    let t = rig.wait_task("the report to decide", &id, |t| {
        t["agent"]["signal"] == "osc"
    });
    assert_eq!(
        (&t["agent"]["state"], &t["agent"]["report"]["said"]),
        (&"waiting".into(), &"idle".into()),
        "{t}"
    );
    let explain = rig.explain(&id);
    assert!(
        explain.contains("decided by the agent's status report (OSC 7501)"),
        "{explain}"
    );
}

#[test]
fn a_killed_claude_under_the_layer_is_dead_and_respawn_starts_it_again() {
    if !claude_installed() {
        return;
    }
    let rig = layered(
        "osc-kill",
        vec![
            Reply::text("Remember the word MANGO."),
            Reply::text("Back again."),
        ],
        "",
    );
    let id = rig.create("real/osc-kill", "Remember a word");
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn (osc)", &id, "waiting for input", sent);
    let before = layer_status(&rig, &id).expect("a status file");
    let t = rig.kill_9("kill -9 (osc)", &id, &before.agent_pid.to_string());
    assert!(t["agent"].get("report").is_none(), "{t}");
    // Respawn: a new layer and claude, reporting again.
    rig.env.ok(&["task", "respawn", &id]);
    rig.wait_turns(&id, 2);
    let after = common::poll(PATIENCE, || {
        layer_status(&rig, &id).filter(|s| s.layer_pid != before.layer_pid)
    })
    .expect("the new layer's status file");
    assert_eq!(after.layer_pid.to_string(), rig.pane_pid(&id));
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since(
        "kill → respawn → end of turn (osc)",
        &id,
        "waiting for input",
        sent,
    );
    report_shows(&rig, &id, &["done", "idle"]);
}

/// A turn that ends on a question stays a question under the layer (claude's `done`
/// report agrees with its Stop hook, whose question stands): escalated, never nudged.
#[test]
fn a_question_under_the_layer_is_never_nudged() {
    if !claude_installed() {
        return;
    }
    let rig = layered(
        "osc-question",
        vec![Reply::Question(QUESTION.into())],
        "[policy]\nidle_grace = \"2s\"\n",
    );
    let id = rig.create("real/osc-question", "Fix the login form");
    question_is_never_nudged(&rig, &id, "end of turn on a question (osc)");
    let t = report_shows(&rig, &id, &["done"]);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert!(
        t["agent"]["asked"]
            .as_str()
            .is_some_and(|q| q.contains("Should I change both of them?")),
        "{t}"
    );
}

/// The option off (the default): claude's probe goes to tmux, which never answers it, so
/// claude never reports and no status file appears.
#[test]
fn without_the_layer_claude_never_reports() {
    if !claude_installed() {
        return;
    }
    let rig = claude("osc-off", Home::SET_UP, vec![Reply::text("Hello.")]);
    let id = rig.create("real/osc-off", "Say hello");
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn (no layer)", &id, "waiting for input", sent);
    common::holds_for("no status file, no report", GRACES, || {
        layer_status(&rig, &id).is_none() && rig.task(&id)["agent"].get("report").is_none()
    });
    assert_ne!(rig.task(&id)["agent"]["signal"], "osc");
}
