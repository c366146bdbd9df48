//! Review rounds (issue 26, part 1): `task review` turns comments on lines of a task's
//! diff — written in the person's editor under the lines, or with `--comment PATH:LINE
//! TEXT` — into a round kept with the task, and sends it to the agent as ONE message
//! through `task send`'s path. Real git, real tmux, the `fake-raw` agent of tests/send.rs
//! (it keeps every byte typed into its pane); the editor is a script that writes what a
//! person would.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;
use crate::send::{env, raw, raw_agent, text, wait_submissions};

use std::path::PathBuf;
use std::time::Duration;

use common::TaskEnv;
use serde_json::{json, Value};

/// The task's workspace.
fn ws(env: &TaskEnv, id: &str) -> PathBuf {
    env.ws_path(env.task(id)["workspace"].as_str().unwrap())
}

/// A change in the task's workspace: `src/a.txt` with five lines, committed, and an
/// untracked `notes.md`.
fn change(env: &TaskEnv, id: &str) {
    let ws = ws(env, id);
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/a.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    common::git(&ws, &["add", "src/a.txt"]);
    common::git(&ws, &["commit", "-qm", "a"]);
    std::fs::write(ws.join("notes.md"), "a note\n").unwrap();
}

/// An editor: a script that runs `body` on the review file (`$1`), as a person's edit.
fn editor(env: &TaskEnv, name: &str, body: &str) -> String {
    let path = env.root().join(name);
    common::write_script(&path, format!("#!/bin/sh\n{body}\n"));
    path.display().to_string()
}

fn review_with(env: &TaskEnv, editor: &str, args: &[&str]) -> std::process::Output {
    let mut c = env.cmd_in(&env.repo, args);
    c.env("VISUAL", editor).env_remove("EDITOR");
    c.output().unwrap()
}

/// The task's review rounds (`reviews/N.json`, as orange reads them: a round being written
/// is a `.tmp-*` file beside them, empty at first, until it is renamed into place).
pub(crate) fn rounds(env: &TaskEnv, id: &str) -> Vec<Value> {
    let dir = env.home.join(format!("tasks/app/{id}/reviews"));
    let mut v: Vec<Value> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".json")
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                })
                .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|r: &Value| r["n"].as_u64());
    v
}

