//! A task created without a summary: its agent starts interactive with no prompt, waits for
//! the first one its person types in its pane (waiting, never nudged, escalated or "needs
//! you" for it), and that prompt's first line becomes the summary. Real git, a private tmux
//! server, the fake agents of tests/fixtures (`tui-agent.sh` tells orange its first prompt
//! through an agent hook, as an agent with hooks of its own does).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::time::Duration;

use common::{holds_for, wait_for, TaskEnv};
use serde_json::{json, Value};

/// The `fake-tui` harness: tests/fixtures/tui-agent.sh. Its directory is readable inside a
/// sandbox too: a checkout under /tmp (CI's fresh clone may be one) is private there.
fn with_tui(env: &TaskEnv) {
    env.append_config(&format!(
        "[harness.fake-tui]\ncommand = \"sh {} {{prompt}}\"\nsandbox_readable = [{:?}]\n",
        common::fixtures().join("tui-agent.sh").display(),
        common::fixtures().display().to_string()
    ));
}

fn md(env: &TaskEnv, id: &str) -> String {
    std::fs::read_to_string(env.home.join(format!("tasks/app/{id}/TASK.md"))).unwrap()
}

#[test]
fn a_task_created_without_a_summary_starts_its_agent_with_no_prompt() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let v = env.ok(&["task", "create", "feat/x", "--harness", "fake-wait"]);
    assert_eq!(v["outcome"], "spawned", "{v}");
    assert_eq!(v["status"], "working", "{v}");
    // The branch stands for the summary until the first prompt is known.
    assert_eq!(v["summary"], "feat/x", "{v}");
    assert_eq!(v["awaiting_prompt"], true, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    // The agent was started with its command alone: no prompt argument.
    assert_eq!(env.agent_log(&id, "argv"), "\n");
    assert_eq!(env.agent_log(&id, "prompt"), "");
    assert!(
        md(&env, &id).starts_with("# (no summary)\n"),
        "{}",
        md(&env, &id)
    );
    let created = &env.history_events(&id, "task.created")[0];
    assert_eq!(created["prompt"], false, "{created}");
    // `task list` shows the branch as its summary.
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.starts_with(&id)).unwrap();
    assert_eq!(row.matches("feat/x").count(), 2, "{text}");
    // Without --json it says where the prompt goes.
    let out = env
        .cmd_in(
            &env.repo,
            &["task", "create", "feat/y", "--harness", "fake-wait"],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no prompt") && text.contains("orange task attach"),
        "{text}"
    );
    // Renamed before its prompt is known: the summary follows the branch.
    let t = env.ok(&["task", "update", &id, "--branch", "feat/renamed"]);
    assert_eq!(t["summary"], "feat/renamed", "{t}");
    // A summary given by hand is its prompt from then on.
    let t = env.ok(&["task", "update", &id, "--summary", "Mine"]);
    assert_eq!(t["summary"], "Mine", "{t}");
    assert!(t.get("awaiting_prompt").is_none(), "{t}");
    let r = env.hook(&id, "UserPromptSubmit", json!({"prompt": "Typed"}));
    assert!(r["agent"]["first_prompt"].is_null(), "{r}");
    assert_eq!(env.task(&id)["summary"], "Mine");
}

#[test]
fn an_explicit_empty_summary_is_an_invalid_argument_and_nothing_is_recorded() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    for summary in ["", "   ", "\n\t"] {
        for extra in [&[][..], &["--no-spawn"][..]] {
            let mut args = vec![
                "task",
                "create",
                "feat/empty",
                summary,
                "--harness",
                "fake-wait",
            ];
            args.extend(extra);
            let msg = env.err(&args, "invalid_argument");
            assert!(msg.contains("summary is empty"), "{msg}");
            assert!(msg.contains("leave the summary out"), "{msg}");
        }
    }
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 0);
    // Nothing kept: the branch is free.
    env.ok(&["task", "create", "feat/empty", "--harness", "fake-wait"]);
}

