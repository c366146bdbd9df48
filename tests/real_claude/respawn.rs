//! Claude's death and return: `/exit`, respawn and restore, `kill -9`, and `task send`
//! with `respawn --force` resuming the same conversation.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::standin::Reply;

use super::{claude, claude_installed, Home, Rig, GRACES, PATIENCE};

/// Claude's argv after a respawn or a restore: the first launch's permission mode and the
/// same conversation.
fn assert_resumed(rig: &Rig, id: &str, conv: &str) {
    let argv = rig.agent_argv(id);
    assert!(
        argv.contains(&"--dangerously-skip-permissions".to_string()),
        "{argv:?}"
    );
    assert!(!argv.iter().any(|a| a == "acceptEdits"), "{argv:?}");
    assert!(
        argv.windows(2).any(|w| w[0] == "--resume" && w[1] == conv),
        "{argv:?}"
    );
}

#[test]
fn exit_respawn_and_restore_keep_the_conversation() {
    if !claude_installed() {
        return;
    }
    let mut rig = claude(
        "lifecycle",
        Home::SET_UP,
        vec![
            Reply::text("First answer: remember the word PAPAYA."),
            Reply::text("Resumed after /exit."),
            Reply::text("Resumed after the restore."),
        ],
    );
    let id = rig.create("real/life", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    // /exit: claude ends with status 0 without reporting an outcome.
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "-l", "/exit"]);
    rig.screen_shows(&id, "/exit");
    let typed = Instant::now();
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Enter"]);
    rig.status_since("/exit", &id, "exited 0", typed);
    let t = rig.wait_task("the exit's last lines", &id, |t| {
        t["agent"]["last_lines"].is_array()
    });
    assert!(
        t["agent"]["last_lines"].to_string().contains("--resume"),
        "claude's last words (how to resume) are kept: {t}"
    );
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_task("/exit told", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    assert_eq!(rig.env.history_events(&id, "agent.closed").len(), 1, "{t}");
    // Respawn: the same conversation, the same permission mode.
    rig.env.ok(&["task", "respawn", &id]);
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 2);
    assert!(
        rig.api.turns()[1].body.to_string().contains("PAPAYA"),
        "the respawned claude continues the conversation"
    );
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since("respawn → end of turn", &id, "waiting for input", sent);
    // A reboot: the monitor and the tmux server die together; a new server; restore.
    rig.stop_monitor();
    rig.env.tmux.ok(&["kill-server"]);
    common::wait_for("the old server to exit", 10, || {
        !rig.env.tmux.tmux(&["list-sessions"]).status.success()
    });
    let mut server = Command::new("tmux");
    server
        .args([
            "-L",
            &rig.env.tmux.socket,
            "-f",
            rig.env.tmux.conf.to_str().unwrap(),
            "new-session",
            "-d",
            "-s",
            "keepalive",
        ])
        .env("PATH", &rig.env.path)
        .env_remove("TMUX");
    for (k, v) in &rig.env.extra {
        server.env(k, v);
    }
    common::wait_for("a new tmux server", 10, || {
        server.output().map(|o| o.status.success()).unwrap_or(false)
    });
    let restored = rig.env.ok(&["restore", "--yes"]);
    assert_eq!(
        restored["restored"].as_array().unwrap().len(),
        1,
        "{restored}"
    );
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 3);
    assert!(rig.api.turns()[2].body.to_string().contains("PAPAYA"));
    let sent = rig.api.wait_sent(2, PATIENCE).unwrap();
    // Without a monitor the hooks alone keep the status line right.
    rig.status_since(
        "restore → end of turn (hooks only)",
        &id,
        "waiting for input",
        sent,
    );
}

#[test]
fn a_killed_claude_is_dead_and_respawn_resumes_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "kill",
        Home::SET_UP,
        vec![
            Reply::text("Remember the word MANGO."),
            Reply::text("Back again."),
        ],
    );
    let id = rig.create("real/kill", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    let t = rig.kill_9("kill -9", &id, &rig.pane_pid(&id));
    assert_eq!(t["crash_count"], 1, "{t}");
    // SIGKILL may cut claude off before it saved its conversation (it writes its
    // transcript lazily): respawn resumes what was saved, or starts a new conversation
    // rather than a `--resume` that would exit at once ("No conversation found").
    rig.env.ok(&["task", "respawn", &id]);
    let now = rig.conversation(&id);
    rig.wait_turns(&id, 2);
    let messages = rig.api.turns()[1].body["messages"]
        .as_array()
        .unwrap()
        .len();
    if now == conv {
        assert_resumed(&rig, &id, &conv);
        assert!(messages > 1, "a resumed conversation carries its history");
    } else {
        let argv = rig.agent_argv(&id);
        assert!(
            argv.windows(2)
                .any(|w| w[0] == "--session-id" && w[1] == now),
            "{argv:?}"
        );
        assert!(
            argv.contains(&"--dangerously-skip-permissions".to_string()),
            "{argv:?}"
        );
    }
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since(
        "kill → respawn → end of turn",
        &id,
        "waiting for input",
        sent,
    );
}

