//! Claude Code's resume dialog ("Resume from summary / Resume full session as-is / Don't
//! ask again", opened when a long, old conversation is resumed) reads as `blocked: resume
//! choice`, and is answered only when `[harness.claude] resume` says how: the exact keys,
//! fast. The agent here is a program that draws the dialog with the pinned binary's own
//! texts (tests/fixtures/resume-dialog-agent.sh) under the name `claude` (a harness that
//! takes a built-in's name is read with its screens) and logs every key it reads; the
//! real claude opening its dialog on `task respawn` is tests/real_claude_resume.rs.

use crate::common::{self, fixtures, TaskEnv};
use serde_json::Value;

/// A task whose "claude" shows the resume dialog; `resume`: the config's choice, if any.
fn start(resume: Option<&str>) -> (TaskEnv, Value) {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let mut cfg = format!(
        "[harness.claude]\ncommand = \"sh {}\"\n",
        fixtures().join("resume-dialog-agent.sh").display()
    );
    if let Some(r) = resume {
        cfg.push_str(&format!("resume = \"{r}\"\n"));
    }
    std::fs::write(env.home.join("config.toml"), cfg).unwrap();
    let t = env.ok(&["task", "create", "resume", "go on", "--harness", "claude"]);
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    common::wait_for("the resume dialog", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("Resume full session as-is")
    });
    (env, t)
}

fn keys(env: &TaskEnv, t: &Value) -> String {
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    // The agent makes it as it draws the dialog: missing, it never read a key.
    common::wait_for("the agent's key log", 20, || ws.join("keys.log").exists());
    std::fs::read_to_string(ws.join("keys.log")).unwrap()
}

/// One monitor pass, then wait until the agent's screen shows `said` (what it answers).
fn pass_until(env: &TaskEnv, t: &Value, said: &str) {
    let pane = t["tmux_pane_id"].as_str().unwrap();
    env.ok(&["monitor", "--once"]);
    common::wait_for("the answer to reach it", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", pane])
            .contains(said)
    });
}

#[test]
fn the_resume_dialog_is_blocked_and_left_to_the_person_by_default() {
    let (env, t) = start(None);
    let id = t["id"].as_str().unwrap().to_string();
    env.ok(&["monitor", "--once"]);
    let a = env.task(&id)["agent"].clone();
    assert_eq!(a["state"], "blocked", "{a}");
    assert_eq!(a["blocker"], "resume_choice", "{a}");
    assert!(a["detail"].as_str().unwrap().contains("resume ="), "{a}");
    // Something that must NOT happen: passes later, nothing was typed into it.
    env.ok(&["monitor", "--once"]);
    env.ok(&["monitor", "--once"]);
    assert_eq!(keys(&env, &t), "", "nothing typed");
    let explain = env
        .cmd_in(&env.repo, &["task", "explain", &id])
        .output()
        .unwrap();
    let explain = String::from_utf8_lossy(&explain.stdout);
    assert!(explain.contains("resume choice"), "{explain}");
    // task send refuses to type into it.
    let out = env
        .cmd_in(&env.repo, &["task", "send", &id, "hello"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(keys(&env, &t), "", "nothing typed");
}

#[test]
fn resume_full_in_config_answers_the_dialog_once() {
    let (env, t) = start(Some("full"));
    let id = t["id"].as_str().unwrap().to_string();
    pass_until(&env, &t, "resumed in full");
    // Down (ESC [ B), then Enter: the second choice.
    assert_eq!(keys(&env, &t), "1b\n5b\n42\n0d\n");
    let answered: Vec<Value> = env.task(&id)["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "agent.answered")
        .cloned()
        .collect();
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["choice"], "full");
}

#[test]
fn resume_summary_in_config_confirms_the_focused_choice() {
    let (env, t) = start(Some("summary"));
    pass_until(&env, &t, "resumed from summary");
    assert_eq!(keys(&env, &t), "0d\n");
}

#[test]
fn the_resume_choice_is_claude_s_and_one_of_three() {
    use orange::execution::config::Config;
    for ok in ["ask", "summary", "full"] {
        let c = Config::parse(&format!("[harness.claude]\nresume = \"{ok}\"\n")).unwrap();
        assert_eq!(c.harness["claude"].resume.as_deref(), Some(ok));
    }
    assert!(Config::parse("[harness.claude]\nresume = \"maybe\"\n").is_err());
    assert!(Config::parse("[harness.pi]\nresume = \"full\"\n").is_err());
}
