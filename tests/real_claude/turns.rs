//! Claude's turns: one that edits its worktree and ends, a question and an approval prompt
//! never answered for the person, a first prompt typed in its pane, a turn cut short.

use crate::common;

use std::time::{Duration, Instant};

use common::standin::{Reply, StandIn};
use serde_json::Value;

use super::{
    claude, claude_installed, question_is_never_nudged, Home, Rig, GRACES, PATIENCE, QUESTION,
};

/// What claude says of itself (`~/.claude/sessions/<pid>.json` in its HOME, by the
/// agent's pid): `idle`, `busy` or `waiting`.
fn claude_status(rig: &Rig, id: &str) -> Option<String> {
    let pid = rig.agent_pid(id);
    let file = rig.home.join(format!(".claude/sessions/{pid}.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v["status"].as_str().map(str::to_string)
}

/// A user text of the prompt orange gives (the stand-in's first turn).
fn first_turn_text(api: &StandIn) -> String {
    api.turns()
        .first()
        .map(|r| r.last_user_text())
        .unwrap_or_default()
}

#[test]
fn a_set_up_claude_works_edits_its_worktree_and_ends_its_turn() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "turn",
        Home::SET_UP,
        vec![
            Reply::slow(
                Duration::from_secs(6),
                Reply::bash("echo written-by-claude > claude-was-here.txt"),
            ),
            Reply::text("I wrote the file. The task is done."),
        ],
    );
    let id = rig.create("real/turn", "Write claude-was-here.txt");
    // Working: claude sent its first turn (the prompt orange gave it) and waits for it.
    assert!(
        rig.api.wait_requests(1, PATIENCE),
        "claude never called the API"
    );
    let asked = Instant::now();
    assert!(
        first_turn_text(&rig.api).contains("Write claude-was-here.txt"),
        "{}",
        first_turn_text(&rig.api)
    );
    rig.status_since("working (turn in progress)", &id, "working", asked);
    // A slow reply is still work: it never shows as waiting while the reply streams.
    let t = rig.wait_task("the hook to say working", &id, |t| {
        t["agent"]["state"] == "working"
    });
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    while rig.api.sent_at(0).is_none() {
        let line = rig.status_line(&id);
        assert!(line.contains("working"), "a slow reply showed as {line:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    rig.record(
        "slow reply (6 s): working throughout",
        "working",
        Duration::ZERO,
    );
    // End of turn.
    let sent = rig
        .api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    let line = rig.status_since("end of turn", &id, "waiting for input", sent);
    assert!(!line.contains("question"), "{line}");
    // What the agent really did: the tool ran in its own worktree.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("claude-was-here.txt")).unwrap_or_default(),
        "written-by-claude\n"
    );
    assert!(!rig.env.repo.join("claude-was-here.txt").exists());
    // The tool result went back to the API.
    assert!(rig.api.turns()[1].tool_results().len() == 1);
    // First run screens never showed: orange's settings skip the bypass warning.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["skipDangerousModePermissionPrompt"], true);
    assert!(settings["hooks"]["PermissionRequest"].is_array());
    assert!(settings["hooks"]["StopFailure"].is_array());
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert!(t["agent"].get("blocker").is_none(), "{t}");
}

#[test]
fn a_question_is_never_answered_by_a_nudge() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "question",
        Home::SET_UP,
        vec![Reply::Question(QUESTION.into())],
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[policy]\nidle_grace = \"2s\"\n",
    )
    .unwrap();
    let id = rig.create("real/question", "Fix the login form");
    question_is_never_nudged(&rig, &id, "end of turn on a question");
}

