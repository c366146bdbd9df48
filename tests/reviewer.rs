//! A reviewer agent beside the implementer (issue 26, part 2), and review rounds with the
//! real Claude Code (part 5): `task review ID --agent H` starts a second agent in the
//! task's workspace, in a window of its session, read-only (a bwrap sandbox; else the
//! worktree checked afterwards); its findings (`path:line: comment`) become a round by the
//! reviewer, sent with `--send`; `[review] on_complete` starts one per readiness, a monitor
//! killed half-way included; the sidebar shows it as a row under the task.
//!
//! The fake reviewer is tests/fixtures/fake-reviewer.sh; the real claude runs against the
//! stand-in Messages API (tests/common/standin.rs) as in tests/real_claude/.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;
use crate::real_claude::{claude, claude_installed, Home};
use crate::review::rounds;

use std::path::PathBuf;

use common::standin::Reply;
use common::TaskEnv;
use serde_json::Value;

/// A TaskEnv with the fake reviewer as harnesses `fake-review-MODE`.
fn env() -> TaskEnv {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let script = common::fixtures().join("fake-reviewer.sh");
    // The checkout may live under /tmp, private inside the reviewer's sandbox: the script's
    // directory is made visible there, as a person would for a script of their own.
    for mode in ["write", "touch", "answer", "fail"] {
        env.append_config(&format!(
            "[harness.fake-review-{mode}]\ncommand = \"sh {} {mode} {{prompt}}\"\nsandbox_readable = [{:?}]\n",
            script.display(),
            common::fixtures().display().to_string()
        ));
    }
    env
}

fn ws(env: &TaskEnv, id: &str) -> PathBuf {
    env.ws_path(env.task(id)["workspace"].as_str().unwrap())
}

/// The findings the fake reviewer writes.
fn findings(env: &TaskEnv, text: &str) {
    std::fs::write(env.home.join("review-findings"), text).unwrap();
}

/// Passes of the monitor until the task's reviewer is no longer at work: its record.
fn reviewer_ends(env: &TaskEnv, id: &str) -> Value {
    let mut r = Value::Null;
    common::wait_for("the reviewer to end", 30, || {
        env.ok(&["monitor", "--once"]);
        r = env.task(id)["reviewer"].clone();
        r["state"] == "done" || r["state"] == "failed"
    });
    r
}