#[test]
fn the_first_prompt_typed_in_the_pane_becomes_the_summary_and_is_in_the_history() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    with_tui(&env);
    let v = env.ok(&["task", "create", "feat/typed", "--harness", "fake-tui"]);
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(env.agent_log(&id, "prompt"), "");
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    env.tmux
        .ok(&["send-keys", "-t", &pane, "-l", "  Fix the login form  "]);
    env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let mut t = Value::Null;
    wait_for("the typed prompt to become the summary", 20, || {
        t = env.task(&id);
        t["summary"] == "Fix the login form"
    });
    assert!(t.get("awaiting_prompt").is_none(), "{t}");
    let changed = env.history_events(&id, "summary.changed");
    assert_eq!(changed.len(), 1, "{t}");
    assert_eq!(changed[0]["summary"], "Fix the login form");
    assert_eq!(changed[0]["via"], "hook");
    // TASK.md's title follows (it was the placeholder).
    assert!(
        md(&env, &id).starts_with("# Fix the login form\n"),
        "{}",
        md(&env, &id)
    );
    // The next prompts change nothing.
    env.tmux
        .ok(&["send-keys", "-t", &pane, "-l", "Now the signup form"]);
    env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_for("the second line to reach the agent", 20, || {
        env.input_lines(&id).len() == 2
    });
    let r = env.hook(
        &id,
        "UserPromptSubmit",
        json!({"prompt": "Now the signup form"}),
    );
    assert!(r["agent"]["first_prompt"].is_null(), "{r}");
    assert_eq!(env.task(&id)["summary"], "Fix the login form");
    assert_eq!(env.history_events(&id, "summary.changed").len(), 1);
}

#[test]
fn a_first_prompt_is_cleaned_like_a_summary() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    let id = env.ok(&["task", "create", "feat/hostile", "--harness", "fake-wait"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Blank and control-only lines give no summary: it keeps waiting.
    let r = env.hook(
        &id,
        "UserPromptSubmit",
        json!({"prompt": " \n\u{1b}\u{7}\n\t"}),
    );
    assert!(r["agent"]["first_prompt"].is_null(), "{r}");
    assert_eq!(env.task(&id)["awaiting_prompt"], true);
    // Escape sequences lose their ESC (and BEL, C1): no control character is kept.
    let hostile = "\n  \u{1b}]0;PWNED\u{7}Fix\tthe\u{1b}[2J login\u{9b}31m  \r\nsecond line";
    let r = env.hook(&id, "UserPromptSubmit", json!({"prompt": hostile}));
    assert_eq!(r["agent"]["state"], "working", "{r}");
    let t = env.task(&id);
    assert_eq!(t["summary"], "]0;PWNEDFix the[2J login31m", "{t}");
    assert!(!t["summary"].as_str().unwrap().chars().any(char::is_control));
    let md = md(&env, &id);
    assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "{md:?}");
    // A long one is cut at the longest summary.
    let id = env.ok(&["task", "create", "feat/long", "--harness", "fake-wait"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "x".repeat(5000)}));
    assert_eq!(
        env.task(&id)["summary"].as_str().unwrap().chars().count(),
        orange::orchestration::task::MAX_SUMMARY
    );
}

