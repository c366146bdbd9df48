//! The sidebar loop in a tmux pane, read back with `capture-pane`: it follows task.md, git
//! and the agent, Ctrl+C restores the cursor, and what needs tmux or `--once` says so.

use crate::common;

use std::time::Duration;

use common::{wait_for, TaskEnv};
use orange::ui::sidebar::model::FOOTER;
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::create_waiting_task;

/// The screen of a tmux pane, as a user sees it.
fn screen(env: &TaskEnv, target: &str) -> String {
    env.tmux.ok(&["capture-pane", "-p", "-t", target])
}

fn wait_screen(
    env: &TaskEnv,
    target: &str,
    what: &str,
    secs: u64,
    f: impl Fn(&str) -> bool,
) -> String {
    let mut last = String::new();
    common::poll(Duration::from_secs(secs), || {
        last = screen(env, target);
        f(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| {
        panic!("timed out after {secs}s waiting for {what}; the pane shows:\n{last}")
    })
}

#[test]
fn the_loop_in_a_tmux_pane_follows_task_md_git_and_the_agent() {
    let env = TaskEnv::new();
    let (id, ws) = create_waiting_task(&env, "live-view", "Watch me 🍊");
    env.sidebar_session("sb", &id, (40, 30), "");
    // The whole first frame (a capture can come while tmux is still reading it): the
    // header, and the footer on the pane's last line.
    let s = wait_screen(&env, "=sb:", "the first frame, whole", 10, |s| {
        s.contains("app/live-view") && s.lines().nth(29) == Some(FOOTER)
    });
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 30, "the frame fills the pane:\n{s}");
    assert_eq!(lines[0], "app/live-view", "{s}");
    assert_eq!(lines[1], "Status: working   ● live", "{s}");
    assert_eq!(lines[29], FOOTER, "the footer sits on the last line:\n{s}");
    assert!(s.contains(" Watch me 🍊"), "{s}");
    assert!(s.contains(" (no changes)"), "{s}");
    for l in &lines {
        assert!(l.width() <= 40, "{l:?}");
    }
    // The cursor is hidden.
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", "=sb:", "#{cursor_flag}"]),
        "0"
    );

    // TASK.md edited in place: the pane follows within a few seconds.
    let md = env.home.join("tasks/app").join(&id).join("TASK.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str("Appended by the agent\n");
    std::fs::write(&md, &text).unwrap();
    wait_screen(&env, "=sb:", "the appended line", 5, |s| {
        s.contains(" Appended by the agent")
    });
    // … and replaced by rename, as editors save.
    let tmp = md.with_extension("swp");
    std::fs::write(&tmp, "# Watch me 🍊\n\nRewritten body line\n").unwrap();
    std::fs::rename(&tmp, &md).unwrap();
    let s = wait_screen(&env, "=sb:", "the rewritten body", 5, |s| {
        s.contains(" Rewritten body line")
    });
    assert!(!s.contains("Appended by the agent"), "{s}");

    // A status change (task.json and history.jsonl) shows at once.
    env.ok(&["task", "update", &id, "--status", "stuck"]);
    wait_screen(&env, "=sb:", "the new status", 5, |s| {
        s.contains("Status: stuck") && s.contains("status → stuck")
    });

    // Git is read every 10 s, or at once when poked.
    std::fs::write(ws.join("src/lib.txt"), "changed\n").unwrap();
    std::fs::create_dir_all(env.home.join("run")).unwrap();
    std::fs::write(env.home.join("run/poke"), "1").unwrap();
    wait_screen(&env, "=sb:", "the changed file", 5, |s| {
        s.contains(" M src/lib.txt") && s.contains("── Files (1)")
    });

    // The agent exits: the session state follows within a couple of seconds.
    let session = env.task(&id)["tmux_session"].as_str().unwrap().to_string();
    env.tmux
        .ok(&["send-keys", "-t", &format!("={session}:"), "C-d"]);
    wait_screen(&env, "=sb:", "the dead agent", 6, |s| s.contains("✗ dead"));

    // A resize redraws at the new width.
    env.tmux
        .ok(&["resize-window", "-t", "=sb:", "-x", "24", "-y", "20"]);
    // Whole: down to the pane's last line (its footer).
    let s = wait_screen(&env, "=sb:", "the narrower frame", 5, |s| {
        s.lines()
            .any(|l| l.starts_with("── Files (1) ─") && l.width() == 24)
            && s.lines().count() == 20
    });
    assert!(s.lines().all(|l| l.width() <= 24), "{s}");

    // Deleting the task: the sidebar says so and keeps running.
    let c = env.ok(&["task", "cancel", &id, "--yes"]);
    // Cancel kept the workspace for its uncommitted change; the user lets it go.
    let ws = c["workspace"].as_str().unwrap().to_string();
    env.ok(&["workspace", "release", &ws, "--force"]);
    env.ok(&["task", "delete", &id, "--yes"]);
    wait_screen(&env, "=sb:", "the gone notice", 5, |s| {
        s.contains("This task was deleted.")
    });

    // `q` quits and restores the terminal.
    env.tmux.ok(&["send-keys", "-t", "=sb:", "q"]);
    wait_screen(&env, "=sb:", "the shell after q", 5, |s| {
        s.contains("exited 0")
    });
    assert_eq!(
        env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            "=sb:",
            "#{cursor_flag} #{alternate_on}"
        ]),
        "1 0"
    );
}

#[test]
fn ctrl_c_restores_the_cursor() {
    let env = TaskEnv::new();
    let (id, _ws) = create_waiting_task(&env, "interrupt", "Interrupt me");
    env.sidebar_session("sb", &id, (40, 20), "trap true INT; ");
    wait_screen(&env, "=sb:", "the first frame", 10, |s| {
        s.contains("app/interrupt")
    });
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", "=sb:", "#{cursor_flag}"]),
        "0"
    );
    env.tmux.ok(&["send-keys", "-t", "=sb:", "C-c"]);
    wait_screen(&env, "=sb:", "the shell after Ctrl+C", 5, |s| {
        s.contains("exited 130")
    });
    wait_for("the cursor to come back", 5, || {
        env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            "=sb:",
            "#{cursor_flag} #{alternate_on}",
        ]) == "1 0"
    });
}

#[test]
fn sidebar_without_once_refuses_json_and_toggle_needs_tmux() {
    let env = TaskEnv::new();
    let (id, _ws) = create_waiting_task(&env, "flags", "Flags");
    let msg = env.err(&["sidebar", "--task", &id], "invalid_argument");
    assert!(msg.contains("--once"), "{msg}");
    // Outside tmux (no TMUX_PANE) toggle explains itself.
    let (ok, v): (bool, Value) = env.json(&["sidebar", "toggle"]);
    assert!(!ok, "{v}");
}