/// The names of the windows of the task's session.
fn windows(env: &TaskEnv, id: &str) -> Vec<String> {
    let s = env.task(id)["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux
        .ok(&["list-windows", "-t", &s, "-F", "#{window_name}"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn bwrap_works() -> bool {
    orange::adapters::bwrap::probe().is_ok()
}

/// `notes.txt` (three lines, untracked) in the task's workspace: its change; its agent
/// ended its turn (as its Stop hook says).
fn notes(env: &TaskEnv, id: &str) -> PathBuf {
    env.hook(id, "Stop", serde_json::json!({}));
    let ws = ws(env, id);
    std::fs::write(ws.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    ws
}

/// More passes of the monitor do not start another reviewer: `started` in all, one
/// round and one window of a reviewer for each.
fn no_more_reviewers(env: &TaskEnv, id: &str, started: usize) {
    common::holds_for(
        "no second reviewer for the same readiness",
        std::time::Duration::from_secs(2),
        || {
            env.ok(&["monitor", "--once"]);
            env.history_events(id, "reviewer.started").len() == started
        },
    );
    assert_eq!(rounds(env, id).len(), started);
    let shown = windows(env, id);
    assert_eq!(
        shown.iter().filter(|w| w.starts_with("reviewer")).count(),
        started,
        "{shown:?}"
    );
}

#[test]
fn a_reviewer_s_findings_become_a_round_on_their_lines_sent_without_controls() {
    let env = env();
    let id = env.create_id("rev/one", "fake-wait");
    env.agent_log(&id, "prompt");
    let ws = notes(&env, &id);
    let status_before = common::git(&ws, &["status", "--porcelain"]);
    findings(
        &env,
        "Two findings:\nnotes.txt:2: two should be the digit 2\n\
         - `notes.txt`:3: \u{1b}[2J\u{1b}]0;owned\u{7}$(touch /tmp/reviewer-pwned) three is wrong\n\
         README.md:999: past its end\n",
    );
    let v = env.ok(&[
        "task",
        "review",
        &id,
        "--agent",
        "fake-review-write",
        "--send",
    ]);
    assert_eq!(v["reviewer"]["state"], "working", "{v}");
    if bwrap_works() {
        assert_eq!(v["reviewer"]["guard"], "sandbox", "{v}");
    }
    // Its own window in the task's session, beside the agent's.
    assert!(
        windows(&env, &id)
            .iter()
            .any(|w| w.starts_with("reviewer fake-review-write")),
        "{:?}",
        windows(&env, &id)
    );
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(r["round"], 1, "{r}");
    assert_eq!(r["findings"], 3, "{r}");
    // Its prompt held the summary, the diff and where the findings go.
    let own = env.home.join(format!("tasks/app/{id}/reviewer"));
    let prompt = std::fs::read_to_string(own.join("prompt")).unwrap();
    assert!(prompt.contains("> do the thing"), "{prompt}");
    assert!(prompt.contains("+two"), "{prompt}");
    assert!(
        prompt.contains(&own.join("findings.txt").display().to_string()),
        "{prompt}"
    );
    assert!(prompt.contains("path/to/file.rs:42: "), "{prompt}");
    let renv = std::fs::read_to_string(own.join("env")).unwrap();
    assert!(renv.contains(&format!("ORANGE_REVIEWER={id}")), "{renv}");
    // The round: by the reviewer, anchored to the lines, the code line kept.
    let rs = rounds(&env, &id);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["by"], "reviewer");
    let c = &rs[0]["comments"];
    assert_eq!(
        (
            c[0]["path"].as_str(),
            c[0]["line"].as_u64(),
            c[0]["code"].as_str()
        ),
        (Some("notes.txt"), Some(2), Some("two"))
    );
    assert_eq!(
        (c[1]["line"].as_u64(), c[1]["code"].as_str()),
        (Some(3), Some("three"))
    );
    assert!(!c[1]["text"].as_str().unwrap().contains('\u{1b}'), "{c}");
    assert!(c[2]["line"].is_null(), "{c}");
    // Sent at once: one message, each comment with its file, line and code, no control
    // character, the $(…) as words.
    let mut typed = String::new();
    let reached = common::poll(std::time::Duration::from_secs(20), || {
        typed = env.input_lines(&id).join("\n");
        typed.contains("past its end").then_some(())
    });
    assert!(
        reached.is_some(),
        "the round never reached the agent: {typed:?}; {}",
        env.task(&id)
    );
    assert!(typed.contains("Review round 1"), "{typed}");
    assert!(typed.contains("notes.txt:2: `two`"), "{typed}");
    assert!(
        typed.contains("$(touch /tmp/reviewer-pwned) three is wrong"),
        "{typed}"
    );
    assert!(
        !typed.contains('\u{1b}') && !typed.contains('\u{7}'),
        "{typed:?}"
    );
    assert!(!std::path::Path::new("/tmp/reviewer-pwned").exists());
    assert_eq!(env.history_events(&id, "review.sent").len(), 1);
    // The worktree is as it was.
    assert_eq!(common::git(&ws, &["status", "--porcelain"]), status_before);
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    // Its window says how it ended; `task explain` and the text of `task show` cover it.
    assert!(
        windows(&env, &id)
            .contains(&"reviewer fake-review-write: done · round 1, 3 findings".to_string()),
        "{:?}",
        windows(&env, &id)
    );
    let (text, _, _) = crate::send::text(&env, &["task", "explain", &id]);
    assert!(
        text.contains("reviewer fake-review-write: done · round 1, 3 findings"),
        "{text}"
    );
    // A second reviewer while none works is fine; its round is the next one.
    findings(&env, "notes.txt:1: one more\n");
    env.ok(&["task", "review", &id, "--agent", "fake-review-write"]);
    assert_eq!(reviewer_ends(&env, &id)["round"], 2);
    assert_eq!(
        env.history_events(&id, "review.sent").len(),
        1,
        "not sent without --send"
    );
    // `task review ID` opens the reviewer's round, its comment under its line; what the
    // person saves is the round.
    let editor = env.root().join("editor.sh");
    common::write_script(&editor, "#!/bin/sh\ncp \"$1\" \"$1.seen\"\nsed -i 's/^>> one more$/>> one more, said better/' \"$1\"\n");
    let out = env
        .cmd_in(&env.repo, &["task", "review", &id])
        .env("VISUAL", &editor)
        .env_remove("EDITOR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("review round 2 (the reviewer's): 1 comment kept"),
        "{said}"
    );
    let rs = rounds(&env, &id);
    assert_eq!(rs.len(), 2, "no new round: {rs:?}");
    assert_eq!(rs[1]["by"], "reviewer");
    assert_eq!(rs[1]["comments"][0]["text"], "one more, said better");
    assert_eq!(rs[1]["comments"][0]["line"], 1);
    assert_eq!(rs[1]["comments"][0]["code"], "one");
}

/// A reviewer that writes to the worktree, its round to be sent at once.
fn review_touch(env: &TaskEnv, id: &str) -> Value {
    env.ok(&[
        "task",
        "review",
        id,
        "--agent",
        "fake-review-touch",
        "--send",
    ])
}

#[test]
fn a_reviewer_cannot_change_the_worktree_and_one_without_a_sandbox_is_caught() {
    let env = env();
    let id = env.create_id("rev/touch", "fake-wait");
    env.agent_log(&id, "prompt");
    let ws = notes(&env, &id);
    let readme = std::fs::read_to_string(ws.join("README.md")).unwrap();
    findings(&env, "notes.txt:1: a finding\n");
    if bwrap_works() {
        let v = review_touch(&env, &id);
        assert_eq!(v["reviewer"]["guard"], "sandbox", "{v}");
        let r = reviewer_ends(&env, &id);
        assert_eq!(r["state"], "done", "{r}");
        assert!(r.get("changed").is_none(), "{r}");
        assert_eq!(
            std::fs::read_to_string(ws.join("README.md")).unwrap(),
            readme
        );
        assert_eq!(env.history_events(&id, "review.sent").len(), 1);
    }
    // Without a sandbox: the change is seen, said, and the round is not sent by itself.
    env.append_config("[review]\nsandbox = \"none\"\n");
    let v = review_touch(&env, &id);
    assert_eq!(v["reviewer"]["guard"], "check", "{v}");
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["changed"], serde_json::json!(["README.md"]), "{r}");
    let sent_before = if bwrap_works() { 1 } else { 0 };
    assert_eq!(env.history_events(&id, "review.sent").len(), sent_before);
    assert_eq!(
        env.history_events(&id, "reviewer.changed_worktree").len(),
        1
    );
    let (text, _, _) = crate::send::text(&env, &["task", "show", &id]);
    assert!(
        text.contains("it changed the worktree: README.md"),
        "{text}"
    );
    // A reviewer that fails says so, and what to do.
    let v = env.ok(&["task", "review", &id, "--agent", "fake-review-fail"]);
    assert_eq!(v["reviewer"]["state"], "working");
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["state"], "failed", "{r}");
    assert!(r["detail"].as_str().unwrap().contains("exited 4"), "{r}");
}

#[test]
fn on_complete_reviews_once_per_readiness_even_when_the_monitor_is_killed() {
    let env = env();
    env.append_config("[review]\non_complete = { agent = \"fake-review-write\", send = false }\n");
    findings(&env, "README.md:1: say what it is\n");
    let id = env.create_id("rev/auto", "fake-complete");
    env.wait_status(&id, "reviewing");
    // The monitor dies (as a SIGKILL leaves it) once the reviewer is recorded, before its
    // window is made: no reviewer yet.
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once"])
        .env("ORANGE_CRASH_AT", "reviewer.recorded")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(env.task(&id)["reviewer"]["state"], "starting");
    assert!(!windows(&env, &id).iter().any(|w| w.starts_with("reviewer")));
    // The next pass repairs: it starts it, once.
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(r["trigger"], "on_complete", "{r}");
    no_more_reviewers(&env, &id, 1);
    // A new readiness (back to work, ready again): killed this time after its window was
    // made; the next pass finds that window again instead of making another.
    env.ok(&["task", "update", &id, "--status", "working"]);
    env.ok(&["task", "update", &id, "--status", "reviewing"]);
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once"])
        .env("ORANGE_CRASH_AT", "reviewer.window")
        .output()
        .unwrap();
    assert!(!out.status.success());
    // Killed again once its round is made (the passes before it find its window again,
    // then wait for its end): the next pass ends it with that round.
    common::wait_for("a pass to die once the round is made", 30, || {
        !env.cmd_in(&env.repo, &["monitor", "--once"])
            .env("ORANGE_CRASH_AT", "reviewer.round")
            .output()
            .unwrap()
            .status
            .success()
    });
    assert_eq!(env.task(&id)["reviewer"]["state"], "working");
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(r["round"], 2, "{r}");
    no_more_reviewers(&env, &id, 2);
}

#[test]
fn the_sidebar_shows_the_reviewer_as_a_row_under_its_task() {
    let env = env();
    let id = env.create_id("rev/side", "fake-wait");
    env.agent_log(&id, "prompt");
    notes(&env, &id);
    findings(&env, "notes.txt:2: \u{1b}[31mred$(x)\nnotes.txt:3: two\n");
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    env.tmux
        .ok(&["resize-window", "-t", &pane, "-x", "160", "-y", "40"]);
    let side = env.tmux.ok(&[
        "split-window",
        "-h",
        "-d",
        "-l",
        "70",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        &pane,
        "-e",
        &format!("ORANGE_HOME={}", env.home.display()),
        "-e",
        &format!("ORANGE_TMUX_SOCKET={}", env.tmux.socket),
        &format!("{} sidebar --task {id}", common::bin().display()),
    ]);
    // Marked as the plugin marks its sidebars (no teammate of the agent).
    env.tmux
        .ok(&["set-option", "-p", "-t", &side, "@orange_sidebar", "1"]);
    let shows = |needle: &str| {
        let mut screen = String::new();
        common::wait_for(&format!("the sidebar to show {needle:?}"), 20, || {
            screen = env.tmux.ok(&["capture-pane", "-p", "-t", &side]);
            screen.contains(needle)
        });
        screen
    };
    env.ok(&["task", "review", &id, "--agent", "fake-review-write"]);
    let r = reviewer_ends(&env, &id);
    assert_eq!(r["state"], "done", "{r}");
    let screen = shows("└ reviewer fake-review-write: done");
    assert!(screen.contains("round 1, 2 findings"), "{screen}");
    // The findings' text is no part of the row: nothing of it reaches the terminal.
    assert!(!screen.contains("red$(x)"), "{screen}");
}

/// (a) A review round sent to a waiting real claude arrives as ONE user turn and claude
/// acts on it: the stand-in answers with an edit of the commented line.
#[test]
fn a_round_sent_to_a_waiting_claude_is_one_turn_and_it_acts_on_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "review-round",
        Home::SET_UP,
        vec![
            Reply::bash("printf 'one\\ntwo\\nthree\\n' > notes.txt"),
            Reply::text("Wrote notes.txt."),
            Reply::bash("sed -i 's/^two$/2/' notes.txt"),
            Reply::text("Line 2 is the digit now."),
        ],
    );
    let id = rig.create("real/review", "Write notes.txt");
    rig.wait_turns(&id, 2);
    rig.wait_task("its turn to end", &id, |t| t["agent"]["state"] == "waiting");
    let v = rig.env.ok(&[
        "task",
        "review",
        &id,
        "--comment",
        "notes.txt:2",
        "use the digit \u{1b}[31m$(touch pwned-by-review)",
        "--comment",
        "notes.txt:3",
        "keep this one",
        "--send",
    ]);
    assert_eq!(v["sent"]["outcome"], "sent", "{v}");
    rig.wait_turns(&id, 3);
    let turn = rig.api.turns()[2].last_user_text();
    // One user turn holding the whole round.
    assert!(
        turn.contains("Review round 1 of your changes: 2 comments"),
        "{turn}"
    );
    assert!(turn.contains("notes.txt:2: `two`"), "{turn}");
    // The escape character is gone (what followed it is words), the $(…) is words.
    assert!(
        turn.contains("use the digit [31m$(touch pwned-by-review)"),
        "{turn}"
    );
    assert!(turn.contains("notes.txt:3: `three`"), "{turn}");
    assert!(!turn.contains('\u{1b}'), "{turn:?}");
    let ws = rig.workspace(&id);
    common::wait_for("claude to edit the commented line", 60, || {
        std::fs::read_to_string(ws.join("notes.txt")).unwrap_or_default() == "one\n2\nthree\n"
    });
    assert!(!ws.join("pwned-by-review").exists());
    assert_eq!(rig.history(&id, "review.sent").len(), 1);
}

/// (b) A real claude as the reviewer: the stand-in answers with findings in the format;
/// they become a round on the right lines, and the worktree is unchanged.
#[test]
fn a_claude_reviewer_s_answer_becomes_a_round_and_leaves_the_worktree_as_it_was() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "reviewer-claude",
        Home::SET_UP,
        vec![
            Reply::bash("printf 'one\\ntwo\\nthree\\n' > notes.txt"),
            Reply::text("Wrote notes.txt."),
            Reply::text(
                "Findings:\nnotes.txt:2: two should be the digit 2\nnotes.txt:3: \u{1b}[2J$(touch pwned) three is wrong",
            ),
        ],
    );
    let id = rig.create("real/reviewer", "Write notes.txt");
    rig.wait_turns(&id, 2);
    rig.wait_task("its turn to end", &id, |t| t["agent"]["state"] == "waiting");
    let ws = rig.workspace(&id);
    let status = common::git(&ws, &["status", "--porcelain"]);
    let v = rig.env.ok(&["task", "review", &id, "--agent", "claude"]);
    assert_eq!(v["reviewer"]["state"], "working", "{v}");
    let t = rig.wait_task("the reviewer to end", &id, |t| {
        t["reviewer"]["state"] == "done" || t["reviewer"]["state"] == "failed"
    });
    let rpane = t["reviewer"]["pane_id"].as_str().unwrap_or("").to_string();
    let rscreen = rig
        .env
        .tmux
        .ok(&["capture-pane", "-p", "-J", "-S", "-40", "-t", &rpane]);
    let said = format!(
        "{t}\nreviewer's pane:\n{rscreen}\nhook: {:?}\nturns: {}",
        std::fs::read_to_string(
            rig.env
                .home
                .join(format!("tasks/app/{id}/reviewer/hook.json"))
        ),
        rig.api
            .turns()
            .iter()
            .map(|r| r.last_user_text().chars().take(200).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    assert_eq!(t["reviewer"]["state"], "done", "{said}");
    assert_eq!(t["reviewer"]["round"], 1, "{said}");
    // The reviewer's turn: its prompt held the diff; it was a conversation of its own.
    let turns = rig.api.turns();
    let asked = turns[2].last_user_text();
    assert!(asked.contains("+two"), "{asked}");
    assert!(
        asked.contains("path:line") || asked.contains("path/to/file.rs:42"),
        "{asked}"
    );
    assert_ne!(turns[2].session_id(), turns[0].session_id());
    let rs = rig.env.ok(&["task", "show", &id])["reviewer"].clone();
    assert_eq!(rs["findings"], 2, "{rs}");
    let dir = rig.env.home.join(format!("tasks/app/{id}/reviews/1.json"));
    let round: Value = serde_json::from_slice(&std::fs::read(dir).unwrap()).unwrap();
    assert_eq!(round["by"], "reviewer");
    let c = &round["comments"];
    assert_eq!(
        (c[0]["line"].as_u64(), c[0]["code"].as_str()),
        (Some(2), Some("two")),
        "{c}"
    );
    assert_eq!(
        (c[1]["line"].as_u64(), c[1]["code"].as_str()),
        (Some(3), Some("three")),
        "{c}"
    );
    assert!(!c[1]["text"].as_str().unwrap().contains('\u{1b}'), "{c}");
    // The worktree is as it was; the implementer's agent was never told anything.
    assert_eq!(common::git(&ws, &["status", "--porcelain"]), status);
    assert!(!ws.join("pwned").exists());
    assert_eq!(rig.api.turns().len(), 3);
    assert_eq!(rig.task(&id)["agent"]["state"], "waiting");
}
