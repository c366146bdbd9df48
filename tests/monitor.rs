//! The agent monitor: real tmux, fake agents, Claude log fixtures, policies.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{wait_for, TaskEnv};
use serde_json::Value;

fn pass(env: &TaskEnv) -> Value {
    env.ok(&["monitor", "--once"])
}

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

#[test]
fn exits_without_an_outcome_are_crashes_and_two_make_the_task_stuck() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    let id = env.create_id("crash/x", "fake-exit0");
    env.wait_session(&id, "dead");
    let r = pass(&env);
    assert_eq!(r["actions"][0]["action"], "escalate", "{r}");
    let t = env.task(&id);
    assert_eq!(t["crash_count"], 1);
    assert_eq!(t["status"], "working");
    assert!(
        t["agent"]["escalated"]["reason"]
            .as_str()
            .unwrap()
            .contains("crash 1"),
        "{t}"
    );
    assert_eq!(env.history_events(&id, "agent.crashed").len(), 1);
    // People see it in the task list.
    let out = env
        .cmd_in(&env.repo, &["task", "list"])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().unwrap().contains("AGENT"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&id) && l.contains("needs you")),
        "{text}"
    );
    // The same death is not counted twice.
    pass(&env);
    assert_eq!(env.task(&id)["crash_count"], 1);
    // Second life, second crash: stuck.
    env.ok(&["task", "respawn", &id]);
    wait_for("the second exit", 20, || {
        env.task(&id)["session"]["state"] == "dead"
    });
    pass(&env);
    let t = env.task(&id);
    assert_eq!(t["crash_count"], 2);
    assert_eq!(t["status"], "stuck");
    assert!(t["agent"]["escalated"]["reason"]
        .as_str()
        .unwrap()
        .contains("stuck"));

    // An agent that reported its outcome before exiting is not a crash.
    let ok = env.create_id("crash/ok", "fake-complete");
    env.wait_status(&ok, "reviewing");
    env.wait_session(&ok, "dead");
    pass(&env);
    assert_eq!(env.task(&ok)["crash_count"], 0);
    assert_eq!(env.history_events(&ok, "agent.exited").len(), 1);

    // Killed by a signal: a crash too.
    let k = env.create_id("crash/killed", "fake-wait");
    env.wait_session(&k, "live");
    let pid = env
        .tmux
        .ok(&["display", "-p", "-t", "=app/crash/killed:", "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    env.wait_session(&k, "dead");
    pass(&env);
    let t = env.task(&k);
    assert_eq!(t["crash_count"], 1);
    assert!(env.history_events(&k, "agent.crashed")[0]["reason"]
        .as_str()
        .unwrap()
        .contains("signal 9"));
}

#[test]
fn on_exit_recover_respawns_with_the_policy_message() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[harness.fake-exit0.policy]\non_exit = { action = \"recover\", message = \"Try again, carefully.\", mode = \"prompt\" }\n");
    let id = env.create_id("rec/x", "fake-exit0");
    env.wait_session(&id, "dead");
    let first_session = env.task(&id)["tmux_session_id"].clone();
    let r = pass(&env);
    assert_eq!(r["actions"][0]["action"], "recover", "{r}");
    wait_for("the recovered agent's prompt", 10, || {
        env.agent_log(&id, "prompt") == "Try again, carefully."
    });
    assert_ne!(env.task(&id)["tmux_session_id"], first_session);
    assert!(env.history_events(&id, "agent.respawned").len() == 1);
}

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

#[test]
fn the_monitor_started_twice_runs_once() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let mut first = env
        .cmd_in(&env.repo, &["monitor", "--interval", "200ms"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first monitor to take its lock", 10, || {
        std::fs::read_dir(env.home.join("run"))
            .map(|d| {
                d.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with("monitor-") && n.ends_with(".json")
                })
            })
            .unwrap_or(false)
    });
    let second = env.ok(&["monitor"]);
    assert_eq!(second["running"], false);
    assert!(
        second["reason"].as_str().unwrap().contains("already"),
        "{second}"
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first one still runs"
    );
    // It stops by itself when its tmux server goes away.
    env.tmux.ok(&["kill-server"]);
    wait_for("the monitor to exit with its server", 15, || {
        first.try_wait().unwrap().is_some()
    });
}