#[test]
fn waiting_for_a_first_prompt_is_not_nudged_escalated_or_told_as_needing_you() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    env.append_config("[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n");
    // notify-send that records its calls, first on the monitor passes' PATH.
    let rec_bin = env.root().join("rec-bin");
    std::fs::create_dir_all(&rec_bin).unwrap();
    let calls = env.root().join("notify-send.calls");
    let script = rec_bin.join("notify-send");
    common::write_script(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n",
            calls.display()
        ),
    );
    let path = format!("{}:{}", rec_bin.display(), env.path);
    env.tmux.ok(&["set", "-g", "@orange-notify", "desktop"]);
    let reports = std::cell::RefCell::new(String::new());
    let pass = || {
        let mut c = env.cmd_in(&env.repo, &["monitor", "--once", "--json"]);
        c.env("PATH", &path);
        let (ok, r) = common::parse_json_output(&["monitor"], &c.output().unwrap());
        assert!(ok, "{r}");
        reports.borrow_mut().push_str(&format!("{r}\n"));
        r
    };
    // The same agent twice: without a prompt, and with one (the control: its end of turn
    // is nudged and told).
    let quiet = env.ok(&["task", "create", "np/quiet", "--harness", "fake-wait"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let told = env.ok(&[
        "task",
        "create",
        "np/told",
        "Do it",
        "--harness",
        "fake-wait",
    ])["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.agent_log(&quiet, "cwd");
    env.agent_log(&told, "cwd");
    // Both were seen at work once (their screens drew): the end of a turn rings.
    let home = orange::adapters::store::Home {
        root: env.home.clone(),
    };
    let tmux = orange::adapters::tmux::Tmux::new(orange::adapters::tmux::Server::Name(
        env.tmux.socket.clone(),
    ));
    let file = orange::orchestration::notify::path(&home, &tmux);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        json!({"worked": [format!("|task|app|{quiet}"), format!("|task|app|{told}")]}).to_string(),
    )
    .unwrap();
    let mut r = Value::Null;
    wait_for("the control agent to be nudged", 20, || {
        r = pass();
        !env.history_events(&told, "agent.nudged").is_empty()
    });
    let t = env.task(&quiet);
    assert_eq!(t["agent"]["state"], "waiting", "{t}\n{r}");
    assert!(
        reports.borrow().contains("waiting for its first prompt"),
        "{}",
        reports.borrow()
    );
    // Passes well past the grace and max_nudges: never a keystroke, never an escalation.
    holds_for("no nudge, no escalation", Duration::from_secs(3), || {
        pass();
        env.history_events(&quiet, "agent.nudged").is_empty()
            && env.history_events(&quiet, "agent.escalated").is_empty()
    });
    assert!(env.input_lines(&quiet).is_empty());
    let t = env.task(&quiet);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert!(t["agent"].get("escalated").is_none(), "{t}");
    // Waiting, in so many words, on the status line; not "needs you".
    let status = env.ok(&["status", "--format", "json"]);
    let item = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == quiet.as_str())
        .unwrap()
        .clone();
    assert_eq!(item["bucket"], "waiting", "{status}");
    assert_eq!(item["reason"], "waiting for a first prompt", "{status}");
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.starts_with(&quiet)).unwrap();
    assert!(
        !row.contains("needs you") && row.contains("waiting"),
        "{text}"
    );
    let out = env
        .cmd_in(&env.repo, &["task", "show", &quiet])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("waits for its first prompt"), "{text}");
    let out = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--task", &quiet, "--once", "--width", "60"],
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No prompt yet"), "{text}");
    assert!(!text.contains("Needs you"), "{text}");
    // The control was told; the agent waiting for its first prompt never was.
    wait_for("the control's notification", 20, || {
        pass();
        std::fs::read_to_string(&calls).is_ok_and(|c| c.contains("np/told"))
    });
    let sent = std::fs::read_to_string(&calls).unwrap();
    assert!(!sent.contains("np/quiet"), "{sent}");
}