#[test]
fn an_approval_prompt_blocks_and_no_keystroke_reaches_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "approval",
        Home::SET_UP,
        vec![Reply::bash("touch approved.txt"), Reply::text("Touched.")],
    );
    // A person who wants to approve tool calls: claude asks before running Bash.
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.claude]\npermission_mode = \"manual\"\n[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n",
    )
    .unwrap();
    let id = rig.create("real/approval", "Touch approved.txt");
    let sent = rig
        .api
        .wait_sent(0, PATIENCE)
        .expect("the tool call was sent");
    let line = rig.status_since("approval prompt", &id, "blocked: approval", sent);
    assert!(line.contains("approval"), "{line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    // The hook (PermissionRequest) comes as claude draws the prompt.
    common::wait_for("the approval prompt on screen", 10, || {
        rig.screen(&id).contains("Do you want to proceed?")
    });
    // Several monitor passes and idle graces later: still asking, nothing typed, one
    // escalation. Something that must NOT happen: every look for 4 s finds it so.
    common::holds_for(
        "the approval prompt, untouched",
        GRACES + Duration::from_secs(1),
        || {
            let screen = rig.screen(&id);
            let prompt = screen.contains("Do you want to proceed?");
            let touched = rig.workspace(&id).join("approved.txt").exists();
            let nudged = rig.history(&id, "agent.nudged");
            let ok = prompt && !touched && nudged.is_empty();
            if !ok {
                eprintln!(
                    "prompt {prompt}, touched {touched}, nudged {nudged:?}\n{screen}\ntask: {}\nhooks:\n{}",
                    rig.task(&id),
                    std::fs::read_to_string(rig.env.home.join("orange.log")).unwrap_or_default()
                );
            }
            ok
        },
    );
    assert!(rig.screen(&id).contains("Do you want to proceed?"));
    assert!(!rig.workspace(&id).join("approved.txt").exists());
    assert!(rig.history(&id, "agent.nudged").is_empty());
    assert_eq!(rig.history(&id, "agent.escalated").len(), 1);
    let explain = String::from_utf8_lossy(
        &rig.env
            .cmd_in(&rig.env.repo, &["task", "explain", &id])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    assert!(explain.contains("approve"), "{explain}");
    // The person approves (Enter on "1. Yes"): the tool runs, the turn ends.
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Enter"]);
    rig.wait_turns(&id, 2);
    assert!(rig.workspace(&id).join("approved.txt").exists());
    assert!(
        rig.agent_argv(&id).iter().any(|a| a == "manual"),
        "{:?}",
        rig.agent_argv(&id)
    );
    // Now idle after a turn that was not a question: ONE nudge (max_nudges = 1), which
    // arrives whole as the next turn (no Escape, no stray keys); then, idle again without
    // progress, an escalation instead of another nudge.
    rig.wait_turns(&id, 3);
    assert_eq!(
        rig.api.turns()[2].last_user_text(),
        "Please continue with the task."
    );
    let t = rig.wait_task("the escalation", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("without progress"))
    });
    assert_eq!(rig.history(&id, "agent.nudged").len(), 1, "{t}");
    // Something that must NOT happen: for 3 s, every look finds no second nudge.
    common::holds_for("no second nudge", GRACES, || rig.api.turns().len() == 3);
    assert_eq!(rig.api.turns().len(), 3, "no second nudge");
}

/// Claude Code 2.1 holds back its `permission_prompt` Notification while the person typed
/// in the last 6 s (anthropics/claude-code#58909): the approval is told by the
/// PermissionRequest hook, at once and with the tool's name, whatever was typed just
/// before; the next hook (PostToolUse, Stop) clears it.
#[test]
fn an_approval_asked_just_after_typing_is_told_by_its_hook() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "approval-typed",
        Home::SET_UP,
        vec![
            Reply::slow(Duration::from_secs(3), Reply::bash("touch typed.txt")),
            Reply::text("Touched."),
        ],
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.claude]\npermission_mode = \"manual\"\n",
    )
    .unwrap();
    let id = rig.create("real/approval-typed", "Touch typed.txt");
    rig.wait_turns(&id, 1);
    // While the reply is slow, the person types into the pane (no Enter).
    let pane = rig.pane(&id);
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "draft note"]);
    rig.screen_shows(&id, "draft note");
    let sent = rig
        .api
        .wait_sent(0, PATIENCE)
        .expect("the tool call was sent");
    rig.status_since("approval after typing", &id, "blocked: approval", sent);
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["agent"]["blocker"], "approval", "{t}");
    assert_eq!(t["agent"]["hook_event"], "PermissionRequest", "{t}");
    assert!(
        t["agent"]["detail"].as_str().unwrap_or("").contains("Bash"),
        "the tool is named: {t}"
    );
    // Several monitor passes later (the screen shows the dialog too): still told by the
    // hook, which said it first.
    common::wait_for("the approval prompt on screen", 10, || {
        rig.screen(&id).contains("Do you want to proceed?")
    });
    common::holds_for("the hook's word stands", GRACES, || {
        let t = rig.task(&id);
        t["agent"]["state"] == "blocked" && t["agent"]["signal"] == "hook"
    });
    // The person approves: the next hooks (PostToolUse, Stop) clear the block.
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let t = rig.wait_task("the block to clear", &id, |t| {
        t["agent"]["state"] != "blocked"
    });
    assert!(t["agent"].get("blocker").is_none(), "{t}");
    assert!(rig.workspace(&id).join("typed.txt").exists());
}