#[test]
fn restore_recreates_sessions_after_the_tmux_server_dies_and_resumes_claude() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    let plain = env.create_id("rs/plain", "fake-wait");
    let claude = env.create_id("rs/claude", "claude");
    let conv = env.task(&claude)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.wait_session(&plain, "live");
    env.tmux.ok(&["kill-server"]);
    // A new server (the reboot), same socket, once the old one is really gone.
    wait_for("the old server to exit", 10, || {
        !env.tmux.tmux(&["list-sessions"]).status.success()
    });
    wait_for("a new tmux server to start", 10, || {
        std::process::Command::new("tmux")
            .args([
                "-L",
                &env.tmux.socket,
                "-f",
                env.tmux.conf.to_str().unwrap(),
                "new-session",
                "-d",
                "-s",
                "keepalive",
            ])
            .env("PATH", &env.path)
            .envs(common::GIT_ENV.iter().copied())
            .env("HOME", &env.tmux.home)
            .env_remove("TMUX")
            .output()
            .unwrap()
            .status
            .success()
    });
    let listed = env.ok(&["restore"]);
    assert_eq!(
        listed["restorable"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    // Claude saved its conversation (a transcript under $CLAUDE_CONFIG_DIR): restore
    // resumes it.
    let cfg = env.root().join("claude-config");
    let ws = env.ws_path(env.task(&claude)["workspace"].as_str().unwrap());
    std::fs::write(
        claude_log_dir(&cfg, &ws).join(format!("{conv}.jsonl")),
        "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let mut c = env.cmd_in(&env.repo, &["restore", "--yes", "--json"]);
    c.env("CLAUDE_CONFIG_DIR", &cfg);
    let (ok, r) = common::parse_json_output(&["restore"], &c.output().unwrap());
    assert!(ok, "{r}");
    assert_eq!(r["restored"].as_array().unwrap().len(), 2, "{r}");
    env.wait_session(&plain, "live");
    env.wait_session(&claude, "live");
    wait_for("claude to be resumed", 10, || {
        let argv = env.agent_log(&claude, "argv");
        argv.contains("--resume") && argv.contains(&conv)
    });
    // The first launch's permission mode, not acceptEdits (which stops at every Bash call).
    let argv = env.agent_log(&claude, "argv");
    assert!(argv.contains("--dangerously-skip-permissions"), "{argv}");
    assert!(!argv.contains("acceptEdits"), "{argv}");
    assert_eq!(
        env.ok(&["restore"])["restorable"].as_array().unwrap().len(),
        0
    );
}

/// Run `orange hook agent EVENT` as Claude Code does: in the workspace, the payload on stdin.
fn hook(env: &TaskEnv, id: &str, event: &str, payload: Value) -> Value {
    let t = env.task(id);
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let mut c = env.cmd_in(&ws, &["hook", "agent", event, "--json"]);
    c.env("ORANGE_TASK_ID", id)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
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
    let r = hook(
        &env,
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
    hook(
        &env,
        &id,
        "PostToolUse",
        serde_json::json!({"session_id": conv}),
    );
    pass(&env);
    let t = env.task(&id);
    assert_eq!(t["agent"]["state"], "working", "{t}");
    assert!(t["agent"].get("escalated").is_none(), "{t}");
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
    hook(&env, &id, "SessionStart", session.clone());
    pass(&env);
    std::fs::write(
        claude_status_file(&env, &env.task(&id)),
        r#"{"status":"idle"}"#,
    )
    .unwrap();
    hook(
        &env,
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
    hook(
        &env,
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
        hook(
            &env,
            &id,
            "UserPromptSubmit",
            serde_json::json!({"session_id": conv, "prompt": "go"}),
        );
        pass(&env);
        assert_eq!(env.task(&id)["agent"]["state"], "working");
    };
    submitted();
    hook(&env, &id, "Stop", serde_json::json!({"session_id": conv}));
    pass(&env);
    assert_eq!(env.task(&id)["agent"]["state"], "waiting");
    // The person types `/resume`, then `/clear`: the agent stays idle.
    for source in ["resume", "clear"] {
        hook(
            &env,
            &id,
            "SessionStart",
            serde_json::json!({"session_id": conv, "source": source}),
        );
        pass(&env);
        let t = env.task(&id);
        assert_eq!(t["agent"]["state"], "waiting", "{source}: {t}");
    }
    submitted();
    hook(
        &env,
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
fn a_dead_agents_reason_is_kept_from_the_scrollback() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // The reason, then enough blank lines to push it off a 50-line screen, then exit 1 —
    // once tmux has read it all (the line read from the gate, written when the pane's
    // history shows the reason): tmux 3.3a drops what a pane wrote but it had not yet read
    // when the pane's process exits (measured: 5 of 300 such panes at load 7). That loss
    // is tmux's; what is tested here is orange finding the reason off the screen.
    let gate = env.root().join("gate");
    let made = std::process::Command::new("mkfifo").arg(&gate).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    env.append_config(&format!("[harness.dies]\ncommand = \"echo 'Error: the model refused the API key'; i=0; while [ $i -lt 80 ]; do echo; i=$((i+1)); done; read _ < '{}'; exit 1\"\n", gate.display()),
    );
    let id = env.create_id("dies/x", "dies");
    let session = env.task(&id)["tmux_session"].as_str().unwrap().to_string();
    common::wait_for("the reason in the pane's history", 20, || {
        env.tmux
            .ok(&[
                "capture-pane",
                "-p",
                "-S",
                "-",
                "-t",
                &format!("={session}:"),
            ])
            .contains("Error: the model refused the API key")
    });
    std::fs::write(&gate, "\n").unwrap();
    env.wait_session(&id, "dead");
    pass(&env);
    let t = env.task(&id);
    let detail = t["agent"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("exited with status 1"), "{t}");
    assert!(detail.contains("the model refused the API key"), "{t}");
    let out = env
        .cmd_in(&env.repo, &["task", "show", &id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| Error: the model refused the API key"),
        "{text}"
    );
    let out = env
        .cmd_in(&env.repo, &["task", "explain", &id])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("the model refused the API key"));
}

#[test]
fn escape_is_refused_as_a_nudge_key_for_claude() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[harness.claude]\nnudge_keys = [\"Escape\"]\n");
    let msg = env.err(&["task", "list"], "state_corrupt");
    assert!(msg.contains("Escape is never sent to Claude Code"), "{msg}");
}

/// `$CLAUDE_CONFIG_DIR/projects/<the workspace's path with / and . as ->`, created.
fn claude_log_dir(cfg: &std::path::Path, ws: &std::path::Path) -> std::path::PathBuf {
    let dir_name: String = ws
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    let log_dir = cfg.join("projects").join(dir_name);
    std::fs::create_dir_all(&log_dir).unwrap();
    log_dir
}

#[test]
fn a_claude_that_never_saved_its_conversation_respawns_with_a_new_one() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("nosave/x", "claude");
    let first = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.agent_log(&id, "argv");
    let pid = env.tmux.ok(&[
        "display",
        "-p",
        "-t",
        env.task(&id)["tmux_pane_id"].as_str().unwrap(),
        "#{pane_pid}",
    ]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    env.wait_session(&id, "dead");
    // No transcript for it: `--resume <id>` would exit at once ("No conversation found").
    let mut c = env.cmd_in(&env.repo, &["task", "respawn", &id, "--json"]);
    c.env("CLAUDE_CONFIG_DIR", env.root().join("claude-config"));
    let (ok, r) = common::parse_json_output(&["task", "respawn"], &c.output().unwrap());
    assert!(ok, "{r}");
    let second = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(first, second);
    wait_for("the new claude", 10, || {
        let argv = env.agent_log(&id, "argv");
        argv.contains(&second) && argv.contains("--session-id") && !argv.contains("--resume")
    });
}

#[test]
fn a_lost_stop_hook_does_not_keep_an_agent_working_forever() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("lost/x", "claude");
    env.agent_log(&id, "cwd");
    let t = env.task(&id);
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    hook(
        &env,
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
    hook(&env, &id, "Stop", serde_json::json!({"session_id": conv}));
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

#[test]
fn a_pass_leaves_a_task_whose_project_a_command_holds_to_the_next_pass() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("held/x", "fake-exit0");
    env.wait_session(&id, "dead");
    // A command holds the project's lock (as a respawn does between killing the old session
    // and saving the new one): it has saved nothing yet, so nothing was poked.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(env.home.join("tasks/app/.lock"))
        .unwrap();
    lock.lock().unwrap();
    let r = pass(&env);
    assert_eq!(r["checked"], 1, "{r}");
    assert!(r["states"].as_array().unwrap().is_empty(), "judged: {r}");
    assert!(env.history_events(&id, "agent.exited").is_empty());
    // The command is over: the next pass judges it.
    drop(lock);
    let r = pass(&env);
    assert_eq!(r["states"][0]["state"], "dead", "{r}");
    assert_eq!(env.history_events(&id, "agent.exited").len(), 1);
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
