//! What claude says of itself: its log's errors, its hooks (a sub-agent's, SessionStart,
//! UserPromptSubmit, StopFailure, a Stop that never comes) and its own status file.

use crate::common;

use std::time::Duration;

use common::TaskEnv;
use serde_json::Value;

use super::{claude_log_dir, pass};

#[test]
fn claude_log_errors_are_classified_and_escalated() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("cl/x", "claude");
    let t = env.task(&id);
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let cfg = env.root().join("claude-config");
    let log_dir = claude_log_dir(&cfg, &ws);
    let fixture = common::fixtures().join("claude/error.unauthorized.jsonl");
    std::fs::copy(&fixture, log_dir.join(format!("{conv}.jsonl"))).unwrap();
    let mut c = env.cmd_in(&env.repo, &["monitor", "--once", "--json"]);
    c.env("CLAUDE_CONFIG_DIR", &cfg);
    let (ok, r) = common::parse_json_output(&["monitor"], &c.output().unwrap());
    assert!(ok, "{r}");
    assert_eq!(r["actions"][0]["action"], "escalate", "{r}");
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "error");
    assert_eq!(t["agent"]["error_kind"], "unauthorized");
    assert_eq!(t["agent"]["signal"], "log");
    assert_eq!(
        env.history_events(&id, "agent.error")[0]["kind"],
        "unauthorized"
    );
    // The log moves on to a working line: the state follows, the escalation clears.
    std::fs::copy(
        common::fixtures().join("claude/working.null_stop_reason_thinking.jsonl"),
        log_dir.join(format!("{conv}.jsonl")),
    )
    .unwrap();
    let mut c = env.cmd_in(&env.repo, &["monitor", "--once", "--json"]);
    c.env("CLAUDE_CONFIG_DIR", &cfg);
    c.output().unwrap();
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "working");
    assert!(t["agent"].get("escalated").is_none(), "{t}");
    // Claude's hooks are installed in the workspace settings.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert!(settings["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("hook agent Stop"));
}

#[test]
fn a_sub_agents_hook_does_not_flip_its_parent() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("hook/x", "claude");
    let t = env.task(&id);
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    let home = orange::adapters::store::Home {
        root: env.home.clone(),
    };
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let r = orange::orchestration::monitor::hook::agent_hook(
        &home,
        "Stop",
        &format!("{{\"session_id\":\"nested-{conv}\"}}"),
        &ws,
    )
    .unwrap();
    assert!(r["ignored"].as_str().unwrap().contains("nested"), "{r}");
    assert!(
        orange::orchestration::agent::load(&env.home.join(format!("tasks/app/{id}")))
            .hook_state
            .is_none()
    );
    let r =
        orange::orchestration::monitor::hook::agent_hook(&home, "SubagentStop", "{}", &ws).unwrap();
    assert!(r["ignored"].is_string());
    let r = orange::orchestration::monitor::hook::agent_hook(
        &home,
        "Stop",
        &format!("{{\"session_id\":\"{conv}\"}}"),
        &ws,
    )
    .unwrap();
    assert_eq!(r["state"], "waiting");
    pass(&env);
    let e = env.ok(&["task", "explain", &id]);
    assert_eq!(e["agent"]["state"], "waiting");
    assert_eq!(e["agent"]["signal"], "hook");
    assert_eq!(e["agent"]["hook_event"], "Stop");
    let r = orange::orchestration::monitor::hook::agent_hook(
        &home,
        "UserPromptSubmit",
        &format!("{{\"session_id\":\"{conv}\"}}"),
        &ws,
    )
    .unwrap();
    assert_eq!(r["state"], "working");
}

/// A task of the built-in `claude` harness (its transcript made) and its conversation id.
fn claude_task(env: &TaskEnv, branch: &str) -> (String, String) {
    let id = env.create_id(branch, "claude");
    env.agent_log(&id, "cwd");
    let conv = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    (id, conv)
}

