//! The pty layer (`orange-pty`, `[harness.NAME] status_reports = true`) on a real tmux
//! server, around a stand-in agent that reports its status as OSC 7501 only once its
//! terminal answered its probe, as Claude Code does (tests/fixtures/osc-agent.sh; the real
//! claude: tests/real_claude_osc.rs). Without the layer tmux never answers the probe: the
//! agent says so and no report reaches orange.

use std::path::PathBuf;

use crate::common::{self, fixtures, TaskEnv};
use orange::adapters::pty::status::{self, Status};
use serde_json::Value;

/// A project, and two harnesses running the stand-in: with the layer and without.
fn env() -> TaskEnv {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let agent = fixtures().join("osc-agent.sh");
    env.append_config(&format!(
        "[harness.oscbot]\ncommand = \"exec sh {a}\"\nstatus_reports = true\n\
         [harness.plainbot]\ncommand = \"exec sh {a}\"\n",
        a = agent.display()
    ));
    env
}

fn start(env: &TaskEnv, branch: &str, harness: &str) -> (String, String) {
    let t = env.ok(&[
        "task",
        "create",
        branch,
        "do the thing",
        "--harness",
        harness,
    ]);
    let id = common::id(&t);
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    screen_shows(env, &pane, "osc agent ready >");
    (id, pane)
}

fn screen(env: &TaskEnv, pane: &str) -> String {
    env.tmux.ok(&["capture-pane", "-p", "-t", pane])
}

fn screen_shows(env: &TaskEnv, pane: &str, needle: &str) {
    let mut last = String::new();
    let found = common::poll(std::time::Duration::from_secs(20), || {
        last = screen(env, pane);
        last.contains(needle).then_some(())
    });
    assert!(
        found.is_some(),
        "the screen never showed {needle:?}:\n{last}"
    );
}

/// Type `line` into the agent and wait for its answer.
fn say(env: &TaskEnv, pane: &str, line: &str, answer: &str) {
    env.tmux.ok(&["send-keys", "-t", pane, "-l", line]);
    env.tmux.ok(&["send-keys", "-t", pane, "Enter"]);
    screen_shows(env, pane, answer);
}

fn status_file(env: &TaskEnv, id: &str) -> PathBuf {
    env.home.join("tasks/app").join(id).join("agent/pty-status")
}

/// Wait until the layer's status file holds a report with `needle`; what the file says.
fn reported(env: &TaskEnv, id: &str, needle: &str) -> Status {
    let p = status_file(env, id);
    let mut last = None;
    common::poll(std::time::Duration::from_secs(20), || {
        last = status::read(&p);
        let s = last.clone()?;
        String::from_utf8_lossy(&s.payload)
            .contains(needle)
            .then_some(s)
    })
    .unwrap_or_else(|| panic!("no report {needle:?} in {}: {last:?}", p.display()))
}

fn pane_pid(env: &TaskEnv, pane: &str) -> String {
    env.tmux.ok(&["display", "-p", "-t", pane, "#{pane_pid}"])
}

/// One monitor pass, then the agent as `task show` has it.
fn pass(env: &TaskEnv, id: &str) -> Value {
    env.ok(&["monitor", "--once"]);
    env.task(id)["agent"].clone()
}