/// Is `pid` running (not gone, not a zombie)?
fn process_runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s[s.rfind(')').unwrap_or(0) + 1..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string();
        state != "Z" && state != "X"
    })
}

/// Issue 24: `task send` reaches the real Claude Code as ONE turn whose text is exactly
/// the message (several lines, quotes, substitutions, a control character removed); one
/// sent while claude works is held and typed in by the monitor when its turn ends, as a
/// turn of its own; `task respawn --force` stops the running claude and resumes its
/// conversation.
#[test]
fn task_send_reaches_claude_as_one_turn_and_respawn_force_resumes_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "send",
        Home::SET_UP,
        vec![
            Reply::text("Ready. The word is KIWI."),
            Reply::slow(Duration::from_secs(8), Reply::text("Noted both lines.")),
            Reply::text("Noted PEAR."),
            Reply::text("Back after the restart."),
        ],
    );
    let id = rig.create("real/send", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    let message = "Two lines for you:\nfirst \"quoted\" $(not run) `nor this` #{session_name} 100%%\x1b[31m\nsecond; the end";
    let v = rig.env.ok(&["task", "send", &id, message]);
    // (Seen twice, in a soak and in a whole suite: held, the agent "working" right after
    // the status line said waiting, and its Stop hook ~0.1 s later. What orange knew then
    // is printed — the raw agent record first, read at once: which hook, which signal —
    // and what the stand-in was asked, to find which signal said so.)
    let knew = || {
        let dir = rig.env.home.join(format!("tasks/app/{id}"));
        let info = std::fs::read_to_string(orange::orchestration::agent::info_path(&dir));
        let asked: Vec<String> = rig.api.turns().iter().map(|t| t.last_user_text()).collect();
        format!(
            "{v}\nagent.json: {}\nthe stand-in was asked: {asked:?}\ntask: {}\ntranscript tail: {:?}",
            info.unwrap_or_default(),
            rig.task(&id),
            std::fs::read_to_string(orange::orchestration::agent::claude_log_path_in(
                &rig.env.root().join("claude-home/.claude"),
                &rig.workspace(&id),
                &conv,
            ))
            .unwrap_or_default()
            .lines()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
        )
    };
    assert_eq!(v["outcome"], "sent", "{}", knew());
    assert_eq!(v["agent_state"], "waiting", "{}", knew());
    rig.wait_turns(&id, 2);
    let want = "Two lines for you:\nfirst \"quoted\" $(not run) `nor this` #{session_name} 100%%[31m\nsecond; the end";
    let got = rig.api.turns()[1].last_user_text();
    assert!(got.contains(want), "the turn's text: {got:?}");
    // While that turn works (its reply is slow), a second message is held…
    rig.wait_task("the turn to be working", &id, |t| {
        t["agent"]["state"] == "working"
    });
    let v = rig.env.ok(&["task", "send", &id, "One more note: PEAR."]);
    assert_eq!(v["outcome"], "held", "{v}");
    assert_eq!(rig.api.turns().len(), 2);
    // … and the monitor types it in when the turn ends: a turn of its own.
    rig.wait_turns(&id, 3);
    let got = rig.api.turns()[2].last_user_text();
    assert!(got.contains("One more note: PEAR."), "{got:?}");
    assert!(!got.contains("Two lines"), "{got:?}");
    let sent = rig.api.wait_sent(2, PATIENCE).unwrap();
    rig.status_since("held message → end of turn", &id, "waiting for input", sent);
    common::holds_for("no turn per line, none twice", GRACES, || {
        rig.api.turns().len() == 3
    });
    assert!(rig.task(&id).get("held").is_none());
    // respawn --force: the running claude is stopped, its conversation resumed.
    let old = rig.pane_pid(&id);
    let v = rig.env.ok(&[
        "task", "respawn", &id, "--force", "--yes", "--reason", "testing",
    ]);
    assert_eq!(v["forced"], true, "{v}");
    assert!(!process_runs(&old), "claude {old} still runs: {v}");
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 4);
    let turn = &rig.api.turns()[3];
    let body = turn.body.to_string();
    assert!(body.contains("KIWI") && body.contains("PEAR"), "{body}");
    assert!(
        turn.last_user_text().contains("restarted by hand: testing"),
        "{}",
        turn.last_user_text()
    );
    let sent = rig.api.wait_sent(3, PATIENCE).unwrap();
    rig.status_since(
        "respawn --force → end of turn",
        &id,
        "waiting for input",
        sent,
    );
}