/// Where the claude of task `t` says how it is (`~/.claude/sessions/<pane pid>.json`).
fn claude_status_file(env: &TaskEnv, t: &Value) -> std::path::PathBuf {
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    let pid = env.tmux.ok(&["display", "-p", "-t", &pane, "#{pane_pid}"]);
    let sessions = env.user_home.join(".claude/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    sessions.join(format!("{}.json", pid.trim()))
}

/// Claude calls itself idle (`sessions/<pid>.json`) for a moment after its
/// UserPromptSubmit hook: it takes the prompt in and says busy just after. That moment is
/// no turn cut short (seen once in ~100 runs of the real claude: the status line said
/// waiting, then working again, and `task send` held the message); once it has passed,
/// an idle claude whose turn no hook ended is.
#[test]
fn a_prompt_just_submitted_is_work_while_claude_still_calls_itself_idle() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let (id, conv) = claude_task(&env, "hooks/p");
    let session = serde_json::json!({"session_id": conv});
    env.hook(&id, "SessionStart", session.clone());
    pass(&env);
    std::fs::write(
        claude_status_file(&env, &env.task(&id)),
        r#"{"status":"idle"}"#,
    )
    .unwrap();
    env.hook(
        &id,
        "UserPromptSubmit",
        serde_json::json!({"session_id": conv, "prompt": "go"}),
    );
    pass(&env);
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "working", "just prompted: {t}");
    // Seconds later, still idle by its own account and nothing since: cut short.
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_CLOCK_SKEW", "10s")
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "a turn cut short: {t}");
}

/// An agent started with its prompt is not waiting for anyone between its SessionStart and
/// that prompt's UserPromptSubmit (seen: the status line said "waiting for input" in that
/// gap and `task send` typed into what became a working claude's turn); a later
/// SessionStart (`/clear`, `/resume` typed in the pane) is an idle agent's.
#[test]
fn session_start_is_not_work_and_stop_failure_is_an_error_with_its_kind() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let (id, conv) = claude_task(&env, "hooks/x");
    env.hook(
        &id,
        "SessionStart",
        serde_json::json!({"session_id": conv, "source": "startup"}),
    );
    pass(&env);
    let t = env.task(&id);
    assert_eq!(
        t["agent"]["state"], "working",
        "its prompt's turn follows: {t}"
    );
    assert!(
        t["agent"].get("progress_at").is_none(),
        "no progress yet: {t}"
    );
    // Until it submits that prompt claude calls itself idle (`sessions/<pid>.json`): no
    // turn cut short, still working.
    let status = claude_status_file(&env, &t);
    std::fs::write(&status, r#"{"status":"idle"}"#).unwrap();
    pass(&env);
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "working", "submitting its prompt: {t}");
    std::fs::write(&status, r#"{"status":"busy"}"#).unwrap();
    // A prompt submitted: working.
    let submitted = || {
        env.hook(
            &id,
            "UserPromptSubmit",
            serde_json::json!({"session_id": conv, "prompt": "go"}),
        );
        pass(&env);
        assert_eq!(env.task(&id)["agent"]["state"], "working");
    };
    submitted();
    env.hook(&id, "Stop", serde_json::json!({"session_id": conv}));
    pass(&env);
    assert_eq!(env.task(&id)["agent"]["state"], "waiting");
    // The person types `/resume`, then `/clear`: the agent stays idle.
    for source in ["resume", "clear"] {
        env.hook(
            &id,
            "SessionStart",
            serde_json::json!({"session_id": conv, "source": source}),
        );
        pass(&env);
        let t = env.task(&id);
        assert_eq!(t["agent"]["state"], "waiting", "{source}: {t}");
    }
    submitted();
    env.hook(
        &id,
        "StopFailure",
        serde_json::json!({"session_id": conv, "error": "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}),
    );
    let r = pass(&env);
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "error", "{t}");
    assert_eq!(t["agent"]["error_kind"], "overloaded", "{t}");
    assert!(
        t["agent"]["detail"].as_str().unwrap().contains("529"),
        "{t}"
    );
    assert_eq!(r["actions"][0]["action"], "escalate", "{r}");
}

#[test]
fn a_lost_stop_hook_does_not_keep_an_agent_working_forever() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("lost/x", "claude");
    env.agent_log(&id, "cwd");
    let t = env.task(&id);
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    env.hook(
        &id,
        "UserPromptSubmit",
        serde_json::json!({"session_id": conv}),
    );
    // The turn ends in the transcript, but its Stop hook never comes.
    std::thread::sleep(Duration::from_millis(20));
    let cfg = env.root().join("claude-config");
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    std::fs::write(
        claude_log_dir(&cfg, &ws).join(format!("{conv}.jsonl")),
        format!("{{\"type\":\"assistant\",\"timestamp\":\"{now}\",\"message\":{{\"stop_reason\":null,\"content\":[{{\"type\":\"text\",\"text\":\"Done.\"}}]}}}}\n{{\"type\":\"last-prompt\"}}\n"),
    )
    .unwrap();
    let mut c = env.cmd_in(&env.repo, &["monitor", "--once", "--json"]);
    c.env("CLAUDE_CONFIG_DIR", &cfg);
    c.output().unwrap();
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert_eq!(t["agent"]["signal"], "log", "{t}");
}