/// Monitor passes (which have tmux collect a dead pane's status) until the agent is dead;
/// it as `task show` then has it.
fn dead(env: &TaskEnv, id: &str) -> Value {
    let mut a = Value::Null;
    common::wait_for("the agent to be seen dead", 20, || {
        a = pass(env, id);
        a["state"] == "dead"
            && (a["exit_status"].is_number()
                || a["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("killed by signal")))
    });
    a
}

#[test]
fn the_layer_answers_the_probe_and_the_reports_decide_the_state() {
    let env = env();
    let (id, pane) = start(&env, "osc/on", "oscbot");
    // The agent's own screen, drawn through the layer.
    assert!(screen(&env, &pane).contains("osc agent: reports on"));
    // The pane's process is the layer; the agent is its child, and the file names both.
    let layer = pane_pid(&env, &pane);
    let comm = std::fs::read_to_string(format!("/proc/{layer}/comm")).unwrap();
    assert_eq!(comm.trim(), "orange-pty");
    let s = reported(&env, &id, "state=idle");
    let agent = env.agent_log(&id, "pid").trim().to_string();
    assert_eq!(
        (s.layer_pid.to_string(), s.agent_pid.to_string()),
        (layer.clone(), agent.clone())
    );
    let stat = std::fs::read_to_string(format!("/proc/{agent}/stat")).unwrap();
    let ppid = stat.rsplit(')').next().unwrap().split_whitespace().nth(1);
    assert_eq!(ppid, Some(layer.as_str()));
    let a = pass(&env, &id);
    assert_eq!(
        (&a["state"], &a["signal"]),
        (&"waiting".into(), &"osc".into()),
        "{a}"
    );
    // A report written in two pieces (two reads of the layer).
    say(&env, &pane, "work", "working on it");
    reported(&env, &id, "state=working");
    let a = pass(&env, &id);
    assert_eq!(
        (&a["state"], &a["signal"]),
        (&"working".into(), &"osc".into()),
        "{a}"
    );
    assert_eq!(a["report"]["said"], "working", "{a}");
    // A sub-agent's report is not the agent's.
    say(&env, &pane, "child", "child reported");
    let a = pass(&env, &id);
    assert_eq!(a["state"], "working", "{a}");
    // Blocked, with hostile words: shown, never interpreted.
    say(&env, &pane, "block", "may I? [y/n]");
    reported(&env, &id, "state=blocked");
    let a = pass(&env, &id);
    assert_eq!(
        (&a["state"], &a["blocker"]),
        (&"blocked".into(), &"approval".into()),
        "{a}"
    );
    let detail = a["detail"].as_str().unwrap();
    assert!(detail.contains("␛]0;PWNED␇"), "{detail}");
    assert!(!detail.chars().any(|c| c.is_control()), "{detail:?}");
    let explain = env
        .cmd_in(&env.repo, &["task", "explain", &id])
        .output()
        .unwrap();
    let explain = String::from_utf8(explain.stdout).unwrap();
    assert!(
        explain.contains("decided by the agent's status report (OSC 7501)"),
        "{explain}"
    );
    assert!(
        explain.contains("last status report (osc): blocked (permission)"),
        "{explain}"
    );
    assert!(
        !explain.contains('\x1b') && !explain.contains('\x07'),
        "{explain:?}"
    );
    say(&env, &pane, "done", "done.");
    reported(&env, &id, "state=done");
    assert_eq!(pass(&env, &id)["state"], "waiting");
    // The size follows the pane.
    env.tmux
        .ok(&["resize-window", "-t", &pane, "-x", "91", "-y", "23"]);
    say(&env, &pane, "size", "size: 23 91");
}

/// Without the layer, tmux answers the agent's DA1 and never its probe: no report, no
/// file, the pane's process is the agent.
#[test]
fn without_the_layer_no_report_reaches_orange() {
    let env = env();
    let (id, pane) = start(&env, "osc/off", "plainbot");
    assert!(screen(&env, &pane).contains("no reply, reports off"));
    say(&env, &pane, "work", "working on it");
    let a = pass(&env, &id);
    assert_ne!(a["signal"], "osc", "{a}");
    assert!(a.get("report").is_none(), "{a}");
    assert!(!status_file(&env, &id).exists());
    assert_eq!(env.agent_log(&id, "pid").trim(), pane_pid(&env, &pane));
}

/// The layer ends as its agent did (tmux's dead status and signal stay true), passes
/// SIGTERM on, and a respawn starts a new layer whose file replaces the old one.
#[test]
fn the_layer_ends_as_its_agent_did_and_respawn_starts_another() {
    let env = env();
    let (id, pane) = start(&env, "osc/end", "oscbot");
    say(&env, &pane, "exit 3", "exit 3");
    let a = dead(&env, &id);
    assert_eq!(a["exit_status"], 3, "{a}");
    assert!(a.get("report").is_none(), "{a}");
    // Respawn: a new layer, a new file (the old one's pids are gone with it).
    env.ok(&["task", "respawn", &id]);
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    screen_shows(&env, &pane, "osc agent ready >");
    let layer = pane_pid(&env, &pane);
    let s = reported(&env, &id, "state=idle");
    assert_eq!(s.layer_pid.to_string(), layer);
    assert_eq!(pass(&env, &id)["signal"], "osc");
    // kill -9 of the agent: the pane dies of signal 9, as without the layer.
    assert!(std::process::Command::new("kill")
        .args(["-9", &s.agent_pid.to_string()])
        .status()
        .unwrap()
        .success());
    let a = dead(&env, &id);
    assert!(
        a["detail"].as_str().unwrap().contains("killed by signal 9"),
        "{a}"
    );
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", &pane, "#{pane_dead_signal}"]),
        "9"
    );
    // SIGTERM to the pane's process (the layer) reaches the agent.
    env.ok(&["task", "respawn", &id]);
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    screen_shows(&env, &pane, "osc agent ready >");
    let layer = pane_pid(&env, &pane);
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &layer])
        .status()
        .unwrap()
        .success());
    assert_eq!(dead(&env, &id)["exit_status"], 7);
    assert_eq!(env.agent_log(&id, "term").trim(), "term");
}