#[test]
fn respawn_and_recovery_of_a_task_without_a_prompt_give_it_none() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    // Recorded without a summary, started later: no prompt; respawned: still none (no
    // resume prompt: it would be the agent's first task).
    let id = env.ok(&[
        "task",
        "create",
        "rs/none",
        "--harness",
        "fake-wait",
        "--no-spawn",
    ])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = env.ok(&["task", "spawn", &id]);
    assert_eq!(t["awaiting_prompt"], true, "{t}");
    assert_eq!(env.agent_log(&id, "argv"), "\n");
    let pid = env.pane_pid(&id);
    std::fs::remove_file(env.home.join("agent-log").join(&id).join("argv")).unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    env.wait_session(&id, "dead");
    env.ok(&["task", "respawn", &id]);
    assert_eq!(env.agent_log(&id, "argv"), "\n");
    // The recover policy's message is no first prompt either.
    env.append_config("[harness.fake-exit0.policy]\non_exit = { action = \"recover\", message = \"Try again.\", mode = \"prompt\" }\n",
    );
    let id = env.ok(&["task", "create", "rs/exit", "--harness", "fake-exit0"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.wait_session(&id, "dead");
    std::fs::remove_file(env.home.join("agent-log").join(&id).join("argv")).unwrap();
    let r = env.ok(&["monitor", "--once"]);
    assert!(r.to_string().contains("\"recover\""), "{r}");
    assert_eq!(env.agent_log(&id, "argv"), "\n");
}

#[test]
fn a_sandboxed_agents_first_prompt_reaches_the_summary_through_the_monitor() {
    if !crate::sandbox::bwrap_usable() {
        return;
    }
    let env = TaskEnv::new();
    env.add_project(&[]);
    with_tui(&env);
    let v = env.ok(&[
        "task",
        "create",
        "feat/boxed",
        "--harness",
        "fake-tui",
        "--sandbox",
        "bwrap",
    ]);
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v["sandbox"], "bwrap", "{v}");
    let log = env
        .ws_path(v["workspace"].as_str().unwrap())
        .join(".tui-log");
    let read = |f: &str| {
        let p = log.join(f);
        common::poll(Duration::from_secs(20), || {
            std::fs::read_to_string(&p)
                .ok()
                .filter(|t| !t.is_empty() || f == "prompt")
        })
        .unwrap_or_else(|| panic!("{} never written", p.display()))
    };
    assert_eq!(read("prompt"), "");
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    env.tmux
        .ok(&["send-keys", "-t", &pane, "-l", "Fix the boxed form"]);
    env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    // Inside, orange's state is read-only: the hook asks, the monitor's pass records.
    let said = read("hook");
    assert!(said.contains("requested"), "{said}");
    let mut t = Value::Null;
    wait_for("the monitor to record the first prompt", 20, || {
        env.ok(&["monitor", "--once"]);
        t = env.task(&id);
        t["summary"] == "Fix the boxed form"
    });
    let changed = env.history_events(&id, "summary.changed");
    assert_eq!(changed.len(), 1, "{t}");
    assert_eq!(changed[0]["via"], "hook", "{t}");
}

#[test]
fn a_claudes_first_prompt_is_read_from_its_transcript_when_no_hook_told_it() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // The fake claude of tests/fixtures/bin: no hooks; its transcript is written here.
    let v = env.ok(&["task", "create", "feat/transcript", "--harness", "claude"]);
    let id = v["id"].as_str().unwrap().to_string();
    let argv = env.agent_log(&id, "argv");
    assert!(!argv.lines().any(|a| a == "--"), "no prompt: {argv}");
    let conv = v["agent_session_id"].as_str().unwrap().to_string();
    let ws = env.ws_path(v["workspace"].as_str().unwrap());
    let cfg = env.root().join("claude-config");
    let dir: String =
        orange::orchestration::agent::claude_project_dir_name(&ws.canonicalize().unwrap());
    let log_dir = cfg.join("projects").join(dir);
    std::fs::create_dir_all(&log_dir).unwrap();
    let pass = || {
        let mut c = env.cmd_in(&env.repo, &["monitor", "--once", "--json"]);
        c.env("CLAUDE_CONFIG_DIR", &cfg);
        let (ok, r) = common::parse_json_output(&["monitor"], &c.output().unwrap());
        assert!(ok, "{r}");
        r
    };
    // No transcript yet (claude writes it with the first prompt): still waiting for one.
    pass();
    assert_eq!(env.task(&id)["awaiting_prompt"], true);
    std::fs::copy(
        common::fixtures().join("claude/transcripts/bypass-tool-turn-exit-resume-sigterm.jsonl"),
        log_dir.join(format!("{conv}.jsonl")),
    )
    .unwrap();
    let r = pass();
    assert!(r.to_string().contains("first_prompt"), "{r}");
    let t = env.task(&id);
    assert_eq!(t["summary"], "please touch x", "{t}");
    let changed = env.history_events(&id, "summary.changed");
    assert_eq!(changed.len(), 1, "{t}");
    assert_eq!(changed[0]["via"], "transcript", "{t}");
}