#[test]
fn a_claude_started_without_a_prompt_waits_for_the_first_one_typed_in_its_pane() {
    if !claude_installed() {
        return;
    }
    let rig = claude("no-prompt", Home::SET_UP, vec![Reply::text("Fixed it.")]);
    // Idle for longer than the grace, over and over: still never nudged nor escalated.
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n",
    )
    .unwrap();
    // No summary: claude starts interactive, with no prompt argument.
    let id = rig.create("real/noprompt", "");
    let t = rig.task(&id);
    assert_eq!(t["summary"], "real/noprompt", "{t}");
    assert_eq!(t["awaiting_prompt"], true, "{t}");
    let argv = rig.agent_argv(&id);
    assert!(!argv.iter().any(|a| a == "--"), "{argv:?}");
    let started = rig.screen_shows(&id, "bypass permissions on");
    rig.status_since(
        "started without a prompt",
        &id,
        "waiting for a first prompt",
        started,
    );
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert_eq!(t["agent"]["hook_event"], "SessionStart", "{t}");
    // Something that must NOT happen: for 3 s (the grace and several monitor passes over)
    // nothing is typed into claude and nothing is escalated.
    common::holds_for("no nudge, no escalation", GRACES, || {
        rig.history(&id, "agent.nudged").is_empty()
            && rig.history(&id, "agent.escalated").is_empty()
            && rig.api.turns().is_empty()
    });
    let t = rig.task(&id);
    assert!(t["agent"].get("escalated").is_none(), "{t}");
    assert_eq!(t["summary"], "real/noprompt", "{t}");
    // The person types the first prompt in the pane.
    let pane = rig.pane(&id);
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "Fix the login form"]);
    rig.screen_shows(&id, "Fix the login form");
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let typed = Instant::now();
    rig.wait_turns(&id, 1);
    assert!(
        first_turn_text(&rig.api).contains("Fix the login form"),
        "{}",
        first_turn_text(&rig.api)
    );
    let t = rig.wait_task("the typed prompt to become the summary", &id, |t| {
        t["summary"] == "Fix the login form"
    });
    rig.record(
        "first typed prompt is the summary",
        "Fix the login form",
        typed.elapsed(),
    );
    assert!(t.get("awaiting_prompt").is_none(), "{t}");
    let changed = rig.history(&id, "summary.changed");
    assert_eq!(changed.len(), 1, "{t}");
    assert_eq!(changed[0]["summary"], "Fix the login form", "{t}");
    assert_eq!(changed[0]["via"], "hook", "{t}");
    // From then on an agent like any other: idle after its turn, it is nudged.
    rig.wait_turns(&id, 2);
    assert_eq!(
        rig.api.turns()[1].last_user_text(),
        "Please continue with the task."
    );
    rig.wait_task("the nudge in the history", &id, |t| {
        t["history"]
            .as_array()
            .is_some_and(|h| h.iter().any(|e| e["event"] == "agent.nudged"))
    });
}

#[test]
fn a_turn_the_person_cuts_short_with_escape_is_waiting() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "esc",
        Home::SET_UP,
        vec![Reply::slow(
            Duration::from_secs(60),
            Reply::text("too late"),
        )],
    );
    let id = rig.create("real/esc", "Take your time");
    rig.wait_turns(&id, 1);
    rig.status_since("slow reply in flight", &id, "working", Instant::now());
    // Claude itself counts the turn as running (what Escape then cuts short).
    common::wait_until("claude's session file to say busy", PATIENCE, || {
        claude_status(&rig, &id).as_deref() == Some("busy")
    });
    // The person presses Escape while the request waits: claude drops the turn. No hook
    // fires and the transcript ends on the prompt; only claude's session file says idle.
    let pressed = Instant::now();
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Escape"]);
    rig.status_since(
        "Esc while a request waits",
        &id,
        "waiting for input",
        pressed,
    );
    assert_eq!(rig.task(&id)["session"]["state"], "live");
}