#[test]
fn comments_from_the_command_line_go_to_the_agent_as_one_message_without_controls() {
    let env = env();
    let id = raw_agent(&env, "review/flags");
    change(&env, &id);
    env.hook(&id, "Stop", json!({}));
    let v = env.ok(&[
        "task",
        "review",
        &id,
        "--comment",
        "src/a.txt:2",
        "rename $(touch /tmp/x); `y` \"z\"\x1b]0;PWNED\x07 it",
        "--comment",
        "src/a.txt:4",
        "--and a test",
        "--send",
    ]);
    assert_eq!(v["round"]["n"], 1, "{v}");
    assert_eq!(v["sent"]["outcome"], "sent", "{v}");
    let c = &v["round"]["comments"];
    assert_eq!(c[0]["path"], "src/a.txt");
    assert_eq!(c[0]["side"], "new");
    assert_eq!(c[0]["line"], 2);
    assert_eq!(c[0]["code"], "two");
    // The round is kept with its exact text (JSON escapes it).
    assert_eq!(
        c[0]["text"],
        "rename $(touch /tmp/x); `y` \"z\"\x1b]0;PWNED\x07 it"
    );
    assert_eq!(rounds(&env, &id)[0]["delivery"], "sent");
    // The agent got ONE submission naming each file, line and code line, no control byte.
    let got = wait_submissions(&env, &id, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    let m = &got[0];
    assert!(
        m.starts_with("Review round 1 of your changes: 2 comments."),
        "{m}"
    );
    assert!(
        m.contains("1. src/a.txt:2: `two`\n   rename $(touch /tmp/x); `y` \"z\"]0;PWNED it"),
        "{m}"
    );
    assert!(m.contains("2. src/a.txt:4: `four`\n   --and a test"), "{m}");
    assert!(!raw(&env, &id).contains(&0x07));
    // The history says it, in words.
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(
        show.contains("review round 1: 2 comments written"),
        "{show}"
    );
    assert!(show.contains("review round 1: 2 comments sent"), "{show}");
}

#[test]
fn an_anchor_the_agent_moved_is_found_by_its_code_line_and_a_lost_one_is_listed() {
    let env = env();
    let id = raw_agent(&env, "review/moved");
    change(&env, &id);
    env.hook(&id, "Stop", json!({}));
    // Recorded, not sent.
    let v = env.ok(&[
        "task",
        "review",
        &id,
        "--comment",
        "src/a.txt:3",
        "why three",
        "--comment",
        "src/a.txt:5",
        "five?",
    ]);
    assert_eq!(v["round"]["n"], 1, "{v}");
    assert_eq!(v["sent"], Value::Null, "{v}");
    assert_eq!(rounds(&env, &id)[0].get("delivery"), None);
    // The agent changes the file: two lines above "three", "five" gone.
    std::fs::write(
        ws(&env, &id).join("src/a.txt"),
        "zero\nhalf\none\ntwo\nthree\nfour\n",
    )
    .unwrap();
    let v = env.ok(&["task", "review", &id, "--round", "1", "--send"]);
    assert_eq!(v["sent"]["outcome"], "sent", "{v}");
    let c = &v["round"]["comments"];
    assert_eq!(
        (c[0]["line"].as_u64(), c[0]["moved_from"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(c[1]["lost"], true, "{v}");
    let m = &wait_submissions(&env, &id, 1)[0];
    assert!(m.contains("1. src/a.txt:5: `three`\n   why three"), "{m}");
    assert!(
        m.contains("2. src/a.txt (the line `five` is no longer in the file)\n   five?"),
        "{m}"
    );
}

#[test]
fn the_editor_s_comments_become_a_round_and_its_failure_records_nothing() {
    let env = env();
    let id = raw_agent(&env, "review/editor");
    change(&env, &id);
    env.hook(&id, "Stop", json!({}));
    // The person writes under `+three` and under the untracked file's line, and by
    // mistake changes a line of the diff.
    let ed = editor(
        &env,
        "ed.sh",
        r#"sed -i -e 's/^+three$/+three\n>> three is odd/' -e 's/^+a note$/+a note\n>> fine\n>> really/' -e 's/^+one$/+ONE/' "$1""#,
    );
    let out = review_with(&env, &ed, &["task", "review", &id, "--json", "--send"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["round"]["comments"];
    assert_eq!(c.as_array().unwrap().len(), 2, "{v}");
    assert_eq!(
        (c[0]["path"].as_str(), c[0]["line"].as_u64()),
        (Some("src/a.txt"), Some(3))
    );
    assert_eq!(
        (c[1]["path"].as_str(), c[1]["text"].as_str()),
        (Some("notes.md"), Some("fine\nreally"))
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the diff part of the review file was changed"),
        "{out:?}"
    );
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v}");
    let m = &wait_submissions(&env, &id, 1)[0];
    assert!(m.contains("src/a.txt:3: `three`\n   three is odd"), "{m}");
    // An editor that fails records nothing; one that writes no comment neither.
    let bad = editor(&env, "bad.sh", r#"echo '>> lost' >> "$1"; exit 3"#);
    let out = review_with(&env, &bad, &["task", "review", &id, "--json"]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["error"]["code"], "backend_command_failed", "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exited with status 3: nothing recorded"),
        "{err}"
    );
    let none = editor(&env, "none.sh", "true");
    let out = review_with(&env, &none, &["task", "review", &id]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no comment written: nothing recorded"));
    assert_eq!(rounds(&env, &id).len(), 1);
}

#[test]
fn a_working_agent_gets_the_round_when_its_turn_ends_and_a_blocked_one_never() {
    let env = env();
    let id = raw_agent(&env, "review/held");
    change(&env, &id);
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "work"}));
    let v = env.ok(&[
        "task",
        "review",
        &id,
        "--comment",
        "src/a.txt:1",
        "one?",
        "--send",
    ]);
    assert_eq!(v["sent"]["outcome"], "held", "{v}");
    assert_eq!(rounds(&env, &id)[0]["delivery"], "held");
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(
        show.contains("review round 1: 1 comment held until its turn ends"),
        "{show}"
    );
    // Its turn ends: the monitor types it in.
    env.hook(&id, "Stop", json!({}));
    env.ok(&["monitor", "--once"]);
    let m = &wait_submissions(&env, &id, 1)[0];
    assert!(
        m.starts_with("Review round 1 of your changes: 1 comment."),
        "{m}"
    );

    // On a dialog: refused, the round kept unsent.
    env.hook(&id, "PermissionRequest", json!({"tool_name": "Bash"}));
    let msg = env.err(
        &[
            "task",
            "review",
            &id,
            "--comment",
            "src/a.txt:2",
            "two?",
            "--send",
        ],
        "agent_not_ready",
    );
    assert!(msg.contains("blocked"), "{msg}");
    let r = rounds(&env, &id);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].get("delivery"), None);
    common::holds_for(
        "nothing typed into the dialog",
        Duration::from_millis(300),
        || wait_submissions(&env, &id, 1).len() == 1,
    );
}

#[test]
fn bad_anchors_are_clear_errors_and_record_nothing() {
    let env = env();
    let id = raw_agent(&env, "review/bad");
    change(&env, &id);
    for (at, what) in [
        ("src/nope.txt:1", "is not a file of task"),
        ("src/a.txt:9", "has 5 lines"),
        ("src/a.txt:0", "PATH:LINE"),
        ("src/a.txt", "PATH:LINE"),
        ("../../etc/passwd:1", "is not a file of task"),
    ] {
        let m = env.err(
            &["task", "review", &id, "--comment", at, "x"],
            "invalid_argument",
        );
        assert!(m.contains(what), "{at}: {m}");
    }
    env.err(
        &["task", "review", "nosuch", "--comment", "src/a.txt:1", "x"],
        "task_not_found",
    );
    env.err(
        &["task", "review", &id, "--round", "4", "--send"],
        "invalid_argument",
    );
    assert!(rounds(&env, &id).is_empty());
}

#[test]
fn approve_records_the_outcome_and_moves_the_task_on() {
    let env = env();
    let id = raw_agent(&env, "review/ok");
    let v = env.ok(&["task", "review", &id, "--approve"]);
    assert_eq!(v["approved"], true, "{v}");
    let t = env.task(&id);
    assert_eq!(t["status"], "reviewing", "{t}");
    assert_eq!(env.history_events(&id, "review.approved").len(), 1);
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(show.contains("review approved"), "{show}");
}

/// `v` in a task's sidebar (the plugin loaded, a real client): the review in a popup — the
/// person's editor on the diff, then the question, answered with Enter — and the round
/// reaches the agent.
#[test]
fn v_in_the_sidebar_reviews_the_task_in_a_popup() {
    if !common::require(
        "script",
        std::process::Command::new("script")
            .arg("--version")
            .output()
            .is_ok(),
        "util-linux script gives the attached client a terminal",
    ) {
        return;
    }
    let env = env();
    crate::plugin::tell_server_home(&env);
    let _plugin = crate::plugin::load_plugin(&env.tmux);
    let id = raw_agent(&env, "review/key");
    change(&env, &id);
    env.hook(&id, "Stop", json!({}));
    let ed = editor(
        &env,
        "ed.sh",
        r#"sed -i 's/^+two$/+two\n>> from the popup/' "$1""#,
    );
    env.tmux.ok(&["set-environment", "-g", "VISUAL", &ed]);
    let window = format!("{}:", env.task(&id)["tmux_session_id"].as_str().unwrap());
    let mut client =
        common::client::Client::attach(&env, "app/review/key", &env.root().join("client.log"));
    client.type_bytes(b"\x1c");
    common::wait_for("the sidebar", 10, || {
        crate::plugin::window_panes(&env.tmux, &window)
            .iter()
            .any(|p| p.2)
    });
    let sb = crate::plugin::window_panes(&env.tmux, &window)
        .into_iter()
        .find(|p| p.2)
        .unwrap()
        .0;
    common::wait_for("the sidebar in focus", 10, || {
        env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]) == sb
    });
    client.type_bytes(b"v");
    common::wait_for("the round, written in the popup", 20, || {
        rounds(&env, &id).len() == 1
    });
    // The question: Enter sends it.
    common::wait_for("the question on the client", 10, || {
        String::from_utf8_lossy(&client.output()).contains("to the agent now? [Y/n]")
    });
    client.type_bytes(b"\r");
    let m = &wait_submissions(&env, &id, 1)[0];
    assert!(m.contains("src/a.txt:2: `two`\n   from the popup"), "{m}");
    // The round records how it went once typed (the agent may read it first).
    common::wait_for("the round recorded as sent", 10, || {
        rounds(&env, &id)[0]["delivery"] == "sent"
    });
}
